#!/bin/sh
# ptquery's views through ptmcp's trace_query, with the real tools on the
# agent program (tests/fixtures/mcp/agent.c): kinds source and images,
# exclude_module, min_share and inline, each passed on to ptquery and
# named in the answer's one-line text.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

AGENT=$PTKIT_BUILD/tests/fixtures/mcp/agent

text() {
	jq -r '.result.content[0].text' | head -n 1
}

test_expect_success 'record and decode the agent program into a store' "
	PTKIT_STORE=$TEST_ROOT/store ptmcp run --recorder emu -- $AGENT >out 2>err &&
	id=\$(ls $TEST_ROOT/store/snapshots) && test -n \"\$id\" &&
	PTKIT_STORE=$TEST_ROOT/store ptmcp decode \$id >dout 2>derr &&
	echo \$id >$TEST_ROOT/id
"
ID=$(cat "$TEST_ROOT/id" 2>/dev/null || echo none)

test_expect_success 'trace_query: source, images, exclude_module, min_share, inline' "
	mcp_open out --store $TEST_ROOT/store &&
	mcp_tool 1 trace_query '{\"snapshot_id\":\"$ID\",\"kind\":\"source\",\"function\":\"mix32\"}' >r1 &&
	mcp_tool 2 trace_query '{\"snapshot_id\":\"$ID\",\"kind\":\"images\"}' >r2 &&
	mcp_tool 3 trace_query '{\"snapshot_id\":\"$ID\",\"kind\":\"tree\",\"exclude_module\":[\"libc.so.6\",\"ld-linux-x86-64.so.2\"],\"depth\":1,\"min_share\":10,\"limit\":100}' >r3 &&
	mcp_tool 4 trace_query '{\"snapshot_id\":\"$ID\",\"kind\":\"timeline\",\"function\":\"score\",\"inline\":true,\"limit\":1}' >r4 &&
	mcp_tool 5 trace_query '{\"snapshot_id\":\"$ID\",\"kind\":\"source\",\"address\":\"nosuch+0x1\"}' >r5 &&
	mcp_tool 6 trace_query '{\"snapshot_id\":\"$ID\",\"kind\":\"branches\",\"function\":\"lookup\"}' >r6 &&
	mcp_close &&
	text <r1 >t1 &&
	grep -q '^source of $ID: mix32: 1 site; the first: score.constprop.0 at .*agent.c:[0-9]* > mix32 at .*agent.c:[0-9]*' t1 &&
	text <r2 >t2 &&
	grep -q '^images of $ID: 3 images, 3 archived, 3 with DWARF; most instructions in .*/agent' t2 &&
	jq -e '.result.structuredContent.result.rows | length == 3' r2 &&
	jq -e '.result.structuredContent.result | (.rows | all(.path | test(\"^(main|spin|_start|__clone)\"))) and (.note | test(\"below 10% of the instructions pruned\"))' r3 &&
	text <r3 | grep -q 'Note: [0-9]* call paths below 10% of the instructions pruned' &&
	jq -e '.result.structuredContent.result.rows[0].inline | test(\"^mix32:[0-9]+\$\")' r4 &&
	test_eq true \"\$(jq .result.isError r5)\" &&
	text <r5 | grep -q 'nosuch' &&
	text <r6 | grep -q 'mnemonic=j[a-z]* taken=[0-9]* not_taken=[0-9]* target=0x[0-9a-f]*' &&
	text <r6 | grep -q 'Note: taken counts the times the jump was taken'
"

test_done

#!/bin/sh
# ptquery on an -O2 -flto program recorded with emu (tests/fixtures/mcp/
# agent.c, which prints its own counts): names as people type them
# (clones, mangled names, inlined helpers, the closest names), inline rows
# of one function, --module, the real total of insns, the clock in json,
# and paging a 3,000-row timeline by --max-bytes with every row once.
. "$(dirname "$0")/lib.sh"

AGENT=$PTKIT_BUILD/tests/fixtures/mcp/agent
S=$TEST_ROOT/snap
A=$S/derived/default

test_expect_success 'record, decode and span the agent program with emu' "
	ptrec --recorder emu -o $S -- $AGENT >path 2>rec.err &&
	mkdir -p $S/derived &&
	ptdecode $S 2>dec.err | ptspans -o $A >out &&
	grep -qx 'score 40' $S/output.log && grep -qx 'step 3000' $S/output.log
"

test_expect_success 'a clone is found by its plain name, and said' "
	ptquery $A --kind calls --function resolve --format json >out &&
	jq -e '.function == \"resolve.constprop.0\" and
	    .rows[0].relation == \"caller\" and .rows[0].name == \"main\" and
	    .rows[0].calls == 40' out &&
	ptquery $A --kind timeline --function score --format json --limit 1 |
	    jq -e '.total_rows == 40 and .rows[0].name == \"score.constprop.0\"'
"

test_expect_success 'no match: an error naming the closest functions' "
	must_fail ptquery $A --kind calls --function scor 2>err &&
	test_eq \"ptquery: $A: no function named 'scor'; the closest names: score.constprop.0\" \"\$(cat err)\" &&
	must_fail ptquery $A --kind calls --function _Z5scorePKji 2>err &&
	test_eq \"ptquery: $A: no function named '_Z5scorePKji'\" \"\$(cat err)\"
"

test_expect_success 'an inlined helper: its callers, its spans, its rows inside one function' "
	ptquery $A --kind calls --function mix32 >out &&
	grep -q '^relation=caller calls=40 spans=40 total_ns=0 self_ns=0 insns=[0-9]* self_insns=[0-9]* module=[^ ]*/agent name=score.constprop.0\$' out &&
	test_eq 1 \"\$(wc -l <out)\" &&
	ptquery $A --kind timeline --function mix32 --format json --limit 1 |
	    jq -e '.total_rows == 40' &&
	ptquery $A --kind hotpaths --group inline --function score --sort self_insns --format json >out &&
	jq -e '(.rows | length) == 2 and
	    (.rows | map(select(.name == \"mix32\"))[0]) as \$m |
	    (.rows | map(select(.name == \"score.constprop.0\"))[0]) as \$s |
	    \$m.calls == 40 and \$s.calls == 40 and
	    \$s.self_insns + \$m.insns == \$s.insns' out
"

test_expect_success 'inline rows honour the window' "
	ptquery $A --kind hotpaths --group inline --function score --format json >all &&
	first=\$(ptquery $A --kind timeline --function score --format json --limit 1 | jq '.rows[0].start_ns') &&
	ptquery $A --kind hotpaths --group inline --function score --to \$((first + 1)) --format json >one &&
	jq -e '(.rows | map(select(.name == \"mix32\"))[0].calls) == 1' one
"

test_expect_success '--module keeps one image' "
	ptquery $A --kind hotpaths --module agent --limit 500 --format json >out &&
	jq -e '(.rows | all(.module | endswith(\"/agent\"))) and
	    (.rows | map(select(.name == \"tick\"))[0].calls) == 50000 and
	    (.rows | map(select(.name == \"lookup\"))[0].calls) == 40' out
"

test_expect_success 'json: the clock, and insns with its real total' "
	ptquery $A --kind timeline --function step --limit 1 --format json |
	    jq -e '.clock == \"emulated, shared by all threads (host time under emulation)\"' &&
	tid=\$(ptquery $A --kind timeline --function step --limit 1 --format json | jq '.rows[0].tid') &&
	w=\$(ptquery $A --kind timeline --function step --limit 1 --format json | jq '.rows[0] | \"--from \\(.start_ns) --to \\(.end_ns + 1)\"' -r) &&
	ptquery $A --kind insns --tid \$tid \$w --format json >all &&
	ptquery $A --kind insns --tid \$tid \$w --limit 1 --format json >one &&
	jq -e '.next_cursor == \"o1\"' one &&
	test_eq \"\$(jq .total_rows all)\" \"\$(jq .total_rows one)\" &&
	test_eq \"\$(jq '.rows | length' all)\" \"\$(jq .total_rows one)\"
"

test_expect_success 'paging 3,000 rows by a byte budget: every row once' "
	c= && : >ids && pages=0 &&
	while :; do
		ptquery $A --kind timeline --function step --limit 500 --max-bytes 7000 --format json \${c:+--cursor \$c} >p || return 1
		jq -r '.rows[].id' p >>ids && pages=\$((pages + 1)) &&
		c=\$(jq -r '.next_cursor // empty' p) && [ -n \"\$c\" ] || break
	done &&
	test_eq 3000 \"\$(wc -l <ids)\" && test_eq 3000 \"\$(sort -u ids | wc -l)\" &&
	test \$pages -gt 6
"

test_expect_success 'tree: the call paths below a function, to a depth' "
	ptquery $A --kind tree --function main --depth 1 --format json --limit 500 >out &&
	jq -e '(.rows | map(select(.depth > 1)) | length) == 0 and
	    (.rows[0].path == \"main\") and
	    (.rows | map(select(.path == \"main;step\"))[0].calls) == 3000 and
	    (.rows | map(select(.path == \"main;score.constprop.0\"))[0].calls) == 40 and
	    (.rows | map(select(.path == \"main;lookup\"))[0].calls) == 40' out &&
	ptquery $A --kind tree --function spin --depth 1 --format json >out &&
	jq -e '.rows | map(select(.path == \"spin;tick\"))[0].calls == 50000' out
"

test_done

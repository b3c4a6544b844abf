#!/bin/sh
# A whole agent session over stdio with the real tools: initialize,
# tools/list, trace_start on the branchy fixture with the emu recorder and
# a symbol trigger, trace_status until done, trace_decode, trace_query,
# and trace_compare of two runs (without fail_on nothing is "crossed": the
# runs differ, which "changed" counts).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

fixture=$PTKIT_BUILD/tests/fixtures/emu/branchy
PTKIT_STORE=$TEST_ROOT/store
export PTKIT_STORE

# Records branchy until its Nth call of dispatch; prints the snapshot id.
record() {
	mcp_tool 1$1 trace_start "{\"program\":[\"$fixture\"],\"recorder\":\"emu\",\"trigger_symbol\":\"dispatch\",\"trigger_hits\":$1,\"request_id\":\"run-$1\"}" >start.$1 &&
	sid=$(jq -r .result.structuredContent.session_id start.$1) &&
	k=0 && state=running &&
	while [ "$state" = running ] && [ $k -lt 600 ]; do
		mcp_tool 2$1$k trace_status "{\"session_id\":\"$sid\"}" >status.$1 ||
		return 1
		state=$(jq -r .result.structuredContent.state status.$1)
		k=$((k + 1))
		[ "$state" = running ] && sleep 0.1
	done
	[ "$state" = done ] &&
	test_eq 1 "$(jq ".result.structuredContent.snapshots | length" status.$1)" &&
	jq -r ".result.structuredContent.snapshots[0]" status.$1
}

if [ ! -x "$fixture" ]; then
	test_skip 'a whole agent session with the real tools' \
	    'the emu fixtures are not built'
	test_done
fi

test_expect_success 'a whole agent session with the real tools' '
	mcp_open out &&
	mcp_call 0 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"e2e\",\"version\":\"1\"}}}" >init &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}" &&
	mcp_call 1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}" >list &&
	test_eq 11 "$(jq ".result.tools | length" list)" &&
	a=$(record 100) && b=$(record 200) &&
	echo "snapshots: $a $b" &&
	mcp_tool 30 trace_decode "{\"snapshot_id\":\"$a\",\"request_id\":\"d-a\"}" >dec.a &&
	mcp_tool 31 trace_decode "{\"snapshot_id\":\"$b\"}" >dec.b &&
	test_eq "{\"snapshot_id\":\"$a\",\"analysis_id\":\"default\",\"already_decoded\":false}" \
	    "$(jq -c .result.structuredContent dec.a)" &&
	test_eq false "$(jq .result.isError dec.b)" &&
	mcp_tool 40 trace_query "{\"snapshot_id\":\"$a\",\"kind\":\"calls\",\"function\":\"dispatch\"}" >q.a &&
	mcp_tool 41 trace_query "{\"snapshot_id\":\"$a\",\"kind\":\"hotpaths\",\"limit\":2}" >q.hot &&
	test_eq "[\"caller\",\"main\",100]" \
	    "$(jq -c ".result.structuredContent.result.rows[0] | [.relation, .name, .calls]" q.a)" &&
	test_eq 2 "$(jq ".result.structuredContent.result.rows | length" q.hot)" &&
	test_eq false "$(jq .result.structuredContent.truncated q.hot)" &&
	jq -er ".result.structuredContent.next_cursor" q.hot >/dev/null &&
	mcp_tool 42 trace_query "{\"snapshot_id\":\"$b\",\"kind\":\"calls\",\"function\":\"dispatch\"}" >q.b &&
	test_eq "[\"caller\",\"main\",200]" \
	    "$(jq -c ".result.structuredContent.result.rows[0] | [.relation, .name, .calls]" q.b)" &&
	mcp_tool 50 trace_compare "{\"a\":\"$a\",\"b\":\"$b\"}" >cmp &&
	test_eq false "$(jq .result.isError cmp)" &&
	test_eq false "$(jq .result.structuredContent.crossed cmp)" &&
	test "$(jq .result.structuredContent.changed cmp)" -gt 0 &&
	rid=$(jq -r .result.structuredContent.report_id cmp) &&
	test -s "$PTKIT_STORE/reports/$rid.json" &&
	mcp_close &&
	test_eq 0 "$(ls "$TMPDIR/ptkit-$(id -u)" 2>/dev/null | grep -c "^ptmcp\.")"
'

test_done

#!/bin/sh
# ptmcp serve: the MCP protocol layer over stdio (JSON-RPC framing,
# errors, version negotiation, tools/list).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

PTKIT_STORE=$TEST_ROOT/store
export PTKIT_STORE

init_req() {
	printf '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n' "$1"
}

for v in 2025-11-25 2025-06-18 2025-03-26 2024-11-05; do
	test_expect_success "initialize $v: the same version comes back" "
		init_req $v >req &&
		mcp_session req out 1 &&
		test_eq 1 \"\$(wc -l <out)\" &&
		test_eq '\"$v\"' \"\$(jq -c .result.protocolVersion out)\" &&
		test_eq 0 \"\$(jq .id out)\" &&
		test_eq '{\"tools\":{\"listChanged\":false}}' \
		    \"\$(jq -c .result.capabilities out)\" &&
		test_eq ptmcp \"\$(jq -r .result.serverInfo.name out)\" &&
		test_eq 0.1.0 \"\$(jq -r .result.serverInfo.version out)\"
	"
done

for v in 2030-01-01 2026-07-28 ''; do
	test_expect_success "initialize '$v': answered with 2025-11-25" "
		init_req '$v' >req &&
		mcp_session req out 1 &&
		test_eq '\"2025-11-25\"' \"\$(jq -c .result.protocolVersion out)\"
	"
done

test_expect_success 'invalid JSON: -32700 without an id, and the server goes on' '
	printf "%s\n" "{not json" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}" >req &&
	mcp_session req out 1 &&
	test_eq 2 "$(wc -l <out)" &&
	test_eq -32700 "$(jq -s ".[0].error.code" out)" &&
	test_eq false "$(jq -s ".[0] | has(\"id\")" out)" &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}" "$(sed -n 2p out)"
'

test_expect_success 'unknown method: -32601 with its id; server/discover too' '
	printf "%s\n" "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"resources/list\"}" \
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\",\"params\":{\"_meta\":{}}}" >req &&
	mcp_session req out 2 &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32601,\"message\":\"Method not found: resources/list\"}}" \
	    "$(sed -n 1p out)" &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":\"Method not found: server/discover\"}}" \
	    "$(sed -n 2p out)"
'

test_expect_success 'wrong params: -32602 for malformed calls and unknown tools' '
	cat >req <<-\EOF &&
	{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}
	{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}
	{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trace_nope"}}
	{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"trace_prune","arguments":"x"}}
	{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"zz"}}
	EOF
	mcp_session req out 5 &&
	test_eq "-32602 -32602 -32602 -32602 -32602" \
	    "$(jq -r .error.code out | tr "\n" " " | sed "s/ $//")" &&
	test_eq "Unknown tool: trace_nope (tools/list names the tools)" \
	    "$(mcp_reply out 3 | jq -r .error.message)" &&
	test_eq "Invalid params: \"params\" must be an object" \
	    "$(mcp_reply out 1 | jq -r .error.message)"
'

test_expect_success 'schema violations are tool results with isError and the fix' '
	cat >req <<-\EOF &&
	{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trace_query","arguments":{"snapshot_id":"20261129T101500Z-0123abcd","kind":"hotpaths","limit":5000}}}
	{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace_query","arguments":{"snapshot_id":"20261129T101500Z-0123abcd"}}}
	{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trace_prune","arguments":{"max_count":1,"force":true}}}
	{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"trace_query","arguments":{"snapshot_id":"20261129T101500Z-0123abcd","kind":"everything"}}}
	EOF
	mcp_session req out 4 &&
	test_eq "true true true true" \
	    "$(jq -r .result.isError out | tr "\n" " " | sed "s/ $//")" &&
	test_eq "trace_query: argument '"'"'limit'"'"' must be at most 500 (got 5000). Fix the arguments and call trace_query again." \
	    "$(mcp_reply out 1 | jq -r ".result.content[0].text")" &&
	test_eq "trace_query: argument '"'"'kind'"'"' is required; add it. Fix the arguments and call trace_query again." \
	    "$(mcp_reply out 2 | jq -r ".result.content[0].text")" &&
	test_eq "trace_prune: argument '"'"'force'"'"' is not an argument of this tool; remove it (tools/list shows the arguments). Fix the arguments and call trace_prune again." \
	    "$(mcp_reply out 3 | jq -r ".result.content[0].text")" &&
	mcp_reply out 4 | jq -r ".result.content[0].text" | grep -q "must be one of: summary, hotpaths, timeline, calls, at, branches, insns, gaps, threads"
'

test_expect_success 'id 0 is an id; string ids stay strings' '
	printf "%s\n" "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}" \
	    "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"method\":\"ping\"}" >req &&
	mcp_session req out 2 &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}" "$(sed -n 1p out)" &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"result\":{}}" "$(sed -n 2p out)"
'

test_expect_success 'a batch gets exactly one -32600' '
	printf "%s\n" "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]" \
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}" >req &&
	mcp_session req out 1 &&
	test_eq 2 "$(wc -l <out)" &&
	test_eq -32600 "$(sed -n 1p out | jq .error.code)" &&
	test_eq false "$(sed -n 1p out | jq "has(\"id\")")"
'

test_expect_success 'invalid requests: -32600, with the id when it is usable' '
	cat >req <<-\EOF &&
	{"jsonrpc":"1.0","id":1,"method":"ping"}
	{"jsonrpc":"2.0","id":null,"method":"ping"}
	{"jsonrpc":"2.0","id":2.5,"method":"ping"}
	{"jsonrpc":"2.0","id":4}
	42
	{"jsonrpc":"2.0","id":9,"method":"ping"}
	EOF
	mcp_session req out 1 &&
	test_eq 6 "$(wc -l <out)" &&
	test_eq "-32600 -32600 -32600 -32600 -32600" \
	    "$(head -5 out | jq -r .error.code | tr "\n" " " | sed "s/ $//")" &&
	test_eq "1 none none 4 none" \
	    "$(head -5 out | jq -r "if has(\"id\") then .id else \"none\" end" | tr "\n" " " | sed "s/ $//")"
'

test_expect_success 'notifications and responses get no reply' '
	cat >req <<-\EOF &&
	{"jsonrpc":"2.0","method":"notifications/initialized"}
	{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}
	{"jsonrpc":"2.0","method":"no/such/notification"}
	{"jsonrpc":"2.0","id":5,"result":{}}

	{"jsonrpc":"2.0","id":"last","method":"ping"}
	EOF
	mcp_session req out 1 &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"result\":{}}" "$(cat out)"
'

test_expect_success 'a line over 16 MiB is refused, and the server goes on' '
	{ printf "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\""
	  head -c 17000000 /dev/zero | tr "\0" a
	  printf "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"; } >req &&
	mcp_session req out 1 &&
	test_eq 2 "$(wc -l <out)" &&
	test_eq "-32600" "$(sed -n 1p out | jq .error.code)" &&
	test_eq "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}" "$(sed -n 2p out)"
'

test_expect_success 'tools/list: the eleven tools, each complete and bounded' '
	echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}" >req &&
	mcp_session req out 1 &&
	test_eq "trace_doctor trace_start trace_status trace_snapshot trace_stop trace_cancel trace_decode trace_query trace_compare trace_prune trace_list" \
	    "$(jq -r ".result.tools[].name" out | tr "\n" " " | sed "s/ $//")" &&
	test_eq false "$(jq ".result | has(\"nextCursor\")" out)" &&
	jq -c ".result.tools[]" out >tools &&
	test_eq 11 "$(wc -l <tools)" &&
	test_eq 11 "$(jq -s "[.[] | select((.title | type) == \"string\" and (.title | length) > 5)] | length" tools)" &&
	test_eq 11 "$(jq -s "[.[] | select((.description | length) > 100)] | length" tools)" &&
	test_eq 11 "$(jq -s "[.[] | select(.inputSchema.type == \"object\" and .inputSchema.additionalProperties == false)] | length" tools)" &&
	test_eq 11 "$(jq -s "[.[] | select(.outputSchema.type == \"object\" and (.outputSchema.required | length) > 0)] | length" tools)" &&
	test_eq 11 "$(jq -s "[.[] | select([.annotations.readOnlyHint, .annotations.destructiveHint, .annotations.idempotentHint] | map(type) == [\"boolean\",\"boolean\",\"boolean\"])] | length" tools)" &&
	jq -s "[.[].inputSchema.properties | to_entries[] | .value] | map(select(
	    (.type == \"string\" and ((has(\"maxLength\") or has(\"enum\") or has(\"pattern\")) | not)) or
	    (.type == \"integer\" and ((has(\"minimum\") and has(\"maximum\")) | not)) or
	    (.type == \"array\" and (has(\"maxItems\") | not)) or
	    (.type == \"array\" and ((.items | has(\"maxLength\") or has(\"pattern\")) | not))))
	    | length" tools >unbounded &&
	test_eq 0 "$(cat unbounded)" &&
	test_eq "trace_doctor trace_status trace_query trace_list" \
	    "$(jq -r "select(.annotations.readOnlyHint) | .name" tools | tr "\n" " " | sed "s/ $//")" &&
	test_eq "trace_cancel trace_prune" \
	    "$(jq -r "select(.annotations.destructiveHint) | .name" tools | tr "\n" " " | sed "s/ $//")" &&
	test_eq "[\"snapshot_id\",\"kind\"]" \
	    "$(jq -c "select(.name == \"trace_query\") | .inputSchema.required" tools)" &&
	test_eq "[\"session_id\",\"state\",\"snapshots\"]" \
	    "$(jq -c "select(.name == \"trace_status\") | .outputSchema.required" tools)"
'

test_expect_success 'stdout carries only protocol lines, one per message' '
	cat >req <<-\EOF &&
	{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}
	{"jsonrpc":"2.0","id":1,"method":"tools/list"}
	{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace_prune","arguments":{"max_count":3,"dry_run":true}}}
	EOF
	mcp_session req out 3 &&
	test_eq 3 "$(wc -l <out)" &&
	test_eq 3 "$(jq -s "[.[] | select(.jsonrpc == \"2.0\")] | length" out)"
'

test_done

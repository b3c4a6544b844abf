#!/bin/sh
# trace_list and trace_prune over MCP: the store listed oldest first by
# creation time (not by id: ids have a second's resolution), a page at a
# time with every row once; prune by id and by "keep the newest N of each
# program"; what a live job holds is kept and said.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

text() { jq -r '.result.content[0].text' | sed -n 1p; }
sc() { jq -c ".result.structuredContent$1"; }

# Made in one second, in this order: C, A, B, D (ids sort A B C D).
A=20260105T000000Z-000000aa
B=20260105T000000Z-000000bb
C=20260105T000000Z-000000cc
D=20260105T000000Z-000000dd
E=20260105T000000Z-000000ee

# made STORE ID PROGRAM NS [decoded]: a snapshot whose manifest says when
# it was made (ns since the epoch), what ran and what took it.
made() {
	mkdir -p "$1/snapshots/$2" &&
	printf '{"created_wall_ns":%s,"target":{"argv":["%s","-x"]},"trigger":{"kind":"exit"}}\n' \
	    "$4" "$3" >"$1/snapshots/$2/manifest.json" &&
	if [ -n "${5:-}" ]; then
		mkdir -p "$1/snapshots/$2/derived/default" &&
		echo '{}' >"$1/snapshots/$2/derived/default/manifest.json"
	fi
}

setup='
	mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake &&
	PTKIT_STORE=$PWD/store && MCP_PTMCP=$PWD/bin/ptmcp &&
	export FAKE_DIR PTKIT_STORE MCP_PTMCP &&
	made store $C ./app 1767571200000000100 decoded &&
	made store $A ./app 1767571200000000300 &&
	made store $B /usr/bin/other 1767571200000000200 &&
	made store $D ./app 1767571200000000400
'

test_expect_success 'trace_list: oldest first by creation time, each row complete' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_list '{}' >r1 &&
	mcp_close &&
	test_eq '[\"$C\",\"$B\",\"$A\",\"$D\"]' \"\$(sc '.snapshots | map(.snapshot_id)' <r1)\" &&
	test_eq '{\"snapshot_id\":\"$C\",\"program\":\"./app\",\"created\":\"2026-01-05T00:00:00.000Z\",\"trigger\":\"exit\",\"decoded\":true,\"analyses\":[{\"analysis_id\":\"default\",\"bytes\":3}],\"in_use\":false}' \
	    \"\$(sc '.snapshots[0] | del(.bytes)' <r1)\" &&
	test_eq \$((\$(wc -c <store/snapshots/$C/manifest.json) + 3)) \"\$(sc '.snapshots[0].bytes' <r1)\" &&
	test_eq '[false,false,false]' \"\$(sc '.snapshots[1:] | map(.decoded)' <r1)\" &&
	test_eq '4 0 false null' \"\$(sc '| [.total_rows, .first_row, .truncated, .next_cursor] | map(tostring) | join(\" \")' <r1 | tr -d '\"')\" &&
	text <r1 | grep -qx \"The store holds 4 snapshots ([0-9]* bytes). Rows 1-4, oldest first: $C ./app 2026-01-05T00:00:00.000Z [0-9]* bytes, decoded; $B /usr/bin/other .*; $D ./app 2026-01-05T00:00:00.000Z [0-9]* bytes, not decoded.\"
"

test_expect_success 'trace_list: pages of limit rows return every row once' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_list '{\"limit\":3}' >r1 &&
	mcp_tool 2 trace_list '{\"limit\":3,\"cursor\":\"o3\"}' >r2 &&
	mcp_tool 3 trace_list '{\"program\":\"other\"}' >r3 &&
	mcp_tool 4 trace_list '{\"cursor\":\"c9\"}' >r4 &&
	mcp_close &&
	test_eq '\"o3\"' \"\$(sc .next_cursor <r1)\" &&
	text <r1 | grep -q ' More rows: call again with cursor o3\.\$' &&
	test_eq '[\"$D\"] 3 null' \"\$(sc '| [(.snapshots | map(.snapshot_id) | tojson), .first_row, .next_cursor] | map(tostring) | join(\" \")' <r2 | tr -d '\\\\' | sed 's/^\"//; s/\"\$//')\" &&
	test_eq '[\"$B\"]' \"\$(sc '.snapshots | map(.snapshot_id)' <r3)\" &&
	test_eq \"trace_list: cursor 'c9' is not one trace_list gave: pass next_cursor as it came.\" \"\$(text <r4)\"
"

test_expect_success 'trace_prune keep_newest: the newest N of each program stay' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_prune '{\"keep_newest\":1,\"dry_run\":true}' >r1 &&
	mcp_tool 2 trace_prune '{\"keep_newest\":1}' >r2 &&
	mcp_close &&
	test_eq '[\"$C\",\"$A\"]' \"\$(sc '.removed | map(.snapshot_id)' <r1)\" &&
	test_eq \"Would remove 2 snapshots (\$(sc .freed_bytes <r1) bytes): $C, $A.\" \"\$(text <r1)\" &&
	test_eq \"\$(sc .removed <r1)\" \"\$(sc .removed <r2)\" &&
	test_eq \"\$((\$(wc -c <store/snapshots/$D/manifest.json) * 2 + 3))\" \"\$(sc .freed_bytes <r2)\" &&
	test_eq \"$B $D\" \"\$(ls store/snapshots | tr '\n' ' ' | sed 's/ \$//')\"
"

test_expect_success 'trace_prune ids: those snapshots; one not in the store removes nothing' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_prune '{\"ids\":[\"$A\",\"$E\"]}' >r1 &&
	mcp_tool 2 trace_prune '{\"ids\":[\"$D\",\"$A\"]}' >r2 &&
	mcp_tool 3 trace_prune '{\"ids\":[\"../x\"]}' >r3 &&
	mcp_close &&
	test_eq \"trace_prune: ids: $E: not in the store (trace_list shows the snapshots); nothing was deleted.\" \"\$(text <r1)\" &&
	test_eq true \"\$(jq .result.isError r1)\" &&
	test_eq '[\"$D\",\"$A\"]' \"\$(sc '.removed | map(.snapshot_id)' <r2)\" &&
	test_eq \"$C $B\" \"\$(ls -r store/snapshots | tr '\n' ' ' | sed 's/ \$//')\" &&
	text <r3 | grep -q \"^trace_prune: argument 'ids\"
"

test_expect_success 'trace_prune: what a live decode holds is kept, and said' "
	$setup
	FAKE_DECODE=hang && export FAKE_DECODE &&
	mcp_open out &&
	mcp_send '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$A\"}}}' &&
	mcp_wait_for test -s fake/ptspans.pid &&
	mcp_tool 2 trace_list '{}' >r2 &&
	mcp_tool 3 trace_prune '{\"ids\":[\"$A\"],\"max_count\":0}' >r3 &&
	mcp_close &&
	test_eq '[false,false,true,false]' \"\$(sc '.snapshots | map(.in_use)' <r2)\" &&
	test_eq '[\"$A\"]' \"\$(sc .kept_in_use <r3)\" &&
	test_eq '[\"$C\",\"$B\",\"$D\"]' \"\$(sc '.removed | map(.snapshot_id)' <r3)\" &&
	text <r3 | grep -q ' Kept 1 in use by a live session or job\.\$' &&
	test_eq $A \"\$(ls store/snapshots)\"
"

test_expect_success 'CLI: list shows creation time, program and trigger; prune takes ids and --keep-newest' "
	$setup
	ptmcp list | jq -r '[.id, .created, .program, .trigger] | join(\" \")' >out &&
	printf '%s\n' \"$C 2026-01-05T00:00:00.000Z ./app exit\" \"$B 2026-01-05T00:00:00.000Z /usr/bin/other exit\" \
	    \"$A 2026-01-05T00:00:00.000Z ./app exit\" \"$D 2026-01-05T00:00:00.000Z ./app exit\" >expect &&
	test_cmp expect out &&
	ptmcp prune --keep-newest 2 --dry-run | cut -f1 >out &&
	test_eq $C \"\$(cat out)\" &&
	must_exit 1 ptmcp prune $E 2>err &&
	test_eq \"ptmcp: \$PWD/store: $E: not in the store\" \"\$(cat err)\" &&
	ptmcp prune $B $C | cut -f1 >out &&
	printf '%s\n' $B $C >expect && test_cmp expect out &&
	test_eq \"$A $D\" \"\$(ls store/snapshots | tr '\n' ' ' | sed 's/ \$//')\"
"

test_done

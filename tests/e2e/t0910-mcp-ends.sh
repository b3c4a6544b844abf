#!/bin/sh
# How a session ends and how work goes, as an agent reads it: a program
# trace_stop ended shows as stopped with its signal, never exit_code 0;
# one that exited shows its own status; ptrec's is apart; a cancelled
# session never has a negative elapsed_ms; progress carries a total and
# the stage (decoding with its bytes from ptdecode's own counts, then
# spans); the tools' errors name the call's arguments and snapshot ids,
# never CLI flags or store paths.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

ID1=20260101T000000Z-00000001
ID2=20260102T000000Z-00000002

text() { jq -r '.result.content[0].text' | sed -n 1p; }
sc() { jq -c ".result.structuredContent$1"; }

fakes() {
	mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake &&
	PTKIT_STORE=$PWD/store && MCP_PTMCP=$PWD/bin/ptmcp &&
	export FAKE_DIR PTKIT_STORE MCP_PTMCP
}

# stop_session: trace_start with the controllable fake ptrec, trace_stop.
stop_session() {
	FAKE_PTREC=control && export FAKE_PTREC &&
	mcp_open out &&
	mcp_tool 1 trace_start '{"program":["./app"]}' >r1 &&
	sid=$(sc .session_id <r1 | tr -d '"') &&
	mcp_wait_for test -e fake/ready &&
	mcp_tool 2 trace_stop "{\"session_id\":\"$sid\"}" >r2 &&
	mcp_tool 3 trace_status "{\"session_id\":\"$sid\"}" >r3 &&
	mcp_close
}

test_expect_success 'trace_stop ended a running program: stopped, SIGKILL, no exit_code' '
	fakes &&
	FAKE_MANIFEST="{\"recorder\":{\"backend\":\"emu\"},\"target\":{\"state\":\"running\",\"exit_code\":0,\"signal\":0}}" &&
	export FAKE_MANIFEST &&
	stop_session &&
	test_eq "\"stopped\" 9 \"SIGKILL\" null 0" \
	    "$(sc "| [.program_state, .signal, .signal_name, .exit_code, .recorder_exit_code] | map(tojson) | join(\" \")" <r3 | jq -r .)" &&
	text <r3 | grep -q "; the program was stopped by trace_stop with SIGKILL; the recorder exited with 0\. " &&
	test_eq "$(sc "| del(.elapsed_ms)" <r2)" "$(sc "| del(.elapsed_ms)" <r3)"
'

test_expect_success 'a program that had exited: its own status' '
	fakes &&
	FAKE_MANIFEST="{\"recorder\":{\"backend\":\"emu\"},\"target\":{\"state\":\"exited\",\"exit_code\":3,\"signal\":0}}" &&
	export FAKE_MANIFEST &&
	stop_session &&
	test_eq "\"exited\" 3 null" "$(sc "| [.program_state, .exit_code, .signal] | map(tojson) | join(\" \")" <r3 | jq -r .)" &&
	text <r3 | grep -q "; the program exited with 3; the recorder exited with 0\. "
'

test_expect_success 'a program killed by a signal of its own: killed, that signal' '
	fakes &&
	FAKE_MANIFEST="{\"recorder\":{\"backend\":\"emu\"},\"target\":{\"state\":\"signaled\",\"exit_code\":0,\"signal\":11}}" &&
	export FAKE_MANIFEST &&
	stop_session &&
	test_eq "\"killed\" 11 \"SIGSEGV\" null" "$(sc "| [.program_state, .signal, .signal_name, .exit_code] | map(tojson) | join(\" \")" <r3 | jq -r .)"
'

test_expect_success 'trace_cancel: elapsed_ms is never negative, the program cancelled' '
	fakes &&
	FAKE_PTREC=control && export FAKE_PTREC &&
	mcp_open out &&
	mcp_tool 1 trace_start "{\"program\":[\"./app\"]}" >r1 &&
	sid=$(sc .session_id <r1 | tr -d "\"") &&
	mcp_wait_for test -e fake/ready &&
	mcp_tool 2 trace_cancel "{\"session_id\":\"$sid\"}" >r2 &&
	mcp_tool 3 trace_status "{\"session_id\":\"$sid\"}" >r3 &&
	sleep 0.3 &&
	mcp_tool 4 trace_status "{\"session_id\":\"$sid\"}" >r4 &&
	mcp_close &&
	e3=$(sc .elapsed_ms <r3) && e4=$(sc .elapsed_ms <r4) &&
	test "$e3" -ge 0 && test "$e4" -ge "$e3" &&
	test_eq "\"cancelled\" \"cancelled\"" "$(sc "| [.state, .program_state] | map(tojson) | join(\" \")" <r4 | jq -r .)"
'

test_expect_success 'progress: a total, the stage, the bytes ptdecode counted, then spans' '
	fakes &&
	FAKE_DECODE=progress FAKE_SPANS=wait && export FAKE_DECODE FAKE_SPANS &&
	mcp_snapshot store $ID1 &&
	mcp_open out &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$ID1\"},\"_meta\":{\"progressToken\":7}}}" &&
	mcp_wait_for grep -q "decoding: 512 of 2048" out &&
	touch fake/decode.go &&
	mcp_wait_for grep -q "trace_decode: spans" out &&
	touch fake/spans.go &&
	mcp_wait_for mcp_has_id 1 &&
	mcp_close &&
	test_eq lines "$(cat fake/ptdecode.env)" &&
	grep notifications/progress out | jq -c .params >progress &&
	test_eq "{\"progressToken\":7,\"progress\":225,\"total\":1000,\"message\":\"trace_decode: decoding: 512 of 2048 bytes of trace (25%)\"}" \
	    "$(grep -m1 "decoding: 512" progress)" &&
	grep -m1 "trace_decode: spans" progress | jq -e "select(.progress >= 900 and .progress < 1000 and .total == 1000)" >/dev/null &&
	grep -m1 "trace_decode: spans" progress | jq -r .message | grep -qx "trace_decode: spans: the trace is decoded; ptspans is building the calls and their index ([0-9]* s)" &&
	jq -s "[.[].progress] | . == (sort | unique)" progress | grep -qx true &&
	test_eq false "$(mcp_reply out 1 | jq .result.isError)"
'

test_expect_success 'progress: after ptdecode, ptspans'"'"'s own lines move the stage on' '
	fakes &&
	FAKE_DECODE=progress FAKE_SPANS=progress && export FAKE_DECODE FAKE_SPANS &&
	mcp_snapshot store $ID1 &&
	mcp_open out &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$ID1\"},\"_meta\":{\"progressToken\":7}}}" &&
	mcp_wait_for grep -q "decoding: 512 of 2048" out &&
	touch fake/decode.go &&
	mcp_wait_for grep -q "ptspans has read 4096 bytes" out &&
	touch fake/spans.go &&
	mcp_wait_for grep -q "trace_decode: indexing" out &&
	touch fake/index.go &&
	mcp_wait_for mcp_has_id 1 &&
	mcp_close &&
	test_eq lines "$(cat fake/ptspans.env)" &&
	grep notifications/progress out | jq -c .params >progress &&
	grep -m1 "ptspans has read" progress | jq -r .message | grep -qx "trace_decode: spans: the trace is decoded; ptspans has read 4096 bytes of blocks ([0-9]* s)" &&
	grep -m1 "ptspans has read" progress | jq -e "select(.progress >= 900 and .progress < 950)" >/dev/null &&
	grep -m1 "trace_decode: indexing" progress | jq -r .message | grep -qx "trace_decode: indexing: ptspans is writing the index of 77 calls ([0-9]* s)" &&
	grep -m1 "trace_decode: indexing" progress | jq -e "select(.progress >= 950 and .progress < 1000)" >/dev/null &&
	jq -s "[.[].progress] | . == (sort | unique)" progress | grep -qx true &&
	test_eq false "$(mcp_reply out 1 | jq .result.isError)"
'

test_expect_success 'a tool underneath fails: its words become the call'"'"'s' '
	fakes &&
	mkdir -p store/snapshots/$ID1/derived/default &&
	echo "{}" >store/snapshots/$ID1/manifest.json &&
	echo "{}" >store/snapshots/$ID1/derived/default/manifest.json &&
	FAKE_QUERY=fail && export FAKE_QUERY &&
	mcp_open out &&
	mcp_tool 1 trace_query "{\"snapshot_id\":\"$ID1\",\"kind\":\"at\",\"span_id\":99}" >r1 &&
	mcp_close &&
	test_eq true "$(jq .result.isError r1)" &&
	test_eq "ptquery: snapshot $ID1 analysis default: span_id 99: no span with this id (argument '"'"'span_id'"'"' takes a span id from kind timeline)" \
	    "$(jq -r ".result.content[0].text" r1)" &&
	test_eq "" "$(jq -r ".result.content[0].text" r1 | grep -F "$PWD")"
'

test_expect_success 'trace_compare: module filters and the noise band go to ptdiff; the text counts noise' '
	fakes &&
	for id in $ID1 $ID2; do
		mkdir -p store/snapshots/$id/derived/default &&
		echo "{}" >store/snapshots/$id/manifest.json &&
		echo "{}" >store/snapshots/$id/derived/default/manifest.json
	done &&
	RID=20260104T000000Z-00000004 && mkdir -p store/reports &&
	printf "%s\n" "{\"v\":1,\"a\":\"/s/snapshots/$ID1/derived/default\",\"b\":\"/s/snapshots/$ID2/derived/default\",\"comparable\":{\"times\":\"virtual\",\"class_by\":\"self_insns\",\"deterministic\":false,\"noise_insns\":551},\"rows\":[{\"fn\":\"main\",\"class\":\"same\",\"within_noise\":true,\"a\":{\"self_insns\":5},\"b\":{\"self_insns\":2},\"delta\":-3}],\"summary\":{\"rows\":1,\"changed\":0,\"crossed\":0,\"ignored\":0,\"noise\":1}}" >store/reports/$RID.json &&
	mcp_open out &&
	mcp_tool 1 trace_compare "{\"a\":\"$ID1\",\"b\":\"$ID2\",\"modules\":[\"app\"],\"exclude_modules\":[\"libc.so.6\",\"ld-linux-x86-64.so.2\"],\"noise_insns\":\"0.5%\"}" >r1 &&
	mcp_tool 2 trace_compare "{\"report_id\":\"$RID\"}" >r2 &&
	mcp_tool 3 trace_compare "{\"a\":\"$ID1\",\"b\":\"$ID2\",\"noise_insns\":\"lots\"}" >r3 &&
	mcp_close &&
	test_eq "--format json --noise-insns 0.5% --module app --exclude-module libc.so.6 --exclude-module ld-linux-x86-64.so.2 $PWD/store/snapshots/$ID1/derived/default $PWD/store/snapshots/$ID2/derived/default" "$(cat fake/ptdiff.args)" &&
	test_eq "$ID1 -> $ID2: 0 of 1 functions changed (judged by self_insns; times virtual). 1 more changed within the noise band of 551 instructions (threads make runs differ): counted as same. Report $RID: rows 1-1 of 1." \
	    "$(jq -r ".result.content[0].text" r2 | sed -n 1p)" &&
	test_eq false "$(jq .result.structuredContent.crossed r2)" &&
	test_eq true "$(jq .result.isError r3)" &&
	jq -r ".result.content[0].text" r3 | grep -q "^trace_compare: argument .noise_insns. "
'

fixture=$PTKIT_BUILD/tests/fixtures/emu/ticker
if [ ! -x "$fixture" ]; then
	test_skip 'the real recorder: stopped by trace_stop' 'the emu fixtures are not built'
	test_done
fi

test_expect_success 'the real recorder: a program trace_stop ended is stopped, SIGKILL' '
	PTKIT_STORE=$PWD/store && export PTKIT_STORE &&
	mcp_open out &&
	mcp_tool 1 trace_start "{\"program\":[\"$fixture\",\"100000000\",\"10\"],\"recorder\":\"emu\",\"aux_bytes\":1048576}" >r1 &&
	sid=$(sc .session_id <r1 | tr -d "\"") &&
	k=0 && until [ -n "$(ls store/snapshots 2>/dev/null; ls "$TMPDIR/ptkit-$(id -u)"/ptmcp.*/*.ctl 2>/dev/null)" ] && sleep 1 &&
	    mcp_tool 2$k trace_stop "{\"session_id\":\"$sid\"}" >r2 && [ "$(jq .result.isError r2)" = false ]; do
		k=$((k + 1)); [ $k -lt 50 ] || break; sleep 0.2
	done &&
	mcp_tool 3 trace_status "{\"session_id\":\"$sid\"}" >r3 &&
	mcp_close &&
	test_eq "\"done\" \"stopped\" 9 \"SIGKILL\" null 0" \
	    "$(sc "| [.state, .program_state, .signal, .signal_name, .exit_code, .recorder_exit_code] | map(tojson) | join(\" \")" <r3 | jq -r .)" &&
	snap=$(sc ".snapshots[0]" <r3 | tr -d "\"") &&
	test_eq running "$(jq -r .target.state store/snapshots/$snap/manifest.json)"
'

test_done

#!/bin/sh
# ptmcp serve: the tools, their jobs, cancellation and shutdown, with
# stand-ins for the other ptkit tools (mcp_fakes) so that what ptmcp
# itself does is checked exactly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

ID1=20260101T000000Z-00000001
ID2=20260102T000000Z-00000002
ID3=20260103T000000Z-00000003

# Every test: fakes in ./bin, a store in ./store, fake logs in ./fake.
setup='
	mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake &&
	PTKIT_STORE=$PWD/store && MCP_PTMCP=$PWD/bin/ptmcp &&
	export FAKE_DIR PTKIT_STORE MCP_PTMCP
'
# The summary line of a result's text (the serialized result follows it).
text() { jq -r '.result.content[0].text' | sed -n 1p; }
sc() { jq -c ".result.structuredContent$1"; }
scratch_left() { ls "$TMPDIR/ptkit-$(id -u)" 2>/dev/null | grep -c '^ptmcp\.'; }
dead() { ! kill -0 "$(cat "$1")" 2>/dev/null; }

test_expect_success 'trace_doctor: the recorder report and the store' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_doctor '{}' >r &&
	mcp_close &&
	test_eq false \"\$(jq .result.isError r)\" &&
	test_eq '{\"recorders\":{\"emu\":{\"usable\":true}}}' \"\$(sc .report <r)\" &&
	test_eq \"\\\"\$PWD/store\\\"\" \"\$(sc .store.path <r)\" &&
	test_eq 0 \"\$(sc .store.snapshots <r)\" &&
	test_eq '--doctor --format json' \"\$(tr '\n' ' ' <fake/ptrec.args | sed 's/ \$//')\" &&
	test_eq \"Recorders that work here: emu. Not usable: none. trace_start picks one with recorder auto. The store at \$PWD/store holds 0 snapshots (0 bytes).\" \"\$(text <r)\"
"

test_expect_success 'trace_doctor: a failing ptrec is an isError in its own words' "
	$setup
	FAKE_DOCTOR_FAIL=1 && export FAKE_DOCTOR_FAIL &&
	mcp_open out && mcp_tool 1 trace_doctor '{}' >r && mcp_close &&
	test_eq true \"\$(jq .result.isError r)\" &&
	test_eq 'ptrec: --doctor failed in the fake ptrec' \"\$(text <r)\"
"

# Polls trace_status (ids from 100) until the state is not running.
poll_status='
	k=100 && state=running &&
	while [ "$state" = running ] && [ $k -lt 400 ]; do
		mcp_tool $k trace_status "{\"session_id\":\"$sid\"}" >st &&
		state=$(sc .state <st | tr -d \") && k=$((k + 1)) ||
		break
		[ "$state" = running ] && sleep 0.05
	done
'

test_expect_success 'trace_start returns at once; trace_status follows it to done' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\",\"x y\"],\"trigger_symbol\":\"main\",\"aux_bytes\":65536}' >r &&
	test_eq running \"\$(sc .state <r | tr -d '\"')\" &&
	sid=\$(sc .session_id <r | tr -d '\"') &&
	$poll_status
	mcp_close &&
	test_eq done \"\$state\" &&
	test_eq 1 \"\$(jq '.result.structuredContent.snapshots | length' st)\" &&
	snap=\$(jq -r '.result.structuredContent.snapshots[0]' st) &&
	test -f store/snapshots/\$snap/manifest.json &&
	test_eq 0 \"\$(sc .recorder_exit_code <st)\" &&
	test_eq null \"\$(sc .exit_code <st)\" &&
	test_eq '\"unknown\"' \"\$(sc .program_state <st)\" &&
	test_eq \"--store \$PWD/store --control \" \"\$(head -3 fake/ptrec.args | tr '\n' ' ')\" &&
	sed -n 4p fake/ptrec.args | grep -q \"^\$TMPDIR/ptkit-\$(id -u)/ptmcp\\.[^/]*/\$sid\\.ctl\$\" &&
	test_eq '--aux-bytes 65536 --trigger-symbol main -- ./app x y' \
	    \"\$(tail -n +5 fake/ptrec.args | tr '\n' ' ' | sed 's/ \$//')\" &&
	test_eq done \"\$(jq -r .state store/sessions/\$sid.json)\" &&
	test ! -e store/sessions/\$sid.lock &&
	test_eq 0 \"\$(scratch_left)\"
"

test_expect_success 'a failed recording: state failed with the recorder line' "
	$setup
	FAKE_PTREC=fail && export FAKE_PTREC &&
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\"]}' >r &&
	sid=\$(sc .session_id <r | tr -d '\"') &&
	$poll_status
	mcp_close &&
	test_eq failed \"\$state\" &&
	test_eq '\"ptrec: recording failed in the fake ptrec\"' \"\$(sc .error <st)\" &&
	test_eq 1 \"\$(sc .recorder_exit_code <st)\" &&
	test_eq null \"\$(sc .exit_code <st)\" &&
	text <st | grep -qx \"Session \$sid is failed after [0-9]* ms; snapshots: none yet; the recorder exited with 1. ptrec: recording failed in the fake ptrec\"
"

# The recorder's last line names a path that is not UTF-8 (byte 0xff):
# the session record keeps the message, that byte as U+FFFD, and reads
# back, in this ptmcp and in another.
test_expect_success 'a failure naming a non-UTF-8 path: its record is written' "
	$setup
	FAKE_PTREC=failbytes && export FAKE_PTREC &&
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\"]}' >r &&
	sid=\$(sc .session_id <r | tr -d '\"') &&
	$poll_status
	mcp_close &&
	want=\$(printf 'ptrec: /tmp/d\\357\\277\\275/app: not an x86-64 ELF executable') &&
	test_eq failed \"\$state\" &&
	test_eq \"\$want\" \"\$(jq -r .result.structuredContent.error st)\" &&
	test -f store/sessions/\$sid.json &&
	test_eq failed \"\$(jq -r .state store/sessions/\$sid.json)\" &&
	test_eq \"\$want\" \"\$(jq -r .error store/sessions/\$sid.json)\" &&
	mcp_open out2 &&
	mcp_tool 2 trace_status \"{\\\"session_id\\\":\\\"\$sid\\\"}\" >other &&
	mcp_close &&
	test_eq failed \"\$(sc .state <other | tr -d '\"')\"
"

test_expect_success 'trace_start argument rules say the fix' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"a\"],\"pid\":5}' >r1 &&
	mcp_tool 2 trace_start '{}' >r2 &&
	mcp_tool 3 trace_start '{\"pid\":5,\"trigger_hits\":3}' >r3 &&
	mcp_close &&
	test_eq 'trace_start: give either program (to launch) or pid (to attach), not both.' \"\$(text <r1)\" &&
	test_eq 'trace_start: give program (the argv to launch, e.g. [\"./app\"]) or pid (a running process to attach to).' \"\$(text <r2)\" &&
	test_eq 'trace_start: trigger_hits needs trigger_symbol.' \"\$(text <r3)\" &&
	test ! -e fake/ptrec.pids
"

# A pid that is surely free: above the kernel's pid_max.
test_expect_success 'trace_start checks before it starts' "
	$setup
	cp \"\$PTKIT_BUILD/tests/fixtures/mcp/agent\" prog &&
	chmod -x app &&
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./missing\"]}' >r1 &&
	mcp_tool 2 trace_start '{\"program\":[\"no-such-tool-on-path\"]}' >r2 &&
	mcp_tool 3 trace_start '{\"program\":[\"./app\"]}' >r3 &&
	mcp_tool 4 trace_start '{\"pid\":4194304}' >r4 &&
	mcp_tool 5 trace_start '{\"pid\":1,\"recorder\":\"emu\"}' >r5 &&
	mcp_tool 6 trace_start '{\"program\":[\"./prog\"],\"trigger_symbol\":\"no_such_fn\"}' >r6 &&
	mcp_tool 7 trace_start '{\"program\":[\"./prog\"],\"aux_bytes\":268435456}' >r7 &&
	mcp_tool 8 trace_start '{\"program\":[\"./prog\"],\"aux_bytes\":8192,\"budget_bytes\":4096}' >r8 &&
	mcp_close &&
	test_eq 'true true true true true true true true' \"\$(jq -r .result.isError r1 r2 r3 r4 r5 r6 r7 r8 | tr '\\n' ' ' | sed 's/ \$//')\" &&
	test_eq \"trace_start: program[0] './missing' does not exist.\" \"\$(text <r1)\" &&
	test_eq \"trace_start: program[0] 'no-such-tool-on-path' is not found on PATH.\" \"\$(text <r2)\" &&
	test_eq \"trace_start: program[0] './app' is not an executable file.\" \"\$(text <r3)\" &&
	test_eq 'trace_start: no process has pid 4194304.' \"\$(text <r4)\" &&
	test_eq 'trace_start: the emu recorder runs the program it launches under emulation and cannot attach to a running process: give program instead of pid, or recorder pt or perf.' \"\$(text <r5)\" &&
	test_eq \"trace_start: trigger_symbol 'no_such_fn' is not a function of ./prog (the recorders look for it in the program's own symbol tables).\" \"\$(text <r6)\" &&
	test_eq 'trace_start: aux_bytes 268435456 is over budget_bytes 134217728, its default (the ring memory of all threads): lower aux_bytes or raise budget_bytes.' \"\$(text <r7)\" &&
	test_eq 'trace_start: aux_bytes 8192 is over budget_bytes 4096 (the ring memory of all threads): lower aux_bytes or raise budget_bytes.' \"\$(text <r8)\" &&
	test ! -e fake/ptrec.pids
"

test_expect_success 'trace_snapshot and trace_stop go through the control FIFO' "
	$setup
	FAKE_PTREC=control && export FAKE_PTREC &&
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\"]}' >r &&
	sid=\$(sc .session_id <r | tr -d '\"') &&
	mcp_wait_for test -e fake/ready &&
	mcp_tool 2 trace_snapshot \"{\\\"session_id\\\":\\\"\$sid\\\"}\" >r2 &&
	mcp_tool 3 trace_stop \"{\\\"session_id\\\":\\\"\$sid\\\"}\" >r3 &&
	mcp_tool 4 trace_cancel \"{\\\"session_id\\\":\\\"\$sid\\\"}\" >r4 &&
	mcp_close &&
	snap=\$(sc .snapshot_id <r2 | tr -d '\"') &&
	test -d store/snapshots/\$snap &&
	test_eq done \"\$(sc .state <r3 | tr -d '\"')\" &&
	test_eq 2 \"\$(jq '.result.structuredContent.snapshots | length' r3)\" &&
	test_eq \"\\\"\$snap\\\"\" \"\$(sc .snapshots[0] <r3)\" &&
	test_eq done \"\$(sc .state <r4 | tr -d '\"')\" &&
	test_eq 0 \"\$(scratch_left)\"
"

test_expect_success 'trace_stop with decode: the final snapshot decoded' "
	$setup
	FAKE_PTREC=control && export FAKE_PTREC &&
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\"]}' >r &&
	sid=\$(sc .session_id <r | tr -d '\"') &&
	mcp_wait_for test -e fake/ready &&
	mcp_tool 2 trace_stop \"{\\\"session_id\\\":\\\"\$sid\\\",\\\"decode\\\":true}\" >r2 &&
	mcp_close &&
	snap=\$(sc .snapshots[0] <r2 | tr -d '\"') &&
	test_eq '\"default\"' \"\$(sc .analysis_id <r2)\" &&
	test_eq done \"\$(sc .state <r2 | tr -d '\"')\" &&
	test -f store/snapshots/\$snap/derived/default/manifest.json &&
	test_eq \"\$PWD/store/snapshots/\$snap\" \"\$(cat fake/ptdecode.args)\"
"

test_expect_success 'a request_id makes trace_start idempotent' "
	$setup
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\"],\"request_id\":\"r-1\"}' >r1 &&
	mcp_tool 2 trace_start '{\"program\":[\"./app\"],\"request_id\":\"r-1\"}' >r2 &&
	mcp_tool 3 trace_start '{\"program\":[\"./app\",\"x\"],\"request_id\":\"r-1\"}' >r3 &&
	mcp_close &&
	test_eq \"\$(sc .session_id <r1)\" \"\$(sc .session_id <r2)\" &&
	test_eq \"trace_start: request_id 'r-1' was used before with other arguments; a request_id names one call: choose a new one for this call.\" \"\$(text <r3)\" &&
	test_eq 1 \"\$(wc -l <fake/ptrec.pids)\" &&
	test -f store/jobs/start-r-1.json
"

test_expect_success 'trace_decode: ptdecode | ptspans into derived/default' "
	$setup
	mcp_snapshot store $ID1 &&
	mcp_open out &&
	mcp_tool 1 trace_decode '{\"snapshot_id\":\"$ID1\"}' >r1 &&
	mcp_tool 2 trace_decode '{\"snapshot_id\":\"$ID1\"}' >r2 &&
	mcp_close &&
	test_eq '{\"snapshot_id\":\"$ID1\",\"analysis_id\":\"default\",\"already_decoded\":false}' \"\$(sc '' <r1)\" &&
	test_eq true \"\$(sc .already_decoded <r2)\" &&
	test_eq \"\$PWD/store/snapshots/$ID1\" \"\$(cat fake/ptdecode.args)\" &&
	test -f store/snapshots/$ID1/derived/default/manifest.json &&
	test_eq default \"\$(ls store/snapshots/$ID1/derived)\" &&
	test_eq '' \"\$(ls store/sessions)\"
"

test_expect_success 'trace_decode failing: isError in ptdecode words, nothing left' "
	$setup
	FAKE_DECODE=fail && export FAKE_DECODE &&
	mcp_snapshot store $ID1 &&
	mcp_open out &&
	mcp_tool 1 trace_decode '{\"snapshot_id\":\"$ID1\"}' >r &&
	mcp_close &&
	test_eq true \"\$(jq .result.isError r)\" &&
	test_eq 'ptdecode: decoding failed in the fake ptdecode' \"\$(text <r)\" &&
	test_eq '' \"\$(ls -A store/snapshots/$ID1/derived)\" &&
	test_eq '' \"\$(ls store/sessions)\"
"

test_expect_success 'cancellation mid-decode: no answer, no child, no scratch' "
	$setup
	FAKE_DECODE=hang && export FAKE_DECODE &&
	mcp_snapshot store $ID1 &&
	mcp_open out &&
	mcp_send '{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$ID1\"},\"_meta\":{\"progressToken\":\"tok\"}}}' &&
	mcp_wait_for grep -q notifications/progress out &&
	test -s fake/ptdecode.pid && test -s fake/ptspans.pid &&
	test_eq 1 \"\$(ls store/sessions | grep -c json)\" &&
	mcp_send '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3,\"reason\":\"test\"}}' &&
	mcp_wait_for dead fake/ptdecode.pid &&
	mcp_wait_for dead fake/ptspans.pid &&
	mcp_call 4 '{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}' >/dev/null &&
	mcp_close &&
	test_eq '' \"\$(mcp_reply out 3)\" &&
	test_eq '{\"progressToken\":\"tok\",\"progress\":1,\"total\":1000,\"message\":\"trace_decode: decoding (1 s)\"}' \
	    \"\$(grep -m1 notifications/progress out | jq -c .params)\" &&
	test_eq '' \"\$(ls -A store/snapshots/$ID1/derived)\" &&
	test_eq '' \"\$(ls store/sessions)\" &&
	test_eq 0 \"\$(scratch_left)\"
"

test_expect_success 'stdin closed mid-call: prompt exit, children ended, nothing left' "
	$setup
	FAKE_DECODE=hang FAKE_PTREC=hang && export FAKE_DECODE FAKE_PTREC &&
	mcp_snapshot store $ID1 &&
	mcp_open out &&
	mcp_tool 1 trace_start '{\"program\":[\"./app\"]}' >r &&
	sid=\$(sc .session_id <r | tr -d '\"') &&
	mcp_send '{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$ID1\"}}}' &&
	mcp_wait_for test -s fake/ptspans.pid &&
	mcp_wait_for test -s fake/ptrec.pids &&
	test_eq 1 \"\$(scratch_left)\" &&
	mcp_close &&
	dead fake/ptdecode.pid && dead fake/ptspans.pid && dead fake/ptrec.pids &&
	test_eq '' \"\$(mcp_reply out 2)\" &&
	test_eq 0 \"\$(scratch_left)\" &&
	test_eq '' \"\$(ls -A store/snapshots/$ID1/derived)\" &&
	test_eq \$sid.json \"\$(ls store/sessions)\" &&
	test_eq cancelled \"\$(jq -r .state store/sessions/\$sid.json)\"
"

test_expect_success 'ids are never paths: escapes are refused' "
	$setup
	mcp_snapshot store $ID1 &&
	ln -s / store/snapshots/$ID2 &&
	mcp_open out &&
	mcp_tool 1 trace_decode '{\"snapshot_id\":\"../../etc\"}' >r1 &&
	mcp_tool 2 trace_query '{\"snapshot_id\":\"$ID2\",\"kind\":\"summary\"}' >r2 &&
	mcp_tool 3 trace_status '{\"session_id\":\"../sessions/x\"}' >r3 &&
	mcp_tool 4 trace_query '{\"snapshot_id\":\"$ID1\",\"kind\":\"summary\",\"analysis_id\":\"../..\"}' >r4 &&
	mcp_close &&
	test_eq 'true true true true' \"\$(jq -r .result.isError r1 r2 r3 r4 | tr '\n' ' ' | sed 's/ \$//')\" &&
	test_eq \"trace_decode: argument 'snapshot_id' must look like 20261129T101500Z-0123abcd (it must match ^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\$). Fix the arguments and call trace_decode again.\" \"\$(text <r1)\" &&
	test_eq 'Snapshot $ID2: $ID2: resolves outside the store.' \"\$(text <r2)\" &&
	test ! -e fake/ptdecode.args && test ! -e fake/ptquery.args
"

test_expect_success 'trace_query: ptquery json, paged, cut to fit 8 KB' "
	$setup
	mcp_snapshot store $ID1 decoded &&
	mcp_snapshot store $ID2 &&
	mcp_open out &&
	mcp_tool 1 trace_query '{\"snapshot_id\":\"$ID1\",\"kind\":\"hotpaths\",\"limit\":3,\"group\":\"function\"}' >r1 &&
	cp fake/ptquery.args args1 &&
	mcp_tool 2 trace_query '{\"snapshot_id\":\"$ID2\",\"kind\":\"summary\"}' >r2 &&
	mcp_close &&
	FAKE_ROWS=2000 && export FAKE_ROWS &&
	mcp_open out2 &&
	mcp_tool 3 trace_query '{\"snapshot_id\":\"$ID1\",\"kind\":\"timeline\",\"cursor\":\"c1\"}' >r3 &&
	mcp_close &&
	test_eq \"\$PWD/store/snapshots/$ID1/derived/default --kind hotpaths --format json --max-bytes 6656 --limit 3 --group function\" \"\$(cat args1)\" &&
	test_eq 3 \"\$(jq '.result.structuredContent.result.rows | length' r1)\" &&
	test_eq '\"c2\"' \"\$(sc .next_cursor <r1)\" &&
	test_eq \"\$(sc '' <r1)\" \"\$(jq -r '.result.content[0].text' r1 | sed 1d | jq -c .)\" &&
	test_eq false \"\$(sc .truncated <r1)\" &&
	test_eq 'hotpaths of $ID1. Rows 1-3: f0 self_ns=1000; f1 self_ns=999; f2 self_ns=998. More rows: call again with cursor c2.' \"\$(text <r1)\" &&
	test_eq \"Snapshot $ID2 has no analysis 'default' yet: call trace_decode with snapshot_id $ID2 first.\" \"\$(text <r2)\" &&
	test_eq \"\$PWD/store/snapshots/$ID1/derived/default --kind timeline --format json --max-bytes 6656 --limit 20 --cursor c1\" \"\$(cat fake/ptquery.args)\" &&
	test_eq true \"\$(sc .truncated <r3)\" &&
	n=\$(jq -c '.result.structuredContent.result' r3 | wc -c) &&
	test \$n -le 7168 && test \$n -gt 6000 &&
	n=\$(jq -r '.result.content[0].text' r3 | wc -c) &&
	test \$n -le 8193 &&
	rows=\$(sc '.result.rows | length' <r3) &&
	test_eq \"\\\"o\$rows\\\"\" \"\$(sc .next_cursor <r3)\" &&
	test_eq \"\$(sc .next_cursor <r3)\" \"\$(sc .result.next_cursor <r3)\"
"

test_expect_success 'trace_compare: ptdiff json, report kept in reports/' "
	$setup
	mcp_snapshot store $ID1 decoded && mcp_snapshot store $ID2 decoded &&
	mcp_open out &&
	mcp_tool 1 trace_compare '{\"a\":\"$ID1\",\"b\":\"$ID2\",\"fail_on\":[\"self_ns:+10%\"],\"request_id\":\"c1\"}' >r1 &&
	mcp_tool 2 trace_compare '{\"a\":\"$ID1\",\"b\":\"$ID2\",\"fail_on\":[\"self_ns:+10%\"],\"request_id\":\"c1\"}' >r2 &&
	mcp_close &&
	rid=\$(sc .report_id <r1 | tr -d '\"') &&
	test_eq true \"\$(sc .crossed <r1)\" &&
	test_eq '{\"functions\":[{\"fn\":\"main\",\"self_ns\":\"+12%\"}]}' \"\$(cat store/reports/\$rid.json)\" &&
	test_eq \"--format json --fail-on self_ns:+10% \$PWD/store/snapshots/$ID1/derived/default \$PWD/store/snapshots/$ID2/derived/default\" \"\$(cat fake/ptdiff.args)\" &&
	test_eq \"\$(sc '' <r1)\" \"\$(sc '' <r2)\" &&
	test_eq 1 \"\$(ls store/reports | wc -l)\"
"

test_expect_success 'trace_compare: a kept report read back by report_id, a page at a time' "
	$setup
	RID=20260104T000000Z-00000004 && mkdir -p store/reports &&
	printf '%s\\n' '{\"v\":1,\"a\":\"/s/snapshots/$ID1/derived/default\",\"b\":\"/s/snapshots/$ID2/derived/default\",\"comparable\":{\"times\":\"virtual\",\"class_by\":\"self_insns\"},\"rows\":[{\"fn\":\"lookup\",\"class\":\"slower\",\"a\":{\"self_insns\":100},\"b\":{\"self_insns\":200},\"delta\":100},{\"fn\":\"main\",\"class\":\"same\",\"a\":{\"self_insns\":5},\"b\":{\"self_insns\":5},\"delta\":0},{\"fn\":\"tick\",\"class\":\"faster\",\"a\":{\"self_insns\":9},\"b\":{\"self_insns\":3},\"delta\":-6}],\"summary\":{\"rows\":3,\"changed\":2,\"crossed\":0,\"ignored\":0}}' >store/reports/\$RID.json &&
	mcp_open out &&
	mcp_tool 1 trace_compare '{\"report_id\":\"'\$RID'\",\"changed_only\":true,\"limit\":1}' >r1 &&
	mcp_tool 2 trace_compare '{\"report_id\":\"'\$RID'\",\"changed_only\":true,\"limit\":1,\"cursor\":\"o1\"}' >r2 &&
	mcp_tool 3 trace_compare '{\"report_id\":\"'\$RID'\",\"cursor\":\"x\"}' >r3 &&
	mcp_tool 4 trace_compare '{\"report_id\":\"'\$RID'\",\"a\":\"$ID1\"}' >r4 &&
	mcp_tool 5 trace_compare '{\"report_id\":\"20260105T000000Z-00000005\"}' >r5 &&
	mcp_tool 6 trace_compare '{\"a\":\"$ID1\"}' >r6 &&
	mcp_close &&
	test_eq '[\"lookup\"] 2 0 \"o1\" \"$ID1\" \"$ID2\" false 2' \"\$(sc '| [([.comparison.rows[].fn] | tojson), .total_rows, .first_row, (.next_cursor | tojson), (.a | tojson), (.b | tojson), .crossed, .changed] | join(\" \")' <r1 | tr -d '\\\\' | sed 's/^\"//; s/\"\$//')\" &&
	test_eq \"$ID1 -> $ID2: 2 of 3 functions changed (judged by self_insns; times virtual). slower 1: lookup +100 self_insns (100->200). faster 1: tick -6 self_insns (9->3). Report \$RID: rows 1-1 of 2. More rows: call again with report_id and cursor o1.\" \"\$(text <r1)\" &&
	test_eq '[\"tick\"] null' \"\$(sc '| [([.comparison.rows[].fn] | tojson), (.next_cursor | tojson)] | join(\" \")' <r2 | tr -d '\\\\' | sed 's/^\"//; s/\"\$//')\" &&
	test_eq \"trace_compare: cursor 'x' is not one of this report's: pass next_cursor as it came.\" \"\$(text <r3)\" &&
	test_eq 'trace_compare: give a and b to compare two snapshots, or report_id to read a report back, not both.' \"\$(text <r4)\" &&
	test_eq 'trace_compare: no report 20260105T000000Z-00000005 in the store: report_id comes from an earlier trace_compare.' \"\$(text <r5)\" &&
	test_eq 'trace_compare: give a (the baseline snapshot_id) and b (the one to compare with it), or report_id to read a report back.' \"\$(text <r6)\"
"

test_expect_success 'trace_prune: oldest first, dry run first' "
	$setup
	mcp_snapshot store $ID1 && mcp_snapshot store $ID2 && mcp_snapshot store $ID3 &&
	mcp_open out &&
	mcp_tool 1 trace_prune '{\"max_count\":1,\"dry_run\":true}' >r1 &&
	mcp_tool 2 trace_prune '{\"max_count\":1}' >r2 &&
	mcp_tool 3 trace_prune '{}' >r3 &&
	mcp_close &&
	test_eq '{\"removed\":[{\"snapshot_id\":\"$ID1\",\"program\":null,\"created\":\"2026-01-01T00:00:00.000Z\",\"bytes\":14},{\"snapshot_id\":\"$ID2\",\"program\":null,\"created\":\"2026-01-02T00:00:00.000Z\",\"bytes\":14}],\"kept_in_use\":[],\"freed_bytes\":28,\"dry_run\":true}' \"\$(sc '' <r1)\" &&
	test_eq 'Would remove 2 snapshots (28 bytes): $ID1, $ID2.' \"\$(text <r1)\" &&
	test_eq '{\"removed\":[{\"snapshot_id\":\"$ID1\",\"program\":null,\"created\":\"2026-01-01T00:00:00.000Z\",\"bytes\":14},{\"snapshot_id\":\"$ID2\",\"program\":null,\"created\":\"2026-01-02T00:00:00.000Z\",\"bytes\":14}],\"kept_in_use\":[],\"freed_bytes\":28,\"dry_run\":false}' \"\$(sc '' <r2)\" &&
	test_eq $ID3 \"\$(ls store/snapshots)\" &&
	test_eq 'trace_prune: give ids (snapshots to delete, from trace_list) or at least one of keep_newest, max_age_s, max_count or max_bytes.' \"\$(text <r3)\"
"

test_done

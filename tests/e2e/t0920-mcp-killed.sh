#!/bin/sh
# ptmcp killed by SIGKILL: mid-decode its ptdecode and ptspans end within
# a second, mid-recording its ptrec and the traced qemu do; the next
# serve sweeps what it left (the temporary analysis, the guard's record
# and lock, a session left running) and says so.  And the limits a
# server keeps: trace_query within its time budget, stopped by
# notifications/cancelled with its child, and no more than --max-jobs
# jobs at once, the refusal naming the limit.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap
ID=20260101T000000Z-00000001
REAL=$PTKIT_BUILD/bin

"$MKSNAP" -o "$TEST_ROOT/$ID" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1

INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}'

# A bin/ of the real tools beside a copy of ptmcp, where ptdecode is the
# real one held reading its snapshot path from a FIFO nobody writes (so it
# runs as long as the test likes, as a ptkit tool, its pid in ptdecode.pid).
held_bin() {
	mkdir -p bin && cp "$REAL/ptmcp" "$REAL/ptspans" "$REAL/ptquery" bin/ &&
	mkfifo hold &&
	cat >bin/ptdecode <<-EOF &&
	#!/bin/sh
	echo \$\$ >"$PWD/ptdecode.pid"
	sleep 1000 >"$PWD/hold" &
	echo \$! >"$PWD/sleep.pid"
	exec "$REAL/ptdecode" <"$PWD/hold"
	EOF
	chmod +x bin/ptdecode
}

# Waits up to a second for pid $1 to be gone (or dead: a zombie waits
# for a reaper that is none of ours).
alive() {
	case $(ps -o stat= -p "$1") in
	""|Z*) return 1 ;;
	esac
}
gone_within_1s() {
	k=0
	while alive "$1"; do
		k=$((k + 1))
		[ $k -gt 10 ] && { echo "pid $1 still there" >&2; return 1; }
		sleep 0.1
	done
}

test_expect_success 'killed mid-decode: its children end, the next serve sweeps' '
	held_bin &&
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/$ID" >/dev/null &&
	export PTKIT_STORE=$PWD/s &&
	MCP_PTMCP=bin/ptmcp mcp_open out &&
	mcp_call 0 "$INIT" >/dev/null &&
	srv=$(pgrep -P $MCP_PID) &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$ID\"}}}" &&
	mcp_wait_for test -s ptdecode.pid &&
	dec=$(cat ptdecode.pid) &&
	mcp_wait_for test -n "$(pgrep -f "^$PWD/bin/ptspans")" &&
	spans=$(pgrep -f "^$PWD/bin/ptspans") &&
	test_eq 1 "$(ls -d s/snapshots/$ID/derived/.tmp-* | wc -l)" &&
	test_eq 2 "$(ls s/sessions | wc -l)" &&
	kill -9 $srv &&
	gone_within_1s $dec &&
	gone_within_1s $spans &&
	{ kill $(cat sleep.pid) 2>/dev/null || :; } &&
	exec 3>&- &&
	touch -d "2 minutes ago" s/sessions/*.lock &&
	printf "%s\n" "$INIT" >req &&
	mcp_session req out2 1 &&
	echo "ptmcp: $PWD/s: swept what killed processes left: 1 temporary directory, 1 job record, 1 lock file" >want &&
	test_cmp want out2.err &&
	test_eq "" "$(find s/snapshots/$ID/derived s/sessions -mindepth 1)" &&
	mcp_session req out3 1 &&
	test_eq "" "$(cat out3.err)"
'

test_expect_success 'killed mid-recording: ptrec and qemu end, the session is failed' '
	export PTKIT_STORE=$PWD/s &&
	mcp_open out &&
	mcp_call 0 "$INIT" >/dev/null &&
	mcp_tool 1 trace_start "{\"program\":[\"$PTKIT_BUILD/tests/fixtures/emu/ticker\",\"100000000\",\"1\"],\"recorder\":\"emu\"}" >start &&
	sid=$(jq -r .result.structuredContent.session_id start) &&
	srv=$(pgrep -P $MCP_PID) &&
	mcp_wait_for test -n "$(pgrep -P $srv)" &&
	rec=$(pgrep -P $srv) &&
	mcp_wait_for test -n "$(pgrep -P $rec)" &&
	qemu=$(pgrep -P $rec) &&
	kill -9 $srv &&
	gone_within_1s $rec &&
	gone_within_1s $qemu &&
	exec 3>&- &&
	printf "%s\n" "$INIT" >req &&
	mcp_session req out2 1 &&
	echo "ptmcp: $PWD/s: swept what killed processes left: 1 session marked failed" >want &&
	test_cmp want out2.err &&
	test_eq failed "$(jq -r .state s/sessions/$sid.json)" &&
	jq -r .error s/sessions/$sid.json | grep -q "^the ptmcp that ran it, pid [0-9]*, died$"
'

# A store with one decoded snapshot, and a bin/ whose ptquery sleeps.
slow_query_bin() {
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/$ID" >/dev/null &&
	PTKIT_STORE=$PWD/s ptmcp decode $ID >/dev/null &&
	mkdir -p bin && cp "$REAL/ptmcp" bin/ &&
	cat >bin/ptquery <<-EOF &&
	#!/bin/sh
	echo \$\$ >>"$PWD/ptquery.pids"
	exec sleep 1000
	EOF
	chmod +x bin/ptquery
}

test_expect_success 'trace_query: stopped past time_budget_s, and says so' '
	slow_query_bin &&
	export PTKIT_STORE=$PWD/s &&
	MCP_PTMCP=bin/ptmcp mcp_open out &&
	mcp_call 0 "$INIT" >/dev/null &&
	mcp_tool 1 trace_query "{\"snapshot_id\":\"$ID\",\"kind\":\"summary\",\"time_budget_s\":1}" >q &&
	mcp_close &&
	test_eq true "$(jq .result.isError q)" &&
	test_eq "trace_query: stopped after its time budget of 1 s: narrow it (from_ns, to_ns, tid, function) or raise time_budget_s." \
	    "$(jq -r ".result.content[0].text" q)" &&
	! alive $(cat ptquery.pids) &&
	test_eq "" "$(ls s/sessions)"
'

test_expect_success 'trace_query: cancelled, its child ends; its guard holds meanwhile' '
	slow_query_bin &&
	export PTKIT_STORE=$PWD/s &&
	MCP_PTMCP=bin/ptmcp mcp_open out &&
	mcp_call 0 "$INIT" >/dev/null &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_query\",\"arguments\":{\"snapshot_id\":\"$ID\",\"kind\":\"summary\"}}}" &&
	mcp_wait_for test -s ptquery.pids &&
	ptmcp prune --max-count 0 >pruned 2>&1 &&
	test -d s/snapshots/$ID/derived/default &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}" &&
	gone_within_1s $(cat ptquery.pids) &&
	mcp_tool 2 trace_status "{}" >/dev/null &&
	mcp_close &&
	test_eq "" "$(mcp_reply out 1)" &&
	test_eq "" "$(ls s/sessions)"
'

test_expect_success 'serve --max-jobs 1: a second job is refused, naming the limit' '
	slow_query_bin &&
	export PTKIT_STORE=$PWD/s &&
	printf "#!/bin/sh\nexec \"%s/bin/ptmcp\" \"\$@\" --max-jobs 1\n" "$PWD" >capped &&
	chmod +x capped &&
	MCP_PTMCP=./capped mcp_open out &&
	mcp_call 0 "$INIT" >/dev/null &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_query\",\"arguments\":{\"snapshot_id\":\"$ID\",\"kind\":\"summary\",\"time_budget_s\":3}}}" &&
	mcp_wait_for test -s ptquery.pids &&
	mcp_tool 2 trace_query "{\"snapshot_id\":\"$ID\",\"kind\":\"hotpaths\"}" >q2 &&
	test_eq true "$(jq .result.isError q2)" &&
	test_eq "trace_query: refused: 1 jobs are running, the most this server runs at once (ptmcp serve --max-jobs 1); call again when one has ended, or cancel one." \
	    "$(jq -r ".result.content[0].text" q2)" &&
	mcp_wait_for mcp_has_id 1 &&
	mcp_close &&
	must_exit 2 ptmcp serve --max-jobs 0 2>err </dev/null &&
	grep -q "^ptmcp: option .--max-jobs.: .0. is below the minimum 1$" err
'

test_done

#!/bin/sh
# ptrec --recorder emu triggers: each test asserts where the trace ends
# (the last branches perf decodes) and that it is exact up to there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

B=$EMU_FIX/branchy

# rec OPTIONS... -- PROGRAM ARGS: records into snap with the ground truth.
rec() {
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 4M "$@" \
	    >path 2>err
}

# tail_of SNAP N: the last N branches perf decodes, as "FLAGS SYM".
tail_of() {
	perf --buildid-dir "$1/images" script -i "$1/perf.data" --itrace=b \
	    -F flags,ip,sym 2>/dev/null | tail -n "$2" |
	    awk '{ $(NF-1) = ""; print }' | tr -s ' ' | sed 's/^ //'
}

# kill_children PID: SIGKILL to PID and its children (what the
# watchdogs leave behind when ptrec hangs).
kill_children() {
	for f in /proc/[0-9]*; do
		read -r _ _ _ ppid _ <"$f/stat" 2>/dev/null || continue
		test "$ppid" = "$1" && kill -KILL "${f#/proc/}" 2>/dev/null
	done
	kill -KILL "$1" 2>/dev/null
	:
}

trigger() {
	jq -r '.trigger.kind' "$1/manifest.json"
}

fired() {
	jq -r '.trigger.fired_ns' "$1/manifest.json"
}

# time_of SNAP N PATTERN: the perf time (ns, the recorder's clock) of the
# Nth branch perf decodes whose "FLAGS IP SYM => ADDR SYM" matches.
time_of() {
	perf --buildid-dir "$1/images" script -i "$1/perf.data" --itrace=b \
	    --ns -F time,flags,ip,sym,addr 2>/dev/null | grep -E "$3" |
	    sed -n "$2{s/^ *\([0-9]*\)\.\([0-9]*\):.*/\1\2/;s/^0*//;p;}"
}

# The clock is the host's under emulation, counted from the program's
# start plus 1 ms (so an image mapped before the first instruction comes
# first): a time trigger fires once a thread or the plugin's timer sees
# its time has come, within SLACK of it on a busy machine.
MS=1000000
SLACK=$((200 * MS))

test_expect_success 'exit (default): the trace ends in _exit' '
	rec -- "$B" 2 500 &&
	test_eq exit "$(trigger snap)" &&
	tail_of snap 1 >last &&
	grep -q "tr end syscall _exit" last &&
	emu_check_parity snap truth >counts
'

test_expect_success '--trigger-symbol --trigger-hits: ends at the Nth call' '
	rec --trigger-symbol round_mark --trigger-hits 2 -- "$B" 3 500 &&
	test_eq symbol "$(trigger snap)" &&
	jq -e ".trigger.detail == \"round_mark\"" snap/manifest.json &&
	tail_of snap 2 >last &&
	printf "%s\n" "call main" "tr end async round_mark" >want &&
	test_cmp want last &&
	emu_check_parity snap truth 1 >counts &&
	test $(perf --buildid-dir snap/images script -i snap/perf.data \
	    --itrace=c -F sym,addr 2>/dev/null | grep -c "round_mark") = 2
'

test_expect_success '--tail-ms: the snapshot is 1 ms after the hit' '
	rec --trigger-symbol round_mark --trigger-hits 2 --tail-ms 1 \
	    -- "$B" 4 20000 &&
	test_eq tail "$(trigger snap)" &&
	hit=$(time_of snap 2 "call .*=> +[0-9a-f]+ round_mark") &&
	end=$(fired snap) &&
	test $((end - hit)) -ge $MS &&
	test $((end - hit)) -lt $((MS + SLACK)) &&
	tail_of snap 1 | grep -q "tr end" &&
	emu_check_parity snap truth 1 >counts
'

test_expect_success '--after-ms: 50 ms after the start' '
	rec --after-ms 50 -- "$B" 8 20000 &&
	test_eq after-ms "$(trigger snap)" &&
	t=$(fired snap) &&
	test "$t" -ge $((51 * MS)) && test "$t" -lt $((51 * MS + SLACK)) &&
	tail_of snap 1 | grep -q -E "tr end +(async|syscall)" &&
	emu_check_parity snap truth 1 >counts
'

# 40 rounds of 400,000 instructions cannot end in 60 ms, even at one
# instruction a nanosecond.
test_expect_success '--max-capture-ms: the hard cap' '
	rec --max-capture-ms 60 --trigger-symbol round_mark \
	    --trigger-hits 40 -- "$B" 40 20000 &&
	test_eq max-capture "$(trigger snap)" &&
	t=$(fired snap) &&
	test "$t" -ge $((61 * MS)) && test "$t" -lt $((61 * MS + SLACK)) &&
	emu_check_parity snap truth 1 >counts
'

test_expect_success '--min-capture-ms: earlier hits are ignored' '
	rec --trigger-symbol round_mark --min-capture-ms 150 -- "$B" 40 20000 &&
	test_eq symbol "$(trigger snap)" &&
	t=$(fired snap) &&
	test "$t" -ge $((151 * MS)) &&
	tail_of snap 2 | grep -q "tr end async round_mark" &&
	emu_check_parity snap truth 1 >counts &&
	# every call but the last came before the 150 ms, the last after
	n=0 && while h=$(time_of snap $((n + 1)) \
	    "call .*=> +[0-9a-f]+ round_mark") && test -n "$h"; do
		n=$((n + 1)) && last=$h &&
		test $h -lt $((151 * MS)) || break
	done &&
	test $last -ge $((151 * MS)) &&
	test -z "$(time_of snap $((n + 1)) "call .*=> +[0-9a-f]+ round_mark")"
'

test_expect_success '--trigger-line: ends at the write of the line' '
	rec --trigger-line "^round 2 " -- "$B" 3 500 &&
	test_eq line "$(trigger snap)" &&
	tail_of snap 1 | grep -q "tr end syscall .*write" &&
	emu_check_parity snap truth 1 >counts
'

test_expect_success '--trigger-line --tail-ms: 1 ms after the write' '
	rec --trigger-line "^round 2 " --tail-ms 1 -- "$B" 4 20000 &&
	test_eq tail "$(trigger snap)" &&
	at=$(time_of snap 2 "tr end +syscall .*write") &&
	end=$(fired snap) &&
	test $((end - at)) -ge $MS && test $((end - at)) -lt $((MS + SLACK)) &&
	emu_check_parity snap truth 1 >counts
'

test_expect_success 'stop indicator: ends at ptkit_stop_indicator' '
	rec -- "$EMU_FIX/stopind" &&
	test_eq stop-indicator "$(trigger snap)" &&
	tail_of snap 2 >last &&
	printf "%s\n" "call main" "tr end async ptkit_stop_indicator" >want &&
	test_cmp want last &&
	emu_check_parity snap truth 1 >counts
'

test_expect_success '--repeat 3: three complete snapshots' '
	rec --repeat 3 --trigger-symbol round_mark -- "$B" 4 500 &&
	test $(wc -l <path) = 3 &&
	test -d snap && test -d snap.2 && test -d snap.3 &&
	for i in 1 2 3; do
		s=snap && test $i = 1 || s=snap.$i
		emu_check_parity $s truth $i >counts.$i &&
		tail_of $s 1 | grep -q "tr end async round_mark" || return 1
	done &&
	test $(awk "{print \$3}" counts.1) -lt $(awk "{print \$3}" counts.3)
'

test_expect_success 'SIGTERM to ptrec: snapshot, then the program ends' '
	ptrec --recorder emu -o snap --emu-truth truth -- "$B" 100000 2000 \
	    >path 2>err &
	pid=$! &&
	n=0 && while ! grep -q "^round 3 " err && test $n -lt 300; do
		sleep 0.1; n=$((n + 1)); done &&
	kill -TERM $pid && wait $pid &&
	test $(wc -l <path) = 1 &&
	test_eq sigterm "$(trigger snap)" &&
	jq -e ".target.state == \"running\"" snap/manifest.json &&
	emu_check_parity snap truth 1 >counts
'
test_expect_success 'SIGTERM after the last snapshot ends the program' '
	ptrec --recorder emu -o snap --max-capture-ms 200 -- "$B" 1000000000 \
	    2000 >path 2>err &
	pid=$!
	# A watchdog: ptrec used to wait for the program forever here.
	(n=0; while kill -0 $pid 2>/dev/null && test $n -lt 600; do
		sleep 0.1; n=$((n + 1)); done; kill_children $pid) &
	n=0 && while ! test -s path && test $n -lt 300; do
		sleep 0.1; n=$((n + 1)); done &&
	test_eq max-capture "$(trigger snap)" &&
	kill -TERM $pid && wait $pid &&
	test $(wc -l <path) = 1 && ! test -e snap.2
'
test_expect_success 'SIGINT while every thread sleeps: the rings as they are' '
	ptrec --recorder emu -o snap -- /bin/sleep 30 >path 2>err &
	pid=$! &&
	n=0 && while ! ls "$TMPDIR"/ptkit-*/ptrec.*/ring.* >/dev/null 2>&1 &&
	    test $n -lt 300; do sleep 0.1; n=$((n + 1)); done &&
	sleep 0.5 && kill -INT $pid && wait $pid &&
	test_eq sigint "$(trigger snap)" &&
	tail_of snap 1 | grep -q "tr end syscall .*nanosleep"
'

test_expect_success '--filter SYMBOL: only inside, entered by PGE, left by PGD' '
	rec --filter dispatch -- "$B" 1 300 &&
	emu_check_parity snap truth >counts &&
	perf --buildid-dir snap/images script -i snap/perf.data --itrace=b \
	    -F flags,ip,sym 2>/dev/null >all &&
	test $(grep -c "tr strt" all) = 300 &&
	test $(grep -c "tr end  return .* dispatch" all) = 300 &&
	! grep -v "tr strt" all | grep -v " dispatch\$"
'

test_expect_success '--control FIFO: snapshot, then stop' '
	mkfifo ctl &&
	ptrec --recorder emu -o snap --emu-truth truth --control ctl \
	    -- "$B" 100000 2000 >out 2>err &
	pid=$! &&
	n=0 && while ! grep -q "^round 3 " err && test $n -lt 300; do
		sleep 0.1; n=$((n + 1)); done &&
	echo snapshot >ctl &&
	n=0 && while ! grep -q "^snap\$" out && test $n -lt 300; do
		sleep 0.1; n=$((n + 1)); done &&
	echo stop >ctl && wait $pid &&
	grep -c "^snap\(\.2\)\{0,1\}\$" out >nsnap &&
	test_eq 2 "$(cat nsnap)" &&
	test $(fired snap) -lt $(fired snap.2) &&
	test_eq "ptrec: control: snapshot: ok" \
	    "$(grep -o "ptrec: control: snapshot: .*" err)" &&
	test_eq control "$(trigger snap)" &&
	test_eq control "$(trigger snap.2)" &&
	emu_check_parity snap truth 1 >counts &&
	emu_check_parity snap.2 truth 2 >counts.2
'
test_done

#!/bin/sh
# ptrec --recorder emu triggers: each test asserts where the trace ends
# (the last branches perf decodes) and that it is exact up to there.
# Every step says what it saw when it fails.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

B=$EMU_FIX/branchy

# rec OPTIONS... -- PROGRAM ARGS: records into snap with the ground truth.
rec() {
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 4M "$@" \
	    >path 2>err || { echo "ptrec exited $?:"; cat err; return 1; }
}

# has ERE FILE: FILE has a line matching ERE, or what it has is shown.
has() {
	grep -q -E -- "$1" "$2" ||
	    { echo "no line of $2 matches '$1'; it holds:"; cat "$2"; false; }
}

# within WHAT VALUE LO HI: LO <= VALUE < HI, or what it was is said.
within() {
	test "$2" -ge "$3" && test "$2" -lt "$4" ||
	    { echo "$1: $2 ns, wanted $3 <= it < $4"; false; }
}

# parity SNAP TRUTH [SEQ]: emu_check_parity, saying what it compared.
parity() {
	emu_check_parity "$@" >counts || {
		echo "parity of $1: $(wc -l <perf.lines 2>/dev/null) perf lines, $(wc -l <truth.lines 2>/dev/null) truth lines"
		cat perf.err 2>/dev/null
		false
	}
}

# waits PID: ptrec PID exits 0, or its status and stderr are shown.
waits() {
	wait "$1" || { echo "ptrec exited $?:"; cat err; false; }
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

# start_of SNAP: the program's first instruction (ns, the recorder's
# clock), a tick after its COMM record; even a wrapped ring keeps it.
start_of() {
	perf script -i "$1/perf.data" --show-task-events --ns -F time,event \
	    2>/dev/null | awk '/PERF_RECORD_COMM/ { sub(":", "", $1);
	    split($1, t, "."); printf "%d\n", (t[1] t[2]) + 1; exit }'
}

# The clock is the host's under emulation, counted from ptrec's start
# plus 1 ms (so an image mapped before the first instruction comes
# first).  The time triggers (--after-ms, --max-capture-ms,
# --min-capture-ms) count from the program's first instruction, not from
# that origin: qemu's own start comes between, and took 150 to 400 ms on
# this 2-core machine under load, longer than the caps below.  A time
# trigger fires once a running thread (at its next poll, at most 65536
# instructions later) or the plugin's timer sees its time has come:
# within SLACK of it on a busy machine.
MS=1000000
SLACK=$((200 * MS))

test_expect_success 'exit (default): the trace ends in _exit' '
	rec -- "$B" 2 500 &&
	test_eq exit "$(trigger snap)" &&
	tail_of snap 1 >last &&
	has "tr end syscall _exit" last &&
	parity snap truth
'

test_expect_success '--trigger-symbol --trigger-hits: ends at the Nth call' '
	rec --trigger-symbol round_mark --trigger-hits 2 -- "$B" 3 500 &&
	test_eq symbol "$(trigger snap)" &&
	jq -e ".trigger.detail == \"round_mark\"" snap/manifest.json &&
	tail_of snap 2 >last &&
	printf "%s\n" "call main" "tr end async round_mark" >want &&
	test_cmp want last &&
	parity snap truth 1 &&
	test_eq 2 "$(perf --buildid-dir snap/images script -i snap/perf.data \
	    --itrace=c -F sym,addr 2>/dev/null | grep -c "round_mark")"
'

test_expect_success '--tail-ms: the snapshot is 1 ms after the hit' '
	rec --trigger-symbol round_mark --trigger-hits 2 --tail-ms 1 \
	    -- "$B" 4 20000 &&
	test_eq tail "$(trigger snap)" &&
	hit=$(time_of snap 2 "call .*=> +[0-9a-f]+ round_mark") &&
	end=$(fired snap) &&
	within "the snapshot after the 2nd hit" $((end - hit)) $MS \
	    $((MS + SLACK)) &&
	tail_of snap 1 >last && has "tr end" last &&
	parity snap truth 1
'

test_expect_success '--after-ms: 50 ms after the program starts' '
	rec --after-ms 50 -- "$B" 8 20000 &&
	test_eq after-ms "$(trigger snap)" &&
	start=$(start_of snap) && t=$(fired snap) &&
	within "the snapshot after the start" $((t - start)) $((50 * MS)) \
	    $((50 * MS + SLACK)) &&
	tail_of snap 1 >last && has "tr end +(async|syscall)" last &&
	parity snap truth 1
'

# The symbol trigger cannot win: 40 rounds of branchy 20000 take about
# half a second under the emulator here (0.49 s of trace measured; the
# thread'"'"'s clock is the host'"'"'s at every poll), far past the 60 ms cap.
test_expect_success '--max-capture-ms: the hard cap' '
	rec --max-capture-ms 60 --trigger-symbol round_mark \
	    --trigger-hits 40 -- "$B" 40 20000 &&
	test_eq max-capture "$(trigger snap)" &&
	start=$(start_of snap) && t=$(fired snap) &&
	within "the cap after the start" $((t - start)) $((60 * MS)) \
	    $((60 * MS + SLACK)) &&
	parity snap truth 1
'

test_expect_success '--min-capture-ms: earlier hits are ignored' '
	rec --trigger-symbol round_mark --min-capture-ms 150 -- "$B" 40 20000 &&
	test_eq symbol "$(trigger snap)" &&
	start=$(start_of snap) && t=$(fired snap) &&
	min=$((start + 150 * MS)) &&
	within "the snapshot" "$t" $min $((t + 1)) &&
	tail_of snap 2 >last && has "tr end async round_mark" last &&
	parity snap truth 1 &&
	# every call the ring kept but the last came before the 150 ms, the
	# last after
	n=0 && while h=$(time_of snap $((n + 1)) \
	    "call .*=> +[0-9a-f]+ round_mark") && test -n "$h"; do
		n=$((n + 1)) && last=$h &&
		test $h -lt $min || break
	done &&
	within "the last of the $n calls the ring kept" "${last:-0}" $min \
	    $((t + 1)) &&
	test_eq "" "$(time_of snap $((n + 1)) "call .*=> +[0-9a-f]+ round_mark")"
'

test_expect_success '--trigger-line: ends at the write of the line' '
	rec --trigger-line "^round 2 " -- "$B" 3 500 &&
	test_eq line "$(trigger snap)" &&
	tail_of snap 1 >last && has "tr end syscall .*write" last &&
	parity snap truth 1
'

test_expect_success '--trigger-line --tail-ms: 1 ms after the write' '
	rec --trigger-line "^round 2 " --tail-ms 1 -- "$B" 4 20000 &&
	test_eq tail "$(trigger snap)" &&
	at=$(time_of snap 2 "tr end +syscall .*write") &&
	end=$(fired snap) &&
	within "the snapshot after the write" $((end - at)) $MS \
	    $((MS + SLACK)) &&
	parity snap truth 1
'

test_expect_success 'stop indicator: ends at ptkit_stop_indicator' '
	rec -- "$EMU_FIX/stopind" &&
	test_eq stop-indicator "$(trigger snap)" &&
	tail_of snap 2 >last &&
	printf "%s\n" "call main" "tr end async ptkit_stop_indicator" >want &&
	test_cmp want last &&
	parity snap truth 1
'

test_expect_success '--repeat 3: three complete snapshots' '
	rec --repeat 3 --trigger-symbol round_mark -- "$B" 4 500 &&
	printf "snap\nsnap.2\nsnap.3\n" >want &&
	test_cmp want path &&
	for i in 1 2 3; do
		s=snap && test $i = 1 || s=snap.$i
		parity $s truth $i && mv counts counts.$i &&
		tail_of $s 1 >last && has "tr end async round_mark" last ||
		    return 1
	done &&
	n1=$(awk "{print \$3}" counts.1) && n3=$(awk "{print \$3}" counts.3) &&
	test "$n1" -lt "$n3" ||
	    { echo "branches: snapshot 1 $n1, snapshot 3 $n3"; false; }
'

test_expect_success 'SIGTERM to ptrec: snapshot, then the program ends' '
	ptrec --recorder emu -o snap --emu-truth truth -- "$B" 100000 2000 \
	    >path 2>err &
	pid=$! &&
	n=0 && while ! grep -q "^round 3 " err && test $n -lt 300; do
		sleep 0.1; n=$((n + 1)); done &&
	kill -TERM $pid && waits $pid &&
	test_eq snap "$(cat path)" &&
	test_eq sigterm "$(trigger snap)" &&
	test_eq running "$(jq -r .target.state snap/manifest.json)" &&
	parity snap truth 1
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
	kill -TERM $pid && waits $pid &&
	test_eq snap "$(cat path)" &&
	{ ! test -e snap.2 || { echo "a second snapshot: $(ls -d snap*)"; false; }; }
'
test_expect_success 'SIGINT while every thread sleeps: the rings as they are' '
	ptrec --recorder emu -o snap -- /bin/sleep 30 >path 2>err &
	pid=$! &&
	n=0 && while ! ls "$TMPDIR"/ptkit-*/ptrec.*/ring.* >/dev/null 2>&1 &&
	    test $n -lt 300; do sleep 0.1; n=$((n + 1)); done &&
	sleep 0.5 && kill -INT $pid && waits $pid &&
	test_eq sigint "$(trigger snap)" &&
	tail_of snap 1 >last && has "tr end syscall .*nanosleep" last
'

test_expect_success '--filter SYMBOL: only inside, entered by PGE, left by PGD' '
	rec --filter dispatch -- "$B" 1 300 &&
	parity snap truth &&
	perf --buildid-dir snap/images script -i snap/perf.data --itrace=b \
	    -F flags,ip,sym 2>/dev/null >all &&
	test_eq 300 "$(grep -c "tr strt" all)" &&
	test_eq 300 "$(grep -c "tr end  return .* dispatch" all)" &&
	{ grep -v "tr strt" all | grep -v " dispatch\$" >outside || :; } &&
	test_eq "" "$(head -n 3 outside)"
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
	echo stop >ctl && waits $pid &&
	printf "snap\nsnap.2\n" >want &&
	test_cmp want out &&
	f1=$(fired snap) && f2=$(fired snap.2) &&
	{ test "$f1" -lt "$f2" ||
	    { echo "fired at $f1, then at $f2"; false; }; } &&
	test_eq "ptrec: control: snapshot: ok" \
	    "$(grep -o "ptrec: control: snapshot: .*" err)" &&
	test_eq control "$(trigger snap)" &&
	test_eq control "$(trigger snap.2)" &&
	parity snap truth 1 &&
	parity snap.2 truth 2
'
test_done

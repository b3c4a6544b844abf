#!/bin/sh
# ptrec's capture options do what ptrec(1) says, with a program printing
# through plain stdio (ticker: "tick N" per round of N calls of leaf):
# --trigger-line sees a line when it is written, on a terminal or a pipe;
# --tail-ms counts from the first hit; --repeat loses no block at a
# re-arm; stop indicators are found in shared libraries; every check that
# needs no run comes before the run; stdout carries snapshot paths only;
# a killed ptrec's scratch is swept; and ^C on the README pipeline leaves
# the snapshot and the whole analysis.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

TICK=$EMU_FIX/ticker
MS=1000000
SLACK=$((200 * MS))

rec() {
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 4M "$@" \
	    >path 2>err
}

trigger() {
	jq -r '.trigger.kind' "$1/manifest.json"
}

# calls_to SNAP FN: how many calls of FN perf decodes.
calls_to() {
	perf --buildid-dir "$1/images" script -i "$1/perf.data" --itrace=b \
	    -F flags,addr,sym 2>/dev/null | awk -v f="$2" \
	    '$1 == "call" && $NF == f { n++ } END { print n + 0 }'
}

# returns_from SNAP FN: how many returns from FN perf decodes.
returns_from() {
	perf --buildid-dir "$1/images" script -i "$1/perf.data" --itrace=b \
	    -F flags,ip,sym 2>/dev/null | awk -v f="$2" \
	    '$1 == "return" && $NF == f { n++ } END { print n + 0 }'
}

# on_tty COMMAND: runs COMMAND (a shell line) with a terminal as its
# stdin, stdout and stderr (script(1), util-linux), what it shows there
# in tty.out.
on_tty() {
	script -qec "$1" tty.out </dev/null >/dev/null
}

# --- --trigger-line ------------------------------------------------------

test_expect_success 'on a terminal the program sees one' '
	on_tty "ptrec --recorder emu -o snap -- /bin/sh -c \"test -t 1 &&
	    test -t 2 && echo terminal\" >path" &&
	test_eq terminal "$(cat snap/output.log)" &&
	test_eq snap "$(cat path)"
'

test_expect_success 'piped, the program sees a pipe' '
	ptrec --recorder emu -o snap -- /bin/sh -c \
	    "test -t 1 || test -t 2 || echo pipe" >path 2>err &&
	test_eq pipe "$(cat snap/output.log)"
'

# On a terminal stdio writes each line as printed: the trace ends at the
# write of tick 2, after exactly 2 rounds of 500 calls of leaf.
test_expect_success '--trigger-line on a terminal: at the printf of the line' '
	on_tty "ptrec --recorder emu -o snap --aux-bytes 4M \
	    --trigger-line \"^tick 2\\$\" -- $TICK 5 500 >path" &&
	test_eq line "$(trigger snap)" &&
	test_eq 1000 "$(calls_to snap leaf)" &&
	printf "tick 1\ntick 2\n" >want &&
	test_cmp want snap/output.log &&
	grep -q "^ticks 5 leaf calls 2500" tty.out &&
	# where the trigger fired in output.log: just past the matching line
	test_eq 14 "$(jq .trigger.output_offset snap/manifest.json)"
'

# Into a pipe stdio writes its buffer at the exit: the trigger sees the
# line at that write, after all 5 rounds.
test_expect_success '--trigger-line into a pipe: at the write of the buffer' '
	rec --trigger-line "^tick 2\$" -- "$TICK" 5 500 &&
	test_eq line "$(trigger snap)" &&
	test_eq 2500 "$(calls_to snap leaf)" &&
	printf "tick 1\ntick 2\ntick 3\ntick 4\ntick 5\nticks 5 leaf calls 2500\n" \
	    >want &&
	test_cmp want snap/output.log &&
	test_eq 14 "$(jq .trigger.output_offset snap/manifest.json)" &&
	emu_check_parity snap truth 1 >counts
'

# Any other trigger: the bytes the program had written when it fired.
test_expect_success 'the trigger place: what was written before a symbol trigger' '
	on_tty "ptrec --recorder emu -o snap --aux-bytes 4M \
	    --trigger-symbol leaf --trigger-hits 1001 -- $TICK 5 500 >path" &&
	test_eq symbol "$(trigger snap)" &&
	test_eq 14 "$(jq .trigger.output_offset snap/manifest.json)"
'

# The program runs on while the snapshot is written: what it prints then
# (tick 3, 4, 5 and the total, a line at a time on a terminal) is not the
# snapshot's.
test_expect_success 'output.log ends where the program was when the trigger fired' '
	on_tty "ptrec --recorder emu -o snap --aux-bytes 4M \
	    --trigger-symbol leaf --trigger-hits 1001 -- $TICK 5 500 >path" &&
	printf "tick 1\ntick 2\n" >want &&
	test_cmp want snap/output.log &&
	grep -q "^ticks 5 leaf calls 2500" tty.out
'

# Output is counted wherever the program writes it to: a child process
# (traced), and a descriptor dup'ed from stdout; the line trigger keeps
# its whole write and not what follows the line.
test_expect_success 'output.log and the trigger place count children and dup'"'"'ed descriptors' '
	rec --trigger-line "^four\$" -- /bin/sh -c \
	    "echo one; /bin/echo two; exec 3>&1; echo three >&3; echo four;
	    /bin/sleep 0.3; echo five" &&
	test_eq line "$(trigger snap)" &&
	printf "one\ntwo\nthree\nfour\n" >want &&
	test_cmp want snap/output.log &&
	test_eq 19 "$(jq .trigger.output_offset snap/manifest.json)"
'

test_expect_success 'a bad --trigger-line regex is a usage error, before the run' '
	must_exit 2 ptrec --recorder emu -o snap --trigger-line "(" \
	    -- /usr/bin/touch ran 2>err &&
	test_eq "ptrec: option '"'"'--trigger-line'"'"': '"'"'('"'"': Unmatched ( or \\(" \
	    "$(head -n 1 err)" &&
	! test -e ran && ! test -e snap
'

# --- --tail-ms and --repeat ----------------------------------------------

# leaf is called again every few instructions: only the first call counts.
test_expect_success '--tail-ms: the first hit sets the deadline, later ones do not' '
	rec --trigger-symbol leaf --tail-ms 1 -- "$TICK" 100000 2000 &&
	test_eq tail "$(trigger snap)" &&
	jq -e ".target.state == \"running\"" snap/manifest.json &&
	hit=$(perf --buildid-dir snap/images script -i snap/perf.data \
	    --itrace=b --ns -F time,flags,addr,sym 2>/dev/null |
	    awk "\$2 == \"call\" && \$NF == \"leaf\" { print \$1; exit }" |
	    sed "s/^ *\([0-9]*\)\.\([0-9]*\):.*/\1\2/;s/^0*//") &&
	end=$(jq -r .trigger.fired_ns snap/manifest.json) &&
	test $((end - hit)) -ge $MS && test $((end - hit)) -lt $((MS + SLACK)) &&
	test "$(calls_to snap leaf)" -gt 100 &&
	emu_check_parity snap truth 1 >counts
'

# Snapshot k ends at the k-th call of leaf: k calls, k - 1 returns, in
# every snapshot, and the truth after each marker goes on with the return
# of the call that fired it.
test_expect_success '--repeat 3: DIR, DIR.2, DIR.3; nothing lost at a re-arm' '
	rec --repeat 3 --trigger-symbol leaf -- "$TICK" 3 10 &&
	printf "snap\nsnap.2\nsnap.3\n" >want &&
	test_cmp want path &&
	for k in 1 2 3; do
		s=snap && test $k = 1 || s=snap.$k
		test_eq "$k $((k - 1))" \
		    "$(calls_to $s leaf) $(returns_from $s leaf)" &&
		test_eq symbol "$(trigger $s)" &&
		emu_check_parity $s truth $k >counts.$k || return 1
	done &&
	awk "\$1 == \"snapshot\" { getline; print \$3 }" truth >after &&
	printf "ret\nret\nret\n" >want &&
	test_cmp want after
'

# Each step says what it saw when it fails: this test failed once, with
# no output, in a make check run beside a sanitizer build.
test_expect_success 'a stop indicator in a shared library ends the trace' '
	{ rec -- "$EMU_FIX/stopind_so" || { echo "ptrec: $?"; cat err; false; }; } &&
	test_eq stop-indicator "$(trigger snap)" &&
	perf --buildid-dir snap/images script -i snap/perf.data --itrace=b \
	    -F flags,ip,sym,dso 2>/dev/null | tail -n 1 >last &&
	{ grep -q "^ *tr end *async *[0-9a-f]* ptkit_stop_indicator (.*/libstopind.so)\$" \
	    last || { echo "last branch: $(cat last)"; false; }; } &&
	{ emu_check_parity snap truth 1 >counts ||
	    { echo "parity: $(wc -l <perf.lines) perf lines"; false; }; } &&
	test_eq "rounds 5 220" "$(cat err)" &&
	{ test_eq 0 "$(wc -c <snap/output.log)" ||
	    { echo "output.log: $(od -c snap/output.log | head -3)"; false; }; }
'

# raw_num SNAP KEY: a number of the manifest as written (jq reads doubles).
raw_num() {
	grep -o "\"$2\": *[0-9]*" "$1/manifest.json" | sed "s/.*: *//"
}

test_expect_success 'the manifest: every capture setting, wall-clock times' '
	before=$(date +%s%N) &&
	rec --trigger-symbol leaf --trigger-hits 2 --tail-ms 5 \
	    --after-ms 100000 --max-capture-ms 200000 --min-capture-ms 1 \
	    --filter leaf --cpus 0 -- "$TICK" 3 100 &&
	after=$(date +%s%N) &&
	jq -c "[.recorder.settings | .cpus, .filter, .trigger_hits, .tail_ms,
	    .after_ms, .min_capture_ms, .max_capture_ms, .trigger_symbol]" \
	    snap/manifest.json >got &&
	echo "[\"0\",\"leaf\",\"2\",\"5\",\"100000\",\"1\",\"200000\",\"leaf\"]" \
	    >want &&
	test_cmp want got &&
	for k in start_wall_ns fired_wall_ns end_wall_ns; do
		t=$(raw_num snap $k) &&
		test "$t" -ge "$before" && test "$t" -le "$after" || return 1
	done &&
	test "$(raw_num snap fired_wall_ns)" -gt "$(raw_num snap start_wall_ns)"
'

test_expect_success 'SIGINT and SIGTERM to ptrec are the kinds sigint and sigterm' '
	for sig in INT TERM; do
		rm -rf snap &&
		ptrec --recorder emu -o snap -- /bin/sleep 30 >path 2>err &
		pid=$! &&
		n=0 && while ! ls "$TMPDIR"/ptkit-*/ptrec.*/ring.* \
		    >/dev/null 2>&1 && test $n -lt 300; do
			sleep 0.1; n=$((n + 1)); done &&
		sleep 0.3 && kill -$sig $pid && wait $pid &&
		test_eq sig$(echo $sig | tr A-Z a-z) "$(trigger snap)" || return 1
	done
'

test_expect_success 'a long recording shows progress on a terminal only' '
	on_tty "ptrec --recorder emu -o snap -- /bin/sleep 2.5 >path" &&
	tr "\r" "\n" <tty.out | grep "^.\[Kptrec: recording" >shown &&
	grep -q "^.\[Kptrec: recording [1-9][0-9]* s: [1-9][0-9]* instructions, [0-9]*\.[0-9] MiB of trace held, 1 thread\$" \
	    shown &&
	rm -rf snap &&
	ptrec --recorder emu -o snap -- /bin/sleep 2.5 >path 2>err &&
	test_eq "" "$(cat err)"
'

test_expect_success 'perf.data: the host features and an AUX record per ring' '
	ptrec --recorder emu -o snap -- "$TICK" 3 10 >path 2>err &&
	ptrec --recorder emu -o wrap --aux-bytes 64K -- "$TICK" 100 2000 \
	    >path 2>err &&
	perf report --header-only -i snap/perf.data 2>/dev/null >hdr &&
	grep -qx "# hostname : $(uname -n)" hdr &&
	grep -qx "# os release : $(uname -r)" hdr &&
	grep -qx "# arch : $(uname -m)" hdr &&
	grep -qx "# perf version : ptkit $(ptrec --version | awk "{ print \$NF }")" hdr &&
	grep -q "^# nrcpus online : [1-9]" hdr &&
	grep -q "^# cmdline : ptrec --recorder emu -o snap -- $TICK 3 10 *$" hdr &&
	perf script -D -i snap/perf.data 2>/dev/null |
	    grep -c "PERF_RECORD_AUX .* flags: 0 \[\]\$" >n &&
	test_eq 1 "$(cat n)" &&
	perf script -D -i wrap/perf.data 2>/dev/null |
	    grep -c "PERF_RECORD_AUX .* size: 0x10000 flags: 0x1 \[T\]\$" >n &&
	test_eq 1 "$(cat n)" &&
	perf --buildid-dir wrap/images script -i wrap/perf.data --itrace=b \
	    2>perf.err >/dev/null &&
	grep -qx "AUX data lost 1 times out of 1!" perf.err
'

test_expect_success 'an image without a build-id is said at record time' '
	ptrec --recorder emu -o snap -- "$TICK.nobuildid" 1 1 >path 2>err &&
	test_eq "ptrec: warning: $TICK.nobuildid: no build-id: perf decodes it from this path only while the file is unchanged; ptdecode uses the archived copy (link with -Wl,--build-id)" \
	    "$(grep "build-id" err)" &&
	jq -e ".warnings == [\"image $TICK.nobuildid has no build-id: perf decodes it from this path only while the file is unchanged; ptdecode uses the archived copy\"]" \
	    snap/manifest.json >/dev/null
'

# --- checks before the run -----------------------------------------------

test_expect_success 'an existing -o DIR is refused before the program runs' '
	mkdir snap &&
	must_exit 2 ptrec --recorder emu -o snap -- /usr/bin/touch ran \
	    2>err &&
	test_eq "ptrec: snap: already exists: -o takes a directory that does not exist yet" \
	    "$(cat err)" &&
	! test -e ran
'

test_expect_success 'so is a DIR.N that --repeat would write' '
	mkdir snap.3 &&
	must_exit 2 ptrec --recorder emu -o snap --repeat 3 \
	    -- /usr/bin/touch ran 2>err &&
	test_eq "ptrec: snap.3: already exists: -o takes a directory that does not exist yet" \
	    "$(cat err)" &&
	! test -e ran && ! test -e snap
'

test_expect_success 'and an -o DIR that cannot be made' '
	must_exit 2 ptrec --recorder emu -o /dev/null/x -- /usr/bin/touch ran \
	    2>err &&
	test_eq "ptrec: /dev/null/x: /dev/null: not a directory" "$(cat err)" &&
	! test -e ran
'

test_expect_success 'values that mean nothing are refused' '
	must_exit 2 ptrec --recorder emu --after-ms 0 -- /usr/bin/touch ran \
	    2>err &&
	test_eq "ptrec: option '"'"'--after-ms'"'"': '"'"'0'"'"' is below the minimum 1" \
	    "$(head -n 1 err)" &&
	must_exit 2 ptrec --recorder emu --max-capture-ms 0 \
	    -- /usr/bin/touch ran 2>err &&
	test_eq "ptrec: option '"'"'--max-capture-ms'"'"': '"'"'0'"'"' is below the minimum 1" \
	    "$(head -n 1 err)" &&
	must_exit 2 ptrec --recorder emu --cpus abc -- /usr/bin/touch ran \
	    2>err &&
	test_eq "ptrec: --cpus '"'"'abc'"'"' is not a list of CPUs like 0-3,8 (each below 1024)" \
	    "$(head -n 1 err)" &&
	must_exit 2 ptrec --recorder emu --cpus 1023 -- /usr/bin/touch ran \
	    2>err &&
	test_eq "ptrec: option '"'"'--cpus'"'"': none of '"'"'1023'"'"' is a CPU this process may run on" \
	    "$(head -n 1 err)" &&
	PTKIT_RECORDER=bogus must_exit 2 ptrec -- /usr/bin/touch ran 2>err &&
	test_eq "ptrec: PTKIT_RECORDER: '"'"'bogus'"'"' is not one of auto|pt|perf|emu" \
	    "$(head -n 1 err)" &&
	! test -e ran
'

test_expect_success 'a program that is not executable is said so, apart from a missing one' '
	printf "#!/bin/sh\n" >prog && chmod 644 prog &&
	must_exit 1 ptrec --recorder emu -o snap -- ./prog 2>err &&
	test_eq "ptrec: ./prog: not executable" "$(cat err)" &&
	must_exit 1 ptrec --recorder emu -o snap -- ./nosuch 2>err &&
	test_eq "ptrec: ./nosuch: not found" "$(cat err)" &&
	! test -e snap
'

# The last CPU we may run on: qemu, so every thread of the emulator and
# of the program, runs there (the guest's /proc/self is qemu's).
test_expect_success '--cpus pins the emulator under emu' '
	cpu=$(awk "/^Cpus_allowed_list/ { print \$2 }" /proc/self/status |
	    tr , "\n" | tail -n 1 | sed "s/.*-//") &&
	ptrec --recorder emu -o snap --cpus "$cpu" \
	    -- /bin/grep Cpus_allowed_list /proc/self/status >path 2>err &&
	test_eq "$(printf "Cpus_allowed_list:\t%s" "$cpu")" \
	    "$(cat snap/output.log)"
'

# --- stdout, scratch -----------------------------------------------------

test_expect_success '--control answers on stderr: stdout is snapshot paths only' '
	mkfifo ctl &&
	ptrec --recorder emu -o snap --control ctl -- "$TICK" 1000000 2000 \
	    >out 2>err &
	pid=$! &&
	n=0 && while ! ls "$TMPDIR"/ptkit-*/ptrec.*/ring.* >/dev/null 2>&1 &&
	    test $n -lt 300; do sleep 0.1; n=$((n + 1)); done &&
	echo snapshot >ctl &&
	n=0 && while ! grep -q "^snap\$" out && test $n -lt 300; do
		sleep 0.1; n=$((n + 1)); done &&
	echo bogus >ctl && echo stop >ctl && wait $pid &&
	printf "snap\nsnap.2\n" >want &&
	test_cmp want out &&
	# (the program'"'"'s last line may lack its newline yet)
	grep -o "ptrec: control: .*" err >answers &&
	printf "%s\n" "ptrec: control: snapshot: ok" \
	    "ptrec: control: bogus: unknown command" \
	    "ptrec: control: stop: ok" >want &&
	test_cmp want answers
'

test_expect_success 'a killed ptrec leaves its scratch to the next one to sweep' '
	ptrec --recorder emu -o snap -- /bin/sleep 30 >path 2>err &
	pid=$! &&
	n=0 && while ! ls "$TMPDIR"/ptkit-*/ptrec.*/ring.* >/dev/null 2>&1 &&
	    test $n -lt 300; do sleep 0.1; n=$((n + 1)); done &&
	dead=$(ls -d "$TMPDIR"/ptkit-*/ptrec.*) &&
	kill -KILL $pid && wait $pid; test $? = 137 &&
	pkill_qemu() {
		for f in /proc/[0-9]*; do
			grep -q "^qemu-x86_64" "$f/comm" 2>/dev/null &&
			tr "\0" " " <"$f/cmdline" | grep -q "dir=$dead" &&
			kill -KILL "${f#/proc/}"
		done; :
	} && pkill_qemu &&
	test -d "$dead" &&
	ptrec --recorder emu -o snap2 -- /bin/true >path 2>err &&
	! test -e "$dead" &&
	test -z "$(ls "$TMPDIR"/ptkit-*/)"
'

test_expect_success 'PTKIT_KEEP_WASTE=1 says where it kept scratch, and no one sweeps it' '
	PTKIT_KEEP_WASTE=1 ptrec --recorder emu -o snap -- /bin/true \
	    >path 2>err &&
	kept=$(ls -d "$TMPDIR"/ptkit-*/ptrec.*) &&
	test_eq "ptrec: PTKIT_KEEP_WASTE=1: scratch kept in $kept" \
	    "$(grep KEEP_WASTE err)" &&
	test -f "$kept/config" &&
	ptrec --recorder emu -o snap2 -- /bin/true >path 2>err &&
	test -d "$kept" && rm -rf "$kept"
'

# A writer killed before its rename left .NAME.tmp-XXXXXX beside its
# destination, with an owner file nobody holds; one still writing holds
# it (flock(1) here, holding it until told through a FIFO).
test_expect_success 'a partial snapshot of a dead writer is swept, a live one kept' '
	mkdir out .old.tmp-dead01 .new.tmp-live01 &&
	echo 1 >.old.tmp-dead01/.owner && echo 2 >.new.tmp-live01/.owner &&
	mkdir out/.x.tmp-dead02 && : >out/.x.tmp-dead02/.owner &&
	mkfifo held release &&
	{ flock .new.tmp-live01/.owner sh -c "echo locked >held; read _ <release" & } &&
	read -r _ <held &&
	ptrec --recorder emu -o snap -- /bin/true >path 2>err;
	rc=$?; echo done >release; wait; test $rc = 0 &&
	! test -e .old.tmp-dead01 && test -d .new.tmp-live01 &&
	test -d out/.x.tmp-dead02 &&
	test_eq "" "$(ls -a snap | grep owner)"
'

# --- ^C on the README pipeline -------------------------------------------

# SIGINT ignored on entry (inherited: nohup, or a background job of a
# shell without job control) stays ignored in every tool, as it should,
# and no shell can catch or reset it: ^C cannot be tried here.
if [ $((0x$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status) & 2)) -ne 0 ]; then
	test_skip '^C on ptrec | ptdecode | ptspans: the snapshot and its analysis' \
	    'SIGINT is ignored in this environment (inherited)'
	test_skip 'a second SIGINT stops a stage reading a pipe now' \
	    'SIGINT is ignored in this environment (inherited)'
else
# With job control on (sh -m on a terminal, script(1)), the pipeline is
# one process group; SIGINT goes to all of it, as a terminal's ^C does.
test_expect_success '^C on ptrec | ptdecode | ptspans: the snapshot and its analysis' '
	cat >job.sh <<-\EOF &&
	set -m
	ptrec --recorder emu -o p --emu-truth truth -- "$TICK" 1000000 2000 \
	    2>rec.err | ptdecode 2>dec.err | ptspans -o p.an >spans.out \
	    2>spans.err &
	last=$!
	pg=$(awk "{ print \$5 }" /proc/$last/stat)
	n=0; while ! grep -q "^tick 3\$" rec.err && test $n -lt 600; do
		sleep 0.1; n=$((n + 1)); done
	kill -INT -$pg
	wait
	echo "job $?" >job.status
	EOF
	TICK=$TICK on_tty "sh job.sh" &&
	test_eq "job 0" "$(cat job.status)" &&
	test_eq p.an "$(cat spans.out)" &&
	test_eq sigint "$(trigger p)" &&
	test_eq "ptdecode: interrupt: decoding the snapshot the pipe brings; interrupt again to stop now" \
	    "$(head -n 1 dec.err)" &&
	test_eq "ptspans: interrupt: reading the block stream to its end; interrupt again to stop now" \
	    "$(head -n 1 spans.err)" &&
	leaf=$(nm "$TICK" | awk "\$3 == \"leaf\" { print \$1 }") &&
	leaf=$(printf "%x" $((0x4000000000 + 0x$leaf))) &&
	truth_calls=$(awk -v f=$leaf "\$1 == \"snapshot\" { exit }
	    \$2 == f && \$3 == \"call\" { n++ } END { print n + 0 }" truth) &&
	test "$truth_calls" -gt 2000 &&
	ptquery p.an --kind hotpaths --group function --format csv >hot &&
	test_eq "$truth_calls" \
	    "$(awk -F, "\$11 == \"leaf\" { print \$1 }" hot)"
'

# ptspans in a job of its own (a job in the background of a shell without
# job control would ignore SIGINT); its writer ignores SIGINT and never
# closes the pipe, and a shell around ptspans says how it ended.
test_expect_success 'a second SIGINT stops a stage reading a pipe now' '
	cat >job.sh <<-\EOF &&
	set -m
	(trap "" INT; exec sleep 30) | sh -c "trap : INT
	    ptspans -o an >out 2>err; echo \"ptspans \$?\" >job.status" &
	pg=$(awk "{ print \$5 }" /proc/$!/stat)
	sleep 1
	kill -INT -$pg
	sleep 0.5
	test -e job.status || echo alive >alive
	kill -INT -$pg
	n=0; while ! test -s job.status && test $n -lt 100; do
		sleep 0.1; n=$((n + 1)); done
	kill -TERM -$pg
	wait
	exit 0
	EOF
	on_tty "sh job.sh" &&
	test_eq alive "$(cat alive)" &&
	test_eq "ptspans 130" "$(cat job.status)" &&
	test_eq "ptspans: interrupt: reading the block stream to its end; interrupt again to stop now" \
	    "$(cat err)" &&
	! test -e an && test -z "$(ls "$TMPDIR"/ptkit-*/ 2>/dev/null)"
'
fi

test_done

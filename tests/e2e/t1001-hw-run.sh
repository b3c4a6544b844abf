#!/bin/sh
# tests/hw/run: skips cleanly without Intel PT, and in dry-run mode against
# the fake Skylake tree parses and plans every check (each planned ptrec
# command line is accepted by ptrec's parser); a broken plan fails.
. "$(dirname "$0")/lib.sh"

FIX=$PTKIT_SRC/tests/fixtures/sysfs
RUN=$PTKIT_SRC/tests/hw/run

SHAPES="exit after-ms symbol line attach filter repeat threads wrap"

test_expect_success 'dry run plans every check of both recorders' '
	must_exit 0 sh "$RUN" --dry-run --sysroot "$FIX/skylake" >out 2>err &&
	test ! -s err &&
	test_eq "err out" "$(ls | tr "\n" " " | sed "s/ \$//")" &&
	test_eq "1..21" "$(tail -n 1 out)" &&
	: >want &&
	n=0 &&
	for r in pt perf; do
		for s in $SHAPES; do
			n=$((n + 1)) &&
			case $r/$s in
			perf/symbol) echo "ok $n - $r/$s # SKIP the perf recorder has no symbol trigger (ptrec.1)" ;;
			perf/repeat) echo "ok $n - $r/$s # SKIP the perf recorder takes one snapshot per run (ptrec.1)" ;;
			*) echo "ok $n - $r/$s # SKIP dry run" ;;
			esac >>want || return 1
		done
	done &&
	for s in exit filter threads; do
		n=$((n + 1)) &&
		echo "ok $n - parity/$s # SKIP dry run" >>want || return 1
	done &&
	grep "^ok " out | sed "s/: [0-9]* commands.*//" >got &&
	test_cmp want got &&
	! grep -q "^not ok" out
'

test_expect_success 'dry run: the plans hold the concrete checks' '
	sh "$RUN" --dry-run --sysroot "$FIX/skylake" >out &&
	grep -qx "ok 1 - pt/exit # SKIP dry run: 2 commands, 14 expectations planned" out &&
	grep -qx "#   expect: calls to leaf eq 1000" out &&
	grep -qx "#   expect: pt config is the doctor'\''s for '\''normal'\'' eq 0x3082603" out &&
	grep -qx "#   expect: last call is the trigger eq marker" out &&
	grep -qx "#   expect: calls to leaf before the 3rd marker eq 300" out &&
	grep -qx "#   expect: 8 threads with 100 calls to work each eq 8x100" out &&
	grep -qx "#   expect: snapshot 3 holds 3 markers eq 3" out &&
	grep -qx "#   expect: the ring wrapped eq true" out &&
	grep -qx "#   expect: branches only inside leaf eq leaf " out &&
	grep -qx "#   expect: armed with park eq park" out &&
	grep -qx "#   expect: armed to run on for the tail eq tail" out &&
	grep -qx "#   expect: output.log holds the line that fired eq 1" out &&
	grep -qx "#   expect: no match fired before --min-capture-ms eq 10" out &&
	grep -qx "#   expect: the kernel'\''s filter is a file offset in hw_calls eq yes" out &&
	grep -q "^#   run: ptrec --recorder pt --aux-bytes 4M --trigger-line ^checkpoint --min-capture-ms 60000 -o " out &&
	grep -q "^#   run: ptrec --recorder perf --aux-bytes 4M --pid 4242 --after-ms 200 -o " out &&
	grep -q "^#   expect: pt and perf call profiles (threads): pt-threads.profile equals perf-threads.profile$" out &&
	test_eq 19 "$(grep -c "^#   run: ptrec " out)"
'

test_expect_success 'dry run catches a planned command ptrec refuses' '
	sed "s/--aux-bytes 64K/--aux-bytes 64Q/" "$RUN" >run-broken &&
	must_exit 1 sh run-broken --dry-run --sysroot "$FIX/skylake" >out &&
	grep -qx "not ok 9 - pt/wrap: 1 planned commands do not parse" out &&
	grep -qx "not ok 18 - perf/wrap: 1 planned commands do not parse" out &&
	grep -q "^#     ptrec: option '\''--aux-bytes'\'': '\''64Q'\'': unknown size suffix" out &&
	grep -qx "# 2 of 21 failed" out
'

test_expect_success 'without Intel PT it skips with the doctor'\''s reason' '
	must_exit 0 sh "$RUN" --dry-run --sysroot "$FIX/amd-vm" >out &&
	test_eq "1..0 # SKIP no Intel PT on this machine: Intel PT is absent: this CPU is AuthenticAMD (AMD EPYC), and Intel PT exists only on Intel CPUs" "$(cat out)"
'

if [ -d /sys/bus/event_source/devices/intel_pt ]; then
	test_skip 'this machine skips cleanly' 'this machine has Intel PT'
else
	test_expect_success 'this machine (no Intel PT) skips cleanly' '
		must_exit 0 sh "$RUN" >out &&
		test_eq 1 "$(wc -l <out)" &&
		grep -q "^1\.\.0 # SKIP no Intel PT on this machine: Intel PT is absent: " out
	'
fi

test_expect_success 'usage errors' '
	must_exit 2 sh "$RUN" --dry-run 2>err &&
	grep -q "needs --sysroot" err &&
	must_exit 2 sh "$RUN" --recorder emu 2>err &&
	grep -q "^usage: tests/hw/run" err
'

test_done

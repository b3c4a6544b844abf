#!/bin/sh
# ptrec --recorder emu: one clock for every thread, which runs while a
# thread is blocked.  What one thread learns from another through the
# kernel (a lock handed over, a thread joined) comes later in the trace,
# a sleep takes its time, and --after-ms fires during it.  perf decodes
# each snapshot exactly as the plugin's ground truth says.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

# rec OPTIONS... -- PROGRAM ARGS: a snapshot with its ground truth.
rec() {
	ptrec --recorder emu -o snap --emu-truth truth "$@" >path 2>err
}

# spans_of FN: the spans of FN as "TID START_NS END_NS", by start
# (the snapshot decoded into an/ the first time).
spans_of() {
	if ! test -d an; then
		ptdecode snap >blocks 2>decode.err &&
		ptspans -o an <blocks >/dev/null || return 1
	fi
	spans_jsonl an | jq -r --arg fn "$1" 'select(.fn == $fn) |
	    "\(.tid) \(.start_ns) \(.end_ns)"' | sort -n -k2
}

# printed WORD: the number the fixture printed after WORD.
printed() {
	tr ' ' '\n' <snap/output.log | sed -n "/^$1\$/{n;p;}"
}

for v in "" .static; do
	test_expect_success "handoff$v: 40 handoffs through a mutex, in order" "
		rec -- \"\$EMU_FIX/handoff$v\" &&
		emu_check_parity snap truth >counts &&
		test_eq 40 \"\$(printed handoffs)\" &&
		spans_of crit >crit &&
		test_eq \"\$(printed crit)\" \"\$(wc -l <crit)\" &&
		# the token changes hands at every span, and each span
		# begins after the one before it ended
		awk 'NR > 1 && (\$1 == tid || \$2 <= end) {
			print \"out of order:\", NR, \$0, \"after\", tid, end; bad++ }
		     { tid = \$1; end = \$3 }
		     END { exit bad > 0 }' crit &&
		test \$(awk '{print \$1}' crit | sort -u | wc -l) = 2
	"

	test_expect_success "join$v: after the join, after the worker's last" "
		rec -- \"\$EMU_FIX/join$v\" &&
		emu_check_parity snap truth >counts &&
		spans_of worker_step >steps &&
		test_eq \"\$(printed worker_step)\" \"\$(wc -l <steps)\" &&
		spans_of after_join >after &&
		test_eq \"\$(printed after_join)\" \"\$(wc -l <after)\" &&
		last=\$(sort -n -k3 steps | tail -n 1) &&
		test \$(awk '{print \$2}' after) -gt \"\${last##* }\" &&
		test \"\$(awk '{print \$1}' after)\" != \"\${last%% *}\"
	"

	test_expect_success "sleeper$v: a 1.5 s sleep is 1.5 s in the trace" "
		rec -- \"\$EMU_FIX/sleeper$v\" &&
		emu_check_parity snap truth >counts &&
		test_eq 1 \"\$(printed before_sleep)\" &&
		test_eq 1 \"\$(printed after_sleep)\" &&
		spans_of before_sleep >before &&
		spans_of after_sleep >after &&
		test \$(wc -l <before) = 1 && test \$(wc -l <after) = 1 &&
		gap=\$(( \$(awk '{print \$2}' after) - \$(awk '{print \$3}' before) )) &&
		test \$gap -ge 1000000000 && test \$gap -lt 3000000000
	"

	test_expect_success "sleeper$v: --after-ms 500 fires during the sleep" "
		rec --after-ms 500 -- \"\$EMU_FIX/sleeper$v\" &&
		test_eq after-ms \"\$(jq -r .trigger.kind snap/manifest.json)\" &&
		t=\$(jq -r .trigger.fired_ns snap/manifest.json) &&
		test \$t -ge 500000000 && test \$t -le 1500000000 &&
		emu_check_parity snap truth 1 >counts &&
		perf --buildid-dir snap/images script -i snap/perf.data \
		    --itrace=c -F sym,addr 2>/dev/null >calls &&
		grep -q before_sleep calls && ! grep -q after_sleep calls &&
		spans_of after_sleep >after && ! test -s after
	"
done

test_expect_success 'the manifest and ptquery say the clock model' '
	rec -- "$EMU_FIX/join" &&
	jq -e ".pt.clock == \"virtual\"" snap/manifest.json &&
	jq -r ".recorder.settings.clock_model" snap/manifest.json >model &&
	grep -q "shared by all threads" model &&
	ptdecode snap >blocks 2>decode.err &&
	ptspans -o an <blocks >/dev/null &&
	ptquery an --kind summary >summary &&
	grep -q "^clock: emulated, shared by all threads (host time under emulation)\$" summary
'
test_done

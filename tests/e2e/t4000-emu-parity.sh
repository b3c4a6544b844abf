#!/bin/sh
# ptrec --recorder emu: perf script's branch list of each snapshot equals
# the ground truth the plugin logged (--emu-truth), for every fixture.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

# record NAME ARGS...: a snapshot of a fixture with its ground truth.
record() {
	name=$1
	shift
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 4M \
	    -- "$EMU_FIX/$name" "$@" >path 2>err &&
	test_eq "$PWD/snap" "$(cd "$(cat path)" && pwd)"
}

for v in "" .static; do
	test_expect_success "branchy$v: perf equals the ground truth" "
		record branchy$v 3 2000 &&
		emu_check_parity snap truth >counts &&
		test \$(awk '{print \$3}' counts) -gt 20000 &&
		jq -e '.threads | length == 1' snap/manifest.json &&
		jq -e '.threads[0].wrapped == false' snap/manifest.json &&
		jq -e '.recorder.backend == \"emu\"' snap/manifest.json &&
		jq -e '.target.state == \"exited\" and .target.exit_code == 0' \
		    snap/manifest.json &&
		jq -e '.trigger.kind == \"exit\"' snap/manifest.json
	"

	test_expect_success "threads$v: one exact stream per thread" "
		record threads$v &&
		emu_check_parity snap truth >counts &&
		test \$(wc -l <counts) = 6 &&
		jq -e '.threads | length == 6' snap/manifest.json &&
		test \$(grep -c '^thread ' truth) = 6
	"

	# The three workers that run at once call g1 1222, 1242 and 1285
	# times, no two of them 3000: the 3000th call comes while main and
	# those three have rings, and before the later two exist.
	test_expect_success "threads$v: a trigger in a worker cuts every thread" "
		ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 4M \
		    --trigger-symbol g1 --trigger-hits 3000 \
		    -- \"\$EMU_FIX/threads$v\" >path 2>err &&
		emu_check_parity snap truth 1 >counts &&
		test \$(jq '.threads | length' snap/manifest.json) = 4 &&
		test \$(wc -l <counts) = 4 &&
		jq -e '.trigger.kind == \"symbol\"' snap/manifest.json || {
			# What failed, in the log (seen under SANITIZE only).
			cat err counts
			jq -c '[.trigger, (.threads | length)]' snap/manifest.json
			false
		}
	"

	test_expect_success "signals$v: handlers at syscalls and timer ticks" "
		record signals$v 100000 &&
		emu_check_parity snap truth >counts &&
		grep -c async truth >nasync &&
		test \$(cat nasync) -ge 5 &&
		jq -e '.counters.signal_blind_resolutions == 0' snap/manifest.json &&
		jq -e '.counters.async_stops >= 5' snap/manifest.json
	"
done

for t in low high; do
	test_expect_success "--timing $t: exact, with its packets" "
		ptrec --recorder emu -o snap --emu-truth truth --timing $t \
		    -- \"\$EMU_FIX/branchy\" 2 500 >path 2>err &&
		emu_check_parity snap truth >counts &&
		perf report -D -i snap/perf.data 2>/dev/null >dump &&
		if test $t = low; then
			! grep -q -E '^\.  [0-9a-f]+: .* CYC' dump &&
			grep -q 'TNT T' dump &&
			jq -e '.pt.cyc == false' snap/manifest.json
		else
			grep -q -E '^\.  [0-9a-f]+: .* CYC' dump &&
			jq -e '.pt.noretcomp == true' snap/manifest.json
		fi
	"
done
test_done

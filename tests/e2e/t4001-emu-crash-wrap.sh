#!/bin/sh
# ptrec --recorder emu: a crash ends the trace in the faulting block; a
# ring smaller than the trace wraps, keeps its newest bytes exactly, and
# the manifest says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

for v in "" .static; do
	test_expect_success "crash$v: exact up to the faulting block" "
		ptrec --recorder emu -o snap --emu-truth truth \
		    -- \"\$EMU_FIX/crash$v\" >path 2>err &&
		grep -q 'killed by signal 11' err &&
		grep -q 'about to crash' snap/output.log &&
		jq -e '.trigger.kind == \"signal\"' snap/manifest.json &&
		jq -e '.counters.fault_located_to_block == 1' snap/manifest.json &&
		jq -e '.target.state == \"signaled\" and .target.signal == 11' \
		    snap/manifest.json &&
		emu_perf_branches snap >all &&
		tail -n 1 all | awk '{print \$3}' >last-to &&
		test_eq 0 \"\$(cat last-to)\" &&
		perf --buildid-dir snap/images script -i snap/perf.data \
		    --itrace=b -F flags,ip,sym 2>/dev/null | tail -n 2 >end &&
		grep -q 'call  *[0-9a-f]* go_wrong' end &&
		grep -q 'tr end  async.*crash_here' end &&
		sed '\$d' all >perf.lines &&
		emu_truth_branches truth >truth.lines &&
		test_cmp truth.lines perf.lines
	"
done

test_expect_success 'faults left by siglongjmp: decodes, and is counted' '
	ptrec --recorder emu -o snap --emu-truth truth \
	    -- "$EMU_FIX/segvjmp" >path 2>err &&
	grep -q "^ok=15108 caught=10\$" snap/output.log &&
	jq -e ".counters.signal_blind_resolutions == 10" snap/manifest.json &&
	jq -e ".counters.signal_deferrals == 10" snap/manifest.json &&
	perf --buildid-dir snap/images script -i snap/perf.data --itrace=be \
	    -F flags,ip >decoded 2>&1 &&
	test $(wc -l <decoded) -gt 10000 &&
	! grep -q "instruction trace error" decoded &&
	emu_check_parity snap truth >counts
'

test_expect_success 'a 16K ring wraps and keeps the newest trace exactly' '
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 16K \
	    -- "$EMU_FIX/branchy.static" 3 3000 >path 2>err &&
	jq -e ".threads[0].wrapped == true" snap/manifest.json &&
	jq -e ".threads[0].bytes_kept == 16384" snap/manifest.json &&
	jq -e ".threads[0].ring_size == 16384" snap/manifest.json &&
	emu_check_parity snap truth >counts &&
	n=$(awk "{print \$3}" counts) &&
	total=$(grep -vc "^thread" truth) &&
	test "$n" -gt 1000 && test "$n" -lt "$total"
'
test_done

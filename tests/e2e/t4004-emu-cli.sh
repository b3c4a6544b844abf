#!/bin/sh
# ptrec's command line around the emu recorder: --recorder auto says why
# it picks emu, --pid is refused under emu with the recorders that can
# attach, stdout carries only the snapshot path, scratch is removed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

test_expect_success '--recorder auto picks emu here and says why, once' '
	if test -e /sys/bus/event_source/devices/intel_pt; then
		echo "# Intel PT present: auto picks pt" && exit 0
	fi
	PTKIT_RECORDER= ptrec -o snap -- "$EMU_FIX/branchy" 1 10 >out 2>err &&
	test_eq "$PWD/snap" "$(cd "$(cat out)" && pwd)" &&
	test $(wc -l <out) = 1 &&
	test $(grep -c "^ptrec: --recorder auto: using emu: " err) = 1 &&
	grep -q "^round 1 " snap/output.log &&
	grep -q "^round 1 " err &&
	! grep -q "^round" out &&
	test -z "$(ls "$TMPDIR"/ptkit-*/ 2>/dev/null)"
'

test_expect_success '--pid under emu is refused, naming pt and perf' '
	must_exit 1 ptrec --recorder emu --pid 1 2>err &&
	test_eq "ptrec: --pid: the emu recorder cannot attach to a running process: use --recorder pt or --recorder perf on a machine with Intel PT" "$(cat err)"
'

test_expect_success 'an unknown trigger symbol is refused before running' '
	must_exit 1 ptrec --recorder emu -o snap --trigger-symbol no_such_fn \
	    -- "$EMU_FIX/branchy" 1 10 2>err &&
	grep -q "^ptrec: no_such_fn: .*no function .no_such_fn." err &&
	! test -e snap
'

test_expect_success 'the manifest describes the emulated capture' '
	ptrec --recorder emu -o snap --timing high -- "$EMU_FIX/branchy" 1 10 \
	    >out 2>err &&
	jq -e ".host.cpu.emulated == true and .pt.clock == \"virtual\"" \
	    snap/manifest.json &&
	jq -e ".pt.tsc_hz == 1000000000 and .pt.nom_freq == 1" \
	    snap/manifest.json &&
	jq -e ".pt.noretcomp == true and .pt.cyc == true" snap/manifest.json &&
	jq -e ".pt.timing_profile == \"high\"" snap/manifest.json &&
	jq -e ".images | length >= 2" snap/manifest.json &&
	test -n "$(ls snap/images/.build-id)"
'
test_done

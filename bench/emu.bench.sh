#!/bin/sh
# emu.bench.sh: guest instructions per second of ptrec --recorder emu
# against plain qemu-x86_64 and native execution, on the branchy fixture
# (issue #4: target >= 250 M insn/s and <= 5x plain qemu).  The
# instruction count is the plugin's (guest_instructions in the manifest);
# each figure is the best of three wall-clock runs.  Printed, never
# asserted.
set -eu
: "${PTKIT_BUILD:?run through make bench}"
prog=$PTKIT_BUILD/tests/fixtures/emu/branchy.static
iters=${EMU_BENCH_ITERS:-5000000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }

# best_of CMD...: the smallest wall time of three runs, in ns.
best_of() {
	best=0
	for _ in 1 2 3; do
		t0=$(now)
		"$@" >/dev/null 2>&1 || true
		t=$(($(now) - t0))
		if [ "$best" = 0 ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	echo "$best"
}

rec() {
	rm -rf "$tmp/snap"
	ptrec --recorder emu --aux-bytes 1M -o "$tmp/snap" -- "$prog" 1 "$iters"
}

rec >/dev/null 2>&1
insns=$(jq -r '.counters.guest_instructions' "$tmp/snap/manifest.json")

native=$(best_of "$prog" 1 "$iters")
qemu=$(best_of qemu-x86_64 "$prog" 1 "$iters")
emu=$(best_of rec)

rate() { echo "$insns $1" | awk '{ printf "%.0f", $1 / ($2 / 1e9) / 1e6 }'; }
echo "workload: branchy.static 1 $iters, $insns guest instructions"
printf '%-28s %8.3f s %6s M insn/s\n' native \
    "$(echo "$native" | awk '{print $1/1e9}')" "$(rate "$native")"
printf '%-28s %8.3f s %6s M insn/s\n' "qemu-x86_64 (no plugin)" \
    "$(echo "$qemu" | awk '{print $1/1e9}')" "$(rate "$qemu")"
printf '%-28s %8.3f s %6s M insn/s\n' "ptrec --recorder emu" \
    "$(echo "$emu" | awk '{print $1/1e9}')" "$(rate "$emu")"
echo "$emu $qemu $native" | awk '{ printf "emu vs plain qemu: %.2fx slower; vs native: %.2fx\n", $1 / $2, $1 / $3 }'

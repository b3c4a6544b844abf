#!/bin/sh
# emu.bench.sh: guest instructions per second of ptrec --recorder emu
# against plain qemu-x86_64 and native execution, on two workloads: the
# branchy fixture (blocks ending mostly in conditional branches: TNT
# bits) and bench/indirect.c (an interpreter loop: an indirect jump every
# few instructions, a TIP for nearly every block, the recorder's worst
# case).  Targets: <= 4x plain qemu on both (goal 3x).  The instruction
# count is the plugin's (guest_instructions in the manifest); each figure
# is the best of three wall-clock runs.  Printed, never asserted.
#
# Where the recorder's time goes: perf record -e cpu-clock of the whole
# recording (qemu with the plugin and ptrec), indirect 10000 into a 1 MiB
# ring: 425 M instructions, about 130 M blocks, 270 MB of packets.
#                                    pt_enc_next    encoded in place
#   qemu and its generated code          27%              35%
#   per block: callback, tracer, commit  38%              45%
#   packet encoding and ring writes      31%              13%
#   kernel, libc, start-up                4%               7%
#   whole run, CPU (median of 5-7)      4.9 s            2.8 s
# (pt_enc_next alone was 12-14%: a call and a struct pt_packet a packet;
# now a block's TNT flush, CYC and TIP are one write into the ring.)  A
# callback that only counts the clock costs 1.6x plain qemu here: the
# floor of one C call per block, which qemu 7.2's plugin API imposes.
# The ground-truth log costs nothing unless asked for (--emu-truth).
# With the default 32 MiB ring a snapshot adds a fixed cost, mostly
# system time: the ring written to a file by the plugin, read by ptrec
# and written again into perf.data (0.4-0.5 s on branchy 40 100000).
set -eu
: "${PTKIT_BUILD:?run through make bench}"
prog=$PTKIT_BUILD/tests/fixtures/emu/branchy.static
iters=${EMU_BENCH_ITERS:-5000000}
ind=$PTKIT_BUILD/bench/indirect.static
ind_iters=${EMU_BENCH_INDIRECT_ITERS:-5000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }

# CPU time (user + sys) of all finished children so far, in ns: the
# second line of the times builtin.  Shared machines inflate wall time;
# CPU time is the steadier figure, so both are printed.
child_cpu() {
	times >"$tmp/times"	# in this shell: a pipe would time a subshell
	sed -n 2p "$tmp/times" | awk '{
		n = 0
		for (i = 1; i <= 2; i++) {
			split($i, a, "m"); sub("s", "", a[2])
			n += a[1] * 60 + a[2]
		}
		printf "%.0f", n * 1e9 }'
}

# best_of CMD...: "WALL CPU" in ns, the smallest of three runs each.
best_of() {
	bw=0 bc=0
	for _ in 1 2 3; do
		child_cpu >"$tmp/c0"
		t0=$(now)
		"$@" >/dev/null 2>&1 || true
		t=$(($(now) - t0))
		child_cpu >"$tmp/c1"
		c=$(($(cat "$tmp/c1") - $(cat "$tmp/c0")))
		if [ "$bw" = 0 ] || [ "$t" -lt "$bw" ]; then bw=$t; fi
		if [ "$bc" = 0 ] || [ "$c" -lt "$bc" ]; then bc=$c; fi
	done
	echo "$bw $bc"
}

# workload NAME PROG ARGS...: the rows of one workload.
workload() {
	name=$1
	shift
	rm -rf "$tmp/snap"
	ptrec --recorder emu --aux-bytes 1M -o "$tmp/snap" -- "$@" \
	    >/dev/null 2>&1
	insns=$(jq -r '.counters.guest_instructions' "$tmp/snap/manifest.json")
	native=$(best_of "$@")
	qemu=$(best_of qemu-x86_64 "$@")
	emu=$(best_of rec "$@")
	echo "workload: $name, $insns guest instructions"
	row native "$native"
	row "qemu-x86_64 (no plugin)" "$qemu"
	row "ptrec --recorder emu" "$emu"
	echo "$emu $qemu $native" | awk -v n="$name" '{ printf "%s: emu vs plain qemu: %.2fx wall, %.2fx cpu; vs native: %.2fx wall, %.2fx cpu\n", n, $1 / $3, $2 / $4, $1 / $5, $2 / $6 }'
}

rec() {
	rm -rf "$tmp/snap"
	ptrec --recorder emu --aux-bytes 1M -o "$tmp/snap" -- "$@"
}

rate() { echo "$insns $1" | awk '{ printf "%.0f", $1 / ($2 / 1e9) / 1e6 }'; }
row() {
	set -- "$1" $2
	printf '%-26s wall %7.3f s %6s M insn/s   cpu %7.3f s %6s M insn/s\n' \
	    "$1" "$(echo "$2" | awk '{print $1/1e9}')" "$(rate "$2")" \
	    "$(echo "$3" | awk '{print $1/1e9}')" "$(rate "$3")"
}

workload "branchy.static 1 $iters" "$prog" 1 "$iters"
workload "indirect.static $ind_iters" "$ind" "$ind_iters"

#!/bin/sh
# Makes the seed corpus of fuzz_ptdec_fast (tests/fuzz/ptdec_fast/): small
# pieces of real emu rings of the static fixtures: one PSB interval, two
# in a row, an interval entered mid-way.  Each seed is the image byte (the
# fixture's place in mk/fastdec.mk's FASTDEC_FUZZ_FIX, from 1), the
# configuration byte (0: as emu records), then the ring piece.  A ring
# that spins in a loop of direct branches.  And a few random programs for
# the fuzzer's packet generator.
#
#   PTKIT_BUILD=build-x PATH=build-x/bin:$PATH sh tests/fuzz/mkseeds-ptdec-fast.sh DIR
set -eu

out=${1:?usage: mkseeds-ptdec-fast.sh DIR}
fix=${PTKIT_BUILD:?}/tests/fixtures/emu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

# rings SNAP: one file per AUXTRACE record, $tmp/ring.N.
rings() {
	rm -f "$tmp"/ring.*
	perf report -D -i "$1/perf.data" 2>/dev/null |
	    sed -n 's/^[0-9]* \(0x[0-9a-f]*\) \[\(0x[0-9a-f]*\)\]: PERF_RECORD_AUXTRACE size: \(0x[0-9a-f]*\) .*/\1 \2 \3/p' |
	    while read -r at hdr size; do
		n=$(($(ls "$tmp" | grep -c '^ring\.' || :) + 1))
		dd if="$1/perf.data" of="$tmp/ring.$n" bs=4096 \
		    iflag=skip_bytes,count_bytes skip=$((at + hdr)) \
		    count=$((size)) 2>/dev/null
	done
}

# seed NAME IMAGE RING FROM TO: bytes [FROM, TO) of RING as a seed.
seed() {
	{
		printf "\\$(printf %03o "$2")\\000"
		dd if="$3" bs=4096 iflag=skip_bytes,count_bytes skip="$4" \
		    count=$(($5 - $4)) 2>/dev/null
	} >"$out/$1"
}

# cut_seeds NAME IMAGE PTREC_OPTIONS... -- PROGRAM ARGS: records, then seeds
# from the first ring with at least 3 PSBs (the first one otherwise).
cut_seeds() {
	name=$1 image=$2
	shift 2
	rm -rf "$tmp/snap"
	ptrec --recorder emu -o "$tmp/snap" "$@" >/dev/null 2>"$tmp/rec.err"
	rings "$tmp/snap"
	for r in "$tmp"/ring.*; do
		LC_ALL=C grep -obUaP '(\x02\x82){8}' "$r" | cut -d: -f1 \
		    >"$tmp/psb" || :
		test "$(wc -l <"$tmp/psb")" -ge 3 && break
	done
	len=$(wc -c <"$r")
	set -- $(cat "$tmp/psb") "$len"
	if [ $# -ge 3 ]; then
		seed "$name-first" "$image" "$r" "$1" "$2"
		seed "$name-two" "$image" "$r" "$1" "$3"
		seed "$name-mid" "$image" "$r" $(($1 + ($2 - $1) / 2)) "$3"
	fi
	eval "last=\${$#} prev=\${$(($# - 1))}"
	seed "$name-last" "$image" "$r" "$prev" "$last"
}

cut_seeds branchy 1 --aux-bytes 4M -- "$fix/branchy.static" 2 300
cut_seeds branchy-high 1 --timing high -- "$fix/branchy.static" 1 300
cut_seeds branchy-low 1 --timing low -- "$fix/branchy.static" 1 300
cut_seeds branchy-filter 1 --filter dispatch -- "$fix/branchy.static" 1 100
cut_seeds signals 2 -- "$fix/signals.static" 3000
cut_seeds threads 3 -- "$fix/threads.static"
cut_seeds segvjmp 4 -- "$fix/segvjmp.static"

# A loop of direct branches (abort's hlt; jmp) entered with a TIP after
# it that it never asks for: both decoders end it with a GAP after 65536
# blocks (tests/unit/t_ptdec_spin.c writes the ring).
loop=$(objdump -d --no-show-raw-insn "$fix/branchy.static" | awk '
	$2 == "hlt" { h = $1; sub(":", "", h); next }
	$2 == "jmp" && $3 == h { print h; exit }
	{ h = "" }')
{
	printf '\001\000'
	"$PTKIT_BUILD/tests/unit/t_ptdec_spin" --ring "$loop"
} >"$out/spin-loop"

# Programs for the packet generator (byte 0 bit 7): random, every image.
for i in 0 1 2 3 4 5 6 7; do
	{
		printf "\\$(printf %03o $((128 + i % 5)))\\000"
		head -c 512 /dev/urandom
	} >"$out/gen-$i"
done
ls "$out" | wc -l

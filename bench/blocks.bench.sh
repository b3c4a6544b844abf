#!/bin/sh
# The cost per record of the block stream plumbing, without a decoder
# (bench/blocks_bench.c): ptdec's driver with the blkstream writer, and
# the blkstream reader, over the blocks of an emu snapshot of the branchy
# fixture.  Prints ns per record, the best of a few runs.  Printed, never
# asserted.
#
# Environment: BLOCKS_ROUNDS / BLOCKS_ITERS size the recording (default
# 10 x 100000, about 10 M blocks).
set -eu

: "${PTKIT_BUILD:?run through make bench}"
bench=$PTKIT_BUILD/bench/blocks_bench
prog=$PTKIT_BUILD/tests/fixtures/emu/branchy

if ! ptrec --doctor >/dev/null 2>&1 || ! test -x "$prog"; then
	echo "blocks: skipped: no emu recorder or fixture here"
	exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-bench-blocks.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM

ptrec --recorder emu -o "$dir/snap" --aux-bytes 64M -- "$prog" \
    "${BLOCKS_ROUNDS:-10}" "${BLOCKS_ITERS:-100000}" >/dev/null 2>&1
ptdecode --decoder native "$dir/snap" >"$dir/blocks" 2>/dev/null
rm -rf "$dir/snap"
# The pool of replayed records comes from past the dynamic loader.
for j in 1 2; do
	"$bench" -t -b -j "$j" -R 3 -s 1000000 "$dir/blocks" |
	    sed -n 's/^/  /p' | { [ "$j" = 1 ] && cat || head -n 1; }
done
"$bench" -t -j 1 -R 3 -s 1000000 "$dir/blocks" | sed -n '1s/^/  /p'

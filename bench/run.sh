#!/bin/sh
# make bench: runs every bench/*.bench.sh driver and prints what it
# measured.  Figures are printed, never asserted: these machines are
# shared and noisy.
set -eu
dir=$(dirname "$0")
found=0
for b in "$dir"/*.bench.sh; do
	[ -e "$b" ] || continue
	found=1
	echo "== $(basename "$b" .bench.sh)"
	sh "$b"
done
[ "$found" = 1 ] || echo "bench: no benchmarks yet"

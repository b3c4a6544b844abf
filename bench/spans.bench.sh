#!/bin/sh
# Span reconstruction throughput: ptspans over the block stream of one emu
# snapshot of the branchy fixture with a 32 MiB ring, with and without
# inline accounting (-o DIR), and alone on the stream into span lines on
# stdout (what `ptdecode | ptspans` runs, so that its speed is on the
# table beside the decoder's).  Prints wall and CPU seconds, spans/s,
# blocks/s (over wall time) and peak memory (GNU time's maximum resident
# set).  Printed, never asserted.
#
# Environment: BENCH_ROUNDS / BENCH_ITERS size the recording (default
# 40 x 100000, enough to wrap the 32 MiB ring); BENCH_KEEP=1 keeps the
# snapshot.
set -eu

: "${PTKIT_BUILD:?run through make bench}"
prog=$PTKIT_BUILD/tests/fixtures/emu/branchy
rounds=${BENCH_ROUNDS:-40}
iters=${BENCH_ITERS:-100000}

if ! ptrec --doctor >/dev/null 2>&1 || ! test -x "$prog"; then
	echo "spans: skipped: no emu recorder or fixture here"
	exit 0
fi
if ! test -x /usr/bin/time; then
	echo "spans: skipped: /usr/bin/time (GNU time) is not installed"
	exit 0
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-bench-spans.XXXXXX")
cleanup() {
	if [ "${BENCH_KEEP:-}" = 1 ]; then
		echo "spans: kept $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ptrec --recorder emu -o "$dir/snap" --aux-bytes 32M -- "$prog" "$rounds" \
    "$iters" >/dev/null 2>"$dir/rec.err"
ptdecode "$dir/snap" >"$dir/blocks" 2>"$dir/sum"
echo "spans: emu snapshot of branchy $rounds $iters, 32 MiB ring:" \
    "$(sed 's/^ptdecode: [^:]*: //' "$dir/sum" | paste -sd ';' -)"

# run NAME ARGS...: one timed ptspans run into $dir/NAME.  The output of
# the run before is deleted and the page cache written back first: -o
# writes gigabytes, and their writeback would otherwise land in the next
# run's system time.
run() {
	name=$1
	shift
	sync
	/usr/bin/time -f '%e %U %S %M' -o "$dir/$name.time" \
	    ptspans -o "$dir/$name" "$@" <"$dir/blocks" >/dev/null
	read -r wall user sys rss <"$dir/$name.time"
	spans=$(sed -n 's/.*"spans":\([0-9]*\).*/\1/p' "$dir/$name/manifest.json")
	blocks=$(sed -n 's/.*"blocks":\([0-9]*\).*/\1/p' \
	    "$dir/$name/manifest.json")
	awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
	    -v sp="$spans" -v b="$blocks" 'BEGIN {
		if (w <= 0) w = 0.01
		printf "spans: %-9s %d spans, %d blocks: %.2f s wall, " \
		    "%.2f s CPU, %.0f spans/s, %.0f blocks/s, " \
		    "peak %.1f MiB\n", n, sp, b, w, u + s, sp / w, b / w,
		    r / 1024 }'
	echo "spans=$spans blocks=$blocks" >"$dir/$name.counts"
	room "$name" "$spans"
	rm -rf "${dir:?}/$name"
}

# room NAME SPANS: the analysis directory's size, in bytes a span per
# file, and its ratio to the PT bytes it came from (threads.jsonl's
# trace_bytes; the goal is at most 3 times).
room() {
	pt=$(sed -n 's/.*"trace_bytes":\([0-9]*\).*/\1/p' \
	    "$dir/$1/threads.jsonl" | awk '{ s += $1 } END { print s + 0 }')
	du -b "$dir/$1"/* | awk -v n="$1" -v sp="$2" -v pt="$pt" '
	{ t += $1; sub(".*/", "", $2); f = f sprintf(" %s %.1f", $2,
	    sp ? $1 / sp : 0) }
	END { printf "spans: %-9s analysis %.0f bytes, %.1f B/span (%s), " \
	    "%.2fx the %.0f PT bytes\n", n, t, sp ? t / sp : 0, substr(f, 2),
	    pt ? t / pt : 0, pt }'
}

run inline
run no-inline --no-inline

# The stream alone, span lines to /dev/null; the counts are the inline
# run's (the same stream, the same spans).
sync
/usr/bin/time -f '%e %U %S %M' -o "$dir/stdout.time" \
    ptspans <"$dir/blocks" >/dev/null
read -r wall user sys rss <"$dir/stdout.time"
. "$dir/inline.counts"
mib=$(($(wc -c <"$dir/blocks") / 1048576))
awk -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v sp="$spans" \
    -v b="$blocks" -v m="$mib" 'BEGIN {
	if (w <= 0) w = 0.01
	printf "spans: stdout    %d spans, %d blocks (%d MiB of blocks) to " \
	    "/dev/null: %.2f s wall, %.2f s CPU, %.0f spans/s, " \
	    "%.0f blocks/s, peak %.1f MiB\n", sp, b, m, w, u + s, sp / w,
	    b / w, r / 1024 }'

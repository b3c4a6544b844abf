#!/bin/sh
# Span reconstruction throughput: ptspans over the block stream of one emu
# snapshot of the branchy fixture with a 32 MiB ring, with and without
# inline accounting (-o DIR), and alone on the stream into span lines on
# stdout (what `ptdecode | ptspans` runs, so that its speed is on the
# table beside the decoder's).  Prints wall and CPU seconds, spans/s,
# blocks/s (over wall time) and peak memory (GNU time's maximum resident
# set).  Printed, never asserted.
#
# Then, end to end against perf script --itrace=cr (its fastest fields,
# as bench/decode's row): ptdecode --decoder fast | ptspans to /dev/null
# with the serial engine (-j 1) and on every core (-j default), on that
# single-thread snapshot and on a 4-thread one whose rings hold as much
# (spans/threads, 4 x 8 MiB); and ptspans -o DIR against ptspans to
# stdout on the same stream; and ptdecode --decoder fast | ptspans -o DIR,
# what users run, against perf.  Ratios are wall seconds.
#
# Environment: BENCH_ROUNDS / BENCH_ITERS size the recording (default
# 40 x 100000, enough to wrap the 32 MiB ring); BENCH_THREAD_CALLS the
# 4-thread one's calls per thread (default 10000000, enough to wrap its
# rings); BENCH_KEEP=1 keeps the snapshots.
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

# ----------------------------------------------------------------------
# End to end, and -o against stdout.

# timed NAME CMD...: one run of CMD (stdout to /dev/null) into
# $dir/NAME.wall and .cpu, and a printed row.
timed() {
	name=$1
	shift
	sync
	/usr/bin/time -f '%e %U %S %M' -o "$dir/t.time" "$@" >/dev/null \
	    2>"$dir/t.err" || { echo "spans: $name: failed"; return 0; }
	read -r wall user sys rss <"$dir/t.time"
	echo "$wall" >"$dir/$name.wall"
	awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }' >"$dir/$name.cpu"
	awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
	    'BEGIN { printf "spans: %-44s %6.2f s wall %6.2f s CPU " \
	    "peak %.1f MiB\n", n, w, u + s, r / 1024 }'
}

# ratio A B: B's wall seconds / A's, "n/a" when one did not run.
ratio() {
	if [ -s "$dir/$1.wall" ] && [ -s "$dir/$2.wall" ]; then
		awk -v a="$(cat "$dir/$1.wall")" -v b="$(cat "$dir/$2.wall")" \
		    'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }'
	else
		printf 'n/a'
	fi
}

jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
# What ptspans runs without -j: every core from 4 up, else the serial
# engine (ptspans(1), PARALLEL ENGINE).
defjobs=1
[ "$jobs" -ge 4 ] && defjobs=$jobs
printf '#!/bin/sh\nptdecode --decoder fast "$1" | ptspans -j "$2"\n' \
    >"$dir/pipe.sh"
printf '#!/bin/sh\nrm -rf "$3"\nptdecode --decoder fast "$1" | ptspans -j "$2" -o "$3"\n' \
    >"$dir/pipe-o.sh"
printf '#!/bin/sh\nexec ptspans "$@" <"$BLOCKS"\n' >"$dir/alone.sh"

# end_to_end TAG SNAPSHOT: perf and the pipeline, serial and parallel.
end_to_end() {
	tag=$1
	if command -v perf >/dev/null 2>&1; then
		timed "$tag perf script --itrace=cr" perf --buildid-dir \
		    "$2/images" script -i "$2/perf.data" --itrace=cr \
		    -F tid,ip,addr,flags
	fi
	timed "$tag fast | ptspans -j1" sh "$dir/pipe.sh" "$2" 1
	timed "$tag fast | ptspans -j$jobs" sh "$dir/pipe.sh" "$2" "$jobs"
	timed "$tag fast | ptspans -j$jobs -o DIR" sh "$dir/pipe-o.sh" "$2" \
	    "$jobs" "$dir/e2e-o"
	rm -rf "$dir/e2e-o"
	echo "spans: $tag: fast | ptspans -j1 over perf:" \
	    "$(ratio "$tag fast | ptspans -j1" "$tag perf script --itrace=cr")x;" \
	    "-j$jobs: $(ratio "$tag fast | ptspans -j$jobs" \
	    "$tag perf script --itrace=cr")x;" \
	    "ptspans' default (-j$defjobs): $(ratio \
	    "$tag fast | ptspans -j$defjobs" \
	    "$tag perf script --itrace=cr")x (target >= $3);" \
	    "-j$jobs over -j1: $(ratio "$tag fast | ptspans -j$jobs" \
	    "$tag fast | ptspans -j1")x;" \
	    "-j$jobs -o DIR over perf: $(ratio "$tag fast | ptspans -j$jobs -o DIR" \
	    "$tag perf script --itrace=cr")x"
}

end_to_end "1 thread" "$dir/snap" 12

# -o against stdout, on the stream on disk, both with -j default.
rm -rf "$dir/o"
BLOCKS=$dir/blocks timed "ptspans -j$jobs to stdout" sh "$dir/alone.sh" \
    -j "$jobs"
BLOCKS=$dir/blocks timed "ptspans -j$jobs -o DIR" sh "$dir/alone.sh" \
    -j "$jobs" -o "$dir/o"
rm -rf "$dir/o"
BLOCKS=$dir/blocks timed "ptspans -j1 to stdout" sh "$dir/alone.sh" -j 1
echo "spans: -o / stdout: $(ratio "ptspans -j$jobs to stdout" \
    "ptspans -j$jobs -o DIR") (target <= 1.25); ptspans -j$jobs over -j1:" \
    "$(ratio "ptspans -j$jobs to stdout" "ptspans -j1 to stdout")x"
rm -f "$dir/blocks"

threads=$PTKIT_BUILD/tests/fixtures/spans/threads
if test -x "$threads" && ptrec --recorder emu -o "$dir/snap4" \
    --aux-bytes 8M -- "$threads" 4 "${BENCH_THREAD_CALLS:-10000000}" \
    >/dev/null 2>"$dir/rec4.err"; then
	end_to_end "4 threads" "$dir/snap4" 15
else
	echo "spans: 4 threads: skipped: recording failed"
fi

#!/bin/sh
# ptquery latency over synthetic analyses (bench/gen_analysis.c; 4
# threads, 1000 functions): BENCH_SPANS spans (default 10 M), generated
# afresh, every kind below; then BENCH_LARGE spans (default 100 M; 0
# skips it), generated once into $PTKIT_BUILD/bench/query-N (about 1 GB,
# minutes; BENCH_LARGE_DIR puts it elsewhere) and reused by later runs,
# summary, hotpaths, a timeline of one function (its first 100 spans,
# and the same through --cursor o0, which reads and sorts every span of
# it) and at.  Each query is run once to warm the page cache and
# then BENCH_REPEAT times; prints the best warm wall time and the peak
# memory (GNU time's maximum resident set, which counts the pages of
# index.bin the query touched, and the largest anonymous RSS).  Printed,
# never asserted.  The goals at 100 M spans: summary and hotpaths under
# 1 s (they read the totals kept in aggregates.bin), a timeline of one
# function's first spans and at under 0.2 s, memory independent of the
# span count beyond the mapping.
set -eu

: "${PTKIT_BUILD:?run through make bench}"
gen=$PTKIT_BUILD/bench/gen_analysis
spans=${BENCH_SPANS:-10000000}
large=${BENCH_LARGE:-100000000}
repeat=${BENCH_REPEAT:-3}

if ! test -x /usr/bin/time; then
	echo "query: skipped: /usr/bin/time (GNU time) is not installed"
	exit 0
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-bench-query.XXXXXX")
cleanup() {
	if [ "${BENCH_KEEP:-}" = 1 ]; then
		echo "query: kept $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# generated N DIR: DIR (an analysis of N spans) made and described.
generated() {
	/usr/bin/time -f '%e %M' -o "$dir/gen.time" "$gen" "$2" "$1" \
	    1000 4 >/dev/null
	read -r gs gk <"$dir/gen.time"
	ix=$(stat -c %s "$2/index.bin")
	echo "query: generated $1 spans in ${gs}s (index.bin" \
	    "$((ix / 1048576)) MiB, $(awk -v b="$ix" -v n="$1" \
	    'BEGIN { printf "%.1f", b / n }') B/span, aggregates.bin" \
	    "$(($(stat -c %s "$2/aggregates.bin") / 1024)) KiB, generator" \
	    "peak ${gk} KiB)"
}
generated "$spans" "$dir/a"
a=$dir/a

# measure NAME ARGS...: best of $repeat warm runs.
measure() {
	name=$1
	shift
	ptquery "$a" "$@" >/dev/null
	best= kb=
	i=0
	while [ $i -lt "$repeat" ]; do
		/usr/bin/time -f '%e %M' -o "$dir/t" ptquery "$a" "$@" \
		    >"$dir/out"
		read -r s k <"$dir/t"
		if [ -z "$best" ] || [ "$(echo "$s < $best" | bc)" = 1 ]; then
			best=$s
			kb=$k
		fi
		i=$((i + 1))
	done
	anon=$(peak_anon "$@")
	printf 'query: %-40s %6ss  rss %7s KiB  anon %6s KiB  %s lines\n' \
	    "$name" "$best" "$kb" "$anon" "$(wc -l <"$dir/out")"
}

# peak_anon ARGS...: the largest RssAnon of one run, polled every 10 ms.
peak_anon() {
	ptquery "$a" "$@" >/dev/null &
	pid=$!
	peak=0
	while v=$(sed -n 's/^RssAnon:[[:space:]]*\([0-9]*\).*/\1/p' \
	    /proc/$pid/status 2>/dev/null) && [ -n "$v" ]; do
		[ "$v" -le "$peak" ] || peak=$v
		sleep 0.01
	done
	wait $pid
	echo "$peak"
}

mid_of() {
	echo $(($(sed -n 's/.*"last_ns":\([0-9]*\).*/\1/p' \
	    "$1/threads.jsonl" | head -n 1) / 2))
}
mid=$(mid_of "$a")
echo "query: $spans spans"
measure "summary" --kind summary
measure "hotpaths (function, all spans)" --kind hotpaths --limit 20
measure "hotpaths --group module" --kind hotpaths --group module
measure "timeline --function fn_1 --limit 100" --kind timeline \
    --function fn_1 --limit 100
measure "timeline ... --limit 100 --cursor o0" --kind timeline \
    --function fn_1 --limit 100 --cursor o0
measure "timeline --tid 1000 window 1 us" --kind timeline --tid 1000 \
    --from "$mid" --to $((mid + 1000))
measure "at --at mid-capture" --kind at --at "$mid"
measure "calls --function fn_1" --kind calls --function fn_1

[ "$large" != 0 ] || exit 0
a=${BENCH_LARGE_DIR:-$PTKIT_BUILD/bench/query-$large}
if ! [ -f "$a/manifest.json" ] || ! [ -f "$a/aggregates.bin" ]; then
	rm -rf "$a" "$a.tmp"
	generated "$large" "$a.tmp"
	mv "$a.tmp" "$a"
else
	echo "query: reusing $a"
fi
mid=$(mid_of "$a")
echo "query: $large spans"
measure "summary" --kind summary
measure "hotpaths (function, all spans)" --kind hotpaths --limit 20
measure "timeline --function fn_1 --limit 100" --kind timeline \
    --function fn_1 --limit 100
measure "timeline ... --limit 100 --cursor o0" --kind timeline \
    --function fn_1 --limit 100 --cursor o0
measure "at --at mid-capture" --kind at --at "$mid"

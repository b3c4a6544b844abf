#!/bin/sh
# ptquery latency over a synthetic analysis of BENCH_SPANS spans
# (default 10 M, 4 threads, 1000 functions; bench/gen_analysis.c): each
# query is run once cold-ish (right after generation, the index in the
# page cache) and then BENCH_REPEAT times warm; prints the best warm wall
# time and the peak memory (GNU time's maximum resident set, which counts
# the pages of index.bin the query touched).  Printed, never asserted.
# The goal: hotpaths over 10 M spans under 1 s warm, memory independent
# of the span count beyond the mapping (compare BENCH_SPANS=1000000);
# BENCH_SPANS=100000000 for the 100 M-span goals (summary and hotpaths
# under 1 s, a timeline of one function and at under 0.2 s).
set -eu

: "${PTKIT_BUILD:?run through make bench}"
gen=$PTKIT_BUILD/bench/gen_analysis
spans=${BENCH_SPANS:-10000000}
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

/usr/bin/time -f '%e %M' -o "$dir/gen.time" "$gen" "$dir/a" "$spans" \
    1000 4 >/dev/null
read -r gs gk <"$dir/gen.time"
ix=$(stat -c %s "$dir/a/index.bin")
echo "query: generated $spans spans in ${gs}s (index.bin $((ix / 1048576))" \
    "MiB, $(awk -v b="$ix" -v n="$spans" 'BEGIN { printf "%.1f", b / n }')" \
    "B/span, generator peak ${gk} KiB)"

# measure NAME ARGS...: best of $repeat warm runs.
measure() {
	name=$1
	shift
	ptquery "$dir/a" "$@" >/dev/null
	best= kb=
	i=0
	while [ $i -lt "$repeat" ]; do
		/usr/bin/time -f '%e %M' -o "$dir/t" ptquery "$dir/a" "$@" \
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
	ptquery "$dir/a" "$@" >/dev/null &
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

mid=$(($(sed -n 's/.*"last_ns":\([0-9]*\).*/\1/p' "$dir/a/threads.jsonl" |
    head -n 1) / 2))
measure "summary" --kind summary
measure "hotpaths (function, all spans)" --kind hotpaths --limit 20
measure "hotpaths --group module" --kind hotpaths --group module
measure "timeline --function fn_1 --limit 100" --kind timeline \
    --function fn_1 --limit 100
measure "timeline --tid 1000 window 1 us" --kind timeline --tid 1000 \
    --from "$mid" --to $((mid + 1000))
measure "at --at mid-capture" --kind at --at "$mid"
measure "calls --function fn_1" --kind calls --function fn_1

#!/bin/sh
# Decode throughput: ptdecode's native (libipt) and
# fast decoders, -j1 and -j2, next to a bare libipt block-decode loop
# (bench/decode_bare.c, same images and decoder configuration, no output)
# and next to perf script --itrace=cr, on one emu snapshot of the branchy
# fixture with at least 64 MiB of PT; the decoders piped into ptspans,
# and ptspans alone on the fast decoder's block stream (spans/s).
# Prints wall and CPU seconds, MB of PT/s, blocks/s and instructions/s
# (rates over wall time) and peak memory.  Printed, never asserted.
#
# Environment: BENCH_ROUNDS / BENCH_ITERS size the recording (default
# 40 x 200000, about 72 MiB of PT, some 10 s to record); BENCH_KEEP=1
# keeps the snapshot; BENCH_REPEAT (default 3) rounds, each running every
# row once (interleaved, so noise falls on all rows alike), the round with
# the least CPU printed for each row.
set -eu

: "${PTKIT_BUILD:?run through make bench}"
bare=$PTKIT_BUILD/bench/decode_bare
prog=$PTKIT_BUILD/tests/fixtures/emu/branchy
rounds=${BENCH_ROUNDS:-40}
iters=${BENCH_ITERS:-200000}

if ! ptrec --doctor >/dev/null 2>&1 || ! test -x "$prog"; then
	echo "decode: skipped: no emu recorder or fixture here"
	exit 0
fi
if ! test -x /usr/bin/time; then
	echo "decode: skipped: /usr/bin/time (GNU time) is not installed"
	exit 0
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-bench-decode.XXXXXX")
cleanup() {
	if [ "${BENCH_KEEP:-}" = 1 ]; then
		echo "decode: kept $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ptrec --recorder emu -o "$dir/snap" --aux-bytes 96M -- "$prog" "$rounds" \
    "$iters" >/dev/null 2>"$dir/rec.err"
ptdecode --decoder native -j1 "$dir/snap" >/dev/null 2>"$dir/sum"
pt_bytes=$(sed -n 's/.* of \([0-9]*\) trace bytes skipped$/\1/p' "$dir/sum")
blocks=$(sed -n 's/.*[ ,:] [0-9]* threads*, \([0-9]*\) blocks,.*/\1/p' "$dir/sum")
insns=$(sed -n 's/.* blocks, \([0-9]*\) instructions,.*/\1/p' "$dir/sum")
echo "decode: emu snapshot of branchy $rounds $iters:" \
    "$(awk -v b="$pt_bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }') of PT," \
    "$blocks blocks, $insns instructions"
if [ "$pt_bytes" -lt 67108864 ]; then
	echo "decode: note: less than 64 MiB of PT (raise BENCH_ITERS)"
fi

# row NAME [once] CMD...: adds a row to time.  The rows run in rounds,
# each row once a round, so that a noisy stretch of a shared machine
# falls on every row alike rather than on the few that ran during it; a
# row marked once runs in the first round only.  Each row prints the
# round that took the least CPU, and leaves its wall and CPU seconds in
# $dir/NAME.wall and .cpu.
repeat=${BENCH_REPEAT:-3}
nrows=0
: >"$dir/rows"
quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
row() {
	nrows=$((nrows + 1))
	name=$1
	shift
	once=0
	if [ "$1" = once ]; then
		once=1
		shift
	fi
	{
		echo '#!/bin/sh'
		printf 'exec'
		for a in "$@"; do
			printf ' %s' "$(quote "$a")"
		done
		echo
	} >"$dir/row$nrows.sh"
	printf '%s\t%s\n' "$once" "$name" >>"$dir/rows"
	: >"$dir/$name.times"
}

# time_row N NAME: one timed run of row N, appended to NAME.times.
time_row() {
	/usr/bin/time -o "$dir/$2.time" -f "%e %U %S %M" sh "$dir/row$1.sh" \
	    >/dev/null 2>"$dir/$2.err" || {
		echo "decode: $2 failed: $(tail -n 1 "$dir/$2.err")"
		return 0
	}
	cat "$dir/$2.time" >>"$dir/$2.times"
}

run_rows() {
	round=0
	while [ "$round" -lt "$repeat" ]; do
		round=$((round + 1))
		n=0
		while IFS="$(printf '\t')" read -r once name; do
			n=$((n + 1))
			[ "$once" = 1 ] && [ "$round" -gt 1 ] && continue
			time_row "$n" "$name" </dev/null
		done <"$dir/rows"
	done
}

# print_row NAME: the row's least-CPU run.
print_row() {
	name=$1
	[ -s "$dir/$name.times" ] || return 0
	set -- $(awk '{ c = $2 + $3; if (NR == 1 || c < b) { b = c; r = $0 } }
	    END { print r }' "$dir/$name.times")
	wall=$1 user=$2 sys=$3 rss=$4
	echo "$wall" >"$dir/$name.wall"
	awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }' >"$dir/$name.cpu"
	awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" \
	    -v b="$pt_bytes" -v k="$blocks" -v i="$insns" 'BEGIN {
		if (w <= 0) w = 0.001
		printf "  %-38s %7.2f s wall %7.2f s cpu %8.2f MB/s %7.2f Mblocks/s %8.2f Minsns/s %6d MB rss\n",
		    n, w, u + s, b / 1e6 / w, k / 1e6 / w, i / 1e6 / w, m / 1024
	}'
}

row "bare libipt loop -j1" "$bare" -j1 "$dir/snap"
row "bare libipt loop -j2" "$bare" -j2 "$dir/snap"
row "ptdecode -j1" ptdecode --decoder native -j1 "$dir/snap"
row "ptdecode -j2" ptdecode --decoder native -j2 "$dir/snap"
row "ptdecode --decoder fast -j1" ptdecode --decoder fast -j1 "$dir/snap"
row "ptdecode --decoder fast -j2" ptdecode --decoder fast -j2 "$dir/snap"
if command -v perf >/dev/null 2>&1; then
	row "perf script --itrace=cr" perf --buildid-dir "$dir/snap/images" \
	    script -i "$dir/snap/perf.data" --itrace=cr -F tid,ip,addr,flags
	# perf's own output (names, modules, times: what ptspans' span lines
	# say too), with its default fields.  The row above, perf's
	# fastest (-F tid,ip,addr,flags, no symbols), is the one the targets
	# are held to; this one runs once, it takes a minute.
	row "perf script --itrace=cr, default fields" once perf \
	    --buildid-dir "$dir/snap/images" script -i "$dir/snap/perf.data" \
	    --itrace=cr
fi
spans_rows=0
if ptspans --help >/dev/null 2>&1; then
	spans_rows=1
	printf '#!/bin/sh\nptdecode --decoder "$1" -j2 "$2" | ptspans >/dev/null\n' \
	    >"$dir/pipe.sh"
	row "ptdecode -j2 | ptspans" sh "$dir/pipe.sh" native "$dir/snap"
	row "ptdecode --decoder fast -j2 | ptspans" sh "$dir/pipe.sh" fast \
	    "$dir/snap"
	# ptspans alone: the engine and its writer over a block stream on
	# disk; the summary run counts the spans.
	if ptdecode --decoder fast -j2 "$dir/snap" >"$dir/blocks" \
	    2>/dev/null; then
		printf '#!/bin/sh\nptspans <"$1" >/dev/null\n' >"$dir/spans.sh"
		row "ptspans <blocks" sh "$dir/spans.sh" "$dir/blocks"
		spans=$(ptspans --format summary <"$dir/blocks" 2>/dev/null |
		    sed -n 's/^threads [0-9]*, spans \([0-9]*\),.*/\1/p')
	fi
fi
run_rows
rm -f "$dir/blocks"
while IFS="$(printf '\t')" read -r once name; do
	print_row "$name"
done <"$dir/rows"
if [ "$spans_rows" = 0 ]; then
	echo "  ptdecode | ptspans           skipped: ptspans --help fails"
fi

# ratio A B [wall|cpu]: B's seconds / A's, "n/a" when one did not run.
ratio() {
	k=${3:-wall}
	if [ -s "$dir/$1.$k" ] && [ -s "$dir/$2.$k" ]; then
		awk -v a="$(cat "$dir/$1.$k")" -v b="$(cat "$dir/$2.$k")" \
		    'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }'
	else
		printf 'n/a'
	fi
}
echo "  ptdecode -j1 speed / bare -j1:     $(ratio "ptdecode -j1" "bare libipt loop -j1") wall, $(ratio "ptdecode -j1" "bare libipt loop -j1" cpu) cpu (target >= 0.80 per core)"
echo "  ptdecode -j2 speed / bare -j2:     $(ratio "ptdecode -j2" "bare libipt loop -j2")"
echo "  ptdecode -j2 speedup over perf:    $(ratio "ptdecode -j2" "perf script --itrace=cr")x (target >= 4)"
echo "  ptdecode|ptspans speedup over perf: $(ratio "ptdecode -j2 | ptspans" "perf script --itrace=cr")x (target >= 3)"

# The fast decoder (ptdec_fast).  Per core: CPU seconds, not wall.
fb=$(sed -n 's/.*fast decoder: \([0-9]*\) of \([0-9]*\) PSB.*/\1 of \2/p' \
    "$dir/ptdecode --decoder fast -j1.err" 2>/dev/null || :)
echo "  fast decoder: ${fb:-?} PSB intervals handed to libipt"
echo "  fast -j2 speedup over perf:        $(ratio "ptdecode --decoder fast -j2" "perf script --itrace=cr")x (target >= 20)"
echo "  fast -j1 / native -j1 per core:    $(ratio "ptdecode --decoder fast -j1" "ptdecode -j1" cpu)x cpu, $(ratio "ptdecode --decoder fast -j1" "ptdecode -j1")x wall (target >= 5)"
echo "  fast -j2 / native -j2:             $(ratio "ptdecode --decoder fast -j2" "ptdecode -j2")x"
echo "  fast|ptspans speedup over perf:    $(ratio "ptdecode --decoder fast -j2 | ptspans" "perf script --itrace=cr")x (target >= 10)"
echo "  fast|ptspans over perf's default output: $(ratio "ptdecode --decoder fast -j2 | ptspans" "perf script --itrace=cr, default fields")x"
if [ -n "${spans:-}" ] && [ -s "$dir/ptspans <blocks.wall" ]; then
	awk -v n="$spans" -v w="$(cat "$dir/ptspans <blocks.wall")" \
	    'BEGIN { if (w <= 0) w = 0.001
		printf "  ptspans: %d spans, %.2f Mspans/s (wall)\n", n, n / 1e6 / w }'
else
	echo "  ptspans: spans/s n/a"
fi

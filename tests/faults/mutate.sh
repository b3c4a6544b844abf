#!/bin/sh
# mutate.sh: the mutation campaign over every file a ptkit reader reads.
#
#   sh tests/faults/mutate.sh [-n N] [-s SEED] [-w DIR]
#
# Builds a snapshot with mksnap (no recorder needed), decodes it and
# analyses it, then damages one file at a time and runs the tool that
# reads it, each run under timeout 60:
#
#   perf.data, manifest.json (the snapshot's)   ptdecode SNAP
#   the block stream                            ptspans -o DIR
#   spans.jsonl.zst, index.bin, manifest.json   ptquery DIR --kind hotpaths,
#     (the analysis's), aggregates.bin,           --kind summary, --kind gaps
#     gaps.jsonl, threads.jsonl, and spans.jsonl      and --kind threads
#     of one written with --no-compress
#
# Each file gets N of each kind of damage (default 3): truncations (in
# the middle, one byte short, at 0 and 1: the first N + 1 of them, then N
# at random), single bit flips and
# 16-byte overwrites (0xff, then random bytes) at random offsets, the
# offsets drawn from SEED (default 1) so that a failure can be replayed.
#
# A run passes when the tool exits 0 (with the baseline's answer, counted
# "same", or another one, counted "changed": flipped trace bytes become
# counted gaps, a changed number in a manifest changes what it says), or
# exits 1 with a message on stderr that starts with the tool's name and
# quotes nothing long.  It fails on a signal, a timeout, a sanitizer's
# report, any other exit status, or exit 1 without a clear message.  A
# "changed" answer from an analysis's files fails too: they verify
# themselves (index.bin's header and checksum, spans.jsonl against the
# manifest's count and checksum, gaps.jsonl and threads.jsonl against the
# manifest's checksums, aggregates.bin against its checksum and its
# index, the manifest against its own checksum),
# so damage there is an error or the same answer,
# never another one; MUTATE_STRICT=0 lets it pass, to see what else
# fails.
#
# Prints one TAP line per file (its runs and how they ended) and the
# failing runs' commands and output as diagnostics; exits 1 if any failed.
# make check-long runs it with -n 40; tests/e2e/t5005 runs -n 2 in make
# check.  Needs PTKIT_BUILD (and the tools on PATH), as the e2e tests do.
set -u
LC_ALL=C
export LC_ALL

N=3 SEED=1 WORK=
while getopts n:s:w: c; do
	case $c in
	n) N=$OPTARG ;;
	s) SEED=$OPTARG ;;
	w) WORK=$OPTARG ;;
	*) echo "usage: mutate.sh [-n N] [-s SEED] [-w DIR]" >&2; exit 2 ;;
	esac
done
: "${PTKIT_BUILD:?set PTKIT_BUILD to the build directory}"
MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-mutate.XXXXXX") || exit 1
	trap 'rm -rf "$WORK"' EXIT
fi
cd "$WORK" || exit 1

"$MKSNAP" -o snap -e truth -- "$FIX/snap_work" >/dev/null 2>&1 &&
ptdecode snap >blk 2>/dev/null &&
ptspans -o an <blk >/dev/null 2>&1 &&
ptspans --no-compress -o plain <blk >/dev/null 2>&1 || {
	echo "Bail out! the baseline snapshot and analysis could not be made"
	exit 1
}

# The answers a run is compared with, from an undamaged copy under the
# name the damaged ones get (the paths are in the answers).
answer_decode() { ptdecode "$1" 2>/dev/null | cksum; }
answer_query() {
	{ ptquery "$1" --kind hotpaths --format json &&
	    ptquery "$1" --kind summary && ptquery "$1" --kind gaps &&
	    ptquery "$1" --kind threads; } 2>/dev/null | cksum
}
rm -rf m && cp -R snap m && BASE_DECODE=$(answer_decode m)
rm -rf m && cp -R an m && BASE_QUERY=$(answer_query m)
rm -rf m && cp -R plain m && BASE_PLAIN=$(answer_query m)
rm -rf m && cp -R an m.out && BASE_SPANS=$(answer_query m.out)
rm -rf m.out

# offsets COUNT SIZE SALT: COUNT pseudo-random offsets below SIZE, SALT
# (1, 2, 3: one per kind of damage) making each kind's its own.  The
# seed is a number: mawk's srand takes a string such as "1f" as the same
# seed whatever it says, which made -s and the salts change nothing.
offsets() {
	awk -v n="$1" -v size="$2" -v seed="$((SEED * 4 + $3))" 'BEGIN {
		srand(seed); for (i = 0; i < n; i++) print int(rand() * size)
	}'
}

# Mutants of file $1 (a path inside a copy made by the caller): prints
# "kind offset" lines, the first ones fixed, then random.
plan() {
	size=$(wc -c <"$1")
	{
		printf 'trunc %d\ntrunc %d\ntrunc 0\ntrunc 1\n' $((size / 2)) \
		    $((size - 1)) | head -n $((N + 1 > 4 ? 4 : N + 1))
		offsets "$N" "$size" 1 | sed 's/^/trunc /'
	}
	offsets "$N" $((size * 8)) 2 | sed 's/^/flip /'
	offsets "$N" "$size" 3 | awk '{ print (NR == 1 ? "ones " : "noise ") $1 }'
}

# apply FILE KIND OFFSET
apply() {
	case $2 in
	trunc)	truncate -s "$3" "$1" ;;
	flip)	byte=$(($3 / 8)) bit=$(($3 % 8))
		old=$(od -An -tu1 -j "$byte" -N1 "$1" | tr -d " ")
		new=$(( ${old:-0} ^ (1 << bit) ))
		printf "$(printf '\\%03o' "$new")" |
		    dd of="$1" bs=1 seek="$byte" conv=notrunc 2>/dev/null ;;
	ones)	head -c 16 /dev/zero | tr '\0' '\377' |
		    dd of="$1" bs=1 seek="$3" conv=notrunc 2>/dev/null ;;
	noise)	awk -v seed="$SEED$3" 'BEGIN { srand(seed);
		    for (i = 0; i < 16; i++) printf "%c", int(rand() * 255) + 1 }' |
		    dd of="$1" bs=1 seek="$3" conv=notrunc 2>/dev/null ;;
	esac
}

# judge TOOL STATUS ERRFILE SAME(1/0) STRICT: prints same, changed,
# failed, or "bad: why".
judge() {
	if grep -q "Sanitizer\|runtime error:" "$3"; then
		echo "bad: a sanitizer's report"
	elif [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then
		echo "bad: timed out"
	elif [ "$2" -gt 128 ]; then
		echo "bad: killed by signal $(($2 - 128))"
	elif [ "$2" -eq 0 ]; then
		if [ "$4" = 1 ]; then echo same
		elif [ "$5" = 1 ]; then echo "bad: exit 0 with another answer"
		else echo changed
		fi
	elif [ "$2" -ne 1 ]; then
		echo "bad: exit status $2"
	elif ! head -1 "$3" | grep -q "^$1: "; then
		echo "bad: exit 1 without a message naming $1"
	elif [ "$(awk '{ if (length > m) m = length } END { print m + 0 }' "$3")" -gt 600 ]; then
		echo "bad: a message line longer than 600 bytes"
	else
		echo failed
	fi
}

t=0 bad_files=0
# campaign LABEL DIR-TO-COPY FILE-IN-IT TOOL STRICT [BASELINE]: BASELINE
# is ptquery's undamaged answer, BASE_QUERY unless given.
campaign() {
	label=$1 src=$2 rel=$3 tool=$4 strict=$5 base=${6:-$BASE_QUERY}
	test -f "$src/$rel" || {
		t=$((t + 1)) bad_files=$((bad_files + 1))
		echo "not ok $t - $label: $src/$rel is not there to damage"
		return
	}
	t=$((t + 1))
	same=0 changed=0 failed=0 bad=0 runs=0
	plan "$src/$rel" >plan.txt
	while read -r kind off; do
		runs=$((runs + 1))
		rm -rf m m.out
		cp -R "$src" m
		apply "m/$rel" "$kind" "$off"
		case $tool in
		ptdecode)
			timeout 60 ptdecode m >out 2>err; rc=$?
			[ $rc -eq 0 ] && [ "$(cksum <out)" = "$BASE_DECODE" ] &&
			    eq=1 || eq=0 ;;
		ptspans)
			timeout 60 ptspans -o m.out <"m/$rel" >/dev/null 2>err
			rc=$?
			eq=0
			[ $rc -eq 0 ] && [ "$(answer_query m.out)" = "$BASE_SPANS" ] &&
			    eq=1 ;;
		ptquery)
			{ timeout 60 ptquery m --kind hotpaths --format json &&
			    timeout 60 ptquery m --kind summary &&
			    timeout 60 ptquery m --kind gaps &&
			    timeout 60 ptquery m --kind threads; } >out 2>err
			rc=$?
			[ $rc -eq 0 ] && [ "$(cksum <out)" = "$base" ] &&
			    eq=1 || eq=0 ;;
		esac
		verdict=$(judge "$tool" "$rc" err "$eq" "$strict")
		case $verdict in
		same) same=$((same + 1)) ;;
		changed) changed=$((changed + 1)) ;;
		failed) failed=$((failed + 1)) ;;
		*)	bad=$((bad + 1))
			echo "# $label: $kind $off: $verdict (exit $rc)"
			sed 's/^/#   /' err | head -5 ;;
		esac
	done <plan.txt
	summary="$label: $runs runs: $same same, $changed changed, $failed failed clearly"
	if [ $bad -gt 0 ]; then
		bad_files=$((bad_files + 1))
		echo "not ok $t - $summary, $bad bad"
	else
		echo "ok $t - $summary"
	fi
}

# The block stream lives beside the snapshot: a directory of its own.
mkdir -p stream && cp blk stream/blk

campaign "snapshot perf.data" snap perf.data ptdecode 0
campaign "snapshot manifest.json" snap manifest.json ptdecode 0
campaign "block stream" stream blk ptspans 0
STRICT=${MUTATE_STRICT:-1}
campaign "analysis spans.jsonl.zst" an spans.jsonl.zst ptquery "$STRICT"
campaign "analysis spans.jsonl" plain spans.jsonl ptquery "$STRICT" \
    "$BASE_PLAIN"
campaign "analysis index.bin" an index.bin ptquery "$STRICT"
campaign "analysis manifest.json" an manifest.json ptquery "$STRICT"
campaign "analysis aggregates.bin" an aggregates.bin ptquery "$STRICT"
campaign "analysis gaps.jsonl" an gaps.jsonl ptquery "$STRICT"
campaign "analysis threads.jsonl" an threads.jsonl ptquery "$STRICT"
echo "1..$t"
[ $bad_files -eq 0 ]

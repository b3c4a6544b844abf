#!/bin/sh
# ptspans -j: the parallel engine writes the same analysis as the serial
# one (-j 1), byte for byte, on every kind of snapshot the span tests
# record: calls and tail calls, inlining, C++ exceptions and cold parts,
# signals, threads, forked processes, dlopen, a JIT region, a stripped
# program, and rings that wrapped.  Every file of the analysis is
# compared with the default chunks and with chunks of 3 blocks (every
# join falls inside the calls), the span lines on stdout with chunks of
# 1 and 64 blocks, with 2 and 4 workers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

FIX=$PTKIT_BUILD/tests/fixtures/spans

if ! command -v jq >/dev/null 2>&1; then
	test_skip "ptspans -j against -j 1" "jq missing"
	test_done
fi

FILES="spans.jsonl.zst inline.jsonl.zst gaps.jsonl threads.jsonl events.jsonl
index.bin manifest.json"

# same NAME [AUX] PROGRAM ARGS...: recorded, decoded, and spanned by the
# serial engine and the parallel one in several shapes; every file of
# the analyses and the span lines on stdout compared.
same() {
	name=$1
	shift
	aux=4M
	case $1 in [0-9]*[KM]) aux=$1; shift ;; esac
	d=$TEST_ROOT/$name
	mkdir -p "$d" &&
	ptrec --recorder emu -o "$d/snap" --aux-bytes "$aux" -- "$@" \
	    >"$d/path" 2>"$d/rec.err" &&
	ptdecode "$d/snap" >"$d/blocks" 2>"$d/decode.err" &&
	ptspans -j 1 -o "$d/j1" <"$d/blocks" >/dev/null &&
	ptspans -j 1 <"$d/blocks" >"$d/j1.stdout" &&
	test -s "$d/j1/spans.jsonl.zst" || return 1
	for shape in "4" "2 --chunk-blocks 3"; do
		# shellcheck disable=SC2086
		ptspans -j $shape -o "$d/jn" <"$d/blocks" >/dev/null || return 1
		for f in $FILES; do
			cmp "$d/j1/$f" "$d/jn/$f" || {
				echo "$name: -j $shape: $f differs" >&2
				return 1
			}
		done
		rm -rf "$d/jn"
	done
	for shape in "4 --chunk-blocks 1" "2 --chunk-blocks 64"; do
		# shellcheck disable=SC2086
		ptspans -j $shape <"$d/blocks" >"$d/jn.stdout" &&
		cmp "$d/j1.stdout" "$d/jn.stdout" || {
			echo "$name: -j $shape: span lines differ" >&2
			return 1
		}
	done
}

test_expect_success 'calls and tail calls (tree)' 'same tree "$FIX/tree" 12'
test_expect_success 'inlining and LTO' 'same lto "$FIX/lto" 6'
test_expect_success 'C++ (cxx)' 'same cxx "$FIX/cxx" 8'
test_expect_success 'exceptions caught in cold parts' 'same cxxcold "$FIX/cxxcold"'
test_expect_success 'signal handlers' 'same sig "$FIX/sig" 7'
test_expect_success 'threads' 'same threads "$FIX/threads" 4 20'
test_expect_success 'dlopen' 'same dl "$FIX/dl" 9'
test_expect_success 'a stripped program' 'same strip "$FIX/strip/tree" 5'
test_expect_success 'names' 'same names "$FIX/names"'
test_expect_success 'a ring that wrapped (64K)' 'same wrap "64K" "$FIX/tree" 1500'
test_expect_success 'a wrapped ring of a branchy program (16K)' '
	same branchy16k 16K "$EMU_FIX/branchy" 3 3000
'
test_expect_success 'forked processes' 'same forks "$EMU_FIX/forks"'
test_expect_success 'signals, many' 'same signals "$EMU_FIX/signals" 20000'
test_expect_success 'longjmp out of a signal handler' '
	same segvjmp "$EMU_FIX/segvjmp"
'
test_expect_success 'a static program with threads' '
	same join "$EMU_FIX/join"
'

# With 1-block chunks nearly every chunk must stand on the frames before
# it: most are applied, not rebuilt (or -j would be -j 1 in disguise).
test_expect_success 'most chunks are applied, not rebuilt' '
	PTKIT_SPANS_STATS=1 ptspans -j 2 --chunk-blocks 1 \
	    <"$TEST_ROOT/tree/blocks" >/dev/null 2>stats &&
	read -r _ chunks _ rebuilt _ <stats &&
	test "$chunks" -gt 1000 &&
	test "$((rebuilt * 10))" -lt "$chunks"
'

test_expect_success '-j 0 is refused' '
	must_exit 2 ptspans -j 0 <"$TEST_ROOT/tree/blocks" 2>err &&
	head -n 1 err >first &&
	test_eq "ptspans: option '"'"'-j'"'"': '"'"'0'"'"' is below the minimum 1" \
	    "$(cat first)"
'

test_done

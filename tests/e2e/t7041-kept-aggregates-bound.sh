#!/bin/sh
# aggregates.bin is bound to the index.bin it was made from: one copied
# from another analysis of as many spans (whose own checks all pass) is
# refused, said on stderr, and the walk answers with the analysis's own
# figures, whether the query answers totals without the index (summary,
# hotpaths) or opens the index first (hotpaths of a process).
# An aggregates.bin of the version before the binding is refused as
# another version.
. "$(dirname "$0")/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'kept aggregates bound to their index' 'jq missing'
	test_done
fi

GEN=$PTKIT_BUILD/bench/gen_analysis

test_expect_success 'aggregates.bin of another analysis of as many spans: refused' '
	"$GEN" a 3000 40 3 >/dev/null && "$GEN" b 3000 50 3 >/dev/null &&
	test_eq "$(jq .quality.spans a/manifest.json)" "$(jq .quality.spans b/manifest.json)" &&
	ptquery a --kind summary >want.sum 2>err && test ! -s err &&
	ptquery a --kind hotpaths --format json >want.hot 2>err && test ! -s err &&
	ptquery b --kind summary >other.sum 2>err && test ! -s err &&
	! cmp -s want.sum other.sum &&
	cp b/aggregates.bin a/aggregates.bin &&
	ptquery a --kind summary >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: made from another index.bin: totals found by walking every span instead" "$(cat err)" &&
	test_cmp want.sum out &&
	ptquery a --kind hotpaths --format json >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: made from another index.bin: totals found by walking every span instead" "$(cat err)" &&
	test_cmp want.hot out
'

test_expect_success 'and when ptquery opens the index first' '
	"$GEN" a 3000 40 3 >/dev/null && "$GEN" b 3000 50 3 >/dev/null &&
	pid=$(jq -s ".[0].pid" a/threads.jsonl) &&
	ptquery a --kind hotpaths --pid $pid >want 2>err && test ! -s err &&
	cp b/aggregates.bin a/aggregates.bin &&
	ptquery a --kind hotpaths --pid $pid >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: made from another index.bin: totals found by walking every span instead" "$(cat err)" &&
	test_cmp want out
'

test_expect_success 'an aggregates.bin of version 1: another version' '
	"$GEN" a 3000 40 3 >/dev/null &&
	ptquery a --kind summary >want 2>err && test ! -s err &&
	printf "\\001" | dd of=a/aggregates.bin bs=1 seek=8 conv=notrunc 2>/dev/null &&
	ptquery a --kind summary >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: version 1, this ptkit reads 2: totals found by walking every span instead" "$(cat err)" &&
	test_cmp want out
'

test_done

#!/bin/sh
# An uncompressed spans.jsonl (ptspans --no-compress) has no checksum of
# its own, unlike a zstd frame: the manifest keeps the XXH64 of its lines,
# and an index rebuilt from it is refused when they changed, where it
# would otherwise answer from the changed lines with exit 0.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
ptdecode "$TEST_ROOT/snap" >"$TEST_ROOT/blk" 2>/dev/null || exit 1

test_expect_success 'the manifest holds the lines checksum; a rebuild from them is whole' '
	ptspans --no-compress -o plain <"$TEST_ROOT/blk" >/dev/null &&
	jq -e ".spans_xxh64 | test(\"^0x[0-9a-f]{16}\$\")" plain/manifest.json &&
	ptspans -o zst <"$TEST_ROOT/blk" >/dev/null &&
	jq -e "has(\"spans_xxh64\") | not" zst/manifest.json &&
	ptquery plain --kind hotpaths --format json >want &&
	rm plain/index.bin plain/aggregates.bin &&
	ptquery plain --kind hotpaths --format json >out 2>err &&
	test_cmp want out &&
	test_eq "ptquery: warning: plain: index.bin missing: rebuilt from spans.jsonl" "$(grep index.bin err)"
'

test_expect_success 'one changed byte of spans.jsonl: the rebuild is refused' '
	ptspans --no-compress -o plain <"$TEST_ROOT/blk" >/dev/null &&
	cp -r plain changed &&
	sed "1s/\"fn\":\"/\"fn\":\"X/" plain/spans.jsonl >changed/spans.jsonl &&
	! cmp -s plain/spans.jsonl changed/spans.jsonl &&
	sum=$(jq -r .spans_xxh64 changed/manifest.json) &&
	must_exit 1 ptquery changed --kind hotpaths >out 2>err && test ! -s out &&
	test_eq "ptquery: changed: spans.jsonl does not match the checksum the manifest holds (spans_xxh64 $sum): it was changed or damaged (run ptspans again)" "$(cat err)"
'

test_done

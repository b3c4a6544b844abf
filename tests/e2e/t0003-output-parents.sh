#!/bin/sh
# -o DIR makes the directories leading to DIR, as mkdir -p would: a
# recording or an analysis is never lost to a missing parent after the
# work is done.
. "$(dirname "$0")/lib.sh"

test_expect_success 'ptrec -o makes missing parents' '
	ptrec -o a/b/c/snap -- /bin/true >out 2>err &&
	test_eq a/b/c/snap "$(cat out)" &&
	test -f a/b/c/snap/manifest.json
'

test_expect_success 'ptspans -o makes missing parents' '
	ptrec -o snap -- /bin/true >/dev/null 2>&1 &&
	ptdecode snap 2>/dev/null | ptspans -o x/y/derived/default >out &&
	test_eq x/y/derived/default "$(cat out)" &&
	test -f x/y/derived/default/spans.jsonl.zst
'

test_expect_success 'a file in the way is reported, nothing is left' '
	: >file &&
	ptrec -o snap2 -- /bin/true >/dev/null 2>&1 &&
	ptdecode snap2 2>/dev/null >blocks &&
	must_exit 1 ptspans -o file/sub/an <blocks >out 2>err &&
	test ! -s out &&
	grep -q "^ptspans: file/sub/an: file: not a directory$" err &&
	test_eq "" "$(ls -a | grep ptspans-)"
'

test_done

#!/bin/sh
# A store is its user's alone: a store, or an area of it, owned by another
# user is refused and said to be theirs (not "nothing was recorded into
# it yet"); an area readable by others is tightened to 0700; an area that
# is a link is refused; and a FIFO planted as a session record or lock
# does not hang a prune; a link planted in an analysis is refused.  (Changing an owner needs root: skipped, saying
# so, without it.)
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1

HINT="a store is its user's alone"

if [ "$(id -u)" = 0 ]; then
	test_expect_success 'a store owned by another user: refused, said so' '
		PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/snap" >/dev/null &&
		chown 4321 s &&
		must_exit 1 env PTKIT_STORE=$PWD/s ptmcp list >out 2>err &&
		echo "ptmcp: store: $PWD/s: owned by uid 4321, not by us: $HINT" >want &&
		test_cmp want err
	'
	test_expect_success 'an area owned by another user: refused, said so' '
		PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/snap" >/dev/null &&
		chown 4321 s/snapshots &&
		must_exit 1 env PTKIT_STORE=$PWD/s ptmcp list >out 2>err &&
		echo "ptmcp: store: $PWD/s/snapshots: owned by uid 4321, not by us: $HINT" >want &&
		test_cmp want err
	'
else
	test_skip 'a store owned by another user: refused, said so' \
	    'chown needs root'
	test_skip 'an area owned by another user: refused, said so' \
	    'chown needs root'
fi

test_expect_success 'areas readable by others are made 0700' '
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/snap" >/dev/null &&
	chmod 0755 s/snapshots s/sessions s/jobs &&
	PTKIT_STORE=$PWD/s ptmcp list >/dev/null &&
	test_eq "700 700 700 700" "$(stat -c %a s/snapshots s/reports s/sessions s/jobs | tr "\n" " " | sed "s/ $//")"
'

test_expect_success 'an area that is a link: refused' '
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/snap" >/dev/null &&
	mkdir elsewhere && rmdir s/reports && ln -s "$PWD/elsewhere" s/reports &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp list >out 2>err &&
	echo "ptmcp: store: $PWD/s/reports: not a directory of the store (a link?); refused" >want &&
	test_cmp want err
'

test_expect_success 'FIFOs as a session record and lock do not hang a prune' '
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/snap" >/dev/null &&
	mkfifo s/sessions/20260101T000000Z-0000000a.json \
	    s/sessions/20260101T000000Z-0000000a.lock &&
	PTKIT_STORE=$PWD/s timeout 10 ptmcp prune --max-count 0 >out 2>err &&
	test_eq "" "$(ls s/snapshots)"
'

test_expect_success 'derived/default/spans.jsonl -> /etc/passwd: a query refuses it' '
	id=$(PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/snap") &&
	PTKIT_STORE=$PWD/s ptmcp decode $id >/dev/null 2>&1 &&
	a=s/snapshots/$id/derived/default &&
	rm $a/spans.jsonl.zst $a/index.bin && ln -s /etc/passwd $a/spans.jsonl &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp query $id --kind summary \
	    >out 2>err &&
	echo "ptquery: $PWD/$a: spans.jsonl: leads outside the analysis directory" >want &&
	test_cmp want err &&
	! grep -q root out err
'

test_done

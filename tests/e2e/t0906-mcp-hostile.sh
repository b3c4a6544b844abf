#!/bin/sh
# ptmcp on a store with planted paths: import refuses a manifest whose
# members name files outside the snapshot; a snapshot's derived/ that is a
# link out of the store is refused before anything is written there; an
# analysis whose manifest names another snapshot still decodes its own.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap
ID=20260101T000000Z-00000001

"$MKSNAP" -o "$TEST_ROOT/$ID" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1

test_expect_success 'import: images[].archived through .. is refused' '
	cp -R "$TEST_ROOT/$ID" $ID &&
	jq ".images[0].archived = \"../../progs/fib\"" \
	    "$TEST_ROOT/$ID/manifest.json" >$ID/manifest.json &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp import $ID 2>err &&
	echo "ptmcp: $ID: $PWD/$ID/manifest.json: images[0].archived: not a path inside the snapshot directory (absolute, empty or through ..)" >want &&
	test_cmp want err &&
	test_eq "" "$(ls s/snapshots)"
'

test_expect_success 'decode: a derived/ linked out of the store is refused' '
	mkdir -p s/snapshots outside &&
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/$ID" >/dev/null &&
	ln -s "$PWD/outside" s/snapshots/$ID/derived &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp decode $ID >out 2>err &&
	echo "ptmcp: $ID: $PWD/s/snapshots/$ID/derived: not a directory of the snapshot (a link?); refused" >want &&
	test_cmp want err &&
	test_eq "" "$(ls outside)"
'

test_expect_success 'query: an analysis naming another snapshot decodes its own' '
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/$ID" >/dev/null &&
	PTKIT_STORE=$PWD/s ptmcp decode $ID >out 2>err &&
	a=s/snapshots/$ID/derived/default &&
	jq -c ".snapshot = \"$PWD/nowhere\"" $a/manifest.json >m &&
	mv m $a/manifest.json &&
	PTKIT_STORE=$PWD/s ptmcp query $ID --kind branches --function fib \
	    --format json >q.json 2>q.err &&
	test_eq "fib: 1 conditional branches" "$(jq -r .summary q.json)" &&
	test_eq 1 "$(jq .total_rows q.json)"
'

test_done

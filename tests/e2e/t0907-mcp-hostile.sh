#!/bin/sh
# ptmcp on a store with planted paths: import refuses a manifest whose
# members name files outside the snapshot; a snapshot's derived/ that is a
# link out of the store is refused before anything is written there; an
# analysis whose manifest names another snapshot still decodes its own.
# And two ptmcp processes on one store: decodes while another prunes
# everything it may; none fails but by finding its snapshot gone first.
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
	"$PTKIT_BUILD/tests/unit/helper_mseal" $a/manifest.json &&
	PTKIT_STORE=$PWD/s ptmcp query $ID --kind branches --function fib \
	    --format json >q.json 2>q.err &&
	jq -r .summary q.json | grep -q "^fib: 1 conditional branches; taken means the jump was taken (to target)" &&
	test_eq 1 "$(jq .total_rows q.json)"
'

test_expect_success 'show: a manifest.json linked out of the store is not shown' '
	PTKIT_STORE=$PWD/s ptmcp import "$TEST_ROOT/$ID" >/dev/null &&
	echo "{\"secret\": \"s3cr3t\"}" >secret.json &&
	rm s/snapshots/$ID/manifest.json &&
	ln -s "$PWD/secret.json" s/snapshots/$ID/manifest.json &&
	PTKIT_STORE=$PWD/s ptmcp show $ID >out 2>err &&
	test_eq null "$(jq -c .manifest out)" &&
	echo "ptmcp: $ID: manifest.json: leads outside the snapshot directory: its manifest shows as null" >want &&
	test_cmp want err &&
	! grep -q s3cr3t out err
'

# The pruner prunes everything it may once per line on its FIFO; each
# round starts a decode and, while it runs, sends one line.  In odd rounds
# the line goes once the decode's guard record is in sessions/ (or the
# decode is over): the prune runs under the guard and the decode must
# finish.  In even rounds it goes at once: the prune lands before the
# guard (the snapshot is gone, and the decode says so) or after it.
# Never in between: a decode that fails otherwise fails the test.
test_expect_success 'decodes racing a pruner: none fails under its guard' '
	{ mkdir -p s && mkfifo tok; } || exit 1
	(while read t; do
		PTKIT_STORE=$PWD/s ptmcp prune --max-count 0 >/dev/null 2>>prune.err
		echo pruned >>prunes
	done <tok) &
	exec 3>tok &&
	ok=0 gone=0 bad=0 i=0 &&
	while [ $i -lt 24 ]; do
		i=$((i + 1))
		id=$(PTKIT_STORE=$PWD/s ptmcp import --new-id "$TEST_ROOT/$ID" 2>imp.err) ||
		    { bad=$((bad + 1)); cat imp.err; continue; }
		PTKIT_STORE=$PWD/s ptmcp decode "$id" >out 2>err &
		pid=$!
		while [ $((i % 2)) = 1 ] && kill -0 $pid 2>/dev/null &&
		    [ -z "$(ls s/sessions)" ]; do
			:
		done
		echo go >&3
		if wait $pid; then
			test_eq "$PWD/s/snapshots/$id/derived/default" "$(cat out)" &&
			    ok=$((ok + 1)) || bad=$((bad + 1))
		elif [ $((i % 2)) = 0 ] &&
		    test_eq "ptmcp: $id: not in the store (removed before its decode could start)" "$(cat err)"; then
			gone=$((gone + 1))
		else
			bad=$((bad + 1)); cat err
		fi
	done
	exec 3>&- &&
	wait &&
	echo "# $ok decoded with a prune under way, $gone pruned first" &&
	test_eq 0 $bad &&
	test_eq 24 $((ok + gone)) &&
	test $ok -ge 12 &&
	test_eq 24 $(wc -l <prunes) &&
	test ! -s prune.err
'

test_done

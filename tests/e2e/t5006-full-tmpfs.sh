#!/bin/sh
# Every tool writing onto a nearly full tmpfs (one page, or four, left
# free): exit 1 with the path and the reason, and no partial output left
# looking whole (what a shell redirect made, the tool cannot remove: the
# message says how many bytes got out).  And the two tools t5003 does not
# send to /dev/full: ptspans's stdout, ptmcp's.  Mounting needs root: the
# tmpfs tests are skipped, saying so, where the mount is refused.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
SNAP=$TEST_ROOT/snap
(cd "$TEST_ROOT" && ptdecode snap 2>/dev/null >blk &&
    ptspans -o an <blk >/dev/null 2>&1) || exit 1

MNT=$TEST_ROOT/mnt
mkdir -p "$MNT"
if mount -t tmpfs -o size=16m,mode=0700 tmpfs "$MNT" 2>"$TEST_ROOT/mount.err"
then
	trap 'umount "$MNT" 2>/dev/null; test_cleanup_root' EXIT
	MOUNTED=1
else
	MOUNTED=0
	WHY="cannot mount a tmpfs here: $(head -1 "$TEST_ROOT/mount.err")"
fi

# fill FREE: the tmpfs filled up to FREE bytes left (whole pages).
fill() {
	rm -f "$MNT/fill" &&
	avail=$(df -B1 --output=avail "$MNT" | tail -1 | tr -d " ") &&
	head -c $((avail - $1)) /dev/zero >"$MNT/fill" &&
	test_eq "$1" "$(df -B1 --output=avail "$MNT" | tail -1 | tr -d " ")"
}

# Runs BODY as a test when the tmpfs is there, else counts it skipped.
tmpfs_test() {
	if [ $MOUNTED = 1 ]; then
		test_expect_success "$1" "$2"
		rm -rf "${MNT:?}"/*
	else
		test_skip "$1" "$WHY"
	fi
}

tmpfs_test 'ptdecode onto a full tmpfs: exit 1, how much got out' '
	fill 4096 &&
	must_exit 1 ptdecode "$SNAP" >"$MNT/blk" 2>err &&
	echo "ptdecode: stdout: write failed after 4096 bytes: No space left on device" >want &&
	test_cmp want err
'

tmpfs_test 'ptspans -o onto a full tmpfs: exit 1, nothing left' '
	fill 4096 &&
	must_exit 1 ptspans -o "$MNT/an" <"$TEST_ROOT/blk" >/dev/null 2>err &&
	echo "ptspans: $MNT/an: writing the analysis failed: No space left on device" >want &&
	test_cmp want err &&
	test_eq "fill" "$(ls -A "$MNT")"
'

tmpfs_test 'ptquery onto a full tmpfs: exit 1, and why' '
	fill 4096 &&
	must_exit 1 ptquery "$TEST_ROOT/an" --kind timeline --format json \
	    >"$MNT/q" 2>err &&
	echo "ptquery: stdout: write failed: No space left on device" >want &&
	test_cmp want err
'

tmpfs_test 'ptdiff onto a full tmpfs: trouble (2), and why' '
	fill 4096 &&
	must_exit 2 ptdiff "$TEST_ROOT/an" "$TEST_ROOT/an" --format json \
	    >"$MNT/d" 2>err &&
	echo "ptdiff: stdout: write failed: No space left on device" >want &&
	test_cmp want err
'

tmpfs_test 'ptrec -o onto a full tmpfs: exit 1, the file and why, nothing left' '
	fill 16384 &&
	must_exit 1 ptrec -o "$MNT/s" --recorder emu -- "$FIX/snap_work" \
	    >/dev/null 2>err &&
	grep "^ptrec:" err | sed "s/\.tmp-[A-Za-z0-9]*/.tmp-X/g" >got &&
	echo "ptrec: snapshot: image /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 not archived: $MNT/.s.tmp-X/images/.tmp-X: write: No space left on device" >want &&
	test_cmp want got &&
	test_eq "fill" "$(ls -A "$MNT")"
'

tmpfs_test 'ptmcp import into a full store: exit 1, what and why, nothing left' '
	PTKIT_STORE=$MNT/store ptmcp import "$SNAP" >/dev/null &&
	fill 4096 &&
	must_exit 1 env PTKIT_STORE=$MNT/store ptmcp import "$SNAP" 2>err &&
	grep -q "^ptmcp: $SNAP: copying $SNAP/.*: No space left on device$" err &&
	test_eq 1 "$(ls -A "$MNT/store/snapshots" | wc -l)"
'

tmpfs_test 'ptmcp decode in a full store: exit 1, ptspans says why, nothing left' '
	id=$(PTKIT_STORE=$MNT/store ptmcp import "$SNAP") &&
	fill 16384 &&
	must_exit 1 env PTKIT_STORE=$MNT/store ptmcp decode $id >out 2>err &&
	tail -1 err | sed "s/\.tmp-[A-Za-z0-9]*/.tmp-X/" >got &&
	echo "ptspans: $MNT/store/snapshots/$id/derived/.tmp-X/a: writing the analysis failed: No space left on device" >want &&
	test_cmp want got &&
	test_eq "" "$(find "$MNT/store/snapshots/$id/derived" "$MNT/store/sessions" -mindepth 1)"
'

test_expect_success 'ptspans -o with stdout on /dev/full: exit 1, the analysis kept' '
	must_exit 1 ptspans -o an <"$TEST_ROOT/blk" >/dev/full 2>err &&
	echo "ptspans: stdout: write failed: No space left on device" >want &&
	test_cmp want err &&
	test -s an/spans.jsonl.zst
'

test_expect_success 'ptmcp list on /dev/full: exit 1, and why' '
	PTKIT_STORE=$PWD/s ptmcp import "$SNAP" >/dev/null &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp list >/dev/full 2>err &&
	echo "ptmcp: stdout: write failed: No space left on device" >want &&
	test_cmp want err
'

test_done

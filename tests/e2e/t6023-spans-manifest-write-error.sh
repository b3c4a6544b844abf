#!/bin/sh
# ptspans says why the manifest could not be written: on a file system
# that fills up at manifest.json (a tmpfs just one page too small for the
# analysis, in a user namespace), the message names the file and carries
# the system's reason, never a bare "write failed"; and no analysis is
# left in place.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

if ! unshare -rm sh -c 'mount -t tmpfs -o size=4096 tmpfs .' 2>/dev/null; then
	test_skip "the manifest's write error" "no user namespaces for a tmpfs"
	test_done
fi

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/truth" -- "$FIX/snap_work" \
    >/dev/null 2>&1 &&
ptdecode "$TEST_ROOT/snap" >"$TEST_ROOT/blk" 2>/dev/null || exit 1

# spans_in PAGES: ptspans -o fs/an on a tmpfs of PAGES pages of 4 KiB,
# its stderr in err; its exit status (99: it failed and left fs/an).
spans_in() {
	unshare -rm sh -c 'mount -t tmpfs -o size=$(($1 * 4096)) tmpfs fs &&
	    ptspans -o fs/an <"$2" >/dev/null 2>err
	    rc=$?; test $rc -eq 0 || test ! -e fs/an || rc=99; exit $rc' \
	    sh "$1" "$TEST_ROOT/blk"
}

test_expect_success 'a full disk at manifest.json: said with its reason' '
	mkdir fs && pages=1 &&
	while :; do
		spans_in $pages
		rc=$? && test $rc -eq 0 && break
		test $rc -eq 1 && test $pages -lt 200 || return 1
		cp err last.err && pages=$((pages + 1))
	done &&
	test $pages -gt 1 &&
	sed "s|fs/an\.ptspans-[A-Za-z0-9]*/|fs/an.ptspans-X/|" last.err >got &&
	test_eq "ptspans: fs/an.ptspans-X/manifest.json: write failed: No space left on device" "$(cat got)"
'

test_done

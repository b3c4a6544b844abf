#!/bin/sh
# Faults and hostile snapshots: ptdecode's output cut by a full disk is
# exit 1 with the reason and the bytes that got out (a full disk is
# /dev/full for stdout; a nearly full one is RLIMIT_FSIZE, `ulimit -f`
# with SIGXFSZ ignored, since no tmpfs can be mounted unprivileged); so
# are ptspans -o, ptquery's and ptdiff's stdout; paths a manifest gives, and links
# planted in a snapshot, never lead a reader out of it, and an error
# about a file never quotes what is in it.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

# ulimit -f counts 512-byte blocks in sh: 4 is 2048 bytes.
limited() {
	(ulimit -f 4 && trap '' XFSZ && "$@")
}

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
SNAP=$TEST_ROOT/snap
ARCHIVED=$(jq -r '.images[0].archived' "$SNAP/manifest.json")

test_expect_success 'the whole stream is more than 2048 bytes' '
	ptdecode "$SNAP" >all.blk 2>/dev/null &&
	test "$(wc -c <all.blk)" -gt 2048
'

PERF_DECODER=--decoder=perf
command -v perf >/dev/null 2>&1 || PERF_DECODER=
for how in "" "-j1" "--decoder=native" "--format=jsonl" $PERF_DECODER; do
	test_expect_success "ptdecode $how to /dev/full: exit 1, why" "
		must_exit 1 ptdecode \"\$SNAP\" $how >/dev/full 2>err &&
		echo 'ptdecode: stdout: write failed after 0 bytes: No space left on device' >want &&
		test_cmp want err
	"
	test_expect_success "ptdecode $how on a file size limit: exit 1, cut said" "
		must_exit 1 limited ptdecode \"\$SNAP\" $how >out 2>err &&
		echo 'ptdecode: stdout: write failed after 2048 bytes: File too large' >want &&
		test_cmp want err &&
		test_eq 2048 \$(wc -c <out)
	"
done

test_expect_success 'ptspans -o on a file size limit: exit 1, nothing left' '
	ptdecode "$SNAP" >blk 2>/dev/null &&
	must_exit 1 limited ptspans -o an <blk 2>err &&
	echo "ptspans: an: writing the analysis failed: File too large" >want &&
	test_cmp want err &&
	test_eq "blk err want" "$(ls | tr "\n" " " | sed "s/ $//")"
'

test_expect_success 'ptdiff to /dev/full: trouble (2), and why' '
	ptdecode "$SNAP" 2>/dev/null | ptspans -o an 2>/dev/null &&
	must_exit 2 ptdiff an an >/dev/full 2>err &&
	echo "ptdiff: stdout: write failed: No space left on device" >want &&
	test_cmp want err
'

test_expect_success 'ptquery to /dev/full and on a limit: exit 1, and why' '
	ptdecode "$SNAP" 2>/dev/null | ptspans -o an 2>/dev/null &&
	must_exit 1 ptquery an --kind timeline --format json >/dev/full 2>err &&
	echo "ptquery: stdout: write failed: No space left on device" >want &&
	test_cmp want err &&
	must_exit 1 limited ptquery an --kind timeline --format json >out 2>err &&
	echo "ptquery: stdout: write failed: File too large" >want &&
	test_cmp want err &&
	must_exit 1 ptquery an --kind summary >/dev/full 2>err &&
	echo "ptquery: stdout: write failed: No space left on device" >want &&
	test_cmp want err
'

test_expect_success 'ptrec to /dev/full: the snapshot is kept, exit 1, and why' '
	must_exit 1 ptrec -o r -- "$PTKIT_BUILD/tests/fixtures/emu/branchy" \
	    >/dev/full 2>err &&
	echo "ptrec: stdout: write failed: No space left on device" >want &&
	tail -n 1 err >last &&
	test_cmp want last &&
	test -f r/manifest.json
'

test_expect_success 'images[].archived through ..: refused, naming it' '
	cp -R "$SNAP" s &&
	jq ".images[0].archived = \"../../progs/fib\"" "$SNAP/manifest.json" \
	    >s/manifest.json &&
	must_exit 1 ptdecode s >/dev/null 2>err &&
	echo "ptdecode: s: $PWD/s/manifest.json: images[0].archived: not a path inside the snapshot directory (absolute, empty or through ..)" >want &&
	test_cmp want err
'

test_expect_success 'jit_maps[].archived absolute: refused, naming it' '
	cp -R "$SNAP" s &&
	jq ".jit_maps = [{pid: 1, path: \"/tmp/perf-1.map\", archived: \"/etc/passwd\"}]" \
	    "$SNAP/manifest.json" >s/manifest.json &&
	must_exit 1 ptdecode s >/dev/null 2>err &&
	echo "ptdecode: s: $PWD/s/manifest.json: jit_maps[0].archived: not a path inside the snapshot directory (absolute, empty or through ..)" >want &&
	test_cmp want err
'

test_expect_success 'an archived image linked out of the snapshot: refused' '
	cp -R "$SNAP" s &&
	rm "s/$ARCHIVED" &&
	ln -s "$FIX/snap_work" "s/$ARCHIVED" &&
	must_exit 1 ptdecode s >/dev/null 2>err &&
	echo "ptdecode: s: $ARCHIVED: leads outside the snapshot directory" >want &&
	test_cmp want err
'

test_expect_success 'manifest.json linked to /etc/passwd: refused, unread' '
	cp -R "$SNAP" s &&
	rm s/manifest.json &&
	ln -s /etc/passwd s/manifest.json &&
	must_exit 1 ptdecode s >/dev/null 2>err &&
	echo "ptdecode: s: manifest.json: leads outside the snapshot directory" >want &&
	test_cmp want err
'

test_expect_success 'a manifest that is not JSON: its words are not quoted' '
	cp -R "$SNAP" s &&
	printf "root:x:0:0:secret\n" >s/manifest.json &&
	must_exit 1 ptdecode s >/dev/null 2>err &&
	echo "ptdecode: s: $PWD/s/manifest.json: line 1 column 4: '"'"'['"'"' or '"'"'{'"'"' expected" >want &&
	test_cmp want err
'

test_done

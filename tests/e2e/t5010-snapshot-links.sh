#!/bin/sh
# Links in a snapshot's images: every archived image (and its debuginfo)
# is opened beneath the snapshot and read through that one descriptor,
# by ptdecode (libipt through the descriptor) and again by ptspans and
# ptquery, which get the image's path from the block stream or the
# manifest: a link planted there, a directory swapped for a link, or a
# link swapped in after ptdecode checked the image, is refused with a
# message naming the file, never followed; an untouched snapshot decodes
# as before.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
SNAP=$TEST_ROOT/snap
# the program's own image: images/.build-id/xx/rest/elf
ARCHIVED=$(jq -r '.images[0].archived' "$SNAP/manifest.json")
REFUSED="a symbolic link on the way; links are not followed inside the snapshot directory"

# quality DIR: the analysis's image counts and named spans.
quality() {
	jq -r '.quality | "images \(.images) missing \(.images_missing) spans \(.spans) unnamed \(.spans_unnamed)"' \
	    "$1/manifest.json"
}

test_expect_success 'untouched: decoded and named as before' '
	cp -R "$SNAP" s &&
	ptdecode s >blk 2>err &&
	ptspans -o an <blk 2>err.spans &&
	test_eq "images 4 missing 0 spans 73 unnamed 0" "$(quality an)" &&
	test_eq "" "$(cat err.spans)" &&
	test_eq "ptdecode: s: 1 process, 1 thread, 478 blocks, 2585 instructions, 0 gaps (0 decode errors, 0 unknown image, 0 overflows), 0 of 744 trace bytes skipped" \
	    "$(head -n 1 err)"
'

test_expect_success 'an archived image linked to a copy inside: refused, named' '
	cp -R "$SNAP" s &&
	mv "s/$ARCHIVED" "s/$ARCHIVED.real" &&
	ln -s elf.real "s/$ARCHIVED" &&
	must_exit 1 ptdecode s >out 2>err &&
	echo "ptdecode: s: $ARCHIVED: $REFUSED" >want &&
	test_cmp want err &&
	test_eq 0 "$(wc -c <out)"
'

test_expect_success 'the images directory swapped for a link: refused, named' '
	cp -R "$SNAP" s &&
	mv s/images s/images.real && ln -s images.real s/images &&
	must_exit 1 ptdecode s >out 2>err &&
	echo "ptdecode: s: $ARCHIVED: $REFUSED" >want &&
	test_cmp want err
'

# The race ptdecode cannot see: its block stream names the images by
# path, and the directory is swapped between the decode and the analysis.
for to in inside outside; do
	why=$REFUSED
	test $to = inside || why="leads outside the snapshot directory"
	test_expect_success "swapped after the decode, a link $to: ptspans does not follow it" "
		cp -R \"\$SNAP\" s && ptdecode s >blk 2>/dev/null &&
		if test $to = inside; then
			mv s/images s/images.real && ln -s images.real s/images
		else
			mv s/images elsewhere && ln -s \"\$PWD/elsewhere\" s/images
		fi &&
		ptspans -o an <blk 2>err &&
		echo \"ptspans: warning: \$PWD/s: \$ARCHIVED: $why (3 files of the snapshot refused; their code or names count as missing)\" >want &&
		test_cmp want err &&
		test_eq 'images 4 missing 3 spans 65 unnamed 65' \"\$(quality an)\"
	"
done

test_expect_success 'swapped after the analysis: ptquery reads no image through it' '
	cp -R "$SNAP" s && ptdecode s 2>/dev/null | ptspans -o an 2>/dev/null &&
	ptquery an --kind images >before &&
	test_eq 4 "$(grep -c "archived=yes symbols=\.\(symtab\|dynsym\)" before)" &&
	mv s/images s/images.real && ln -s images.real s/images &&
	ptquery an --kind images >after &&
	test_eq 4 "$(grep -c "archived=yes symbols=unreadable" after)" &&
	must_exit 1 ptquery an --kind source --function fib >/dev/null 2>err &&
	test_eq "ptquery: an: no source position of '"'"'fib'"'"' in the snapshot'"'"'s images: is the image archived? see --kind images" \
	    "$(cat err)"
'

# Separate debuginfo archived as a link: ptdecode needs none, but the
# code map's symbol tables look for it beneath the snapshot: refused,
# counted and said by ptspans and by ptquery's decoded kinds (the names
# then come from the system's debuginfo, when it has the same).
DEBUG=$(jq -r '[.images[] | select(.debug != null)][0].debug' "$SNAP/manifest.json")
test_expect_success 'archived debuginfo a link: ptspans and ptquery insns say it was refused' '
	cp -R "$SNAP" s &&
	mv "s/$DEBUG" "s/$DEBUG.real" && ln -s debug.real "s/$DEBUG" &&
	ptdecode s >blk 2>/dev/null &&
	ptspans -o an <blk 2>err &&
	echo "ptspans: warning: $PWD/s: $DEBUG: $REFUSED (1 file of the snapshot refused; their code or names count as missing)" >want &&
	test_cmp want err &&
	tid=$(jq -r ".threads[0].tid" s/manifest.json) &&
	ptquery an --kind insns --tid "$tid" --limit 1 >out 2>err &&
	sed "s/^ptspans:/ptquery:/" want >want.q &&
	test_cmp want.q err &&
	test_eq 1 "$(grep -c "^time_ns=" out)" &&
	ptquery an --kind branches --function fib >out 2>err &&
	test_cmp want.q err
'

# --decoder perf: perf script opens the snapshot's files by path and
# follows links, so it is not run while one of the files the manifest
# archives is a link (a stand-in perf notes whether it ran).
test_expect_success '--decoder perf: not run while an archived file is a link' '
	mkdir fakebin &&
	printf "#!/bin/sh\necho ran >>\"%s\"\nexit 3\n" "$PWD/ran" >fakebin/perf &&
	chmod +x fakebin/perf &&
	cp -R "$SNAP" s &&
	{ PATH=$PWD/fakebin:$PATH ptdecode --decoder perf s >/dev/null 2>&1; true; } &&
	test_eq ran "$(cat ran)" && rm ran &&
	mv "s/$DEBUG" "s/$DEBUG.real" && ln -s debug.real "s/$DEBUG" &&
	(PATH=$PWD/fakebin:$PATH && must_exit 1 ptdecode --decoder perf s) >out 2>err &&
	echo "ptdecode: s: $DEBUG: $REFUSED (perf script would follow it: not run)" >want &&
	test_cmp want err &&
	test ! -e ran && test_eq 0 "$(wc -c <out)"
'

# The snapshot's own manifest, swapped for a link after the decode: the
# file it leads to (another recorder's, to show it was not read) is
# neither followed nor quoted, and what goes without it is said.
plant_manifest() {
	jq '.recorder.backend = "planted" | .trigger.kind = "planted"' \
	    s/manifest.json >planted.json &&
	rm s/manifest.json && ln -s "$PWD/planted.json" s/manifest.json
}
OUTSIDE="manifest.json: leads outside the snapshot directory"

test_expect_success 'manifest.json swapped for a link after the decode: ptspans does not follow it' '
	cp -R "$SNAP" s && ptdecode s >blk 2>/dev/null &&
	plant_manifest &&
	ptspans -o an <blk 2>err &&
	echo "ptspans: warning: $PWD/s: $OUTSIDE (the analysis records neither the capture'"'"'s times nor its trigger)" >want &&
	test_cmp want err &&
	test_eq "null" "$(jq -c .capture an/manifest.json)" &&
	test_eq 0 "$(grep -c planted an/events.jsonl)"
'

test_expect_success 'manifest.json swapped for a link after the analysis: ptquery summary does not follow it' '
	cp -R "$SNAP" s && ptdecode s 2>/dev/null | ptspans -o an >/dev/null &&
	ptquery an --kind summary >before &&
	test_eq 1 "$(grep -c "recorder=synthetic$" before)" &&
	test_eq 1 "$(grep -c " trigger=exit " before)" &&
	plant_manifest &&
	ptquery an --kind summary >after 2>err &&
	echo "ptquery: warning: $PWD/s: $OUTSIDE (the snapshot'"'"'s trigger, recorder and clock are not shown)" >want &&
	test_cmp want err &&
	test_eq 1 "$(grep -c "recorder=-$" after)" &&
	test_eq 0 "$(grep -c planted after)" &&
	test_eq 0 "$(grep -c "^clock:" after)"
'

test_done

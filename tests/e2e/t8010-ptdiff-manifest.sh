#!/bin/sh
# ptdiff and the snapshot's manifest.json behind each analysis: opened
# beneath the snapshot and read through that one descriptor.  A manifest
# swapped for a FIFO, a link (to a FIFO inside, to /etc/passwd) or text
# that is not JSON is refused, never waited on and never quoted: the
# comparison is answered without the snapshot's context, and a warning
# says what was left out.  A manifest simply absent is not said.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
SNAP=$TEST_ROOT/snap
LEFT_OUT="the snapshot's context (target, build id, clock) is left out"

# analyse: s, a copy of the snapshot, and its analysis an.
analyse() {
	cp -R "$SNAP" s && ptdecode s 2>/dev/null | ptspans -o an >/dev/null &&
	test_eq "$PWD/s" "$(jq -r .snapshot an/manifest.json)"
}

# verdict FILE: the comparison's check lines for the snapshot's context.
context() {
	grep "^check .* what=\(executable build-id\|recorder\)$" "$1"
}

test_expect_success 'untouched: the context is compared, nothing said' '
	analyse &&
	ptdiff an an >out 2>err &&
	test ! -s err &&
	test_eq 2 "$(context out | grep -c "^check same a=[0-9a-z]")" &&
	test_eq 1 "$(context out | grep -c "a=synthetic")" &&
	tail -n 1 out | grep -q "^summary rows=[0-9]* changed=0 crossed=0 ignored=0$"
'

# plant HOW: replaces s/manifest.json; WHY is beneath's reason.
for how in fifo link-fifo link-passwd not-json; do
	case $how in
	fifo) plant="mkfifo s/manifest.json"
		why="not a regular file (a FIFO, a device?); refused" ;;
	link-fifo) plant="mkfifo s/fifo && ln -s fifo s/manifest.json"
		why="a symbolic link on the way; links are not followed inside the snapshot directory" ;;
	link-passwd) plant="ln -s /etc/passwd s/manifest.json"
		why="leads outside the snapshot directory" ;;
	not-json) plant="echo \"root secret-word\" >s/manifest.json"
		why="line 1 column 4: '[' or '{' expected" ;;
	esac
	test_expect_success "manifest.json: $how: answered, without the context, and said" "
		analyse &&
		rm s/manifest.json && $plant &&
		timeout 10 ptdiff an an >out 2>err; rc=\$? &&
		test_eq 0 \$rc &&
		echo \"ptdiff: warning: \$PWD/s: manifest.json: \$why: \$LEFT_OUT\" >want &&
		test_cmp want err &&
		test_eq 0 \"\$(context out | grep -c synthetic)\" &&
		tail -n 1 out | grep -q \"^summary rows=[0-9]* changed=0 crossed=0 ignored=0\$\" &&
		! grep -q \"root\|secret-word\" out err
	"
done

test_expect_success 'one side refused: said once, for that side' '
	analyse &&
	cp -R s s2 && ptdecode s2 2>/dev/null | ptspans -o an2 >/dev/null &&
	rm s2/manifest.json && mkfifo s2/manifest.json &&
	timeout 10 ptdiff an an2 >out 2>err &&
	echo "ptdiff: warning: $PWD/s2: manifest.json: not a regular file (a FIFO, a device?); refused: $LEFT_OUT" >want &&
	test_cmp want err
'

test_expect_success 'manifest.json absent: answered without the context, nothing said' '
	analyse &&
	rm s/manifest.json &&
	ptdiff an an >out 2>err &&
	test ! -s err &&
	test_eq 0 "$(context out | grep -c synthetic)"
'

test_done

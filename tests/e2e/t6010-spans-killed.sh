#!/bin/sh
# ptspans -o killed by SIGKILL leaves DIR.ptspans-XXXXXX beside DIR; the
# next ptspans -o DIR removes it (its owner is dead), and leaves alone one
# whose owner still runs and those of other destinations.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
ptdecode "$TEST_ROOT/snap" >"$TEST_ROOT/blk" 2>/dev/null || exit 1

# ptspans -o $1 reading half the block stream from a FIFO held open
# (fd 4); its pid in $1.pid.
held_spans() {
	mkfifo "$1.in" &&
	{ ptspans -o "$1" <"$1.in" >/dev/null 2>&1 & } &&
	echo $! >"$1.pid" &&
	exec 4>"$1.in" &&
	head -c $(($(wc -c <"$TEST_ROOT/blk") / 2)) "$TEST_ROOT/blk" >&4
}

test_expect_success 'a killed ptspans -o: its temporary directory is swept' '
	held_spans an &&
	held=$(cat an.pid) &&
	k=0 && until ls -d an.ptspans-* >/dev/null 2>&1 || [ $k -gt 50 ]; do
		k=$((k + 1)); sleep 0.1
	done &&
	test_eq 1 "$(ls -d an.ptspans-* | wc -l)" &&
	kill -9 $held && exec 4>&- &&
	{ wait $held 2>/dev/null || :; } &&
	test_eq 1 "$(ls -d an.ptspans-* | wc -l)" &&
	held_spans other &&
	k=0 && until ls -d other.ptspans-* >/dev/null 2>&1 || [ $k -gt 50 ]; do
		k=$((k + 1)); sleep 0.1
	done &&
	ptspans -o an <"$TEST_ROOT/blk" >out 2>err &&
	test_eq "an" "$(cat out)" &&
	test_eq "" "$(ls -d an.ptspans-* 2>/dev/null)" &&
	test_eq 1 "$(ls -d other.ptspans-* | wc -l)" &&
	test -s an/spans.jsonl.zst &&
	ls -A an >files &&
	! grep -q owner files &&
	kill -9 $(cat other.pid) && exec 4>&-
'

test_done

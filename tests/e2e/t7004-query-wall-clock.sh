#!/bin/sh
# ptquery --wall-clock: every span's start and end on the wall clock, so
# that a span lines up with the program's own log lines.  The walllog
# fixture reads CLOCK_REALTIME right before and right after its one call
# of marked(); the span must lie between the two.
. "$(dirname "$0")/lib.sh"

WALLLOG=$PTKIT_BUILD/tests/fixtures/emu/walllog

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'wall-clock times' 'jq missing'
	test_done
fi

test_expect_success 'record, decode and span the fixture' '
	ptrec --recorder emu -o "$TEST_ROOT/snap" -- "$WALLLOG" >/dev/null \
	    2>rec.err &&
	ptdecode "$TEST_ROOT/snap" 2>/dev/null |
	    ptspans -o "$TEST_ROOT/an" >/dev/null &&
	grep -q "^marked 1\$" "$TEST_ROOT/snap/output.log"
'

# iso NS: ns since the epoch as ptquery writes wall times.
iso() {
	printf '%s.%09dZ' "$(date -u -d "@$(($1 / 1000000000))" +%Y-%m-%dT%H:%M:%S)" \
	    $(($1 % 1000000000))
}

# in_order A B C...: each string no later than the next (ISO times compare
# as strings).
in_order() {
	printf '%s\n' "$@" | LC_ALL=C sort -c
}

logged() {
	awk -v w="$1" '$1 == "wall" && $2 == w { print $3 }' \
	    "$TEST_ROOT/snap/output.log"
}

test_expect_success 'marked lies between the wall times the program logged' '
	before=$(iso "$(logged before)") && after=$(iso "$(logged after)") &&
	ptquery "$TEST_ROOT/an" --kind timeline --function marked --wall-clock \
	    --format json >out &&
	test_eq 1 "$(jq ".rows | length" out)" &&
	s=$(jq -r ".rows[0].start_wall" out) && e=$(jq -r ".rows[0].end_wall" out) &&
	in_order "$before" "$s" "$e" "$after" &&
	test "$s" != "$e"
'

test_expect_success 'csv carries the columns; without the option it does not' '
	ptquery "$TEST_ROOT/an" --kind timeline --function marked --wall-clock \
	    --format csv >out &&
	head -n 1 out | grep -q ",name,start_wall,end_wall," &&
	grep -q ",marked,20[0-9-]*T[0-9:]*\.[0-9]\{9\}Z,20[0-9-]*T[0-9:]*\.[0-9]\{9\}Z," out &&
	ptquery "$TEST_ROOT/an" --kind timeline --function marked \
	    --format csv >out &&
	! grep -q start_wall out
'

test_expect_success 'chrome: the wall time of ts 0, the capture start' '
	ptquery "$TEST_ROOT/an" --kind timeline --function marked \
	    --format chrome >out &&
	w=$(jq -r ".otherData.wall_clock_at_ts_0" out) &&
	in_order "$w" "$(iso "$(logged before)")"
'

test_expect_success 'other kinds refuse it' '
	must_exit 2 ptquery "$TEST_ROOT/an" --kind hotpaths --wall-clock 2>err &&
	test_eq "ptquery: --wall-clock applies to --kind timeline and at only" \
	    "$(head -n 1 err)"
'

test_done

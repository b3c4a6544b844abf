#!/bin/sh
# The perf.data reader on files `perf record -e cpu-clock` writes here and
# now, with and without -z (zstd-compressed records).  Where perf record
# is refused (no perf, perf_event_paranoid, a container), the tests skip
# with the reason; tests/unit/t_perfdata keeps the reader tested on the
# captured files in tests/data/perf-record/.
. "$(dirname "$0")/lib.sh"

PDINFO=$PTKIT_BUILD/tests/unit/helper_pdinfo

# record OUT [-z]: perf record of a short shell loop; 0 when perf agreed.
record() {
	out=$1
	shift
	perf record -q "$@" -e cpu-clock -o "$out" -- \
	    sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' \
	    >/dev/null 2>record.err
}

reason=
if ! command -v perf >/dev/null 2>&1; then
	reason="perf is not installed"
elif ! (cd "$TEST_ROOT" && record probe.data); then
	reason="perf record refused: $(head -1 "$TEST_ROOT/record.err")"
fi

for z in "" -z; do
	title="reader parses perf record -e cpu-clock ${z:-(uncompressed)}"
	if [ -n "$reason" ]; then
		test_skip "$title" "$reason"
		continue
	fi
	test_expect_success "$title" '
		record p.data '"$z"' &&
		"$PDINFO" p.data >info &&
		samples=$(perf report -D -i p.data 2>/dev/null |
		    grep -c "PERF_RECORD_SAMPLE(") &&
		test "$samples" -gt 0 &&
		grep -qx "samples $samples" info &&
		mmaps=$(perf report -D -i p.data 2>/dev/null |
		    grep -c "PERF_RECORD_MMAP2\? ") &&
		grep -qx "mmaps $mmaps" info &&
		grep -qx "comms 2" info &&
		grep -qx "unknown_records 0" info &&
		grep -qx "warnings 0" info &&
		if test "'"$z"'" = -z; then
			! grep -qx "compressed 0" info
		else
			grep -qx "compressed 0" info
		fi
	'
done

test_done

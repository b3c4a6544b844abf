# emu-lib.sh: helpers for the emu recorder's end-to-end tests, sourced
# after lib.sh.
#
# The emu recorder's parity check: perf's branch list of a snapshot equals the
# plugin's ground truth (--emu-truth) over the window the ring kept.
# Both are normalised to "TID FROM TO" lines (hex): perf's "tr strt"
# lines (tracing resumes: no branch of the program) are dropped, a
# syscall is "FROM 0" on both sides, and so is an asynchronous stop.

EMU_FIX=$PTKIT_BUILD/tests/fixtures/emu

# emu_span NAME ARGS...: ptrec ARGS (its options, --, the program) under
# emu into NAME/snap, decoded and spanned into NAME/an, which holds
# aggregates.bin.
emu_span() {
	span_name=$1
	shift
	mkdir -p "$span_name" &&
	ptrec --recorder emu -o "$span_name/snap" "$@" >/dev/null \
	    2>"$span_name/rec.err" &&
	ptdecode "$span_name/snap" 2>"$span_name/dec.err" |
	    ptspans -o "$span_name/an" >/dev/null &&
	test -s "$span_name/an/aggregates.bin"
}

# emu_perf_branches SNAPSHOT: perf script --itrace=b, normalised.
emu_perf_branches() {
	perf --buildid-dir "$1/images" script -i "$1/perf.data" --itrace=b \
	    -F tid,ip,addr,flags 2>perf.err |
	awk '$2 == "tr" && $3 == "strt" && $4 != "tr" { next }
	     { print $1, $(NF-2), $NF }'
}

# emu_truth_branches TRUTH [SNAPSHOT_SEQ]: the ground truth, normalised,
# cut at the marker of snapshot SEQ when given.
emu_truth_branches() {
	awk -v seq="${2:-}" '
	    $1 == "thread" { tid = $2; cut = 0; next }
	    $1 == "snapshot" { if ($2 == seq) cut = 1; next }
	    cut { next }
	    { print tid, $1, $2 }' "$1"
}

# emu_check_parity SNAPSHOT TRUTH [SEQ]: for every thread, perf's list
# equals the truth's last lines (all of them when the ring did not wrap).
# Prints "tid N" per thread compared; fails on the first difference.
emu_check_parity() {
	emu_perf_branches "$1" >perf.lines &&
	emu_truth_branches "$2" "${3:-}" >truth.lines &&
	test -s perf.lines &&
	for tid in $(awk '{print $1}' perf.lines | sort -u); do
		grep "^$tid " perf.lines >perf.$tid &&
		n=$(wc -l <perf.$tid) &&
		grep "^$tid " truth.lines | tail -n "$n" >truth.$tid &&
		# The diff on stderr: callers keep stdout (the counts).
		test_cmp truth.$tid perf.$tid >&2 &&
		echo "tid $tid $n" || return 1
	done
}

#!/bin/sh
# The snapshot format (man ptkit-snapshot.5) against stock perf: snapshots built by
# tests/snap/mksnap from encoded PT streams of the snap_* fixtures must
# decode with `perf --buildid-dir SNAP/images script -i SNAP/perf.data`,
# --itrace=b giving exactly the encoded branch list and --itrace=cr the
# calls and returns, with every symbol resolved from the archived images.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

# decode SNAP ITRACE FIELDS [OPTION...]: perf script over a snapshot, as
# the man page says; stderr to perf.err.
decode() {
	decode_snap=$1 decode_itrace=$2 decode_fields=$3
	shift 3
	perf --buildid-dir "$decode_snap/images" script \
	    -i "$decode_snap/perf.data" --itrace="$decode_itrace" \
	    -F "$decode_fields" "$@" 2>>perf.err
}

# check_branches SNAP EXPECTED [lost]: --itrace=b and --itrace=cr equal
# the encoded path (tid, from, to), and non-empty, and perf reports no
# decoding error (--itrace=e) but, with "lost", the one for a wrapped ring.
check_branches() {
	awk '{print $1, $3, $4}' "$2" >want.b &&
	awk '$2=="call"||$2=="ret"||$2=="strt"||$2=="end" {print $1, $3, $4}' \
	    "$2" >want.cr &&
	decode "$1" b tid,ip,addr | awk '{print $1, $2, $4}' >got.b &&
	decode "$1" cr tid,ip,addr | awk '{print $1, $2, $4}' >got.cr &&
	decode "$1" e tid,ip,sym >got.e &&
	test -s want.b && test -s want.cr &&
	test_cmp want.b got.b &&
	test_cmp want.cr got.cr &&
	if test "${3:-}" = lost; then
		# the AUX record's TRUNCATED flag: perf says data was lost
		test "$(wc -l <got.e)" = 1 &&
		grep -q "code 8: Lost trace data" got.e
	else
		test_cmp /dev/null got.e
	fi
}

# unknown_syms SNAP: lines of --itrace=cr with an unresolved symbol, other
# than the trace start (which comes from address 0).
unknown_syms() {
	decode "$1" cr ip,sym,dso,addr,flags | grep -F '[unknown]' |
	    grep -v 'tr strt' || :
}

if ! command -v perf >/dev/null 2>&1; then
	test_skip 'snapshots decode with perf' 'perf is not installed'
	test_done
fi

test_expect_success 'static fixture: perf decodes the encoded path exactly' '
	cp "$FIX/snap_work.static" prog &&
	"$MKSNAP" -o snap -e want -- ./prog 2>mk.err &&
	rm prog &&
	check_branches snap want &&
	test "$(wc -l <got.b)" -ge 150 &&
	unknown_syms snap >unknown &&
	test_cmp /dev/null unknown &&
	# timed decoding: one TSC tick per instruction, a TSC packet every
	# 64 instructions, TSC = perf ns, first instruction at 1000 s
	n=$(sed -n "s/.*: \([0-9]*\) instructions$/\1/p" mk.err) &&
	decode snap b time --ns | tr -d " :" >times &&
	test "$(head -1 times)" = 1000.000000000 &&
	test "$(tail -1 times)" = "$(printf "1000.%09d" \
	    $(( (n - 1) / 64 * 64 )))" &&
	sort -c times &&
	decode snap cr ip,sym,addr >syms &&
	grep -q "ptk_work => .* fib$" syms &&
	grep -q "classify => .* ptk_work$" syms &&
	grep -q "=> .* cmp_int$" syms
'

test_expect_success 'static fixture, return compression and PSB+ every 128 bytes' '
	"$MKSNAP" -p 128 -s -o snap -e want -- "$FIX/snap_work.static" 5 x \
	    2>mk.err &&
	check_branches snap want &&
	"$PTKIT_BUILD/tests/unit/helper_pdinfo" snap/perf.data >info &&
	grep -qx "queue 0 tid [0-9]* cpu -1 chunks 2 bytes [0-9]*" info
'

test_expect_success 'wrapped ring: perf syncs at the first PSB it keeps' '
	# a 300-byte ring keeps the stream from mid-packet on; what the wrap
	# lost is dropped from the expected branches
	"$MKSNAP" -p 128 -w 300 -o snap -e want -- "$FIX/snap_work.static" \
	    2>mk.err &&
	check_branches snap want lost &&
	test "$(wc -l <want)" -ge 20 &&
	! grep -q " strt " want &&
	test "$(jq -r ".threads[0].wrapped" snap/manifest.json)" = true &&
	test "$(jq -r ".threads[0].bytes_kept" snap/manifest.json)" = 300 &&
	"$PTKIT_BUILD/tests/unit/helper_pdinfo" snap/perf.data >info &&
	grep -qx "queue 0 tid [0-9]* cpu -1 chunks 1 bytes 304" info
'

test_expect_success 'dynamic fixture: libc and ld.so resolved from images/' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work" 2>mk.err &&
	check_branches snap want &&
	decode snap cr ip,sym,addr >syms &&
	grep -q "ptk_work => .* strlen@plt$" syms &&
	grep -q "=> .* _dl_fixup$" syms &&
	grep -q "msort_with_tmp.* => .* cmp_int$" syms &&
	unknown_syms snap >unknown &&
	# libc calls a few of its own PLT stubs, which have no name; they
	# are the only unresolved symbols, and they are counted here
	echo "# unnamed libc PLT targets: $(wc -l <unknown)" &&
	! grep -v "\[unknown\] (/[^ ]*/libc\.so\.6)\$" unknown
'

test_expect_success 'two threads, noretcomp: one queue per thread, both decode' '
	"$MKSNAP" -n -o snap -e want -- "$FIX/snap_threads" 2>mk.err &&
	check_branches snap want &&
	test "$(cut -d" " -f1 want | sort -u | wc -l)" = 2 &&
	"$PTKIT_BUILD/tests/unit/helper_pdinfo" snap/perf.data >info &&
	grep -qx "queues 2" info &&
	grep -qx "comms 2" info &&
	unknown_syms snap >unknown &&
	test_cmp /dev/null unknown
'

test_expect_success 'snapshot layout: manifest maps every mapped image' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work" 2>mk.err &&
	test -f snap/manifest.json && test -f snap/perf.data &&
	test -f snap/output.log &&
	test "$(jq -r .format_version snap/manifest.json)" = 1 &&
	jq -r .id snap/manifest.json |
	    grep -qx "[0-9]\{8\}T[0-9]\{6\}Z-[0-9a-f]\{8\}" &&
	jq -r ".images[] | [.path, .archived, (.build_id // \"-\")] | @tsv" \
	    snap/manifest.json >images &&
	grep -q "^$FIX/snap_work	" images &&
	grep -q "/libc\.so\.6	" images &&
	grep -q "/ld-linux-x86-64\.so\.2	" images &&
	grep -q "^\[vdso\]	images/\.build-id/[0-9a-f]*/[0-9a-f]*/vdso	" images &&
	while IFS="	" read -r path archived id; do
		test -f "snap/$archived" || return 1
		case $id in
		-) ;;
		*) test "$archived" = "images/.build-id/$(echo "$id" |
		    cut -c1-2)/$(echo "$id" | cut -c3-)/$(basename "$archived")" ||
		    return 1 ;;
		esac
	done <images &&
	test "$(cat snap/output.log)" = "$("$FIX/snap_work")" &&
	test "$(jq -r .target.state snap/manifest.json)" = exited &&
	test "$(jq -r ".threads | length" snap/manifest.json)" = 1 &&
	test "$(jq -r ".threads[0].bytes_kept" snap/manifest.json)" -gt 100 &&
	! ls -a . | grep -q "\.tmp-"
'

test_expect_success 'separate debuginfo of libc is archived by build-id' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work" 2>mk.err &&
	libc_id=$(jq -r ".images[] | select(.path | endswith(\"/libc.so.6\")) |
	    .build_id" snap/manifest.json) &&
	dbg=/usr/lib/debug/.build-id/$(echo "$libc_id" | cut -c1-2)/$(echo "$libc_id" | cut -c3-).debug &&
	if test -f "$dbg"; then
		cmp "$dbg" "snap/images/.build-id/$(echo "$libc_id" |
		    cut -c1-2)/$(echo "$libc_id" | cut -c3-)/debug"
	else
		echo "# libc6-dbg not installed: no debuginfo to archive"
	fi
'

test_done

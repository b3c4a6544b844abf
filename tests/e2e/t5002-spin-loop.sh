#!/bin/sh
# ptdecode in a loop of direct branches: neither decoder walks it for
# ever.  The snapshot is mksnap's of the static fixture with its trace
# replaced (tests/unit/t_ptdec_spin, same length) by: tracing enabled at
# abort's `hlt; jmp` loop (what a program spinning in `for (;;);` runs: a
# jump that needs no trace), a TIP the loop never asks for, padding, then
# PSB+ at the loop and tracing off there.  Each ptdecode runs under
# timeout(1); the records are exactly: the enable, 65536 blocks of the
# loop, a decode_error GAP saying why at the TIP, the disable from the
# next PSB; the fast decoder's are the native decoder's byte for byte
# (it hands the interval to libipt), at -j1 and -j2 one PSB a chunk.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
PATCH=$PTKIT_BUILD/tests/unit/t_ptdec_spin
FIX=$PTKIT_BUILD/tests/fixtures/snap/snap_work.static

if ! test -x "$PATCH" || ! test -x "$MKSNAP"; then
	test_skip 'ptdecode in a loop of direct branches' \
	    't_ptdec_spin or mksnap not built (make check builds them)'
	test_done
fi
for tool in jq objdump timeout; do
	if ! command -v $tool >/dev/null 2>&1; then
		test_skip 'ptdecode in a loop of direct branches' "no $tool"
		test_done
	fi
done

# The address of the first `hlt` that a `jmp` right after it goes back to.
loop=$(objdump -d --no-show-raw-insn "$FIX" | awk '
	$2 == "hlt" { h = $1; sub(":", "", h); next }
	$2 == "jmp" && $3 == h { print h; exit }
	{ h = "" }')

test_expect_success 'the fixture has a loop of direct branches' '
	test -n "$loop" &&
	echo "# hlt; jmp at 0x$loop"
'

# decode DECODER OUT OPTIONS...: ptdecode under a watchdog.
decode() {
	d=$1 out=$2
	shift 2
	timeout 60 ptdecode --decoder "$d" "$@" snap >"$out" 2>"$out.err" ||
	    { echo "ptdecode --decoder $d $*: exit $? (124: it spins)"; \
	    return 1; }
}

test_expect_success 'native: 65536 blocks of the loop, a GAP, then on' '
	"$MKSNAP" -o snap -e want -- "$FIX" 2>mk.err &&
	offs=$("$PATCH" snap/perf.data "$loop") &&
	tip=${offs% *} psb=${offs#* } &&
	jmp=$(printf %x $((0x$loop + 1))) &&
	decode native n.jsonl --format jsonl &&
	{
		echo "{\"type\":\"event\",\"kind\":\"enabled\",\"ip\":\"0x$loop\",\"arg\":0}"
		echo "65536 x {\"type\":\"block\",\"ip\":\"0x$loop\",\"end_ip\":\"0x$jmp\",\"ninsn\":2,\"class\":\"jump\",\"mode\":\"64\"}"
		echo "{\"type\":\"gap\",\"cause\":\"decode_error\",\"ip\":\"0x$jmp\",\"offset\":$tip,\"bytes_skipped\":$((psb - tip)),\"error\":0,\"text\":\"no trace for 65536 blocks: a loop of direct branches\"}"
		echo "{\"type\":\"event\",\"kind\":\"disabled\",\"ip\":\"0x$loop\",\"reason\":\"sync\"}"
	} >want &&
	jq -c "select(.type == \"block\" or .type == \"event\" or
	    .type == \"gap\") | del(.tid, .time)" n.jsonl | uniq -c |
	    sed -e "s/^ *1 //" -e "s/^ *\([0-9]*\) /\1 x /" >got &&
	test_cmp want got &&
	test_eq "2 1 1 65536 131072" "$(jq -r "select(.type == \"end\") |
	    \"\(.psbs) \(.gaps) \(.decode_errors) \(.blocks) \(.insns)\"" \
	    n.jsonl)" &&
	grep -q ": 1 process, 1 thread, 65536 blocks, 131072 instructions, 1 gaps (1 decode errors, 0 unknown image, 0 overflows), $((psb - tip)) of [0-9]* trace bytes skipped$" \
	    n.jsonl.err
'

test_expect_success 'fast == native, byte for byte; the interval went to libipt' '
	"$MKSNAP" -o snap -e want -- "$FIX" 2>mk.err &&
	"$PATCH" snap/perf.data "$loop" >/dev/null &&
	decode native n.blk -j1 &&
	size=$(wc -c <n.blk) &&
	for opts in "-j1" "-j2 --chunk-size 1"; do
		decode fast f.blk $opts &&
		cmp -l n.blk f.blk >diff
		test $? -le 1 &&
		# the header names the decoder (0 native, 1 fast), END counts
		# the fallback
		printf "%s 0 1\n" 49 $((size - 3)) >want.diff &&
		awk "{ print \$1, \$2, \$3 }" diff >got.diff &&
		test_cmp want.diff got.diff &&
		grep -q "fast decoder: 1 of 2 PSB intervals handed to libipt" \
		    f.blk.err || return 1
	done &&
	decode native n.jsonl --format jsonl &&
	decode fast f.jsonl --format jsonl &&
	sed -e 1d -e "s/,\"fallbacks\":[01]}/}/" n.jsonl >n.norm &&
	sed -e 1d -e "s/,\"fallbacks\":[01]}/}/" f.jsonl >f.norm &&
	test_cmp n.norm f.norm
'

test_done

#!/bin/sh
# ptdecode --decoder fast (ptdec_fast): on one emu snapshot of every fixture
# the e2e tests record, and of Debian's gzip and python3, the fast
# decoder's records equal the native (libipt) decoder's, record by record:
# blocks, instruction counts, times, events, gaps, END counters; only the
# header's decoder field and END's fallbacks may differ.  Compared as JSON
# Lines with -j1 (the first differing record is shown), and byte for byte
# as binary block streams with -j2 over 4K chunks and over one PSB interval
# a chunk; the stderr summaries too.  On the fixtures the fast decoder
# hands no PSB interval to libipt (fallbacks 0), but for those listed in
# FALLBACK_KNOWN (shown as TAP diagnostics until the walker covers them).
. "$(dirname "$0")/lib.sh"

EMU_FIX=$PTKIT_BUILD/tests/fixtures/emu
SPANS_FIX=$PTKIT_BUILD/tests/fixtures/spans
DEMO=$PTKIT_BUILD/fixtures/demo

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'fast decoder parity' 'jq is missing'
	test_done
fi
if ! test -x "$EMU_FIX/branchy" || ! ptrec --doctor >/dev/null 2>&1; then
	test_skip 'fast decoder parity' 'no emu recorder here'
	test_done
fi

# Lines a passing test wants shown as TAP diagnostics.
DIAG=$TEST_ROOT/diag

show_diag() {
	if test -s "$DIAG"; then
		sed 's/^/# /' "$DIAG"
		rm -f "$DIAG"
	fi
}

# norm: a JSON Lines block stream without what two decoders may differ
# in: the header's decoder and END's fallbacks.
norm() {
	sed -e '1s/"decoder":"[a-z]*",//' \
	    -e '/^{"type":"end",/s/,"fallbacks":[0-9]*//' "$1"
}

# first_diff A B: the first record where two normalised streams differ,
# with the record before it.
first_diff() {
	line=$(cmp "$1" "$2" | sed -n 's/.* line \([0-9]*\)$/\1/p')
	if test -z "$line"; then
		echo "one stream is a prefix of the other:" \
		    "$(wc -l <"$1") and $(wc -l <"$2") records"
		return
	fi
	echo "first differing record: line $line"
	test "$line" -gt 1 && echo "  before: $(sed -n "$((line - 1))p" "$1")"
	echo "  native: $(sed -n "${line}p" "$1")"
	echo "  fast:   $(sed -n "${line}p" "$2")"
}

# same_records NATIVE FAST WHAT: equal records (headers and fallbacks
# aside).  The raw streams are compared past the header first (the usual
# case, fallbacks 0), normalised only when that fails.  The headers must
# differ in the decoder only.
same_records() {
	IFS= read -r hn <"$1" && IFS= read -r hf <"$2" &&
	if cmp -s -i "$((${#hn} + 1)):$((${#hf} + 1))" "$1" "$2"; then
		:
	else
		norm "$1" >"$1.norm" && norm "$2" >"$2.norm" &&
		if ! cmp -s "$1.norm" "$2.norm"; then
			echo "$3: records differ from the native decoder's"
			first_diff "$1.norm" "$2.norm"
			return 1
		fi
	fi &&
	test_eq "native ${hn%%\"decoder\":*}${hn#*\"decoder\":\"native\",}" \
	    "native ${hf%%\"decoder\":*}${hf#*\"decoder\":\"fast\",}"
}

# end_counts JSONL MANIFEST: "THREADS ENDS PSBS FALLBACKS" where THREADS is
# the manifest's, the rest from the END records; FALLBACKS is "absent"
# when no END has the counter.
end_counts() {
	grep '^{"type":"end",' "$1" |
	    jq -r -s --slurpfile m "$2" '"\($m[0].threads | length) \(length) \(map(.psbs) | add) \(if all(.[]; has("fallbacks") | not) then "absent" else map(.fallbacks // 0) | add end)"'
}

# Fixtures where the fast decoder is known to hand intervals to libipt:
# shown, not failed, until it walks them.  None now: every
# fixture is walked without libipt.
FALLBACK_KNOWN=${PTKIT_FAST_FALLBACK_KNOWN-}

# check_fallbacks ERR NAME KIND: $fb (from end_counts) is 0 on a fixture
# unless the fixture is known to fall back, or END has no counter yet;
# the stderr summary says the same number.
check_fallbacks() {
	said=$(sed -n 's/.*: \([0-9][0-9]*\) \(of [0-9][0-9]* \)\{0,1\}\(PSB \)\{0,1\}intervals\{0,1\} handed to libipt.*/\1/p' "$1") &&
	if test "$fb" = absent; then
		echo "$2: END has no fallbacks counter yet: not checked" >>"$DIAG"
		return 0
	fi &&
	if test -n "$said"; then
		test_eq "$fb" "$said" || return 1
	fi &&
	case " $FALLBACK_KNOWN " in *" $2 "*) known=1 ;; *) known=0 ;; esac &&
	if test "$3" = system || test $known = 1; then
		echo "$2: $fb of $psbs PSB intervals handed to libipt" >>"$DIAG"
	else
		test_eq "$2: 0 fallbacks" "$2: $fb fallbacks"
	fi
}

# same_binary SNAP WHAT OPTIONS...: the binary block stream of the fast
# decoder with OPTIONS equals n.blk (the native one) byte for byte but for
# the header's decoder (native 0, fast 1).  Where it does not, the JSON
# Lines say which record differs (or that only fallbacks do).
same_binary() {
	snap=$1 what=$2
	shift 2
	ptdecode --decoder fast "$@" "$snap" >f.blk 2>/dev/null &&
	cmp -l n.blk f.blk >bin.diff
	test $? -le 1 || return 1
	if { read -r at a b && ! read -r more; } <bin.diff &&
	    test "$a $b" = "0 1"; then
		return 0
	fi
	ptdecode --decoder fast "$@" --format jsonl "$snap" >fb.jsonl \
	    2>/dev/null &&
	same_records n.jsonl fb.jsonl "$what" &&
	if test "$fb" = 0; then
		echo "$what: binary streams differ, JSON Lines do not:"
		head -n 5 bin.diff
		return 1
	fi
}

# fast_parity SNAP NAME KIND [MIN_BLOCKS]: the fast decoder's records
# equal the native decoder's: as JSON Lines with -j1, as binary streams
# with -j2 over 4K chunks and over one PSB interval a chunk.  KIND is
# fixture (no fallbacks allowed) or system (fallbacks shown).
fast_parity() {
	ptdecode --decoder native -j1 --format jsonl "$1" >n.jsonl 2>n.err &&
	ptdecode --decoder fast -j1 --format jsonl "$1" >f1.jsonl 2>f1.err &&
	IFS= read -r hf <f1.jsonl &&
	case $hf in
	'{"type":"header","version":1,"decoder":"fast",'*) ;;
	*) echo "$2: not the fast decoder's header"; return 1 ;;
	esac &&
	nb=$(grep -c '^{"type":"block",' n.jsonl) &&
	test "$nb" -ge "${4:-1000}" &&
	same_records n.jsonl f1.jsonl "$2: fast -j1" &&
	counts=$(end_counts f1.jsonl "$1/manifest.json") &&
	set -- "$1" "$2" "$3" $counts &&
	threads=$4 ends=$5 psbs=$6 fb=$7 &&
	test_eq "$2: $threads threads" "$2: $ends threads" &&
	grep -v 'intervals* handed to libipt' f1.err >f1.err.n &&
	test_cmp n.err f1.err.n &&
	check_fallbacks f1.err "$2" "$3" &&
	ptdecode --decoder native -j1 "$1" >n.blk 2>/dev/null &&
	same_binary "$1" "$2: fast -j2 --chunk-size 4K" -j2 --chunk-size 4K &&
	same_binary "$1" "$2: fast -j2 --chunk-size 1" -j2 --chunk-size 1 &&
	echo "$2: $nb blocks equal" &&
	rm -f ./*.jsonl ./*.norm ./*.blk
}

# fast_case NAME[:MIN_BLOCKS] PTREC_OPTIONS... -- PROGRAM ARGS...: one
# test: record (words without quoting needs), compare.
fast_case() {
	name=${1%%:*}
	min=1000
	case $1 in *:*) min=${1#*:} ;; esac
	shift
	test_expect_success "$name: fast decoder equals native" "
		ptrec --recorder emu -o snap $* >path 2>rec.err &&
		fast_parity snap '$name' fixture $min
	"
	show_diag
}

# The emu recorder's fixtures (t4000-t4002, t5000).
fast_case branchy --aux-bytes 4M -- "$EMU_FIX/branchy" 3 2000
fast_case branchy.static --aux-bytes 4M -- "$EMU_FIX/branchy.static" 3 2000
fast_case emu-threads --aux-bytes 4M -- "$EMU_FIX/threads"
fast_case signals --aux-bytes 4M -- "$EMU_FIX/signals" 20000
fast_case crash -- "$EMU_FIX/crash"
fast_case segvjmp -- "$EMU_FIX/segvjmp"
fast_case stopind -- "$EMU_FIX/stopind"
fast_case ring-16K --aux-bytes 16K -- "$EMU_FIX/branchy.static" 3 3000
fast_case timing-low --timing low -- "$EMU_FIX/branchy" 2 500
fast_case timing-high --timing high -- "$EMU_FIX/branchy" 2 500
fast_case filter:300 --filter dispatch -- "$EMU_FIX/branchy" 1 300
fast_case trigger-symbol --trigger-symbol round_mark --trigger-hits 2 \
    -- "$EMU_FIX/branchy" 3 500
fast_case threads-trigger --trigger-symbol g1 --trigger-hits 3000 \
    -- "$EMU_FIX/threads"

# ptspans' fixtures (t6000): recursion, tail calls and longjmp (tree), C++
# exceptions and templates, a signal handler, 2 and 8 threads, dlopen, a
# stripped binary, LTO, JIT code, a wrapped ring; and the demo (t7001).
fast_case tree -- "$SPANS_FIX/tree" 12
fast_case tree-ring-64K --aux-bytes 64K -- "$SPANS_FIX/tree" 1500
fast_case cxx -- "$SPANS_FIX/cxx" 8
fast_case sig -- "$SPANS_FIX/sig" 7
fast_case threads-2 -- "$SPANS_FIX/threads" 2 20
fast_case threads-8 -- "$SPANS_FIX/threads" 8 20
fast_case dl -- "$SPANS_FIX/dl" 9
fast_case stripped -- "$SPANS_FIX/strip/tree" 5
fast_case lto -- "$SPANS_FIX/lto" 6
fast_case jit -- "$SPANS_FIX/jit" 3 rwx rm
if test -x "$DEMO"; then
	fast_case demo -- "$DEMO"
fi

# A --from/--to window decodes only its PSB intervals: the same with both.
test_expect_success 'a time window: fast equals native' '
	ptrec --recorder emu -o snap --aux-bytes 4M -- "$EMU_FIX/branchy" 3 2000 \
	    >path 2>rec.err &&
	ptdecode --format jsonl snap >all.jsonl 2>/dev/null &&
	grep "^{\"type\":\"block\"," all.jsonl | jq -r .time | sort -n -u >t &&
	n=$(wc -l <t) &&
	lo=$(sed -n "$((n / 3))p" t) && hi=$(sed -n "$((n / 2))p" t) &&
	for j in 1 2; do
		ptdecode --decoder native --format jsonl --from "$lo" --to "$hi" \
		    snap >n.jsonl 2>/dev/null &&
		ptdecode --decoder fast -j$j --chunk-size 4K --format jsonl \
		    --from "$lo" --to "$hi" snap >f.jsonl 2>/dev/null &&
		test "$(grep -c "^{\"type\":\"block\"," n.jsonl)" -gt 1000 &&
		test "$(grep -c "^{\"type\":\"block\"," n.jsonl)" -lt \
		    "$(grep -c "^{\"type\":\"block\"," all.jsonl)" &&
		same_records n.jsonl f.jsonl "window -j$j" || return 1
	done
'

# Debian's own programs (not a pyenv shim, which emu cannot run), with
# rings that wrap (t4003).  Fallbacks are allowed here, and shown.
GZIP=/bin/gzip
PY=/usr/bin/python3
if test -x $GZIP; then
	test_expect_success 'gzip: fast decoder equals native' '
		head -c 40000 $GZIP >in &&
		ptrec --recorder emu -o snap --aux-bytes 128K \
		    -- $GZIP -c in >path 2>rec.err &&
		jq -e ".threads[0].wrapped == true" snap/manifest.json &&
		fast_parity snap gzip system 100000
	'
	show_diag
else
	test_skip 'gzip: fast decoder equals native' "$GZIP missing"
fi
if test -x $PY; then
	test_expect_success 'python3: fast decoder equals native' '
		ptrec --recorder emu -o snap --aux-bytes 256K \
		    -- $PY -S -c "print(sum(range(1000)))" >path 2>rec.err &&
		grep -q "^499500\$" snap/output.log &&
		jq -e ".threads[0].wrapped == true" snap/manifest.json &&
		fast_parity snap python3 system 300000
	'
	show_diag
else
	test_skip 'python3: fast decoder equals native' "$PY missing"
fi

# The comparison itself can fail: a changed instruction count, a dropped
# event, a changed gap, fallbacks where none may be, a binary difference
# the JSON Lines do not show are each caught, at the right record.
test_expect_success 'the comparison sees a one-field difference' '
	ptrec --recorder emu -o snap --aux-bytes 16K \
	    -- "$EMU_FIX/branchy.static" 2 3000 >path 2>rec.err &&
	ptdecode --decoder native --format jsonl snap >n.jsonl 2>/dev/null &&
	ptdecode --decoder fast --format jsonl snap >f.jsonl 2>/dev/null &&
	same_records n.jsonl f.jsonl same &&
	line=$(grep -n "^{\"type\":\"block\"," f.jsonl | sed -n 500p | cut -d: -f1) &&
	sed "${line}s/\"ninsn\":\([0-9]*\)/\"ninsn\":1\1/" f.jsonl >g.jsonl &&
	! cmp -s f.jsonl g.jsonl &&
	! same_records n.jsonl g.jsonl insns >out &&
	grep -q "^first differing record: line $line\$" out &&
	line=$(grep -n "^{\"type\":\"event\"," f.jsonl | sed -n 2p | cut -d: -f1) &&
	sed "${line}d" f.jsonl >g.jsonl &&
	! same_records n.jsonl g.jsonl event >out &&
	grep -q "^first differing record: line $line\$" out &&
	line=$(grep -n "^{\"type\":\"gap\"," f.jsonl | sed -n 1p | cut -d: -f1) &&
	sed "${line}s/\"bytes_skipped\":\([0-9]*\)/\"bytes_skipped\":1\1/" \
	    f.jsonl >g.jsonl &&
	! cmp -s f.jsonl g.jsonl &&
	! same_records n.jsonl g.jsonl gap >out &&
	grep -q "^first differing record: line $line\$" out &&
	sed "/^{\"type\":\"end\",/s/\"fallbacks\":[0-9]*/\"fallbacks\":7/" \
	    f.jsonl >g.jsonl &&
	! cmp -s f.jsonl g.jsonl &&
	same_records n.jsonl g.jsonl fallbacks &&
	set -- $(end_counts g.jsonl snap/manifest.json) &&
	test_eq "1 1 7" "$1 $2 $4" &&
	DIAG=$PWD/diag fb=7 psbs=$3 FALLBACK_KNOWN="other filter" &&
	! check_fallbacks /dev/null fix fixture &&
	check_fallbacks /dev/null filter fixture &&
	grep -q "^filter: 7 of $3 PSB intervals handed to libipt\$" diag &&
	echo "ptdecode: snap: fast decoder: 5 of 9 PSB intervals handed to libipt" >e.err &&
	! check_fallbacks e.err filter fixture &&
	sed "s/,\"fallbacks\":[0-9]*//" f.jsonl >g.jsonl &&
	set -- $(end_counts g.jsonl snap/manifest.json) &&
	test_eq absent "$4" &&
	ptdecode --decoder native snap >n.blk 2>/dev/null &&
	fb=0 &&
	same_binary snap binary -j2 --chunk-size 1 &&
	printf x | dd of=n.blk bs=1 seek=$(($(wc -c <n.blk) - 3)) \
	    conv=notrunc 2>/dev/null &&
	! same_binary snap binary -j2 --chunk-size 1 >out &&
	grep -q "^binary: binary streams differ, JSON Lines do not:" out
'
test_done

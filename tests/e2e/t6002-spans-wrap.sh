#!/bin/sh
# ptspans on a ring that wrapped: the frames open when the kept trace
# began start at the history's first instant (not at 0), are incomplete
# and stay out of the self-time ranking unless --incomplete asks; the
# thread's coverage is the time of its history not in gaps.  Judged by
# perf's own decode of the same snapshot (instructions per symbol) and
# by the same program recorded with a ring that did not wrap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

if ! command -v perf >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1
then
	test_skip "ptspans on a wrapped ring" "perf or jq missing"
	test_done
fi

W=$TEST_ROOT/wrap
U=$TEST_ROOT/full

# record DIR AUX: branchy recorded, decoded and spanned into DIR/an.
record() {
	mkdir -p "$1" &&
	ptrec --recorder emu -o "$1/snap" --aux-bytes "$2" \
	    -- "$EMU_FIX/branchy" 3 3000 >"$1/path" 2>"$1/rec.err" &&
	ptdecode "$1/snap" >"$1/blocks" 2>"$1/decode.err" &&
	ptspans -o "$1/an" <"$1/blocks" >"$1/out"
}

test_expect_success 'a 16K ring wraps, a 4M ring does not' '
	record "$W" 16K && record "$U" 4M &&
	jq -e ".quality.wrapped_threads == 1" "$W/an/manifest.json" &&
	jq -e ".quality.wrapped_threads == 0" "$U/an/manifest.json" &&
	grep -q "^round 3 " "$W/snap/output.log"
'

test_expect_success 'spans open at the ring start begin at its first instant' '
	first=$(jq ".threads[0].first_ns" "$W/an/manifest.json") &&
	last=$(jq ".threads[0].last_ns" "$W/an/manifest.json") &&
	test "$first" -gt 0 &&
	jq -s -e --argjson f "$first" "map(select(.cause == \"ring_start\"))
	    | length == 1 and .[0].end_ns == \$f" "$W/an/gaps.jsonl" &&
	spans_jsonl "$W/an" | jq -s -e --argjson f "$first" --argjson l "$last" "
	    (map(select(.start == \"ring_start\")) | length > 0 and
	     all(.start_ns == \$f)) and
	    all(.start_ns >= \$f and .end_ns <= \$l)"
'

test_expect_success 'coverage is the history not in gaps, not 0' '
	jq -s "map(select(.cause != \"ring_start\") | .dur_ns) | add" \
	    "$W/an/gaps.jsonl" >gap_ns &&
	jq -e --argjson g "$(cat gap_ns)" ".threads[0] |
	    .gap_ns == \$g and
	    .coverage == (.last_ns - .first_ns - \$g) / (.last_ns - .first_ns)
	    and .coverage > 0" "$W/an/manifest.json" &&
	jq "(.threads[0].last_ns - .threads[0].first_ns - .threads[0].gap_ns)" \
	    "$W/an/manifest.json" >covered &&
	ptquery "$W/an" --kind summary --format json >sum.json &&
	jq -e --argjson c "$(cat covered)" ".threads[0].covered_ns == \$c" \
	    sum.json &&
	ptquery "$W/an" --kind summary >sum.txt &&
	grep -q " covered_ns=$(cat covered) " sum.txt &&
	# Unwrapped, the ring start is not there and the formula is the same.
	jq -e ".threads[0] | .coverage > 0 and .coverage <= 1" \
	    "$U/an/manifest.json"
'

# perf's instructions per symbol of the fixture's own code, its PLT
# stubs aside: ptspans counts a stub's instructions to its target, perf
# names them name@plt, [unknown] (.plt.got) or _init (.plt follows it).
cat >"$TEST_ROOT/perf-insns.awk" <<'EOF'
$3 ~ /\/branchy\)$/ && $2 !~ /@plt$/ && $2 != "[unknown]" &&
    $2 != "_init" { n[$2]++ }
END { for (s in n) print s, n[s] }
EOF

test_expect_success 'with --incomplete, self_insns equal perf per function' '
	perf --buildid-dir "$W/snap/images" script -i "$W/snap/perf.data" \
	    --itrace=i1i -F ip,sym,dso 2>perf.err |
	awk -f "$TEST_ROOT/perf-insns.awk" | sort >perf.counts &&
	test -s perf.counts &&
	ptquery "$W/an" --kind hotpaths --incomplete --format json \
	    --limit 1000 >hot.json 2>hot.err &&
	test ! -s hot.err &&
	jq -r ".rows[] | select(.module | endswith(\"/branchy\")) |
	    select(.self_insns > 0) | \"\(.name) \(.self_insns)\"" hot.json |
	sort >ours.counts &&
	test_cmp perf.counts ours.counts &&
	ptquery "$W/an" --kind hotpaths --incomplete --sort self_insns \
	    --format json --limit 1 >top.json &&
	sort -k2,2nr perf.counts | head -n 1 | cut -d" " -f1 >perf.top &&
	jq -r ".rows[0].name" top.json >ours.top &&
	test_cmp perf.top ours.top
'

test_expect_success 'incomplete spans stay out of the ranking, and it says so' '
	# Functions whose every span is incomplete (main, its callers).
	spans_jsonl "$W/an" | jq -s -r "group_by(.fn)[] | select(all(.start == \"ring_start\" or
	    .start == \"gap\")) | .[0].fn" >incomplete.fns &&
	grep -q -x main incomplete.fns &&
	n=$(spans_jsonl "$W/an" | jq -s "map(select(.start == \"ring_start\" or .start == \"gap\"))
	    | length") &&
	test "$n" -gt 0 &&
	ns=$(spans_jsonl "$W/an" | jq -s "map(select(.start == \"ring_start\" or .start == \"gap\")
	    | .self_ns) | add") &&
	ptquery "$W/an" --kind hotpaths --sort self_insns --format json \
	    --limit 1000 >hot.json 2>hot.err &&
	echo "ptquery: warning: $W/an: $n incomplete spans (begun before the history the analysis holds) left out of the ranking: --incomplete counts them" >want.err &&
	test_cmp want.err hot.err &&
	jq -e --argjson n "$n" ".summary | endswith(\"($n incomplete spans, $ns ns of self time, left out)\")" \
	    hot.json &&
	# The top: perf top function once the incomplete spans own
	# instructions are taken off.
	perf --buildid-dir "$W/snap/images" script -i "$W/snap/perf.data" \
	    --itrace=i1i -F ip,sym,dso 2>perf.err |
	awk -f "$TEST_ROOT/perf-insns.awk" | sort >perf.counts &&
	spans_jsonl "$W/an" | jq -r "select(.start == \"ring_start\" or .start == \"gap\") |
	    \"\(.fn) \(.self_insns)\"" >incomplete.insns &&
	awk "NR == FNR { left[\$1] += \$2; next }
	    { print \$1, \$2 - left[\$1] }" incomplete.insns perf.counts |
	sort -k2,2nr | head -n 1 | cut -d" " -f1 >perf.top &&
	jq -r "[.rows[] | select(.module | endswith(\"/branchy\"))][0].name" \
	    hot.json >ours.top &&
	test_cmp perf.top ours.top &&
	jq -e "[.rows[] | select(.name == \"main\")] | length == 1 and
	    .[0].spans == 0 and .[0].note == \"incomplete_left_out\"" hot.json &&
	# No row has more self time than the history is long.
	jq -e --argjson w "$(jq ".threads[0].last_ns - .threads[0].first_ns" \
	    "$W/an/manifest.json")" "all(.rows[]; .self_ns <= \$w and
	    .total_ns <= \$w)" hot.json &&
	ptquery "$W/an" --kind summary --format json >sum.json &&
	jq -e --argjson n "$n" --argjson ns "$ns" "
	    .incomplete == {spans: \$n, self_ns: \$ns}" sum.json &&
	jq -r ".top[].name" sum.json >top.names &&
	! grep -x -F -f incomplete.fns top.names &&
	ptquery "$W/an" --kind summary >sum.txt &&
	grep -q -x "incomplete spans=$n self_ns=$ns left out of top (--incomplete ranks them)" sum.txt &&
	# With --incomplete, nothing is left out and main is ranked.
	ptquery "$W/an" --kind summary --incomplete --format json >sumi.json &&
	jq -e ".incomplete == {spans: 0, self_ns: 0}" sumi.json &&
	ptquery "$W/an" --kind hotpaths --incomplete --format json --limit 5 \
	    >hoti.json &&
	ptquery "$W/an" --kind hotpaths --incomplete --format json \
	    --function main >mainrow.json &&
	jq -e ".rows[0] | .spans == 1 and .note == \"-\"" mainrow.json &&
	jq -r ".rows[].name" hoti.json >hoti.names &&
	jq -r ".top[].name" sumi.json >sumi.names &&
	test_cmp hoti.names sumi.names
'

test_expect_success 'calls in the window cost what they cost unwrapped' '
	for a in "$W" "$U"; do
		ptquery "$a/an" --kind hotpaths --format json --limit 1000 \
		    2>/dev/null |
		jq -r ".rows[] | select(.name | test(\"^op[0-3]\$\")) |
		    \"\(.name) \(.calls) \(.self_insns / .calls)\"" |
		sort >"$(basename "$a").per_call" || return 1
	done &&
	test "$(wc -l <wrap.per_call)" -eq 4 &&
	awk "{print \$1, \$3}" wrap.per_call >w &&
	awk "{print \$1, \$3}" full.per_call >u &&
	test_cmp u w &&
	# Fewer calls in the window than in the whole run.
	join wrap.per_call full.per_call | awk "\$2 >= \$4 { exit 1 }"
'

test_expect_success 'frames below the bottom that no symbol holds are unknown' '
	# Static: the caller of main, libc start code always found below
	# the bottom when main returns, has no symbol either.
	cp "$EMU_FIX/branchy.static" bare && strip --strip-all bare &&
	ptrec --recorder emu -o snap --aux-bytes 16K -- ./bare 3 3000 \
	    >path 2>rec.err &&
	ptdecode snap >blocks 2>decode.err &&
	ptspans -o an <blocks >out &&
	jq -e ".quality.wrapped_threads == 1" an/manifest.json &&
	# Below the bottom: no entry; in the stripped program: no symbol.
	spans_jsonl an | jq -s -e "map(select(.entry == null and .raw == null and
	    (.module | endswith(\"/bare\")))) | length > 0 and
	    all(.fn == \"unknown\")" &&
	# Frames entered by a call keep module+offset of their entry.
	spans_jsonl an | jq -s -e "map(select(.entry != null and .raw == null and
	    (.module | endswith(\"/bare\")))) | length > 0 and
	    all(.fn | test(\"^bare\\\\+0x[0-9a-f]{1,6}\$\"))"
'

test_done

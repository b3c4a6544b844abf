#!/bin/sh
# ptspans on exceptions whose landing pad g++ -O2 put in main's cold part
# (main.cold): the catch is main's, the frames the exception skipped end
# unwound where it landed, counts are the program's own.  objdump and
# perf's decode of the same snapshot say where the pad is.
. "$(dirname "$0")/lib.sh"

FIX=$PTKIT_BUILD/tests/fixtures/spans

for tool in perf jq objdump; do
	if ! command -v $tool >/dev/null 2>&1; then
		test_skip "exceptions caught in main.cold" "$tool missing"
		test_done
	fi
done

S=$TEST_ROOT/shared

test_expect_success 'the landing pad is in main.cold' '
	objdump -d --no-show-raw-insn "$FIX/cxxcold" >dis &&
	awk "/<main.cold>:\$/ { f = 1; next } /^\$/ { f = 0 }
	    f && /call.*<__cxa_begin_catch@plt>/ { n++ }
	    END { exit n != 1 }" dis &&
	mkdir -p "$S" &&
	ptrec --recorder emu -o "$S/snap" -- "$FIX/cxxcold" >"$S/path" \
	    2>"$S/rec.err" &&
	ptdecode "$S/snap" >"$S/blocks" 2>"$S/decode.err" &&
	ptspans -o "$S/an" <"$S/blocks" >"$S/out" &&
	# Where the unwinder hands over: perf names the target.
	perf --buildid-dir "$S/snap/images" script -i "$S/snap/perf.data" \
	    --itrace=b -F ip,sym,addr,symoff 2>perf.err |
	awk "\$2 ~ /^_Unwind_RaiseException\\+/ && \$5 ~ /^main/" >handover &&
	test "$(wc -l <handover)" -eq 5 &&
	test "$(grep -c " main\.cold+0x" handover)" -eq 5
'

test_expect_success 'calls equal the program'"'"'s counts' '
	grep "^count	" "$S/snap/output.log" | cut -f2,3 | sort >want &&
	test "$(wc -l <want)" -eq 3 &&
	spans_jsonl "$S/an" | jq -r "select(.start == \"seen\") | .fn" |
	sort | uniq -c | awk "{ n = \$1; \$1 = \"\"; sub(/^ /, \"\");
	    print \$0 \"\t\" n }" | grep -E "^(thrower\(int\)|work\(int\)|rare\(\))	" |
	sort >got &&
	test_cmp want got
'

test_expect_success 'each catch is main'"'"'s, __cxa_throw ends where it lands' '
	caught=$(awk -F"\t" "\$1 == \"caught\" { print \$3 }" \
	    "$S/snap/output.log") &&
	test "$caught" -eq 5 &&
	spans_jsonl "$S/an" | jq -s -e --argjson n "$caught" "INDEX(.id) as \$by |
	    (map(select(.fn == \"__cxa_begin_catch\")) | sort_by(.start_ns))
	    as \$catches |
	    (map(select(.fn == \"__cxa_throw\")) | sort_by(.start_ns))
	    as \$throws |
	    (\$catches | length) == \$n and (\$throws | length) == \$n and
	    all(\$catches[]; \$by[.parent | tostring].fn == \"main\") and
	    all(\$throws[]; .end == \"unwound\") and
	    all(range(\$n); \$throws[.].end_ns <= \$catches[.].start_ns) and
	    all(.[]; .fn != \"_Unwind_RaiseException\" or .end == \"unwound\")
	    " &&
	# perf counts the same catches.
	perf --buildid-dir "$S/snap/images" script -i "$S/snap/perf.data" \
	    --itrace=cr -F ip,sym,addr 2>perf.err |
	grep -c "=> *[0-9a-f]* __cxa_begin_catch@plt" >perf.n &&
	test_eq "$caught" "$(cat perf.n)"
'

test_done

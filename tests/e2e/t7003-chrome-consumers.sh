#!/bin/sh
# ptquery's Chrome trace output as the tools people open it with read it:
# Chrome DevTools' own trace engine (the Performance panel's code) and
# speedscope, pinned in tests/consumers/ and installed by make check with
# npm ci.  Each must place every span under the caller ptkit gives it, on
# its thread, zero-duration spans included: the (thread, function, caller)
# of every span they build equals spans.jsonl's, one for one.
. "$(dirname "$0")/lib.sh"

C=$PTKIT_BUILD/trace-consumers
EMU_FIX=$PTKIT_BUILD/tests/fixtures/emu
SPANS_FIX=$PTKIT_BUILD/tests/fixtures/spans

if ! command -v node >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1
then
	test_skip 'Chrome trace consumers nest as ptkit does' 'node or jq missing'
	test_done
fi
if [ ! -e "$C/.installed" ] || [ ! -e "$C/engine-nesting.mjs" ] ||
    [ ! -e "$C/speedscope-nesting.mjs" ]; then
	test_skip 'Chrome trace consumers nest as ptkit does' \
	    'the consumers are not installed (npm ci failed or no npm)'
	test_done
fi

# analyse NAME PROGRAM ARGS...: record with emu, decode, span into NAME.an.
analyse() {
	name=$1
	shift
	ptrec --recorder emu -o "$name" -- "$@" >/dev/null 2>"$name.rec" &&
	ptdecode "$name" 2>/dev/null | ptspans -o "$name.an" >/dev/null
}

# pairs NAME: (tid, function, caller) of every span, as spans.jsonl says.
pairs() {
	spans_jsonl "$1.an" | jq -r '[.id, .parent // 0, .tid, .fn] | @tsv' |
	    awk -F'\t' '{ fn[$1] = $4; p[$1] = $2; t[$1] = $3 }
	    END { for (i in fn) print t[i] "\t" fn[i] "\t" \
	    ((p[i] in fn) ? fn[p[i]] : "-") }' | LC_ALL=C sort
}

# consumers_agree NAME: both consumers build ptkit's tree of NAME.
consumers_agree() {
	ptquery "$1.an" --kind timeline --format chrome >"$1.json" &&
	pairs "$1" >"$1.ptkit" &&
	test -s "$1.ptkit" &&
	node "$C/engine-nesting.mjs" "$1.json" | LC_ALL=C sort >"$1.engine" &&
	test_cmp "$1.ptkit" "$1.engine" &&
	node "$C/speedscope-nesting.mjs" "$1.json" 2>"$1.ss.err" |
	    LC_ALL=C sort >"$1.ss" &&
	test_cmp /dev/null "$1.ss.err" &&
	test_cmp "$1.ptkit" "$1.ss"
}

test_expect_success 'threads: every span of every thread placed as ptkit does' '
	analyse threads "$SPANS_FIX/threads" &&
	test "$(spans_jsonl threads.an | jq -s "[.[].tid] | unique | length")" -gt 2 &&
	consumers_agree threads
'

test_expect_success 'recursion, and zero-duration spans among them' '
	analyse branchy "$EMU_FIX/branchy" &&
	test "$(spans_jsonl branchy.an | jq -s "[.[] | select(.dur_ns == 0)] | length")" -gt 100 &&
	test "$(spans_jsonl branchy.an | jq -s "[.[] | select(.fn == \"recurse\")] | length")" -gt 100 &&
	consumers_agree branchy &&
	# one function only: each span under its nearest exported caller
	ptquery branchy.an --kind timeline --function recurse --format chrome \
	    >page.json &&
	node "$C/engine-nesting.mjs" page.json >page.engine &&
	test_eq 0 "$(awk -F"\t" "\$3 != \"-\" && \$3 != \"recurse\"" \
	    page.engine | wc -l)" &&
	test_eq "$(spans_jsonl branchy.an | jq -s "[.[] | select(.fn == \"recurse\")] | length")" "$(wc -l <page.engine)" &&
	test "$(awk -F"\t" "\$3 == \"recurse\"" page.engine | wc -l)" -gt 0
'

test_expect_success 'C++ with exceptions: unwound frames placed too' '
	analyse cxx "$SPANS_FIX/cxx" &&
	spans_jsonl cxx.an | jq -e -s "any(.[]; .end == \"unwound\")" >/dev/null &&
	consumers_agree cxx
'

test_expect_success 'processes: each on its own pid, named' '
	analyse forks "$EMU_FIX/forks" fork &&
	test "$(spans_jsonl forks.an | jq -s "[.[].pid] | unique | length")" = 2 &&
	consumers_agree forks &&
	test_eq 2 "$(jq "[.traceEvents[] | select(.name == \"process_name\")] |
	    length" forks.json)"
'

test_done

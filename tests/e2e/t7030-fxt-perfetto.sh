#!/bin/sh
# ptquery's FXT output as Perfetto reads it.  No build of Perfetto's trace
# processor installs here (none on PyPI or npm), so helper_fxtread does
# what its Fuchsia importer does: the same framing, tables, sort and slice
# nesting rules (its header comment names the functions it follows).  On
# the fixtures t7003 opens Chrome's output with (threads, recursion with
# zero-duration spans, C++ with unwound frames, two processes) every span
# must become one slice, under the caller ptkit gives it, on its thread,
# with nothing dropped; processes and threads named.
. "$(dirname "$0")/lib.sh"

FXTREAD=$PTKIT_BUILD/tests/unit/helper_fxtread
EMU_FIX=$PTKIT_BUILD/tests/fixtures/emu
SPANS_FIX=$PTKIT_BUILD/tests/fixtures/spans

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'Perfetto nests FXT as ptkit does' 'jq missing'
	test_done
fi

# analyse NAME PROGRAM ARGS...: record with emu, decode, span into NAME.an.
analyse() {
	name=$1
	shift
	ptrec --recorder emu -o "$name" -- "$@" >/dev/null 2>"$name.rec" &&
	ptdecode "$name" 2>/dev/null | ptspans -o "$name.an" >/dev/null &&
	spans_jsonl "$name.an" >"$name.spans"
}

# pairs NAME: (tid, function, caller) of every span, as spans.jsonl says.
pairs() {
	spans_jsonl "$1.an" | jq -r '[.id, .parent // 0, .tid, .fn] | @tsv' |
	    awk -F'\t' '{ fn[$1] = $4; p[$1] = $2; t[$1] = $3 }
	    END { for (i in fn) print t[i] "\t" fn[i] "\t" \
	    ((p[i] in fn) ? fn[p[i]] : "-") }' | LC_ALL=C sort
}

# perfetto_agrees NAME: Perfetto's importer builds ptkit's tree of NAME,
# one slice a span, nothing dropped.
perfetto_agrees() {
	ptquery "$1.an" --kind timeline --format fxt >"$1.fxt" 2>"$1.err" &&
	test_cmp /dev/null "$1.err" &&
	pairs "$1" >"$1.ptkit" &&
	test -s "$1.ptkit" &&
	"$FXTREAD" "$1.fxt" -n >"$1.out" &&
	sed '$d' "$1.out" | LC_ALL=C sort >"$1.perfetto" &&
	test_cmp "$1.ptkit" "$1.perfetto" &&
	n=$(spans_jsonl "$1.an" | wc -l) &&
	tail -n 1 "$1.out" | grep -q " events=$((n * 2)) slices=$n dropped=0\$"
}

test_expect_success 'threads: every span of every thread placed as ptkit does' '
	analyse threads "$SPANS_FIX/threads" &&
	test "$(spans_jsonl threads.an | jq -s "[.[].tid] | unique | length")" -gt 2 &&
	perfetto_agrees threads &&
	# each thread named once, in its process
	"$FXTREAD" threads.fxt -p | grep "^thread " | awk "{ print \$2, \$3 }" |
	    LC_ALL=C sort >named &&
	spans_jsonl threads.an | jq -r "\"\(.tid) \(.pid)\"" | LC_ALL=C sort -u \
	    >want &&
	test_cmp want named
'

test_expect_success 'recursion, and zero-duration spans among them' '
	analyse branchy "$EMU_FIX/branchy" &&
	test "$(jq -s "[.[] | select(.dur_ns == 0)] | length" \
	    branchy.spans)" -gt 100 &&
	test "$(jq -s "[.[] | select(.fn == \"recurse\")] | length" \
	    branchy.spans)" -gt 100 &&
	perfetto_agrees branchy &&
	# times are the spans own, to the nanosecond
	"$FXTREAD" branchy.fxt -e | sed "\$d" | awk "{ print \$1, \$2, \$3 }" |
	    LC_ALL=C sort >got &&
	spans_jsonl branchy.an | jq -r "\"\(.tid) \(.start_ns) \(.end_ns)\"" |
	    LC_ALL=C sort >want &&
	test_cmp want got &&
	# one function only: each span under its nearest exported caller
	ptquery branchy.an --kind timeline --function recurse --format fxt \
	    >page.fxt &&
	"$FXTREAD" page.fxt -n | sed "\$d" >page.perfetto &&
	test_eq 0 "$(awk -F"\t" "\$3 != \"-\" && \$3 != \"recurse\"" \
	    page.perfetto | wc -l)" &&
	test_eq "$(jq -s "[.[] | select(.fn == \"recurse\")] | length" \
	    branchy.spans)" "$(wc -l <page.perfetto)" &&
	test "$(awk -F"\t" "\$3 == \"recurse\"" page.perfetto | wc -l)" -gt 0
'

test_expect_success 'C++ with exceptions: unwound frames placed too' '
	analyse cxx "$SPANS_FIX/cxx" &&
	spans_jsonl cxx.an | jq -e -s "any(.[]; .end == \"unwound\")" >/dev/null &&
	perfetto_agrees cxx
'

test_expect_success 'processes: each on its own pid, named' '
	analyse forks "$EMU_FIX/forks" fork &&
	test "$(spans_jsonl forks.an | jq -s "[.[].pid] | unique | length")" = 2 &&
	perfetto_agrees forks &&
	"$FXTREAD" forks.fxt -p >names &&
	test_eq 2 "$(grep -c "^process " names)" &&
	grep "^process " names | awk "{ print \$2 }" | LC_ALL=C sort >got &&
	spans_jsonl forks.an | jq -r .pid | LC_ALL=C sort -u >want &&
	test_cmp want got
'

# A program 600 calls deep: Perfetto keeps 512 levels of a thread's slices.
cat >"$TEST_ROOT/deep.c" <<'PROG'
static int __attribute__((noinline)) down(int n)
{
	return n == 0 ? 0 : 1 + down(n - 1);
}
int main(void)
{
	return down(599) == 599 ? 0 : 1;
}
PROG

test_expect_success 'deeper than Perfetto keeps: said, and the rest nested' '
	cc -O1 -o deepcalls "$TEST_ROOT/deep.c" &&
	analyse deep ./deepcalls &&
	test_eq 600 "$(jq -s "[.[] | select(.fn == \"down\")] | length" \
	    deep.spans)" &&
	ptquery deep.an --kind timeline --format fxt >deep.fxt 2>deep.err &&
	deeper=$(jq -s "[.[] | select(.depth >= 512)] | length" \
	    deep.spans) &&
	test "$deeper" -gt 0 &&
	echo "ptquery: warning: fxt: $deeper spans nested deeper than 512" \
	    "levels written as complete events, which Perfetto'"'"'s" \
	    "importer drops" >want &&
	test_cmp want deep.err &&
	"$FXTREAD" deep.fxt -n >deep.out &&
	n=$(spans_jsonl deep.an | wc -l) &&
	tail -n 1 deep.out | grep -q " slices=$((n - deeper)) dropped=$deeper\$" &&
	sed "\$d" deep.out | LC_ALL=C sort >got &&
	jq -r "[.id, .parent // 0, .tid, .fn, .depth] | @tsv" \
	    deep.spans | awk -F"\t" "{ fn[\$1] = \$4; p[\$1] = \$2;
	    t[\$1] = \$3; d[\$1] = \$5 } END { for (i in fn) if (d[i] < 512)
	    print t[i] \"\t\" fn[i] \"\t\" ((p[i] in fn) ? fn[p[i]] : \"-\") }" |
	    LC_ALL=C sort >want &&
	test_cmp want got
'

test_expect_success 'a page of fxt says where the rest begins' '
	analyse threads "$SPANS_FIX/threads" &&
	n=$(spans_jsonl threads.an | wc -l) &&
	ptquery threads.an --kind timeline --format fxt --limit 10 \
	    >page.fxt 2>err &&
	echo "ptquery: warning: fxt: wrote spans 0 to 10 of $n; the rest with --cursor o10" >want &&
	test_cmp want err &&
	"$FXTREAD" page.fxt -n | tail -n 1 | grep -q " slices=10 dropped=0\$" &&
	ptquery threads.an --kind timeline --format fxt --cursor "o$((n - 3))" \
	    >last.fxt 2>err &&
	test_cmp /dev/null err
'

test_done

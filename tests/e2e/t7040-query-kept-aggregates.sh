#!/bin/sh
# ptquery's summary and hotpaths answer from the aggregates ptspans kept
# (aggregates.bin) byte for byte as they answer by walking every span:
# on recordings of one thread, of many, of several processes and of a
# wrapped ring (incomplete spans), with and without --tid, --pid,
# --incomplete, --group module and --module, and on a synthetic analysis.
# A damaged or missing aggregates.bin is said on stderr and the walk
# answers (the same answer, exit 0); an analysis written before the file
# (its manifest does not name it) is walked without a word.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'kept aggregates' 'jq missing'
	test_done
fi

GEN=$PTKIT_BUILD/bench/gen_analysis
AGENT=$PTKIT_BUILD/tests/fixtures/mcp/agent

# same DIR WARN ARGS...: ptquery DIR ARGS answers the same with
# aggregates.bin as without it, on stdout and stderr; without it stderr
# starts with the warning when WARN is 1 (the manifest names the file),
# has none when 0.
same() {
	same_dir=$1
	same_warn=$2
	shift 2
	ptquery "$same_dir" "$@" >kept.out 2>kept.err || return 1
	mv "$same_dir/aggregates.bin" away.bin || return 1
	ptquery "$same_dir" "$@" >walk.out 2>walk.err
	same_rc=$?
	mv away.bin "$same_dir/aggregates.bin" || return 1
	test $same_rc -eq 0 || return 1
	if [ "$same_warn" = 1 ]; then
		test_eq "ptquery: warning: $same_dir: aggregates.bin: no such file: totals found by walking every span instead" "$(head -n 1 walk.err)" &&
		    tail -n +2 walk.err >walk.rest || return 1
	else
		cp walk.err walk.rest || return 1
	fi
	test_cmp walk.rest kept.err || return 1
	if ! cmp -s kept.out walk.out; then
		echo "same: $same_dir $*: kept and walked answers differ" >&2
		diff -u walk.out kept.out | head -20 >&2
		return 1
	fi
}

# every DIR WARN: the queries the kept aggregates answer, on DIR.
every() {
	every_j=$(spans_jsonl "$1" | jq -s -c '[.[0].tid, .[-1].tid,
	    .[0].pid, (.[0].module | split("/") | .[-1]), .[-1].fn]') &&
	t1=$(echo "$every_j" | jq '.[0]') &&
	t2=$(echo "$every_j" | jq '.[1]') &&
	p=$(echo "$every_j" | jq '.[2]') &&
	m=$(echo "$every_j" | jq -r '.[3]') &&
	fn=$(echo "$every_j" | jq -r '.[4]') &&
	for q in "--kind summary" "--kind summary --format json" \
	    "--kind summary --tid $t1" "--kind summary --pid $p" \
	    "--kind summary --incomplete --format json" \
	    "--kind hotpaths" "--kind hotpaths --format json" \
	    "--kind hotpaths --incomplete --format csv" \
	    "--kind hotpaths --group module" \
	    "--kind hotpaths --group module --tid $t2 --format json" \
	    "--kind hotpaths --tid $t1" "--kind hotpaths --tid $t2 --format csv" \
	    "--kind hotpaths --pid $p --format json" \
	    "--kind hotpaths --function $fn" \
	    "--kind hotpaths --module $m --format csv" \
	    "--kind hotpaths --exclude-module $m --incomplete"; do
		# shellcheck disable=SC2086 # the words of one query
		same "$1" "$2" $q || return 1
	done
}

test_expect_success 'two threads, three images: the agent fixture' '
	emu_span agent -- "$AGENT" &&
	jq -e ".files | index(\"aggregates.bin\")" agent/an/manifest.json &&
	every agent/an 1
'

test_expect_success 'eight threads (waves 8 1)' '
	emu_span waves -- "$EMU_FIX/waves" 8 1 &&
	test "$(spans_jsonl waves/an | jq -s "[.[].tid] | unique | length")" -ge 8 &&
	every waves/an 1
'

test_expect_success 'several processes (forks)' '
	emu_span forks -- "$EMU_FIX/forks" &&
	test "$(spans_jsonl forks/an | jq -s "[.[].pid] | unique | length")" -gt 1 &&
	every forks/an 1 &&
	for p in $(spans_jsonl forks/an | jq -s ".[].pid" | sort -u); do
		same forks/an 1 --kind hotpaths --pid $p --format csv &&
		same forks/an 1 --kind summary --pid $p || return 1
	done
'

test_expect_success 'a wrapped ring: incomplete spans kept apart' '
	emu_span wrap --aux-bytes 16K -- "$EMU_FIX/branchy.static" 3 3000 &&
	n=$(spans_jsonl wrap/an | jq -s "[.[] | select(.start == \"ring_start\" or .start == \"gap\")] | length") &&
	test "$n" -gt 0 &&
	ptquery wrap/an --kind summary --format json >s.json &&
	test_eq "$n" "$(jq .incomplete.spans s.json)" &&
	every wrap/an 1
'

test_expect_success 'a synthetic analysis (gen_analysis), manifest without files' '
	"$GEN" gen 20000 40 3 jsonl >/dev/null &&
	every gen 0
'

# flip FILE OFFSET: one bit of the byte at OFFSET changed, in place.
flip() {
	flip_b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ') &&
	printf "\\$(printf '%03o' $((flip_b ^ 16)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

test_expect_success 'a damaged aggregates.bin is said, and the walk answers' '
	"$GEN" a 3000 40 3 >/dev/null &&
	ptquery a --kind hotpaths >want 2>err && test ! -s err &&
	cp a/aggregates.bin good.bin &&
	size=$(stat -c %s good.bin) &&
	flip a/aggregates.bin $((size / 2)) &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: checksum mismatch: totals found by walking every span instead" "$(cat err)" &&
	test_cmp want out &&
	ptquery a --kind timeline --limit 3 >/dev/null 2>err &&
	test ! -s err &&
	head -c 100 good.bin >a/aggregates.bin &&
	ptquery a --kind summary >/dev/null 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: its size does not match its counts: totals found by walking every span instead" "$(cat err)" &&
	head -c 10 good.bin >a/aggregates.bin &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: truncated (10 bytes): totals found by walking every span instead" "$(cat err)" &&
	test_cmp want out
'

test_expect_success 'aggregates of another index: refused' '
	"$GEN" a 3000 40 3 >/dev/null &&
	"$GEN" other 3001 40 3 >/dev/null &&
	ptquery a --kind hotpaths >want 2>err && test ! -s err &&
	cp other/aggregates.bin a/aggregates.bin &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: made from 3001 spans, index.bin holds 3000: totals found by walking every span instead" "$(cat err)" &&
	test_cmp want out
'

test_expect_success 'spans.jsonl changed after them: refused' '
	"$GEN" a 3000 40 3 jsonl >/dev/null &&
	ptquery a --kind hotpaths >want 2>err && test ! -s err &&
	touch a/spans.jsonl &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: index.bin older than spans.jsonl: rebuilt from spans.jsonl" "$(cat err)" &&
	test_cmp want out &&
	ptquery a --kind summary >/dev/null 2>err &&
	test_eq "ptquery: warning: a: aggregates.bin: older than spans.jsonl: totals found by walking every span instead" "$(cat err)" &&
	ptquery a --kind hotpaths >out 2>err &&
	test_cmp want out
'

test_expect_success 'a link in place of aggregates.bin is refused' '
	"$GEN" a 3000 40 3 >/dev/null &&
	mv a/aggregates.bin good.bin &&
	ln -s "$PWD/good.bin" a/aggregates.bin &&
	must_exit 1 ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: a: aggregates.bin: leads outside the analysis directory" "$(cat err)" &&
	test ! -s out
'
test_done

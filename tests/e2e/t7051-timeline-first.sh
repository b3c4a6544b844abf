#!/bin/sh
# A timeline's first --limit spans (a table format, no --sort, --cursor
# or window) are found from the blocks that can hold them and counted
# from aggregates.bin: byte for byte the answer of the full path, which
# --cursor o0 takes (every block of the function read, every span of it
# sorted), over several functions and every function, limits of 1, 100
# and past the count, with and without --tid, --pid and --module, on
# recordings (one with incomplete spans) and a synthetic analysis; its
# count is the spans.jsonl's.  A damaged block it does not read leaves
# its answer as it was (the full path reads it and fails); one it reads
# is an error naming the block.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'timeline first spans' 'jq missing'
	test_done
fi

GEN=$PTKIT_BUILD/bench/gen_analysis
AGENT=$PTKIT_BUILD/tests/fixtures/mcp/agent

# same DIR ARGS...: the timeline ARGS answers as with --cursor o0, on
# stdout, stderr and in its exit status, which is 0.
same() {
	same_dir=$1
	shift
	ptquery "$same_dir" --kind timeline "$@" >first.out 2>first.err
	same_rc=$?
	ptquery "$same_dir" --kind timeline "$@" --cursor o0 >full.out \
	    2>full.err
	if [ $same_rc -ne $? ] || ! cmp -s first.out full.out ||
	    ! cmp -s first.err full.err; then
		echo "same: $same_dir $*: the first spans and the full path differ" >&2
		diff -u full.out first.out | head -20 >&2
		diff -u full.err first.err | head -5 >&2
		return 1
	fi
	test $same_rc -eq 0
}

# count DIR WANT ARGS...: the timeline ARGS in json counts WANT spans
# (and says so in its summary), as the full path does.
count() {
	count_dir=$1
	count_want=$2
	shift 2
	same "$count_dir" "$@" --format json &&
	test_eq "$count_want" "$(jq .total_rows first.out)" &&
	test_eq "$count_want spans" "$(jq -r .summary first.out)"
}

# every DIR: the queries above on DIR: the functions of its first and
# last spans and its most frequent one.
every() {
	spans_jsonl "$1" >spans.all &&
	every_j=$(jq -s -c '[.[0].fn, .[-1].fn,
	    (group_by(.fn) | max_by(length) | .[0].fn), .[0].tid, .[-1].tid,
	    .[0].pid, (.[0].module | split("/") | .[-1])]' spans.all) &&
	t1=$(echo "$every_j" | jq '.[3]') &&
	t2=$(echo "$every_j" | jq '.[4]') &&
	p=$(echo "$every_j" | jq '.[5]') &&
	m=$(echo "$every_j" | jq -r '.[6]') &&
	for i in 0 1 2; do
		fn=$(echo "$every_j" | jq -r ".[$i]") &&
		n=$(jq -s --arg f "$fn" '[.[] | select(.fn == $f)] | length' \
		    spans.all) &&
		n1=$(jq -s --arg f "$fn" --argjson t "$t1" \
		    '[.[] | select(.fn == $f and .tid == $t)] | length' \
		    spans.all) &&
		for lim in 1 100 $((n + 5)); do
			count "$1" "$n" --function "$fn" --limit $lim &&
			same "$1" --function "$fn" --limit $lim &&
			same "$1" --function "$fn" --limit $lim --format table &&
			if [ "$n1" -gt 0 ]; then
				count "$1" "$n1" --function "$fn" --limit $lim \
				    --tid "$t1" &&
				same "$1" --function "$fn" --limit $lim \
				    --tid "$t1" --format csv
			fi || return 1
		done || return 1
	done &&
	count "$1" "$(wc -l <spans.all)" --limit 100 &&
	count "$1" "$(jq -s --argjson t "$t2" '[.[] | select(.tid == $t)] |
	    length' spans.all)" --limit 7 --tid "$t2" &&
	count "$1" "$(jq -s --argjson p "$p" '[.[] | select(.pid == $p)] |
	    length' spans.all)" --limit 1 --pid "$p" &&
	count "$1" "$(jq -s --arg m "$m" '[.[] | select(.module |
	    split("/") | .[-1] == $m)] | length' spans.all)" --limit 9 \
	    --module "$m" &&
	count "$1" "$(jq -s --arg m "$m" '[.[] | select(.module |
	    split("/") | .[-1] != $m)] | length' spans.all)" --limit 9 \
	    --exclude-module "$m" &&
	same "$1" --function "$fn" --limit 50 --max-bytes 1500 --format json
}

test_expect_success 'two threads, three images: the agent fixture' '
	emu_span agent -- "$AGENT" &&
	every agent/an &&
	same agent/an --limit 3 --wall-clock --inline --format json
'

test_expect_success 'a wrapped ring: incomplete spans counted too' '
	emu_span wrap --aux-bytes 16K -- "$EMU_FIX/branchy.static" 3 3000 &&
	test "$(spans_jsonl wrap/an | jq -s "[.[] | select(.start == \"ring_start\" or .start == \"gap\")] | length")" -gt 0 &&
	every wrap/an
'

test_expect_success 'a synthetic analysis (gen_analysis)' '
	"$GEN" gen 20000 40 3 jsonl >/dev/null &&
	every gen
'

# u64 FILE OFFSET: the little-endian u64 at OFFSET.
u64() {
	od -An -tu8 -j "$2" -N8 "$1" | tr -d ' '
}

# flip FILE OFFSET: one bit of the byte at OFFSET changed, in place.
flip() {
	flip_b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ') &&
	printf "\\$(printf '%03o' $((flip_b ^ 16)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# func_at FILE B: the offset in index.bin FILE of block B's function
# column (the data after the string table, 8-aligned; a directory entry
# of 248 bytes after the 128 of the header: the block's offset in the
# data, and at 136 that of the column in the block).
func_at() {
	func_d=$(( ($(u64 "$1" 80) + $(u64 "$1" 40) + 7) / 8 * 8 )) &&
	func_e=$((128 + 248 * $2)) &&
	echo $((func_d + $(u64 "$1" $func_e) + $(od -An -tu4 -j \
	    $((func_e + 136)) -N4 "$1" | tr -d ' ')))
}

# 5000 spans of 20 functions on one thread: blocks 0 to 4.
test_expect_success 'a damaged block: not read, the same answer; read, an error naming it' '
	"$GEN" g 5000 20 1 >/dev/null &&
	ptquery g --kind timeline --function fn_3 --limit 2 --format json \
	    >want 2>err && test ! -s err &&
	test_eq "[279,\"o2\"]" "$(jq -c "[.total_rows, .next_cursor]" want)" &&
	cp g/index.bin good.bin &&
	flip g/index.bin $(func_at g/index.bin 4) &&
	ptquery g --kind timeline --function fn_3 --limit 2 --format json \
	    >out 2>err && test ! -s err && test_cmp want out &&
	: the full path reads that block: an error &&
	must_exit 1 ptquery g --kind timeline --function fn_3 --limit 2 \
	    --cursor o0 >out 2>err && test ! -s out &&
	test_eq "ptquery: g/index.bin: damaged: block 4 (rows 4096 to 4999): the checksum of its function column does not match" "$(cat err)" &&
	: the first spans past the count: every block read &&
	must_exit 1 ptquery g --kind timeline --function fn_3 --limit 280 \
	    >out 2>err && test ! -s out &&
	test_eq "ptquery: g/index.bin: damaged: block 4 (rows 4096 to 4999): the checksum of its function column does not match" "$(cat err)" &&
	: block 0, where the first spans are &&
	cp good.bin g/index.bin &&
	flip g/index.bin $(func_at g/index.bin 0) &&
	must_exit 1 ptquery g --kind timeline --function fn_3 --limit 2 \
	    >out 2>err && test ! -s out &&
	test_eq "ptquery: g/index.bin: damaged: block 0 (rows 0 to 1023): the checksum of its function column does not match" "$(cat err)"
'

test_expect_success 'without aggregates.bin: the full path, the same answer' '
	"$GEN" h 20000 40 3 >/dev/null &&
	ptquery h --kind timeline --function fn_5 --limit 10 --format json \
	    >want 2>err && test ! -s err &&
	rm h/aggregates.bin &&
	ptquery h --kind timeline --function fn_5 --limit 10 --format json \
	    >out 2>err && test ! -s err && test_cmp want out
'

test_done

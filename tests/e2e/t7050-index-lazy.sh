#!/bin/sh
# index.bin checked block by block: at and a timeline read (and check)
# the blocks they need alone, so that a damaged block elsewhere leaves
# their answer as it was, while one they read is an error naming the
# file, the block, its rows and the column; every other kind checks the
# whole index first.  An index of an older version is rebuilt from
# spans.jsonl, or without it is an error saying to run ptspans again.
# (The kept totals are removed: hotpaths would answer from them without
# reading the index; t7040 checks them.)
. "$(dirname "$0")/lib.sh"

GEN=$PTKIT_BUILD/bench/gen_analysis

# flip FILE OFFSET: one bit of the byte at OFFSET changed, in place.
flip() {
	flip_b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ') &&
	printf "\\$(printf '%03o' $((flip_b ^ 16)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# 5000 spans of 20 functions on one thread: blocks 0 to 4, the last one
# ending the file (before its 8 bytes of slack).
test_expect_success 'a damaged block: read, an error naming it; else the same answer' '
	"$GEN" g 5000 20 1 >/dev/null && rm g/aggregates.bin &&
	ptquery g --kind at --at 10 >at.want 2>err && test ! -s err &&
	test_eq 6 "$(wc -l <at.want)" &&
	ptquery g --kind timeline --function fn_3 --limit 2 >tl.want &&
	size=$(stat -c %s g/index.bin) && flip g/index.bin $((size - 11)) &&
	ptquery g --kind at --at 10 >out 2>err && test ! -s err &&
	test_cmp at.want out &&
	ptquery g --kind timeline --function fn_3 --limit 2 >out 2>err &&
	test ! -s err && test_cmp tl.want out &&
	: a damaged block the query reads: an error naming it &&
	must_exit 1 ptquery g --kind at --at 24998 >out 2>err && test ! -s out &&
	test_eq "ptquery: g/index.bin: damaged: block 4 (rows 4096 to 4999): the checksum of its callee_insns column does not match" "$(cat err)" &&
	must_exit 1 ptquery g --kind timeline --function fn_3 >out 2>err &&
	test ! -s out &&
	test_eq "ptquery: g/index.bin: damaged: block 4 (rows 4096 to 4999): the checksum of its callee_insns column does not match" "$(cat err)" &&
	must_exit 1 ptquery g --kind hotpaths >out 2>err && test ! -s out &&
	test_eq "ptquery: g: index.bin unreadable: damaged: block 4 (rows 4096 to 4999): the checksum of its callee_insns column does not match and there is no spans.jsonl to rebuild it from" "$(cat err)"
'

test_expect_success 'an index of an older version: rebuilt, or an error' '
	"$GEN" v 60 5 2 jsonl >/dev/null && rm v/aggregates.bin && ptquery v --kind hotpaths >want &&
	printf "\\002" | dd of=v/index.bin bs=1 seek=8 conv=notrunc 2>/dev/null &&
	touch v/index.bin &&
	ptquery v --kind hotpaths >out 2>err && test_cmp want out &&
	test_eq "ptquery: warning: v: index.bin span index version 2, not 3 (written by an older ptspans: run ptspans again): rebuilt from spans.jsonl" "$(cat err)" &&
	rm v/spans.jsonl &&
	printf "\\002" | dd of=v/index.bin bs=1 seek=8 conv=notrunc 2>/dev/null &&
	must_exit 1 ptquery v --kind hotpaths >out 2>err && test ! -s out &&
	test_eq "ptquery: v: index.bin unreadable: span index version 2, not 3 (written by an older ptspans: run ptspans again) and there is no spans.jsonl to rebuild it from" "$(cat err)"
'

test_done

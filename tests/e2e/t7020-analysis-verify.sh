#!/bin/sh
# An analysis verifies itself before ptquery answers from it: a damaged
# index.bin (bits flipped in its header and its body) is rebuilt from a
# whole spans.jsonl with the same answer, or is an error without one; a
# spans.jsonl cut at a line boundary is an error naming both counts, a
# spans.jsonl.zst cut short an error too; an
# analysis without its manifest is incomplete; a manifest whose bytes no
# longer match its own checksum (a digit of quality.insns, of a thread's
# spans) is an error from ptquery and from ptmcp's trace_query, as is one
# written before the checksum; a digit changed in gaps.jsonl,
# threads.jsonl or events.jsonl does not match the checksum the manifest
# holds of it and is an error from every reader (events.jsonl, which no
# query reads, through helper_jsonl), but read unchecked when the
# manifest was written before those checksums; a read-only analysis whose index is
# missing or stale answers from an index rebuilt in memory.
# Never a short or wrong answer with exit status 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

GEN=$PTKIT_BUILD/bench/gen_analysis
MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap
ID=20260101T000000Z-00000001

# gen DIR: 60 spans of 5 functions on 2 threads, with spans.jsonl; without
# the kept aggregates, which would answer hotpaths and summary without the
# index these tests damage (t7040 checks them).
gen() {
	"$GEN" "$1" 60 5 2 jsonl >/dev/null && rm "$1/aggregates.bin"
}

# flip FILE OFFSET: one bit of the byte at OFFSET changed, in place.
flip() {
	flip_b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ') &&
	printf "\\$(printf '%03o' $((flip_b ^ 16)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

test_expect_success 'a flipped bit in the header or the body: rebuilt, same answer' '
	gen a && ptquery a --kind hotpaths >want 2>err && test ! -s err &&
	flip a/index.bin 20 &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: index.bin damaged: the header'"'"'s checksum does not match: rebuilt from spans.jsonl" "$(cat err)" &&
	test_cmp want out &&
	size=$(stat -c %s a/index.bin) &&
	flip a/index.bin $((size / 2)) &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: index.bin damaged: the checksum does not match: rebuilt from spans.jsonl" "$(cat err)" &&
	test_cmp want out &&
	ptquery a --kind hotpaths >out 2>err && test ! -s err
'

test_expect_success 'a damaged index.bin without spans.jsonl is an error' '
	gen a && rm a/spans.jsonl && ptquery a --kind hotpaths >want &&
	flip a/index.bin 300 &&
	must_exit 1 ptquery a --kind hotpaths >out 2>err &&
	test ! -s out &&
	test_eq "ptquery: a: index.bin unreadable: damaged: the checksum does not match and there is no spans.jsonl to rebuild it from" "$(cat err)"
'

test_expect_success 'every flipped byte: an error or the same answer, never another' '
	gen a && rm a/spans.jsonl && cp a/index.bin good &&
	ptquery a --kind hotpaths >want &&
	size=$(stat -c %s good) && off=0 && wrong=0 && n=0 &&
	while [ $off -lt $size ]; do
		cp good a/index.bin && flip a/index.bin $off &&
		if ptquery a --kind hotpaths >out 2>err; then
			cmp -s want out || wrong=$((wrong + 1))
		else
			test $? -eq 1 && grep -q "^ptquery: a: index.bin unreadable: " err ||
			    wrong=$((wrong + 1))
		fi
		n=$((n + 1)) && off=$((off + 7))
	done &&
	test_eq "0 wrong of $n" "$wrong wrong of $n"
'

test_expect_success 'spans.jsonl cut at a line boundary: an error naming the counts' '
	gen a && head -n 40 a/spans.jsonl >cut && mv cut a/spans.jsonl &&
	must_exit 1 ptquery a --kind hotpaths >out 2>err &&
	test ! -s out &&
	test_eq "ptquery: a: spans.jsonl holds 40 spans, the manifest says 60: it was cut short or changed (run ptspans again)" "$(cat err)" &&
	rm a/index.bin &&
	must_exit 1 ptquery a --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: a: spans.jsonl holds 40 spans, the manifest says 60: it was cut short or changed (run ptspans again)" "$(cat err)" &&
	test ! -e a/index.bin && : >a/spans.jsonl &&
	must_exit 1 ptquery a --kind threads 2>err &&
	test_eq "ptquery: a: spans.jsonl holds 0 spans, the manifest says 60: it was cut short or changed (run ptspans again)" "$(cat err)"
'

test_expect_success 'spans.jsonl.zst: rebuilt from; cut short, an error' '
	gen a && ptquery a --kind hotpaths >want &&
	zstd -q --rm a/spans.jsonl && rm a/index.bin &&
	ptquery a --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: a: index.bin missing: rebuilt from spans.jsonl" "$(cat err)" &&
	test_cmp want out &&
	size=$(stat -c %s a/spans.jsonl.zst) &&
	head -c $((size - 20)) a/spans.jsonl.zst >cut && mv cut a/spans.jsonl.zst &&
	must_exit 1 ptquery a --kind hotpaths >out 2>err && test ! -s out &&
	test_eq "ptquery: a: spans.jsonl.zst: Bad message" "$(cat err)"
'

test_expect_success 'an index.bin of another count and no spans.jsonl: an error' '
	gen a && gen b && rm b/spans.jsonl && "$GEN" c 5 1 1 >/dev/null &&
	cp c/index.bin b/index.bin &&
	must_exit 1 ptquery b --kind hotpaths >out 2>err && test ! -s out &&
	test_eq "ptquery: b: index.bin holds 5 spans, the manifest says 60 and there is no spans.jsonl to rebuild it from" "$(cat err)"
'

test_expect_success 'no manifest.json: an incomplete analysis' '
	gen a && rm a/manifest.json &&
	must_exit 1 ptquery a --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: a: incomplete analysis: no manifest.json (ptspans did not finish: run it again)" "$(cat err)" &&
	mkdir k && : >k/spans.jsonl &&
	must_exit 1 ptquery k --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: k: incomplete analysis: no manifest.json (ptspans did not finish: run it again)" "$(cat err)" &&
	must_exit 2 ptdiff a a >out 2>err && test ! -s out &&
	test_eq "ptdiff: a: incomplete analysis: no manifest.json (ptspans did not finish: run it again)" "$(cat err)"
'

# A snapshot decoded into a store by ptmcp: its analysis is ptspans's own.
"$MKSNAP" -o "$TEST_ROOT/$ID" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 &&
PTKIT_STORE=$TEST_ROOT/s ptmcp import "$TEST_ROOT/$ID" >/dev/null &&
PTKIT_STORE=$TEST_ROOT/s ptmcp decode $ID >/dev/null 2>&1 || exit 1
AN=$TEST_ROOT/s/snapshots/$ID/derived/default
cp "$AN/manifest.json" "$TEST_ROOT/good.json" || exit 1

# bump FILE NAME AFTER: the first number of member NAME followed by the
# text AFTER changed in its last digit only, in place; prints the old value.
bump() {
	bump_v=$(grep -o "\"$2\":[0-9]*$3" "$1" | head -1 |
	    sed "s/^[^:]*:\([0-9]*\).*/\1/") &&
	bump_n=$((bump_v % 10 == 9 ? bump_v - 1 : bump_v + 1)) &&
	sed "0,/\"$2\":$bump_v$3/s//\"$2\":$bump_n$3/" "$1" >"$1.new" &&
	! cmp -s "$1" "$1.new" && mv "$1.new" "$1" && echo "$bump_v"
}

# summary_via_mcp: the text of trace_query's summary of $ID, and
# whether it is an error, as "isError<newline>text".
summary_via_mcp() {
	mcp_open mcp.out --store "$TEST_ROOT/s" &&
	mcp_tool 1 trace_query "{\"snapshot_id\":\"$ID\",\"kind\":\"summary\"}" >r &&
	mcp_close &&
	jq -r ".result.isError, .result.content[0].text" r
}

test_expect_success 'the manifest ends with its checksum, and answers whole' '
	sum=$(jq -r .manifest_xxh64 "$AN/manifest.json") &&
	test_eq 2 "$(jq .v "$AN/manifest.json")" &&
	test_eq "\"manifest_xxh64\":\"$sum\"}" "$(tail -c 39 "$AN/manifest.json")" &&
	ptquery "$AN" --kind summary >out 2>err && test ! -s err &&
	grep -q "^quality .*insns=$(jq .quality.insns "$AN/manifest.json") " out &&
	summary_via_mcp >reply && test_eq false "$(head -1 reply)"
'

test_expect_success 'a digit of quality.insns changed: ptquery and trace_query refuse it' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" && cp "$AN/manifest.json" good &&
	sum=$(jq -r .manifest_xxh64 good) &&
	insns=$(bump "$AN/manifest.json" insns ,) &&
	test_eq "$insns" "$(jq .quality.insns good)" &&
	test "$(jq .quality.insns "$AN/manifest.json")" != "$insns" &&
	must_exit 1 ptquery "$AN" --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: $AN: manifest.json does not match its checksum (manifest_xxh64 $sum): it was changed or damaged (run ptspans again)" "$(cat err)" &&
	summary_via_mcp >reply &&
	test_eq true "$(head -1 reply)" &&
	test_eq "ptquery: snapshot $ID analysis default: manifest.json does not match its checksum (manifest_xxh64 $sum): it was changed or damaged (call trace_decode again)" "$(tail -n +2 reply)"
'

test_expect_success 'a digit of a thread'"'"'s spans changed: refused too' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" && cp "$AN/manifest.json" good &&
	sum=$(jq -r .manifest_xxh64 good) &&
	spans=$(bump "$AN/manifest.json" spans ,\"coverage\") &&
	test_eq "$spans" "$(jq ".threads[0].spans" good)" &&
	test "$(jq ".threads[0].spans" "$AN/manifest.json")" != "$spans" &&
	test_eq "$(jq .quality good)" "$(jq .quality "$AN/manifest.json")" &&
	must_exit 1 ptquery "$AN" --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: $AN: manifest.json does not match its checksum (manifest_xxh64 $sum): it was changed or damaged (run ptspans again)" "$(cat err)" &&
	summary_via_mcp >reply &&
	test_eq true "$(head -1 reply)" &&
	test_eq "ptquery: snapshot $ID analysis default: manifest.json does not match its checksum (manifest_xxh64 $sum): it was changed or damaged (call trace_decode again)" "$(tail -n +2 reply)"
'

test_expect_success 'written before the checksum, or without it: run ptspans again' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" && cp "$AN/manifest.json" good &&
	jq -c ".v = 1 | del(.manifest_xxh64)" good >"$AN/manifest.json" &&
	must_exit 1 ptquery "$AN" --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: $AN: manifest.json: analysis version 1, not 2 (written by an older ptspans: run ptspans again)" "$(cat err)" &&
	sed "s/\"manifest_xxh64\"/\"manifest_xxh65\"/" good >"$AN/manifest.json" &&
	must_exit 1 ptquery "$AN" --kind summary >out 2>err && test ! -s out &&
	test_eq "ptquery: $AN: manifest.json does not end with its checksum (manifest_xxh64): it was cut short, changed or damaged (run ptspans again)" "$(cat err)" &&
	cp good "$AN/manifest.json" &&
	ptquery "$AN" --kind summary >/dev/null
'

# query_via_mcp KIND: as summary_via_mcp, for trace_query's KIND.
query_via_mcp() {
	mcp_open mcp.out --store "$TEST_ROOT/s" &&
	mcp_tool 1 trace_query "{\"snapshot_id\":\"$ID\",\"kind\":\"$1\"}" >r &&
	mcp_close &&
	jq -r ".result.isError, .result.content[0].text" r
}

for f in gaps threads events; do
	cp "$AN/$f.jsonl" "$TEST_ROOT/good.$f.jsonl" || exit 1
done

test_expect_success 'the manifest holds the checksums of gaps, threads and events' '
	for f in gaps threads events; do
		jq -e ".${f}_xxh64 | test(\"^0x[0-9a-f]{16}\$\")" \
		    "$AN/manifest.json" >/dev/null || return 1
	done &&
	test -s "$AN/gaps.jsonl" && test -s "$AN/threads.jsonl" &&
	test -s "$AN/events.jsonl" &&
	ptquery "$AN" --kind gaps >out 2>err && test ! -s err &&
	ptquery "$AN" --kind threads >out 2>err && test ! -s err
'

test_expect_success 'a digit of gaps.jsonl changed: ptquery and trace_query refuse it' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" &&
	sum=$(jq -r .gaps_xxh64 "$AN/manifest.json") &&
	was=$(bump "$AN/gaps.jsonl" start_ns ,) &&
	test "$(head -1 "$AN/gaps.jsonl" | jq .start_ns)" != "$was" &&
	must_exit 1 ptquery "$AN" --kind gaps >out 2>err && test ! -s out &&
	test_eq "ptquery: $AN: gaps.jsonl does not match the checksum the manifest holds (gaps_xxh64 $sum): it was changed or damaged (run ptspans again)" "$(cat err)" &&
	query_via_mcp gaps >reply &&
	test_eq true "$(head -1 reply)" &&
	test_eq "ptquery: snapshot $ID analysis default: gaps.jsonl does not match the checksum the manifest holds (gaps_xxh64 $sum): it was changed or damaged (call trace_decode again)" "$(tail -n +2 reply)" &&
	cp "$TEST_ROOT/good.gaps.jsonl" "$AN/gaps.jsonl" &&
	ptquery "$AN" --kind gaps >out 2>err && test ! -s err
'

test_expect_success 'a digit of threads.jsonl changed: refused, by the trace exports too' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" &&
	sum=$(jq -r .threads_xxh64 "$AN/manifest.json") &&
	bump "$AN/threads.jsonl" insns , >/dev/null &&
	! cmp -s "$TEST_ROOT/good.threads.jsonl" "$AN/threads.jsonl" &&
	msg="threads.jsonl does not match the checksum the manifest holds (threads_xxh64 $sum): it was changed or damaged" &&
	must_exit 1 ptquery "$AN" --kind threads >out 2>err && test ! -s out &&
	test_eq "ptquery: $AN: $msg (run ptspans again)" "$(cat err)" &&
	must_exit 1 ptquery "$AN" --kind timeline --format chrome >out 2>err &&
	test ! -s out &&
	test_eq "ptquery: $AN: $msg (run ptspans again)" "$(cat err)" &&
	must_exit 1 ptquery "$AN" --kind timeline --format fxt >out 2>err &&
	test ! -s out &&
	test_eq "ptquery: $AN: $msg (run ptspans again)" "$(cat err)" &&
	query_via_mcp threads >reply &&
	test_eq true "$(head -1 reply)" &&
	test_eq "ptquery: snapshot $ID analysis default: $msg (call trace_decode again)" "$(tail -n +2 reply)" &&
	cp "$TEST_ROOT/good.threads.jsonl" "$AN/threads.jsonl" &&
	ptquery "$AN" --kind timeline --format chrome >out 2>err && test ! -s err
'

test_expect_success 'events.jsonl, which no query reads, is checked by the same reader' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" &&
	sum=$(jq -r .events_xxh64 "$AN/manifest.json") &&
	bump "$AN/events.jsonl" time_ns , >/dev/null &&
	! cmp -s "$TEST_ROOT/good.events.jsonl" "$AN/events.jsonl" &&
	must_exit 1 "$PTKIT_BUILD/tests/unit/helper_jsonl" "$AN" events.jsonl >out 2>err &&
	test ! -s out &&
	test_eq "helper_jsonl: $AN: events.jsonl does not match the checksum the manifest holds (events_xxh64 $sum): it was changed or damaged (run ptspans again)" "$(cat err)" &&
	cp "$TEST_ROOT/good.events.jsonl" "$AN/events.jsonl" &&
	"$PTKIT_BUILD/tests/unit/helper_jsonl" "$AN" events.jsonl >out &&
	test_cmp "$TEST_ROOT/good.events.jsonl" out
'

test_expect_success 'a manifest written before the checksums: the files read unchecked' '
	cp "$TEST_ROOT/good.json" "$AN/manifest.json" &&
	jq -c "del(.gaps_xxh64, .threads_xxh64, .events_xxh64)" "$TEST_ROOT/good.json" >"$AN/manifest.json" &&
	"$PTKIT_BUILD/tests/unit/helper_mseal" "$AN/manifest.json" &&
	bump "$AN/gaps.jsonl" start_ns , >/dev/null &&
	ptquery "$AN" --kind gaps >out 2>err && test ! -s err &&
	cp "$TEST_ROOT/good.gaps.jsonl" "$AN/gaps.jsonl" &&
	cp "$TEST_ROOT/good.json" "$AN/manifest.json"
'

# ro DIR CMD...: CMD with DIR mounted read-only (a user namespace).
ro() {
	ro_dir=$1
	shift
	unshare -rm sh -c 'mount -o bind,ro "$0" "$0" && exec "$@"' \
	    "$ro_dir" "$@"
}

if ! unshare -rm sh -c 'mount -o bind,ro . .' 2>/dev/null; then
	test_skip "a read-only analysis answers from memory" \
	    "no user namespaces for a read-only mount"
else
test_expect_success 'read-only, index.bin missing or stale: answered from memory' '
	gen a && ptquery a --kind hotpaths >want &&
	ptquery a --kind at --tid 1000 --at 20 >want.at &&
	rm a/index.bin &&
	ro "$PWD/a" ptquery "$PWD/a" --kind hotpaths >out 2>err &&
	test_eq "ptquery: warning: $PWD/a: index.bin missing: rebuilt from spans.jsonl in memory (not saved: Read-only file system)" "$(cat err)" &&
	test_cmp want out && test ! -e a/index.bin &&
	ls -A a >files && ! grep -q "^\.index" files &&
	ptquery a --kind summary >/dev/null 2>&1 && touch a/spans.jsonl &&
	ro "$PWD/a" ptquery "$PWD/a" --kind at --tid 1000 --at 20 >out 2>err &&
	test_eq "ptquery: warning: $PWD/a: index.bin older than spans.jsonl: rebuilt from spans.jsonl in memory (not saved: Read-only file system)" "$(cat err)" &&
	test_cmp want.at out
'
fi

test_done

#!/bin/sh
# ptquery's views of an -O2 -flto program recorded with emu
# (tests/fixtures/mcp/agent.c, whose mix32 is inlined into score): the
# source of a function, of an inlined helper and of an address, with the
# inline chain outermost first; the images of the snapshot and what was
# decoded in each; a call tree pruned by share, saying what it pruned;
# branch rows with their mnemonic and the note on "taken"; insns rows
# with their instruction; inlined calls as frames (--inline) in folded,
# timeline and chrome, the last nested as Chrome DevTools' trace engine
# and speedscope read it.
. "$(dirname "$0")/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'ptquery views' 'jq missing'
	test_done
fi

AGENT=$PTKIT_BUILD/tests/fixtures/mcp/agent
SRC=$PTKIT_SRC/tests/fixtures/mcp/agent.c
C=$PTKIT_BUILD/trace-consumers
S=$TEST_ROOT/snap
A=$S/derived/default
J=$TEST_ROOT/spans.plain
I=$TEST_ROOT/inline.plain

test_expect_success 'record, decode and span the agent program' "
	ptrec --recorder emu -o $S -- $AGENT >/dev/null 2>rec.err &&
	mkdir -p $S/derived &&
	ptdecode $S 2>dec.err | ptspans -o $A >/dev/null &&
	spans_jsonl $A >$J && inline_jsonl $A >$I &&
	grep -qx 'score 40' $S/output.log
"

call_line=$(grep -n 's += mix32(v\[i\] + s);' "$SRC" | cut -d: -f1)
body_line=$(grep -n 'x ^= x >> 16;' "$SRC" | cut -d: -f1)

test_expect_success 'source of an inlined helper: where it was inlined, outermost first' "
	ptquery $A --kind source --function mix32 --format json >out &&
	jq -e '.total_rows == 2 and
	    .rows[0].site == 0 and .rows[0].depth == 0 and
	    .rows[0].function == \"score.constprop.0\" and
	    .rows[0].line == $call_line and
	    .rows[1].depth == 1 and .rows[1].function == \"mix32\" and
	    .rows[1].line == $body_line and
	    (.rows | all(.file == \"$SRC\"))' out &&
	jq -e '.summary | startswith(\"mix32: 1 site; the first: score.constprop.0 at $SRC:$call_line > mix32 at $SRC:$body_line\")' out
"

test_expect_success 'source of an address: by module and offset, and absolute' "
	off=\$(ptquery $A --kind source --function mix32 --format json | jq -r '.rows[0].elf_addr') &&
	ptquery $A --kind source --address agent+\$off --format json >m &&
	ptquery $A --kind source --function mix32 --format json >f &&
	test_eq \"\$(jq -c '[.rows[] | [.depth, .function, .line]]' f)\" \"\$(jq -c '[.rows[] | [.depth, .function, .line]]' m)\" &&
	ip=\$(jq -n -r '[inputs | select(.fn == \"score.constprop.0\")][0].entry' $J) &&
	ptquery $A --kind source --address \$ip --format json >a &&
	ptquery $A --kind source --function score --format json >s &&
	jq -e --arg ip \$ip '.total_rows == 1 and .rows[0].ip == \$ip and
	    .rows[0].function == \"score.constprop.0\"' a &&
	test_eq \"\$(jq .rows[0].line s)\" \"\$(jq .rows[0].line a)\" &&
	jq -e --arg ip \$ip '.rows[0].ip == \$ip' s
"

test_expect_success 'source: bad input is said' "
	must_exit 2 ptquery $A --kind source 2>err &&
	test_eq 'ptquery: --kind source: needs --function NAME or --address MODULE+OFFSET|ADDR (one of them)' \"\$(cat err)\" &&
	must_fail ptquery $A --kind source --address nosuch+0x10 2>err &&
	test_eq \"ptquery: --address: the snapshot holds no image 'nosuch': see --kind images\" \"\$(cat err)\" &&
	must_fail ptquery $A --kind source --address 0x10 2>err &&
	test_eq 'ptquery: 0x10: no mapping of the snapshot holds this address' \"\$(cat err)\" &&
	must_exit 2 ptquery $A --kind timeline --address 0x10 2>err &&
	test_eq 'ptquery: --address applies to --kind source only' \"\$(head -n 1 err)\"
"

test_expect_success 'images: what the snapshot holds, and what was decoded in each' "
	ptquery $A --kind images --format json >out &&
	test_eq \"\$(jq '.images | length' $S/manifest.json)\" \"\$(jq .total_rows out)\" &&
	jq -e --slurpfile m $S/manifest.json '.rows | all(.archived == \"yes\" and
	    .build_id == (.path as \$p | \$m[0].images[] | select(.path == \$p) | .build_id))' out &&
	jq -e '.rows[] | select(.path == \"$AGENT\") | .dwarf == \"yes\" and
	    .debug == \"in_image\" and .symbols == \".symtab\" and .functions > 5' out &&
	test_eq \"\$(jq -s 'length' $J)\" \"\$(jq '[.rows[].spans] | add' out)\" &&
	test_eq \"\$(jq -s 'map(.self_insns) | add' $J)\" \"\$(jq '[.rows[].self_insns] | add' out)\" &&
	test_eq \"\$(jq -s 'map(select(.module == \"$AGENT\") | .self_insns) | add' $J)\" \"\$(jq '.rows[] | select(.path == \"$AGENT\") | .self_insns' out)\"
"

test_expect_success 'tree pruned by share, and the pruned paths said' "
	ptquery $A --kind tree --depth 6 --min-share 0 --limit 100000 --format json >all &&
	ptquery $A --kind tree --depth 6 --min-share 5 --limit 100000 --format json >five &&
	total=\$(jq '[.rows[] | select(.depth == 0) | .insns] | add' all) &&
	jq -e --argjson t \$total '.rows | all(.insns * 100 >= 5 * \$t)' five &&
	test_eq \$(jq '[.rows[] | select(.insns * 100 >= 5 * '\$total')] | length' all) \$(jq .total_rows five) &&
	pruned=\$((\$(jq .total_rows all) - \$(jq .total_rows five))) &&
	test \$pruned -gt 0 &&
	jq -e --arg n \$pruned '.note | startswith(\$n + \" call paths below 5% of the instructions pruned, holding \")' five &&
	jq -e --arg n \$pruned '.summary | contains(\"; \" + \$n + \" more pruned, holding \")' five &&
	jq -e '.note == null' all &&
	ptquery $A --kind tree --depth 6 --limit 10 --format json >page &&
	jq -e '(.rows | length) <= 10 and .next_cursor == null and
	    (.note | test(\"^[0-9]+ call paths of at most .* to fit the page; --min-share 0 keeps every path\$\"))' page &&
	ptquery $A --kind tree --depth 6 --limit 10 >text &&
	grep -q '^note=[0-9]* call paths of at most' text
"

test_expect_success 'branches: mnemonic, a target for each, the note on taken' "
	ptquery $A --kind branches --function lookup --format json >out &&
	jq -e '.total_rows == 4 and
	    (.rows | all(.mnemonic | test(\"^j[a-z]+\$\"))) and
	    (.rows | all(.target != \"0x0\")) and
	    (.rows | map(.taken + .not_taken) | add) == (.rows | map(.executed) | add) and
	    (.note | startswith(\"taken counts the times the jump was taken\"))' out
"

test_expect_success 'insns: each row with its instruction' "
	w=\$(jq -n -r '[inputs | select(.fn == \"lookup\")][0] | \"--tid \\(.tid) --from \\(.start_ns) --to \\(.end_ns + 1)\"' $J) &&
	ptquery $A --kind insns \$w --limit 100000 --format json >out &&
	jq -e '.total_rows > 100 and (.rows | all(.insn != \"?\" and .insn != \"\")) and
	    (.rows | map(select(.symbol | startswith(\"lookup+\"))) | length) ==
	    (.rows | map(select(.symbol | startswith(\"lookup+\")) | select(.line > 0)) | length)' out &&
	jq -e '[.rows[] | select(.symbol == \"lookup+0x30\")][0].insn | startswith(\"jz \")' out
"

test_expect_success 'folded --inline: inlined calls as frames, the sums exact' "
	ptquery $A --kind hotpaths --format folded --weight insns --inline >fi &&
	test_eq \"\$(jq -s 'map(.self_insns) | add' $J)\" \"\$(awk '{ s += \$NF } END { print s }' fi)\" &&
	test_eq \"\$(jq -s 'map(select(.fn == \"mix32\") | .insns) | add' $I)\" \"\$(awk '\$1 ~ /;mix32\$/ { s += \$NF } END { print s }' fi)\" &&
	ptquery $A --kind hotpaths --format folded --inline >fn &&
	test_eq \"\$(jq -s 'map(.self_ns) | add' $J)\" \"\$(awk '{ s += \$NF } END { print s }' fn)\" &&
	grep -q ';score.constprop.0;mix32 ' fn &&
	ptquery $A --kind hotpaths --format folded --weight insns --group inline >gi &&
	test_cmp fi gi
"

test_expect_success 'inline rows of one function keep its image under --module' "
	ptquery $A --kind hotpaths --group inline --function score --module agent --format json >out &&
	jq -e '[.rows[].name] == [\"score.constprop.0\", \"mix32\"] or [.rows[].name] == [\"mix32\", \"score.constprop.0\"]' out &&
	must_fail ptquery $A --kind hotpaths --group inline --function score --exclude-module agent 2>err
"

test_expect_success 'timeline --inline: each span with its inlined calls' "
	ptquery $A --kind timeline --function score --inline --format json >out &&
	jq -e '.total_rows == 40 and (.rows | all(.inline | test(\"^mix32:[0-9]+\$\")))' out &&
	id=\$(jq '.rows[0].id' out) &&
	test_eq \"\$(jq .rows[0].inline out)\" \"\$(jq -s 'map(select(.span == '\$id')) | \"mix32:\" + (.[0].insns | tostring)' $I)\" &&
	ptquery $A --kind timeline --function step --limit 1 --inline >text &&
	grep -q ' inline=-\$' text
"

test_expect_success 'chrome --inline: the consumers nest inlined calls inside their span' "
	if [ ! -e $C/.installed ] || ! command -v node >/dev/null; then
		echo 'consumers not installed: checking the events only'
	fi &&
	ptquery $A --kind timeline --function score --inline --format chrome >c.json &&
	test_eq 80 \"\$(jq '[.traceEvents[] | select(.ph == \"X\")] | length' c.json)\" &&
	if [ -e $C/.installed ] && command -v node >/dev/null; then
		node $C/engine-nesting.mjs c.json | cut -f2,3 | sort | uniq -c >engine &&
		printf '%7d %s\t%s\n' 40 mix32 score.constprop.0 40 score.constprop.0 - >want &&
		test_cmp want engine &&
		node $C/speedscope-nesting.mjs c.json 2>ss.err | cut -f2,3 | sort | uniq -c >ss &&
		test_cmp /dev/null ss.err && test_cmp want ss
	fi &&
	ptquery $A --kind timeline --inline --format chrome >all.json &&
	test_eq \"\$(( \$(jq -s length $J) + \$(jq -s length $I) ))\" \"\$(jq '[.traceEvents[] | select(.ph == \"X\")] | length' all.json)\"
"

test_expect_success '--inline and --min-share where they do not apply' "
	must_exit 2 ptquery $A --kind hotpaths --inline 2>err &&
	test_eq 'ptquery: --inline applies to --kind timeline and to --format folded and chrome only (fxt has no inlined calls)' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind timeline --inline --format fxt >out 2>err &&
	test_eq 'ptquery: --inline applies to --kind timeline and to --format folded and chrome only (fxt has no inlined calls)' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind hotpaths --min-share 1 2>err &&
	test_eq 'ptquery: --min-share applies to --kind tree only' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind tree --min-share 101 2>err &&
	test_eq \"ptquery: --min-share: '101' is not a percentage from 0 to 100\" \"\$(head -n 1 err)\"
"

test_done

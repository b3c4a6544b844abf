#!/bin/sh
# ptquery on the bundled demo program recorded with emu: the
# program's own call counts, folded stacks summing to the spans' self
# time, chrome nesting and fxt records on real data, paging, the inline
# grouping against inline.jsonl, and a snapshot directory as ANALYSIS.
. "$(dirname "$0")/lib.sh"

DEMO=$PTKIT_BUILD/fixtures/demo
FXTREAD=$PTKIT_BUILD/tests/unit/helper_fxtread
S=$TEST_ROOT/snap
A=$S/derived/default

if ! command -v jq >/dev/null 2>&1; then
	test_skip "ptquery on the demo" "jq missing"
	test_done
fi

test_expect_success 'record, decode and span the demo with emu' "
	ptrec --recorder emu -o $S -- $DEMO >path 2>rec.err &&
	mkdir -p $S/derived &&
	ptdecode $S 2>dec.err | ptspans -o $A >out &&
	test_eq $A \"\$(cat out)\" &&
	grep -q '^calls: checksum=3 mix=19 fib=1973\$' $S/output.log
"

test_expect_success 'hotpaths: the counts the demo printed' "
	ptquery $S --kind hotpaths --format csv >out &&
	for f in main:1 checksum:3 mix:19 fib:1973; do
		awk -F, -v f=\${f%:*} '\$11 == f { print \$11 \":\" \$1 }' out >got &&
		test_eq \$f \"\$(cat got)\" || return 1
	done &&
	ptquery $S --kind timeline --function fib --format json |
	    jq -e '.total_rows == 1973 and ([.rows[].depth] | min) == 4'
"

test_expect_success 'calls: checksum called 3 times by main, calls mix 19 times' "
	ptquery $A --kind calls --function checksum >out &&
	grep -q '^relation=caller calls=3 spans=3 .* name=main\$' out &&
	grep -q '^relation=callee calls=19 spans=19 .* name=mix\$' out &&
	test \$(wc -l <out) = 2
"

test_expect_success 'at: the first checksum call sits under main' "
	id=\$(ptquery $A --kind timeline --function checksum --limit 1 |
	    head -n 1 | sed 's/^id=\\([0-9]*\\) .*/\\1/') &&
	ptquery $A --kind at --span \$id | sed 's/.*name=//' | tail -n 2 >out &&
	printf 'main\nchecksum\n' >want && test_cmp want out
"

test_expect_success 'folded sums exactly to the spans self time' "
	ptquery $A --kind hotpaths --format folded >out &&
	want=\$(spans_jsonl $A | jq -s 'map(.self_ns) | add') &&
	got=\$(awk '{ s += \$NF } END { print s }' out) &&
	test_eq \"\$want\" \"\$got\" &&
	grep -q ';main;fib;fib ' out
"

# Instructions: every span counts, also those that took 0 ns under emu.
test_expect_success 'folded --weight insns sums to the self instructions' "
	ptquery $A --kind hotpaths --format folded --weight insns >out &&
	want=\$(spans_jsonl $A | jq -s 'map(.self_insns) | add') &&
	got=\$(awk '{ s += \$NF } END { print s }' out) &&
	test_eq \"\$want\" \"\$got\" &&
	test \"\$(spans_jsonl $A | jq -s '[.[] | select(.self_ns == 0 and .self_insns > 0)] |
	    length')\" -gt 0 &&
	must_exit 2 ptquery $A --kind hotpaths --weight insns 2>err &&
	test_eq 'ptquery: --weight applies to --format folded only' \
	    \"\$(head -1 err)\"
"

test_expect_success 'summary: trigger, window, top functions' "
	ptquery $A --kind summary >out &&
	grep -q '^capture window_ns=[1-9][0-9]* trigger=exit processes=1 threads=1\$' out &&
	grep -q '^clock: emulated, shared by all threads (host time under emulation)\$' out &&
	# host time under emulation: the top is whatever hotpaths ranks first
	top=\$(ptquery $A --kind hotpaths --sort self_ns --limit 1 |
	    sed -n '1s/.* name=//p') &&
	grep -q \"^top rank=1 .* name=\$top\\\$\" out &&
	n=\$(spans_jsonl $A | wc -l) &&
	grep -q \"^quality spans=\$n \" out
"

test_expect_success 'chrome on real spans nests strictly' "
	ptquery $A --kind timeline --format chrome >out &&
	jq -e -f $PTKIT_SRC/tests/e2e/query-nested.jq out &&
	test \$(jq '[.traceEvents[] | select(.ph == \"X\")] | length' out) = \
	    \$(spans_jsonl $A | wc -l)
"

test_expect_success 'fxt on real spans: every record parses, one slice a span' "
	ptquery $A --kind timeline --format fxt >out.fxt &&
	$FXTREAD out.fxt >out &&
	n=\$(spans_jsonl $A | wc -l) &&
	grep -q \" threads=1 kobjs=2 events=\$((n * 2)) slices=\$n dropped=0\\\$\" out
"

test_expect_success 'paging hotpaths and timeline yields every row once' "
	for k in hotpaths timeline; do
		ptquery $A --kind \$k --format csv | tail -n +2 |
		    sed 's/,[^,]*\$//' >all &&
		cursor= && : >paged &&
		while :; do
			ptquery $A --kind \$k --format csv --limit 97 \
			    \${cursor:+--cursor \$cursor} >p.csv || return 1
			tail -n +2 p.csv | sed 's/,[^,]*\$//' >>paged
			cursor=\$(tail -n 1 p.csv | sed 's/.*,//')
			[ -n \"\$cursor\" ] || break
		done &&
		test_cmp all paged || return 1
	done
"

test_expect_success 'inline grouping agrees with inline.jsonl' "
	ptquery $A --kind hotpaths --group inline --format json >out &&
	inline_jsonl $A | jq -s -c 'group_by(.fn) | map({name: .[0].fn, calls: length,
	    insns: (map(.total_insns) | add), self: (map(.insns) | add)}) |
	    sort_by(.name) | .[]' >want &&
	jq -c '[.rows[] | select(.note == \"inlined\") | {name, calls, insns,
	    self: .self_insns}] | sort_by(.name) | .[]' out >got &&
	test -s want && test_cmp want got &&
	ptquery $A --kind hotpaths --format json >fn.json &&
	spans_jsonl $A | jq -s 'map(.self_insns - .inline_insns) | add' >want &&
	jq '[.rows[] | select(.note != \"inlined\") | .self_insns] | add' \
	    out >got &&
	test_cmp want got
"

test_expect_success 'branches: exact taken and not-taken counts, with lines' "
	ptquery $A --kind branches --function fib >all &&
	head -n 1 all >out &&
	test_eq 'ip=0x4000001246 taken=987 not_taken=986 executed=1973 line=35 file=$PTKIT_SRC/tests/fixtures/demo/demo.c target=0x4000001260 mnemonic=jbe symbol=fib+0x16' \"\$(sed 's/^ip=0x[0-9a-f]* /ip=0x4000001246 /; s/ target=0x[0-9a-f]* / target=0x4000001260 /' out)\" &&
	test_eq \"note=taken counts the times the jump was taken (to target); the compiler may have made that the source's if being false\" \"\$(sed -n 2p all)\" &&
	test_eq 2 \"\$(wc -l <all)\" &&
	jq -n --argjson ip \"\$(sed 's/^ip=\\(0x[0-9a-f]*\\) .*/\"\\1\"/' out)\" --argjson to \"\$(sed 's/.* target=\\(0x[0-9a-f]*\\) .*/\"\\1\"/' out)\" -e '(\$to | ltrimstr(\"0x\")) != \"0\" and \$to != \$ip' &&
	ptquery $A --kind branches --function checksum --format csv |
	    cut -d, -f2-5 >out &&
	printf 'taken,not_taken,executed,line\n0,3,3,26\n16,3,19,26\n' >want &&
	test_cmp want out
"

test_expect_success 'insns: every instruction of main, by symbol, paged' "
	ptquery $A --kind timeline --function main --format csv |
	    tail -n 1 | cut -d, -f3,5,6 >w &&
	IFS=, read -r tid from to <w &&
	ptquery $A --kind insns --tid \$tid --from \$from --to \$((to + 1)) \
	    --limit 100000 --format csv >all &&
	test_eq 'time_ns,ip,line,file,symbol,insn,next_cursor' \"\$(head -n 1 all)\" &&
	test \$(grep -c ',fib+0x' all) = \$(ptquery $A --kind hotpaths \
	    --function fib --format csv | tail -n 1 | cut -d, -f6) &&
	test \$(grep -c ',mix+0x' all) = 95 &&
	ptquery $A --kind insns --tid \$tid --from \$from --to \$((to + 1)) \
	    --limit 1000 --format csv >p1 &&
	c=\$(tail -n 1 p1 | sed 's/.*,//') && test_eq o1000 \$c &&
	ptquery $A --kind insns --tid \$tid --from \$from --to \$((to + 1)) \
	    --limit 1000 --cursor \$c --format csv >p2 &&
	sed -n '2,2001p' all | sed 's/,[^,]*\$//' >want &&
	{ tail -n +2 p1; tail -n +2 p2; } | sed 's/,[^,]*\$//' >got &&
	test_cmp want got &&
	must_exit 2 ptquery $A --kind insns 2>err &&
	test_eq 'ptquery: --kind insns: needs --tid TID (and a window: --from, --to)' \"\$(cat err)\"
"

test_expect_success 'make demo prints the demo functions with their counts' "
	mkdir -p b/fixtures && ln -s $DEMO b/fixtures/demo &&
	PTKIT_BUILD=\$PWD/b sh $PTKIT_SRC/scripts/demo.sh >out 2>err &&
	grep -q '^capture window_ns=[1-9][0-9]* trigger=exit processes=1 threads=1\$' out &&
	grep -q '^ptkit demo: the program said: calls: checksum=3 mix=19 fib=1973\$' out &&
	tail -n 4 out | awk '{ print \$NF \"=\" \$1 }' | tr '\n' ' ' >got &&
	test_eq 'main=1 checksum=3 mix=19 fib=1973 ' \"\$(cat got)\"
"

test_done

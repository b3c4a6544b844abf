#!/bin/sh
# ptquery on a hand-written analysis whose every figure is known
# (7 spans on 2 threads, recursion, a span cut by the ring start): every
# row kind in every format with exact values, paging, --max-bytes, the
# trace formats, and the errors for bad input.
. "$(dirname "$0")/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip "ptquery on a hand-written analysis" "jq missing"
	test_done
fi

FXTREAD=$PTKIT_BUILD/tests/unit/helper_fxtread
MSEAL=$PTKIT_BUILD/tests/unit/helper_mseal
H=$TEST_ROOT/hand

# Thread 1: main [0,100) calls work [10,50) (which calls leaf [20,40))
# and work [60,90) (which calls work [70,80)); thread 2: main [5,25),
# open when the ring started, calls leaf [10,20).  Spans are in the order
# ptspans writes them: when they end.  insns = 2 * ns.
span() {
	# id tid depth parent fn start end self start_cause
	p=null; [ "$4" = 0 ] || p=$4
	printf '{"v":1,"id":%s,"tid":%s,"pid":%s,"fn":"%s","raw":"%s",' \
	    "$1" "$2" "$2" "$5" "$5"
	printf '"module":"/bin/hand","depth":%s,"parent":%s,"call_site":null,' \
	    "$3" "$p"
	printf '"entry":"0x1000","start_ns":%s,"end_ns":%s,"dur_ns":%s,' \
	    "$6" "$7" $(($7 - $6))
	printf '"self_ns":%s,"insns":%s,"self_insns":%s,"inline_insns":0,' \
	    "$8" $((2 * ($7 - $6))) $((2 * $8))
	printf '"start":"%s","end":"seen","tail_call":false,"async":false}\n' \
	    "${9:-seen}"
}

make_hand() {
	mkdir -p "$1" && {
		span 3 1 2 2 leaf 20 40 20
		span 2 1 1 1 work 10 50 20
		span 5 1 2 4 work 70 80 10
		span 4 1 1 1 work 60 90 20
		span 1 1 0 0 main 0 100 30
		span 7 2 1 6 leaf 10 20 10
		span 6 2 0 0 main 5 25 10 ring_start
	} >"$1/spans.jsonl" &&
	cat >"$1/manifest.json" <<-EOF &&
	{"v":2,"analysis_id":"default","snapshot":"","snapshot_id":"hand",
	 "decoder":"native","capture":{"start_ns":1000,"end_ns":1100},
	 "quality":{"spans":7,"insns":240,"gaps":{"syscall":1},
	 "gap_ns":{"syscall":10}},
	 "threads":[{"tid":1,"first_ns":0,"last_ns":100,"gap_ns":10,"spans":5},
	  {"tid":2,"first_ns":5,"last_ns":25,"gap_ns":0,"spans":2}]}
	EOF
	"$MSEAL" "$1/manifest.json" &&
	cat >"$1/threads.jsonl" <<-EOF &&
	{"v":1,"tid":1,"pid":1,"name":"one","wrapped":false,"first_ns":0,"last_ns":100,"gap_ns":10,"blocks":9,"insns":200,"spans":5,"gaps":1,"max_depth":2,"min_depth":0,"tail_calls":0,"signals":0,"unwound":0,"cut_frames":0,"ret_mismatch":0,"trace_bytes":64,"decode_errors":0,"overflows":0,"bytes_skipped":0}
	{"v":1,"tid":2,"pid":2,"name":"two","wrapped":true,"first_ns":5,"last_ns":25,"gap_ns":0,"blocks":3,"insns":40,"spans":2,"gaps":0,"max_depth":1,"min_depth":0,"tail_calls":0,"signals":0,"unwound":0,"cut_frames":0,"ret_mismatch":0,"trace_bytes":16,"decode_errors":0,"overflows":0,"bytes_skipped":0}
	EOF
	cat >"$1/gaps.jsonl" <<-EOF &&
	{"v":1,"tid":1,"cause":"syscall","ip":"0x1010","resume_ip":"0x1012","start_ns":50,"end_ns":60,"dur_ns":10,"frames_cut":0}
	EOF
	: >"$1/inline.jsonl"
}

test_expect_success 'a missing index.bin is rebuilt from spans.jsonl' "
	make_hand $H &&
	ptquery $H --kind threads >out 2>err &&
	test_eq 'ptquery: warning: $H: index.bin missing: rebuilt from spans.jsonl' \"\$(cat err)\" &&
	test -s $H/index.bin &&
	ptquery $H --kind threads >out 2>err && test ! -s err
"

test_expect_success 'hotpaths: exact figures, recursion counted once' "
	ptquery $H --kind hotpaths --incomplete >out 2>err &&
	test ! -s err &&
	cat >want <<-EOF &&
	calls=3 spans=3 total_ns=70 self_ns=50 insns=140 self_insns=100 mean_ns=26 max_ns=40 note=- module=/bin/hand name=work
	calls=1 spans=2 total_ns=120 self_ns=40 insns=240 self_insns=80 mean_ns=60 max_ns=100 note=- module=/bin/hand name=main
	calls=2 spans=2 total_ns=30 self_ns=30 insns=60 self_insns=60 mean_ns=15 max_ns=20 note=- module=/bin/hand name=leaf
	EOF
	test_cmp want out &&
	ptquery $H --kind hotpaths >out 2>err &&
	grep -x 'calls=1 spans=1 total_ns=100 self_ns=30 insns=200 self_insns=60 mean_ns=100 max_ns=100 note=incomplete_left_out module=/bin/hand name=main' out &&
	test_eq 'ptquery: warning: $H: 1 incomplete spans (begun before the history the analysis holds) left out of the ranking: --incomplete counts them' \"\$(cat err)\"
"

test_expect_success 'hotpaths --sort every numeric column; bad columns refused' "
	for c in calls spans total_ns self_ns insns self_insns mean_ns max_ns; do
		ptquery $H --kind hotpaths --sort \$c --format csv |
		    awk -F, 'NR > 1 { print \$NF0 }' >/dev/null || return 1
	done &&
	ptquery $H --kind hotpaths --sort total_ns | sed 's/.*name=//' >out &&
	printf 'main\nwork\nleaf\n' >want && test_cmp want out &&
	ptquery $H --kind hotpaths --sort max_ns | sed 's/.*name=//' >out &&
	printf 'main\nwork\nleaf\n' >want && test_cmp want out &&
	must_exit 2 ptquery $H --kind hotpaths --sort name 2>err &&
	test_eq \"ptquery: --sort: 'name' is not a numeric column of hotpaths (calls|spans|total_ns|self_ns|insns|self_insns|mean_ns|max_ns)\" \"\$(cat err)\"
"

test_expect_success 'hotpaths: self 0 with a nonzero total says so' "
	d=\$PWD/callees && make_hand \$d &&
	sed -i 's/\"fn\":\"work\",\"raw\":\"work\"\\(.*\\)\"self_ns\":20/\"fn\":\"work\",\"raw\":\"work\"\\1\"self_ns\":0/' \$d/spans.jsonl &&
	sed -i 's/\"self_ns\":10,\\(.*\"fn\":\"work\"\\)/\"self_ns\":0,\\1/' \$d/spans.jsonl &&
	sed -i 's/\"id\":5,\\(.*\\)\"self_ns\":10/\"id\":5,\\1\"self_ns\":0/' \$d/spans.jsonl &&
	ptquery \$d --kind hotpaths --function work 2>/dev/null >out &&
	grep -q 'total_ns=70 self_ns=0 .* note=all_in_callees module=/bin/hand name=work' out
"

test_expect_success 'hotpaths --group module and the table format' "
	ptquery $H --kind hotpaths --incomplete --group module >out &&
	test_eq 'calls=6 spans=7 total_ns=120 self_ns=120 insns=240 self_insns=240 mean_ns=32 max_ns=100 note=- module=- name=/bin/hand' \"\$(cat out)\" &&
	ptquery $H --kind hotpaths --incomplete --format table >out &&
	cat >want <<-EOF &&
	calls  spans  total_ns  self_ns  insns  self_insns  mean_ns  max_ns  note  module     name
	    3      3        70       50    140         100       26      40  -     /bin/hand  work
	    1      2       120       40    240          80       60     100  -     /bin/hand  main
	    2      2        30       30     60          60       15      20  -     /bin/hand  leaf
	EOF
	test_cmp want out
"

test_expect_success 'hotpaths csv and json: fixed header, cursor column' "
	ptquery $H --kind hotpaths --incomplete --format csv --limit 2 >out &&
	cat >want <<-EOF &&
	calls,spans,total_ns,self_ns,insns,self_insns,mean_ns,max_ns,note,module,name,next_cursor
	3,3,70,50,140,100,26,40,-,/bin/hand,work,o2
	1,2,120,40,240,80,60,100,-,/bin/hand,main,o2
	EOF
	test_cmp want out &&
	ptquery $H --kind hotpaths --format json --limit 1 >out &&
	jq -e '.kind == \"hotpaths\" and .next_cursor == \"o1\" and
	    (.rows | length) == 1 and .rows[0].name == \"work\" and
	    .rows[0].self_ns == 50 and .total_rows == 3 and
	    .summary == \"3 functions, 6 spans, 110 ns of self time (1 incomplete spans, 10 ns of self time, left out)\"' out
"

test_expect_success 'timeline: time order with depth, filters' "
	ptquery $H --kind timeline --format csv >out &&
	head -n 1 out >hdr &&
	test_eq 'id,parent,tid,depth,start_ns,end_ns,dur_ns,self_ns,insns,self_insns,start,end,module,name,next_cursor' \"\$(cat hdr)\" &&
	cut -d, -f1 out | tail -n +2 | tr '\n' ' ' >ids &&
	test_eq '1 6 2 7 3 4 5 ' \"\$(cat ids)\" &&
	grep -q '^6,0,2,0,5,25,20,10,40,20,ring_start,seen,/bin/hand,main,\$' out &&
	ptquery $H --kind timeline --tid 2 | sed 's/ .*//' | tr '\n' ' ' >ids &&
	test_eq 'id=6 id=7 ' \"\$(cat ids)\" &&
	ptquery $H --kind timeline --from 60 --to 75 | sed 's/ .*//' |
	    tr '\n' ' ' >ids &&
	test_eq 'id=1 id=4 id=5 ' \"\$(cat ids)\" &&
	ptquery $H --kind timeline --function work --sort dur_ns |
	    sed 's/ .*//' | tr '\n' ' ' >ids &&
	test_eq 'id=2 id=4 id=5 ' \"\$(cat ids)\"
"

test_expect_success 'calls: callers and callees with counts and times' "
	ptquery $H --kind calls --function work >out &&
	cat >want <<-EOF &&
	relation=caller calls=2 spans=2 total_ns=70 self_ns=40 insns=140 self_insns=80 module=/bin/hand name=main
	relation=caller calls=1 spans=1 total_ns=10 self_ns=10 insns=20 self_insns=20 module=/bin/hand name=work
	relation=callee calls=1 spans=1 total_ns=20 self_ns=20 insns=40 self_insns=40 module=/bin/hand name=leaf
	relation=callee calls=1 spans=1 total_ns=10 self_ns=10 insns=20 self_insns=20 module=/bin/hand name=work
	EOF
	test_cmp want out
"

test_expect_success 'at: every thread s stack at an instant or a span start' "
	ptquery $H --kind at --at 75 | sed 's/ parent.*name=/ /' >out &&
	printf 'id=1 main\nid=4 work\nid=5 work\n' >want && test_cmp want out &&
	ptquery $H --kind at --span 3 | sed 's/ parent.*name=/ /' >out &&
	printf 'id=1 main\nid=2 work\nid=3 leaf\nid=6 main\n' >want &&
	test_cmp want out &&
	must_exit 2 ptquery $H --kind at 2>err &&
	test_eq 'ptquery: --kind at: needs --at NS or --span ID' \"\$(cat err)\" &&
	must_exit 1 ptquery $H --kind at --span 99 2>err &&
	test_eq 'ptquery: $H: no span with id 99' \"\$(cat err)\"
"

test_expect_success 'gaps and threads: the rows of their files' "
	ptquery $H --kind gaps >out &&
	test_eq 'tid=1 start_ns=50 end_ns=60 dur_ns=10 frames_cut=0 ip=0x1010 resume_ip=0x1012 cause=syscall' \"\$(cat out)\" &&
	ptquery $H --kind gaps --tid 2 >out && test ! -s out &&
	ptquery $H --kind threads --format csv >out &&
	cat >want <<-EOF &&
	tid,pid,first_ns,last_ns,gap_ns,blocks,insns,spans,gaps,max_depth,min_depth,tail_calls,signals,unwound,cut_frames,decode_errors,overflows,wrapped,name,next_cursor
	1,1,0,100,10,9,200,5,1,2,0,0,0,0,0,0,0,0,one,
	2,2,5,25,0,3,40,2,0,1,0,0,0,0,0,0,0,1,two,
	EOF
	test_cmp want out &&
	ptquery $H --kind threads --sort insns --format json |
	    jq -e '[.rows[].tid] == [1, 2] and .summary == \"2 threads\"'
"

test_expect_success 'summary: window, threads, top, quality, gaps' "
	ptquery $H --kind summary --incomplete >out &&
	cat >want <<-EOF &&
	analysis=$H snapshot=hand decoder=native recorder=-
	capture window_ns=100 trigger=unknown processes=2 threads=2
	thread pid=1 tid=1 first_ns=0 last_ns=100 covered_ns=90 spans=5
	thread pid=2 tid=2 first_ns=5 last_ns=25 covered_ns=20 spans=2
	top rank=1 self_ns=50 calls=3 total_ns=70 name=work
	top rank=2 self_ns=40 calls=1 total_ns=120 name=main
	top rank=3 self_ns=30 calls=2 total_ns=30 name=leaf
	quality spans=7 insns=240 blocks=0 spans_unnamed=0 tail_calls=0 signals=0 unwound=0 cut_frames=0 ret_mismatch=0 decode_errors=0 overflows=0 wrapped_threads=0 images_missing=0 inline_insns=0
	gaps count=1 gap_ns=10 syscall=1
	EOF
	test_cmp want out &&
	ptquery $H --kind summary --format json |
	    jq -e '.window_ns == 100 and .top[0].name == \"work\" and
	    .gaps == 1 and .gap_ns == 10 and .quality.spans == 7 and
	    ([.threads[].covered_ns] == [90, 20]) and .trigger == \"unknown\"
	    and ([.threads[].pid] == [1, 2])' &&
	ptquery $H --kind summary >out &&
	grep -x 'top rank=2 self_ns=30 calls=1 total_ns=100 name=main' out &&
	grep -x 'incomplete spans=1 self_ns=10 left out of top (--incomplete ranks them)' out
"

test_expect_success 'folded: stacks with self time, summing to it exactly' "
	ptquery $H --kind hotpaths --format folded >out &&
	cat >want <<-EOF &&
	main 40
	main;leaf 10
	main;work 40
	main;work;leaf 20
	main;work;work 10
	EOF
	test_cmp want out &&
	ptquery $H --kind timeline --function leaf --format folded >out &&
	printf 'main;leaf 10\nmain;work;leaf 20\n' >want && test_cmp want out
"

# Each thread's spans in call order; times to the nanosecond (the export
# moves a time by less than a picosecond per event sharing its ns).
test_expect_success 'chrome: valid JSON, strictly nested, exact times' "
	ptquery $H --kind timeline --format chrome >out &&
	jq -e -f $PTKIT_SRC/tests/e2e/query-nested.jq out &&
	jq -e '[.traceEvents[] | select(.ph == \"X\") |
	    \"\\(.tid) \\(.name) \\(.ts * 1000 | round) \\((.ts + .dur) * 1000 |
	    round)\"] == [\"1 main 0 100\", \"1 work 10 50\", \"1 leaf 20 40\",
	    \"1 work 60 90\", \"1 work 70 80\", \"2 main 5 25\", \"2 leaf 10 20\"]
	    and .next_cursor == null and
	    ([.traceEvents[] | select(.ph == \"M\") | \"\\(.name) \\(.args.name)\"]
	    == [\"process_name one\", \"thread_name one\", \"process_name two\",
	    \"thread_name two\"]) and
	    all(.traceEvents[] | select(.ph == \"X\"); has(\"args\") | not)' out &&
	ptquery $H --kind timeline --format chrome --limit 3 >out &&
	jq -e '.next_cursor == \"o3\"' out
"

test_expect_success 'fxt: every record parses; events are the timeline' "
	ptquery $H --kind timeline --format fxt >out.fxt &&
	$FXTREAD out.fxt -e >out &&
	cat >want <<-EOF &&
	1 0 100 hand main
	2 5 25 hand main
	1 10 50 hand work
	2 10 20 hand leaf
	1 20 40 hand leaf
	1 60 90 hand work
	1 70 80 hand work
	records=30 strings=8 threads=2 kobjs=4 events=14 slices=7 dropped=0
	EOF
	test_cmp want out &&
	$FXTREAD out.fxt -p >out &&
	cat >want <<-EOF &&
	process 1 one
	process 2 two
	thread 1 1 one
	thread 2 2 two
	records=30 strings=8 threads=2 kobjs=4 events=14 slices=7 dropped=0
	EOF
	test_cmp want out
"

test_expect_success 'fxt: string and thread tables past their limits' "
	$PTKIT_BUILD/bench/gen_analysis big 60000 100000 300 >/dev/null &&
	ptquery big --kind timeline --format fxt >big.fxt &&
	$FXTREAD big.fxt >out &&
	grep -q ' threads=255 kobjs=600 events=120000 slices=60000 dropped=0\$' out &&
	strings=\$(sed 's/.*strings=\\([0-9]*\\).*/\\1/' out) &&
	test \$strings -gt 32767 &&
	ptquery big --kind timeline --format csv | tail -n +2 |
	    awk -F, '{ print \$3, \$5, \$6, \$14 }' | sort >want &&
	$FXTREAD big.fxt -e | sed '\$d' | awk '{ print \$1, \$2, \$3, \$5 }' |
	    sort >got &&
	test_cmp want got
"

# page KIND FORMAT LIMIT [MAXBYTES]: follows next_cursor through every
# page (json), printing each row once as compact JSON.
page() {
	cursor= n=0
	while :; do
		ptquery "$1" --kind "$2" --format json --limit "$3" \
		    ${4:+--max-bytes ${4-}} ${cursor:+--cursor $cursor} >p.json ||
		    return 1
		[ -z "${4-}" ] || [ $(wc -c <p.json) -le "$4" ] || return 1
		jq -c '.rows[]' p.json
		cursor=$(jq -r '.next_cursor // empty' p.json)
		n=$((n + 1))
		[ -n "$cursor" ] || break
		[ $n -lt 10000 ] || return 1
	done
}

test_expect_success 'paging yields every row exactly once, every kind' "
	for k in hotpaths timeline gaps threads; do
		ptquery $H --kind \$k --format json | jq -c '.rows[]' >all &&
		page $H \$k 2 >paged && test_cmp all paged || return 1
	done &&
	ptquery $H --kind calls --function work --format json |
	    jq -c '.rows[]' >all &&
	ptquery $H --kind calls --function work --format json --limit 3 \
	    >p1 && jq -r .next_cursor p1 >c &&
	ptquery $H --kind calls --function work --format json --limit 3 \
	    --cursor \$(cat c) >p2 &&
	jq -c '.rows[]' p1 p2 >paged && test_cmp all paged
"

test_expect_success '--max-bytes: truncated, valid, with next_cursor' "
	ptquery $H --kind timeline --format json --max-bytes 700 >out &&
	test \$(wc -c <out) -le 700 &&
	jq -e '(.rows | length) > 0 and (.rows | length) < 7 and
	    .next_cursor != null' out &&
	ptquery $H --kind timeline --format json | jq -c '.rows[]' >all &&
	page $H timeline 100 700 >paged && test_cmp all paged &&
	ptquery $H --kind timeline --format csv --max-bytes 200 >out &&
	test \$(wc -c <out) -le 200 && test \$(wc -l <out) -ge 2 &&
	need=\$(ptquery $H --kind timeline --limit 1 | wc -c) &&
	must_exit 2 ptquery $H --kind timeline --max-bytes 1 >out 2>err &&
	test ! -s out &&
	test_eq \"ptquery: --max-bytes: 1 bytes do not hold row 0, which needs \$need: give a larger budget\" \"\$(cat err)\" &&
	must_exit 2 ptquery $H --kind timeline --limit 0 2>err &&
	test_eq 'ptquery: --limit 0 gives no rows: a page has at least one' \"\$(head -1 err)\"
"

test_expect_success 'a stale or corrupt index.bin is rebuilt' "
	d=\$PWD/stale && make_hand \$d && ptquery \$d --kind gaps 2>/dev/null &&
	ptquery \$d --kind hotpaths --incomplete >before &&
	echo 'not an index' >\$d/index.bin &&
	ptquery \$d --kind hotpaths --incomplete >out 2>err &&
	test_eq \"ptquery: warning: \$d: index.bin 13 bytes, too short for a span index: rebuilt from spans.jsonl\" \"\$(cat err)\" &&
	test_cmp before out &&
	touch -d '1 hour ago' \$d/index.bin &&
	ptquery \$d --kind hotpaths --incomplete >out 2>err &&
	test_eq \"ptquery: warning: \$d: index.bin older than spans.jsonl: rebuilt from spans.jsonl\" \"\$(cat err)\" &&
	test_cmp before out &&
	$PTKIT_BUILD/bench/gen_analysis g5 5 1 1 >/dev/null &&
	cp g5/index.bin \$d/index.bin &&
	ptquery \$d --kind hotpaths --incomplete >out 2>err &&
	test_eq \"ptquery: warning: \$d: index.bin holds 5 spans, the manifest says 7: rebuilt from spans.jsonl\" \"\$(cat err)\" &&
	test_cmp before out"

test_expect_success 'errors: missing directory, not an analysis, unknown function' "
	must_exit 1 ptquery nodir --kind summary >out 2>err &&
	test ! -s out &&
	test_eq 'ptquery: nodir: no such directory' \"\$(cat err)\" &&
	mkdir empty && must_exit 1 ptquery empty --kind summary 2>err &&
	test_eq 'ptquery: empty: not an analysis directory (no spans.jsonl, no index.bin)' \"\$(cat err)\" &&
	must_exit 1 ptquery $H --kind calls --function nope 2>err &&
	test_eq \"ptquery: $H: no function named 'nope'\" \"\$(cat err)\" &&
	must_exit 1 ptquery $H --kind hotpaths --function nope 2>err &&
	test_eq \"ptquery: $H: no function named 'nope'\" \"\$(cat err)\" &&
	must_exit 1 ptquery $H --kind timeline --function nope 2>err &&
	test_eq \"ptquery: $H: no function named 'nope'\" \"\$(cat err)\" &&
	must_exit 2 ptquery $H --kind hotpaths --cursor x2 2>err &&
	test_eq \"ptquery: --cursor: 'x2' is not a cursor of this query: use the next_cursor of the previous page\" \"\$(cat err)\" &&
	must_exit 2 ptquery $H --kind gaps --format chrome 2>err &&
	test_eq 'ptquery: --format: chrome does not apply to --kind gaps: use text, table, csv or json' \"\$(cat err)\" &&
	printf '{\"v\":1}\n' >bad.jsonl && d=\$PWD/badspans && make_hand \$d &&
	cp bad.jsonl \$d/spans.jsonl &&
	must_exit 1 ptquery \$d --kind hotpaths 2>err &&
	test_eq \"ptquery: \$d: spans.jsonl line 1: not a span record\" \"\$(cat err)\"
"

test_done

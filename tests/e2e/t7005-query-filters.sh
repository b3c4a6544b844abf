#!/bin/sh
# Every filter on every kind and format, against the same question asked
# of the unfiltered spans.jsonl with jq: --tid, --pid, the window
# (--from inclusive, --to exclusive), --at, --group, --module and
# --exclude-module, exact counts; filters a kind has no use for, and
# threads, processes and images the analysis does not have, are errors.
# The program is tests/fixtures/mcp/agent (two threads, one process,
# three images), recorded with emu.
. "$(dirname "$0")/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip 'every filter on every kind' 'jq missing'
	test_done
fi

AGENT=$PTKIT_BUILD/tests/fixtures/mcp/agent
S=$TEST_ROOT/snap
A=$S/derived/default
J=$TEST_ROOT/spans.plain
I=$TEST_ROOT/inline.plain

# jq_n FILTER: the number of spans of spans.jsonl that FILTER selects.
jq_n() {
	jq -n "[inputs | select($1)] | length" "$J"
}

# jq_sum FIELD FILTER: their FIELD summed.
jq_sum() {
	jq -n "[inputs | select($2) | .$1] | add // 0" "$J"
}

# The selections, as jq sees them.
complete='(.start != "ring_start" and .start != "gap")'
agent='(.module | endswith("/agent"))'

test_expect_success 'record, decode and span the agent program' "
	ptrec --recorder emu -o $S -- $AGENT >/dev/null 2>rec.err &&
	mkdir -p $S/derived &&
	ptdecode $S 2>dec.err | ptspans -o $A >/dev/null &&
	spans_jsonl $A >$J && inline_jsonl $A >$I &&
	jq -n '[inputs.tid] | unique | length' $J >n && test_eq 2 \"\$(cat n)\" &&
	main=\$(jq -n -r '[inputs | select(.fn == \"main\")][0].tid' $J) &&
	spin=\$(jq -n -r '[inputs | select(.fn == \"spin\")][0].tid' $J) &&
	pid=\$(jq -n -r '[inputs][0].pid' $J) &&
	from=\$(jq -n '[inputs | select(.fn == \"score.constprop.0\") | .start_ns] | min' $J) &&
	to=\$(jq -n '[inputs | select(.fn == \"step\") | .start_ns] | sort | .[1500]' $J) &&
	test \$from -lt \$to &&
	echo \"main=\$main spin=\$spin pid=\$pid from=\$from to=\$to\" >$TEST_ROOT/ids
"
main=0 spin=0 pid=0 from=0 to=0
[ -e "$TEST_ROOT/ids" ] && . "$TEST_ROOT/ids"
sel_tid="(.tid == $spin)"
sel_pid="(.pid == $pid)"
sel_win="(.start_ns >= $from and .start_ns < $to)"

test_expect_success 'hotpaths: --tid, --pid, the window, --module, --exclude-module' "
	for f in tid pid win mod exc; do
		case \$f in
		tid) opt='--tid $spin'; sel='$sel_tid' ;;
		pid) opt='--pid $pid'; sel='$sel_pid' ;;
		win) opt='--from $from --to $to'; sel='$sel_win' ;;
		mod) opt='--module agent'; sel=\$agent ;;
		exc) opt='--exclude-module agent'; sel=\"(\$agent | not)\" ;;
		esac
		ptquery $A --kind hotpaths \$opt --limit 100000 --format json >h.\$f &&
		test_eq \"\$(jq_n \"\$sel and \$complete\")\" \"\$(jq '[.rows[].spans] | add' h.\$f)\" &&
		test_eq \"\$(jq_sum self_insns \"\$sel and \$complete\")\" \"\$(jq '[.rows[].self_insns] | add' h.\$f)\" || return 1
	done &&
	ptquery $A --kind hotpaths --group module --exclude-module agent --format json >m &&
	jq -e '.rows | length == 2 and all(.name | endswith(\"/agent\") | not)' m
"

test_expect_success 'folded: the same filters, and --group module, sum exactly' "
	for f in tid pid win mod exc; do
		case \$f in
		tid) opt='--tid $spin'; sel='$sel_tid' ;;
		pid) opt='--pid $pid'; sel='$sel_pid' ;;
		win) opt='--from $from --to $to'; sel='$sel_win' ;;
		mod) opt='--module agent'; sel=\$agent ;;
		exc) opt='--exclude-module agent'; sel=\"(\$agent | not)\" ;;
		esac
		ptquery $A --kind hotpaths \$opt --format folded --weight insns >f.\$f &&
		test_eq \"\$(jq_sum self_insns \"\$sel\")\" \"\$(awk '{ s += \$NF } END { print s + 0 }' f.\$f)\" || return 1
	done &&
	ptquery $A --kind hotpaths --group module --format folded --weight insns >g &&
	test_eq \"\$(jq_sum self_insns true)\" \"\$(awk '{ s += \$NF } END { print s }' g)\" &&
	awk '{ n = split(\$1, f, \";\"); for (i = 2; i <= n; i++) if (f[i] == f[i - 1]) bad = 1 } END { exit bad }' g &&
	grep -q '^agent;libc.so.6;agent ' g
"

test_expect_success 'timeline: every filter, in json, csv and chrome' "
	tl='(.start_ns < $to and .end_ns >= $from)' &&
	for f in tid pid win mod exc; do
		case \$f in
		tid) opt='--tid $spin'; sel='$sel_tid' ;;
		pid) opt='--pid $pid'; sel='$sel_pid' ;;
		win) opt='--from $from --to $to'; sel=\$tl ;;
		mod) opt='--module agent'; sel=\$agent ;;
		exc) opt='--exclude-module agent'; sel=\"(\$agent | not)\" ;;
		esac
		want=\$(jq_n \"\$sel\") &&
		test_eq \$want \"\$(ptquery $A --kind timeline \$opt --limit 1 --format json | jq .total_rows)\" &&
		test_eq \$want \"\$(ptquery $A --kind timeline \$opt --limit 100000 --format csv | tail -n +2 | wc -l)\" &&
		test_eq \$want \"\$(ptquery $A --kind timeline \$opt --limit 100000 --format chrome | jq '[.traceEvents[] | select(.ph == \"X\")] | length')\" || return 1
	done
"

test_expect_success 'at: --tid, --pid, --module at an instant, and folded' "
	at=\$(jq -n '[inputs | select(.fn == \"lookup\") | .start_ns] | min' $J) &&
	inst=\"(.start_ns <= \$at and .end_ns > \$at)\" &&
	test_eq \"\$(jq_n \"\$inst\")\" \"\$(ptquery $A --kind at --at \$at --format json | jq .total_rows)\" &&
	test_eq \"\$(jq_n \"\$inst and $sel_tid\")\" \"\$(ptquery $A --kind at --at \$at --tid $spin --format json | jq .total_rows)\" &&
	test_eq \"\$(jq_n \"\$inst and $sel_pid\")\" \"\$(ptquery $A --kind at --at \$at --pid $pid --format json | jq .total_rows)\" &&
	test_eq \"\$(jq_n \"\$inst and \$agent\")\" \"\$(ptquery $A --kind at --at \$at --module agent --format json | jq .total_rows)\" &&
	test_eq \"\$(jq_n \"\$inst and \$agent\")\" \"\$(ptquery $A --kind at --at \$at --module agent --format chrome | jq '[.traceEvents[] | select(.ph == \"X\")] | length')\" &&
	ptquery $A --kind at --at \$at --format folded --weight insns >f &&
	test_eq \"\$(jq_sum self_insns \"\$inst and .self_insns > 0\")\" \"\$(awk '{ s += \$NF } END { print s }' f)\" &&
	grep -q ';main;lookup ' f
"

test_expect_success 'tree: every span once at any depth, for each filter' "
	for f in none tid win mod; do
		case \$f in
		none) opt=''; sel=true ;;
		tid) opt='--tid $spin'; sel='$sel_tid' ;;
		win) opt='--from $from --to $to'; sel='$sel_win' ;;
		mod) opt='--module agent'; sel=\$agent ;;
		esac
		ptquery $A --kind tree \$opt --depth 64 --min-share 0 --limit 100000 --format json >t.\$f &&
		test_eq \"\$(jq_n \"\$sel\")\" \"\$(jq '[.rows[].spans] | add' t.\$f)\" &&
		jq -e '.note == null' t.\$f >/dev/null || return 1
	done &&
	jq -e '.rows | map(.path) | all(test(\"__libc_start_main|_dl_\") | not)' t.mod
"

test_expect_success 'calls: --tid, the window and --module on callers and callees' "
	ids=\$(jq -n -c '[inputs | select(.fn == \"main\") | .id]' $J) &&
	test_eq \"\$(jq_n \"(.parent as \\\$p | \$ids | index(\\\$p)) and $sel_win\")\" \"\$(ptquery $A --kind calls --function main --from $from --to $to --format json | jq '[.rows[] | select(.relation == \"callee\") | .spans] | add')\" &&
	test_eq 0 \"\$(ptquery $A --kind calls --function main --tid $spin --format json | jq '.rows | length')\" &&
	test_eq \"\$(jq_n \"(.parent as \\\$p | \$ids | index(\\\$p)) and \$agent\")\" \"\$(ptquery $A --kind calls --function main --module agent --format json | jq '[.rows[] | select(.relation == \"callee\") | .spans] | add')\"
"

test_expect_success 'images, summary, threads, gaps: --tid and the window' "
	test_eq \"\$(jq_n \"$sel_tid\")\" \"\$(ptquery $A --kind images --tid $spin --format json | jq '[.rows[].spans] | add')\" &&
	test_eq \"\$(jq_n \"$sel_win and \$agent\")\" \"\$(ptquery $A --kind images --from $from --to $to --module agent --format json | jq '[.rows[].spans] | add')\" &&
	ptquery $A --kind summary --tid $spin --format json >s &&
	jq -e '(.threads | length) == 1 and .threads[0].tid == $spin and (.top | map(.name) | index(\"main\")) == null' s &&
	test_eq \"\$(jq -n -c '[inputs | select(.tid == $spin and .start != \"ring_start\" and .start != \"gap\")] | group_by([.fn, .module]) | map(map(.self_ns) | add) | sort | reverse | .[:5]' $J)\" \"\$(jq -c '.top | map(.self_ns)' s)\" &&
	jq -e -n --slurpfile s s '[inputs | select(.tid == $spin) | .fn] | unique as \$f | \$s[0].top | all(.name as \$n | \$f | any(.[]; . == \$n))' $J &&
	test_eq 1 \"\$(ptquery $A --kind threads --tid $spin --format json | jq '.rows | length')\" &&
	test_eq 2 \"\$(ptquery $A --kind threads --pid $pid --format json | jq '.rows | length')\" &&
	test_eq \"\$(jq -s 'map(select(.tid == $spin)) | length' $A/gaps.jsonl)\" \"\$(ptquery $A --kind gaps --tid $spin --limit 100000 --format json | jq .total_rows)\"
"

test_expect_success 'branches and insns: --tid and --module' "
	test_eq 0 \"\$(ptquery $A --kind branches --function lookup --tid $spin --format json | jq .total_rows)\" &&
	test_eq 4 \"\$(ptquery $A --kind branches --function lookup --tid $main --format json | jq .total_rows)\" &&
	w=\$(jq -n -r '[inputs | select(.fn == \"main\") | .start_ns][0]' $J) &&
	to=\$(jq -n '[inputs | select(.fn == \"lookup\") | .end_ns] | min' $J) &&
	w=\"--from \$w --to \$((to + 1))\" &&
	ptquery $A --kind insns --tid $main \$w --limit 100000 --format json >all &&
	ptquery $A --kind insns --tid $main \$w --module agent --limit 100000 --format json >mod &&
	test_eq \"\$(jq '[.rows[] | select(.ip | startswith(\"0x40000\") and length == 12)] | length' all)\" \"\$(jq .total_rows mod)\" &&
	test \$(jq .total_rows mod) -lt \$(jq .total_rows all)
"

test_expect_success 'a thread, process or image the analysis lacks: an error naming those it has' "
	must_fail ptquery $A --kind hotpaths --tid 1 2>err &&
	test_eq \"ptquery: $A: --tid 1: no such thread; the threads with spans: $main, $spin\" \"\$(cat err)\" &&
	must_fail ptquery $A --kind timeline --pid 1 2>err &&
	test_eq \"ptquery: $A: --pid 1: no such process; the processes with spans: $pid\" \"\$(cat err)\" &&
	must_fail ptquery $A --kind tree --exclude-module nosuch.so 2>err &&
	grep -q \"^ptquery: $A: --exclude-module nosuch.so: no span is in such an image; the images with spans: .*/agent\" err
"

test_expect_success 'filters a kind has no use for: usage errors, not ignored' "
	must_exit 2 ptquery $A --kind timeline --at 5 2>err &&
	test_eq 'ptquery: --at does not apply to --kind timeline' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind at --at 5 --from 1 2>err &&
	test_eq 'ptquery: --from does not apply to --kind at' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind tree --group module 2>err &&
	test_eq 'ptquery: --group does not apply to --kind tree' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind gaps --module agent 2>err &&
	test_eq 'ptquery: --module does not apply to --kind gaps' \"\$(head -n 1 err)\" &&
	must_exit 2 ptquery $A --kind source --function main --tid $main 2>err &&
	test_eq 'ptquery: --tid does not apply to --kind source' \"\$(head -n 1 err)\"
"

test_done

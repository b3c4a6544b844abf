#!/bin/sh
# ptrec --recorder emu on programs with dozens of threads: at the default
# settings every thread is traced exactly; rings take the budget only as
# they fill, so threads that ended leave room for new ones; and whatever
# is not kept is said on ptrec's stderr, in the manifest's warnings, and
# in ptdecode's, ptquery's and ptmcp's summaries, with the exact count.
# The waves fixture prints each thread's tid and its calls of tick().
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"
. "$(dirname "$0")/mcp.sh"

if ! command -v perf >/dev/null || ! command -v jq >/dev/null; then
	test_skip "emu threads" "perf or jq missing"
	test_done
fi

# record ARGS...: waves under emu, with its ground truth, into snap/.
record() {
	ptrec --recorder emu -o snap --emu-truth truth "$@" >path 2>err &&
	test_eq "$PWD/snap" "$(cd "$(cat path)" && pwd)"
}

# analyse: snap/ decoded (its summary line in decode.err) into an/.
analyse() {
	ptdecode snap >blocks 2>decode.err &&
	ptspans -o an <blocks >/dev/null
}

# started: the threads the run had, main included (the fixture says).
started() {
	echo $(($(sed -n 's/^threads //p' snap/output.log) + 1))
}

# check_calls: every traced thread's calls of tick equal what it printed;
# prints how many threads it compared.
check_calls() {
	jq -r '.threads[] | select(.wrapped | not) | .tid' snap/manifest.json \
	    >kept.tids &&
	n=0 &&
	while read -r _ tid _ want; do
		grep -qx "$tid" kept.tids || continue
		got=$(ptquery an --kind calls --function tick --tid "$tid" \
		    --format json | jq '[.rows[] | select(.relation ==
		    "caller") | .calls] | add') &&
		test_eq "$want" "$got" || return 1
		n=$((n + 1))
	done <<-EOF &&
	$(grep '^thread [0-9]* calls [0-9]*$' snap/output.log)
	EOF
	echo "$n"
}

# printed_absent: how many tids the fixture printed have no manifest row.
printed_absent() {
	jq -r '.threads[].tid' snap/manifest.json | sort >all.tids &&
	sed -n 's/^thread \([0-9]*\) calls .*/\1/p' snap/output.log | sort |
	    comm -23 - all.tids | wc -l
}

for v in "" .static; do
	test_expect_success "waves$v: 32 threads in waves at the default settings, all exact" "
		record -- \"\$EMU_FIX/waves$v\" &&
		test_eq 33 \$(started) &&
		! grep '^ptrec: ' err &&
		jq -e '.threads | length == 33' snap/manifest.json &&
		jq -e '.warnings == []' snap/manifest.json &&
		jq -e '.counters.untraced_threads == 0 and
		    .counters.budget_dropped_threads == 0' snap/manifest.json &&
		jq -e '[.threads[] | select(.exited and (.wrapped | not))] |
		    length == 33' snap/manifest.json &&
		test_eq 0 \$(printed_absent) &&
		emu_check_parity snap truth >counts &&
		test_eq 33 \$(wc -l <counts) &&
		analyse &&
		! grep untraced decode.err &&
		test_eq 32 \$(check_calls) &&
		ptquery an --kind summary >summary &&
		grep -q '^capture window_ns=[0-9]* trigger=exit processes=1 threads=33\$' summary
	"

	test_expect_success "waves$v: a budget too small, said everywhere with the exact count" "
		record --aux-bytes 64K --budget-bytes 128K \
		    -- \"\$EMU_FIX/waves$v\" 1 32 20000 &&
		test_eq 33 \$(started) &&
		traced=\$(jq '.threads | length' snap/manifest.json) &&
		u=\$((33 - traced)) && test \$u -gt 0 && test \$traced -gt 2 &&
		test_eq \$u \$(printed_absent) &&
		said=\"\$u of 33 threads were not traced: the ring budget (128 KiB) was full; raise --budget-bytes\" &&
		grep '^ptrec: ' err >lost &&
		test_eq \"ptrec: \$said\" \"\$(cat lost)\" &&
		test_eq \"[\\\"\$said\\\"]\" \"\$(jq -c .warnings snap/manifest.json)\" &&
		jq -e \".counters.untraced_threads == \$u and
		    .counters.untraced_budget_full == \$u\" snap/manifest.json &&
		emu_check_parity snap truth >counts &&
		test_eq \$traced \$(wc -l <counts) &&
		analyse &&
		grep -q \"^ptdecode: snap: 1 process, \$traced threads (untraced \$u), \" decode.err &&
		test_eq \$((traced - 1)) \$(check_calls) &&
		ptquery an --kind summary >summary &&
		grep -q \"^capture window_ns=[0-9]* trigger=exit processes=1 threads=\$traced untraced=\$u\\\$\" summary &&
		ptquery an --kind summary --format json >summary.json &&
		jq -e \".untraced == \$u\" summary.json &&
		jq -r .summary summary.json | grep -q \" on \$traced threads (untraced \$u) of 1 process, \" &&
		ptdecode --decoder perf snap >/dev/null 2>perf.err &&
		grep -q \"^ptdecode: snap: perf: \$traced threads (untraced \$u), \" perf.err
	"
done

test_expect_success 'one thread at a time in a small budget: the budget is reused' "
	record --aux-bytes 1M --budget-bytes 2M -- \"\$EMU_FIX/waves\" 8 1 &&
	test_eq 9 \$(started) &&
	! grep '^ptrec: ' err &&
	jq -e '(.threads | length) == 9 and .warnings == []' snap/manifest.json &&
	jq -e '.counters.untraced_threads == 0' snap/manifest.json &&
	emu_check_parity snap truth >counts &&
	test_eq 9 \$(wc -l <counts) &&
	analyse && test_eq 8 \$(check_calls)
"

test_expect_success 'threads that ended give their history back oldest first' "
	record --aux-bytes 64K --budget-bytes 128K \
	    -- \"\$EMU_FIX/waves\" 32 1 20000 &&
	test_eq 33 \$(started) &&
	jq -e '.counters.untraced_threads == 0' snap/manifest.json &&
	k=\$(jq .counters.budget_trimmed_threads snap/manifest.json) &&
	d=\$(jq .counters.budget_dropped_threads snap/manifest.json) &&
	b=\$(jq .counters.budget_dropped_bytes snap/manifest.json) &&
	test \$d -gt 0 && test \$k -ge \$d && test \$b -gt 0 &&
	said=\"\$k of 33 threads gave up the oldest \$b bytes of their history after they ended (\$d of them all of it): the ring budget (128 KiB) was full; raise --budget-bytes\" &&
	grep '^ptrec: ' err >lost &&
	test_eq \"ptrec: \$said\" \"\$(cat lost)\" &&
	test_eq \"[\\\"\$said\\\"]\" \"\$(jq -c .warnings snap/manifest.json)\" &&
	jq -e \".threads | length == 33 - \$d\" snap/manifest.json &&
	sed -n 's/^thread \\([0-9]*\\) calls .*/\\1/p' snap/output.log |
	    head -n \$d >oldest &&
	jq -r '.threads[].tid' snap/manifest.json >all.tids &&
	! grep -x -f oldest all.tids &&
	test_eq \$d \$(printed_absent) &&
	emu_check_parity snap truth >counts &&
	test_eq \$((33 - d)) \$(wc -l <counts) &&
	analyse &&
	grep -q \"^ptdecode: snap: 1 process, \$((33 - d)) threads (untraced \$d), \" decode.err &&
	kept=\$(check_calls) && test \$kept -ge \$((32 - k)) &&
	ptquery an --kind summary >summary &&
	grep -q \" untraced=\$d\\\$\" summary
"

test_expect_success 'ptmcp trace_status: untraced and the warning of its snapshot' "
	PTKIT_STORE=\$PWD/store && export PTKIT_STORE &&
	mcp_open out &&
	mcp_tool 1 trace_start \"{\\\"program\\\":[\\\"\$EMU_FIX/waves\\\",\\\"1\\\",\\\"32\\\",\\\"20000\\\"],\\\"recorder\\\":\\\"emu\\\",\\\"aux_bytes\\\":65536,\\\"budget_bytes\\\":131072}\" >start &&
	sid=\$(jq -r .result.structuredContent.session_id start) &&
	k=0 && state=running &&
	while [ \"\$state\" = running ] && [ \$k -lt 600 ]; do
		mcp_tool 2\$k trace_status \"{\\\"session_id\\\":\\\"\$sid\\\"}\" >st &&
		state=\$(jq -r .result.structuredContent.state st) || break
		k=\$((k + 1))
		[ \"\$state\" = running ] && sleep 0.1
	done
	mcp_close &&
	test_eq done \"\$state\" &&
	snap=store/snapshots/\$(jq -r '.result.structuredContent.snapshots[0]' st) &&
	u=\$((33 - \$(jq '.threads | length' \$snap/manifest.json))) &&
	test \$u -gt 0 &&
	said=\"\$u of 33 threads were not traced: the ring budget (128 KiB) was full; raise --budget-bytes\" &&
	test_eq \$u \$(jq .result.structuredContent.untraced st) &&
	test_eq \"[\\\"\$said\\\"]\" \"\$(jq -c .result.structuredContent.warnings st)\" &&
	jq -r '.result.content[0].text' st | head -n 1 >text &&
	grep -q \"^Session \$sid is done after [0-9]* ms; snapshots: .*Its newest snapshot: untraced \$u\\. \$said\\.\\\$\" text
"
test_done

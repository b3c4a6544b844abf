#!/bin/sh
# The emu recorder on programs that make processes: a fork child is its
# own process in the same snapshot (its pid, threads, rings, maps), the
# parent's history goes on after the child ended, and nothing of one
# process reaches another's ring or ground truth.  A program exec'd is
# followed (traced from its first instruction in the same process); an
# exec that cannot be followed is said on stderr and in the manifest.  tests/fixtures/emu/forks.c prints every process's
# exact counts ("count PID FUNCTION N").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

if ! command -v perf >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1
then
	test_skip "processes under emu" "perf or jq missing"
	test_done
fi

# record ARGS...: the forks fixture under emu, with the ground truth.
record() {
	ptrec --recorder emu -o snap --emu-truth truth -- "$EMU_FIX/forks" \
	    "$@" >path 2>err
}

# check_counts [SKIP]: each "count PID FN N" line of the program (but
# those of function SKIP), summed per process and function, equals the
# spans entered by a call in process PID, and perf's calls in PID.
check_counts() {
	# a process that exec'd itself counts each function twice: summed
	grep "^count " snap/output.log | grep -v " ${1:-none} " |
	    awk '{ n[$1 " " $2 " " $3] += $4 } END { for (k in n)
	    print k, n[k] }' >want &&
	test -s want &&
	ptdecode snap >blocks 2>decode.err &&
	ptspans -o an <blocks >/dev/null &&
	spans_jsonl an | jq -r 'select(.start == "seen") | "\(.pid) \(.fn)"' |
	    sort | uniq -c | awk '{ print $2, $3, $1 }' >spans.counts &&
	perf --buildid-dir snap/images script -i snap/perf.data --itrace=cr \
	    -F pid,flags,ip,sym,addr 2>perf.err |
	    awk '$2 == "call" { print $1, $NF }' | sort | uniq -c |
	    awk '{ print $2, $3, $1 }' >perf.counts &&
	while read -r _ pid fn n; do
		test_eq "spans $pid $fn $n" \
		    "spans $(grep "^$pid $fn " spans.counts)" || return 1
		test_eq "perf $pid $fn $n" \
		    "perf $(grep "^$pid $fn " perf.counts)" || return 1
	done <want
}

# pid_of FN: the process that printed FN's count.
pid_of() {
	awk -v f="$1" '$1 == "count" && $3 == f { print $2 }' snap/output.log
}

# check_processes N: N processes in the manifest, each thread once, and
# the decode has no gap (a child decoded with its parent's maps).
check_processes() {
	test_eq "processes $1" "processes $(jq '[.threads[].pid] | unique |
	    length' snap/manifest.json)" &&
	jq -e '[.threads[].tid] | length == (unique | length)' \
	    snap/manifest.json >/dev/null &&
	grep -q " 0 gaps " decode.err
}

test_expect_success 'fork: parent and child exact, each its own process' '
	record fork &&
	grep -q "^status 0\$" snap/output.log &&
	check_counts &&
	check_processes 2 &&
	parent=$(pid_of after_wait) && child=$(pid_of in_child) &&
	test "$parent" != "$child" &&
	jq -e --argjson c "$child" "[.threads[] | select(.pid == \$c)] |
	    length == 1 and .[0].tid == \$c and .[0].exited" \
	    snap/manifest.json >/dev/null &&
	test_eq "[]" "$(jq -c .warnings snap/manifest.json)" &&
	jq -e ".counters.exec_untraced == 0 and (.counters.fork_untraced // 0) == 0" \
	    snap/manifest.json >/dev/null &&
	! grep -q untraced decode.err &&
	! grep -q "^ptrec:" err &&
	emu_check_parity snap truth >parity &&
	test_eq 2 "$(wc -l <parity)" &&
	test_eq "thread $child $child" "$(grep "^thread $child " truth)"
'

test_expect_success 'ptdecode, ptquery: --pid keeps one process apart' '
	record fork &&
	parent=$(pid_of after_wait) && child=$(pid_of in_child) &&
	ptdecode --pid "$child" --format jsonl snap >one.jsonl 2>one.err &&
	grep -q ": 1 process, 1 thread, " one.err &&
	test_eq "$child" "$(jq -r "select(.type == \"thread\") | .pid" \
	    one.jsonl)" &&
	test_eq "$child" "$(jq -r "select(.type == \"map\") | .pid" \
	    one.jsonl | sort -u)" &&
	must_exit 1 ptdecode --pid 1 --format jsonl snap >none 2>none.err &&
	grep -q "no process 1 in the snapshot" none.err &&
	ptdecode snap 2>all.err | ptspans -o an >/dev/null &&
	grep -q ": 2 processes, 2 threads, .* 0 gaps " all.err &&
	ptquery an --kind summary >summary &&
	grep -q "^capture .* processes=2 threads=2\$" summary &&
	grep -q "^thread pid=$child tid=$child " summary &&
	for p in "$parent" "$child"; do
		ptquery an --kind hotpaths --pid "$p" --format json \
		    --limit 500 | jq -r ".rows[] | select(.calls > 0 and
		    (.name | IN(\"before_fork\", \"in_child\",
		    \"after_wait\"))) | \"\(.name) \(.calls)\"" >rows.$p ||
		    return 1
	done &&
	test_eq "before_fork 3,after_wait 4" \
	    "$(sort -r rows.$parent | paste -sd,)" &&
	test_eq "in_child 7" "$(cat rows.$child)"
'

test_expect_success 'vfork: the child is traced as its own process too' '
	record vfork &&
	check_counts &&
	check_processes 2 &&
	emu_check_parity snap truth >parity &&
	test_eq 2 "$(wc -l <parity)"
'

test_expect_success '31 processes: each exact, in its own process' '
	record many &&
	test_eq 30 "$(grep -c "^count [0-9]* in_child 7\$" snap/output.log)" &&
	check_counts &&
	check_processes 31 &&
	emu_check_parity snap truth >parity &&
	test_eq 31 "$(wc -l <parity)"
'

# An exec'd program is followed: traced in the same process from its first
# instruction, its images archived, nothing warned; what it prints itself
# ("count PID FN N") equals its spans and perf's calls in that process.
check_exec_followed() {
	test_eq "[]" "$(jq -c .warnings snap/manifest.json)" &&
	jq -e ".counters.exec_untraced == 0" snap/manifest.json >/dev/null &&
	! grep -q "^ptrec:" err &&
	! grep -q untraced decode.err
}

# count_of PID FN: the count process PID printed for FN.
count_of() {
	awk -v p="$1" -v f="$2" '$1 == "count" && $2 == p && $3 == f {
	    print $4 }' snap/output.log
}

test_expect_success 'exec: the program exec.d traced in the same process' '
	record exec "$EMU_FIX/forks" &&
	test_eq 2 "$(grep -c "^count [0-9]* before_fork 3\$" snap/output.log)" &&
	check_counts &&
	check_processes 2 &&
	check_exec_followed &&
	pid=$(awk "/^count .* in_child /{ print \$2 }" snap/output.log) &&
	parent=$(pid_of after_wait) &&
	grep -q ": 2 processes, 2 threads, " decode.err &&
	jq -e "[.threads[] | select(.pid == $parent)] | length == 1 and
	    .[0].name == \"forks\"" snap/manifest.json >/dev/null &&
	ptdecode --format jsonl snap 2>/dev/null | jq -s -e "[.[] |
	    select(.type == \"event\" and .kind == \"exec\")] |
	    length == 1 and .[0].arg == 1" >/dev/null &&
	grep -q "\"kind\":\"exec\",\"tid\":$parent,.*\"exec\":1}" \
	    an/events.jsonl &&
	test -n "$pid" &&
	emu_check_parity snap truth >parity &&
	test_eq 2 "$(wc -l <parity)"
'

# dash forks for the command of -c: the program is the shell's child.
test_expect_success 'system(PROG): the shell and the program it runs exact' '
	record system "$EMU_FIX/forks fork" &&
	grep -q "^status 0\$" snap/output.log &&
	test_eq 2 "$(grep -c "^count [0-9]* after_wait 4\$" snap/output.log)" &&
	check_counts &&
	check_processes 4 &&
	check_exec_followed &&
	emu_check_parity snap truth >parity &&
	test_eq 4 "$(wc -l <parity)"
'

test_expect_success 'system("true"): parent exact, the shell traced' '
	record system true &&
	check_counts &&
	check_processes 2 &&
	check_exec_followed &&
	grep -q ": 2 processes, 2 threads, .* 0 gaps " decode.err &&
	emu_check_parity snap truth >parity &&
	test_eq 2 "$(wc -l <parity)"
'

test_expect_success 'popen(PROG): parent and program exact through the pipe' '
	record popen "$EMU_FIX/forks fork" &&
	test_eq 2 "$(grep -c "^count [0-9]* after_wait 4\$" snap/output.log)" &&
	check_counts &&
	check_processes 4 &&
	check_exec_followed &&
	emu_check_parity snap truth >parity &&
	test_eq 4 "$(wc -l <parity)"
'

test_expect_success 'posix_spawn(PROG): the spawned program exact' '
	record spawn "$EMU_FIX/forks" &&
	test_eq 2 "$(grep -c "^count [0-9]* after_wait 4\$" snap/output.log)" &&
	check_counts &&
	check_processes 3 &&
	check_exec_followed &&
	emu_check_parity snap truth >parity &&
	test_eq 3 "$(wc -l <parity)"
'

test_expect_success 'sh -c PROG: the shell and the program it exec.d traced' '
	ptrec --recorder emu -o snap --emu-truth truth -- /bin/sh -c \
	    "$EMU_FIX/forks fork" >path 2>err &&
	grep -q "^status 0\$" snap/output.log &&
	check_counts &&
	check_processes 3 &&
	check_exec_followed &&
	sh_pid=$(pid_of after_wait) &&
	jq -e "[.threads[] | select(.pid == $sh_pid)] | .[0].name ==
	    \"forks\"" snap/manifest.json >/dev/null &&
	emu_check_parity snap truth >parity &&
	test_eq 3 "$(wc -l <parity)"
'

# What cannot be followed is said, never written into another ring.
test_expect_success 'an exec from a second thread: warned, the rest exact' '
	record threadexec /bin/true &&
	grep -q "^ptrec: .*: process [0-9]* exec.d /bin/true, which ran without the emulator and was not traced" \
	    err &&
	jq -e "[.warnings[] | select(test(\"exec.d /bin/true, which ran without the emulator\"))] | length == 1" \
	    snap/manifest.json >/dev/null &&
	jq -e ".counters.exec_untraced == 1" snap/manifest.json >/dev/null &&
	check_counts &&
	grep -q ": 1 process (untraced 1), 2 threads, " decode.err
'

test_expect_success '--no-follow: only the first process, the child told' '
	ptrec --recorder emu -o snap --emu-truth truth --no-follow -- \
	    "$EMU_FIX/forks" fork >path 2>err &&
	child=$(pid_of in_child) &&
	test_eq "processes 1" "processes $(jq "[.threads[].pid] | unique |
	    length" snap/manifest.json)" &&
	grep -q "^ptrec: .*: 1 child process was not traced: --no-follow" err &&
	jq -e "[.warnings[] | select(test(\"1 child process was not traced\"))]
	    | length == 1" snap/manifest.json >/dev/null &&
	jq -e ".counters.fork_untraced == 1" snap/manifest.json >/dev/null &&
	! grep -q "^thread $child " truth &&
	check_counts in_child &&
	test_eq "" "$(grep "^$child " spans.counts perf.counts)" &&
	grep -q ": 1 process (untraced 1), 1 thread, " decode.err &&
	ptquery an --kind summary >summary &&
	grep -q "^capture .* processes=1 untraced_processes=1 threads=1\$" \
	    summary &&
	ptquery an --kind summary --format json >summary.json &&
	jq -e ".untraced_processes == 1 and .untraced == 0" summary.json \
	    >/dev/null &&
	emu_check_parity snap truth >parity &&
	test_eq 1 "$(wc -l <parity)" &&
	ptrec --recorder emu -o spawned --no-follow -- "$EMU_FIX/forks" \
	    spawn /bin/true >path 2>err &&
	grep -q "^ptrec: .*: 1 child process was not traced: --no-follow" err &&
	test_eq 1 "$(jq "[.threads[].pid] | unique | length" \
	    spawned/manifest.json)"
'
test_expect_success 'ptdiff pairs the processes of two runs, whatever their pids' '
	ptrec --recorder emu -o a -- /bin/sh -c "$EMU_FIX/forks fork" \
	    >/dev/null 2>&1 &&
	ptrec --recorder emu -o b -- /bin/sh -c "$EMU_FIX/forks fork" \
	    >/dev/null 2>&1 &&
	test "$(jq "[.threads[].pid]" a/manifest.json)" != \
	    "$(jq "[.threads[].pid]" b/manifest.json)" &&
	for s in a b; do
		ptdecode "$s" 2>/dev/null | ptspans -o "$s.an" >/dev/null ||
		    return 1
	done &&
	must_exit 0 ptdiff --format json --fail-on calls:+0% a.an b.an \
	    >diff.json &&
	test_eq "after_wait 4 4 same,before_fork 3 3 same,in_child 7 7 same" \
	    "$(jq -r "[.rows[] | select(.fn | IN(\"in_child\", \"before_fork\",
	    \"after_wait\")) | \"\(.fn) \(.a.calls) \(.b.calls) \(.class)\"] |
	    sort | join(\",\")" diff.json)"
'

test_expect_success '--no-follow is refused where children cannot be dropped' '
	must_exit 2 ptrec --recorder perf --no-follow -- /bin/true 2>err &&
	grep -q "^ptrec: --no-follow: the perf recorder follows a program.s threads and children together: use --recorder emu\$" err
'
test_done

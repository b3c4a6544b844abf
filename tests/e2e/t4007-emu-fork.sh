#!/bin/sh
# The emu recorder on programs that make processes: a fork child is its
# own process in the same snapshot (its pid, threads, rings, maps), the
# parent's history goes on after the child ended, and nothing of one
# process reaches another's ring or ground truth.  A program exec'd runs
# without the emulator (qemu-user does not follow execve): said on stderr
# and in the manifest.  tests/fixtures/emu/forks.c prints every process's
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
# those of function SKIP) equals the spans entered by a call in process
# PID, and perf's calls in PID.
check_counts() {
	grep "^count " snap/output.log | grep -v " ${1:-none} " >want &&
	test -s want &&
	ptdecode snap >blocks 2>decode.err &&
	ptspans -o an <blocks >/dev/null &&
	jq -r 'select(.start == "seen") | "\(.pid) \(.fn)"' an/spans.jsonl |
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

# An exec'd program is not traced: the warning names the process and the
# program, on stderr and in the manifest; what was traced stays exact.
check_exec_warned() {
	grep -q "^ptrec: .*: process [0-9]* exec.d $1, which was not traced" \
	    err &&
	jq -e --arg p "$1" "[.warnings[] | select(test(\"exec.d \" + \$p +
	    \", which was not traced\"))] | length == 1" \
	    snap/manifest.json >/dev/null
}

test_expect_success 'system("true"): parent exact, the shell warned' '
	record system true &&
	check_counts &&
	check_processes 2 &&
	check_exec_warned /bin/sh &&
	jq -e ".counters.exec_untraced == 1" snap/manifest.json >/dev/null &&
	grep -q ": 2 processes (untraced 1), 2 threads, " decode.err &&
	emu_check_parity snap truth >parity &&
	test_eq 2 "$(wc -l <parity)"
'

test_expect_success 'popen: parent exact, the shell warned' '
	record popen "echo piped" &&
	grep -q "^piped\$" snap/output.log &&
	check_counts &&
	check_processes 2 &&
	check_exec_warned /bin/sh &&
	emu_check_parity snap truth >/dev/null
'

test_expect_success 'posix_spawn: parent exact, the program warned' '
	record spawn /bin/true &&
	check_counts &&
	check_processes 2 &&
	check_exec_warned /bin/true &&
	emu_check_parity snap truth >/dev/null
'

test_expect_success 'sh -c PROG: the shell traced, the program it exec.d warned' '
	ptrec --recorder emu -o snap --emu-truth truth -- /bin/sh -c \
	    "$EMU_FIX/forks fork" >path 2>err &&
	grep -q "^status 0\$" snap/output.log &&
	check_exec_warned "$EMU_FIX/forks" &&
	ptdecode snap >blocks 2>decode.err &&
	grep -q " 0 gaps " decode.err &&
	emu_check_parity snap truth >/dev/null
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
test_expect_success '--no-follow is refused where children cannot be dropped' '
	must_exit 2 ptrec --recorder perf --no-follow -- /bin/true 2>err &&
	grep -q "^ptrec: --no-follow: the perf recorder follows a program.s threads and children together: use --recorder emu\$" err
'
test_done

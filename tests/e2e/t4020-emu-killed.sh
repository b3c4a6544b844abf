#!/bin/sh
# A SIGKILL'd ptrec leaves no process of its recording behind: qemu's
# first process dies with it (PR_SET_PDEATHSIG), and the processes the
# traced program forked (which a fork clears that request in) are ended
# by ptrec's guardian, in whatever process group or session they went
# to; a ptrec that ends normally leaves the program's processes alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

FORKS=$EMU_FIX/forks

# ours: the processes whose command line names a scratch directory of
# this test's (every qemu of a recording carries dir=SCRATCH), one
# "PID ARGS" line each.
ours() {
	for f in /proc/[0-9]*/cmdline; do
		args=$(tr '\0' ' ' <"$f" 2>/dev/null) || continue
		case $args in
		*"dir=$TMPDIR/"*) echo "${f#/proc/} $args" | sed 's|/cmdline||' ;;
		esac
	done
}

# wait_for PATTERN: until a process of ours matches (30 s at most).
wait_for() {
	n=0
	while ! ours | grep -q -- "$1" && test $n -lt 300; do
		sleep 0.1; n=$((n + 1))
	done
	ours | grep -q -- "$1" || { echo "no process matched '$1'"; ours; false; }
}

# gone_within TENTHS: until none of ours is left; says who was.
gone_within() {
	n=0
	while test -n "$(ours)" && test $n -lt "$1"; do
		sleep 0.1; n=$((n + 1))
	done
	test -z "$(ours)" || { echo "left after $1 tenths of a second:"; ours; false; }
}

for how in "sleep 30" "setsid sleep 30"; do
	test_expect_success "kill -9 ptrec while a child runs '$how': nothing is left" "
		ptrec --recorder emu -o snap -- \"\$FORKS\" system \"$how\" \
		    >path 2>err &
		pid=\$! &&
		wait_for ' -0 sleep ' &&
		kill -KILL \$pid && wait \$pid; test \$? = 137 &&
		gone_within 50 &&
		! test -e snap
	"
done

test_expect_success 'after the kill, the next ptrec sweeps the scratch' '
	ptrec --recorder emu -o snap -- "$FORKS" system "sleep 30" \
	    >path 2>err &
	pid=$! &&
	wait_for " -0 sleep " &&
	kill -KILL $pid && wait $pid; test $? = 137 &&
	gone_within 50 &&
	test_eq 1 "$(ls -d "$TMPDIR"/ptkit-*/ptrec.* | wc -l)" &&
	ptrec --recorder emu -o snap2 -- /bin/true >path2 2>err2 &&
	test_eq snap2 "$(cat path2)" &&
	test_eq 0 "$(ls -d "$TMPDIR"/ptkit-*/ptrec.* 2>/dev/null | wc -l)"
'

# The guardian is a fork of ptrec: its command line is ptrec's.
test_expect_success 'a normal end: ptrec exits, the guardian with it' '
	ptrec --recorder emu -o snap -- "$FORKS" system "true" >path 2>err &&
	test_eq snap "$(cat path)" &&
	gone_within 50 &&
	{ for f in /proc/[0-9]*/cmdline; do
		tr "\0" " " <"$f" 2>/dev/null
		echo
	done | grep "^ptrec .*-o snap -- $FORKS system true" >left || :; } &&
	test_eq "" "$(cat left)"
'

test_done

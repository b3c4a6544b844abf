#!/bin/sh
# The README's quick start runs as written: every "$ " line of its
# Quick start block, in order, in one scratch directory where ./myprog is
# a small C program this test builds.  The recorder is forced to emu the
# way the README documents (PTKIT_RECORDER=emu), so the test runs the same
# on a machine with Intel PT.  A quick start changed into something that
# does not run fails here.
. "$(dirname "$0")/lib.sh"

README=$PTKIT_SRC/README.md

# The lines of the fenced block after "## Quick start".
quick_start() {
	awk '/^## Quick start$/ { sect = 1; next }
	     /^## / { sect = 0 }
	     sect && /^```/ { if (inblock) exit; inblock = 1; next }
	     sect && inblock { print }' "$README"
}

test_expect_success 'the README has a quick start of commands only' '
	quick_start >block &&
	test -s block &&
	if grep -v "^\$ " block; then
		echo "lines above are not \"\$ \" commands" >&2; return 1
	fi &&
	grep -q "^\$ ptrec " block &&
	grep -q "^\$ ptquery " block
'

# The program the quick start records: calls enough to show in hotpaths.
cat >"$TEST_ROOT/myprog.c" <<'PROG'
#include <stdio.h>
#include <string.h>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv)
{
	int n = 12;
	for (int i = 1; i < argc; i++)
		n += (int)strlen(argv[i]) % 3;
	printf("fib(%d) = %d\n", n, fib(n));
	return 0;
}
PROG

if ! command -v qemu-x86_64 >/dev/null 2>&1; then
	test_skip "the quick start runs as written" "qemu-user missing (emu recorder)"
	test_done
fi

test_expect_success 'the quick start runs as written' '
	cc -O1 -g -o myprog "$TEST_ROOT/myprog.c" &&
	quick_start | sed "s/^\$ //" >commands &&
	n=0 &&
	while IFS= read -r cmd; do
		n=$((n + 1)) &&
		echo "# $n: $cmd" &&
		PTKIT_RECORDER=emu sh -c "$cmd" </dev/null || {
			echo "quick start command $n failed: $cmd" >&2; return 1; }
	done <commands &&
	test "$n" -ge 3
'

# What the commands left behind: the files the README says they write.
test_expect_success 'its files are what the README says' '
	cc -O1 -g -o myprog "$TEST_ROOT/myprog.c" &&
	quick_start | sed "s/^\$ //" >commands &&
	while IFS= read -r cmd; do
		PTKIT_RECORDER=emu sh -c "$cmd" </dev/null >/dev/null 2>&1 ||
		    return 1
	done <commands &&
	if grep -q "> snap.txt" commands; then
		test -d "$(cat snap.txt)" &&
		test -f "$(cat snap.txt)/manifest.json"
	fi &&
	if grep -q "ptspans -o analysis/" commands; then
		test -d analysis
	fi &&
	if grep -q "> trace.json" commands; then
		grep -q "\"traceEvents\"" trace.json &&
		if command -v jq >/dev/null 2>&1; then
			jq -e ".traceEvents | length > 1" trace.json >/dev/null
		fi
	fi
'

test_done

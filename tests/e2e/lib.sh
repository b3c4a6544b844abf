# lib.sh: the end-to-end test library, sourced by tests/e2e/t*.sh.
#
#   . "$(dirname "$0")/lib.sh"
#   test_expect_success 'title' '
#       ptdecode --help >out &&
#       grep -q SNAPSHOT out
#   '
#   test_done
#
# Every test body runs in a fresh scratch directory (its own cwd) under
# $TEST_ROOT, removed at the end unless PTKIT_KEEP_WASTE=1.  Bodies chain
# with && like git's tests; a failing body prints its trace as TAP
# diagnostics.  Output is TAP for prove.  Runs under POSIX sh.
#
# Environment (set by make check): PTKIT_BUILD (build dir), PTKIT_SRC
# (source tree), PATH with the tools first, LC_ALL=C.

set -u
LC_ALL=C
export LC_ALL
# A test's own make runs as a user's would: not as a child of the make
# that runs the tests (under make -j its jobserver is not passed down to
# tests, and make warns of it on stderr).
unset MAKEFLAGS MFLAGS MAKELEVEL

: "${PTKIT_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${PTKIT_BUILD:=$PTKIT_SRC/build}"
export PTKIT_SRC PTKIT_BUILD
PATH=$PTKIT_BUILD/bin:$PATH
export PATH

test_count=0
test_failed=0
test_skipped=0
TEST_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/ptkit-e2e.XXXXXX") || exit 1
# Tools under test keep their scratch here, so a test can look for waste.
TMPDIR=$TEST_ROOT/tmp
mkdir -p "$TMPDIR"
export TMPDIR

test_cleanup_root() {
	if [ "${PTKIT_KEEP_WASTE:-}" = 1 ]; then
		echo "# kept $TEST_ROOT"
	else
		rm -rf "$TEST_ROOT"
	fi
}
trap test_cleanup_root EXIT
trap 'exit 130' INT TERM

# Prints "# " in front of every line of a file (TAP diagnostics).
test_diag_file() {
	sed 's/^/#   /' "$1"
}

# test_expect_success TITLE BODY: runs BODY in a subshell in its own
# scratch directory; on failure shows the body and what it printed.
# (No set -x: its trace would land in the files a body redirects 2> to.)
test_expect_success() {
	test_count=$((test_count + 1))
	test_dir=$TEST_ROOT/t$test_count
	mkdir -p "$test_dir"
	if (cd "$test_dir" && eval "$2") >"$test_dir.log" 2>&1; then
		echo "ok $test_count - $1"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1"
		printf '%s\n' "$2" >"$test_dir.body"
		# On stderr: prove shows it without -v, so CI logs say why.
		{
			echo "# $(basename "$0"): test $test_count failed: $1"
			echo "#   body:"
			test_diag_file "$test_dir.body"
			echo "#   output:"
			test_diag_file "$test_dir.log"
		} >&2
	fi
}

# test_skip TITLE REASON: counts a test that cannot run here, with why.
test_skip() {
	test_count=$((test_count + 1))
	test_skipped=$((test_skipped + 1))
	echo "ok $test_count - $1 # SKIP $2"
}

# must_fail CMD...: CMD must exit non-zero without crashing.  A signal
# (status > 128), 126 or 127 (not runnable) counts as failure.
must_fail() {
	"$@"
	must_fail_rc=$?
	if [ $must_fail_rc -eq 0 ]; then
		echo "must_fail: '$*' succeeded" >&2
		return 1
	fi
	if [ $must_fail_rc -gt 128 ] || [ $must_fail_rc -eq 126 ] ||
	    [ $must_fail_rc -eq 127 ]; then
		echo "must_fail: '$*' died with status $must_fail_rc" >&2
		return 1
	fi
	return 0
}

# must_exit STATUS CMD...: CMD must exit with exactly STATUS.
must_exit() {
	must_exit_want=$1
	shift
	"$@"
	must_exit_rc=$?
	if [ $must_exit_rc -ne "$must_exit_want" ]; then
		echo "must_exit: '$*' exited $must_exit_rc, wanted $must_exit_want" >&2
		return 1
	fi
	return 0
}

# test_cmp EXPECTED ACTUAL: the files must be equal; shows the diff.
test_cmp() {
	diff -u "$1" "$2"
}

# test_eq EXPECTED ACTUAL: two strings must be equal.
test_eq() {
	if [ "$1" != "$2" ]; then
		echo "test_eq: expected '$1', got '$2'" >&2
		return 1
	fi
}

# spans_jsonl DIR, inline_jsonl DIR: the span (inline) records of the
# analysis DIR on stdout, whichever form it holds (spans.jsonl.zst as
# ptspans writes it, or plain spans.jsonl).  Without either, a line jq
# refuses, so that a pipe into jq fails rather than reads nothing.
analysis_jsonl() {
	if [ -f "$1/$2.zst" ]; then
		zstd -dc -- "$1/$2.zst"
	elif [ -f "$1/$2" ]; then
		cat -- "$1/$2"
	else
		echo "$1: no $2 or $2.zst"
		return 1
	fi
}
spans_jsonl() {
	analysis_jsonl "$1" spans.jsonl
}
inline_jsonl() {
	analysis_jsonl "$1" inline.jsonl
}

test_done() {
	echo "1..$test_count"
	if [ $test_failed -gt 0 ]; then
		echo "# $test_failed of $test_count tests failed"
		exit 1
	fi
	exit 0
}

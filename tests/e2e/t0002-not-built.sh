#!/bin/sh
# Tools whose work arrives with a later issue say so in one line and exit 1,
# with no output.  Remove a tool from this list when its issue lands.
. "$(dirname "$0")/lib.sh"

check_not_built() {
	tool=$1 what=$2 issue=$3
	shift 3
	test_expect_success "$tool says '$what' is not built yet" "
		must_exit 1 $tool $* >out 2>err &&
		test ! -s out &&
		test_eq '$tool: $what is not built yet (issue #$issue)' \"\$(cat err)\"
	"
}

check_not_built ptdecode 'the fast decoder' 11 --decoder fast nowhere

test_done

#!/bin/sh
# scripts/deps.sh keeps two sets of Debian packages: what building needs
# (make, make all) and what running and testing need on top (make check,
# demo, bench, fuzz).  A fake dpkg-query on PATH says qemu-user is
# missing and a fake id says we are not root, so nothing is installed:
# the build check passes without a word, the full check fails with the
# apt-get line naming qemu-user, and the Makefile's two stamps run the
# check each is for.
. "$(dirname "$0")/lib.sh"

DEPS=$PTKIT_SRC/scripts/deps.sh

# fake_env MISSING...: bin/ with a dpkg-query for which the packages named
# are not installed (every other one is), an id of a user, and an apt-get
# and apt-cache that only log that they ran.
fake_env() {
	mkdir -p bin &&
	cat >bin/dpkg-query <<-FAKE &&
	#!/bin/sh
	for p in "\$@"; do :; done
	for m in $*; do
		[ "\$p" = "\$m" ] && { echo "dpkg-query: no packages found matching \$p" >&2; exit 1; }
	done
	printf installed
	FAKE
	printf '#!/bin/sh\necho 1000\n' >bin/id &&
	printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.log"\nexit 1\n' "$PWD" \
	    >bin/apt-get &&
	printf '#!/bin/sh\necho "apt-cache $*" >>"%s/apt.log"\nexit 1\n' "$PWD" \
	    >bin/apt-cache &&
	chmod +x bin/*
}

test_expect_success 'the list is the build set and the test set' '
	sh "$DEPS" --list-build >build &&
	sh "$DEPS" --list-test >test &&
	sh "$DEPS" --list >all &&
	test_eq "$(cat build) $(cat test)" "$(cat all)" &&
	for p in gcc make pkg-config libipt-dev libzydis-dev; do
		grep -qw -- "$p" build || return 1
	done &&
	for p in qemu-user nodejs linux-perf jq mandoc dwz libc6-dbg; do
		grep -qw -- "$p" test && ! grep -qw -- "$p" build || return 1
	done
'

test_expect_success 'qemu-user missing: the build check passes, silently' '
	fake_env qemu-user &&
	PATH=$PWD/bin:$PATH sh "$DEPS" --if-missing-build >out 2>err &&
	test_eq "" "$(cat out err)" &&
	PATH=$PWD/bin:$PATH sh "$DEPS" --build >out 2>err &&
	test_eq "ptkit: deps: all packages installed" "$(cat out)" &&
	test ! -e apt.log
'

test_expect_success 'qemu-user missing: the test check names it, installs nothing' '
	fake_env qemu-user &&
	PATH=$PWD/bin:$PATH must_exit 1 sh "$DEPS" --if-missing >out 2>err &&
	test_eq "" "$(cat out)" &&
	cat >want <<-\EOF &&
	ptkit: deps: missing packages: qemu-user
	ptkit: deps: run as root: apt-get install -y --no-install-recommends qemu-user
	EOF
	test_cmp want err &&
	PATH=$PWD/bin:$PATH must_exit 1 sh "$DEPS" 2>err2 &&
	test_cmp want err2 &&
	test ! -e apt.log
'

test_expect_success 'a build package missing: the build check names only it' '
	fake_env libzydis-dev qemu-user &&
	PATH=$PWD/bin:$PATH must_exit 1 sh "$DEPS" --if-missing-build 2>err &&
	grep -qx "ptkit: deps: run as root: apt-get install -y --no-install-recommends libzydis-dev" err &&
	PATH=$PWD/bin:$PATH must_exit 1 sh "$DEPS" --if-missing 2>err &&
	grep -qx "ptkit: deps: run as root: apt-get install -y --no-install-recommends libzydis-dev qemu-user" err &&
	test ! -e apt.log
'

test_expect_success 'a wrong option is a usage error' '
	must_exit 2 sh "$DEPS" --bogus 2>err &&
	grep -q "^usage: deps.sh" err
'

# The Makefile: its build stamp runs the build check, its test stamp the
# full one, in a build directory of this test's own.
test_expect_success 'make: the build stamp passes, the test stamp fails on qemu-user' '
	fake_env qemu-user &&
	B=$PWD/b &&
	PATH=$PWD/bin:$PATH make -s -C "$PTKIT_SRC" BUILD="$B" \
	    "$B/.deps-build-ok" >out 2>&1 &&
	test -e b/.deps-build-ok &&
	test_eq "" "$(cat out)" &&
	PATH=$PWD/bin:$PATH must_fail make -s -C "$PTKIT_SRC" BUILD="$B" \
	    "$B/.deps-ok" >out 2>&1 &&
	grep -q "apt-get install -y --no-install-recommends qemu-user$" out &&
	test ! -e b/.deps-ok &&
	test ! -e apt.log
'

test_expect_success 'make all checks only the build set; check, demo, bench, fuzz all' '
	B=$PWD/b &&
	make -n -C "$PTKIT_SRC" BUILD="$B" all 2>&1 | grep "deps\.sh" >all &&
	test_eq "sh scripts/deps.sh --if-missing-build" "$(cat all)" &&
	for goal in check demo bench fuzz; do
		make -n -C "$PTKIT_SRC" BUILD="$B" $goal 2>&1 |
		    grep -qx "sh scripts/deps.sh --if-missing" || {
			echo "make $goal: no test check" >&2; return 1; }
	done
'

test_done

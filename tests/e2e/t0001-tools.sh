#!/bin/sh
# Every tool answers --help with its man page's SYNOPSIS, --version, and
# exits 2 with a usage message on a bad option; man pages lint clean.
. "$(dirname "$0")/lib.sh"

TOOLS="ptrec ptdecode ptspans ptquery ptdiff ptmcp"

# The SYNOPSIS section of a man page as mandoc renders it, one line,
# single spaces (rendering wraps lines where --help need not).
man_synopsis() {
	mandoc -T ascii "$PTKIT_SRC/man/$1.1" | sed 's/.\x08//g' |
	    sed -n '/^SYNOPSIS/,/^[A-Z]/p' | sed '1d;$d' | tr -s ' \n' '  ' |
	    sed 's/^ //;s/ $//'
}

for t in $TOOLS; do
	test_expect_success "$t --help is the man page's SYNOPSIS" "
		$t --help >help &&
		want=\$(man_synopsis $t) &&
		got=\$(tr -s ' \n' '  ' <help | sed 's/^ //;s/ \$//') &&
		test -n \"\$want\" &&
		test_eq \"\$want\" \"\$got\"
	"
	test_expect_success "$t --version" "
		$t --version >out &&
		test_eq '$t (ptkit) 0.1.0' \"\$(cat out)\"
	"
	test_expect_success "$t: unknown option exits 2 with a usage message" "
		must_exit 2 $t --no-such-option >out 2>err &&
		test ! -s out &&
		test_eq \"$t: unknown option '--no-such-option'\" \"\$(head -n 1 err)\" &&
		sed -n 2p err | grep -q '^usage: $t '
	"
	test_expect_success "$t man page lints clean" "
		mandoc -T lint -W warning \"\$PTKIT_SRC/man/$t.1\"
	"
done

test_expect_success 'a bad number names the option and the bound' '
	must_exit 2 ptdecode -j 0 2>err &&
	test_eq "ptdecode: option '\''-j'\'': '\''0'\'' is below the minimum 1" "$(head -n 1 err)"
'

test_expect_success 'a bad size suffix is a usage error' '
	must_exit 2 ptrec --aux-bytes 1Q -- true 2>err &&
	test_eq "ptrec: option '\''--aux-bytes'\'': '\''1Q'\'': unknown size suffix '\''Q'\'' (use K, M or G)" "$(head -n 1 err)"
'

test_expect_success 'a missing option argument is a usage error' '
	must_exit 2 ptdecode --tid 2>err &&
	test_eq "ptdecode: option '\''--tid'\'' needs an argument" "$(head -n 1 err)"
'

test_expect_success 'a choice outside the list is a usage error' '
	must_exit 2 ptquery a --kind nope 2>err &&
	grep -q "^ptquery: option '\''--kind'\'': '\''nope'\'' is not one of summary|" err
'

test_expect_success 'ptrec rules between options' '
	must_exit 2 ptrec 2>err &&
	test_eq "ptrec: no program to record" "$(head -n 1 err)" &&
	must_exit 2 ptrec --pid 1 -- true 2>err &&
	test_eq "ptrec: give a PROGRAM or --pid, not both" "$(head -n 1 err)" &&
	must_exit 2 ptrec --trigger-hits 3 -- true 2>err &&
	test_eq "ptrec: --trigger-hits needs --trigger-symbol" "$(head -n 1 err)"
'

test_expect_success 'make install puts tools and man pages under DESTDIR' '
	make -s -C "$PTKIT_SRC" BUILD="$PTKIT_BUILD" DESTDIR="$PWD/dest" \
	    PREFIX=/usr install >/dev/null &&
	for t in $TOOLS; do
		test -x dest/usr/bin/$t &&
		test -f dest/usr/share/man/man1/$t.1 || return 1
	done &&
	make -s -C "$PTKIT_SRC" BUILD="$PTKIT_BUILD" DESTDIR="$PWD/dest" \
	    PREFIX=/usr uninstall >/dev/null &&
	test ! -e dest/usr/bin/ptrec &&
	test ! -e dest/usr/share/man/man1/ptrec.1
'

test_done

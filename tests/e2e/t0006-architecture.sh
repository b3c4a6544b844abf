#!/bin/sh
# ARCHITECTURE.md is the map of the code, and must match it: every module
# of lib/ and every source file of cmd/ is named in it, every layer it
# draws is one scripts/layers.sh knows, and every path it names exists.
. "$(dirname "$0")/lib.sh"

DOC=$PTKIT_SRC/ARCHITECTURE.md

test_expect_success 'every lib module and cmd source file is on the map' '
	cd "$PTKIT_SRC" &&
	for f in lib/*/*.[ch] cmd/*/*.[ch] cmd/ptrec/emu/*.[ch]; do
		m=$(basename "$f") && m=${m%.*} &&
		grep -qw -- "$m" "$DOC" || echo "$f: not in ARCHITECTURE.md"
	done >"$OLDPWD/missing" &&
	cd "$OLDPWD" &&
	test_eq "" "$(cat missing)"
'

test_expect_success 'every layer of lib/ is in the layer table of the map' '
	for d in "$PTKIT_SRC"/lib/*/; do
		l=$(basename "$d") &&
		grep -q "^| $l |" "$DOC" || echo "lib/$l: no row in ARCHITECTURE.md"
	done >missing &&
	test_eq "" "$(cat missing)"
'

test_expect_success 'every path the map names exists' '
	grep -o "\`\(lib\|cmd\|tests\|scripts\|man\|mk\|share\|bench\)/[A-Za-z0-9_./<>-]*\`" "$DOC" |
	    tr -d "\`" | grep -v "<" | sort -u >paths &&
	test -s paths &&
	while read -r p; do
		test -e "$PTKIT_SRC/$p" || test -e "$PTKIT_SRC/$p.c" ||
		    test -e "$PTKIT_SRC/$p.h" || echo "$p: named in ARCHITECTURE.md, not in the tree"
	done <paths >missing &&
	test_eq "" "$(cat missing)"
'

test_done

#!/bin/sh
# lib/ is built in layers: a module includes headers only from its own
# layer and from the layers below it that scripts/layers.sh allows, each
# header named by its layer.  The check passes on the tree and catches an
# include that goes the wrong way.
. "$(dirname "$0")/lib.sh"

test_expect_success 'the tree keeps the layer order' '
	sh "$PTKIT_SRC/scripts/layers.sh" "$PTKIT_SRC" >out 2>&1 &&
	test_eq "" "$(cat out)"
'

# plant FILE HEADER WANT: a copy of lib/ with #include "HEADER" appended to
# FILE fails the check with exactly WANT (LINE in it is the planted line).
plant() {
	mkdir -p tree/scripts &&
	cp -R "$PTKIT_SRC/lib" tree/lib &&
	cp "$PTKIT_SRC/scripts/layers.sh" tree/scripts/ &&
	printf "#include \"%s\"\n" "$2" >>"tree/$1" &&
	n=$(wc -l <"tree/$1") &&
	must_exit 1 sh tree/scripts/layers.sh tree >out 2>&1 &&
	test_eq "$(echo "$3" | sed "s/LINE/$n/")" "$(cat out)"
}

test_expect_success 'an upward include fails the check' '
	plant lib/base/error.c span/callstack.h \
	    "lib/base/error.c:LINE: layer base may not include span/callstack.h (it may use no other layer)"
'

test_expect_success 'a sideways include fails the check' '
	plant lib/dec/ptdec.h rec/ptcaps.h \
	    "lib/dec/ptdec.h:LINE: layer dec may not include rec/ptcaps.h (it may use base fmt)"
'

test_expect_success 'lib code may not use the printing layer' '
	plant lib/fmt/store.c tool/report.h \
	    "lib/fmt/store.c:LINE: layer fmt may not include tool/report.h (it may use base sym)"
'

test_expect_success 'an include that names no layer fails the check' '
	plant lib/sym/symtab.c error.h \
	    "lib/sym/symtab.c:LINE: \"error.h\" names no layer (write \"sym/error.h\" or the layer it lives in)"
'

test_done

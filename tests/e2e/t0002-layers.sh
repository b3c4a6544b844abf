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

# A copy of lib/ with one include planted into it.
copy_lib() {
	mkdir -p tree/scripts &&
	cp -R "$PTKIT_SRC/lib" tree/lib &&
	cp "$PTKIT_SRC/scripts/layers.sh" tree/scripts/
}

test_expect_success 'an upward include fails the check' '
	copy_lib &&
	printf "#include \"span/callstack.h\"\n" >>tree/lib/base/error.c &&
	n=$(wc -l <tree/lib/base/error.c) &&
	must_exit 1 sh tree/scripts/layers.sh tree >out 2>&1 &&
	test_eq "lib/base/error.c:$n: layer base may not include span/callstack.h (it may use no other layer)" "$(cat out)"
'

test_expect_success 'a sideways include fails the check' '
	copy_lib &&
	printf "#include \"rec/ptcaps.h\"\n" >>tree/lib/dec/ptdec.h &&
	n=$(wc -l <tree/lib/dec/ptdec.h) &&
	must_exit 1 sh tree/scripts/layers.sh tree >out 2>&1 &&
	test_eq "lib/dec/ptdec.h:$n: layer dec may not include rec/ptcaps.h (it may use base fmt)" "$(cat out)"
'

test_expect_success 'lib code may not use the printing layer' '
	copy_lib &&
	printf "#include \"tool/report.h\"\n" >>tree/lib/fmt/store.c &&
	n=$(wc -l <tree/lib/fmt/store.c) &&
	must_exit 1 sh tree/scripts/layers.sh tree >out 2>&1 &&
	test_eq "lib/fmt/store.c:$n: layer fmt may not include tool/report.h (it may use base sym)" "$(cat out)"
'

test_expect_success 'an include that names no layer fails the check' '
	copy_lib &&
	printf "#include \"error.h\"\n" >>tree/lib/sym/symtab.c &&
	n=$(wc -l <tree/lib/sym/symtab.c) &&
	must_exit 1 sh tree/scripts/layers.sh tree >out 2>&1 &&
	test_eq "lib/sym/symtab.c:$n: \"error.h\" names no layer (write \"sym/error.h\" or the layer it lives in)" "$(cat out)"
'

test_done

#!/bin/sh
# ptspans names code as perf does where perf is right: libc's free, which
# shares its address with the compat alias cfree@GLIBC_2.2.5 (perf's
# longest-name rule picks cfree), is free; ld.so's _start, a label
# without a type in its debug file's .symtab, is _start as perf says.
. "$(dirname "$0")/lib.sh"

FIX=$PTKIT_BUILD/tests/fixtures/spans

if ! command -v perf >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1
then
	test_skip "names of aliases and labels" "perf or jq missing"
	test_done
fi

S=$TEST_ROOT/shared

test_expect_success 'free is free, called as often as the program says' '
	mkdir -p "$S" &&
	ptrec --recorder emu -o "$S/snap" -- "$FIX/names" >"$S/path" \
	    2>"$S/rec.err" &&
	ptdecode "$S/snap" >"$S/blocks" 2>"$S/decode.err" &&
	ptspans -o "$S/an" <"$S/blocks" >"$S/out" &&
	n=$(awk -F"\t" "\$2 == \"free\" { print \$3 }" "$S/snap/output.log") &&
	test "$n" -eq 7 &&
	spans_jsonl "$S/an" | jq -s -e --argjson n "$n" "
	    (map(select(.fn == \"free\" and .start == \"seen\")) | length)
	    == \$n and all(.[]; .fn != \"cfree\")" &&
	# perf calls the same address cfree@GLIBC_2.2.5: entered as often
	# (from the PLT stub, which perf names _init+0x30).
	perf --buildid-dir "$S/snap/images" script -i "$S/snap/perf.data" \
	    --itrace=b -F ip,sym,addr,symoff 2>perf.err |
	grep -c -E "=> +[0-9a-f]+ (cfree@GLIBC_2\.2\.5|free(@@GLIBC_2\.2\.5)?)\+0x0\$" \
	    >perf.n &&
	test_eq "$n" "$(cat perf.n)"
'

test_expect_success 'the first frame is ld.so'"'"'s _start, as perf names it' '
	perf --buildid-dir "$S/snap/images" script -i "$S/snap/perf.data" \
	    --itrace=i1i -F ip,sym,dso 2>perf.err | head -n 1 >first &&
	grep -q " _start (.*/ld-linux-x86-64\.so\.2)\$" first &&
	spans_jsonl "$S/an" | jq -s -e "map(select(.start == \"trace_start\")) | length == 1 and
	    .[0].fn == \"_start\" and (.[0].module | endswith(\"/ld-linux-x86-64.so.2\"))" &&
	! spans_jsonl "$S/an" | jq -r ".fn" | grep -q "^ld-linux-x86-64\.so\.2+"
'

test_done

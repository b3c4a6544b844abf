#!/bin/sh
# ptrec --recorder emu on programs no one here wrote (Debian's gzip and
# python3), with small rings that wrap: perf's branch list equals the
# ground truth over the retained window (emu-lib.sh's parity check).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

# Debian's own binaries, not whatever PATH has first (a pyenv shim is a
# shell script, which emu cannot run).
GZIP=/bin/gzip
PY=/usr/bin/python3
if ! test -x $GZIP || ! test -x $PY; then
	test_skip 'system programs' "$GZIP or $PY missing"
	test_done
fi

test_expect_success 'gzip: exact over a wrapped 256K ring' '
	head -c 40000 $GZIP >in &&
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 256K \
	    -- $GZIP -c in >path 2>err &&
	jq -e ".threads[0].wrapped == true" snap/manifest.json &&
	emu_check_parity snap truth >counts &&
	test $(awk "{print \$3}" counts) -gt 100000
'

test_expect_success 'python3: exact over a wrapped 1M ring' '
	ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 1M \
	    -- $PY -S -c "print(sum(range(100)))" \
	    >path 2>err &&
	grep -q "^4950\$" snap/output.log &&
	jq -e ".threads[0].wrapped == true" snap/manifest.json &&
	emu_check_parity snap truth >counts &&
	test $(awk "{print \$3}" counts) -gt 300000
'

# qemu-user shares the process's descriptors with the program: a program
# that closes every descriptor it did not open (close_range, as Python's
# os.closerange and daemons do) must not close the recorder's, or the
# mappings after it go unrecorded (27 unknown-image gaps, _decimal not
# archived, before the plugin moved its files out of the way).
test_expect_success 'python3: a close_range over the recorder'"'"'s files loses nothing' '
	cat >cr.py <<-\EOF &&
	import os
	os.closerange(3, 1024)
	import _decimal
	print(_decimal.Decimal(1) / _decimal.Decimal(7), flush=True)
	EOF
	ptrec --recorder emu -o snap --emu-truth truth -- $PY -S cr.py \
	    >path 2>err &&
	test_eq 0.1428571428571428571428571429 "$(cat snap/output.log)" &&
	ptdecode snap >blocks 2>sum &&
	grep -q " 0 gaps " sum &&
	jq -e "[.images[].path | select(test(\"/_decimal\\\\.\"))] | length == 1" \
	    snap/manifest.json &&
	emu_check_parity snap truth >counts
'

test_expect_success 'a script is refused with the way out' '
	printf "#!/bin/sh\necho hi\n" >script && chmod +x script &&
	must_exit 1 ptrec --recorder emu -o snap -- ./script 2>err &&
	grep -q "not an x86-64 ELF executable" err &&
	! test -e snap
'
test_done

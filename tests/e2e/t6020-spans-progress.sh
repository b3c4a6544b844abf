#!/bin/sh
# ptspans's progress lines (PTKIT_PROGRESS=lines, what ptmcp reads on a
# stderr that is no terminal): "progress: reading DONE TOTAL", the bytes
# of the block stream read of the file's size (of 0 from a pipe, until
# its end says the total), then, with -o, "progress: indexing 0 SPANS"
# while the files are closed and the index written.  Without the
# variable, stderr stays silent and the output is the same bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

if ! command -v jq >/dev/null 2>&1; then
	test_skip "ptspans progress lines" "jq missing"
	test_done
fi

D=$TEST_ROOT/p

# check_lines FILE TOTAL SIZE [SPANS]: FILE holds only progress lines;
# reading lines have TOTAL (the last, SIZE SIZE), their bytes never go
# back; with SPANS the last line is the index's.
check_lines() {
	if [ -n "${4:-}" ]; then
		test_eq "progress: indexing 0 $4" "$(tail -n 1 "$1")" &&
		test_eq 1 "$(grep -c '^progress: indexing' "$1")" &&
		last=$(tail -n 2 "$1" | head -n 1)
	else
		test_eq 0 "$(grep -c '^progress: indexing' "$1")" &&
		last=$(tail -n 1 "$1")
	fi &&
	test_eq "progress: reading $3 $3" "$last" &&
	test_eq "" "$(grep -v '^progress: \(reading\|indexing\) [0-9]* [0-9]*$' "$1")" &&
	test_eq "" "$(grep '^progress: reading' "$1" | sed '$d' |
	    grep -v " $2\$")" &&
	grep '^progress: reading' "$1" | awk '
	    $3 < last || $3 > '"$3"' { bad = 1 } { last = $3 }
	    END { exit bad || NR < 2 }'
}

test_expect_success 'setup: a snapshot, its block stream and analysis' '
	mkdir -p "$D" &&
	ptrec --recorder emu -o "$D/snap" --aux-bytes 4M \
	    -- "$EMU_FIX/branchy" 3 3000 >"$D/path" 2>"$D/rec.err" &&
	ptdecode "$D/snap" >"$D/blocks" 2>"$D/decode.err" &&
	ptspans -o "$D/quiet" <"$D/blocks" >"$D/quiet.out" 2>"$D/quiet.err" &&
	ptspans <"$D/blocks" >"$D/quiet.stdout" 2>"$D/quiet.stdout.err" &&
	test_eq "" "$(cat "$D/quiet.err" "$D/quiet.stdout.err")"
'

SIZE=$(wc -c <"$D/blocks" | tr -d " ")
SPANS=$(jq .quality.spans "$D/quiet/manifest.json" 2>/dev/null)

test_expect_success 'a file: bytes of its size, then the index of every span' '
	test "$SPANS" -gt 0 &&
	PTKIT_PROGRESS=lines ptspans -o "$D/f" <"$D/blocks" >/dev/null \
	    2>"$D/f.err" &&
	check_lines "$D/f.err" "$SIZE" "$SIZE" "$SPANS" &&
	for f in spans.jsonl.zst index.bin manifest.json; do
		cmp "$D/quiet/$f" "$D/f/$f" || return 1
	done
'

test_expect_success 'a pipe: no total until its end' '
	cat "$D/blocks" | PTKIT_PROGRESS=lines ptspans -o "$D/pipe" \
	    >/dev/null 2>"$D/pipe.err" &&
	check_lines "$D/pipe.err" 0 "$SIZE" "$SPANS"
'

test_expect_success 'span lines on stdout: reading only, the same lines' '
	PTKIT_PROGRESS=lines ptspans <"$D/blocks" >"$D/stdout" \
	    2>"$D/stdout.err" &&
	check_lines "$D/stdout.err" "$SIZE" "$SIZE" &&
	cmp "$D/quiet.stdout" "$D/stdout"
'

test_expect_success 'the parallel engine says the same' '
	cat "$D/blocks" | PTKIT_PROGRESS=lines ptspans -j 2 \
	    --chunk-blocks 64 -o "$D/par" >/dev/null 2>"$D/par.err" &&
	check_lines "$D/par.err" 0 "$SIZE" "$SPANS" &&
	cmp "$D/quiet/index.bin" "$D/par/index.bin"
'

test_expect_success 'any other value of PTKIT_PROGRESS: silent' '
	PTKIT_PROGRESS=yes ptspans -o "$D/other" <"$D/blocks" >/dev/null \
	    2>"$D/other.err" &&
	test_eq "" "$(cat "$D/other.err")"
'

test_done

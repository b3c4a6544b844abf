#!/bin/sh
# Hostile inputs to the readers: a FIFO named as manifest.json, perf.data,
# spans.jsonl, index.bin or the analysis manifest is refused before an open
# could block; links planted in an analysis directory are never followed
# (neither out of it nor within), and no message quotes what a file holds;
# a snapshot path on stdin is never cut at a NUL nor quoted whole; and
# on-demand decodes (branches, insns) stop at --max-insns and say where.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1
SNAP=$TEST_ROOT/snap
(cd "$TEST_ROOT" && ptdecode snap 2>/dev/null | ptspans -o an >/dev/null 2>&1) ||
    exit 1
AN=$TEST_ROOT/an

for f in manifest.json perf.data; do
	test_expect_success "a FIFO as the snapshot's $f: refused at once" "
		cp -r \"\$SNAP\" s && rm s/$f && mkfifo s/$f &&
		must_exit 1 timeout 10 ptdecode s >/dev/null 2>err &&
		echo 'ptdecode: s: $f: not a regular file (a FIFO, a device?); refused' >want &&
		test_cmp want err
	"
done

for f in spans.jsonl spans.jsonl.zst index.bin manifest.json; do
	test_expect_success "a FIFO as the analysis's $f: refused at once" "
		cp -r \"\$AN\" a && rm -f a/$f a/spans.jsonl.zst && mkfifo a/$f &&
		must_exit 1 timeout 10 ptquery a --kind summary >/dev/null 2>err &&
		echo 'ptquery: a: $f: not a regular file (a FIFO, a device?); refused' >want &&
		test_cmp want err &&
		must_exit 2 timeout 10 ptdiff a \"\$AN\" >/dev/null 2>err &&
		echo 'ptdiff: a: $f: not a regular file (a FIFO, a device?); refused' >want &&
		test_cmp want err
	"
done

test_expect_success 'spans.jsonl -> /etc/passwd: refused, nothing of it quoted' '
	cp -r "$AN" a && rm a/spans.jsonl.zst a/index.bin &&
	ln -s /etc/passwd a/spans.jsonl &&
	must_exit 1 ptquery a --kind summary >out 2>err &&
	echo "ptquery: a: spans.jsonl: leads outside the analysis directory" >want &&
	test_cmp want err &&
	test_eq "" "$(cat out)" &&
	! grep -q root err
'

test_expect_success 'index.bin -> another analysis'"'"'s: refused' '
	cp -r "$AN" a && cp -r "$AN" b && rm a/index.bin &&
	ln -s ../b/index.bin a/index.bin &&
	must_exit 1 ptquery a --kind summary >/dev/null 2>err &&
	echo "ptquery: a: index.bin: leads outside the analysis directory" >want &&
	test_cmp want err
'

test_expect_success 'a link that stays inside the analysis is not followed either' '
	cp -r "$AN" a && mv a/manifest.json a/m && ln -s m a/manifest.json &&
	must_exit 1 ptquery a --kind summary >/dev/null 2>err &&
	echo "ptquery: a: manifest.json: a symbolic link on the way; links are not followed inside the analysis directory" >want &&
	test_cmp want err
'

test_expect_success 'a stdin line with a NUL: refused, not cut' '
	printf "%s\0junk\n" "$SNAP" | must_exit 1 ptdecode >out 2>err &&
	echo "ptdecode: stdin: line 1 holds a NUL byte: not a snapshot path" >want &&
	test_cmp want err &&
	test_eq 0 "$(wc -c <out)"
'

test_expect_success 'a 50 MB stdin line: refused, its length said, not it' '
	head -c 52428800 /dev/zero | tr "\0" x | must_exit 1 ptdecode >out 2>err &&
	echo "ptdecode: stdin: line 1 is 52428800 bytes long: not a snapshot path (at most 4095)" >want &&
	test_cmp want err
'

TID=$(jq -r .tid "$AN/threads.jsonl")

test_expect_success 'insns: the window stops at --max-insns, and says where' '
	ptquery "$AN" --kind insns --tid $TID --max-insns 100 --format json \
	    >out 2>err &&
	test_eq 100 "$(jq ".rows | length" out)" &&
	test_eq "thread $TID: 100 instructions; the window was cut after 100 instructions, at 1064 ns (--max-insns 100): raise it or narrow --from and --to" \
	    "$(jq -r .summary out)" &&
	echo "ptquery: warning: --max-insns: decoding stopped after 100 instructions, at 1064 ns: the rows count only that part of the window; raise --max-insns or narrow --from and --to" >want &&
	test_cmp want err
'

test_expect_success 'insns: a window that ends at the cap is not cut' '
	ptquery "$AN" --kind insns --tid $TID --max-insns 2585 --format json \
	    >out 2>err &&
	test_eq "thread $TID: 2585 instructions" "$(jq -r .summary out)" &&
	test_eq "" "$(cat err)"
'

test_expect_success 'branches: cut the same way; uncut without the cap' '
	ptquery "$AN" --kind branches --function fib --max-insns 100 \
	    --format json >out 2>err &&
	test_eq "fib: 1 conditional branches; taken means the jump was taken (to target), which may be the source'"'"'s if being false; the window was cut after 102 instructions, at 1384 ns (--max-insns 100): raise it or narrow --from and --to" \
	    "$(jq -r .summary out)" &&
	ptquery "$AN" --kind branches --function fib --max-insns 0 \
	    --format json >all 2>err &&
	test_eq "" "$(cat err)" &&
	test_eq "fib: 1 conditional branches; taken means the jump was taken (to target), which may be the source'"'"'s if being false" \
	    "$(jq -r .summary all)" &&
	test "$(jq ".rows[0].executed" all)" -gt "$(jq ".rows[0].executed" out)"
'

test_done

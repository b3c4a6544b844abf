#!/bin/sh
# ptkit.mk decodes every snapshot of a store in parallel, and a second run
# rebuilds nothing; a snapshot that changes is rebuilt alone.
. "$(dirname "$0")/lib.sh"

MK=$PTKIT_SRC/share/ptkit.mk
FIX=$PTKIT_BUILD/fixtures/diff/base/work

test_expect_success 'a store of three snapshots' '
	cd "$TEST_ROOT" &&
	for n in 1000 1200 1400; do
		ptrec --store store -- "$FIX" $n >>paths 2>/dev/null || return 1
	done &&
	test_eq 3 "$(ls store/snapshots | wc -l)" &&
	test_eq 3 "$(wc -l <paths)"
'

test_expect_success 'make -j2 -f ptkit.mk analyses every snapshot' '
	cd "$TEST_ROOT" &&
	make -s -j2 -f "$MK" STORE=store >out 2>err &&
	for s in store/snapshots/*; do
		test -f $s/derived/default/spans.jsonl.zst &&
		test -f $s/derived/default/index.bin &&
		jq -e ".snapshot_id" $s/derived/default/manifest.json >/dev/null ||
		return 1
	done
'

test_expect_success 'the analyses are real: heavy ran once in each' '
	cd "$TEST_ROOT" &&
	for s in store/snapshots/*; do
		test_eq 1 "$(spans_jsonl $s/derived/default | jq -r "select(.fn == \"heavy\") | .fn" | wc -l)" || return 1
	done
'

test_expect_success 'a second run does nothing' '
	cd "$TEST_ROOT" &&
	make -q -f "$MK" STORE=store &&
	make -j2 -f "$MK" STORE=store PTDECODE=false >out 2>&1 &&
	grep -q "Nothing to be done" out
'

test_expect_success 'a changed snapshot is rebuilt alone' '
	cd "$TEST_ROOT" &&
	one=$(ls -d store/snapshots/* | head -n 1) &&
	sleep 1 && touch $one/manifest.json &&
	make -j2 -f "$MK" STORE=store >out 2>&1 &&
	test_eq 1 "$(grep -c "^ptdecode " out)" &&
	grep -q "^ptdecode -j1 $one |" out
'

test_expect_success 'a failing decode fails the run and leaves no analysis' '
	cd "$TEST_ROOT" &&
	one=$(ls -d store/snapshots/* | head -n 1) &&
	sleep 1 && touch $one/perf.data &&
	must_fail make -s -f "$MK" STORE=store PTDECODE=false >out 2>&1 &&
	test ! -e $one/derived/default/manifest.json
'

test_expect_success 'STORE is required' '
	must_fail make -s -f "$MK" >out 2>&1 &&
	grep -q "ptkit.mk: set STORE to a ptkit store directory" out
'

test_done

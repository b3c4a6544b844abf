#!/bin/sh
# ptdiff: same input twice is no change; more work in one function names
# exactly that function with the exact instruction delta the fixture
# predicts; a renamed function is vanished + new; formats and errors.
. "$(dirname "$0")/lib.sh"

FIX=$PTKIT_BUILD/fixtures/diff

# record NAME DIR N: records DIR/work N (run as ./work, so argv[0] is the
# same for every build) and analyses it into $PWD/NAME.an.
record() {
	(cd "$2" && ptrec -o "$OLDPWD/$1" -- ./work "$3") >/dev/null 2>"$1.rec.err" &&
	ptdecode "$1" 2>"$1.dec.err" | ptspans -o "$1.an" >/dev/null
}

test_expect_success 'record the fixture: twice with 1000, once 1500, renamed, cloned' '
	cd "$TEST_ROOT" &&
	record a "$FIX/base" 1000 &&
	record b "$FIX/base" 1000 &&
	record c "$FIX/base" 1500 &&
	record d "$FIX/head" 1000 &&
	record e "$FIX/clone" 1000 &&
	grep -q "heavy_calls=1 light_calls=4 insns_per_iteration=3" a/output.log
'

test_expect_success 'the same input twice: exit 0 under --fail-on insns:+0%' '
	cd "$TEST_ROOT" &&
	must_exit 0 ptdiff --fail-on insns:+0% a.an b.an >out 2>err &&
	test ! -s err &&
	tail -n 1 out | grep -q "^summary rows=[0-9]* changed=0 crossed=0 ignored=0$"
'

test_expect_success 'the same input twice: exit 0 without bounds either' '
	cd "$TEST_ROOT" &&
	must_exit 0 ptdiff a.an b.an >/dev/null
'

test_expect_success 'more work in heavy: exit 1, naming exactly heavy' '
	cd "$TEST_ROOT" &&
	must_exit 1 ptdiff --fail-on self_insns:+0% a.an c.an >out 2>err &&
	test_eq 1 "$(wc -l <err)" &&
	grep -q "^ptdiff: heavy (work): self_insns +49\.[0-9]*% ([0-9]* -> [0-9]*) crosses the bound$" err
'

test_expect_success 'the instruction delta is exactly 3 x 500 iterations' '
	cd "$TEST_ROOT" &&
	must_exit 1 ptdiff --format json --fail-on self_insns:+0% a.an c.an >out &&
	jq -e "[.rows[] | select(.crossed != null)] | length == 1" out &&
	test_eq heavy "$(jq -r ".rows[] | select(.crossed != null) | .fn" out)" &&
	test_eq 1500 "$(jq ".rows[] | select(.fn == \"heavy\") | .b.self_insns - .a.self_insns" out)" &&
	test_eq slower "$(jq -r ".rows[] | select(.fn == \"heavy\") | .class" out)" &&
	test_eq 1 "$(jq ".summary.changed" out)"
'

test_expect_success 'a bound the change stays under is not crossed' '
	cd "$TEST_ROOT" &&
	must_exit 0 ptdiff --fail-on self_insns:+60% a.an c.an >/dev/null 2>err &&
	test ! -s err
'

test_expect_success 'a renamed function is vanished + new, nothing else' '
	cd "$TEST_ROOT" &&
	must_exit 1 ptdiff --format json a.an d.an >out &&
	test_eq "heavier new
heavy vanished" "$(jq -r ".rows[] | select(.class != \"same\") | \"\(.fn) \(.class)\"" out | sort)" &&
	test_eq false "$(jq ".comparable.checks[] | select(.what == \"executable build-id\") | .same" out)"
'

test_expect_success 'comparability: same recorder and clock, times virtual' '
	cd "$TEST_ROOT" &&
	must_exit 0 ptdiff --format json a.an b.an >out &&
	test_eq virtual "$(jq -r .comparable.times out)" &&
	test_eq self_insns "$(jq -r .comparable.class_by out)" &&
	test_eq true "$(jq ".comparable.checks[] | select(.what == \"recorder\") | .same" out)"
'

# gcc -O2 makes scale scale.constprop.0 in the clone build: one function.
test_expect_success 'a clone pairs with its function, and says so' '
	cd "$TEST_ROOT" &&
	# main passes one argument less to the clone: it changed (exit 1)
	must_exit 1 ptdiff --format json a.an e.an >out &&
	test_eq "scale scale.constprop.0 clone 1 1" "$(jq -r ".rows[] |
	    select(.fn == \"scale\") |
	    \"\(.fn) \(.fn_b) \(.paired_by) \(.a.calls) \(.b.calls)\"" out)" &&
	test_eq 0 "$(jq "[.rows[] | select(.class == \"new\" or
	    .class == \"vanished\")] | length" out)" &&
	must_exit 1 ptdiff a.an e.an >out &&
	grep -q " module=work fn=scale fn_b=scale.constprop.0 paired_by=clone\$" out
'

test_expect_success 'csv: a fixed header, names quoted' '
	cd "$TEST_ROOT" &&
	must_exit 1 ptdiff --format csv a.an c.an >out &&
	test_eq "class,crossed_metric,crossed_pct,calls_a,calls_b,total_ns_a,total_ns_b,self_ns_a,self_ns_b,insns_a,insns_b,self_insns_a,self_insns_b,mean_ns_a,mean_ns_b,mean_self_insns_a,mean_self_insns_b,delta,module,fn,fn_b" "$(head -n 1 out)" &&
	grep -q "^slower,,,1,1,.*,1500.0,\"work\",\"heavy\",$" out
'

test_expect_success 'markdown: a table row for heavy' '
	cd "$TEST_ROOT" &&
	must_exit 1 ptdiff --format markdown --fail-on self_insns:+1% a.an c.an >out 2>/dev/null &&
	head -n 1 out | grep -q "^### ptdiff: 1 changed, 1 crossed a bound$" &&
	grep -q "^| heavy | work | slower ⚠ | 1 → 1 | .* | 3005 → 4505 |$" out
'

# Times are the host's under emulation: the bound is one above the
# longest span of either analysis.
test_expect_success '--min-ns above every total ignores every row' '
	cd "$TEST_ROOT" &&
	max=$({ spans_jsonl a.an; spans_jsonl c.an; } | jq -s "map(.dur_ns) | max") &&
	must_exit 0 ptdiff --min-ns $((max + 1)) a.an c.an >out &&
	grep -q "^summary rows=0 changed=0 crossed=0 ignored=[1-9]" out
'

test_expect_success 'a snapshot directory stands for its default analysis' '
	cd "$TEST_ROOT" &&
	mkdir -p a/derived && cp -r a.an a/derived/default &&
	mkdir -p c/derived && cp -r c.an c/derived/default &&
	must_exit 1 ptdiff --fail-on self_insns:+0% a c >/dev/null 2>err &&
	grep -q "^ptdiff: heavy (work)" err
'

test_expect_success 'bad bounds are usage errors' '
	must_exit 2 ptdiff --fail-on nope:+1% a b 2>err &&
	grep -q "^ptdiff: option '\''--fail-on'\'': '\''nope:+1%'\'': unknown metric '\''nope'\''" err &&
	must_exit 2 ptdiff --fail-on self_ns a b 2>err &&
	grep -q "^ptdiff: option '\''--fail-on'\'': '\''self_ns'\'': expected METRIC:+PCT" err &&
	must_exit 2 ptdiff --fail-on self_ns:+x a b 2>err &&
	grep -q "bound must be a growth like +10%" err
'

test_expect_success 'a missing analysis is trouble: exit 2' '
	must_exit 2 ptdiff nowhere also-nowhere >out 2>err &&
	test ! -s out &&
	grep -q "^ptdiff: nowhere: " err
'

test_done

#!/bin/sh
# ptspans on JIT code: tests/fixtures/spans/jit copies three functions into
# an anonymous executable mapping and names them in /tmp/perf-PID.map.
# The emu recorder archives the map (even when the program removes it at
# exit) and the code's bytes as an image; ptdecode decodes the JIT region
# and marks its MAP record; ptspans names its spans from the archived map
# with module [jit].  Per JIT function, the spans equal the program's own
# counts (every entry, tail calls included) and the spans entered by a
# call equal the calls `perf script --itrace=cr` reports.
. "$(dirname "$0")/lib.sh"

JIT=$PTKIT_BUILD/tests/fixtures/spans/jit

if ! command -v perf >/dev/null 2>&1 || ! command -v jq >/dev/null 2>&1
then
	test_skip "JIT code on emu snapshots" "perf or jq missing"
	test_done
fi

# record ARGS...: record the fixture, decode, span into an/.  The map the
# program left in /tmp (if it kept it) moves to map.orig.
record() {
	# ptrec's own words on stderr when it made no snapshot: the test says
	# why it failed, not only that output.log is missing
	if ! ptrec --recorder emu -o snap -- "$JIT" "$@" >path 2>rec.err ||
	    ! test -f snap/output.log; then
		cat rec.err >&2
		return 1
	fi
	mapfile=$(sed -n 's/^map	//p' snap/output.log)
	case $mapfile in /tmp/perf-*.map) ;; *) return 1 ;; esac
	if test -e "$mapfile"; then
		cp "$mapfile" map.orig && rm -f "$mapfile" || return 1
	fi
	test_eq "/tmp/perf-$(jq -r .target.pid snap/manifest.json).map" \
	    "$mapfile" &&
	ptdecode snap >blocks 2>decode.err &&
	ptspans -o an <blocks >out
}

# check_counts: "count" lines against every [jit] span of the function,
# "calls" lines against those a call entered and against perf's calls.
check_counts() {
	spans_jsonl an | jq -r 'select(.module == "[jit]") |
	    [.fn, (if .tail_call then "tail" else "call" end), .start] | @tsv' >seen &&
	perf --buildid-dir snap/images script -i snap/perf.data \
	    --itrace=cr -F flags,ip,sym,addr 2>perf.err |
	    awk '$1 == "call" { print $NF }' >perf.calls &&
	grep -E '^(count|calls)	' snap/output.log >truth &&
	test $(wc -l <truth) = 6 &&
	while IFS='	' read -r kind fn n; do
		case $kind in
		count)
			got=$(awk -F'\t' -v f="$fn" '$1 == f' seen | wc -l) ;;
		calls)
			got=$(awk -F'\t' -v f="$fn" '$1 == f && $2 == "call"' \
			    seen | wc -l) &&
			p=$(grep -c "^$fn\$" perf.calls) &&
			test_eq "$fn perf $n" "$fn perf $p" || return 1 ;;
		esac
		test_eq "$kind $fn $n" "$kind $fn $got" || return 1
		echo "$kind $fn $n" >>compared
	done <truth &&
	awk -F'\t' '$3 != "seen"' seen >unseen &&
	test_cmp /dev/null unseen
}

test_expect_success 'RWX JIT: spans and perf calls equal the program (native and --decoder perf)' "
	record 7 rwx keep &&
	pid=\$(jq -r .target.pid snap/manifest.json) &&
	test_cmp map.orig snap/jit/perf-\$pid.map &&
	jq -e --arg p \"\$pid\" '.jit_maps == [{pid: (\$p | tonumber),
	    path: \"/tmp/perf-\\(\$p).map\", archived: \"jit/perf-\\(\$p).map\"}]
	    and .counters.jit_regions == 1 and .counters.jit_regions_lost == 0' \
	    snap/manifest.json >/dev/null &&
	jq -e '.images | map(select(.path | startswith(\"//anon-jit/\")) |
	    .archived | startswith(\"images/.build-id/\")) == [true]' \
	    snap/manifest.json >/dev/null &&
	grep ' 0 unknown image' decode.err &&
	ptdecode --format jsonl snap 2>/dev/null |
	    jq -e -s --arg p \"\$pid\" '[.[] | select(.type == \"map\" and
	    .jit)] | length == 1 and (.[0].symbols |
	    endswith(\"/jit/perf-\\(\$p).map\")) and (.[0].name |
	    startswith(\"//anon-jit/\\(\$p)/\")) and .[0].missing == false' \
	    >/dev/null &&
	check_counts && test \$(wc -l <compared) = 6 &&
	grep -q '^count jit_inc 42\$' compared &&
	ptdecode --decoder perf snap 2>/dev/null | ptspans >perf.spans &&
	jq -r 'select(.module == \"[jit]\") | [.fn, .tail_call] | @tsv' \
	    perf.spans | sort | uniq -c >via-perf &&
	spans_jsonl an | jq -r 'select(.module == \"[jit]\") | [.fn, .tail_call] | @tsv' | sort | uniq -c >via-native &&
	test \$(wc -l <via-native) = 4 &&
	test_cmp via-native via-perf
"

test_expect_success 'RW then RX, map removed at exit: archived before' "
	record 5 rx rm &&
	pid=\$(jq -r .target.pid snap/manifest.json) &&
	test ! -e map.orig &&
	test \$(wc -l <snap/jit/perf-\$pid.map) = 3 &&
	check_counts && test \$(wc -l <compared) = 6 &&
	grep -q '^calls jit_inc 25\$' compared
"

test_expect_success 'spans are named from the archived map, not the image' "
	record 3 rwx rm &&
	pid=\$(jq -r .target.pid snap/manifest.json) &&
	sed 's/ jit_/ renamed_/' snap/jit/perf-\$pid.map >renamed &&
	cp renamed snap/jit/perf-\$pid.map &&
	ptdecode snap | ptspans -o an2 >/dev/null &&
	spans_jsonl an2 | jq -r 'select(.module == \"[jit]\") | .fn' |
	    sort | uniq -c | awk '{ print \$2, \$1 }' >got &&
	printf 'renamed_inc 18\\nrenamed_thrice 3\\nrenamed_twice 6\\n' >want &&
	test_cmp want got
"

test_done

#!/bin/sh
# Two real ptmcp servers on one store, for 20 s (60 s under make
# check-long, PTKIT_LONG=1), while snapshots are imported: each decodes
# and queries the snapshots it finds, and one of them prunes to the newest
# two every second.  Nothing a live job used is lost: every decode and
# query succeeds, or fails only because its snapshot was gone before it
# started; and when all is over no temporary directory, guard or lock is
# left in the store.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap
SECONDS_TO_RUN=20
[ "${PTKIT_LONG:-}" = 1 ] && SECONDS_TO_RUN=60

"$MKSNAP" -o "$TEST_ROOT/snap" -e "$TEST_ROOT/want" -- "$FIX/snap_work" \
    >/dev/null 2>&1 || exit 1

INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}'

# drive NAME PRUNES: a server reading NAME.fifo, answering into NAME.out;
# until the clock runs out it decodes and queries the newest snapshot (and
# prunes after each with PRUNES=1).  Every answer is judged into
# NAME.ok / NAME.gone / NAME.bad, one line each.
drive() {
	name=$1 prunes=$2
	mkfifo $name.fifo
	ptmcp serve <$name.fifo >$name.out 2>$name.err &
	srv=$!
	exec 5>$name.fifo
	n=0
	call() {
		n=$((n + 1))
		printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$n,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2}}" >&5
		k=0
		# jq -e exits 0 on an empty input (a server still starting):
		# the answer is there only when something was selected
		until jq -ce "select(.id == $n)" $name.out >$name.last \
		    2>/dev/null && test -s $name.last; do
			k=$((k + 1))
			[ $k -gt 600 ] && { echo "$1: no answer" >>$name.bad; return 1; }
			sleep 0.1
		done
	}
	judge() {
		if [ "$(jq .result.isError $name.last)" = false ]; then
			echo "$1 $2" >>$name.ok
			return 0
		fi
		msg=$(jq -r ".result.content[0].text" $name.last)
		case $msg in
		"No snapshot $2 in the store: "*|"Snapshot $2 has no analysis 'default' yet: "*)
			if [ -d "s/snapshots/$2" ]; then
				echo "$1 $2 still there: $msg" >>$name.bad
			else
				echo "$1 $2" >>$name.gone
			fi ;;
		*)	echo "$1 $2: $msg" >>$name.bad ;;
		esac
	}
	printf '%s\n' "$INIT" >&5
	end=$(($(date +%s) + SECONDS_TO_RUN))
	while [ "$(date +%s)" -lt $end ]; do
		id=$(ls s/snapshots | shuf -n 1)
		[ -n "$id" ] || { sleep 0.1; continue; }
		call trace_decode "{\"snapshot_id\":\"$id\"}" || break
		judge decode $id
		call trace_query "{\"snapshot_id\":\"$id\",\"kind\":\"hotpaths\",\"limit\":3}" || break
		judge query $id
		if [ "$prunes" = 1 ]; then
			call trace_prune "{\"max_count\":2}" || break
			judge prune -
		fi
	done
	exec 5>&-
	wait $srv
}

test_expect_success "two servers, imports and prunes for $SECONDS_TO_RUN s: nothing lost" '
	export PTKIT_STORE=$PWD/s
	ptmcp import "$TEST_ROOT/snap" >/dev/null || exit 1
	touch a.ok a.gone a.bad b.ok b.gone b.bad import.err
	(end=$(($(date +%s) + SECONDS_TO_RUN)); i=0
	 while [ "$(date +%s)" -lt $end ]; do
		ptmcp import "$TEST_ROOT/snap" >/dev/null 2>>import.err ||
		    echo failed >>import.err
		i=$((i + 1)); sleep 0.3
	 done; echo $i >imports) &
	imp=$!
	drive a 0 &
	da=$!
	drive b 1 &
	db=$!
	wait $imp && wait $da && wait $db &&
	cat a.bad b.bad &&
	echo "# $(cat imports) imports; decodes and queries: $(cat a.ok b.ok | grep -vc prune) ok, $(cat a.gone b.gone | wc -l) with their snapshot gone first; $(grep -c prune b.ok) prunes" &&
	test_eq "" "$(cat a.bad b.bad import.err)" &&
	test "$(grep -c "^decode" a.ok)" -ge 3 &&
	test "$(grep -c "^query" b.ok)" -ge 2 &&
	test "$(grep -c prune b.ok)" -ge 2 &&
	test_eq "" "$(cat a.err b.err)" &&
	test_eq "" "$(find s -name ".tmp-*" -o -name ".import-*" -o -name ".trash-*")" &&
	test_eq "" "$(ls s/sessions)"
'

test_done

#!/bin/sh
# ptmcp's store verbs: list, show, import, prune, doctor; the store's
# location and modes; ids that are not ids.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

ID1=20260101T000000Z-00000001
ID2=20260102T000000Z-00000002
ID3=20260103T000000Z-00000003

test_expect_success 'the store is made 0700 where PTKIT_STORE says' '
	PTKIT_STORE=$PWD/a/b/store ptmcp doctor >out 2>err;
	test_eq "drwx------" "$(ls -ld a/b/store | cut -c1-10)" &&
	test_eq "jobs reports sessions snapshots" "$(ls a/b/store | tr "\n" " " | sed "s/ $//")" &&
	test_eq "store: $PWD/a/b/store: usable, 0700, 0 snapshots, 0 bytes" "$(sed -n 1p out)"
'

test_expect_success '--store wins over PTKIT_STORE; XDG_DATA_HOME, then HOME' '
	PTKIT_STORE=$PWD/env ptmcp --store "$PWD/opt" doctor >out 2>&1;
	test -d opt && test ! -e env &&
	env -u PTKIT_STORE XDG_DATA_HOME=$PWD/xdg ptmcp doctor >out 2>&1;
	test -d xdg/ptkit/snapshots &&
	env -u PTKIT_STORE -u XDG_DATA_HOME HOME=$PWD/home ptmcp doctor >out 2>&1;
	test -d home/.local/share/ptkit/snapshots
'

test_expect_success 'list: nothing for an absent or empty store' '
	must_exit 1 env PTKIT_STORE=$PWD/none ptmcp list >out 2>err &&
	test_eq "ptmcp: store: $PWD/none: no store here: nothing was recorded into it yet" "$(cat err)" &&
	mkdir -p s/snapshots &&
	PTKIT_STORE=$PWD/s ptmcp list >out &&
	test ! -s out
'

test_expect_success 'list: one JSON line per snapshot, oldest first, strays ignored' '
	mcp_snapshot s $ID2 decoded && mcp_snapshot s $ID1 &&
	mkdir s/snapshots/.tmp-x s/snapshots/not-an-id &&
	ln -s / s/snapshots/$ID3 &&
	PTKIT_STORE=$PWD/s ptmcp list >out &&
	cat >expect <<-EOF &&
	{"id":"$ID1","bytes":14,"in_use":false,"analyses":[],"created":"2026-01-01T00:00:00.000Z","program":null,"trigger":null}
	{"id":"$ID2","bytes":17,"in_use":false,"analyses":["default"],"created":"2026-01-02T00:00:00.000Z","program":null,"trigger":null}
	EOF
	test_cmp expect out
'

test_expect_success 'show: the snapshot, its analyses and manifest' '
	mcp_snapshot s $ID1 decoded &&
	PTKIT_STORE=$PWD/s ptmcp show $ID1 >out &&
	test_eq "{\"id\":\"$ID1\",\"path\":\"$PWD/s/snapshots/$ID1\",\"bytes\":17,\"analyses\":[\"default\"],\"manifest\":{\"hand\":true}}" "$(cat out)"
'

test_expect_success 'show: ids are never paths' '
	mkdir -p s/snapshots && ln -s / s/snapshots/$ID3 &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp show ../../etc >out 2>err &&
	test ! -s out &&
	test_eq "ptmcp: ../../etc: not a valid id: ids look like 20261129T101500Z-0123abcd" "$(cat err)" &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp show $ID3 >out 2>err &&
	test ! -s out &&
	test_eq "ptmcp: $ID3: $ID3: resolves outside the store" "$(cat err)" &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp show $ID2 2>err &&
	test_eq "ptmcp: $ID2: not in the store: list shows the snapshots" "$(cat err)"
'

test_expect_success 'import: copied in under its own id, links inside followed' '
	mkdir -p src/$ID1/images && echo "{\"m\":1}" >src/$ID1/manifest.json &&
	echo elf >src/$ID1/images/elf && ln -s elf src/$ID1/images/alias &&
	PTKIT_STORE=$PWD/s ptmcp import src/$ID1 >out &&
	test_eq $ID1 "$(cat out)" &&
	test_eq elf "$(cat s/snapshots/$ID1/images/alias)" &&
	test ! -L s/snapshots/$ID1/images/alias &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp import src/$ID1 >out2 2>err &&
	test ! -s out2 &&
	test_eq "ptmcp: src/$ID1: snapshot $ID1 is already in the store: ptmcp show it, or import --new-id to keep both" "$(cat err)" &&
	test_eq 1 "$(ls s/snapshots | wc -l)" &&
	PTKIT_STORE=$PWD/s ptmcp import --new-id src/$ID1 >out2 &&
	test_eq 1 "$(grep -c "^2[0-9]\{7\}T[0-9]\{6\}Z-[0-9a-f]\{8\}$" out2)" &&
	test "$(cat out2)" != $ID1 &&
	test_eq 2 "$(ls s/snapshots | wc -l)"
'

test_expect_success 'concurrent imports into one store all land, each once' '
	mkdir -p src/$ID1 && echo "{}" >src/$ID1/manifest.json &&
	head -c 3000000 /dev/zero >src/$ID1/big &&
	for i in 1 2 3 4; do
		PTKIT_STORE=$PWD/s ptmcp import --new-id src/$ID1 >id.$i 2>err.$i &
	done &&
	wait &&
	test_eq 4 "$(cat id.1 id.2 id.3 id.4 | sort -u | wc -l)" &&
	test_eq 4 "$(ls s/snapshots | wc -l)" &&
	test_eq 1 "$(cat id.1 id.2 id.3 id.4 | grep -c "^$ID1\$")" &&
	test_eq "" "$(ls -A s/snapshots | grep -v "^2")" &&
	test_eq "" "$(cat err.1 err.2 err.3 err.4)"
'

test_expect_success 'concurrent imports of one id without --new-id: one lands, the rest say why' '
	mkdir -p src/$ID1 && echo "{}" >src/$ID1/manifest.json &&
	head -c 3000000 /dev/zero >src/$ID1/big &&
	for i in 1 2 3 4; do
		PTKIT_STORE=$PWD/s ptmcp import src/$ID1 >id.$i 2>err.$i &
	done &&
	wait &&
	test_eq $ID1 "$(cat id.1 id.2 id.3 id.4)" &&
	test_eq $ID1 "$(ls -A s/snapshots)" &&
	test_eq 3 "$(cat err.1 err.2 err.3 err.4 | grep -c "^ptmcp: src/$ID1: snapshot $ID1 is already in the store: ptmcp show it, or import --new-id to keep both\$")"
'

test_expect_success 'import: refuses a non-snapshot and links that leave it' '
	mkdir -p bad && echo x >bad/file &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp import bad 2>err &&
	test_eq "ptmcp: bad: bad: no manifest.json; not a snapshot directory" "$(cat err)" &&
	echo "{}" >bad/manifest.json && ln -s /etc/passwd bad/pw &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp import bad 2>err &&
	grep -q "pw: a symbolic link that leaves the snapshot; not imported" err &&
	test_eq "" "$(ls -A s/snapshots)"
'

test_expect_success 'prune: by count, by size, by age; dry run first' '
	mcp_snapshot s $ID1 && mcp_snapshot s $ID2 && mcp_snapshot s $ID3 &&
	PTKIT_STORE=$PWD/s ptmcp prune --max-count 1 --dry-run >out &&
	printf "%s\t14\n" $ID1 $ID2 >expect && test_cmp expect out &&
	test_eq 3 "$(ls s/snapshots | wc -l)" &&
	PTKIT_STORE=$PWD/s ptmcp prune --max-bytes 30 >out &&
	printf "%s\t14\n" $ID1 >expect && test_cmp expect out &&
	echo "{\"created_wall_ns\":$(date +%s)000000000}" >s/snapshots/$ID3/manifest.json &&
	touch -d "2000-01-01" s/snapshots/$ID3 &&
	PTKIT_STORE=$PWD/s ptmcp prune --max-age 7d >out &&
	printf "%s\t14\n" $ID2 >expect && test_cmp expect out &&
	test_eq $ID3 "$(ls s/snapshots)"
'

test_expect_success 'prune: usage errors' '
	must_exit 2 ptmcp prune 2>err &&
	test_eq "ptmcp: prune needs snapshot ids, --max-age, --max-count, --max-bytes or --keep-newest" "$(sed -n 1p err)" &&
	must_exit 2 ptmcp prune --max-age 7x 2>err &&
	test_eq "ptmcp: option '"'"'--max-age'"'"': '"'"'7x'"'"' is not a duration like 3600, 90m, 12h or 7d" "$(sed -n 1p err)"
'

test_expect_success 'prune never removes what a live session uses' '
	mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake && export FAKE_DIR &&
	FAKE_DECODE=hang && export FAKE_DECODE &&
	mcp_snapshot s $ID1 && mcp_snapshot s $ID2 &&
	PTKIT_STORE=$PWD/s && export PTKIT_STORE &&
	MCP_PTMCP=$PWD/bin/ptmcp mcp_open out &&
	mcp_send "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"trace_decode\",\"arguments\":{\"snapshot_id\":\"$ID1\"}}}" &&
	mcp_wait_for test -s fake/ptspans.pid &&
	ptmcp list | jq -c "[.id, .in_use]" >inuse &&
	ptmcp prune --max-count 0 >out &&
	mcp_close &&
	printf "[\"%s\",true]\n[\"%s\",false]\n" $ID1 $ID2 >expect &&
	test_cmp expect inuse &&
	printf "%s\t14\n" $ID2 >expect && test_cmp expect out &&
	test_eq $ID1 "$(ls s/snapshots)"
'

test_expect_success 'doctor: the store, then ptrec --doctor in its words' '
	mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake && export FAKE_DIR &&
	mcp_snapshot s $ID1 &&
	PTKIT_STORE=$PWD/s bin/ptmcp doctor >out &&
	test_eq "store: $PWD/s: usable, 0700, 1 snapshots, 14 bytes" "$(sed -n 1p out)" &&
	test_eq "--doctor" "$(cat fake/ptrec.args)" &&
	must_exit 1 env FAKE_DOCTOR_FAIL=1 PTKIT_STORE=$PWD/s bin/ptmcp doctor >out 2>err &&
	test_eq "ptrec: --doctor failed in the fake ptrec" "$(sed -n 1p err)"
'

test_done

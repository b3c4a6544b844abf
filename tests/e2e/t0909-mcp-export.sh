#!/bin/sh
# ptmcp export ID DIR writes a snapshot with its analyses that import
# takes back under the same id into another store (as on another
# machine); a second import of that id is refused naming it, unless
# --new-id; export refuses what it cannot do, exactly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

ID=20260107T000000Z-0000abcd
NONE=20260107T000000Z-0000ffff

test_expect_success 'a decoded snapshot in store a' '
	cd "$TEST_ROOT" &&
	mkdir -p a/snapshots/$ID/images a/snapshots/$ID/derived/default &&
	echo "{\"created_wall_ns\":1767744000000000000,\"target\":{\"argv\":[\"./app\"]},\"trigger\":{\"kind\":\"exit\"}}" \
	    >a/snapshots/$ID/manifest.json &&
	echo elf >a/snapshots/$ID/images/app &&
	echo "{\"a\":1}" >a/snapshots/$ID/derived/default/manifest.json &&
	echo spans >a/snapshots/$ID/derived/default/spans.jsonl &&
	mkdir a/snapshots/$ID/derived/.tmp-abc123 &&
	echo half >a/snapshots/$ID/derived/.tmp-abc123/spans.jsonl &&
	chmod -R go-rwx a
'

test_expect_success 'export: DIR/ID, whole, work in progress left out, nothing left of its guard' '
	cd "$TEST_ROOT" &&
	PTKIT_STORE=$PWD/a ptmcp export $ID out/x >said 2>err &&
	test ! -s err &&
	test_eq "out/x/$ID" "$(cat said)" &&
	(cd a/snapshots/$ID && find . -path ./derived/.tmp-abc123 -prune -o -print | sort) >want &&
	(cd out/x/$ID && find . -print | sort) >got &&
	test_cmp want got &&
	test_eq "{\"a\":1}" "$(cat out/x/$ID/derived/default/manifest.json)" &&
	test_eq "" "$(ls -A out/x | grep -v "^$ID\$")" &&
	test_eq "" "$(ls a/sessions)"
'

test_expect_success 'import elsewhere: the same id, its analyses, listed as decoded' '
	cd "$TEST_ROOT" &&
	PTKIT_STORE=$PWD/b ptmcp import out/x/$ID >said &&
	test_eq $ID "$(cat said)" &&
	test_eq spans "$(cat b/snapshots/$ID/derived/default/spans.jsonl)" &&
	test_eq "$ID [\"default\"] ./app 2026-01-07T00:00:00.000Z" \
	    "$(PTKIT_STORE=$PWD/b ptmcp list | jq -r "[.id, (.analyses | tojson), .program, .created] | join(\" \")")"
'

test_expect_success 'import again: refused, naming the duplicate; --new-id keeps both' '
	cd "$TEST_ROOT" &&
	must_exit 1 env PTKIT_STORE=$PWD/b ptmcp import out/x/$ID >said 2>err &&
	test ! -s said &&
	test_eq "ptmcp: out/x/$ID: snapshot $ID is already in the store: ptmcp show it, or import --new-id to keep both" "$(cat err)" &&
	test_eq 1 "$(ls b/snapshots | wc -l)" &&
	PTKIT_STORE=$PWD/b ptmcp import --new-id out/x/$ID >said &&
	test "$(cat said)" != $ID &&
	test_eq spans "$(cat "b/snapshots/$(cat said)/derived/default/spans.jsonl")" &&
	test_eq 2 "$(ls b/snapshots | wc -l)"
'

test_expect_success 'export refuses: over an earlier export, an id not in the store, not an id' '
	cd "$TEST_ROOT" &&
	must_exit 1 env PTKIT_STORE=$PWD/a ptmcp export $ID out/x >said 2>err &&
	test ! -s said &&
	test_eq "ptmcp: $ID: out/x/$ID exists already; export writes a new directory" "$(cat err)" &&
	must_exit 1 env PTKIT_STORE=$PWD/a ptmcp export $NONE out/y 2>err &&
	test_eq "ptmcp: $NONE: $NONE: not in the store: list shows the snapshots" "$(cat err)" &&
	test ! -e out/y/$NONE &&
	must_exit 1 env PTKIT_STORE=$PWD/a ptmcp export ../x out/y 2>err &&
	test_eq "ptmcp: ../x: not a valid id: ids look like 20261129T101500Z-0123abcd" "$(cat err)" &&
	must_exit 2 env PTKIT_STORE=$PWD/a ptmcp export $ID 2>err &&
	test_eq "ptmcp: export takes an ID and a DIR" "$(sed -n 1p err)" &&
	test_eq "" "$(ls -A out/x | grep -v "^$ID\$")"
'

test_done

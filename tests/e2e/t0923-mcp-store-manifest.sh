#!/bin/sh
# ptmcp's store verbs and a snapshot's manifest.json that is not a
# regular file of the snapshot: list neither follows a link nor waits on
# a FIFO there; import takes no such directory for a snapshot; show reads
# the manifest through the descriptor its check opened, so a link swapped
# in meanwhile is never followed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

ID1=20260101T000000Z-00000001
ID2=20260102T000000Z-00000002
ID3=20260103T000000Z-00000003

planted() {
	echo '{"target":{"argv":["planted"]},"trigger":{"kind":"planted"}}' >"$1"
}

test_expect_success 'list: a manifest linked out or a FIFO shows no program, and no wait' '
	mcp_snapshot s $ID1 && mcp_snapshot s $ID2 && mcp_snapshot s $ID3 &&
	echo "{\"target\":{\"argv\":[\"./app\"]}}" >s/snapshots/$ID1/manifest.json &&
	planted planted.json &&
	rm s/snapshots/$ID2/manifest.json &&
	ln -s "$PWD/planted.json" s/snapshots/$ID2/manifest.json &&
	rm s/snapshots/$ID3/manifest.json && mkfifo s/snapshots/$ID3/manifest.json &&
	PTKIT_STORE=$PWD/s timeout 10 ptmcp list >out 2>err &&
	test ! -s err &&
	test_eq "$ID1 ./app|$ID2 null|$ID3 null" \
	    "$(jq -r "\"\(.id) \(.program)\"" out | tr "\n" "|" | sed "s/|$//")" &&
	! grep -q planted out
'

test_expect_success 'import: a manifest.json linked inside is no snapshot' '
	mkdir -p src/$ID1 && echo "{}" >src/$ID1/real.json &&
	ln -s real.json src/$ID1/manifest.json &&
	must_exit 1 env PTKIT_STORE=$PWD/s ptmcp import src/$ID1 >out 2>err &&
	test ! -s out &&
	test_eq "ptmcp: src/$ID1: src/$ID1: manifest.json: a symbolic link on the way; links are not followed inside the snapshot directory" "$(cat err)" &&
	rm src/$ID1/manifest.json && mkfifo src/$ID1/manifest.json &&
	must_exit 1 env PTKIT_STORE=$PWD/s timeout 10 ptmcp import src/$ID1 >out 2>err &&
	test_eq "ptmcp: src/$ID1: src/$ID1: manifest.json: not a regular file (a FIFO, a device?); refused" "$(cat err)" &&
	test_eq "" "$(ls s/snapshots)"
'

OUT="leads outside the snapshot directory"
LINK="a symbolic link on the way; links are not followed inside the snapshot directory"

# A swapper exchanges manifest.json and a link to a file outside with
# renameat2(RENAME_EXCHANGE) as fast as it can, while show runs again and
# again: each show finds the snapshot's own manifest or a link it refuses
# (said as leading out, or as a link when the swap back came between
# the two looks beneath's message takes), never the file outside (which
# a second open by name would read).
test_expect_success 'show: a link swapped in after the check is never followed' '
	mcp_snapshot s $ID1 &&
	planted planted.json &&
	ln -s "$PWD/planted.json" s/snapshots/$ID1/swap || exit 1
	# renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE), x86-64
	perl -e '"'"'
		my ($a, $b) = @ARGV;
		1 while syscall(316, -100, $a, -100, $b, 2) == 0;
		die "renameat2: $!\n";'"'"' \
	    s/snapshots/$ID1/manifest.json s/snapshots/$ID1/swap 2>swap.err &
	swapper=$!
	own=0 refused=0 other=0 i=0 &&
	while [ $i -lt 100 ]; do
		i=$((i + 1))
		PTKIT_STORE=$PWD/s timeout 10 ptmcp show $ID1 >out 2>err
		case $(jq -c .manifest out) in
		"{\"hand\":true}") own=$((own + 1)) ;;
		null) grep -q "^ptmcp: $ID1: manifest.json: \($OUT\|$LINK\): its manifest shows as null$" err &&
			refused=$((refused + 1)) || { other=$((other + 1)); cat out err; } ;;
		*) other=$((other + 1)); cat out err ;;
		esac
	done
	kill $swapper; wait $swapper
	echo "# $own shown, $refused refused, $other otherwise" &&
	test ! -s swap.err &&
	test_eq 0 $other &&
	test $own -gt 0 && test $refused -gt 0
'

test_done

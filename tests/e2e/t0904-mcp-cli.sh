#!/bin/sh
# ptmcp's verbs that run the other tools (run, attach, decode, query,
# compare), with stand-in tools beside a copy of ptmcp.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

ID1=20260101T000000Z-00000001
ID2=20260102T000000Z-00000002

setup='
	mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake &&
	PTKIT_STORE=$PWD/store && export FAKE_DIR PTKIT_STORE
'

test_expect_success 'run: records, decodes, prints ids and the summary' "
	$setup
	bin/ptmcp run --trigger-symbol main -- ./app a >out 2>err &&
	sid=\$(sed -n 1p out | cut -d' ' -f2) &&
	test_eq \"snapshot \$sid\" \"\$(sed -n 1p out)\" &&
	test_eq \"analysis \$sid/default\" \"\$(sed -n 2p out)\" &&
	test_eq '{\"rows\":[{\"fn\":\"f0\",\"self_ns\":1000},{\"fn\":\"f1\",\"self_ns\":999},{\"fn\":\"f2\",\"self_ns\":998}],\"next_cursor\":\"c2\"}' \"\$(sed -n 3p out)\" &&
	test_eq \"--store \$PWD/store --trigger-symbol main -- ./app a\" \"\$(tr '\n' ' ' <fake/ptrec.args | sed 's/ \$//')\" &&
	test_eq \"\$PWD/store/snapshots/\$sid/derived/default --kind summary\" \"\$(cat fake/ptquery.args)\" &&
	test -f store/snapshots/\$sid/derived/default/manifest.json
"

test_expect_success 'run: a failed recording says why and exits 1' "
	$setup
	FAKE_PTREC=fail && export FAKE_PTREC &&
	must_exit 1 bin/ptmcp run -- ./app >out 2>err &&
	test ! -s out &&
	grep -qx 'ptrec: recording failed in the fake ptrec' err
"

test_expect_success 'run and attach: usage' '
	must_exit 2 ptmcp run ./app 2>err &&
	test_eq "ptmcp: run needs -- PROGRAM [ARG ...]" "$(sed -n 1p err)" &&
	must_exit 2 ptmcp attach 2>err &&
	test_eq "ptmcp: attach needs --pid PID" "$(sed -n 1p err)"
'

test_expect_success 'attach: ptrec --pid into the store' "
	$setup
	bin/ptmcp attach --pid 123 >out 2>err &&
	test_eq \"--store \$PWD/store --pid 123\" \"\$(tr '\n' ' ' <fake/ptrec.args | sed 's/ \$//')\" &&
	test_eq 3 \"\$(wc -l <out)\"
"

test_expect_success 'decode: into derived/default, once' "
	$setup
	mcp_snapshot store $ID1 &&
	bin/ptmcp decode $ID1 >out &&
	bin/ptmcp decode $ID1 >out2 &&
	test_eq \"\$PWD/store/snapshots/$ID1/derived/default\" \"\$(cat out)\" &&
	test_cmp out out2 &&
	test_eq 1 \"\$(wc -l <fake/ptdecode.args)\" &&
	test_eq default \"\$(ls -A store/snapshots/$ID1/derived)\" &&
	test_eq '' \"\$(ls store/sessions)\"
"

test_expect_success 'decode: failure leaves nothing, ids are never paths' "
	$setup
	FAKE_DECODE=fail && export FAKE_DECODE &&
	mcp_snapshot store $ID1 &&
	must_exit 1 bin/ptmcp decode $ID1 2>err &&
	test_eq 'ptdecode: decoding failed in the fake ptdecode' \"\$(sed -n 1p err)\" &&
	test_eq '' \"\$(ls -A store/snapshots/$ID1/derived)\" &&
	must_exit 1 bin/ptmcp decode ../../etc 2>err &&
	grep -q \"'../../etc' is not a valid id\" err
"

test_expect_success 'query and compare pass options through' "
	$setup
	mcp_snapshot store $ID1 decoded && mcp_snapshot store $ID2 decoded &&
	bin/ptmcp query $ID1 --kind hotpaths --limit 2 >out &&
	test_eq \"\$PWD/store/snapshots/$ID1/derived/default --kind hotpaths --limit 2\" \"\$(cat fake/ptquery.args)\" &&
	must_exit 1 bin/ptmcp compare $ID1 $ID2 --fail-on self_ns:+10% >out &&
	test_eq '{\"functions\":[{\"fn\":\"main\",\"self_ns\":\"+12%\"}]}' \"\$(cat out)\" &&
	test_eq \"--fail-on self_ns:+10% \$PWD/store/snapshots/$ID1/derived/default \$PWD/store/snapshots/$ID2/derived/default\" \"\$(cat fake/ptdiff.args)\"
"

test_expect_success 'query: a snapshot not decoded yet' "
	$setup
	mcp_snapshot store $ID1 &&
	must_exit 1 bin/ptmcp query $ID1 --kind summary 2>err &&
	test_eq 'ptmcp: $ID1: not decoded yet: run: ptmcp decode ID' \"\$(cat err)\"
"

test_done

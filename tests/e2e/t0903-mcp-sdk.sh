#!/bin/sh
# ptmcp serve against the official MCP TypeScript SDK client (tests/mcp/,
# installed by make check with npm ci), with stand-in tools.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcp.sh"

client=$PTKIT_BUILD/mcp-client
ID1=20260101T000000Z-00000001
ID2=20260102T000000Z-00000002

if ! command -v node >/dev/null 2>&1; then
	test_skip 'the SDK client accepts everything ptmcp sends' 'no node'
elif [ ! -e "$client/.installed" ] || [ ! -e "$client/client.mjs" ]; then
	test_skip 'the SDK client accepts everything ptmcp sends' \
	    'the SDK is not installed (npm ci failed or no npm)'
else
	test_expect_success 'the SDK client accepts everything ptmcp sends' '
		mcp_fakes bin && mkdir fake && FAKE_DIR=$PWD/fake &&
		PTKIT_STORE=$PWD/store && export FAKE_DIR PTKIT_STORE &&
		mcp_snapshot store $ID1 && mcp_snapshot store $ID2 decoded &&
		timeout -s KILL 120 node "$client/client.mjs" "$PWD/bin/ptmcp" \
		    $ID1 $ID2 >log 2>err;
		cat log err &&
		test_eq 0 "$(grep -c "^not ok" log)" &&
		test_eq 18 "$(grep -c "^ok" log)" &&
		test_eq 1..18 "$(tail -1 log)"
	'
fi

test_done

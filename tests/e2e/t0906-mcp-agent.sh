#!/bin/sh
# An agent's questions through the official MCP TypeScript SDK client
# (tests/mcp/agent.mjs), reading only content[].text, against ptmcp serve
# and the real tools, on an -O2 -flto program that prints its own counts
# (tests/fixtures/mcp/agent.c): which functions ran and who called them,
# an inlined helper inside its caller, the other thread at an instant, a
# data-dependent branch, a v1/v2 pair, and paging 3,000 rows.
. "$(dirname "$0")/lib.sh"

client=$PTKIT_BUILD/mcp-client
agent=$PTKIT_BUILD/tests/fixtures/mcp/agent

if ! command -v node >/dev/null 2>&1; then
	test_skip 'an agent answers from the text alone' 'no node'
elif [ ! -e "$client/.installed" ] || [ ! -e "$client/agent.mjs" ]; then
	test_skip 'an agent answers from the text alone' \
	    'the SDK is not installed (npm ci failed or no npm)'
elif [ ! -x "$agent" ]; then
	test_skip 'an agent answers from the text alone' 'no agent fixture'
else
	test_expect_success 'an agent answers from the text alone' '
		"$agent" >native &&
		grep -qx "step 3000" native && grep -qx "lookup 40" native &&
		grep -qx "tick 50000" native &&
		AGENT_HITS=$(sed -n "s/^hits //p" native) &&
		PTKIT_STORE=$PWD/store && export PTKIT_STORE AGENT_HITS &&
		timeout -s KILL 300 node "$client/agent.mjs" \
		    "$PTKIT_BUILD/bin/ptmcp" "$agent" >log 2>err;
		cat log err &&
		test_eq 0 "$(grep -c "^not ok" log)" &&
		test_eq 17 "$(grep -c "^ok" log)" &&
		test_eq 1..17 "$(tail -1 log)"
	'
fi

test_done

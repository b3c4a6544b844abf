# mcp.sh: helpers for the ptmcp e2e tests, sourced after lib.sh.
#
#   mcp_session REQUESTS OUT N [ptmcp options]
#       runs `ptmcp serve` with the lines of REQUESTS on its stdin, keeps
#       stdin open until OUT holds N responses (lines with an "id"), then
#       closes it and waits for ptmcp to exit; its status is returned and
#       its stderr is in OUT.err.  A server that never answers, or never
#       exits, is ended by a 30 s guard (status 124), so a broken server
#       fails the test instead of hanging it.
#   mcp_fakebin DIR
#       copies ptmcp into DIR: it runs the ptkit tools beside itself, so
#       scripts put in DIR stand in for ptrec, ptdecode, ...
#   mcp_responses OUT
#       the number of responses (lines with an "id") in OUT.

mcp_responses() {
	jq -s '[.[] | select(has("id"))] | length' "$1"
}

# Waits (at most about 30 s) until command "$@" succeeds.
mcp_wait_for() {
	mcp_i=0
	until "$@"; do
		mcp_i=$((mcp_i + 1))
		[ $mcp_i -ge 300 ] && return 1
		sleep 0.1
	done
}

mcp_have_responses() {
	[ "$(mcp_responses "$1")" -ge "$2" ]
}

mcp_session() {
	mcp_req=$1 mcp_out=$2 mcp_n=$3
	shift 3
	rm -f mcp.fifo
	mkfifo mcp.fifo
	timeout -s KILL 30 ${MCP_PTMCP:-ptmcp} "$@" serve <mcp.fifo \
	    >"$mcp_out" 2>"$mcp_out.err" &
	mcp_pid=$!
	exec 3>mcp.fifo
	cat "$mcp_req" >&3
	mcp_wait_for mcp_have_responses "$mcp_out" "$mcp_n"
	exec 3>&-
	wait $mcp_pid
	mcp_rc=$?
	[ $mcp_rc -eq 137 ] && return 124
	return $mcp_rc
}

mcp_fakebin() {
	mkdir -p "$1" &&
	cp "$PTKIT_BUILD/bin/ptmcp" "$1/"
}

# The response to request id $2 (JSON) in file $1, compact.
mcp_reply() {
	jq -c --argjson id "$2" 'select(has("id") and .id == $id)' "$1"
}

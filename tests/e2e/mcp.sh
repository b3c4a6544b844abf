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

# An interactive session: mcp_open OUT [ptmcp options]; then mcp_call /
# mcp_tool to send a request and print its response once it came;
# mcp_close to close stdin and wait for the exit status.
mcp_open() {
	MCP_OUT=$1
	shift
	rm -f mcp.fifo
	mkfifo mcp.fifo
	timeout -s KILL 60 ${MCP_PTMCP:-ptmcp} "$@" serve <mcp.fifo \
	    >"$MCP_OUT" 2>"$MCP_OUT.err" &
	MCP_PID=$!
	exec 3>mcp.fifo
}

mcp_send() {
	printf '%s\n' "$1" >&3
}

mcp_has_id() {
	[ -n "$(mcp_reply "$MCP_OUT" "$1" 2>/dev/null)" ]
}

# mcp_call ID LINE
mcp_call() {
	mcp_send "$2"
	mcp_wait_for mcp_has_id "$1" || return 1
	mcp_reply "$MCP_OUT" "$1"
}

# mcp_tool ID NAME ARGUMENTS-JSON [META-JSON]
mcp_tool() {
	mcp_call "$1" "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3${4:+,\"_meta\":$4}}}"
}

mcp_close() {
	exec 3>&-
	wait $MCP_PID
}

# Stand-ins for the other ptkit tools, written into DIR beside a copy of
# ptmcp.  They log their pids and argv under $FAKE_DIR and behave as the
# FAKE_* variables say.  ./app is the program the tests launch (trace_start
# checks that it exists before the fake ptrec "records" it).
mcp_fakes() {
	mcp_fakebin "$1" &&
	printf '#!/bin/sh\nexit 0\n' >app && chmod +x app &&
	cat >"$1/ptrec" <<-\FAKE &&
	#!/bin/sh
	echo $$ >>"$FAKE_DIR/ptrec.pids"
	printf '%s\n' "$@" >"$FAKE_DIR/ptrec.args"
	if [ "$1" = --doctor ]; then
		if [ -n "${FAKE_DOCTOR_FAIL:-}" ]; then
			echo "ptrec: --doctor failed in the fake ptrec" >&2
			exit 1
		fi
		echo '{"recorders":{"emu":{"usable":true}}}'
		exit 0
	fi
	store= ctl=
	while [ $# -gt 0 ]; do
		case $1 in
		--store) store=$2; shift ;;
		--control) ctl=$2; shift ;;
		--) break ;;
		esac
		shift
	done
	n=0
	snap() {
		n=$((n + 1))
		id=$(date -u +%Y%m%dT%H%M%SZ)-$(printf %08x $((n + $$ * 16)))
		mkdir -p "$store/snapshots/$id"
		m=${FAKE_MANIFEST:-}
		[ -n "$m" ] || m='{"fake":true}'
		echo "$m" >"$store/snapshots/$id/manifest.json"
		echo "$store/snapshots/$id"
	}
	case ${FAKE_PTREC:-exit} in
	exit) snap; exit 0 ;;
	fail)
		echo "the program says hi" >&2
		echo "ptrec: recording failed in the fake ptrec" >&2
		exit 1 ;;
	failbytes)
		printf 'ptrec: /tmp/d\377/app: not an x86-64 ELF executable\n' >&2
		exit 1 ;;
	hang) exec sleep 3001 ;;
	control)
		exec 4<>"$ctl"
		touch "$FAKE_DIR/ready"
		while read -r cmd <&4; do
			case $cmd in
			snapshot) snap ;;
			stop) snap; exit 0 ;;
			cancel) exit 3 ;;
			esac
		done ;;
	esac
	FAKE
	cat >"$1/ptdecode" <<-\FAKE &&
	#!/bin/sh
	echo $$ >"$FAKE_DIR/ptdecode.pid"
	echo "$@" >>"$FAKE_DIR/ptdecode.args"
	echo "${PTKIT_PROGRESS:-unset}" >"$FAKE_DIR/ptdecode.env"
	[ -e "$FAKE_DIR/decode.hang" ] && FAKE_DECODE=hang
	case ${FAKE_DECODE:-ok} in
	ok) echo blocks; exit 0 ;;
	progress)
		# A quarter decoded, then on until decode.go appears.
		echo "progress: decoding 512 2048" >&2
		while [ ! -e "$FAKE_DIR/decode.go" ]; do sleep 0.05; done
		echo blocks; exit 0 ;;
	hang) exec sleep 3002 ;;
	fail) echo "ptdecode: decoding failed in the fake ptdecode" >&2; exit 1 ;;
	esac
	FAKE
	cat >"$1/ptspans" <<-\FAKE &&
	#!/bin/sh
	echo $$ >"$FAKE_DIR/ptspans.pid"
	echo "${PTKIT_PROGRESS:-unset}" >"$FAKE_DIR/ptspans.env"
	cat >/dev/null
	# With FAKE_SPANS=wait, on only once spans.go appears.
	while [ "${FAKE_SPANS:-}" = wait ] && [ ! -e "$FAKE_DIR/spans.go" ]; do
		sleep 0.05
	done
	# With FAKE_SPANS=progress, ptspans's progress lines: the stream
	# read, until spans.go appears; the index, until index.go does.
	if [ "${FAKE_SPANS:-}" = progress ]; then
		echo "progress: reading 4096 0" >&2
		while [ ! -e "$FAKE_DIR/spans.go" ]; do sleep 0.05; done
		echo "progress: indexing 0 77" >&2
		while [ ! -e "$FAKE_DIR/index.go" ]; do sleep 0.05; done
	fi
	[ "$1" = -o ] || exit 2
	mkdir "$2" && echo '{"fake":true}' >"$2/manifest.json" && echo "$2"
	FAKE
	cat >"$1/ptquery" <<-\FAKE &&
	#!/bin/sh
	echo "$@" >"$FAKE_DIR/ptquery.args"
	if [ "${FAKE_QUERY:-}" = fail ]; then
		echo "ptquery: $1: --span 99: no span with this id (option '--span' takes a span id from --kind timeline)" >&2
		exit 1
	fi
	i=0
	printf '{"rows":['
	while [ $i -lt "${FAKE_ROWS:-3}" ]; do
		[ $i -gt 0 ] && printf ,
		printf '{"fn":"f%d","self_ns":%d}' $i $((1000 - i))
		i=$((i + 1))
	done
	printf '],"next_cursor":"c2"}\n'
	FAKE
	cat >"$1/ptdiff" <<-\FAKE &&
	#!/bin/sh
	echo "$@" >"$FAKE_DIR/ptdiff.args"
	echo '{"functions":[{"fn":"main","self_ns":"+12%"}]}'
	exit ${FAKE_DIFF_RC:-1}
	FAKE
	chmod +x "$1/ptrec" "$1/ptdecode" "$1/ptspans" "$1/ptquery" \
	    "$1/ptdiff"
}

# A snapshot directory made by hand: mcp_snapshot STORE ID [decoded]
mcp_snapshot() {
	mkdir -p "$1/snapshots/$2" &&
	echo '{"hand":true}' >"$1/snapshots/$2/manifest.json" &&
	if [ -n "${3:-}" ]; then
		mkdir -p "$1/snapshots/$2/derived/default" &&
		echo '{}' >"$1/snapshots/$2/derived/default/manifest.json"
	fi
}

#!/bin/sh
# Installs the Debian 12 packages ptkit needs to build, test and record.
#   deps.sh              install whatever is missing (root), else say how
#   deps.sh --if-missing the same, silent when nothing is missing
#   deps.sh --list       print the package list
# Not root and something missing: prints the exact apt-get line, exits 1.
set -eu

# Build: compiler libraries.  Tests and recording: the rest (nodejs runs
# the MCP SDK conformance client; the NodeSource nodejs package carries
# npm, Debian's needs the npm package too, else that test skips).
PACKAGES="gcc g++ make pkg-config libipt-dev libelf-dev libdw-dev libzstd-dev
libjansson-dev nettle-dev libiberty-dev libzydis-dev libdeflate-dev libc6-dbg qemu-user linux-perf jq
mandoc perl binutils dwz nodejs"

missing() {
	for p in $PACKAGES; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || s=
		[ "$s" = installed ] || printf '%s ' "$p"
	done
}

case "${1:-}" in
--list) echo $PACKAGES; exit 0 ;;
--if-missing|"") ;;
*) echo "usage: deps.sh [--if-missing | --list]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "ptkit: deps: not a Debian system; install the equivalents of:" >&2
	echo "  $PACKAGES" >&2
	[ "${1:-}" = --if-missing ] && exit 0
	exit 1
fi

need=$(missing)
if [ -z "$need" ]; then
	[ "${1:-}" = --if-missing ] || echo "ptkit: deps: all packages installed"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "ptkit: deps: missing packages: $need" >&2
	echo "ptkit: deps: run as root: apt-get install -y --no-install-recommends $need" >&2
	exit 1
fi

echo "ptkit: deps: installing $need" >&2
export DEBIAN_FRONTEND=noninteractive
# apt-get update only when the package lists do not know a missing package.
for p in $need; do
	if ! apt-cache show "$p" >/dev/null 2>&1; then
		apt-get update -q
		break
	fi
done
# A stale list names versions the mirror no longer has: update, try again.
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $need ||
	{ apt-get update -q && apt-get install -y -q --no-install-recommends $need; }

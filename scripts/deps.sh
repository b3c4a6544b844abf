#!/bin/sh
# Installs the Debian 12 packages ptkit needs, in two sets: what building
# needs (make, make all) and what running and testing need on top (make
# check, demo, bench, fuzz), so that a plain build never asks for more
# than a compiler and libraries.
#   deps.sh                    every package: install what is missing
#                              (root), else say how
#   deps.sh --if-missing       the same, silent when nothing is missing
#   deps.sh --build            the build packages only
#   deps.sh --if-missing-build the same, silent when nothing is missing
#   deps.sh --list             print every package
#   deps.sh --list-build       print the build packages
#   deps.sh --list-test        print the packages only running and testing need
# Not root and something missing: prints the exact apt-get line, exits 1.
set -eu

# Build: the compilers (g++ builds the C++ test fixtures too), make,
# binutils (ar, objcopy) and the libraries the tools link.
BUILD_PACKAGES="gcc g++ make pkg-config binutils libipt-dev libelf-dev
libdw-dev libzstd-dev libjansson-dev nettle-dev libiberty-dev libzydis-dev
libdeflate-dev"
# Running and testing: qemu-user runs the emu recorder, linux-perf is the
# reference decoder the tests compare with and the perf recorder, perl
# runs prove, jq, mandoc (the man pages' lint), dwz and libc6-dbg make
# test fixtures and check outputs, zstd reads the compressed spans the
# tests check with jq, nodejs runs the MCP SDK conformance
# client and the Chrome trace consumers (the NodeSource nodejs package
# carries npm; Debian's needs the npm package too, else those tests skip).
TEST_PACKAGES="libc6-dbg qemu-user linux-perf jq mandoc perl dwz nodejs zstd"

usage() {
	echo "usage: deps.sh [--if-missing | --build | --if-missing-build |" \
	    "--list | --list-build | --list-test]" >&2
	exit 2
}

quiet=
case "${1:-}" in
--list) echo $BUILD_PACKAGES $TEST_PACKAGES; exit 0 ;;
--list-build) echo $BUILD_PACKAGES; exit 0 ;;
--list-test) echo $TEST_PACKAGES; exit 0 ;;
"") PACKAGES="$BUILD_PACKAGES $TEST_PACKAGES" ;;
--if-missing) PACKAGES="$BUILD_PACKAGES $TEST_PACKAGES"; quiet=1 ;;
--build) PACKAGES=$BUILD_PACKAGES ;;
--if-missing-build) PACKAGES=$BUILD_PACKAGES; quiet=1 ;;
*) usage ;;
esac
[ $# -le 1 ] || usage

missing() {
	for p in $PACKAGES; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || s=
		[ "$s" = installed ] || printf '%s ' "$p"
	done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "ptkit: deps: not a Debian system; install the equivalents of:" >&2
	echo "  "$PACKAGES >&2
	[ -n "$quiet" ] && exit 0
	exit 1
fi

need=$(missing)
if [ -z "$need" ]; then
	[ -n "$quiet" ] || echo "ptkit: deps: all packages installed"
	exit 0
fi
need=${need% }

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

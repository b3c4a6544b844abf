#!/bin/sh
# lib/symtab: load time and lookups/s for libc with its debuginfo
# (libc6-dbg), and for the C++ fixture.  Figures only.
set -eu
b=${PTKIT_BUILD:?PTKIT_BUILD is not set (run through make bench)}
"$b/bench/symtab_bench" /lib/x86_64-linux-gnu/libc.so.6
"$b/bench/symtab_bench" "$b/fixtures/sym/cxx" 2000000

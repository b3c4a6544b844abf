#!/bin/sh
# make demo: record the bundled demo program with the best recorder this
# machine has, decode it, and print its summary and top hotpaths.
# Runs from the source tree with the built tools first on PATH.
set -eu
demo=${PTKIT_BUILD:-build}/fixtures/demo
out=${PTKIT_BUILD:-build}/demo
rm -rf "$out"
mkdir -p "$out"

echo "ptkit demo: recording $demo" >&2
snap=$(ptrec -o "$out/snapshot" -- "$demo")
echo "ptkit demo: snapshot $snap" >&2
ptdecode "$snap" | ptspans -o "$out/analysis" >/dev/null
ptquery "$out/analysis" --kind summary
echo
ptquery "$out/analysis" --kind hotpaths --group function --limit 10 \
    --format table
# The demo's own functions, against the counts the program printed.
echo
echo "ptkit demo: the program said: $(grep '^calls:' "$snap/output.log")"
skip=0
for f in main checksum mix fib; do
	ptquery "$out/analysis" --kind hotpaths --function "$f" \
	    --format table | tail -n +$((skip + 1))
	skip=1
done

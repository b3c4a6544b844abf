#!/bin/sh
# layers.sh [ROOT]: checks that every module of ROOT/lib (default: the
# tree this script is in) includes headers only from its own layer and
# from the layers it may use, and names each header by its layer
# ("fmt/blkstream.h").  Prints one line per offending include and exits 1;
# prints nothing and exits 0 when the tree keeps the order.
#
# The order is this table (ARCHITECTURE.md says what each layer owns).
# A layer may use those named after it; tool is the only lib code that
# prints, so no other layer may use it.
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"

layers='
base:
tool: base
sym: base
fmt: base sym
rec: base fmt
dec: base fmt
span: base sym fmt dec
'

status=0
for dir in lib/*/; do
	layer=$(basename "$dir")
	uses=$(printf '%s\n' "$layers" | sed -n "s/^$layer:[ ]*//p")
	if ! printf '%s\n' "$layers" | grep -q "^$layer:"; then
		echo "lib/$layer: not a layer (layers.sh lists base tool sym fmt rec dec span)"
		status=1
		continue
	fi
	for f in "$dir"*.[ch]; do
		[ -e "$f" ] || continue
		out=$(awk -v layer="$layer" -v uses=" $uses " -v file="$f" '
		    /^[ \t]*#[ \t]*include[ \t]*"/ {
			inc = $0
			sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
			if (inc !~ /\//) {
				printf "%s:%d: \"%s\" names no layer (write \"%s/%s\" or the layer it lives in)\n", file, NR, inc, layer, inc
				next
			}
			to = inc; sub(/\/.*$/, "", to)
			if (to != layer && index(uses, " " to " ") == 0) {
				u = uses; gsub(/^ +| +$/, "", u)
				if (u == "") u = "no other layer"
				printf "%s:%d: layer %s may not include %s (it may use %s)\n", file, NR, layer, inc, u
			}
		    }' "$f")
		if [ -n "$out" ]; then
			printf '%s\n' "$out"
			status=1
		fi
		# An include must name a header that exists in that layer.
		for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([a-z]*\/[^"]*\)".*/\1/p' "$f"); do
			if [ ! -f "lib/$inc" ]; then
				echo "$f: includes $inc, which lib/ does not have"
				status=1
			fi
		done
	done
done
exit $status

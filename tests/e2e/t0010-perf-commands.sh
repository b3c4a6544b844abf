#!/bin/sh
# Every perf command line the README and the man pages show runs as
# written.  A command line is a line of a man page's literal display
# (.Bd -literal or .Dl) or of a README code block that starts with
# "perf " (or "$ perf "), with its continuation lines; a line there that
# runs perf any other way (after a pipe, under sudo...) fails the test, so
# the extraction misses none.  Each runs on a real snapshot of the emu
# recorder, with SNAPSHOT (or SNAP) its directory and the example thread
# 4242 its thread, and must exit 0 with nothing on standard error and
# what that perf command shows first: perf script a sample of the thread,
# perf report --header-only the snapshot's header.  perf refuses a global
# option after the subcommand (perf report -i SNAP/perf.data
# --buildid-dir SNAP/images): such a line fails here.
. "$(dirname "$0")/lib.sh"

EMU_FIX=$PTKIT_BUILD/tests/fixtures/emu

# literal_lines: "FILE<TAB>LINE" for every line of a literal display or
# code block, mdoc escapes undone, continuations ("\" at the end) joined.
literal_lines() {
	for f in "$PTKIT_SRC"/man/*.1 "$PTKIT_SRC"/man/*.5; do
		awk -v f="${f##*/}" '
		    /^\.Bd -literal/ { lit = 1; next }
		    /^\.Ed/ { lit = 0; next }
		    /^\.Dl / { print f "\t" substr($0, 5); next }
		    lit { print f "\t" $0 }' "$f" |
		    sed 's/\\e/\\/g; s/\\-/-/g; s/\\&//g; s/\\(aq/'"'"'/g'
	done
	awk '/^```/ { blk = !blk; next } blk { print "README.md\t" $0 }' \
	    "$PTKIT_SRC/README.md"
}

# joined: literal_lines with continuation lines joined to their first.
joined() {
	literal_lines | awk -F'\t' '
	    cont { sub(/^[ \t]+/, "", $2); line = line " " $2 }
	    !cont { file = $1; line = $2 }
	    { cont = sub(/[ \t]*\\$/, "", line) } !cont { print file "\t" line }'
}

# The perf command lines, without the "$ " prompt.
perf_commands() {
	joined | sed -n 's/^\([^\t]*\)\t\(\$ \)\{0,1\}[ \t]*\(perf .*\)$/\1\t\3/p'
}

test_expect_success 'the docs show perf command lines, each extracted whole' '
	perf_commands >commands &&
	cat commands &&
	test "$(wc -l <commands)" -ge 3 &&
	grep -q "	perf --buildid-dir SNAPSHOT/images script " commands &&
	grep -q "	perf report --header-only " commands &&
	# perf run other than at the start of a line (comments aside)
	{ joined | cut -f2 | sed "s/#.*//" |
	    grep -E "(^|[|;&(]|sudo|\\$\\(|\`)[ \t]*perf[ \t]" |
	    grep -v -E "^(\\$ )?[ \t]*perf " >other || :; } &&
	test_cmp /dev/null other
'

if ! command -v perf >/dev/null 2>&1; then
	test_skip 'every perf command line runs as written' 'perf is not installed'
	test_done
fi
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
	test_skip 'every perf command line runs as written' \
	    'qemu-user missing (emu recorder)'
	test_done
fi

test_expect_success 'every perf command line runs as written' '
	ptrec --recorder emu -o snap -- "$EMU_FIX/branchy" >/dev/null 2>rec &&
	tid=$(jq -r ".threads[0].tid" snap/manifest.json) &&
	test "$tid" -gt 0 &&
	perf_commands >commands &&
	n=0 &&
	while IFS="	" read -r file cmd; do
		n=$((n + 1)) &&
		run=$(printf "%s\n" "$cmd" |
		    sed "s|SNAPSHOT/|snap/|g; s|SNAP/|snap/|g; s/\\<4242\\>/$tid/g") &&
		echo "# $file: $run" &&
		{ sh -c "$run" </dev/null >out 2>err || {
			echo "$file: perf refuses: $cmd" >&2; cat err >&2
			return 1; }; } &&
		test_cmp /dev/null err &&
		case $cmd in
		*" script "*)
			# the first sample is of the thread, named
			head -n 1 out | awk -v t="$tid" "\$1 == t && /_start/" \
			    >first &&
			test -s first ;;
		*" report --header-only "*)
			grep -q "^# cmdline : ptrec --recorder emu -o snap " out &&
			grep -q "^# cpudesc : ptkit emu" out ;;
		*)
			echo "$file: no check for: $cmd" >&2; return 1 ;;
		esac || { echo "$file: unexpected output of: $cmd" >&2
			head -n 5 out >&2; return 1; }
	done <commands &&
	test "$n" -ge 3
'

test_done

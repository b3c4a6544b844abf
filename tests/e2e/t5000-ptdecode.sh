#!/bin/sh
# ptdecode: snapshots to block streams.  The calls and returns
# in the blocks equal what `perf script --itrace=cr` reports for the same
# perf.data, on snapshots from the test-side stream builder (mksnap) and
# from the emu recorder; -j1 and -jN write the same bytes; --decoder perf
# (perf script converted) gives the same blocks as the native decoder; the
# command line does what man ptdecode.1 says.
. "$(dirname "$0")/lib.sh"

MKSNAP=$PTKIT_BUILD/tests/snap/mksnap
FIX=$PTKIT_BUILD/tests/fixtures/snap
EMU_FIX=$PTKIT_BUILD/tests/fixtures/emu

# The trace start, every call and return, and the trace end, from the
# JSON Lines, as perf prints them with -F tid,ip,addr: "TID FROM TO" in
# hex, 0 for an unknown address.
cat >"$TEST_ROOT/cr.jq" <<'EOF'
def addr: if . == null then "0" else ltrimstr("0x") end;
[.[] | select(.type == "block" or .type == "event" or .type == "gap")] as $r
| range(0; $r | length) as $i
| $r[$i] as $x | ($r[$i + 1] // {type: "none"}) as $n
| if $x.type == "event" and $x.kind == "enabled" then
    "\($x.tid) 0 \($x.ip | addr)"
  elif $x.type == "block" and ($x.class == "call" or $x.class == "return"
      or $x.class == "far_call") then
    if $n.type == "block" then "\($x.tid) \($x.end_ip | addr) \($n.ip | addr)"
    elif $n.type == "event" and $n.kind == "disabled" then
      "\($x.tid) \($x.end_ip | addr) \($n.ip | addr)"
    else empty end
  else empty end
EOF

# cr_parity SNAP: ptdecode's calls and returns equal perf's, and are many.
cr_parity() {
	ptdecode "$1" --format jsonl >blocks.jsonl 2>decode.err &&
	jq -r -s -f "$TEST_ROOT/cr.jq" blocks.jsonl | sort -s -n -k1,1 >ours.cr &&
	perf --buildid-dir "$1/images" script -i "$1/perf.data" --itrace=cr \
	    -F tid,ip,addr 2>perf.err | awk '{print $1, $2, $4}' |
	    sort -s -n -k1,1 >perf.cr &&
	test -s perf.cr &&
	test_cmp perf.cr ours.cr &&
	echo "# $(wc -l <ours.cr) calls and returns equal perf's"
}

# insns SNAP: the instruction count of the summary line.
summary_insns() {
	sed -n 's/.* blocks, \([0-9]*\) instructions,.*/\1/p' "$1"
}

if ! command -v perf >/dev/null 2>&1 || ! command -v jq >/dev/null; then
	test_skip 'ptdecode against perf script' 'perf or jq is missing'
	test_done
fi

test_expect_success 'static fixture: every instruction, calls as perf' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	cr_parity snap &&
	n=$(sed -n "s/^mksnap: thread [0-9]*: \([0-9]*\) instructions$/\1/p" \
	    mk.err) &&
	test -n "$n" &&
	test_eq "$n" "$(summary_insns decode.err)" &&
	test_eq 0 "$(jq -s "map(select(.type == \"gap\")) | length" \
	    blocks.jsonl)"
'

test_expect_success 'dynamic fixture: libc and ld.so from the archive' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work" 2>mk.err &&
	cr_parity snap &&
	! grep -q warning decode.err &&
	jq -e -s "map(select(.type == \"map\" and .live)) | length == 0" \
	    blocks.jsonl >/dev/null &&
	jq -r "select(.type == \"map\") | .image" blocks.jsonl >images &&
	grep -q "/snap/images/.build-id/" images
'

test_expect_success 'return compression, PSB+ every 128 bytes, -j3 == -j1' '
	"$MKSNAP" -p 128 -s -o snap -e want -- "$FIX/snap_work.static" 5 x \
	    2>mk.err &&
	cr_parity snap &&
	ptdecode -j1 snap >j1.blk 2>j1.err &&
	ptdecode -j3 --chunk-size 200 snap >j3.blk 2>j3.err &&
	cmp j1.blk j3.blk &&
	test_cmp j1.err j3.err &&
	ptdecode -j3 --chunk-size 200 --format jsonl snap >j3.jsonl &&
	test "$(jq -s "map(select(.type == \"end\"))[0].psbs" j3.jsonl)" -gt 3
'

test_expect_success 'two threads: one group each, --tid picks one' '
	"$MKSNAP" -n -o snap -e want -- "$FIX/snap_threads" 2>mk.err &&
	cr_parity snap &&
	jq -r "select(.type == \"thread\") | .tid" blocks.jsonl >tids &&
	test "$(wc -l <tids)" = 2 &&
	tid=$(tail -n 1 tids) &&
	ptdecode --tid "$tid" --format jsonl snap >one.jsonl 2>one.err &&
	test_eq "$tid" "$(jq -r "select(.type == \"thread\") | .tid" one.jsonl)" &&
	grep -q ": 1 process, 1 thread," one.err &&
	must_exit 1 ptdecode --tid 1 --format jsonl snap >none 2>none.err &&
	grep -q "no thread 1 in the snapshot" none.err
'

# same_flow A B: two JSON Lines streams have the same blocks, events and
# gaps, times aside.
same_flow() {
	jq -c "select(.type == \"block\" or .type == \"event\" or
	    .type == \"gap\") | del(.time)" "$1" >"$1.flow" &&
	jq -c "select(.type == \"block\" or .type == \"event\" or
	    .type == \"gap\") | del(.time)" "$2" >"$2.flow" &&
	test -s "$1.flow" &&
	test_cmp "$1.flow" "$2.flow"
}

test_expect_success '--decoder perf: the same blocks as the native decoder' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work" 2>mk.err &&
	ptdecode --format jsonl snap >native.jsonl 2>native.err &&
	ptdecode --decoder perf --format jsonl snap >perf.jsonl 2>perf.err &&
	same_flow native.jsonl perf.jsonl &&
	test_eq perf "$(jq -r "select(.type == \"header\") | .decoder" \
	    perf.jsonl)" &&
	grep -q "perf: 1 thread, [0-9]* blocks, $(summary_insns \
	    native.err) instructions, 0 gaps" perf.err &&
	ptdecode --decoder perf snap >perf.blk 2>/dev/null &&
	test -s perf.blk
'

test_expect_success 'the snapshot from stdin; more lines are counted' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	echo "$PWD/snap" | ptdecode --format jsonl >a.jsonl 2>a.err &&
	ptdecode --format jsonl snap >b.jsonl 2>b.err &&
	test_cmp a.jsonl b.jsonl &&
	printf "%s\n%s\n%s\n" "$PWD/snap" other1 other2 |
	    ptdecode --format jsonl >c.jsonl 2>c.err &&
	test_cmp a.jsonl c.jsonl &&
	grep -q "ignored 2 more snapshots on stdin" c.err &&
	must_exit 2 ptdecode </dev/null >d.out 2>d.err &&
	grep -q "no SNAPSHOT on standard input" d.err
'

test_expect_success '--from/--to: the window, decoding only its PSBs' '
	"$MKSNAP" -p 128 -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	ptdecode --format jsonl snap >all.jsonl &&
	jq -r "select(.type == \"block\") | .time" all.jsonl | sort -n -u >t &&
	n=$(wc -l <t) &&
	lo=$(sed -n "$((n / 3))p" t) && hi=$(sed -n "$((n / 2))p" t) &&
	ptdecode --format jsonl --from "$lo" --to "$hi" snap >w.jsonl &&
	jq -c "select((.type == \"block\" or .type == \"event\" or
	    .type == \"gap\") and .time >= $lo and .time <= $hi)" \
	    all.jsonl >want.f &&
	jq -c "select(.type == \"block\" or .type == \"event\" or
	    .type == \"gap\")" w.jsonl >got.f &&
	test -s got.f &&
	test_cmp want.f got.f
'

test_expect_success 'images missing from the archive: live copy, counted' '
	cp "$FIX/snap_work.static" prog &&
	"$MKSNAP" -o snap -e want -- ./prog 2>mk.err &&
	arch=$(jq -r ".images[] | select(.path | endswith(\"/prog\")) |
	    .archived" snap/manifest.json) &&
	rm "snap/$arch" &&
	ptdecode --format jsonl snap >live.jsonl 2>live.err &&
	grep -q "warning: .*/prog: 1 image read from the live filesystem" \
	    live.err &&
	rm prog &&
	ptdecode --format jsonl snap >gone.jsonl 2>gone.err &&
	grep -q "warning: .*/prog: 1 image missing" gone.err &&
	test "$(jq -s "map(select(.type == \"gap\" and
	    .cause == \"unknown_image\")) | length" gone.jsonl)" -ge 1 &&
	grep -q " 0 blocks," gone.err
'

test_expect_success 'a damaged ring: a decode_error GAP, decoding goes on' '
	"$MKSNAP" -p 128 -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	ptdecode --format jsonl snap >good.jsonl 2>good.err &&
	off=$(LC_ALL=C grep -obUaP "(\\x02\\x82){8}" snap/perf.data |
	    sed -n 3p | cut -d: -f1) &&
	test -n "$off" &&
	printf "\\002\\377\\002\\377\\002\\377" |
	    dd of=snap/perf.data bs=1 seek=$((off + 40)) conv=notrunc \
	    2>/dev/null &&
	ptdecode --format jsonl snap >bad.jsonl 2>bad.err &&
	grep -q " 1 gaps (1 decode errors," bad.err &&
	jq -e -s "map(select(.type == \"gap\"))[0] |
	    .cause == \"decode_error\" and .bytes_skipped > 0 and
	    .error < 0" bad.jsonl >/dev/null &&
	test "$(summary_insns bad.err)" -gt 100 &&
	test "$(summary_insns bad.err)" -lt "$(summary_insns good.err)" &&
	jq -e -s "map(select(.type == \"event\" and .kind == \"disabled\")) |
	    length == 1" bad.jsonl >/dev/null &&
	ptdecode -j3 --chunk-size 1 --format jsonl snap >bad3.jsonl 2>/dev/null &&
	test_cmp bad.jsonl bad3.jsonl
'

test_expect_success 'refuses binary to a terminal; --decoder fast equals native' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	script -qec "ptdecode snap" /dev/null >tty.out 2>&1;
	test $? = 2 &&
	grep -q "refusing to write the binary block stream to a terminal" \
	    tty.out &&
	ptdecode --decoder native --format jsonl snap >n.jsonl 2>n.err &&
	ptdecode --decoder fast --format jsonl snap >f.jsonl 2>f.err &&
	test "$(head -n 1 f.jsonl | jq -r .decoder)" = fast &&
	test "$(head -n 1 n.jsonl | jq -r .decoder)" = native &&
	tail -n +2 n.jsonl >n.rec && tail -n +2 f.jsonl >f.rec &&
	test "$(wc -l <n.rec)" -gt 100 &&
	test_cmp n.rec f.rec &&
	PTKIT_DECODER=fast ptdecode --format jsonl snap >e.jsonl 2>e.err &&
	test "$(head -n 1 e.jsonl | jq -r .decoder)" = fast &&
	must_exit 1 ptdecode nosuchdir >n.out 2>n.err &&
	test_eq "ptdecode: nosuchdir: no such snapshot directory" "$(cat n.err)"
'

# The header and MAP records go out through a writer of their own, the
# rest through one that drops its copy of the header (output.c): one
# stream, the same through a pipe, to a file, with -j1 and -j3.
test_expect_success 'binary stream: header and maps written first, once' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	ptdecode -j1 snap >file.bin 2>f.err &&
	ptdecode -j3 snap 2>p.err | cat >pipe.bin &&
	cmp file.bin pipe.bin &&
	test "$(head -c 8 file.bin | od -An -c | tr -d " ")" = "211PTKBLK\\n" &&
	test "$(grep -c "PTKBLK" file.bin)" = 1 &&
	ptspans --format summary <file.bin >sum.out 2>sum.err &&
	test -s sum.out &&
	must_exit 1 ptdecode snap >/dev/full 2>full.err &&
	test_eq "ptdecode: stdout: write failed after 0 bytes: No space left on device" \
	    "$(cat full.err)"
'

# Feeding a pipe it yields to its reader: SCHED_BATCH, which the perf it
# runs for --decoder perf inherits (a stand-in perf notes its own);
# writing a file, it keeps the policy it was started with (SCHED_OTHER
# here, whatever the test's own).
test_expect_success 'writing to a pipe, ptdecode runs under SCHED_BATCH' '
	"$MKSNAP" -o snap -e want -- "$FIX/snap_work.static" 2>mk.err &&
	mkdir fakebin &&
	printf "#!/bin/sh\nchrt -p \$\$ | sed -n \"s/.*policy: //p\" >\"%s\"\nexit 3\n" \
	    "$PWD/po.out" >fakebin/perf &&
	chmod +x fakebin/perf &&
	{ PATH=$PWD/fakebin:$PATH chrt -o 0 ptdecode --decoder perf snap \
	    2>p.err |
	    cat >/dev/null; } &&
	test_eq SCHED_BATCH "$(cat po.out)" &&
	rm po.out &&
	{ PATH=$PWD/fakebin:$PATH chrt -o 0 ptdecode --decoder perf snap \
	    >f.out 2>f.err; true; } &&
	test_eq SCHED_OTHER "$(cat po.out)"
'

if ! test -x "$EMU_FIX/branchy" || ! ptrec --doctor >/dev/null 2>&1; then
	test_skip 'emu snapshots decode as perf does' 'no emu recorder here'
	test_done
fi

for v in "" .static; do
	test_expect_success "emu branchy$v: calls and returns equal perf's" "
		ptrec --recorder emu -o snap --aux-bytes 1M -- \
		    '$EMU_FIX/branchy$v' 2 500 >path 2>rec.err &&
		cr_parity snap &&
		test \$(wc -l <ours.cr) -gt 1000 &&
		ptdecode -j1 snap >j1.blk 2>j1.err &&
		ptdecode -j2 --chunk-size 4K snap >j2.blk 2>j2.err &&
		cmp j1.blk j2.blk &&
		ptdecode --decoder perf --format jsonl snap >perf.jsonl &&
		same_flow blocks.jsonl perf.jsonl
	"
done

test_expect_success 'emu threads: one exact group per thread' '
	ptrec --recorder emu -o snap --aux-bytes 1M -- "$EMU_FIX/threads" \
	    >path 2>rec.err &&
	cr_parity snap &&
	test "$(jq -r "select(.type == \"thread\") | .tid" blocks.jsonl |
	    wc -l)" = "$(jq ".threads | length" snap/manifest.json)" &&
	ptdecode --decoder perf --format jsonl snap >perf.jsonl &&
	same_flow blocks.jsonl perf.jsonl
'

test_done

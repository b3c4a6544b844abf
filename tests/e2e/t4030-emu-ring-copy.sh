#!/bin/sh
# ptrec --recorder emu: how a snapshot's rings get into perf.data.  The
# snapshot at the program's exit takes each ring where it is, in
# ring.<tid> (the plugin makes no copy: IN_RING 1 in snap.<seq>/threads);
# one taken while the program runs is the plugin's copy, <tid>.pt, since
# the thread goes on writing.  Either way perf.data holds those bytes
# exactly and perf's branches equal the ground truth.  A perf.data that
# does not fit on the disk is a failed snapshot: exit 1, the file and
# why, nothing left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

B=$EMU_FIX/branchy.static

# kept ERR: the scratch directory PTKIT_KEEP_WASTE=1 kept, as ptrec said.
kept() {
	sed -n 's/^ptrec: PTKIT_KEEP_WASTE=1: scratch kept in //p' "$1"
}

# aux_bytes SNAPSHOT: the trace of its one AUXTRACE record, to stdout.
aux_bytes() {
	perf report -D -i "$1/perf.data" 2>/dev/null |
	    awk '/PERF_RECORD_AUXTRACE / { print $2, $6; exit }' >aux.at &&
	read -r at size <aux.at &&
	tail -c +$((at + 48 + 1)) "$1/perf.data" | head -c $((size))
}

# pad8 FILE: FILE's bytes and the zeros perf.data pads a record's trace
# with, to a multiple of 8 bytes (the record's size counts them).
pad8() {
	pad8_n=$(wc -c <"$1") &&
	cat "$1" && head -c $(((8 - pad8_n % 8) % 8)) /dev/zero
}

# range FILE OFF LEN: LEN bytes of FILE from byte OFF.
range() {
	tail -c +$(($2 + 1)) "$1" | head -c "$3"
}

test_expect_success 'at the exit: the ring itself, no copy, into perf.data byte for byte' '
	PTKIT_KEEP_WASTE=1 ptrec --recorder emu -o snap --emu-truth truth \
	    --aux-bytes 64K -- "$B" 3 3000 >path 2>err &&
	dir=$(kept err) && test -d "$dir" &&
	jq -e ".threads[0].wrapped == true" snap/manifest.json &&
	jq -e ".threads[0].bytes_kept == 65536" snap/manifest.json &&
	tid=$(jq -r ".threads[0].tid" snap/manifest.json) &&
	read -r t total kept_bytes _ _ _ _ exited in_ring <"$dir/snap.1/threads" &&
	test_eq "$tid 65536 1 1" "$t $kept_bytes $exited $in_ring" &&
	! test -e "$dir/snap.1/$tid.pt" &&
	from=$((total - kept_bytes)) && pos=$((from % 65536)) &&
	{ range "$dir/ring.$tid" $((4096 + pos)) $((65536 - pos)) &&
	  range "$dir/ring.$tid" 4096 "$pos"; } >ring.bytes &&
	test_eq 65536 "$(wc -c <ring.bytes)" &&
	aux_bytes snap >aux.bytes &&
	pad8 ring.bytes >want.bytes && cmp want.bytes aux.bytes &&
	emu_check_parity snap truth >counts &&
	rm -rf "$dir"
'

test_expect_success 'while it runs: the plugin'"'"'s copy, into perf.data byte for byte' '
	PTKIT_KEEP_WASTE=1 ptrec --recorder emu -o snap --emu-truth truth \
	    --aux-bytes 64K --trigger-symbol round_mark --trigger-hits 2 \
	    -- "$B" 3 3000 >path 2>err &&
	dir=$(kept err) && test -d "$dir" &&
	jq -e ".trigger.kind == \"symbol\"" snap/manifest.json &&
	tid=$(jq -r ".threads[0].tid" snap/manifest.json) &&
	read -r t _ kept_bytes _ _ _ _ _ in_ring <"$dir/snap.1/threads" &&
	test_eq "$tid 0" "$t $in_ring" &&
	test_eq "$kept_bytes" "$(wc -c <"$dir/snap.1/$tid.pt")" &&
	aux_bytes snap >aux.bytes &&
	pad8 "$dir/snap.1/$tid.pt" >want.bytes && cmp want.bytes aux.bytes &&
	emu_check_parity snap truth 1 >counts &&
	rm -rf "$dir"
'

MNT=$TEST_ROOT/mnt
mkdir -p "$MNT"
if mount -t tmpfs -o size=16m,mode=0700 tmpfs "$MNT" 2>"$TEST_ROOT/mount.err"
then
	trap 'umount "$MNT" 2>/dev/null; test_cleanup_root' EXIT
	# The images (768 KiB) fit in 1 MiB, a 2 MiB ring's trace does not.
	test_expect_success 'perf.data onto a full tmpfs: exit 1, perf.data and why, nothing left' '
		avail=$(df -B1 --output=avail "$MNT" | tail -1 | tr -d " ") &&
		head -c $((avail - 1048576)) /dev/zero >"$MNT/fill" &&
		must_exit 1 ptrec --recorder emu -o "$MNT/s" --aux-bytes 2M \
		    -- "$B" 3 100000 >/dev/null 2>err &&
		grep "^ptrec: snapshot:" err |
		    sed "s/\.tmp-[A-Za-z0-9]*/.tmp-X/; s/offset [0-9]*/offset N/" >got &&
		echo "ptrec: snapshot: $MNT/.s.tmp-X/perf.data: write at offset N: No space left on device" >want &&
		test_cmp want got &&
		at=$(sed -n "s/.*perf.data: write at offset \([0-9]*\):.*/\1/p" err) &&
		test "$at" -gt 65536 && test $((at % 4096)) = 0 &&
		test_eq "fill" "$(ls -A "$MNT")"
	'
else
	test_skip 'perf.data onto a full tmpfs: exit 1, perf.data and why, nothing left' \
	    "cannot mount a tmpfs here: $(head -1 "$TEST_ROOT/mount.err")"
fi
test_done

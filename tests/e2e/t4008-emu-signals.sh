#!/bin/sh
# ptrec --recorder emu: a signal interrupts the program at an instruction
# boundary, also where the next instruction crosses a page (qemu lists
# such an instruction in the block before without running it there).
# The straddle fixture takes SIGALRMs (it prints how many, at least 200)
# in a loop of page-crossing instructions: the trace decodes without a
# decode_error gap, every interruption is where the thread resumed after
# its handler, ptquery counts every handler entry and loop call the
# program printed, and perf equals the ground truth.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/emu-lib.sh"

# The program's own count of NAME from its "calls: NAME=N ..." line.
printed() {
	sed -n "s/^calls: .*$1=\\([0-9]*\\).*/\\1/p" snap/output.log
}

# hotpaths COLUMN NAME: that column of NAME's hotpaths row.
hotpaths() {
	awk -F, -v c="$1" -v f="$2" '
	    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	    $col["name"] == f { print $col[c] }' hot.csv
}

# Each test works in the one directory of its fixture's recording.
for v in "" .static; do
	D=$TEST_ROOT/straddle$v
	test_expect_success "straddle$v: record, decode, span" "
		mkdir -p $D && cd $D &&
		ptrec --recorder emu -o snap --emu-truth truth --aux-bytes 4M \
		    -- \"\$EMU_FIX/straddle$v\" >path 2>err &&
		n=\$(printed on_alarm) && test \"\$n\" -ge 200 &&
		echo \$n >nsig &&
		ptdecode snap --format jsonl >blocks.jsonl 2>dec.err &&
		mkdir -p snap/derived &&
		ptdecode snap 2>/dev/null | ptspans -o snap/derived/default >out &&
		ptquery snap --kind hotpaths --format csv >hot.csv
	"

	test_expect_success "straddle$v: no decode_error gap" "
		cd $D &&
		jq -e -s 'map(select(.type == \"gap\")) | length == 0' \
		    blocks.jsonl >/dev/null &&
		grep -q ' 0 gaps (0 decode errors,' dec.err &&
		jq -e '.counters.signal_blind_resolutions == 0' snap/manifest.json
	"

	test_expect_success "straddle$v: signals taken before a page-crossing instruction" "
		cd $D &&
		# One interruption per delivery from the loop; a tick that came
		# while the handler ran is taken at its rt_sigreturn instead.
		# The two instructions that cross after others in their block
		# start at page offsets 0xffb and 0xffd of straddle_loop.
		jq -r 'select(.type == \"event\" and .reason == \"async\") |
		    .at' blocks.jsonl >at &&
		wc -l <at >nasync &&
		test \$(cat nasync) -ge 100 && test \$(cat nasync) -le \$(cat nsig) &&
		jq -e --argjson n \$(cat nasync) '.counters.async_stops == \$n' \
		    snap/manifest.json &&
		n1=0 && n2=0 &&
		while read -r a; do
			case \$((a & 0xfff)) in
			4091) n1=\$((n1 + 1)) ;;
			4093) n2=\$((n2 + 1)) ;;
			esac
		done <at &&
		test \$n1 -ge 1 && test \$n2 -ge 1
	"

	test_expect_success "straddle$v: each interruption is where the thread resumed" "
		cd $D &&
		# Disabled at X, enabled at the handler (again after each
		# rt_sigreturn while another tick is pending), then at X.
		jq -r 'select(.type == \"event\") |
		    \"\\(.kind) \\(.at // .ip // \"-\") \\(.reason // \"-\")\"' \
		    blocks.jsonl |
		awk '\$1 == \"disabled\" && \$3 == \"async\" { at = \$2; h = \"\"; next }
		     \$1 != \"enabled\" || at == \"\" { next }
		     h == \"\" { h = \$2; next }
		     \$2 == h { next }
		     { print (\$2 == at ? \"same\" : \"moved \" at \" \" \$2); at = \"\" }' |
		sort | uniq -c >resumed &&
		test_eq \"\$(cat nasync) same\" \"\$(sed 's/^ *//' resumed)\"
	"

	test_expect_success "straddle$v: ptquery counts what the program printed" "
		cd $D &&
		test_eq \"\$(printed on_alarm)\" \"\$(hotpaths spans on_alarm)\" &&
		test_eq \"\$(printed straddle_loop)\" \
		    \"\$(hotpaths calls straddle_loop)\" &&
		ptquery snap --kind summary >sum &&
		grep -q \" signals=\$(cat nsig) .* decode_errors=0 \" sum
	"

	test_expect_success "straddle$v: perf equals the ground truth" "
		cd $D &&
		emu_check_parity snap truth >counts &&
		test \$(awk '{print \$3}' counts) -gt 100000 &&
		test_eq \$(cat nasync) \"\$(grep -c ' async\$' truth)\"
	"
done
test_done

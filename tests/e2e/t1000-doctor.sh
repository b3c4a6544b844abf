#!/bin/sh
# ptrec --doctor and the --recorder pt|perf checks, on fake sysfs/procfs
# trees (tests/fixtures/sysfs) changed file by file into every combination
# of caps and limits that changes a decision, and on this machine.
. "$(dirname "$0")/lib.sh"

FIX=$PTKIT_SRC/tests/fixtures/sysfs
PT=sys/bus/event_source/devices/intel_pt

# tree NAME: a private copy of a fixture tree in ./root.
tree() {
	cp -R "$FIX/$1" root
}

# has_line FILE LINE: FILE has exactly this line.
has_line() {
	if ! grep -qxF -- "$2" "$1"; then
		echo "has_line: '$2' not in $1:" >&2
		cat "$1" >&2
		return 1
	fi
}

RAISE="raise them with 'ulimit -l' (up to the hard limit; LimitMEMLOCK= or limits.conf raise that), 'sysctl kernel.perf_event_mlock_kb=KB', or 'setcap cap_ipc_lock,cap_perfmon+ep ptrec'"
AMD_PROBLEM="Intel PT is absent: this CPU is AuthenticAMD (AMD EPYC), and Intel PT exists only on Intel CPUs"
AMD_REMEDY="use --recorder emu, which writes the same Intel PT packets from a software CPU, or record on an Intel machine (Broadwell or newer)"

test_expect_success 'AMD VM: the whole text report' '
	R=$FIX/amd-vm &&
	must_exit 0 ptrec --doctor --sysroot "$R" >out 2>err &&
	test ! -s err &&
	cat >want <<-EOF &&
	root: $R
	cpu: AuthenticAMD family 26 model 2 stepping 1 (AMD EPYC), 2 CPUs online, in a virtual machine
	tsc: constant_tsc yes, nonstop_tsc yes
	kernel: 6.18.44-fc-v782
	intel_pt: absent: no $R/$PT
	perf_event_paranoid: 2
	capabilities: CAP_PERFMON no, CAP_SYS_ADMIN no, CAP_IPC_LOCK no, CAP_SYS_PTRACE no
	perf_event_mlock_kb: 516
	RLIMIT_MEMLOCK: soft 8 MiB, hard 8 MiB
	locked-memory allowance: 9224 KiB (other perf users of this UID reduce it)
	ptrace_scope: absent (no Yama)
	attach (--pid): processes of this user
	symbol trigger: aux_pause (kernel 6.13 or newer): the trace ends exactly at the trigger
	probe hardware breakpoint: not run under --sysroot
	perf: $R/usr/bin/perf, version 6.1.76
	qemu-user: $R/usr/bin/qemu-x86_64
	recorder pt: not usable
	  problem: $AMD_PROBLEM
	  remedy: $AMD_REMEDY
	recorder perf: not usable
	  problem: $AMD_PROBLEM
	  remedy: $AMD_REMEDY
	recorder emu: usable
	usable recorders: emu
	EOF
	test_cmp want out
'

test_expect_success 'AMD VM: JSON passes jq and says the same' '
	must_exit 0 ptrec --doctor --format json --sysroot "$FIX/amd-vm" >out &&
	jq -e . out >/dev/null &&
	test_eq false "$(jq .intel_pt.present out)" &&
	test_eq null "$(jq .intel_pt.type out)" &&
	test_eq null "$(jq .intel_pt.caps.psb_cyc out)" &&
	test_eq AuthenticAMD "$(jq -r .cpu.vendor out)" &&
	test_eq 26 "$(jq .cpu.family out)" &&
	test_eq true "$(jq .cpu.hypervisor out)" &&
	test_eq 9445376 "$(jq .permissions.mlock_allowance_bytes out)" &&
	test_eq null "$(jq .ring_budget out)" &&
	test_eq 6.18.44-fc-v782 "$(jq -r .kernel.release out)" &&
	test_eq true "$(jq .kernel.aux_pause out)" &&
	test_eq "{\"breakpoint\":null,\"intel_pt\":null}" "$(jq -c .probes out)" &&
	test_eq 6.1.76 "$(jq -r .tools.perf.version out)" &&
	test_eq emu "$(jq -r ".recorders[] | select(.usable) | .name" out)" &&
	test_eq "$AMD_PROBLEM" "$(jq -r ".recorders[0].problems[0].what" out)" &&
	test_eq "$AMD_REMEDY" "$(jq -r ".recorders[0].problems[0].remedy" out)"
'

test_expect_success 'PTKIT_SYSROOT is the default root' '
	PTKIT_SYSROOT=$FIX/amd-vm ptrec --doctor >out &&
	has_line out "root: $FIX/amd-vm"
'

test_expect_success 'no usable recorder: exit 1' '
	tree amd-vm && rm root/usr/bin/qemu-x86_64 &&
	must_exit 1 ptrec --doctor --sysroot root >out &&
	has_line out "qemu-user: not installed" &&
	has_line out "recorder emu: not usable" &&
	has_line out "  problem: qemu-x86_64 is not installed" &&
	has_line out "  remedy: apt-get install qemu-user (make deps installs it)" &&
	has_line out "usable recorders: none" &&
	must_exit 1 ptrec --doctor --format json --sysroot root >out.json &&
	test_eq 0 "$(jq "[.recorders[] | select(.usable)] | length" out.json)"
'

test_expect_success 'a --sysroot that is not a directory is a usage error' '
	must_exit 2 ptrec --doctor --sysroot /nonexistent/root >out 2>err &&
	test ! -s out &&
	test_eq "ptrec: --doctor: /nonexistent/root: not a directory" "$(cat err)"
'

test_expect_success 'Skylake: caps, profiles, ring budget, verdicts' '
	R=$FIX/skylake &&
	must_exit 0 ptrec --doctor --sysroot "$R" >out &&
	has_line out "intel_pt: present, type 8" &&
	has_line out "caps/psb_cyc: 1" &&
	has_line out "caps/mtc_periods: 0x249" &&
	has_line out "caps/cycle_thresholds: 0x3fff" &&
	has_line out "caps/psb_periods: 0x3f" &&
	has_line out "caps/num_address_ranges: 2" &&
	has_line out "timing low: 0x300e601" &&
	has_line out "timing normal: 0x3082603" &&
	has_line out "timing high: 0x3082e03" &&
	has_line out "timing profiles available: low, normal, high" &&
	has_line out "address filters: 2" &&
	has_line out "ptrace_scope: 1" &&
	has_line out "attach (--pid): only descendants of ptrec (ptrace_scope is 1): other processes need CAP_SYS_PTRACE or ptrace_scope 0" &&
	has_line out "ring budget: 12320 KiB for all rings, 1 thread at 8 MiB" &&
	has_line out "  warning: locked-memory limits allow 12320 KiB for perf rings (perf_event_mlock_kb 516 x 8 CPUs + RLIMIT_MEMLOCK 8 MiB), less than --budget-bytes 128 MiB: 1 thread at 8 MiB; $RAISE" &&
	has_line out "kernel: 6.1.0-18-amd64" &&
	has_line out "symbol trigger: the thread is parked until the snapshot is written (no aux_pause before kernel 6.13)" &&
	has_line out "probe hardware breakpoint: not run under --sysroot" &&
	has_line out "probe intel_pt event: not run under --sysroot" &&
	has_line out "recorder pt: usable" &&
	has_line out "recorder emu: usable" &&
	has_line out "usable recorders: pt, perf, emu" &&
	ptrec --doctor --format json --sysroot "$R" >out.json &&
	test_eq 0x3082603 "$(jq -r ".intel_pt.timing[1].config" out.json)" &&
	test_eq config:14-17 "$(jq -r ".intel_pt.format.mtc_period" out.json)" &&
	test_eq 585 "$(jq .intel_pt.caps.mtc_periods out.json)" &&
	test_eq 8388608 "$(jq .ring_budget.aux_bytes out.json)" &&
	test_eq true "$(jq ".recorders[0].machine_ready" out.json)"
'

test_expect_success 'Skylake with CAP_IPC_LOCK: the asked budget' '
	tree skylake &&
	sed -i "s/^CapEff:.*/CapEff:\t0000000000004000/" root/proc/self/status &&
	ptrec --doctor --sysroot root --aux-bytes 16M >out &&
	has_line out "locked-memory allowance: unlimited (CAP_IPC_LOCK)" &&
	has_line out "ring budget: 128 MiB for all rings, 7 threads at 16 MiB" &&
	! grep -q "warning:" out
'

test_expect_success 'no psb_cyc: normal and high fall back to low' '
	tree skylake && echo 0 >root/$PT/caps/psb_cyc &&
	ptrec --doctor --sysroot root >out &&
	has_line out "timing low: 0xe601" &&
	has_line out "timing normal: 0xe601 (uses low)" &&
	has_line out "  note: timing '\''normal'\'' needs CYC packets, but caps/psb_cyc is 0: using '\''low'\'' (TSC and MTC timing, about 1 us instead of about 10 ns)" &&
	has_line out "timing high: 0xe601 (uses low)" &&
	has_line out "timing profiles available: low"
'

test_expect_success 'mtc_periods missing: no MTC, no psb_period' '
	tree skylake && rm root/$PT/caps/mtc_periods &&
	ptrec --doctor --sysroot root >out &&
	has_line out "caps/mtc_periods: absent" &&
	has_line out "timing low: 0x2401" &&
	has_line out "  note: no MTC packets: caps/mtc_periods is 0" &&
	has_line out "timing normal: 0x82403" &&
	has_line out "timing high: 0x82c03" &&
	has_line out "timing profiles available: low, normal, high"
'

test_expect_success 'mtc_periods without 0: normal uses period 3' '
	tree skylake && echo 248 >root/$PT/caps/mtc_periods &&
	ptrec --doctor --sysroot root >out &&
	has_line out "timing normal: 0x308e603" &&
	has_line out "  note: caps/mtc_periods (0x248) lacks 0: using mtc_period=3"
'

test_expect_success 'zero address ranges: --filter fails at once' '
	tree skylake && echo 0 >root/$PT/caps/num_address_ranges &&
	echo 0 >root/$PT/nr_addr_filters &&
	ptrec --doctor --sysroot root >out &&
	has_line out "address filters: 0" &&
	must_exit 1 ptrec --sysroot root --recorder pt --filter main -- sh -c ": >ran" >out 2>err &&
	test ! -s out && test ! -e ran &&
	test_eq "ptrec: --recorder pt: --filter needs address filters, and this CPU has none (caps/num_address_ranges is 0): use --recorder emu, whose filters have no such limit, or fewer --filter options" "$(cat err)"
'

test_expect_success 'three filters on two ranges fail at once' '
	must_exit 1 ptrec --sysroot "$FIX/skylake" --recorder perf --filter a --filter b --filter c -- true 2>err &&
	test_eq "ptrec: --recorder perf: 3 filters asked, and this CPU has 2 address ranges (caps/num_address_ranges): use --recorder emu, whose filters have no such limit, or fewer --filter options" "$(cat err)"
'

test_expect_success 'perf_event_paranoid 3 without CAP_PERFMON' '
	tree skylake && echo 3 >root/proc/sys/kernel/perf_event_paranoid &&
	ptrec --doctor --sysroot root >out &&
	has_line out "perf_event_paranoid: 3" &&
	has_line out "recorder pt: not usable" &&
	has_line out "  problem: perf_event_paranoid is 3: unprivileged perf_event_open is disabled" &&
	has_line out "  remedy: sysctl kernel.perf_event_paranoid=2, or '\''setcap cap_perfmon+ep ptrec'\'', or run as root" &&
	sed -i "s/^CapEff:.*/CapEff:\t0000004000000000/" root/proc/self/status &&
	ptrec --doctor --sysroot root >out &&
	has_line out "capabilities: CAP_PERFMON yes, CAP_SYS_ADMIN no, CAP_IPC_LOCK no, CAP_SYS_PTRACE no" &&
	has_line out "recorder pt: usable" &&
	echo 5.4.0-150-generic >root/proc/sys/kernel/osrelease &&
	ptrec --doctor --sysroot root >out &&
	has_line out "  problem: perf_event_paranoid is 3: unprivileged perf_event_open is disabled"
'

test_expect_success 'tiny mlock limits: no ring fits' '
	tree skylake && echo 4 >root/proc/sys/kernel/perf_event_mlock_kb &&
	sed -i "s/^Max locked memory .*/Max locked memory         65536                65536                bytes/" root/proc/self/limits &&
	ptrec --doctor --sysroot root >out &&
	has_line out "RLIMIT_MEMLOCK: soft 64 KiB, hard 64 KiB" &&
	has_line out "locked-memory allowance: 96 KiB (other perf users of this UID reduce it)" &&
	has_line out "ring budget: none: locked-memory limits allow 96 KiB for perf rings (perf_event_mlock_kb 4 x 8 CPUs + RLIMIT_MEMLOCK 64 KiB), and one thread'\''s rings need at least 132 KiB: $RAISE" &&
	has_line out "  problem: locked-memory limits allow 96 KiB for perf rings (perf_event_mlock_kb 4 x 8 CPUs + RLIMIT_MEMLOCK 64 KiB), and one thread'\''s rings need at least 132 KiB" &&
	has_line out "  remedy: $RAISE" &&
	must_exit 1 ptrec --sysroot root --recorder pt -- true 2>err &&
	test_eq "ptrec: --recorder pt: locked-memory limits allow 96 KiB for perf rings (perf_event_mlock_kb 4 x 8 CPUs + RLIMIT_MEMLOCK 64 KiB), and one thread'\''s rings need at least 132 KiB: $RAISE" "$(cat err)"
'

test_expect_success 'an Intel CPU with PT whose kernel has no intel_pt PMU' '
	tree skylake && rm -r root/$PT &&
	ptrec --doctor --sysroot root >out &&
	has_line out "intel_pt: absent: no root/$PT" &&
	has_line out "  problem: Intel PT is absent: the CPU has it (cpuinfo flag intel_pt) but the kernel has no intel_pt PMU" &&
	sed -i "s/ intel_pt / /" root/proc/cpuinfo &&
	sed -i "s/^model\t\t: 94/model\t\t: 60/" root/proc/cpuinfo &&
	ptrec --doctor --sysroot root >out &&
	has_line out "  problem: Intel PT is absent: this Intel CPU (family 6, model 60) has no Intel PT, which arrived with Broadwell"
'

test_expect_success 'a raw --timing config is checked against caps' '
	tree skylake && echo 0 >root/$PT/caps/psb_cyc &&
	ptrec --doctor --sysroot root --timing 0x2403 >out &&
	has_line out "timing 0x2403: refused: config sets cyc, which needs caps/psb_cyc, and this CPU has 0" &&
	must_exit 1 ptrec --sysroot root --recorder pt --timing 0x2403 -- true 2>err &&
	test_eq "ptrec: --recorder pt: --timing CONFIG: config sets cyc, which needs caps/psb_cyc, and this CPU has 0: use --timing low, normal or high, which ptrec adapts to the caps" "$(cat err)" &&
	ptrec --doctor --sysroot "$FIX/skylake" --timing 0x3082e03 >out &&
	has_line out "timing 0x3082e03: accepted"
'

test_expect_success 'ptrace_scope 3 stops pt, not perf' '
	tree skylake && echo 3 >root/proc/sys/kernel/yama/ptrace_scope &&
	ptrec --doctor --sysroot root >out &&
	has_line out "attach (--pid): impossible: ptrace_scope is 3" &&
	has_line out "  problem: ptrace_scope is 3: ptrace is disabled, and the pt recorder gives each new thread its event from a ptrace stop" &&
	has_line out "recorder perf: usable"
'

test_expect_success 'perf missing, broken or too old' '
	tree skylake && rm root/usr/bin/perf &&
	ptrec --doctor --sysroot root >out &&
	has_line out "perf: not installed" &&
	has_line out "  problem: perf is not installed" &&
	printf "#!/bin/sh\necho \"perf version 5.4.0\"\n" >root/usr/bin/perf &&
	chmod +x root/usr/bin/perf &&
	ptrec --doctor --sysroot root >out &&
	has_line out "  problem: perf 5.4.0 is older than 5.10, which added '\''perf record --control fifo:'\''" &&
	printf "#!/bin/sh\necho \"E: linux-perf-9.9 is not installed.\" >&2\nexit 1\n" >root/usr/bin/perf &&
	ptrec --doctor --sysroot root >out 2>err &&
	has_line out "  problem: perf does not run: root/usr/bin/perf: exited with status 1"
'

test_expect_success '--recorder pt fails at once with the remedy (AMD VM)' '
	must_exit 1 ptrec --sysroot "$FIX/amd-vm" --recorder pt -- sh -c ": >ran" >out 2>err &&
	test ! -s out && test ! -e ran &&
	test_eq "ptrec: --recorder pt: $AMD_PROBLEM: $AMD_REMEDY" "$(cat err)" &&
	must_exit 1 env PTKIT_RECORDER=perf PTKIT_SYSROOT="$FIX/amd-vm" ptrec -- true 2>err &&
	test_eq "ptrec: --recorder perf: $AMD_PROBLEM: $AMD_REMEDY" "$(cat err)"
'

test_expect_success '--recorder pt on a ready fake machine: refuses to record with its caps' '
	must_exit 1 ptrec --sysroot "$FIX/skylake" --recorder pt -- sh -c ": >ran" >out 2>err &&
	test ! -s out && test ! -e ran &&
	test_eq "ptrec: --recorder pt: $FIX/skylake is not this machine'\''s root: recording needs the real /sys and /proc: use --sysroot and PTKIT_SYSROOT only with --doctor" "$(cat err)"
	must_exit 1 env PTKIT_SYSROOT="$FIX/skylake" ptrec --recorder perf --after-ms 10 -- sh -c ": >ran" >out 2>err &&
	test ! -s out && test ! -e ran &&
	test_eq "ptrec: --recorder perf: $FIX/skylake is not this machine'\''s root: recording needs the real /sys and /proc: use --sysroot and PTKIT_SYSROOT only with --doctor" "$(cat err)"
'

test_expect_success 'a kernel without a release file' '
	tree skylake && rm root/proc/sys/kernel/osrelease &&
	ptrec --doctor --sysroot root >out &&
	has_line out "kernel: unknown" &&
	has_line out "symbol trigger: unknown (kernel release unknown)"
'

# This machine: whatever it is, the report must be consistent.
test_expect_success 'this machine: JSON passes jq, exit status matches' '
	rc=0 && ptrec --doctor --format json >out.json || rc=$? &&
	jq -e . out.json >/dev/null &&
	n=$(jq "[.recorders[] | select(.usable)] | length" out.json) &&
	if [ "$n" -gt 0 ]; then test_eq 0 $rc; else test_eq 1 $rc; fi &&
	ptrec --doctor >out.txt || : &&
	jq -e ".probes.breakpoint.ok | type == \"boolean\"" out.json >/dev/null &&
	grep -q "^probe hardware breakpoint: \(ok\|failed: a hardware breakpoint cannot be opened: \|failed: hardware breakpoints open but do not fire (\)" out.txt &&
	if [ ! -d /$PT ]; then
		has_line out.txt "intel_pt: absent: no /$PT" &&
		test_eq false "$(jq .recorders[0].usable out.json)" &&
		must_exit 1 ptrec --recorder pt -- true 2>err &&
		grep -q "^ptrec: --recorder pt: Intel PT is absent: " err
	fi
'

if command -v qemu-x86_64 >/dev/null 2>&1; then
	test_expect_success 'this machine: emu needs its plugin too' '
		ptrec --doctor >out &&
		has_line out "recorder emu: usable" &&
		PTKIT_EMU_PLUGIN=/nonexistent/libptkit-emu.so ptrec --doctor >out || : &&
		has_line out "  problem: libptkit-emu.so not found (set PTKIT_EMU_PLUGIN)" &&
		has_line out "  remedy: build ptkit with make, which puts the plugin beside ptrec, or set PTKIT_EMU_PLUGIN"
	'
else
	test_skip 'this machine: emu needs its plugin too' 'no qemu-x86_64'
fi

test_done

/*
 * Tests for lib/ptcaps: reading the fake sysfs/procfs trees under
 * tests/fixtures/sysfs/, and the parsers for format/ and CPU lists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rec/ptcaps.h"
#include "tap.h"

static char fixtures[4096];

static const char *
fixture(const char *name)
{
	static char path[4200];

	snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	return path;
}

static void
test_skylake(void)
{
	struct ptcaps c;
	struct error e;
	char want[4300];

	IS_INT(ptcaps_probe(&c, fixture("skylake"), 0, &e), 0,
	    "skylake tree probes");
	OK(c.pmu.present, "intel_pt is present");
	IS_INT(c.pmu.type, 8, "type");
	IS_STR(c.kernel.release, "6.1.0-18-amd64", "kernel release");
	IS_INT(c.kernel.major * 100 + c.kernel.minor, 601, "kernel 6.1");
	IS_INT(ptcaps_kernel_at_least(&c, 6, 1), 1, "6.1 >= 6.1");
	IS_INT(ptcaps_kernel_at_least(&c, 6, 13), 0, "6.1 < 6.13");
	IS_INT(ptcaps_kernel_at_least(&c, 5, 8), 1, "6.1 >= 5.8");
	IS_INT(c.pmu.fmt[PTF_CYC].lo, 1, "format/cyc bit");
	IS_INT(c.pmu.fmt[PTF_MTC_PERIOD].lo, 14, "format/mtc_period low bit");
	IS_INT(c.pmu.fmt[PTF_MTC_PERIOD].hi, 17, "format/mtc_period high bit");
	IS_INT(c.pmu.fmt[PTF_NOTNT].lo, 55, "format/notnt bit");
	IS_INT(c.pmu.cap[PTC_MTC_PERIODS].value, 0x249, "caps are hex");
	IS_INT(c.pmu.cap[PTC_CYCLE_THRESHOLDS].value, 0x3fff,
	    "caps/cycle_thresholds");
	IS_INT(ptcaps_cap(&c.pmu, PTC_NUM_ADDRESS_RANGES), 2,
	    "num_address_ranges");
	IS_INT(c.pmu.nr_addr_filters, 2, "nr_addr_filters");
	IS_INT(c.pmu.max_nonturbo_ratio, 34, "max_nonturbo_ratio");
	IS_INT(c.pmu.tsc_art_num, 216, "tsc_art_ratio numerator");
	IS_INT(c.pmu.tsc_art_den, 2, "tsc_art_ratio denominator");
	IS_STR(c.cpu.vendor, "GenuineIntel", "vendor");
	IS_INT(c.cpu.family, 6, "family");
	IS_INT(c.cpu.model, 94, "model");
	IS_INT(c.cpu.stepping, 3, "stepping");
	IS_STR(c.cpu.model_name, "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz",
	    "model name");
	OK(c.cpu.flag_intel_pt && c.cpu.flag_constant_tsc &&
	    c.cpu.flag_nonstop_tsc && !c.cpu.flag_hypervisor, "cpu flags");
	IS_INT(c.cpu.online, 8, "online CPUs from the cpu list");
	IS_INT(c.perm.paranoid, 2, "perf_event_paranoid");
	IS_U64(c.perm.mlock_kb, 516, "perf_event_mlock_kb");
	IS_INT(c.perm.ptrace_scope, 1, "ptrace_scope");
	OK(c.perm.has_capeff && c.perm.capeff == 0, "CapEff 0");
	OK(!ptcaps_has(&c, PTCAPS_CAP_IPC_LOCK), "no CAP_IPC_LOCK");
	IS_U64(c.perm.memlock_soft, 8388608, "memlock soft from limits");
	IS_U64(c.perm.memlock_hard, 8388608, "memlock hard from limits");
	snprintf(want, sizeof(want), "%s/usr/bin/perf", fixture("skylake"));
	IS_STR(c.tools.perf_path, want, "perf found under the root");
	IS_STR(c.tools.perf_version, "6.1.76", "perf version");
	IS_INT(c.tools.perf_major * 100 + c.tools.perf_minor, 601,
	    "perf major.minor");
	snprintf(want, sizeof(want), "%s/usr/bin/qemu-x86_64",
	    fixture("skylake"));
	IS_STR(c.tools.qemu_path, want, "qemu-x86_64 found under the root");
}

static void
test_amd_vm(void)
{
	struct ptcaps c;
	struct error e;

	IS_INT(ptcaps_probe(&c, fixture("amd-vm"), PTCAPS_NO_TOOLS, &e), 0,
	    "amd-vm tree probes");
	OK(!c.pmu.present, "no intel_pt");
	IS_INT(c.pmu.type, -1, "no type");
	IS_STR(c.cpu.vendor, "AuthenticAMD", "vendor");
	IS_INT(c.cpu.family, 26, "family");
	OK(c.cpu.flag_hypervisor && !c.cpu.flag_intel_pt, "flags");
	IS_INT(c.cpu.online, 2, "online CPUs");
	IS_INT(c.perm.ptrace_scope, -1, "no Yama");
	IS_STR(c.tools.perf_path, "", "PTCAPS_NO_TOOLS looks for nothing");
}

static void
test_parsers(void)
{
	struct ptcaps_field f;
	struct error e;

	memset(&f, 0, sizeof(f));
	IS_INT(ptcaps_parse_format("config:10\n", &f, &e), 0, "single bit");
	OK(f.present && f.lo == 10 && f.hi == 10, "config:10");
	IS_INT(ptcaps_parse_format("config:24-27", &f, &e), 0, "a range");
	OK(f.lo == 24 && f.hi == 27, "config:24-27");
	IS_INT(ptcaps_parse_format("config1:3", &f, &e), -ERR_FORMAT,
	    "config1 is not ours");
	IS_STR(e.msg, "'config1:3' is not config:A or config:A-B (bits 0 "
	    "to 63)",
	    "format error message");
	IS_INT(ptcaps_parse_format("config:17-14", &f, &e), -ERR_FORMAT,
	    "reversed range");
	IS_INT(ptcaps_parse_format("config:64", &f, &e), -ERR_FORMAT,
	    "bit 64");
	IS_STR(e.msg, "'config:64' is not config:A or config:A-B (bits 0 "
	    "to 63)", "bit range message");
	IS_INT(ptcaps_parse_cpulist("0-3,8,10-11\n", &e), 7, "cpu list");
	IS_INT(ptcaps_parse_cpulist("0", &e), 1, "one cpu");
	IS_INT(ptcaps_parse_cpulist("x", &e), -ERR_FORMAT, "not a list");
	IS_STR(e.msg, "'x' is not a CPU list", "cpu list message");
	IS_INT(ptcaps_parse_cpulist("3-1", &e), -ERR_FORMAT, "reversed");
}

static int
write_file(const char *dir, const char *rel, const char *text)
{
	char path[8192], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = path + strlen(dir) + 1; (slash = strchr(slash, '/'));
	    slash++) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void
test_bad_files(void)
{
	char dir[] = "/tmp/t_ptcaps.XXXXXX", want[512], cmd[600];
	struct ptcaps c;
	struct error e;

	if (mkdtemp(dir) == NULL) {
		OK(0, "mkdtemp");
		return;
	}
	write_file(dir, "sys/bus/event_source/devices/intel_pt/type", "8\n");
	write_file(dir, "sys/bus/event_source/devices/intel_pt/caps/psb_cyc",
	    "zz\n");
	IS_INT(ptcaps_probe(&c, dir, PTCAPS_NO_TOOLS, &e), -ERR_FORMAT,
	    "a cap that is not hex is an error");
	snprintf(want, sizeof(want), "%s/sys/bus/event_source/devices/"
	    "intel_pt/caps/psb_cyc: 'zz' is not a hexadecimal number", dir);
	IS_STR(e.msg, want, "the message names the file and quotes it");
	write_file(dir, "sys/bus/event_source/devices/intel_pt/caps/psb_cyc",
	    "1\n");
	write_file(dir, "sys/bus/event_source/devices/intel_pt/format/cyc",
	    "config:1-\n");
	IS_INT(ptcaps_probe(&c, dir, PTCAPS_NO_TOOLS, &e), -ERR_FORMAT,
	    "a bad format file is an error");
	snprintf(want, sizeof(want), "%s/sys/bus/event_source/devices/"
	    "intel_pt/format/cyc: 'config:1-' is not config:A or "
	    "config:A-B (bits 0 to 63)", dir);
	IS_STR(e.msg, want, "format message");
	write_file(dir, "sys/bus/event_source/devices/intel_pt/format/cyc",
	    "config:1\n");
	IS_INT(ptcaps_probe(&c, dir, PTCAPS_NO_TOOLS, &e), 0,
	    "a sparse tree probes");
	OK(c.pmu.present && c.pmu.fmt[PTF_CYC].present &&
	    !c.pmu.fmt[PTF_TSC].present, "only what exists is present");
	OK(!c.perm.has_paranoid && !c.perm.has_capeff && !c.perm.has_memlock,
	    "absent procfs files are absent");
	IS_INT(c.cpu.online, 0, "online unknown under a fake root");
	IS_INT(c.cpu.family, -1, "family unknown");
	IS_INT(ptcaps_kernel_at_least(&c, 6, 13), -1, "kernel unknown");
	write_file(dir, "proc/sys/kernel/osrelease", "six\n");
	IS_INT(ptcaps_probe(&c, dir, PTCAPS_NO_TOOLS, &e), -ERR_FORMAT,
	    "a bad osrelease");
	snprintf(want, sizeof(want), "%s/proc/sys/kernel/osrelease: 'six' is "
	    "not a kernel release (X.Y...)", dir);
	IS_STR(e.msg, want, "osrelease message");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	IS_INT(system(cmd), 0, "cleanup");
	IS_INT(ptcaps_probe(&c, "/nonexistent/root", 0, &e), -ERR_NOTFOUND,
	    "a missing root");
	IS_STR(e.msg, "/nonexistent/root: not a directory", "root message");
}

static void
test_real_root(void)
{
	struct ptcaps c;
	struct error e;

	IS_INT(ptcaps_probe(&c, "/", PTCAPS_NO_TOOLS, &e), 0,
	    "the real root probes");
	IS_STR(c.root, "", "'/' is kept as the empty prefix");
	OK(c.perm.has_memlock, "getrlimit gives the memlock limit");
	OK(c.cpu.online > 0, "online CPUs known");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");

	snprintf(fixtures, sizeof(fixtures), "%s/tests/fixtures/sysfs",
	    src != NULL ? src : ".");
	test_skylake();
	test_amd_vm();
	test_parsers();
	test_bad_files();
	test_real_root();
	return tap_done();
}

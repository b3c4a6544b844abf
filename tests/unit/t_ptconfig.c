/*
 * Tests for lib/ptconfig: every cap combination that changes a decision,
 * with the exact config and the exact sentence.  The base is the fake
 * Skylake tree (tests/fixtures/sysfs/skylake); each case changes what the
 * probe read, as a different machine would have it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/ptconfig.h"
#include "tap.h"

static struct ptcaps skylake;

static struct ptcaps
base(void)
{
	return skylake;
}

static void
set_cap(struct ptcaps *c, enum ptcaps_cap cap, uint32_t v)
{
	c->pmu.cap[cap].present = 1;
	c->pmu.cap[cap].value = v;
}

static uint64_t
build(const struct ptcaps *c, enum ptconfig_profile p, struct ptconfig *out)
{
	struct error e;

	error_clear(&e);
	if (ptconfig_build(c, p, 0, out, &e) < 0) {
		DIAG("build failed: %s", e.msg);
		return 0;
	}
	return out->config;
}

static void
test_profiles(void)
{
	struct ptcaps c = base();
	struct ptconfig cfg;

	/* notes/recorder.md §5.2 */
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x300E601, "low = 0x300E601");
	IS_INT(cfg.n_notes, 0, "low is exact");
	IS_U64(build(&c, PTCONFIG_NORMAL, &cfg), 0x3082603,
	    "normal = 0x3082603");
	IS_INT(cfg.n_notes, 0, "normal is exact");
	IS_INT(cfg.used, PTCONFIG_NORMAL, "normal used");
	IS_U64(build(&c, PTCONFIG_HIGH, &cfg), 0x3082E03, "high = 0x3082E03");
	IS_INT(cfg.n_notes, 0, "high is exact");
}

static void
test_no_psb_cyc(void)
{
	struct ptcaps c = base();
	struct ptconfig cfg;

	set_cap(&c, PTC_PSB_CYC, 0);
	IS_U64(build(&c, PTCONFIG_NORMAL, &cfg), 0xE601,
	    "no psb_cyc: normal falls back to low without psb_period");
	IS_INT(cfg.used, PTCONFIG_LOW, "used low");
	IS_INT(cfg.n_notes, 1, "one note");
	IS_STR(cfg.notes[0], "timing 'normal' needs CYC packets, but "
	    "caps/psb_cyc is 0: using 'low' (TSC and MTC timing, about 1 us "
	    "instead of about 10 ns)", "fallback note");
	IS_U64(build(&c, PTCONFIG_HIGH, &cfg), 0xE601, "high falls back too");
	IS_STR(cfg.notes[0], "timing 'high' needs CYC packets, but "
	    "caps/psb_cyc is 0: using 'low' (TSC and MTC timing, about 1 us "
	    "instead of about 10 ns)", "high's note names high");
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0xE601, "low without psb");
	IS_INT(cfg.n_notes, 0, "low: perf's default, no note");
}

static void
test_mtc(void)
{
	struct ptcaps c = base();
	struct ptconfig cfg;

	c.pmu.cap[PTC_MTC_PERIODS].present = 0;
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x2401,
	    "mtc_periods missing: low is tsc, pt, branch");
	IS_STR(cfg.notes[0], "no MTC packets: caps/mtc_periods is 0",
	    "note for missing mtc_periods");
	IS_U64(build(&c, PTCONFIG_NORMAL, &cfg), 0x82403,
	    "mtc_periods missing: normal has cyc, no psb_period (perf's rule)");
	IS_INT(cfg.used, PTCONFIG_NORMAL, "still normal");
	IS_U64(build(&c, PTCONFIG_HIGH, &cfg), 0x82C03, "and high");

	c = base();
	set_cap(&c, PTC_MTC, 0);
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x2401, "mtc 0: no MTC");
	IS_STR(cfg.notes[0], "no MTC packets: caps/mtc is 0", "mtc note");

	c = base();
	set_cap(&c, PTC_MTC_PERIODS, 0x248);
	IS_U64(build(&c, PTCONFIG_NORMAL, &cfg), 0x308E603,
	    "mtc_periods without 0: normal uses period 3");
	IS_INT(cfg.n_notes, 1, "one note");
	IS_STR(cfg.notes[0], "caps/mtc_periods (0x248) lacks 0: using "
	    "mtc_period=3", "the period note");
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x300E601, "low unchanged");
	IS_INT(cfg.n_notes, 0, "and exact");

	c = base();
	set_cap(&c, PTC_MTC_PERIODS, 0x1);
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x3002601,
	    "mtc_periods only 0: low uses period 0");
	IS_STR(cfg.notes[0], "caps/mtc_periods (0x1) lacks 3: using "
	    "mtc_period=0", "low's period note");
	IS_U64(build(&c, PTCONFIG_NORMAL, &cfg), 0x3082603,
	    "normal exact with period 0");
	IS_INT(cfg.n_notes, 0, "no note for normal");
}

static void
test_thresholds_and_psb(void)
{
	struct ptcaps c = base();
	struct ptconfig cfg;

	set_cap(&c, PTC_CYCLE_THRESHOLDS, 0x1);
	IS_U64(build(&c, PTCONFIG_NORMAL, &cfg), 0x3002603,
	    "no threshold 1: cyc_thresh 0");
	IS_STR(cfg.notes[0], "caps/cycle_thresholds (0x1) lacks 1: using "
	    "cyc_thresh=0 (a CYC packet wherever one is allowed)",
	    "threshold note");

	c = base();
	set_cap(&c, PTC_PSB_PERIODS, 0x7);
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x200E601, "psb_period 2");
	IS_STR(cfg.notes[0], "caps/psb_periods (0x7) lacks 3: using "
	    "psb_period=2", "psb note");

	c = base();
	c.pmu.fmt[PTF_PT].present = 0;
	IS_U64(build(&c, PTCONFIG_LOW, &cfg), 0x300C600,
	    "no format/pt: neither pt nor branch (the driver sets BranchEn)");
}

static void
test_absent(void)
{
	struct ptcaps c = base();
	struct ptconfig cfg;
	struct error e;

	c.pmu.present = 0;
	IS_INT(ptconfig_build(&c, PTCONFIG_LOW, 0, &cfg, &e),
	    -ERR_UNSUPPORTED, "no PMU");
	IS_STR(e.msg, "Intel PT is absent (no intel_pt PMU)", "absent msg");
}

static void
check_raw(struct ptcaps *c, uint64_t raw, const char *want, const char *name)
{
	struct ptconfig cfg;
	struct error e;
	int rc;

	error_clear(&e);
	rc = ptconfig_build(c, PTCONFIG_RAW, raw, &cfg, &e);
	if (want == NULL) {
		IS_INT(rc, 0, "%s: accepted", name);
		IS_U64(cfg.config, raw, "%s: config kept", name);
		return;
	}
	IS_INT(rc, -ERR_UNSUPPORTED, "%s: refused", name);
	IS_STR(e.msg, want, "%s: message", name);
}

static void
test_raw(void)
{
	struct ptcaps c = base();

	check_raw(&c, 0x3082E03, NULL, "high as raw");
	check_raw(&c, 0x100000000000ULL, "config 0x100000000000 sets bit 44, "
	    "which no intel_pt format/ field defines", "unknown bit");
	check_raw(&c, 0x2400, "config sets branch without pt, which the "
	    "kernel refuses (branch tracing is always on unless pt is set)",
	    "branch without pt");
	check_raw(&c, 0x401, NULL, "pt without branch on Skylake");
	check_raw(&c, 0x2401 | 15ULL << 19, "cyc_thresh=15 is not in "
	    "caps/cycle_thresholds (0x3fff)", "threshold outside the mask");
	check_raw(&c, 0x2401 | 7ULL << 24, "psb_period=7 is not in "
	    "caps/psb_periods (0x3f)", "psb period outside the mask");
	check_raw(&c, 0x2601 | 1ULL << 14, "mtc_period=1 is not in "
	    "caps/mtc_periods (0x249)", "mtc period outside the mask");
	check_raw(&c, 0x1000 | 0x2401, "config sets ptw, which needs "
	    "caps/ptwrite, and this CPU has 0", "ptw without ptwrite");
	check_raw(&c, 0x10 | 0x2401, "config sets pwr_evt, which needs "
	    "caps/power_event_trace, and this CPU has 0", "pwr_evt");
	set_cap(&c, PTC_PTWRITE, 1);
	check_raw(&c, 0x20 | 0x2401, "config sets fup_on_ptw without ptw, "
	    "which the kernel refuses", "fup_on_ptw alone");
	check_raw(&c, 0x1020 | 0x2401, NULL, "fup_on_ptw with ptw");

	c = base();
	set_cap(&c, PTC_PSB_CYC, 0);
	check_raw(&c, 0x2403, "config sets cyc, which needs caps/psb_cyc, "
	    "and this CPU has 0", "cyc without psb_cyc");
	check_raw(&c, 0x300E601, "config sets psb_period, which needs "
	    "caps/psb_cyc, and this CPU has 0", "low's psb without psb_cyc");

	c = base();
	c.pmu.cap[PTC_MTC_PERIODS].present = 0;
	check_raw(&c, 0x2601, "config sets mtc, but caps/mtc_periods lists "
	    "no period", "mtc without periods");
	set_cap(&c, PTC_MTC, 0);
	check_raw(&c, 0x2601, "config sets mtc, which needs caps/mtc, and "
	    "this CPU has 0", "mtc without the cap");

	c = base();
	c.cpu.model = 0x3d;	/* Broadwell */
	check_raw(&c, 0x401, "config sets pt without branch, which Broadwell "
	    "CPUs refuse (erratum BDM106)", "BDM106");
}

static void
test_set(void)
{
	struct ptcaps c = base();
	uint64_t cfg = 0;
	struct error e;

	IS_INT(ptconfig_set(&c.pmu, PTF_MTC_PERIOD, 16, &cfg, &e), -ERR_RANGE,
	    "16 does not fit in 4 bits");
	IS_STR(e.msg, "mtc_period=16 does not fit in config bits 14-17",
	    "range message");
	IS_INT(ptconfig_set(&c.pmu, PTF_MTC_PERIOD, 9, &cfg, &e), 0, "9 fits");
	IS_U64(cfg, 9ULL << 14, "placed at bit 14");
	IS_U64(ptconfig_get(&c.pmu, PTF_MTC_PERIOD, cfg | 0x3), 9, "read back");
	c.pmu.fmt[PTF_PTW].present = 0;
	IS_INT(ptconfig_set(&c.pmu, PTF_PTW, 1, &cfg, &e), -ERR_UNSUPPORTED,
	    "absent field");
	IS_STR(e.msg, "intel_pt has no format/ptw", "absent field message");
}

#define MiB (1ULL << 20)

static void
test_rings(void)
{
	struct ptcaps c = base();
	struct ptring_plan plan;
	struct error e;
	char want[1024];

	/* 516 KiB x 8 CPUs + 8 MiB = 12320 KiB. */
	IS_INT(ptring_plan(&c, 32 * MiB, 128 * MiB, &plan, &e), 0,
	    "unprivileged Skylake plans");
	IS_U64(plan.budget, 12320 * 1024ULL, "budget cut to the allowance");
	IS_U64(plan.aux_bytes, 8 * MiB, "8 MiB rings");
	IS_INT(plan.full_threads, 1, "one thread at full size");
	IS_INT(plan.reduced, 1, "reduced");
	snprintf(want, sizeof(want), "locked-memory limits allow 12320 KiB "
	    "for perf rings (perf_event_mlock_kb 516 x 8 CPUs + "
	    "RLIMIT_MEMLOCK 8 MiB), less than --budget-bytes 128 MiB: 1 "
	    "thread at 8 MiB; %s", ptring_raise_hint);
	IS_STR(plan.warning, want, "the warning says how to raise them");
	IS_U64(ptring_next_aux(&plan, plan.base_bytes + 8 * MiB), 2 * MiB,
	    "a second thread gets what is left, as a power of two");

	c.perm.capeff = 1ULL << PTCAPS_CAP_IPC_LOCK;
	IS_INT(ptring_plan(&c, 32 * MiB, 128 * MiB, &plan, &e), 0,
	    "CAP_IPC_LOCK plans");
	IS_U64(plan.aux_bytes, 32 * MiB, "32 MiB rings");
	IS_INT(plan.full_threads, 3, "3 threads (sideband rings count too)");
	IS_STR(plan.warning, "", "no warning");
	IS_U64(ptring_next_aux(&plan, 3 * (plan.base_bytes + 32 * MiB)),
	    16 * MiB, "the 4th thread gets 16 MiB");
	IS_U64(ptring_next_aux(&plan, 128 * MiB - 100 * 1024), 0,
	    "no room: 0");

	c = base();
	c.perm.paranoid = -1;
	IS_INT(ptring_plan(&c, 32 * MiB, 128 * MiB, &plan, &e), 0,
	    "paranoid -1 plans");
	IS_U64(plan.aux_bytes, 32 * MiB, "paranoid -1 lifts the mlock limit");

	c = base();
	c.perm.mlock_kb = 4;
	c.cpu.online = 2;
	c.perm.memlock_soft = 64 * 1024;
	IS_INT(ptring_plan(&c, 32 * MiB, 128 * MiB, &plan, &e), -ERR_PERM,
	    "tiny mlock limits: no ring fits");
	snprintf(want, sizeof(want), "locked-memory limits allow 72 KiB for "
	    "perf rings (perf_event_mlock_kb 4 x 2 CPUs + RLIMIT_MEMLOCK 64 "
	    "KiB), and one thread's rings need at least 132 KiB: %s",
	    ptring_raise_hint);
	IS_STR(e.msg, want, "tiny mlock message");

	c = base();
	c.perm.vm_pin_kb = 1024;
	IS_INT(ptring_plan(&c, 1 * MiB, 128 * MiB, &plan, &e), 0, "VmPin");
	IS_U64(plan.budget, 11296 * 1024ULL, "pinned memory is subtracted");
	IS_INT(plan.full_threads, 10, "ten 1 MiB threads");

	c = base();
	c.perm.capeff = 1ULL << PTCAPS_CAP_IPC_LOCK;
	set_cap(&c, PTC_TOPA_MULTIPLE_ENTRIES, 0);
	IS_INT(ptring_plan(&c, 32 * MiB, 128 * MiB, &plan, &e), 0,
	    "single-entry ToPA plans");
	IS_U64(plan.aux_bytes, 4 * MiB, "capped at 4 MiB");
	IS_STR(plan.warning, "this CPU has no multi-entry ToPA "
	    "(caps/topa_multiple_entries is 0): rings of at most 4 MiB",
	    "ToPA warning");

	c = base();
	c.perm.capeff = 1ULL << PTCAPS_CAP_IPC_LOCK;
	IS_INT(ptring_plan(&c, 3 * MiB, 128 * MiB, &plan, &e), 0, "3 MiB");
	IS_U64(plan.aux_bytes, 2 * MiB, "rounded down to 2 MiB");
	IS_STR(plan.warning, "--aux-bytes 3 MiB is not a power of two: rings "
	    "of 2 MiB", "power of two warning");
	IS_INT(ptring_plan(&c, 32 * MiB, 32 * MiB, &plan, &e), 0,
	    "aux equal to budget");
	IS_U64(plan.aux_bytes, 16 * MiB, "the sideband pushes it to 16 MiB");
	IS_STR(plan.warning, "a ring of 32 MiB and its sideband do not fit in "
	    "--budget-bytes: rings of 16 MiB", "budget warning");
	IS_INT(ptring_plan(&c, 64 * 1024, 100 * 1024, &plan, &e),
	    -ERR_INVALID, "a budget below one thread");
	IS_STR(e.msg, "--budget-bytes is too small: one thread's rings need "
	    "at least 132 KiB", "budget message");
}

static void
test_filters(void)
{
	struct ptcaps c = base();
	struct ptfilter f[3] = {
		{ 0x1040, 0x2a, "/usr/bin/x", 0 },
		{ 0x2000, 0x10, "/lib/libc.so.6", 1 },
		{ 0x10, 0x10, "/usr/bin/x", 0 },
	};
	char buf[256];
	struct error e;

	IS_INT(ptfilter_string(&c, f, 2, buf, sizeof(buf), &e), 61,
	    "two filters");
	IS_STR(buf, "filter 0x1040/0x2a@/usr/bin/x,stop 0x2000/0x10@"
	    "/lib/libc.so.6", "kernel syntax");
	IS_INT(ptfilter_string(&c, f, 3, buf, sizeof(buf), &e),
	    -ERR_UNSUPPORTED, "three filters, two ranges");
	IS_STR(e.msg, "3 filters asked, and this CPU has 2 address ranges "
	    "(caps/num_address_ranges)", "too many message");
	c.pmu.nr_addr_filters = -1;
	set_cap(&c, PTC_NUM_ADDRESS_RANGES, 0);
	IS_INT(ptfilter_string(&c, f, 1, buf, sizeof(buf), &e),
	    -ERR_UNSUPPORTED, "zero address ranges");
	IS_STR(e.msg, "--filter needs address filters, and this CPU has none "
	    "(caps/num_address_ranges is 0)", "zero ranges message");
	c = base();
	f[0].size = 0;
	IS_INT(ptfilter_string(&c, f, 1, buf, sizeof(buf), &e), -ERR_INVALID,
	    "size 0");
	IS_STR(e.msg, "filter 1: size 0: Intel PT cannot filter an empty "
	    "range", "size 0 message");
	f[0].size = 1;
	f[0].path = "bin/x";
	IS_INT(ptfilter_string(&c, f, 1, buf, sizeof(buf), &e), -ERR_INVALID,
	    "relative path");
	IS_STR(e.msg, "filter 1: 'bin/x' is not an absolute path",
	    "relative message");
	f[0].path = "/a b";
	IS_INT(ptfilter_string(&c, f, 1, buf, sizeof(buf), &e), -ERR_INVALID,
	    "a space");
	f[0].path = "/usr/bin/x";
	IS_INT(ptfilter_string(&c, f, 1, buf, 10, &e), -ERR_RANGE,
	    "buffer too small");
	IS_U64(ptfilter_file_offset(0x401130, 0x401000, 0x1000), 0x1130,
	    "vaddr to file offset");
}

static void
test_sizes(void)
{
	char b[32];

	ptconfig_format_size(32 * MiB, b, sizeof(b));
	IS_STR(b, "32 MiB", "MiB");
	ptconfig_format_size(528384, b, sizeof(b));
	IS_STR(b, "516 KiB", "KiB");
	ptconfig_format_size(1000, b, sizeof(b));
	IS_STR(b, "1000 bytes", "bytes");
	ptconfig_format_size(2ULL << 30, b, sizeof(b));
	IS_STR(b, "2 GiB", "GiB");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char root[4200];
	struct error e;

	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/skylake",
	    src != NULL ? src : ".");
	if (ptcaps_probe(&skylake, root, PTCAPS_NO_TOOLS, &e) < 0) {
		OK(0, "probe %s: %s", root, e.msg);
		return tap_done();
	}
	test_profiles();
	test_no_psb_cyc();
	test_mtc();
	test_thresholds_and_psb();
	test_absent();
	test_raw();
	test_set();
	test_rings();
	test_filters();
	test_sizes();
	return tap_done();
}

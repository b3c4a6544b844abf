/*
 * ptcaps: what a machine offers an Intel PT recorder, read from a root.
 *
 * Owns reading, under a root directory ("/" on a real machine, a fake
 * sysfs/procfs tree in tests):
 *   sys/bus/event_source/devices/intel_pt/{type,format/NAME,caps/NAME,
 *       nr_addr_filters,max_nonturbo_ratio,tsc_art_ratio}
 *   sys/devices/system/cpu/online
 *   proc/cpuinfo (first processor: vendor, family, model, stepping, flags)
 *   proc/sys/kernel/osrelease (the kernel release, for feature versions)
 *   proc/sys/kernel/{perf_event_paranoid,perf_event_mlock_kb,
 *       yama/ptrace_scope}
 *   proc/self/status (CapEff, VmPin) and proc/self/limits (locked memory;
 *       getrlimit(RLIMIT_MEMLOCK) when the root is "/")
 *   perf and qemu-x86_64 found in $PATH with the root in front of each
 *       directory; perf is run (argv, no shell) for its version.
 * It interprets nothing: which profile, ring or recorder follows from
 * these facts is ptconfig's and the doctor's business.  Files that do not
 * exist are recorded as absent; files that exist but cannot be understood
 * are errors, because a decision taken on a misread cap would be wrong.
 */
#ifndef PTKIT_PTCAPS_H
#define PTKIT_PTCAPS_H

#include <limits.h>
#include <stdint.h>

#include "base/error.h"

/* The config fields of format/, in RTIT_CTL order (notes/recorder.md §1.2). */
enum ptcaps_fmt {
	PTF_PT, PTF_CYC, PTF_PWR_EVT, PTF_FUP_ON_PTW, PTF_MTC, PTF_TSC,
	PTF_NORETCOMP, PTF_PTW, PTF_BRANCH, PTF_MTC_PERIOD, PTF_CYC_THRESH,
	PTF_PSB_PERIOD, PTF_EVENT, PTF_NOTNT,
	PTF_COUNT
};

/* The caps/ files a decision depends on or the doctor reports (§1.3). */
enum ptcaps_cap {
	PTC_PSB_CYC, PTC_MTC, PTC_CYCLE_THRESHOLDS, PTC_MTC_PERIODS,
	PTC_PSB_PERIODS, PTC_IP_FILTERING, PTC_NUM_ADDRESS_RANGES,
	PTC_PTWRITE, PTC_POWER_EVENT_TRACE, PTC_EVENT_TRACE, PTC_TNT_DISABLE,
	PTC_TOPA_OUTPUT, PTC_TOPA_MULTIPLE_ENTRIES, PTC_SINGLE_RANGE_OUTPUT,
	PTC_OUTPUT_SUBSYS, PTC_PAYLOADS_LIP, PTC_CR3_FILTERING,
	PTC_MAX_SUBLEAF,
	PTC_COUNT
};

/* Capability bits of CapEff (linux/capability.h). */
enum {
	PTCAPS_CAP_IPC_LOCK = 14,
	PTCAPS_CAP_SYS_PTRACE = 19,
	PTCAPS_CAP_SYS_ADMIN = 21,
	PTCAPS_CAP_PERFMON = 38,
};

#define PTCAPS_UNLIMITED UINT64_MAX

/* "format/<name>", "caps/<name>": the file names.  Never NULL. */
const char *ptcaps_fmt_name(enum ptcaps_fmt f);
const char *ptcaps_cap_name(enum ptcaps_cap c);

struct ptcaps_field {
	int present;
	unsigned lo, hi;	/* config bits lo..hi, inclusive */
};

struct ptcaps_capval {
	int present;
	uint32_t value;		/* the file is hexadecimal */
};

struct ptcaps_pmu {
	int present;		/* the intel_pt directory exists */
	int type;		/* perf_event_attr.type; -1 when absent */
	struct ptcaps_field fmt[PTF_COUNT];
	struct ptcaps_capval cap[PTC_COUNT];
	int nr_addr_filters;	/* -1 when absent */
	int max_nonturbo_ratio;	/* -1 when absent */
	int has_tsc_art_ratio;
	uint32_t tsc_art_num, tsc_art_den;
};

struct ptcaps_cpu {
	char vendor[32];	/* "GenuineIntel"; "" when unknown */
	char model_name[96];
	int family, model, stepping;	/* -1 when unknown */
	int flag_intel_pt, flag_hypervisor, flag_constant_tsc,
	    flag_nonstop_tsc;
	int online;		/* online CPUs; 0 when unknown */
};

struct ptcaps_perm {
	int has_paranoid, paranoid;
	int has_mlock_kb;
	uint64_t mlock_kb;
	int ptrace_scope;	/* -1: no Yama */
	int has_capeff;
	uint64_t capeff;
	uint64_t vm_pin_kb;
	uint64_t memlock_soft, memlock_hard;	/* bytes or PTCAPS_UNLIMITED */
	int has_memlock;
};

struct ptcaps_tools {
	char perf_path[PATH_MAX];	/* "" when not found */
	char perf_version[64];		/* "6.1.192"; "" when unknown */
	int perf_major, perf_minor;	/* -1 when unknown */
	char perf_problem[160];		/* why the version is unknown */
	char qemu_path[PATH_MAX];	/* qemu-x86_64; "" when not found */
};

struct ptcaps_kernel {
	char release[64];	/* proc/sys/kernel/osrelease; "" unknown */
	int major, minor;	/* -1 when unknown */
};

struct ptcaps {
	char root[PATH_MAX];	/* without a trailing '/'; "" for "/" */
	struct ptcaps_kernel kernel;
	struct ptcaps_cpu cpu;
	struct ptcaps_pmu pmu;
	struct ptcaps_perm perm;
	struct ptcaps_tools tools;
};

/* PTCAPS_NO_TOOLS: do not look for perf and qemu (tools stay empty). */
enum { PTCAPS_NO_TOOLS = 1 };

/*
 * Fills c from the tree under root (NULL or "" means "/").  Returns 0, or
 * -ERR_NOTFOUND (root is not a directory), -ERR_FORMAT (a file exists but
 * does not say what it should; e names it and quotes it), -ERR_IO (a file
 * exists but cannot be read).
 */
int ptcaps_probe(struct ptcaps *c, const char *root, unsigned flags,
    struct error *e) PTKIT_MUST_CHECK;

/* The root to use: $PTKIT_SYSROOT if set and non-empty, else "/". */
const char *ptcaps_default_root(void);

/*
 * 1 when the kernel is at least major.minor, 0 when older, -1 when the
 * release is unknown.
 */
int ptcaps_kernel_at_least(const struct ptcaps *c, int major, int minor);

/* 1 when CapEff has capability bit cap (PTCAPS_CAP_*). */
int ptcaps_has(const struct ptcaps *c, int cap);

/* A cap's value, 0 when the file is absent. */
uint32_t ptcaps_cap(const struct ptcaps_pmu *p, enum ptcaps_cap cap);

/*
 * Parses one format/ file's text ("config:10", "config:14-17\n") into f.
 * Returns 0 or -ERR_FORMAT.  Exposed for tests.
 */
int ptcaps_parse_format(const char *text, struct ptcaps_field *f,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Parses a CPU list ("0-3,8,10-11\n") and returns how many CPUs it names,
 * or -ERR_FORMAT.
 */
int ptcaps_parse_cpulist(const char *text, struct error *e) PTKIT_MUST_CHECK;

#endif

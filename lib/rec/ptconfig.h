/*
 * ptconfig: the Intel PT event configuration a recorder asks the kernel for.
 *
 * Owns three decisions, each taken from the facts ptcaps read:
 *   - perf_event_attr.config for a timing profile (low, normal, high) or a
 *     raw number, placed by the format/ bit positions and checked against
 *     caps/ by the kernel's own rules (pt_event_valid, notes/recorder.md
 *     §1.2), so that a config the kernel would refuse with EINVAL is refused
 *     here first with a sentence saying which cap forbids it;
 *   - the ring plan: AUX bytes per thread within the total budget, reduced
 *     to what the locked-memory limits allow (§1.5), with the warning that
 *     says how to raise them;
 *   - the address-filter string for PERF_EVENT_IOC_SET_FILTER (§4).
 * Pure functions: no I/O.
 */
#ifndef PTKIT_PTCONFIG_H
#define PTKIT_PTCONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "rec/ptcaps.h"

enum ptconfig_profile {
	PTCONFIG_LOW, PTCONFIG_NORMAL, PTCONFIG_HIGH, PTCONFIG_RAW,
	PTCONFIG_PROFILE_COUNT
};

/* "low", "normal", "high", "raw". */
const char *ptconfig_profile_name(enum ptconfig_profile p);

#define PTCONFIG_MAX_NOTES 4
#define PTCONFIG_NOTE_MAX 200

struct ptconfig {
	uint64_t config;
	enum ptconfig_profile asked, used;	/* used != asked: fell back */
	int n_notes;
	/* Each a sentence on how the result differs from the profile. */
	char notes[PTCONFIG_MAX_NOTES][PTCONFIG_NOTE_MAX];
};

/*
 * Builds the config for profile (raw is used only with PTCONFIG_RAW).
 * The profiles follow notes/recorder.md §5.2 (perf's default terms, then
 * magic-trace's profile terms on top):
 *   low    tsc, mtc with mtc_period = perf's pick <= 3, psb_period = perf's
 *          pick <= 3 (only with psb_cyc and mtc_periods), pt, branch
 *   normal low + cyc, cyc_thresh=1, mtc_period=0
 *   high   normal + noretcomp
 * When the caps do not allow a profile exactly it is adapted and each
 * change is a note: normal/high without psb_cyc fall back to low; a
 * missing mtc period 0 uses the smallest listed; a missing threshold 1
 * uses cyc_thresh=0; no MTC drops MTC.  A raw config is only validated.
 * Returns 0, or -ERR_UNSUPPORTED (no intel_pt PMU, or a raw config the
 * kernel would refuse; e says which rule), -ERR_INVALID (bad profile).
 */
int ptconfig_build(const struct ptcaps *c, enum ptconfig_profile profile,
    uint64_t raw, struct ptconfig *out, struct error *e) PTKIT_MUST_CHECK;

/*
 * Checks config against format/ and caps/ with the kernel's rules.
 * Returns 0 or -ERR_UNSUPPORTED with the rule in e.
 */
int ptconfig_validate(const struct ptcaps *c, uint64_t config,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Reads or sets one format/ field of a config.  Setting fails with
 * -ERR_UNSUPPORTED when the field is absent from format/, -ERR_RANGE when
 * v does not fit its bits.
 */
uint64_t ptconfig_get(const struct ptcaps_pmu *p, enum ptcaps_fmt f,
    uint64_t config);
int ptconfig_set(const struct ptcaps_pmu *p, enum ptcaps_fmt f, uint64_t v,
    uint64_t *config, struct error *e) PTKIT_MUST_CHECK;

/* Rings. */

/* Sideband ring per thread: 1 control page + 16 data pages. */
#define PTRING_PAGE 4096ULL
#define PTRING_BASE_BYTES (17 * PTRING_PAGE)
/* Smallest AUX ring worth having: a few PSB periods of 16 KiB. */
#define PTRING_MIN_AUX (64 * 1024ULL)
/* One contiguous allocation without multi-entry ToPA (§1.3). */
#define PTRING_SINGLE_TOPA_MAX (4ULL << 20)

/* The locked-memory allowance for perf mappings of this user (§1.5). */
struct ptring_allowance {
	int unlimited;		/* CAP_IPC_LOCK or paranoid -1 */
	uint64_t bytes;		/* when !unlimited */
	const char *why_unlimited;	/* "CAP_IPC_LOCK", ... or NULL */
};

/*
 * allowance = perf_event_mlock_kb * 1024 * online CPUs + RLIMIT_MEMLOCK
 * soft - VmPin, or unlimited with CAP_IPC_LOCK, paranoid -1 or an
 * unlimited RLIMIT_MEMLOCK.  Unknown values count as 0 (the kernel's
 * defaults cannot be assumed for a tree that does not say).
 */
void ptring_allowance(const struct ptcaps *c, struct ptring_allowance *a);

struct ptring_plan {
	uint64_t aux_bytes;	/* AUX ring per thread: a power of two */
	uint64_t base_bytes;	/* sideband ring per thread */
	uint64_t budget;	/* what all rings together may use */
	unsigned full_threads;	/* threads that get aux_bytes */
	int reduced;		/* the allowance cut the budget */
	/* Set when the plan differs from what was asked, else "". */
	char warning[640];
};

/*
 * Plans rings for aux_bytes per thread within budget_bytes.  aux_bytes is
 * rounded down to a power of two (a kernel rule), capped at 4 MiB on CPUs
 * without multi-entry ToPA, and the budget is cut to the allowance.
 * Returns 0 (warning says what changed and how to raise the limits), or
 * -ERR_PERM when not even one thread's ring of PTRING_MIN_AUX fits (e says
 * the allowance and how to raise it), -ERR_INVALID for aux_bytes < 1 page.
 */
int ptring_plan(const struct ptcaps *c, uint64_t aux_bytes,
    uint64_t budget_bytes, struct ptring_plan *plan, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * The AUX size for one more thread when used bytes of the budget are
 * taken: aux_bytes if it fits, else the largest power of two that does
 * (at least PTRING_MIN_AUX), else 0 (no room: the thread goes untraced).
 */
uint64_t ptring_next_aux(const struct ptring_plan *plan, uint64_t used);

/* The remedy sentence for mlock limits (shared by warnings and doctor). */
extern const char ptring_raise_hint[];

/* Writes "32 MiB", "516 KiB" or "1000 bytes" (exact; never rounded). */
void ptconfig_format_size(uint64_t bytes, char *buf, size_t size);

/* Address filters. */

struct ptfilter {
	uint64_t offset;	/* FILE offset in path (not a virtual address) */
	uint64_t size;
	const char *path;	/* absolute */
	int stop;		/* TraceStop region instead of a filter */
};

/*
 * Checks that n filters fit the CPU's address ranges (nr_addr_filters,
 * else caps/num_address_ranges).  Returns 0, or -ERR_UNSUPPORTED (no
 * intel_pt, no ranges at all while n > 0, more filters than ranges).
 */
int ptfilter_check_count(const struct ptcaps *c, int n, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Writes the kernel filter string ("filter 0x1040/0x2a@/usr/bin/x,...")
 * into buf.  Returns its length, or -ERR_UNSUPPORTED (as
 * ptfilter_check_count), -ERR_INVALID (size 0, a
 * relative path, a path with a separator character), -ERR_RANGE (buf too
 * small).
 */
int ptfilter_string(const struct ptcaps *c, const struct ptfilter *f,
    int n, char *buf, size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * The file offset of virtual address vaddr inside a PT_LOAD segment that
 * starts at p_vaddr and p_offset: vaddr - p_vaddr + p_offset.
 */
uint64_t ptfilter_file_offset(uint64_t vaddr, uint64_t p_vaddr,
    uint64_t p_offset);

#endif

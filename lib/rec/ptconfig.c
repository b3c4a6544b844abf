/* ptconfig: see ptconfig.h. */
#include "rec/ptconfig.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const profile_names[PTCONFIG_PROFILE_COUNT] = {
	"low", "normal", "high", "raw",
};

const char *
ptconfig_profile_name(enum ptconfig_profile p)
{
	return (unsigned)p < PTCONFIG_PROFILE_COUNT ? profile_names[p] : "?";
}

static uint64_t
field_mask(const struct ptcaps_field *f)
{
	unsigned width = f->hi - f->lo + 1;

	return (width >= 64 ? UINT64_MAX : ((1ULL << width) - 1)) << f->lo;
}

uint64_t
ptconfig_get(const struct ptcaps_pmu *p, enum ptcaps_fmt f, uint64_t config)
{
	const struct ptcaps_field *fd = &p->fmt[f];

	if (!fd->present)
		return 0;
	return (config & field_mask(fd)) >> fd->lo;
}

int
ptconfig_set(const struct ptcaps_pmu *p, enum ptcaps_fmt f, uint64_t v,
    uint64_t *config, struct error *e)
{
	const struct ptcaps_field *fd = &p->fmt[f];
	uint64_t mask;

	if (!fd->present)
		return error_set(e, ERR_UNSUPPORTED, "intel_pt has no "
		    "format/%s", ptcaps_fmt_name(f));
	mask = field_mask(fd);
	if (fd->hi - fd->lo + 1 < 64 && (v >> (fd->hi - fd->lo + 1)) != 0)
		return error_set(e, ERR_RANGE, "%s=%" PRIu64 " does not fit "
		    "in config bits %u-%u", ptcaps_fmt_name(f), v, fd->lo,
		    fd->hi);
	*config = (*config & ~mask) | (v << fd->lo);
	return 0;
}

/*
 * perf's choice of a period from a caps bitmask: the highest listed value
 * <= target, or failing that the lowest listed; -1 when none is listed.
 */
static int
pick_bit(uint32_t bits, int target)
{
	int pos, pick = -1;

	for (pos = 0; bits != 0; bits >>= 1, pos++) {
		if (!(bits & 1))
			continue;
		if (pos <= target || pick < 0)
			pick = pos;
		if (pos >= target)
			break;
	}
	return pick;
}

static void
add_note(struct ptconfig *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
add_note(struct ptconfig *out, const char *fmt, ...)
{
	va_list ap;

	if (out->n_notes == PTCONFIG_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(out->notes[out->n_notes++], PTCONFIG_NOTE_MAX, fmt, ap);
	va_end(ap);
}

/* Broadwell refuses pt=1 with branch=0 (erratum BDM106). */
static int
is_broadwell(const struct ptcaps_cpu *cpu)
{
	return strcmp(cpu->vendor, "GenuineIntel") == 0 && cpu->family == 6 &&
	    (cpu->model == 0x3d || cpu->model == 0x47 || cpu->model == 0x4f ||
	    cpu->model == 0x56);
}

static int
need_cap(const struct ptcaps_pmu *p, enum ptcaps_fmt f, enum ptcaps_cap cap,
    struct error *e)
{
	if (ptcaps_cap(p, cap) != 0)
		return 0;
	return error_set(e, ERR_UNSUPPORTED, "config sets %s, which needs "
	    "caps/%s, and this CPU has 0", ptcaps_fmt_name(f),
	    ptcaps_cap_name(cap));
}

static int
check_in_mask(const struct ptcaps_pmu *p, enum ptcaps_fmt f,
    enum ptcaps_cap cap, uint64_t v, struct error *e)
{
	uint32_t allowed = ptcaps_cap(p, cap);

	if (v < 32 && (allowed >> v & 1))
		return 0;
	return error_set(e, ERR_UNSUPPORTED, "%s=%" PRIu64 " is not in "
	    "caps/%s (0x%x)", ptcaps_fmt_name(f), v, ptcaps_cap_name(cap),
	    allowed);
}

static int
check_known_bits(const struct ptcaps_pmu *p, uint64_t config,
    struct error *e)
{
	uint64_t known = 0, bad;
	unsigned bit = 0;
	int i;

	for (i = 0; i < PTF_COUNT; i++)
		if (p->fmt[i].present)
			known |= field_mask(&p->fmt[i]);
	if ((bad = config & ~known) == 0)
		return 0;
	while (!(bad >> bit & 1))
		bit++;
	return error_set(e, ERR_UNSUPPORTED, "config 0x%" PRIx64 " sets bit "
	    "%u, which no intel_pt format/ field defines", config, bit);
}

static int
check_branch(const struct ptcaps *c, uint64_t config, struct error *e)
{
	const struct ptcaps_pmu *p = &c->pmu;
	int pt = ptconfig_get(p, PTF_PT, config) != 0;
	int branch = ptconfig_get(p, PTF_BRANCH, config) != 0;

	if (!pt && branch)
		return error_set(e, ERR_UNSUPPORTED, "config sets branch "
		    "without pt, which the kernel refuses (branch tracing is "
		    "always on unless pt is set)");
	if (pt && !branch && is_broadwell(&c->cpu))
		return error_set(e, ERR_UNSUPPORTED, "config sets pt without "
		    "branch, which Broadwell CPUs refuse (erratum BDM106)");
	return 0;
}

static int
check_cyc_psb(const struct ptcaps_pmu *p, uint64_t config, struct error *e)
{
	uint64_t cyc = ptconfig_get(p, PTF_CYC, config);
	uint64_t thresh = ptconfig_get(p, PTF_CYC_THRESH, config);
	uint64_t psb = ptconfig_get(p, PTF_PSB_PERIOD, config);
	int rc;

	if (cyc == 0 && thresh == 0 && psb == 0)
		return 0;
	if ((rc = need_cap(p, cyc ? PTF_CYC : thresh ? PTF_CYC_THRESH :
	    PTF_PSB_PERIOD, PTC_PSB_CYC, e)) < 0)
		return rc;
	if (psb != 0 && (rc = check_in_mask(p, PTF_PSB_PERIOD,
	    PTC_PSB_PERIODS, psb, e)) < 0)
		return rc;
	if (thresh != 0 && (rc = check_in_mask(p, PTF_CYC_THRESH,
	    PTC_CYCLE_THRESHOLDS, thresh, e)) < 0)
		return rc;
	return 0;
}

/* The kernel checks the MTC period, even 0, whenever mtc is set. */
static int
check_mtc(const struct ptcaps_pmu *p, uint64_t config, struct error *e)
{
	int rc;

	if (ptconfig_get(p, PTF_MTC, config) == 0)
		return 0;
	if ((rc = need_cap(p, PTF_MTC, PTC_MTC, e)) < 0)
		return rc;
	if (ptcaps_cap(p, PTC_MTC_PERIODS) == 0)
		return error_set(e, ERR_UNSUPPORTED, "config sets mtc, but "
		    "caps/mtc_periods lists no period");
	return check_in_mask(p, PTF_MTC_PERIOD, PTC_MTC_PERIODS,
	    ptconfig_get(p, PTF_MTC_PERIOD, config), e);
}

static int
check_optional(const struct ptcaps_pmu *p, uint64_t config, struct error *e)
{
	static const struct {
		enum ptcaps_fmt f;
		enum ptcaps_cap cap;
	} gates[] = {
		{ PTF_PWR_EVT, PTC_POWER_EVENT_TRACE },
		{ PTF_PTW, PTC_PTWRITE },
		{ PTF_EVENT, PTC_EVENT_TRACE },
		{ PTF_NOTNT, PTC_TNT_DISABLE },
	};
	size_t i;
	int rc;

	for (i = 0; i < sizeof(gates) / sizeof(gates[0]); i++)
		if (ptconfig_get(p, gates[i].f, config) != 0 &&
		    (rc = need_cap(p, gates[i].f, gates[i].cap, e)) < 0)
			return rc;
	if (ptconfig_get(p, PTF_FUP_ON_PTW, config) != 0 &&
	    ptconfig_get(p, PTF_PTW, config) == 0)
		return error_set(e, ERR_UNSUPPORTED, "config sets fup_on_ptw "
		    "without ptw, which the kernel refuses");
	return 0;
}

int
ptconfig_validate(const struct ptcaps *c, uint64_t config, struct error *e)
{
	const struct ptcaps_pmu *p = &c->pmu;
	int rc;

	if (!p->present)
		return error_set(e, ERR_UNSUPPORTED, "Intel PT is absent (no "
		    "intel_pt PMU)");
	if ((rc = check_known_bits(p, config, e)) < 0 ||
	    (rc = check_branch(c, config, e)) < 0 ||
	    (rc = check_cyc_psb(p, config, e)) < 0 ||
	    (rc = check_mtc(p, config, e)) < 0 ||
	    (rc = check_optional(p, config, e)) < 0)
		return rc;
	return 0;
}

/* perf's default terms (§5.2): the "low" profile. */
static int
build_low(const struct ptcaps *c, int mtc_note, struct ptconfig *out,
    struct error *e)
{
	const struct ptcaps_pmu *p = &c->pmu;
	uint32_t mtc_periods = ptcaps_cap(p, PTC_MTC_PERIODS);
	uint32_t psb_periods = ptcaps_cap(p, PTC_PSB_PERIODS);
	uint64_t *cfg = &out->config;
	int rc, v;

	if ((rc = ptconfig_set(p, PTF_TSC, 1, cfg, e)) < 0)
		return rc;
	if (ptcaps_cap(p, PTC_MTC) == 0 || mtc_periods == 0) {
		add_note(out, "no MTC packets: caps/%s is 0",
		    ptcaps_cap(p, PTC_MTC) == 0 ? "mtc" : "mtc_periods");
		mtc_periods = 0;
	} else {
		v = pick_bit(mtc_periods, 3);
		if (v != 3 && mtc_note)
			add_note(out, "caps/mtc_periods (0x%x) lacks 3: using "
			    "mtc_period=%d", mtc_periods, v);
		if ((rc = ptconfig_set(p, PTF_MTC, 1, cfg, e)) < 0 ||
		    (rc = ptconfig_set(p, PTF_MTC_PERIOD, (uint64_t)v, cfg,
		    e)) < 0)
			return rc;
	}
	if (ptcaps_cap(p, PTC_PSB_CYC) != 0 && mtc_periods != 0 &&
	    psb_periods != 0) {
		v = pick_bit(psb_periods, 3);
		if (v != 3)
			add_note(out, "caps/psb_periods (0x%x) lacks 3: using "
			    "psb_period=%d", psb_periods, v);
		if ((rc = ptconfig_set(p, PTF_PSB_PERIOD, (uint64_t)v, cfg,
		    e)) < 0)
			return rc;
	}
	if (p->fmt[PTF_PT].present && p->fmt[PTF_BRANCH].present &&
	    ((rc = ptconfig_set(p, PTF_PT, 1, cfg, e)) < 0 ||
	    (rc = ptconfig_set(p, PTF_BRANCH, 1, cfg, e)) < 0))
		return rc;
	return 0;
}

/* magic-trace's "normal" terms on top of low: cyc, cyc_thresh=1, mtc_period=0. */
static int
build_normal(const struct ptcaps *c, struct ptconfig *out, struct error *e)
{
	const struct ptcaps_pmu *p = &c->pmu;
	uint32_t thresholds = ptcaps_cap(p, PTC_CYCLE_THRESHOLDS);
	uint32_t mtc_periods = ptcaps_cap(p, PTC_MTC_PERIODS);
	uint64_t *cfg = &out->config;
	int rc, v;

	if ((rc = build_low(c, 0, out, e)) < 0 ||
	    (rc = ptconfig_set(p, PTF_CYC, 1, cfg, e)) < 0)
		return rc;
	v = 1;
	if (!(thresholds & 2)) {
		v = 0;
		add_note(out, "caps/cycle_thresholds (0x%x) lacks 1: using "
		    "cyc_thresh=0 (a CYC packet wherever one is allowed)",
		    thresholds);
	}
	if ((rc = ptconfig_set(p, PTF_CYC_THRESH, (uint64_t)v, cfg, e)) < 0)
		return rc;
	if (ptconfig_get(p, PTF_MTC, *cfg) != 0) {
		v = pick_bit(mtc_periods, 0);
		if (v != 0)
			add_note(out, "caps/mtc_periods (0x%x) lacks 0: using "
			    "mtc_period=%d", mtc_periods, v);
		if ((rc = ptconfig_set(p, PTF_MTC_PERIOD, (uint64_t)v, cfg,
		    e)) < 0)
			return rc;
	}
	return 0;
}

static int
build_profile(const struct ptcaps *c, enum ptconfig_profile profile,
    struct ptconfig *out, struct error *e)
{
	const struct ptcaps_pmu *p = &c->pmu;
	int rc;

	if (profile != PTCONFIG_LOW && ptcaps_cap(p, PTC_PSB_CYC) == 0) {
		add_note(out, "timing '%s' needs CYC packets, but caps/psb_cyc "
		    "is 0: using 'low' (TSC and MTC timing, about 1 us instead "
		    "of about 10 ns)", ptconfig_profile_name(profile));
		profile = PTCONFIG_LOW;
	}
	out->used = profile;
	if (profile == PTCONFIG_LOW)
		return build_low(c, 1, out, e);
	if ((rc = build_normal(c, out, e)) < 0)
		return rc;
	if (profile == PTCONFIG_HIGH)
		return ptconfig_set(p, PTF_NORETCOMP, 1, &out->config, e);
	return 0;
}

int
ptconfig_build(const struct ptcaps *c, enum ptconfig_profile profile,
    uint64_t raw, struct ptconfig *out, struct error *e)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->asked = out->used = profile;
	if ((unsigned)profile >= PTCONFIG_PROFILE_COUNT)
		return error_set(e, ERR_INVALID, "no timing profile %d",
		    (int)profile);
	if (!c->pmu.present)
		return error_set(e, ERR_UNSUPPORTED, "Intel PT is absent (no "
		    "intel_pt PMU)");
	if (profile == PTCONFIG_RAW)
		out->config = raw;
	else if ((rc = build_profile(c, profile, out, e)) < 0)
		return error_prefix(e, "timing '%s'",
		    ptconfig_profile_name(profile));
	if ((rc = ptconfig_validate(c, out->config, e)) < 0)
		return profile == PTCONFIG_RAW ? rc : error_prefix(e,
		    "timing '%s'", ptconfig_profile_name(profile));
	return 0;
}

/* Rings. */

const char ptring_raise_hint[] =
    "raise them with 'ulimit -l' (up to the hard limit; LimitMEMLOCK= or "
    "limits.conf raise that), 'sysctl kernel.perf_event_mlock_kb=KB', or "
    "'setcap cap_ipc_lock,cap_perfmon+ep ptrec'";

void
ptconfig_format_size(uint64_t bytes, char *buf, size_t size)
{
	if (bytes != 0 && bytes % (1ULL << 30) == 0)
		snprintf(buf, size, "%" PRIu64 " GiB", bytes >> 30);
	else if (bytes != 0 && bytes % (1ULL << 20) == 0)
		snprintf(buf, size, "%" PRIu64 " MiB", bytes >> 20);
	else if (bytes != 0 && bytes % 1024 == 0)
		snprintf(buf, size, "%" PRIu64 " KiB", bytes >> 10);
	else
		snprintf(buf, size, "%" PRIu64 " bytes", bytes);
}

void
ptring_allowance(const struct ptcaps *c, struct ptring_allowance *a)
{
	const struct ptcaps_perm *pm = &c->perm;
	uint64_t tier1, pinned = pm->vm_pin_kb * 1024;

	memset(a, 0, sizeof(*a));
	if (ptcaps_has(c, PTCAPS_CAP_IPC_LOCK))
		a->why_unlimited = "CAP_IPC_LOCK";
	else if (pm->has_paranoid && pm->paranoid == -1)
		a->why_unlimited = "perf_event_paranoid -1";
	else if (pm->has_memlock && pm->memlock_soft == PTCAPS_UNLIMITED)
		a->why_unlimited = "RLIMIT_MEMLOCK unlimited";
	if (a->why_unlimited != NULL) {
		a->unlimited = 1;
		return;
	}
	tier1 = pm->mlock_kb * 1024 * (uint64_t)c->cpu.online;
	a->bytes = tier1 + (pm->has_memlock ? pm->memlock_soft : 0);
	a->bytes = a->bytes > pinned ? a->bytes - pinned : 0;
}

static uint64_t
pow2_floor(uint64_t v)
{
	uint64_t p = 1;

	if (v == 0)
		return 0;
	while (p <= v / 2)
		p <<= 1;
	return p;
}

/* "(perf_event_mlock_kb 516 x 2 CPUs + RLIMIT_MEMLOCK 8 MiB)" */
static void
allowance_terms(const struct ptcaps *c, char *buf, size_t size)
{
	char soft[32], pin[48] = "";

	ptconfig_format_size(c->perm.has_memlock ? c->perm.memlock_soft : 0,
	    soft, sizeof(soft));
	if (c->perm.vm_pin_kb != 0)
		snprintf(pin, sizeof(pin), " - %" PRIu64 " KiB pinned",
		    c->perm.vm_pin_kb);
	snprintf(buf, size, "perf_event_mlock_kb %" PRIu64 " x %d CPUs + "
	    "RLIMIT_MEMLOCK %s%s", c->perm.mlock_kb, c->cpu.online, soft, pin);
}

static void
append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	if (len != 0) {
		snprintf(buf + len, size - len, "; ");
		len = strlen(buf);
	}
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* Fits want (a power of two) per thread into the budget, or fails. */
static int
plan_fit(const struct ptcaps *c, const struct ptring_allowance *a,
    uint64_t want, struct ptring_plan *plan, struct error *e)
{
	char terms[160], s1[32], s2[32];

	if (plan->budget < plan->base_bytes + want)
		want = plan->budget > plan->base_bytes ?
		    pow2_floor(plan->budget - plan->base_bytes) : 0;
	if (want >= PTRING_MIN_AUX) {
		plan->aux_bytes = want;
		plan->full_threads = (unsigned)(plan->budget /
		    (plan->base_bytes + want));
		return 0;
	}
	ptconfig_format_size(plan->base_bytes + PTRING_MIN_AUX, s2,
	    sizeof(s2));
	if (!plan->reduced)
		return error_set(e, ERR_INVALID, "--budget-bytes is too small: "
		    "one thread's rings need at least %s", s2);
	ptconfig_format_size(a->bytes, s1, sizeof(s1));
	allowance_terms(c, terms, sizeof(terms));
	return error_set(e, ERR_PERM, "locked-memory limits allow %s for "
	    "perf rings (%s), and one thread's rings need at least %s: %s",
	    s1, terms, s2, ptring_raise_hint);
}

int
ptring_plan(const struct ptcaps *c, uint64_t aux_bytes, uint64_t budget_bytes,
    struct ptring_plan *plan, struct error *e)
{
	struct ptring_allowance a;
	char s1[32], s2[32], s3[32], terms[160];
	uint64_t want;
	int rc;

	memset(plan, 0, sizeof(*plan));
	if (aux_bytes < PTRING_PAGE)
		return error_set(e, ERR_INVALID, "--aux-bytes is below one "
		    "page");
	plan->base_bytes = PTRING_BASE_BYTES;
	want = pow2_floor(aux_bytes);
	ptconfig_format_size(aux_bytes, s1, sizeof(s1));
	ptconfig_format_size(want, s2, sizeof(s2));
	if (want != aux_bytes)
		append(plan->warning, sizeof(plan->warning), "--aux-bytes %s is "
		    "not a power of two: rings of %s", s1, s2);
	if (c->pmu.cap[PTC_TOPA_MULTIPLE_ENTRIES].present &&
	    ptcaps_cap(&c->pmu, PTC_TOPA_MULTIPLE_ENTRIES) == 0 &&
	    want > PTRING_SINGLE_TOPA_MAX) {
		want = PTRING_SINGLE_TOPA_MAX;
		append(plan->warning, sizeof(plan->warning), "this CPU has no "
		    "multi-entry ToPA (caps/topa_multiple_entries is 0): rings "
		    "of at most 4 MiB");
	}
	ptring_allowance(c, &a);
	plan->budget = budget_bytes;
	if (!a.unlimited && a.bytes < budget_bytes) {
		plan->budget = a.bytes;
		plan->reduced = 1;
	}
	if ((rc = plan_fit(c, &a, want, plan, e)) < 0)
		return rc;
	if (plan->reduced) {
		ptconfig_format_size(a.bytes, s1, sizeof(s1));
		ptconfig_format_size(budget_bytes, s2, sizeof(s2));
		ptconfig_format_size(plan->aux_bytes, s3, sizeof(s3));
		allowance_terms(c, terms, sizeof(terms));
		append(plan->warning, sizeof(plan->warning), "locked-memory "
		    "limits allow %s for perf rings (%s), less than "
		    "--budget-bytes %s: %u thread%s at %s; %s", s1, terms, s2,
		    plan->full_threads, plan->full_threads == 1 ? "" : "s",
		    s3, ptring_raise_hint);
	} else if (plan->aux_bytes < want) {
		ptconfig_format_size(plan->aux_bytes, s3, sizeof(s3));
		append(plan->warning, sizeof(plan->warning), "a ring of %s and "
		    "its sideband do not fit in --budget-bytes: rings of %s",
		    s2, s3);
	}
	return 0;
}

uint64_t
ptring_next_aux(const struct ptring_plan *plan, uint64_t used)
{
	uint64_t left = used < plan->budget ? plan->budget - used : 0, p;

	if (left >= plan->base_bytes + plan->aux_bytes)
		return plan->aux_bytes;
	if (left <= plan->base_bytes)
		return 0;
	p = pow2_floor(left - plan->base_bytes);
	return p >= PTRING_MIN_AUX ? p : 0;
}

/* Address filters. */

uint64_t
ptfilter_file_offset(uint64_t vaddr, uint64_t p_vaddr, uint64_t p_offset)
{
	return vaddr - p_vaddr + p_offset;
}

static int
filter_ranges(const struct ptcaps_pmu *p)
{
	if (p->nr_addr_filters >= 0)
		return p->nr_addr_filters;
	/* Newer kernels keep only the low 3 bits of the CPUID field. */
	return (int)(ptcaps_cap(p, PTC_NUM_ADDRESS_RANGES) & 7);
}

static int
check_filter(const struct ptfilter *f, int i, struct error *e)
{
	if (f->size == 0)
		return error_set(e, ERR_INVALID, "filter %d: size 0: Intel PT "
		    "cannot filter an empty range", i + 1);
	if (f->path == NULL || f->path[0] != '/')
		return error_set(e, ERR_INVALID, "filter %d: '%s' is not an "
		    "absolute path", i + 1, f->path ? f->path : "");
	if (strpbrk(f->path, " ,\n\t") != NULL)
		return error_set(e, ERR_INVALID, "filter %d: '%s' contains a "
		    "space, comma or newline, which the kernel's filter syntax "
		    "cannot carry", i + 1, f->path);
	return 0;
}

int
ptfilter_check_count(const struct ptcaps *c, int n, struct error *e)
{
	int ranges = filter_ranges(&c->pmu);

	if (!c->pmu.present)
		return error_set(e, ERR_UNSUPPORTED, "Intel PT is absent (no "
		    "intel_pt PMU)");
	if (n > 0 && ranges == 0)
		return error_set(e, ERR_UNSUPPORTED, "--filter needs address "
		    "filters, and this CPU has none (caps/num_address_ranges "
		    "is 0)");
	if (n > ranges)
		return error_set(e, ERR_UNSUPPORTED, "%d filters asked, and "
		    "this CPU has %d address range%s "
		    "(caps/num_address_ranges)", n, ranges,
		    ranges == 1 ? "" : "s");
	return 0;
}

int
ptfilter_string(const struct ptcaps *c, const struct ptfilter *f, int n,
    char *buf, size_t size, struct error *e)
{
	size_t len = 0;
	int i, rc;

	if ((rc = ptfilter_check_count(c, n, e)) < 0)
		return rc;
	if (size > 0)
		buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if ((rc = check_filter(&f[i], i, e)) < 0)
			return rc;
		rc = snprintf(buf + len, size > len ? size - len : 0,
		    "%s%s 0x%" PRIx64 "/0x%" PRIx64 "@%s", i ? "," : "",
		    f[i].stop ? "stop" : "filter", f[i].offset, f[i].size,
		    f[i].path);
		if (rc < 0 || len + (size_t)rc >= size)
			return error_set(e, ERR_RANGE, "filter string longer "
			    "than %zu bytes", size);
		len += (size_t)rc;
	}
	return (int)len;
}

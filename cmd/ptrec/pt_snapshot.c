/* pt_snapshot: see pt_snapshot.h. */
#include "pt_snapshot.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapwrite.h"

/* ---- sideband ------------------------------------------------------------ */

static const char **
record_string(struct ptsb_record *r)
{
	if (r->type == PERF_RECORD_MMAP2)
		return &r->u.mmap.filename;
	if (r->type == PERF_RECORD_COMM)
		return &r->u.comm.comm;
	return NULL;
}

int
pt_sideband_add(const struct ptsb_record *r, void *arg)
{
	struct pt_sideband *sb = arg;
	struct ptsb_record *copy, *grown;
	const char **s;
	char *str;

	if (r->type == PERF_RECORD_LOST) {
		sb->lost += r->u.lost.lost;
		return 0;
	}
	if (sb->n == sb->cap) {
		size_t cap = sb->cap ? 2 * sb->cap : 64;

		if ((grown = realloc(sb->rec, cap * sizeof(*grown))) == NULL)
			return -ERR_NOMEM;
		sb->rec = grown;
		sb->cap = cap;
	}
	copy = &sb->rec[sb->n];
	*copy = *r;
	if ((s = record_string(copy)) != NULL) {
		if ((str = strdup(*s != NULL ? *s : "")) == NULL)
			return -ERR_NOMEM;
		*s = str;
	}
	sb->n++;
	return 0;
}

void
pt_sideband_free(struct pt_sideband *sb)
{
	const char **s;
	size_t i;

	for (i = 0; i < sb->n; i++)
		if ((s = record_string(&sb->rec[i])) != NULL)
			free((char *)*s);
	free(sb->rec);
	memset(sb, 0, sizeof(*sb));
}

/* ---- the snapshot -------------------------------------------------------- */

/* A format/ field as the mask perf keeps in AUXTRACE_INFO. */
static uint64_t
field_mask(const struct ptcaps_pmu *p, enum ptcaps_fmt f, uint64_t dflt)
{
	const struct ptcaps_field *fl = &p->fmt[f];

	if (!fl->present || fl->hi < fl->lo || fl->hi > 63)
		return dflt;
	return (fl->hi - fl->lo == 63 ? ~0ULL :
	    ((1ULL << (fl->hi - fl->lo + 1)) - 1)) << fl->lo;
}

static void
writer_config(const struct pt_run *run, struct perfdata_writer_config *cfg)
{
	const struct ptcaps_pmu *p = &run->caps->pmu;
	uint64_t *v = cfg->pt.priv;

	perfdata_writer_config_default(cfg, 0);
	cfg->pt_config = run->cfg->config;
	cfg->sample_cpu = 1;
	v[PERFDATA_PT_PMU_TYPE] = p->type >= 0 ? (uint64_t)p->type : 0;
	v[PERFDATA_PT_TIME_SHIFT] = run->tc->time_shift;
	v[PERFDATA_PT_TIME_MULT] = run->tc->time_mult;
	v[PERFDATA_PT_TIME_ZERO] = run->tc->time_zero;
	v[PERFDATA_PT_CAP_USER_TIME_ZERO] = run->tc->cap_user_time_zero;
	v[PERFDATA_PT_TSC_BIT] = field_mask(p, PTF_TSC, PERFDATA_PT_CFG_TSC);
	v[PERFDATA_PT_NORETCOMP_BIT] = field_mask(p, PTF_NORETCOMP,
	    PERFDATA_PT_CFG_NORETCOMP);
	v[PERFDATA_PT_MTC_BIT] = field_mask(p, PTF_MTC, PERFDATA_PT_CFG_MTC);
	v[PERFDATA_PT_MTC_FREQ_BITS] = field_mask(p, PTF_MTC_PERIOD,
	    PERFDATA_PT_CFG_MTC_PERIOD_MASK);
	v[PERFDATA_PT_CYC_BIT] = field_mask(p, PTF_CYC, PERFDATA_PT_CFG_CYC);
	v[PERFDATA_PT_SNAPSHOT_MODE] = 1;	/* overwrite-mode AUX rings */
	v[PERFDATA_PT_TSC_CTC_N] = p->has_tsc_art_ratio ? p->tsc_art_num : 0;
	v[PERFDATA_PT_TSC_CTC_D] = p->has_tsc_art_ratio ? p->tsc_art_den : 0;
	v[PERFDATA_PT_MAX_NONTURBO_RATIO] = p->max_nonturbo_ratio > 0 ?
	    (uint64_t)p->max_nonturbo_ratio : 0;
	cfg->pt.filter = (char *)run->filter;
	v[PERFDATA_PT_FILTER_STR_LEN] = run->filter != NULL ?
	    strlen(run->filter) + 1 : 0;
}

/* pt.* from the config used and TIME_CONV. */
static void
pt_facts(const struct pt_run *run, struct snapwrite_pt *pt)
{
	const struct ptcaps_pmu *p = &run->caps->pmu;
	uint64_t c = run->cfg->config;

	memset(pt, 0, sizeof(*pt));
	pt->config = c;
	pt->pmu_type = p->type >= 0 ? (uint32_t)p->type : 0;
	pt->branch = ptconfig_get(p, PTF_BRANCH, c) != 0;
	pt->tsc = ptconfig_get(p, PTF_TSC, c) != 0;
	pt->mtc = ptconfig_get(p, PTF_MTC, c) != 0;
	pt->cyc = ptconfig_get(p, PTF_CYC, c) != 0;
	pt->noretcomp = ptconfig_get(p, PTF_NORETCOMP, c) != 0;
	pt->mtc_period = (uint32_t)ptconfig_get(p, PTF_MTC_PERIOD, c);
	pt->cyc_threshold = (uint32_t)ptconfig_get(p, PTF_CYC_THRESH, c);
	pt->psb_period = (uint32_t)ptconfig_get(p, PTF_PSB_PERIOD, c);
	pt->nom_freq = p->max_nonturbo_ratio > 0 ?
	    (uint32_t)p->max_nonturbo_ratio : 0;
	pt->tsc_ctc_n = p->has_tsc_art_ratio ? p->tsc_art_num : 0;
	pt->tsc_ctc_d = p->has_tsc_art_ratio ? p->tsc_art_den : 0;
	pt->time_shift = run->tc->time_shift;
	pt->time_mult = run->tc->time_mult;
	pt->time_zero = run->tc->time_zero;
	pt->clock = "tsc";
	pt->timing_profile = ptconfig_profile_name(run->cfg->used);
}

/* The last COMM the sideband has for tid, or NULL. */
static const char *
comm_of(const struct pt_sideband *sb, pid_t tid)
{
	const char *name = NULL;
	size_t i;

	for (i = 0; i < sb->n; i++)
		if (sb->rec[i].type == PERF_RECORD_COMM &&
		    sb->rec[i].u.comm.tid == (uint32_t)tid)
			name = sb->rec[i].u.comm.comm;
	return name;
}

int
pt_snapshot_write(const struct pt_run *run, const struct pt_sideband *sb,
    const struct pt_ring *rings, size_t n, const char *dest,
    struct error *e)
{
	const struct rec_options *o = run->opt;
	const struct snapwrite_setting settings[] = {
		{ .key = "budget_bytes", .num = o->budget_bytes, .numeric = 1 },
		{ .key = "repeat", .num = o->repeat, .numeric = 1 },
		{ .key = "cpus", .text = o->cpus },
		{ .key = "filter", .text = run->filter },
		{ .key = "trigger_mode", .text = run->trigger_mode },
		{ .key = "trigger_symbol", .text = o->trigger_symbol },
		{ .key = "trigger_line", .text = o->trigger_line },
	};
	const char *notes[PTCONFIG_MAX_NOTES], *lost[1];
	char lost_msg[128];
	struct snapwrite_counter counters[2];
	struct perfdata_writer_config wcfg;
	struct snapwrite_thread *th;
	struct snapwrite_source src;
	size_t i;
	int rc;

	if ((th = calloc(n + 1, sizeof(*th))) == NULL)
		return error_set(e, ERR_NOMEM, "snapshot");
	memset(&src, 0, sizeof(src));
	src.opt = o;
	src.backend = "pt";
	src.settings = settings;
	src.n_settings = sizeof(settings) / sizeof(settings[0]);
	for (i = 0; i < (size_t)run->cfg->n_notes && i < PTCONFIG_MAX_NOTES;
	    i++)
		notes[i] = run->cfg->notes[i];
	src.notes = notes;
	src.n_notes = i;
	src.cpu = &run->caps->cpu;
	pt_facts(run, &src.pt);
	src.pid = run->pid;
	src.state = run->state;
	src.exit_code = run->exit_code;
	src.signal = run->signal;
	src.host_vdso = 1;
	writer_config(run, &wcfg);
	src.wconfig = &wcfg;
	src.tc = run->tc;
	src.sideband = sb->rec;
	src.n_sideband = sb->n;
	snapwrite_sideband_span(sb->rec, sb->n, &src.start_ns, &src.end_ns);
	for (i = 0; i < n; i++) {
		th[i].tid = rings[i].tid;
		th[i].pid = rings[i].pid;
		th[i].name = comm_of(sb, rings[i].tid);
		th[i].auxtrace_idx = (uint32_t)i;
		th[i].ring_size = rings[i].ring_size;
		th[i].data = rings[i].data;
		th[i].kept = rings[i].kept;
		th[i].reference = src.end_ns;	/* the newest sideband */
		th[i].wrapped = rings[i].wrapped;
		th[i].exited = rings[i].exited;
	}
	src.threads = th;
	src.n_threads = n;
	src.warn_wrapped = 1;
	src.reason = run->reason;
	src.detail = run->detail;
	src.fired_ns = src.end_ns;
	src.start_wall_ns = run->start_wall_ns;
	src.end_wall_ns = src.fired_wall_ns = run->fired_wall_ns;
	counters[0] = (struct snapwrite_counter){ "sideband_records", sb->n };
	counters[1] = (struct snapwrite_counter){ "sideband_lost", sb->lost };
	src.counters = counters;
	src.n_counters = 2;
	if (sb->lost > 0) {
		snprintf(lost_msg, sizeof(lost_msg), "the kernel lost %" PRIu64
		    " sideband records: maps may be missing", sb->lost);
		lost[0] = lost_msg;
		src.warnings = lost;
		src.n_warnings = 1;
	}
	src.output_log = run->output_log;
	rc = snapwrite(&src, dest, e);
	free(th);
	return rc;
}

/* pt_snapshot: see pt_snapshot.h. */
#include "pt_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jit_archive.h"
#include "fmt/manifest.h"
#include "rec/procmaps.h"
#include "rec_manifest.h"
#include "fmt/snapshot.h"

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

/* ---- destination ---------------------------------------------------------- */

int
pt_snapshot_dest(const struct rec_options *o, uint64_t index, char *out,
    size_t size, struct error *e)
{
	char id[SNAPSHOT_ID_LEN + 1], parent[PATH_MAX];
	int rc, n;

	if (o->out_dir != NULL) {
		n = index > 1 ? snprintf(out, size, "%s.%" PRIu64, o->out_dir,
		    index) : snprintf(out, size, "%s", o->out_dir);
		return n > 0 && (size_t)n < size ? 0 :
		    error_set(e, ERR_RANGE, "%s: path too long", o->out_dir);
	}
	if ((rc = snapshot_make_id(id, sizeof(id), time(NULL), e)) < 0)
		return rc;
	if (o->store != NULL) {
		n = snprintf(parent, sizeof(parent), "%s/snapshots", o->store);
		if (n < 0 || (size_t)n >= sizeof(parent))
			return error_set(e, ERR_RANGE, "%s: path too long",
			    o->store);
		if (mkdir(o->store, 0700) < 0 && errno != EEXIST)
			return error_set_errno(e, errno, "%s", o->store);
	} else {
		snprintf(parent, sizeof(parent), "ptkit-snapshots");
	}
	if (mkdir(parent, 0700) < 0 && errno != EEXIST)
		return error_set_errno(e, errno, "%s", parent);
	n = snprintf(out, size, "%s/%s", parent, id);
	return n > 0 && (size_t)n < size ? 0 :
	    error_set(e, ERR_RANGE, "%s: path too long", parent);
}

/* ---- perf.data ------------------------------------------------------------ */

#define MAX_IMAGES 512

struct image_row {
	const char *path;
	struct snapshot_image img;
	int ok;
};

struct writer_ctx {
	const struct pt_run *run;
	const struct pt_sideband *sb;
	const struct pt_ring *rings;
	size_t n_rings;
	struct snapshot *snap;
	struct perfdata_writer *pd;
	struct image_row img[MAX_IMAGES];
	size_t n_img;
};

/* The vDSO is the same in every process of a kernel: ours is theirs. */
static int
archive_vdso(struct snapshot *s, struct snapshot_image *img, struct error *e)
{
	const void *base;
	size_t size;
	int rc;

	if ((rc = procmaps_vdso(&base, &size, e)) < 0)
		return rc;
	return snapshot_archive_memory(s, "[vdso]", base, size, img, e);
}

static const struct image_row *
image_archive(struct writer_ctx *w, const char *path)
{
	struct image_row *r;
	struct error e;
	size_t i;

	for (i = 0; i < w->n_img; i++)
		if (strcmp(w->img[i].path, path) == 0)
			return &w->img[i];
	if (w->n_img == MAX_IMAGES)
		return NULL;
	r = &w->img[w->n_img++];
	r->path = path;
	if (strcmp(path, "[vdso]") == 0)
		r->ok = archive_vdso(w->snap, &r->img, &e) == 0;
	else
		r->ok = snapshot_archive_file(w->snap, path, NULL, &r->img,
		    &e) == 0;
	if (!r->ok)
		manifest_add_warning(&w->snap->manifest, NULL,
		    "image %s not archived: %s", path, e.msg);
	return r;
}

/* MMAP2 in build-id form when the image was archived with one. */
static int
write_mmap(struct writer_ctx *w, const struct ptsb_record *r, struct error *e)
{
	struct perfdata_mmap m = r->u.mmap;
	const struct image_row *im = NULL;

	m.sid = r->sid;
	if (!(m.prot & PROT_EXEC))
		return 0;		/* the decoder walks code only */
	if (m.filename != NULL && (m.filename[0] == '/' ||
	    strcmp(m.filename, "[vdso]") == 0))
		im = image_archive(w, m.filename);
	if (im != NULL && im->ok && im->img.build_id_size > 0) {
		m.build_id_size = (uint8_t)im->img.build_id_size;
		memcpy(m.build_id, im->img.build_id, im->img.build_id_size);
	}
	return perfdata_write_mmap2(w->pd, &m, e);
}

static int
write_record(struct writer_ctx *w, const struct ptsb_record *r,
    struct error *e)
{
	struct perfdata_comm c;
	struct perfdata_task t;
	struct perfdata_itrace_start it;
	struct perfdata_aux a;

	switch (r->type) {
	case PERF_RECORD_MMAP2:
		return write_mmap(w, r, e);
	case PERF_RECORD_COMM:
		c = r->u.comm;
		c.sid = r->sid;
		return perfdata_write_comm(w->pd, &c, e);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		t = r->u.task;
		t.sid = r->sid;
		t.is_fork = r->type == PERF_RECORD_FORK;
		return perfdata_write_task(w->pd, &t, e);
	case PERF_RECORD_ITRACE_START:
		it = r->u.itrace;
		it.sid = r->sid;
		return perfdata_write_itrace_start(w->pd, &it, e);
	case PERF_RECORD_AUX:
		a = r->u.aux;
		a.sid = r->sid;
		return perfdata_write_aux(w->pd, &a, e);
	default:
		return 0;	/* SWITCH: per-thread rings need none */
	}
}

static int
cmp_time(const void *a, const void *b)
{
	const struct ptsb_record *x = *(const struct ptsb_record *const *)a;
	const struct ptsb_record *y = *(const struct ptsb_record *const *)b;

	if (x->sid.time != y->sid.time)
		return x->sid.time < y->sid.time ? -1 : 1;
	return x < y ? -1 : x > y;	/* drain order among equals */
}

/*
 * Each thread's ring is drained on its own; merged by time so every map
 * precedes the trace that needs it.
 */
static int
write_sideband(struct writer_ctx *w, struct error *e)
{
	const struct ptsb_record **order;
	size_t i;
	int rc = 0;

	if ((order = calloc(w->sb->n + 1, sizeof(*order))) == NULL)
		return error_set(e, ERR_NOMEM, "sideband");
	for (i = 0; i < w->sb->n; i++)
		order[i] = &w->sb->rec[i];
	qsort(order, w->sb->n, sizeof(*order), cmp_time);
	for (i = 0; rc == 0 && i < w->sb->n; i++)
		rc = write_record(w, order[i], e);
	free(order);
	return rc;
}

static uint64_t
last_time(const struct pt_sideband *sb)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < sb->n; i++)
		if (sb->rec[i].sid.time > t)
			t = sb->rec[i].sid.time;
	return t;
}

static int
write_traces(struct writer_ctx *w, struct error *e)
{
	struct perfdata_auxtrace a;
	uint64_t ref = last_time(w->sb);
	size_t i;
	int rc;

	for (i = 0; i < w->n_rings; i++) {
		memset(&a, 0, sizeof(a));
		a.reference = ref ? ref : 1;
		a.idx = (uint32_t)i;
		a.tid = (uint32_t)w->rings[i].tid;
		a.cpu = PERFDATA_NO_CPU;
		if ((rc = perfdata_write_auxtrace(w->pd, &a, w->rings[i].data,
		    w->rings[i].kept, e)) < 0)
			return rc;
	}
	return perfdata_write_finished_round(w->pd, e);
}

static int
write_build_ids(struct writer_ctx *w, struct error *e)
{
	size_t i;
	int rc;

	for (i = 0; i < w->n_img; i++) {
		if (!w->img[i].ok || w->img[i].img.build_id_size == 0)
			continue;
		if ((rc = perfdata_writer_add_build_id(w->pd, -1,
		    w->img[i].img.build_id, w->img[i].img.build_id_size,
		    w->img[i].path, e)) < 0)
			return rc;
	}
	return 0;
}

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

static int
write_perf_data(struct writer_ctx *w, struct error *e)
{
	struct perfdata_writer_config cfg;
	int rc;

	writer_config(w->run, &cfg);
	if ((rc = perfdata_writer_open(&w->pd,
	    snapshot_path(w->snap, SNAPSHOT_PERF_DATA), &cfg, e)) < 0)
		return rc;
	if ((rc = perfdata_write_time_conv(w->pd, w->run->tc, e)) < 0 ||
	    (rc = perfdata_write_auxtrace_info(w->pd, e)) < 0 ||
	    (rc = write_sideband(w, e)) < 0 ||
	    (rc = write_traces(w, e)) < 0 ||
	    (rc = write_build_ids(w, e)) < 0) {
		perfdata_writer_abort(w->pd);
		w->pd = NULL;
		return rc;
	}
	rc = perfdata_writer_close(w->pd, e);
	w->pd = NULL;
	return rc;
}

/* ---- the manifest --------------------------------------------------------- */

static int
fill_recorder(struct manifest *m, const struct pt_run *run, struct error *e)
{
	const struct rec_options *o = run->opt;
	int rc, i;

	if ((rc = manifest_set_string(&m->recorder.backend, "pt", e)) < 0 ||
	    (rc = manifest_set_string(&m->recorder.version, PTKIT_VERSION,
	    e)) < 0 ||
	    (rc = rec_manifest_setting(m, "aux_bytes", o->aux_bytes, e)) < 0 ||
	    (rc = rec_manifest_setting(m, "budget_bytes", o->budget_bytes, e)) < 0 ||
	    (rc = rec_manifest_setting(m, "repeat", o->repeat, e)) < 0)
		return rc;
	if (o->cpus != NULL &&
	    (rc = manifest_set_setting(m, "cpus", o->cpus, e)) < 0)
		return rc;
	if (run->filter != NULL &&
	    (rc = manifest_set_setting(m, "filter", run->filter, e)) < 0)
		return rc;
	if (run->trigger_mode != NULL &&
	    (rc = manifest_set_setting(m, "trigger_mode", run->trigger_mode,
	    e)) < 0)
		return rc;
	if (o->trigger_symbol != NULL &&
	    (rc = manifest_set_setting(m, "trigger_symbol", o->trigger_symbol,
	    e)) < 0)
		return rc;
	if (o->trigger_line != NULL &&
	    (rc = manifest_set_setting(m, "trigger_line", o->trigger_line,
	    e)) < 0)
		return rc;
	for (i = 0; i < run->cfg->n_notes; i++)
		if ((rc = manifest_add_warning(m, e, "%s",
		    run->cfg->notes[i])) < 0)
			return rc;
	return 0;
}

static int
fill_pt(struct manifest *m, const struct pt_run *run, struct error *e)
{
	const struct ptcaps_pmu *p = &run->caps->pmu;
	uint64_t c = run->cfg->config;
	int rc;

	m->pt.config = c;
	m->pt.pmu_type = p->type >= 0 ? (uint32_t)p->type : 0;
	m->pt.branch = ptconfig_get(p, PTF_BRANCH, c) != 0;
	m->pt.tsc = ptconfig_get(p, PTF_TSC, c) != 0;
	m->pt.mtc = ptconfig_get(p, PTF_MTC, c) != 0;
	m->pt.cyc = ptconfig_get(p, PTF_CYC, c) != 0;
	m->pt.noretcomp = ptconfig_get(p, PTF_NORETCOMP, c) != 0;
	m->pt.mtc_period = (uint32_t)ptconfig_get(p, PTF_MTC_PERIOD, c);
	m->pt.cyc_threshold = (uint32_t)ptconfig_get(p, PTF_CYC_THRESH, c);
	m->pt.psb_period = (uint32_t)ptconfig_get(p, PTF_PSB_PERIOD, c);
	m->pt.nom_freq = p->max_nonturbo_ratio > 0 ?
	    (uint32_t)p->max_nonturbo_ratio : 0;
	m->pt.tsc_ctc_n = p->has_tsc_art_ratio ? p->tsc_art_num : 0;
	m->pt.tsc_ctc_d = p->has_tsc_art_ratio ? p->tsc_art_den : 0;
	m->pt.time_shift = run->tc->time_shift;
	m->pt.time_mult = run->tc->time_mult;
	m->pt.time_zero = run->tc->time_zero;
	if ((rc = manifest_set_string(&m->pt.clock, "tsc", e)) < 0)
		return rc;
	return manifest_set_string(&m->pt.timing_profile,
	    ptconfig_profile_name(run->cfg->used), e);
}

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

static int
fill_threads(struct manifest *m, const struct pt_sideband *sb,
    const struct pt_ring *rings, size_t n, struct error *e)
{
	struct manifest_thread t;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		memset(&t, 0, sizeof(t));
		t.tid = (uint32_t)rings[i].tid;
		t.pid = (uint32_t)rings[i].pid;
		t.name = (char *)comm_of(sb, rings[i].tid);
		t.auxtrace_idx = (uint32_t)i;
		t.ring_size = rings[i].ring_size;
		t.bytes_kept = rings[i].kept;
		t.wrapped = rings[i].wrapped;
		t.exited = rings[i].exited;
		if ((rc = manifest_add_thread(m, &t, e)) < 0)
			return rc;
		if (rings[i].wrapped && (rc = manifest_add_warning(m, e,
		    "thread %d: its %" PRIu64 "-byte ring wrapped; the trace "
		    "keeps only its newest part", (int)rings[i].tid,
		    rings[i].ring_size)) < 0)
			return rc;
	}
	return 0;
}

static int
fill_capture(struct manifest *m, const struct pt_run *run,
    const struct pt_sideband *sb, struct error *e)
{
	uint64_t start = UINT64_MAX, end = 0;
	size_t i;
	int rc;

	for (i = 0; i < sb->n; i++) {
		if (sb->rec[i].sid.time < start)
			start = sb->rec[i].sid.time;
		if (sb->rec[i].sid.time > end)
			end = sb->rec[i].sid.time;
	}
	m->capture.start_ns = start == UINT64_MAX ? 0 : start;
	m->capture.end_ns = end;
	m->capture.start_wall_ns = run->start_wall_ns;
	m->capture.end_wall_ns = run->fired_wall_ns;
	m->trigger.fired_ns = end;
	m->trigger.fired_wall_ns = run->fired_wall_ns;
	if ((rc = manifest_set_string(&m->trigger.kind, run->reason, e)) < 0)
		return rc;
	if (run->detail != NULL &&
	    (rc = manifest_set_string(&m->trigger.detail, run->detail, e)) < 0)
		return rc;
	if ((rc = manifest_set_counter(m, "sideband_records", sb->n, e)) < 0 ||
	    (rc = manifest_set_counter(m, "sideband_lost", sb->lost, e)) < 0)
		return rc;
	if (sb->lost > 0 && (rc = manifest_add_warning(m, e, "the kernel "
	    "lost %" PRIu64 " sideband records: maps may be missing",
	    sb->lost)) < 0)
		return rc;
	return 0;
}

int
pt_snapshot_write(const struct pt_run *run, const struct pt_sideband *sb,
    const struct pt_ring *rings, size_t n, const char *dest,
    struct error *e)
{
	struct writer_ctx *w;
	struct manifest *m;
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "snapshot");
	w->run = run;
	w->sb = sb;
	w->rings = rings;
	w->n_rings = n;
	if ((rc = snapshot_begin(&w->snap, dest, e)) < 0) {
		free(w);
		return rc;
	}
	m = &w->snap->manifest;
	if ((rc = rec_manifest_host(m, &run->caps->cpu, e)) < 0 ||
	    (rc = fill_recorder(m, run, e)) < 0 ||
	    (rc = fill_pt(m, run, e)) < 0 || (rc = rec_manifest_target(m, run->opt, run->pid,
	    run->exit_code, run->signal, run->state, e)) < 0 ||
	    (rc = write_perf_data(w, e)) < 0 ||
	    (rc = fill_threads(m, sb, rings, n, e)) < 0 ||
	    (rc = fill_capture(m, run, sb, e)) < 0 ||
	    (run->pid > 0 && (rc = rec_jit_archive_map(w->snap, run->pid, NULL,
	    e)) < 0) ||
	    (run->output_log != NULL && (rc = snapshot_copy_in(w->snap,
	    SNAPSHOT_OUTPUT_LOG, run->output_log, e)) < 0)) {
		snapshot_abort(w->snap);
		free(w);
		return rc;
	}
	rc = snapshot_commit(w->snap, e);
	free(w);
	return rc;
}

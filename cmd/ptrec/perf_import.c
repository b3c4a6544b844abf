/* perf_import: see perf_import.h. */
#include "perf_import.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_archive.h"
#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "rec_manifest.h"
#include "fmt/snapshot.h"

static const struct perfdata_build_id *
recorded_build_id(const struct perfdata *pd, const char *path)
{
	size_t i;

	for (i = 0; i < pd->nr_build_ids; i++)
		if (pd->build_ids[i].filename != NULL &&
		    strcmp(pd->build_ids[i].filename, path) == 0)
			return &pd->build_ids[i];
	return NULL;
}

/* Archives one mapped file; what cannot be archived is a warning. */
static int
archive_one(struct snapshot *s, const struct perfdata *pd, const char *path,
    unsigned *archived, struct error *e)
{
	const struct perfdata_build_id *was;
	struct snapshot_image img;
	struct error ae;

	if (manifest_find_image(&s->manifest, path) != NULL)
		return 0;
	if (snapshot_archive_file(s, path, NULL, &img, &ae) < 0)
		return manifest_add_warning(&s->manifest, e, "image %s not "
		    "archived: %s", path, ae.msg);
	(*archived)++;
	was = recorded_build_id(pd, path);
	if (was != NULL && (was->size != img.build_id_size ||
	    memcmp(was->id, img.build_id, img.build_id_size) != 0))
		return manifest_add_warning(&s->manifest, e, "image %s: its "
		    "build-id changed since perf recorded it", path);
	return 0;
}

static int
archive_images(struct snapshot *s, const struct perfdata *pd,
    struct error *e)
{
	unsigned archived = 0;
	size_t i;
	int rc;

	for (i = 0; i < pd->nr_mmaps; i++) {
		const char *f = pd->mmaps[i].filename;

		if (f == NULL || f[0] != '/')
			continue;	/* [vdso], anonymous, [kernel.kallsyms] */
		if (pd->mmaps[i].is_mmap2 && !(pd->mmaps[i].prot & 4))
			continue;	/* data: the decoder walks code only */
		if ((rc = archive_one(s, pd, f, &archived, e)) < 0)
			return rc;
	}
	return manifest_set_counter(&s->manifest, "images_archived", archived,
	    e);
}

static int
fill_recorder(struct manifest *m, const struct perf_import_run *run,
    struct error *e)
{
	char buf[32];
	int rc;

	if ((rc = manifest_set_string(&m->recorder.backend, "perf", e)) < 0 ||
	    (rc = manifest_set_string(&m->recorder.version, PTKIT_VERSION,
	    e)) < 0)
		return rc;
	snprintf(buf, sizeof(buf), "%" PRIu64, run->opt->aux_bytes);
	if ((rc = manifest_set_setting(m, "aux_bytes", buf, e)) < 0)
		return rc;
	if (run->perf_version != NULL && (rc = manifest_set_setting(m,
	    "perf_version", run->perf_version, e)) < 0)
		return rc;
	return 0;
}

/* pt.* from the file; a perf.data without intel_pt leaves them zero. */
static int
fill_pt(struct manifest *m, const struct perfdata *pd, struct error *e)
{
	struct perfdata_pt_timing t;
	struct error te;

	if (perfdata_pt_timing(pd, &t, &te) < 0)
		return manifest_add_warning(m, e, "the perf.data has no "
		    "intel_pt trace: %s", te.msg);
	m->pt.config = t.config;
	m->pt.pmu_type = (uint32_t)pd->pt.priv[PERFDATA_PT_PMU_TYPE];
	m->pt.branch = (t.config & PERFDATA_PT_CFG_BRANCH) != 0;
	m->pt.tsc = t.tsc;
	m->pt.mtc = t.mtc;
	m->pt.cyc = t.cyc;
	m->pt.noretcomp = t.noretcomp;
	m->pt.mtc_period = t.mtc_freq;
	m->pt.cyc_threshold = (uint32_t)((t.config >>
	    PERFDATA_PT_CFG_CYC_THRESH_SHIFT) & 0xf);
	m->pt.psb_period = (uint32_t)((t.config >>
	    PERFDATA_PT_CFG_PSB_PERIOD_SHIFT) & 0xf);
	m->pt.nom_freq = t.max_nonturbo_ratio;
	m->pt.tsc_ctc_n = t.tsc_ctc_n;
	m->pt.tsc_ctc_d = t.tsc_ctc_d;
	m->pt.time_shift = pd->time_conv.time_shift;
	m->pt.time_mult = pd->time_conv.time_mult;
	m->pt.time_zero = pd->time_conv.time_zero;
	return manifest_set_string(&m->pt.clock, "tsc", e);
}

static const char *
comm_of(const struct perfdata *pd, uint32_t tid)
{
	const char *name = NULL;
	size_t i;

	for (i = 0; i < pd->nr_comms; i++)
		if (pd->comms[i].tid == tid)
			name = pd->comms[i].comm;
	return name;
}

static int
fill_threads(struct manifest *m, const struct perfdata *pd,
    const struct perf_import_run *run, struct error *e)
{
	struct manifest_thread t;
	size_t i;
	int rc;

	for (i = 0; i < pd->nr_queues; i++) {
		memset(&t, 0, sizeof(t));
		t.tid = pd->queues[i].tid;
		t.pid = (uint32_t)run->pid;
		t.name = (char *)comm_of(pd, t.tid);
		t.auxtrace_idx = pd->queues[i].idx;
		t.ring_size = run->opt->aux_bytes;
		t.bytes_kept = pd->queues[i].total_size;
		if ((rc = manifest_add_thread(m, &t, e)) < 0)
			return rc;
	}
	return 0;
}

static int
fill_target(struct manifest *m, const struct perf_import_run *run,
    struct error *e)
{
	int rc;

	if ((rc = rec_manifest_target(m, run->opt, run->pid, run->exit_code,
	    run->signal, run->state, e)) < 0)
		return rc;
	m->capture.start_wall_ns = run->start_wall_ns;
	m->capture.end_wall_ns = run->fired_wall_ns;
	m->trigger.fired_wall_ns = run->fired_wall_ns;
	if ((run->detail != NULL && (rc = manifest_set_string(
	    &m->trigger.detail, run->detail, e)) < 0) ||
	    (run->filter != NULL && (rc = manifest_set_setting(m, "filter",
	    run->filter, e)) < 0))
		return rc;
	return manifest_set_string(&m->trigger.kind, run->reason, e);
}

int
perf_import(const struct perf_import_run *run, const char *perf_data,
    const char *dest, struct error *e)
{
	struct perfdata *pd;
	struct snapshot *s;
	struct manifest *m;
	int rc;

	if ((rc = perfdata_read(&pd, perf_data, e)) < 0)
		return rc;
	if ((rc = snapshot_begin(&s, dest, e)) < 0) {
		perfdata_free(pd);
		return rc;
	}
	m = &s->manifest;
	if ((rc = snapshot_copy_in(s, SNAPSHOT_PERF_DATA, perf_data, e)) < 0 ||
	    (run->output_log != NULL && (rc = snapshot_copy_in(s,
	    SNAPSHOT_OUTPUT_LOG, run->output_log, e)) < 0) ||
	    (rc = rec_manifest_host(m, &run->caps->cpu, e)) < 0 ||
	    (rc = fill_recorder(m, run, e)) < 0 ||
	    (rc = fill_pt(m, pd, e)) < 0 ||
	    (rc = fill_threads(m, pd, run, e)) < 0 ||
	    (rc = fill_target(m, run, e)) < 0 ||
	    (run->pid > 0 && (rc = rec_jit_archive_map(s, run->pid, NULL,
	    e)) < 0) ||
	    (rc = archive_images(s, pd, e)) < 0) {
		snapshot_abort(s);
		perfdata_free(pd);
		return rc;
	}
	perfdata_free(pd);
	return snapshot_commit(s, e);
}

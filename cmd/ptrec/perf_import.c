/* perf_import: see perf_import.h. */
#include "perf_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/perfdata.h"
#include "snapwrite.h"

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

/*
 * The code files perf's MMAP records name, with the build-ids perf saw,
 * in a malloc'd array (NULL when out of memory) of *n.
 */
static struct snapwrite_image *
mapped_images(const struct perfdata *pd, size_t *n)
{
	struct snapwrite_image *im = calloc(pd->nr_mmaps + 1, sizeof(*im));
	const struct perfdata_build_id *was;

	*n = 0;
	for (size_t i = 0; im != NULL && i < pd->nr_mmaps; i++) {
		const char *f = pd->mmaps[i].filename;

		if (f == NULL || f[0] != '/')
			continue;	/* [vdso], anonymous, [kernel.kallsyms] */
		if (pd->mmaps[i].is_mmap2 && !(pd->mmaps[i].prot & 4))
			continue;	/* data: the decoder walks code only */
		im[*n].path = f;
		if ((was = recorded_build_id(pd, f)) != NULL) {
			im[*n].build_id = was->id;
			im[*n].build_id_size = was->size;
		}
		(*n)++;
	}
	return im;
}

/*
 * pt.* from the file; a perf.data without intel_pt leaves them zero and
 * note says why.
 */
static void
pt_facts(const struct perfdata *pd, struct snapwrite_pt *pt, char *note,
    size_t size)
{
	struct perfdata_pt_timing t;
	struct error te;

	memset(pt, 0, sizeof(*pt));
	note[0] = '\0';
	if (perfdata_pt_timing(pd, &t, &te) < 0) {
		snprintf(note, size, "the perf.data has no intel_pt trace: %s",
		    te.msg);
		return;
	}
	pt->config = t.config;
	pt->pmu_type = (uint32_t)pd->pt.priv[PERFDATA_PT_PMU_TYPE];
	pt->branch = (t.config & PERFDATA_PT_CFG_BRANCH) != 0;
	pt->tsc = t.tsc;
	pt->mtc = t.mtc;
	pt->cyc = t.cyc;
	pt->noretcomp = t.noretcomp;
	pt->mtc_period = t.mtc_freq;
	pt->cyc_threshold = (uint32_t)((t.config >>
	    PERFDATA_PT_CFG_CYC_THRESH_SHIFT) & 0xf);
	pt->psb_period = (uint32_t)((t.config >>
	    PERFDATA_PT_CFG_PSB_PERIOD_SHIFT) & 0xf);
	pt->nom_freq = t.max_nonturbo_ratio;
	pt->tsc_ctc_n = t.tsc_ctc_n;
	pt->tsc_ctc_d = t.tsc_ctc_d;
	pt->time_shift = pd->time_conv.time_shift;
	pt->time_mult = pd->time_conv.time_mult;
	pt->time_zero = pd->time_conv.time_zero;
	pt->clock = "tsc";
}

/* The last COMM perf recorded for tid, or NULL. */
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

/* One thread row per AUXTRACE queue perf wrote. */
static int
queue_threads(const struct perfdata *pd, const struct perf_import_run *run,
    struct snapwrite_thread **out, struct error *e)
{
	struct snapwrite_thread *t;
	size_t i;

	if ((*out = t = calloc(pd->nr_queues + 1, sizeof(*t))) == NULL)
		return error_set(e, ERR_NOMEM, "threads");
	for (i = 0; i < pd->nr_queues; i++) {
		t[i].tid = (int)pd->queues[i].tid;
		t[i].pid = run->pid;
		t[i].name = comm_of(pd, pd->queues[i].tid);
		t[i].auxtrace_idx = pd->queues[i].idx;
		t[i].ring_size = run->opt->aux_bytes;
		t[i].kept = pd->queues[i].total_size;
	}
	return 0;
}

int
perf_import(const struct perf_import_run *run, const char *perf_data,
    const char *dest, struct error *e)
{
	const struct snapwrite_setting settings[] = {
		{ .key = "perf_version", .text = run->perf_version },
		{ .key = "filter", .text = run->filter },
	};
	char note[ERROR_MSG_MAX + 64];
	const char *notes[1] = { note };
	struct snapwrite_source src;
	struct snapwrite_thread *threads = NULL;
	struct snapwrite_image *images = NULL;
	struct perfdata *pd;
	size_t n_images;
	int rc;

	if ((rc = perfdata_read(&pd, perf_data, e)) < 0)
		return rc;
	if ((images = mapped_images(pd, &n_images)) == NULL) {
		rc = error_set(e, ERR_NOMEM, "images");
		goto out;
	}
	if ((rc = queue_threads(pd, run, &threads, e)) < 0)
		goto out;
	memset(&src, 0, sizeof(src));
	src.opt = run->opt;
	src.backend = "perf";
	src.settings = settings;
	src.n_settings = sizeof(settings) / sizeof(settings[0]);
	pt_facts(pd, &src.pt, note, sizeof(note));
	src.notes = notes;
	src.n_notes = note[0] != '\0';
	src.cpu = &run->caps->cpu;
	src.pid = run->pid;
	src.state = run->state;
	src.exit_code = run->exit_code;
	src.signal = run->signal;
	src.perf_data = perf_data;
	src.images = images;
	src.n_images = n_images;
	src.threads = threads;
	src.n_threads = pd->nr_queues;
	src.reason = run->reason;
	src.detail = run->detail;
	src.start_wall_ns = run->start_wall_ns;
	src.end_wall_ns = src.fired_wall_ns = run->fired_wall_ns;
	src.output_log = run->output_log;
	rc = snapwrite(&src, dest, e);
out:
	free(images);
	free(threads);
	perfdata_free(pd);
	return rc;
}

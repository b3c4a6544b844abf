/* rec_pt: see rec_pt.h. */
#include "rec_pt.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procmaps.h"
#include "pt_snapshot.h"
#include "ptcaps.h"
#include "ptconfig.h"
#include "ptevent.h"
#include "pttrace.h"
#include "report.h"
#include "verdict.h"

#define TOOL "ptrec"

/*
 * SIGINT/SIGTERM ask for the snapshot now: a signal handler can only
 * leave a flag, so this is the recorder's one piece of global state.
 */
static volatile sig_atomic_t stop_requested;

static void
on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct pt_thread {
	struct ptevent ev;
	pid_t tid;
	int exited;
};

struct pt_rec {
	const struct rec_options *o;
	struct ptcaps *caps;
	struct ptconfig cfg;
	struct ptring_plan plan;
	struct pttrace t;
	struct pt_thread *th;
	size_t n_th, cap_th;
	uint64_t aux_used;
	unsigned untraced;
	struct pt_sideband sb;
	struct perfdata_time_conv tc;
	int have_tc;
	struct error err;	/* why a callback failed */
};

static uint64_t
wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static enum ptconfig_profile
profile_of(enum rec_timing t)
{
	switch (t) {
	case TIMING_LOW: return PTCONFIG_LOW;
	case TIMING_HIGH: return PTCONFIG_HIGH;
	case TIMING_CONFIG: return PTCONFIG_RAW;
	default: return PTCONFIG_NORMAL;
	}
}

static int
drain_all(struct pt_rec *r, struct error *e)
{
	size_t i;
	int rc;

	for (i = 0; i < r->n_th; i++)
		if ((rc = ptevent_drain(&r->th[i].ev, pt_sideband_add, &r->sb,
		    e)) < 0)
			return rc;
	return 0;
}

/*
 * The mappings and name the kernel made before the event existed
 * (notes/recorder.md §3.2), as records at time 0 so they precede all.
 */
static int
initial_records(struct pt_rec *r, pid_t pid, pid_t tid, struct error *e)
{
	struct procmaps maps;
	struct ptsb_record rec;
	char path[64], comm[32] = "";
	FILE *f;
	size_t i;
	int rc = 0;

	if ((rc = procmaps_read(pid, 1, &maps, e)) < 0)
		return rc;
	for (i = 0; rc == 0 && i < maps.n; i++) {
		memset(&rec, 0, sizeof(rec));
		rec.type = PERF_RECORD_MMAP2;
		procmaps_to_mmap(&maps.v[i], (uint32_t)pid, (uint32_t)tid,
		    &rec.u.mmap);
		rec.sid.pid = (uint32_t)pid;
		rec.sid.tid = (uint32_t)tid;
		rec.sid.cpu = PERFDATA_NO_CPU;
		if (pt_sideband_add(&rec, &r->sb) < 0)
			rc = error_set(e, ERR_NOMEM, "sideband");
	}
	procmaps_free(&maps);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tid);
	if (rc == 0 && (f = fopen(path, "re")) != NULL) {
		if (fgets(comm, sizeof(comm), f) != NULL)
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		memset(&rec, 0, sizeof(rec));
		rec.type = PERF_RECORD_COMM;
		rec.sid.pid = rec.u.comm.pid = (uint32_t)pid;
		rec.sid.tid = rec.u.comm.tid = (uint32_t)tid;
		rec.sid.cpu = PERFDATA_NO_CPU;
		rec.u.comm.exec = 1;
		rec.u.comm.comm = comm;
		if (pt_sideband_add(&rec, &r->sb) < 0)
			rc = error_set(e, ERR_NOMEM, "sideband");
	}
	return rc;
}

/* pttrace: a thread before its first instruction gets its event. */
static int
thread_new(pid_t tid, void *arg)
{
	struct pt_rec *r = arg;
	struct ptevent_spec spec;
	struct pt_thread *th;
	uint64_t aux = ptring_next_aux(&r->plan, r->aux_used);
	int rc;

	if (aux == 0) {
		r->untraced++;
		return 0;
	}
	if (r->n_th == r->cap_th) {
		size_t cap = r->cap_th ? 2 * r->cap_th : 16;

		if ((th = realloc(r->th, cap * sizeof(*th))) == NULL)
			return error_set(&r->err, ERR_NOMEM, "threads");
		r->th = th;
		r->cap_th = cap;
	}
	th = &r->th[r->n_th];
	memset(th, 0, sizeof(*th));
	memset(&spec, 0, sizeof(spec));
	spec.type = (uint32_t)r->caps->pmu.type;
	spec.config = r->cfg.config;
	spec.data_bytes = r->plan.base_bytes - PTRING_PAGE;
	spec.aux_bytes = aux;
	if ((rc = ptevent_open(&th->ev, tid, &spec, &r->err)) < 0 ||
	    (rc = ptevent_enable(&th->ev, &r->err)) < 0) {
		ptevent_close(&th->ev);
		return rc;
	}
	th->tid = tid;
	r->n_th++;
	r->aux_used += aux + r->plan.base_bytes;
	if (!r->have_tc) {
		struct error te;

		/* Without cap_user_time_zero tc is still the best we have. */
		rc = ptevent_time_conv(&th->ev, &r->tc, &te);
		r->have_tc = rc == 0;
		if (rc < 0 && rc != -ERR_UNSUPPORTED)
			memset(&r->tc, 0, sizeof(r->tc));
	}
	return 0;
}

static void
thread_exit(pid_t tid, int status, void *arg)
{
	struct pt_rec *r = arg;
	size_t i;

	(void)status;
	for (i = 0; i < r->n_th; i++)
		if (r->th[i].tid == tid)
			r->th[i].exited = 1;
}

static void
free_threads(struct pt_rec *r)
{
	size_t i;

	for (i = 0; i < r->n_th; i++)
		ptevent_close(&r->th[i].ev);
	free(r->th);
	r->th = NULL;
	r->n_th = 0;
}

/* Disables every event, copies the rings and writes one snapshot. */
static int
take_snapshot(struct pt_rec *r, const char *reason, uint64_t start_wall)
{
	struct pt_ring *rings;
	struct pt_run run;
	struct error e;
	char dest[PATH_MAX];
	size_t i, n = 0;
	int rc = 0, truncated;

	if ((rings = calloc(r->n_th + 1, sizeof(*rings))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	for (i = 0; i < r->n_th; i++)
		if (ptevent_disable(&r->th[i].ev, &e) < 0 && !r->th[i].exited)
			report_warning(TOOL, "snapshot", "thread %d: %s",
			    (int)r->th[i].tid, e.msg);
	if (drain_all(r, &e) < 0)
		report_warning(TOOL, "sideband", "%s", e.msg);
	for (i = 0; rc == 0 && i < r->n_th; i++) {
		struct pt_ring *g = &rings[n];
		uint8_t *buf = malloc(r->th[i].ev.aux.size ?
		    r->th[i].ev.aux.size : 1);

		if (buf == NULL) {
			rc = -ERR_NOMEM;
			break;
		}
		truncated = 0;
		g->kept = ptevent_snapshot(&r->th[i].ev, buf, &truncated);
		g->data = buf;
		g->tid = r->th[i].tid;
		g->pid = r->t.pid;
		g->ring_size = r->th[i].ev.aux.size;
		g->wrapped = truncated;
		g->exited = r->th[i].exited;
		n++;
	}
	memset(&run, 0, sizeof(run));
	run.opt = r->o;
	run.caps = r->caps;
	run.cfg = &r->cfg;
	run.tc = &r->tc;
	run.pid = r->t.pid;
	run.state = !r->t.done ? "running" : r->t.term_signal ? "signaled" :
	    "exited";
	run.exit_code = r->t.exit_code;
	run.signal = r->t.term_signal;
	run.reason = reason;
	run.start_wall_ns = start_wall;
	run.fired_wall_ns = wall_ns();
	if (rc == 0 && (rc = pt_snapshot_dest(r->o, 1, dest, sizeof(dest),
	    &e)) == 0)
		rc = pt_snapshot_write(&run, &r->sb, rings, n, dest, &e);
	for (i = 0; i < n; i++)
		free((void *)rings[i].data);
	free(rings);
	if (rc < 0) {
		report_error(TOOL, "snapshot", &e, NULL);
		return EXIT_FAIL;
	}
	printf("%s\n", dest);
	return EXIT_OK;
}

static int
prepare(struct pt_rec *r, struct error *e)
{
	int rc;

	if ((r->caps = malloc(sizeof(*r->caps))) == NULL)
		return error_set(e, ERR_NOMEM, "caps");
	if ((rc = ptcaps_probe(r->caps, assess_root(r->o), PTCAPS_NO_TOOLS,
	    e)) < 0 ||
	    (rc = ptconfig_build(r->caps, profile_of(r->o->timing),
	    r->o->timing_config, &r->cfg, e)) < 0 ||
	    (rc = ptring_plan(r->caps, r->o->aux_bytes, r->o->budget_bytes,
	    &r->plan, e)) < 0)
		return rc;
	if (r->plan.warning[0] != '\0')
		report_warning(TOOL, "--aux-bytes", "%s", r->plan.warning);
	return 0;
}

/* Steps the program until it ends, a deadline passes or we are asked. */
static const char *
follow(struct pt_rec *r, struct error *e)
{
	const struct rec_options *o = r->o;
	uint64_t start = mono_ms(), deadline = UINT64_MAX;
	const char *kind = "after-ms";
	int rc;

	if (o->has_after_ms)
		deadline = start + o->after_ms;
	if (o->has_max_capture_ms && start + o->max_capture_ms < deadline) {
		deadline = start + o->max_capture_ms;
		kind = "max-capture-ms";
	}
	for (;;) {
		if (stop_requested)
			return "signal";
		if (mono_ms() >= deadline)
			return kind;
		rc = pttrace_step(&r->t, 1, e);
		if (rc < 0)
			return NULL;
		if (rc == PTTRACE_DONE)
			return "exit";
		if (drain_all(r, e) < 0)
			return NULL;
		if (rc == PTTRACE_IDLE)
			usleep(1000);
	}
}

static void
catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int
start(struct pt_rec *r, struct error *e)
{
	const struct pttrace_ops ops = {
		.thread_new = thread_new, .thread_exit = thread_exit, .arg = r,
	};
	cpu_set_t cpus;
	int rc;

	if (r->o->pid != 0) {
		rc = pttrace_attach(&r->t, (pid_t)r->o->pid, &ops, e);
		if (rc < 0 && r->err.code != 0)
			*e = r->err;	/* thread_new's reason */
		if (rc == 0 &&
		    (rc = initial_records(r, r->t.pid, r->t.pid, e)) < 0)
			pttrace_detach(&r->t, &r->err);
		return rc;
	}
	if (r->o->cpus != NULL &&
	    (rc = pttrace_parse_cpus(r->o->cpus, &cpus, e)) < 0)
		return rc;
	rc = pttrace_launch(&r->t, r->o->program, r->o->cpus ? &cpus : NULL,
	    &ops, e);
	if (rc < 0 && r->err.code != 0)
		*e = r->err;	/* thread_new's reason */
	if (rc == 0 && (rc = initial_records(r, r->t.pid, r->t.pid, e)) < 0)
		pttrace_kill(&r->t);
	return rc;
}

int
rec_pt_run(const struct rec_options *o)
{
	struct pt_rec *r;
	struct error e;
	const char *reason;
	uint64_t start_wall = wall_ns();
	int status = EXIT_FAIL;

	if (strcmp(assess_root(o), "/") != 0 && assess_root(o)[0] != '\0') {
		/* A fake tree's caps would configure the real kernel wrongly. */
		report(TOOL, "--recorder pt", "use --sysroot and PTKIT_SYSROOT "
		    "only with --doctor", "%s is not this machine's root: "
		    "recording needs the real /sys and /proc", assess_root(o));
		return EXIT_FAIL;
	}
	if (o->n_filters > 0 || o->trigger_symbol != NULL ||
	    o->trigger_line != NULL || o->repeat > 1) {
		report(TOOL, "--recorder pt", "use --recorder emu for filters, "
		    "symbol/line triggers and --repeat", "the pt recorder does "
		    "not take filters, symbol or line triggers or --repeat yet");
		return EXIT_FAIL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	r->o = o;
	memset(&e, 0, sizeof(e));
	if (prepare(r, &e) < 0 || start(r, &e) < 0) {
		report_error(TOOL, o->pid ? "--pid" : o->program[0], &e, NULL);
		goto out;
	}
	catch_stop_signals();
	reason = follow(r, &e);
	if (reason == NULL) {
		report_error(TOOL, "recording", &e, NULL);
		if (o->pid != 0)
			pttrace_detach(&r->t, &e);
		else
			pttrace_kill(&r->t);
		goto out;
	}
	if (r->untraced > 0)
		report_warning(TOOL, "--budget-bytes", "%u threads went untraced:"
		    " the ring budget was spent", r->untraced);
	status = take_snapshot(r, reason, start_wall);
	if (o->pid != 0)
		pttrace_detach(&r->t, &e);
	else if (!r->t.done)
		pttrace_kill(&r->t);
	else
		pttrace_free(&r->t);
out:
	free_threads(r);
	pt_sideband_free(&r->sb);
	free(r->caps);
	free(r);
	return status;
}

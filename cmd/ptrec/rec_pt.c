/* rec_pt: see rec_pt.h. */
#include "rec_pt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clockns.h"
#include "capture.h"
#include "elfsym.h"
#include "rec/procmaps.h"
#include "pt_snapshot.h"
#include "snapwrite.h"
#include "rec/ptcaps.h"
#include "rec/ptconfig.h"
#include "rec/ptevent.h"
#include "rec/pttrace.h"
#include "tool/report.h"
#include "base/scratch.h"
#include "base/signals.h"
#include "verdict.h"

#define TOOL "ptrec"
/* sig_data of our breakpoints: tells their SIGTRAP from the program's. */
#define BP_COOKIE REC_PT_BP_COOKIE

/*
 * SIGINT/SIGTERM ask for the snapshot now: a signal handler can only
 * leave a flag, so this is the recorder's one piece of global state.
 */
static volatile sig_atomic_t stop_requested;

static void
on_stop_signal(int sig)
{
	stop_requested = sig;
}

struct pt_thread {
	struct ptevent ev;
	pid_t tid;
	int exited;
	int bp_fd;		/* the symbol trigger's breakpoint, or -1 */
};

struct pt_rec {
	const struct rec_options *o;
	const struct rec_pt_events *k;	/* the kernel side */
	const struct ptcaps *caps;
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

	char program[PATH_MAX];	/* realpath of the program's file */
	struct capture_filters filters;
	char filter[4096];	/* the kernel's filter string, or "" */
	struct capture_policy pol;
	struct capture_lines lines;
	enum capture_bp_mode bp_mode;
	uint64_t trig_off;	/* the trigger symbol's file offset */
	uint64_t trig_addr;	/* and runtime address, 0 until known */
	uint64_t hits;
	struct scratch scr;
	char log_path[PATH_MAX];	/* output.log, "" with --pid */
	int log_fd;
	int out[2];		/* the program's stdout and stderr, or -1 */
	int ctl_fd;		/* --control FIFO, or -1 */
	char ctlbuf[256];
	size_t ctllen;
	const char *ctl_end;	/* "control" (stop) or "cancel", or NULL */
	int off;		/* the last snapshot is written */
	int in_snapshot;	/* take_snapshot is running */
	int ending;		/* finish: the next snapshot is the last */
	int failed;		/* a snapshot could not be written */
	int log_failed;		/* output.log could not be written */
	uint64_t start_wall;
};

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
		if ((rc = r->k->drain(&r->th[i].ev, pt_sideband_add, &r->sb,
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

static void free_threads(struct pt_rec *r);

/* The trigger symbol's runtime address in the program (once). */
static int
trigger_address(struct pt_rec *r, pid_t pid)
{
	struct procmaps maps;
	int rc;

	if (r->trig_addr != 0)
		return 0;
	if ((rc = procmaps_read(pid, 1, &maps, &r->err)) < 0)
		return rc;
	r->trig_addr = capture_runtime_addr(&maps, r->program, r->trig_off);
	procmaps_free(&maps);
	if (r->trig_addr == 0)
		return error_set(&r->err, ERR_NOTFOUND, "--trigger-symbol %s: "
		    "file offset 0x%" PRIx64 " of %s is not mapped in process "
		    "%d", r->o->trigger_symbol, r->trig_off, r->program,
		    (int)pid);
	return 0;
}

/*
 * The symbol trigger on thread th (notes/recorder.md §6): in its PT
 * event's group with aux_pause, or a sigtrap breakpoint that parks it.
 * A kernel that refuses aux_pause gets the parking kind, said once.
 */
static int
arm_trigger(struct pt_rec *r, struct pt_thread *th)
{
	struct error e;
	int fd;

	if (r->bp_mode == CAPTURE_BP_NONE)
		return 0;
	if (trigger_address(r, r->t.pid ? r->t.pid : th->tid) < 0)
		return -r->err.code;
	if (r->bp_mode == CAPTURE_BP_PAUSE) {
		fd = r->k->breakpoint_pause(th->tid, r->trig_addr, r->hits,
		    th->ev.fd, &e);
		if (fd >= 0) {
			th->bp_fd = fd;
			return 0;
		}
		report_warning(TOOL, "--trigger-symbol", "%s; %s instead",
		    e.msg, capture_bp_mode_text(CAPTURE_BP_PARK));
		r->bp_mode = CAPTURE_BP_PARK;
	}
	fd = r->k->breakpoint(th->tid, r->trig_addr, r->hits, BP_COOKIE,
	    &r->err);
	if (fd < 0)
		return error_prefix(&r->err, "--trigger-symbol %s",
		    r->o->trigger_symbol);
	th->bp_fd = fd;
	return 0;
}

static void
close_thread(struct pt_rec *r, struct pt_thread *th)
{
	if (th->bp_fd >= 0)
		close(th->bp_fd);
	th->bp_fd = -1;
	r->k->close(&th->ev);
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

	if (r->off)
		return 0;	/* the last snapshot is written */
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
	th->bp_fd = -1;
	th->tid = tid;
	memset(&spec, 0, sizeof(spec));
	spec.type = (uint32_t)r->caps->pmu.type;
	spec.config = r->cfg.config;
	spec.data_bytes = r->plan.base_bytes - PTRING_PAGE;
	spec.aux_bytes = aux;
	spec.filter = r->filter[0] != '\0' ? r->filter : NULL;
	if ((rc = r->k->open(&th->ev, tid, &spec, &r->err)) < 0 ||
	    (rc = arm_trigger(r, th)) < 0 ||
	    (rc = r->k->enable(&th->ev, &r->err)) < 0) {
		close_thread(r, th);
		/* The run ends: pttrace may let the program go at once. */
		free_threads(r);
		return rc;
	}
	r->n_th++;
	r->aux_used += aux + r->plan.base_bytes;
	if (!r->have_tc) {
		struct error te;

		/* Without cap_user_time_zero tc is still the best we have. */
		rc = r->k->time_conv(&th->ev, &r->tc, &te);
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
		close_thread(r, &r->th[i]);
	free(r->th);
	r->th = NULL;
	r->n_th = 0;
}

static void drain_output(struct pt_rec *r, int triggers, int max);

/* What the manifest's trigger.detail names for reason. */
static const char *
detail_of(const struct pt_rec *r, const char *reason)
{
	if (strcmp(reason, "symbol") == 0)
		return r->o->trigger_symbol;
	if (strcmp(reason, "line") == 0)
		return r->o->trigger_line;
	if (strcmp(reason, "tail") == 0)
		return r->o->trigger_symbol != NULL ? r->o->trigger_symbol :
		    r->o->trigger_line;
	return NULL;
}

/* Copies every ring (events disabled) and writes snapshot number index. */
static int
write_rings(struct pt_rec *r, const char *reason, uint64_t index,
    char *dest, size_t size, struct error *e)
{
	struct pt_ring *rings;
	struct pt_run run;
	size_t i, n = 0;
	int rc = 0, truncated;

	if ((rings = calloc(r->n_th + 1, sizeof(*rings))) == NULL)
		return error_set(e, ERR_NOMEM, "rings");
	for (i = 0; rc == 0 && i < r->n_th; i++) {
		struct pt_ring *g = &rings[n];
		uint8_t *buf = malloc(r->th[i].ev.aux.size ?
		    r->th[i].ev.aux.size : 1);

		if (buf == NULL) {
			rc = error_set(e, ERR_NOMEM, "ring copy");
			break;
		}
		truncated = 0;
		g->kept = r->k->snapshot(&r->th[i].ev, buf, &truncated);
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
	run.filter = r->filter[0] != '\0' ? r->filter : NULL;
	run.trigger_mode = capture_bp_mode_name(r->bp_mode);
	run.pid = r->t.pid;
	run.state = !r->t.done ? "running" : r->t.term_signal ? "signaled" :
	    "exited";
	run.exit_code = r->t.exit_code;
	run.signal = r->t.term_signal;
	run.reason = reason;
	run.detail = detail_of(r, reason);
	run.start_wall_ns = r->start_wall;
	run.fired_wall_ns = clock_ns(CLOCK_REALTIME);
	run.output_log = r->log_path[0] != '\0' ? r->log_path : NULL;
	if (rc == 0 && (rc = snapwrite_dest(r->o, index, dest, size,
	    e)) == 0)
		rc = pt_snapshot_write(&run, &r->sb, rings, n, dest, e);
	for (i = 0; i < n; i++)
		free((void *)rings[i].data);
	free(rings);
	return rc;
}

/*
 * Disables every event, writes the next snapshot, then re-enables the
 * events for --repeat or, after the last one, closes them: the program
 * runs on untraced.  A thread parked at a breakpoint stays parked until
 * this returns.
 */
static void
take_snapshot(struct pt_rec *r, const char *reason)
{
	struct error e;
	char dest[PATH_MAX];
	size_t i;

	if (r->off || r->in_snapshot)
		return;
	r->in_snapshot = 1;
	/* output.log holds what the program wrote up to the trigger. */
	drain_output(r, 0, 16);
	for (i = 0; i < r->n_th; i++)
		if (r->k->disable(&r->th[i].ev, &e) < 0 && !r->th[i].exited)
			report_warning(TOOL, "snapshot", "thread %d: %s",
			    (int)r->th[i].tid, e.msg);
	if (drain_all(r, &e) < 0)
		report_warning(TOOL, "sideband", "%s", e.msg);
	if (write_rings(r, reason, r->pol.taken + 1, dest, sizeof(dest),
	    &e) < 0) {
		report_error(TOOL, "snapshot", &e, NULL);
		r->failed = 1;
	} else {
		printf("%s\n", dest);
		fflush(stdout);
	}
	r->in_snapshot = 0;
	if (capture_taken(&r->pol, reason) || r->failed || r->ending) {
		r->off = 1;
		free_threads(r);
		return;
	}
	for (i = 0; i < r->n_th; i++)
		if (!r->th[i].exited && r->k->enable(&r->th[i].ev, &e) < 0)
			report_warning(TOOL, "--repeat", "thread %d: %s",
			    (int)r->th[i].tid, e.msg);
}

/* pttrace: a signal; ours is the breakpoint's SIGTRAP. */
static int
on_signal(pid_t tid, const siginfo_t *si, void *arg)
{
	struct pt_rec *r = arg;
	uint64_t cookie;

	(void)tid;
	if (si->si_signo != SIGTRAP || si->si_code != PTEVENT_TRAP_PERF)
		return 0;
	/* si_perf_data follows si_addr in the kernel's siginfo. */
	memcpy(&cookie, (const char *)&si->si_addr + sizeof(void *),
	    sizeof(cookie));
	if (cookie != BP_COOKIE)
		return 0;
	/* CAPTURE_BP_PARK: the thread waits here, at the trigger. */
	if (capture_on_trigger(&r->pol, clock_mono_ms()) == CAPTURE_SNAPSHOT)
		take_snapshot(r, "symbol");
	return 1;
}

/*
 * CAPTURE_BP_PAUSE: when a breakpoint's counter reached hits, the kernel
 * has paused that thread's trace at the trigger: the snapshot's turn.
 */
static void
check_pause(struct pt_rec *r)
{
	struct error e;
	size_t i;

	if (r->bp_mode != CAPTURE_BP_PAUSE || r->off)
		return;
	for (i = 0; i < r->n_th; i++)
		if (r->th[i].bp_fd >= 0 && r->k->breakpoint_count(
		    r->th[i].bp_fd, &e) >= (int64_t)r->hits)
			break;
	if (i < r->n_th &&
	    capture_on_trigger(&r->pol, clock_mono_ms()) == CAPTURE_SNAPSHOT)
		take_snapshot(r, "symbol");
}

static int
prepare(struct pt_rec *r, struct error *e)
{
	const struct rec_options *o = r->o;
	int rc;

	if ((rc = ptconfig_build(r->caps, profile_of(o->timing),
	    o->timing_config, &r->cfg, e)) < 0 ||
	    (rc = ptring_plan(r->caps, o->aux_bytes, o->budget_bytes,
	    &r->plan, e)) < 0)
		return rc;
	if (r->plan.warning[0] != '\0')
		report_warning(TOOL, "--aux-bytes", "%s", r->plan.warning);
	if ((rc = capture_program_path(o, r->program, sizeof(r->program),
	    e)) < 0 ||
	    (rc = capture_filters_resolve(r->program, o->filters,
	    o->n_filters, &r->filters, e)) < 0 ||
	    (o->n_filters > 0 && (rc = ptfilter_string(r->caps, r->filters.f,
	    r->filters.n, r->filter, sizeof(r->filter), e)) < 0) ||
	    (rc = capture_lines_init(&r->lines, o->trigger_line, e)) < 0)
		return rc;
	if (o->trigger_symbol != NULL) {
		uint64_t size;

		if ((rc = elfsym_lookup(r->program, o->trigger_symbol,
		    &r->trig_off, &size, e)) < 0)
			return error_prefix(e, "--trigger-symbol %s",
			    o->trigger_symbol);
		r->hits = o->trigger_hits > 0 ? o->trigger_hits : 1;
		r->bp_mode = capture_bp_mode(o,
		    ptcaps_kernel_at_least(r->caps, 6, 13));
	}
	return 0;
}

/* The program's stdout and stderr into pipes, and output.log. */
static int
open_output(struct pt_rec *r, int wr[2], struct error *e)
{
	struct capture_output co;
	int i;

	if ((i = scratch_open(&r->scr, TOOL, e)) < 0)
		return i;
	if (scratch_path(&r->scr, "output.log", r->log_path,
	    sizeof(r->log_path)) < 0)
		return error_set(e, ERR_RANGE, "%s: path too long", r->scr.path);
	r->log_fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	if (r->log_fd < 0)
		return error_set_errno(e, errno, "%s", r->log_path);
	/* a terminal when ours is one, else pipes (capture.h) */
	if ((i = capture_output_open(&co, e)) < 0)
		return i;
	for (i = 0; i < 2; i++) {
		r->out[i] = co.read_fd[i];
		wr[i] = co.write_fd[i];
		if (r->out[i] >= 0)
			fcntl(r->out[i], F_SETFL, O_NONBLOCK);
	}
	return 0;
}

/*
 * Relays what stream i of the program has written; each matching line is
 * a --trigger-line trigger, unless triggers is 0.  Returns as
 * capture_relay (> 0: there may be more).
 */
static int
relay_stream(struct pt_rec *r, int i, int triggers)
{
	unsigned matched, k;
	int n = capture_relay(&r->out[i], i, r->log_fd, &r->lines, &matched);

	if (n == -2 && !r->log_failed) {
		report_warning(TOOL, "output.log", "%s", strerror(errno));
		r->log_failed = 1;
	}
	for (k = 0; triggers && k < matched; k++)
		if (capture_on_trigger(&r->pol, clock_mono_ms()) == CAPTURE_SNAPSHOT)
			take_snapshot(r, "line");
	return n;
}

/*
 * One --control command (DECISIONS.md: snapshot, stop, cancel), answered
 * on stdout as the emu recorder answers.  "snapshot" does not use up
 * --repeat; "stop" ends the run with a snapshot, "cancel" without.
 */
static void
on_control(struct pt_rec *r, const char *cmd)
{
	int known = 1;

	if (strcmp(cmd, "snapshot") == 0)
		take_snapshot(r, "control");
	else if (strcmp(cmd, "stop") == 0)
		r->ctl_end = "control";
	else if (strcmp(cmd, "cancel") == 0)
		r->ctl_end = "cancel";
	else
		known = 0;
	/* stderr: stdout carries snapshot paths only */
	report(TOOL, "control", NULL, "%s: %s", cmd, known ? "ok" :
	    "unknown command");
}

static void
read_control(struct pt_rec *r)
{
	ssize_t n;
	char *nl;

	n = read(r->ctl_fd, r->ctlbuf + r->ctllen,
	    sizeof(r->ctlbuf) - 1 - r->ctllen);
	if (n <= 0)
		return;
	r->ctllen += (size_t)n;
	r->ctlbuf[r->ctllen] = '\0';
	while (r->ctl_end == NULL && (nl = strchr(r->ctlbuf, '\n')) != NULL) {
		*nl = '\0';
		on_control(r, r->ctlbuf);
		r->ctllen -= (size_t)(nl + 1 - r->ctlbuf);
		memmove(r->ctlbuf, nl + 1, r->ctllen + 1);
	}
	if (r->ctllen == sizeof(r->ctlbuf) - 1)
		r->ctllen = 0;		/* a line too long to be a command */
}

/*
 * Relays what the program wrote and reads --control, waiting at most
 * wait_ms for either.
 */
static void
relay_output(struct pt_rec *r, int wait_ms)
{
	struct pollfd p[3];
	int i;

	for (i = 0; i < 2; i++)
		p[i] = (struct pollfd){ .fd = r->out[i], .events = POLLIN };
	p[2] = (struct pollfd){ .fd = r->ctl_fd, .events = POLLIN };
	if (poll(p, 3, wait_ms) <= 0)
		return;
	for (i = 0; i < 2; i++)
		if (r->out[i] >= 0 && p[i].revents != 0)
			relay_stream(r, i, 1);
	if (r->ctl_fd >= 0 && p[2].revents != 0)
		read_control(r);
}

/* Steps the program until it ends or we are asked to stop. */
static const char *
follow(struct pt_rec *r, struct error *e)
{
	const char *due;
	uint64_t wait;
	int rc;

	for (;;) {
		if (stop_requested)	/* the kinds emu names them by */
			return stop_requested == SIGINT ? "sigint" : "sigterm";
		if (r->ctl_end != NULL)
			return r->ctl_end;
		if ((due = capture_due(&r->pol, clock_mono_ms())) != NULL)
			take_snapshot(r, due);
		if (r->off && r->o->pid != 0)
			return NULL;	/* attached: let it go now */
		rc = pttrace_step(&r->t, 1, e);
		if (rc < 0)
			return NULL;
		if (rc == PTTRACE_DONE)
			return "exit";
		if (!r->off && drain_all(r, e) < 0)
			return NULL;
		check_pause(r);
		wait = capture_wait_ms(&r->pol, clock_mono_ms());
		relay_output(r, rc == PTTRACE_IDLE && wait > 0 ? 1 : 0);
	}
}


static int
start(struct pt_rec *r, struct error *e)
{
	const struct pttrace_ops ops = {
		.thread_new = thread_new, .thread_exit = thread_exit,
		.signal = on_signal, .arg = r,
	};
	cpu_set_t cpus;
	int rc, wr[2] = { -1, -1 };

	if (r->o->pid != 0) {
		rc = pttrace_attach(&r->t, (pid_t)r->o->pid, &ops, e);
		if (rc < 0 && r->err.code != 0)
			*e = r->err;	/* thread_new's reason */
		if (rc == 0 &&
		    (rc = initial_records(r, r->t.pid, r->t.pid, e)) < 0) {
			free_threads(r);
			/* rc and e say what failed first */
			PTKIT_DROP(pttrace_detach(&r->t, &r->err));
		}
		return rc;
	}
	if ((r->o->cpus != NULL &&
	    (rc = pttrace_parse_cpus(r->o->cpus, &cpus, e)) < 0) ||
	    (rc = open_output(r, wr, e)) < 0) {
		rc = rc < 0 ? rc : -ERR_IO;
		goto out;
	}
	rc = pttrace_launch_io(&r->t, r->o->program, r->o->cpus ? &cpus :
	    NULL, wr, &ops, e);
	if (rc < 0 && r->err.code != 0)
		*e = r->err;	/* thread_new's reason */
	if (rc == 0 && (rc = initial_records(r, r->t.pid, r->t.pid, e)) < 0)
		pttrace_kill(&r->t);
out:
	/* The program has its ends now (or there is no program). */
	if (wr[0] >= 0)
		close(wr[0]);
	if (wr[1] >= 0)
		close(wr[1]);
	return rc;
}

/*
 * What the program has written by now (at most max reads of each
 * stream: threads that are not parked may write on), up to the end of
 * file when it has ended; its lines may trigger snapshots when triggers
 * is 1.
 */
static void
drain_output(struct pt_rec *r, int triggers, int max)
{
	int i, k;

	for (i = 0; i < 2; i++)
		for (k = 0; k < max && r->out[i] >= 0 &&
		    relay_stream(r, i, triggers) > 0; k++)
			;
}

/* Snapshots taken after the end of the program or at SIGINT. */
static void
finish(struct pt_rec *r, const char *reason)
{
	struct error e;

	if (r->untraced > 0)
		report_warning(TOOL, "--budget-bytes", "%u threads went untraced:"
		    " the ring budget was spent", r->untraced);
	if (strcmp(reason, "exit") == 0) {
		/* Triggers the program reached before its end still count. */
		drain_output(r, 1, INT_MAX);
		check_pause(r);
	}
	r->ending = 1;		/* whatever the reason, the last snapshot */
	if (strcmp(reason, "cancel") != 0)
		take_snapshot(r, reason);
	free_threads(r);	/* no breakpoint outlives us */
	if (r->o->pid != 0) {
		if (pttrace_detach(&r->t, &e) < 0)
			report_error(TOOL, "--pid", &e, NULL);
		return;
	}
	if (!r->t.done)
		pttrace_kill(&r->t);
	else
		pttrace_free(&r->t);
}

static void
rec_free(struct pt_rec *r)
{
	int i;

	free_threads(r);
	pt_sideband_free(&r->sb);
	capture_lines_free(&r->lines);
	for (i = 0; i < 2; i++)
		if (r->out[i] >= 0)
			close(r->out[i]);
	if (r->log_fd >= 0)
		close(r->log_fd);
	if (r->ctl_fd >= 0)
		close(r->ctl_fd);
	capture_scratch_close(&r->scr);
	free(r);
}

int
rec_pt_record(const struct rec_options *o, const struct ptcaps *caps,
    const struct rec_pt_events *ev)
{
	struct pt_rec *r;
	struct error e;
	const char *reason;
	int rc = -1;

	if (o->pid != 0 && o->trigger_line != NULL) {
		report(TOOL, "--trigger-line", "launch the program with ptrec, "
		    "or use --trigger-symbol", "with --pid the program's output "
		    "is not ptrec's to read");
		return -1;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return -1;
	}
	r->o = o;
	r->k = ev;
	r->caps = caps;
	r->log_fd = r->out[0] = r->out[1] = r->ctl_fd = -1;
	r->scr.slot = -1;
	r->start_wall = clock_ns(CLOCK_REALTIME);
	memset(&e, 0, sizeof(e));
	/* O_RDWR: the FIFO never reports end of file between writers. */
	if (o->control_fifo != NULL && (r->ctl_fd = open(o->control_fifo,
	    O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		report(TOOL, o->control_fifo, NULL, "%s", strerror(errno));
		goto out;
	}
	if (prepare(r, &e) < 0 || start(r, &e) < 0) {
		report_error(TOOL, o->pid ? "--pid" : o->program[0], &e, NULL);
		goto out;
	}
	capture_policy_init(&r->pol, o, clock_mono_ms());
	/* No SA_RESTART: a stop signal ends the wait follow() is in. */
	reason = signals_catch_stop(on_stop_signal, 0, &e) < 0 ? NULL :
	    follow(r, &e);
	if (reason == NULL && !r->off) {
		report_error(TOOL, "recording", &e, NULL);
		/* No breakpoint may outlive us in a program we let go. */
		free_threads(r);
		if (o->pid != 0 && pttrace_detach(&r->t, &e) < 0)
			report_error(TOOL, "--pid", &e, NULL);
		else if (o->pid == 0)
			pttrace_kill(&r->t);
		goto out;
	}
	finish(r, reason != NULL ? reason : "exit");
	rc = r->pol.taken > 0 && !r->failed ? 0 : -1;
out:
	rec_free(r);
	return rc;
}

static const struct rec_pt_events kernel_events = {
	.open = ptevent_open,
	.enable = ptevent_enable,
	.disable = ptevent_disable,
	.drain = ptevent_drain,
	.snapshot = ptevent_snapshot,
	.time_conv = ptevent_time_conv,
	.close = ptevent_close,
	.breakpoint = ptevent_breakpoint,
	.breakpoint_pause = ptevent_breakpoint_pause,
	.breakpoint_count = ptevent_breakpoint_count,
};

int
rec_pt_run(const struct rec_options *o)
{
	struct ptcaps *caps;
	struct error e;
	int status;

	if (strcmp(assess_root(o), "/") != 0 && assess_root(o)[0] != '\0') {
		/* A fake tree's caps would configure the real kernel wrongly. */
		report(TOOL, "--recorder pt", "use --sysroot and PTKIT_SYSROOT "
		    "only with --doctor", "%s is not this machine's root: "
		    "recording needs the real /sys and /proc", assess_root(o));
		return EXIT_FAIL;
	}
	if ((caps = malloc(sizeof(*caps))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	if (ptcaps_probe(caps, assess_root(o), PTCAPS_NO_TOOLS, &e) < 0) {
		report_error(TOOL, "--recorder pt", &e, NULL);
		free(caps);
		return EXIT_FAIL;
	}
	status = rec_pt_record(o, caps, &kernel_events) < 0 ? EXIT_FAIL :
	    EXIT_OK;
	free(caps);
	return status;
}

/* rec_perf: see rec_perf.h. */
#include "rec_perf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "perf_import.h"
#include "rec/ptcaps.h"
#include "rec/ptconfig.h"
#include "rec/ptperf.h"
#include "snapwrite.h"
#include "tool/report.h"
#include "base/clockns.h"
#include "base/scratch.h"
#include "base/signals.h"
#include "base/spawn.h"
#include "verdict.h"

#define TOOL "ptrec"

/* A signal handler can only leave a flag: the recorder's one global. */
static volatile sig_atomic_t perf_stop_requested;

static void
on_stop_signal(int sig)
{
	perf_stop_requested = sig;
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

struct perf_rec {
	const struct rec_options *o;
	const struct ptcaps *caps;
	struct ptconfig cfg;
	struct ptring_plan plan;
	struct scratch scr;
	char ctl[PATH_MAX], ack[PATH_MAX], data[PATH_MAX];
	int ctl_fd, ack_fd;
	struct spawn sp;
	struct ptperf_argv argv;
	char program[PATH_MAX];
	struct capture_filters filters;
	char filter[4096];
	struct capture_policy pol;
	struct capture_lines lines;
	char log_path[PATH_MAX];
	int log_fd;
	int out[2];		/* perf's (and so the program's) stdout, stderr */
};

static int
make_fifos(struct perf_rec *r, struct error *e)
{
	if (scratch_path(&r->scr, "ctl", r->ctl, sizeof(r->ctl)) < 0 ||
	    scratch_path(&r->scr, "ack", r->ack, sizeof(r->ack)) < 0 ||
	    scratch_path(&r->scr, "perf.data", r->data, sizeof(r->data)) < 0)
		return error_set(e, ERR_RANGE, "%s: path too long",
		    r->scr.path);
	if (mkfifo(r->ctl, 0600) < 0)
		return error_set_errno(e, errno, "%s", r->ctl);
	if (mkfifo(r->ack, 0600) < 0)
		return error_set_errno(e, errno, "%s", r->ack);
	/* O_RDWR: opening never waits for perf to open its end. */
	if ((r->ctl_fd = open(r->ctl, O_RDWR | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", r->ctl);
	if ((r->ack_fd = open(r->ack, O_RDWR | O_CLOEXEC | O_NONBLOCK)) < 0)
		return error_set_errno(e, errno, "%s", r->ack);
	return 0;
}

static int
prepare(struct perf_rec *r, struct error *e)
{
	struct ptperf_opts po;
	int rc;

	if ((rc = ptconfig_build(r->caps, profile_of(r->o->timing),
	    r->o->timing_config, &r->cfg, e)) < 0 ||
	    (rc = ptring_plan(r->caps, r->o->aux_bytes, r->o->budget_bytes,
	    &r->plan, e)) < 0 ||
	    (rc = scratch_open(&r->scr, TOOL, e)) < 0 ||
	    (rc = make_fifos(r, e)) < 0)
		return rc;
	if (r->plan.warning[0] != '\0')
		report_warning(TOOL, "--aux-bytes", "%s", r->plan.warning);
	if ((rc = capture_program_path(r->o, r->program, sizeof(r->program),
	    e)) < 0 ||
	    (rc = capture_filters_resolve(r->program, r->o->filters,
	    r->o->n_filters, &r->filters, e)) < 0 ||
	    (r->o->n_filters > 0 && (rc = ptfilter_string(r->caps,
	    r->filters.f, r->filters.n, r->filter, sizeof(r->filter),
	    e)) < 0) ||
	    (rc = capture_lines_init(&r->lines, r->o->trigger_line, e)) < 0)
		return rc;
	if (scratch_path(&r->scr, "output.log", r->log_path,
	    sizeof(r->log_path)) < 0)
		return error_set(e, ERR_RANGE, "%s: path too long", r->scr.path);
	r->log_fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	if (r->log_fd < 0)
		return error_set_errno(e, errno, "%s", r->log_path);
	memset(&po, 0, sizeof(po));
	po.filter = r->filter[0] != '\0' ? r->filter : NULL;
	po.perf = r->caps->tools.perf_path[0] ? r->caps->tools.perf_path :
	    "perf";
	po.config = r->cfg.config;
	po.aux_bytes = r->plan.aux_bytes;
	po.data_bytes = r->plan.base_bytes - PTRING_PAGE;
	po.per_thread = 1;
	po.ctl_fifo = r->ctl;
	po.ack_fifo = r->ack;
	po.output = r->data;
	po.pid = r->o->pid;
	po.program = r->o->pid ? NULL : r->o->program;
	return ptperf_argv_build(r->caps, &po, &r->argv, e);
}

/* perf has ended: its status, as waitpid gives it. */
static int
perf_ended(struct perf_rec *r)
{
	int status;

	if (waitpid(r->sp.pid, &status, WNOHANG | __WNOTHREAD) != r->sp.pid)
		return 0;
	r->sp.pid = -1;
	r->sp.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	r->sp.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return 1;
}

/* Relays perf's output (the program's) for at most wait_ms. */
static const char *
relay(struct perf_rec *r, int wait_ms)
{
	struct pollfd p[2];
	unsigned matched;
	int i, n;

	for (i = 0; i < 2; i++)
		p[i] = (struct pollfd){ .fd = r->out[i], .events = POLLIN };
	if (poll(p, 2, wait_ms) <= 0)
		return NULL;
	for (i = 0; i < 2; i++) {
		if (r->out[i] < 0 || p[i].revents == 0)
			continue;
		n = capture_relay(&r->out[i], i, r->log_fd, &r->lines,
		    &matched);
		if (n == -2)
			report_warning(TOOL, "output.log", "%s",
			    strerror(errno));
		if (matched > 0 && capture_on_trigger(&r->pol,
		    clock_mono_ms()) == CAPTURE_SNAPSHOT)
			return "line";
	}
	return NULL;
}

/*
 * Waits for the program's end (perf then takes its -Se snapshot), a
 * deadline, a matching line or SIGINT/SIGTERM.
 */
static const char *
wait_trigger(struct perf_rec *r)
{
	const char *why;

	for (;;) {
		if (perf_stop_requested)	/* the kinds emu names them by */
			return perf_stop_requested == SIGINT ? "sigint" :
			    "sigterm";
		if ((why = capture_due(&r->pol,
		    clock_mono_ms())) != NULL)
			return why;
		if (perf_ended(r))
			return "exit";
		if ((why = relay(r, 2)) != NULL)
			return why;
	}
}

static int
record(struct perf_rec *r, const char **reason, struct error *e)
{
	struct capture_output co;
	int rc, i;

	/* a terminal when ours is one, else pipes (capture.h) */
	if ((rc = capture_output_open(&co, e)) < 0)
		return rc;
	spawn_init(&r->sp, r->argv.argv);
	r->sp.in = SPAWN_INHERIT;
	r->sp.out = spawn_fd(co.write_fd[0]);
	r->sp.err = spawn_fd(co.write_fd[1]);
	/* ^C is ptrec's trigger: perf must live until it has the snapshot. */
	r->sp.new_pgroup = 1;
	rc = capture_spawn_pinned(&r->sp, r->o->cpus, e);
	r->sp.out = r->sp.err = SPAWN_INHERIT;	/* co's, not spawn's */
	capture_output_started(&co);
	if (rc < 0) {
		capture_output_close(&co);
		return rc;
	}
	r->out[0] = co.read_fd[0];	/* ours to close */
	r->out[1] = co.read_fd[1];
	for (i = 0; i < 2; i++)
		if (r->out[i] >= 0)
			fcntl(r->out[i], F_SETFL, O_NONBLOCK);
	capture_policy_init(&r->pol, r->o, clock_mono_ms());
	if ((rc = signals_catch_stop(on_stop_signal, 0, e)) < 0) {
		/* perf is in its own group: ^C would not reach it. */
		spawn_kill(&r->sp, SIGKILL);
		PTKIT_DROP(spawn_finish(&r->sp, NULL));	/* failed already */
		return rc;
	}
	*reason = wait_trigger(r);
	/*
	 * One snapshot per perf run: perf's -Se one at its exit.  A
	 * 'snapshot' command first would leave two overlapping copies of
	 * the rings in perf.data.
	 */
	if (r->sp.pid > 0)
		spawn_kill(&r->sp, SIGINT);
	/*
	 * What perf and the program wrote last, up to their end; bounded,
	 * as something the program started may hold the pipes open.
	 */
	while ((r->out[0] >= 0 || r->out[1] >= 0) && r->sp.pid > 0)
		if (relay(r, 100) == NULL && perf_ended(r))
			break;
	for (i = 0; i < 64 && (r->out[0] >= 0 || r->out[1] >= 0); i++)
		relay(r, 10);
	/* perf exits 130 after SIGINT: only a failed wait is a failure */
	if (r->sp.pid > 0 && (rc = spawn_finish(&r->sp, e)) < 0 &&
	    rc != -ERR_CHILD)
		return rc;
	capture_taken(&r->pol, *reason);
	return 0;
}

/*
 * What perf cannot do for us: it counts no breakpoint hits and keeps
 * every snapshot of a run in one perf.data (so no --repeat, and no
 * --control snapshot that would not end the run).
 */
static int
refuse(const struct rec_options *o)
{
	if (o->trigger_symbol != NULL)
		report(TOOL, "--trigger-symbol", "use --recorder pt, which arms "
		    "a hardware breakpoint per thread, or --recorder emu",
		    "the perf recorder has no symbol trigger");
	else if (o->repeat > 1)
		report(TOOL, "--repeat", "use --recorder pt or --recorder emu",
		    "the perf recorder takes one snapshot per run (perf keeps "
		    "every snapshot of a run in one perf.data)");
	else if (o->control_fifo != NULL)
		report(TOOL, "--control", "use --recorder pt or --recorder emu",
		    "the perf recorder takes no --control requests (one "
		    "snapshot per run, at its trigger or exit)");
	else if (o->pid != 0 && o->trigger_line != NULL)
		report(TOOL, "--trigger-line", "launch the program with ptrec",
		    "with --pid the program's output is not ptrec's to read");
	else
		return 0;
	return 1;
}

int
rec_perf_run(const struct rec_options *o)
{
	struct ptcaps *caps;
	struct error e;
	int status;

	if (strcmp(assess_root(o), "/") != 0 && assess_root(o)[0] != '\0') {
		report(TOOL, "--recorder perf", "use --sysroot and "
		    "PTKIT_SYSROOT only with --doctor", "%s is not this "
		    "machine's root: recording needs the real /sys and /proc",
		    assess_root(o));
		return EXIT_FAIL;
	}
	if (refuse(o))
		return EXIT_FAIL;
	if ((caps = malloc(sizeof(*caps))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	if (ptcaps_probe(caps, assess_root(o), 0, &e) < 0) {
		report_error(TOOL, "--recorder perf", &e, NULL);
		free(caps);
		return EXIT_FAIL;
	}
	status = rec_perf_record(o, caps) < 0 ? EXIT_FAIL : EXIT_OK;
	free(caps);
	return status;
}

int
rec_perf_record(const struct rec_options *o, const struct ptcaps *caps)
{
	struct perf_import_run run;
	struct perf_rec *r;
	struct error e;
	const char *reason = NULL;
	char dest[PATH_MAX];
	uint64_t start = clock_ns(CLOCK_REALTIME);
	int rc = -1, i;

	if (refuse(o))
		return -1;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return -1;
	}
	r->o = o;
	r->caps = caps;
	r->ctl_fd = r->ack_fd = r->log_fd = r->out[0] = r->out[1] = -1;
	r->scr.slot = -1;
	memset(&e, 0, sizeof(e));
	if (prepare(r, &e) < 0 || record(r, &reason, &e) < 0) {
		report_error(TOOL, "--recorder perf", &e, NULL);
		goto out;
	}
	memset(&run, 0, sizeof(run));
	run.opt = o;
	run.caps = r->caps;
	run.perf_version = r->caps->tools.perf_version[0] ?
	    r->caps->tools.perf_version : NULL;
	run.pid = (int)o->pid;
	/* perf reaps the program: its exit status never reaches us. */
	run.state = strcmp(reason, "exit") == 0 ? "exited" : "running";
	run.exit_code = -1;
	run.reason = reason;
	run.detail = strcmp(reason, "line") == 0 || strcmp(reason, "tail") == 0 ?
	    o->trigger_line : NULL;
	run.filter = r->filter[0] != '\0' ? r->filter : NULL;
	run.output_log = o->pid == 0 ? r->log_path : NULL;
	run.start_wall_ns = start;
	run.fired_wall_ns = clock_ns(CLOCK_REALTIME);
	if (snapwrite_dest(o, 1, dest, sizeof(dest), &e) < 0 ||
	    perf_import(&run, r->data, dest, &e) < 0) {
		report_error(TOOL, "snapshot", &e, NULL);
		goto out;
	}
	printf("%s\n", dest);
	rc = 0;
out:
	capture_lines_free(&r->lines);
	for (i = 0; i < 2; i++)
		if (r->out[i] >= 0)
			close(r->out[i]);
	if (r->log_fd >= 0)
		close(r->log_fd);
	if (r->ctl_fd >= 0)
		close(r->ctl_fd);
	if (r->ack_fd >= 0)
		close(r->ack_fd);
	ptperf_argv_free(&r->argv);
	capture_scratch_close(&r->scr);
	free(r);
	return rc;
}

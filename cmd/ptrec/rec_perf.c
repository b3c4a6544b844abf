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

#include "perf_import.h"
#include "ptcaps.h"
#include "ptconfig.h"
#include "ptperf.h"
#include "pt_snapshot.h"
#include "report.h"
#include "scratch.h"
#include "spawn.h"
#include "verdict.h"

#define TOOL "ptrec"

/* A signal handler can only leave a flag: the recorder's one global. */
static volatile sig_atomic_t perf_stop_requested;

static void
on_stop_signal(int sig)
{
	(void)sig;
	perf_stop_requested = 1;
}

static uint64_t
now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
	struct ptcaps *caps;
	struct ptconfig cfg;
	struct ptring_plan plan;
	struct scratch scr;
	char ctl[PATH_MAX], ack[PATH_MAX], data[PATH_MAX];
	int ctl_fd, ack_fd;
	struct spawn sp;
	struct ptperf_argv argv;
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

	if ((r->caps = malloc(sizeof(*r->caps))) == NULL)
		return error_set(e, ERR_NOMEM, "caps");
	if ((rc = ptcaps_probe(r->caps, assess_root(r->o), 0, e)) < 0 ||
	    (rc = ptconfig_build(r->caps, profile_of(r->o->timing),
	    r->o->timing_config, &r->cfg, e)) < 0 ||
	    (rc = ptring_plan(r->caps, r->o->aux_bytes, r->o->budget_bytes,
	    &r->plan, e)) < 0 ||
	    (rc = scratch_open(&r->scr, TOOL, e)) < 0 ||
	    (rc = make_fifos(r, e)) < 0)
		return rc;
	if (r->plan.warning[0] != '\0')
		report_warning(TOOL, "--aux-bytes", "%s", r->plan.warning);
	memset(&po, 0, sizeof(po));
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

/* Asks perf for a snapshot and waits (at most 10 s) for its ack. */
static int
perf_snapshot(struct perf_rec *r, struct error *e)
{
	static const char cmd[] = "snapshot\n";
	struct pollfd p = { .fd = r->ack_fd, .events = POLLIN };
	char buf[16];

	if (write(r->ctl_fd, cmd, sizeof(cmd) - 1) != (ssize_t)sizeof(cmd) - 1)
		return error_set_errno(e, errno, "%s", r->ctl);
	if (poll(&p, 1, 10000) <= 0)
		return error_set(e, ERR_IO, "perf did not acknowledge the "
		    "snapshot command within 10 s");
	if (read(r->ack_fd, buf, sizeof(buf)) <= 0)
		return error_set_errno(e, errno, "%s", r->ack);
	return 0;
}

/* Waits for the program's end, a deadline or SIGINT/SIGTERM. */
static const char *
wait_trigger(struct perf_rec *r)
{
	const struct rec_options *o = r->o;
	uint64_t start = now_ns(CLOCK_MONOTONIC), deadline = UINT64_MAX;
	const char *kind = "after-ms";
	int status;

	if (o->has_after_ms)
		deadline = start + o->after_ms * 1000000ULL;
	if (o->has_max_capture_ms &&
	    start + o->max_capture_ms * 1000000ULL < deadline) {
		deadline = start + o->max_capture_ms * 1000000ULL;
		kind = "max-capture-ms";
	}
	for (;;) {
		if (perf_stop_requested)
			return "signal";
		if (now_ns(CLOCK_MONOTONIC) >= deadline)
			return kind;
		if (waitpid(r->sp.pid, &status, WNOHANG | __WNOTHREAD) ==
		    r->sp.pid) {
			r->sp.pid = -1;
			r->sp.exit_code = WIFEXITED(status) ?
			    WEXITSTATUS(status) : -1;
			r->sp.term_signal = WIFSIGNALED(status) ?
			    WTERMSIG(status) : 0;
			return NULL;	/* perf ended before any trigger */
		}
		usleep(2000);
	}
}

static int
record(struct perf_rec *r, const char **reason, struct error *e)
{
	struct sigaction sa;
	int rc;

	spawn_init(&r->sp, r->argv.argv);
	r->sp.in = SPAWN_INHERIT;
	r->sp.out = SPAWN_INHERIT;
	r->sp.err = SPAWN_INHERIT;
	/* ^C is ptrec's trigger: perf must live until it has the snapshot. */
	r->sp.new_pgroup = 1;
	if ((rc = spawn_start(&r->sp, e)) < 0)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((*reason = wait_trigger(r)) == NULL)
		return error_set(e, ERR_CHILD, "perf record ended before the "
		    "trigger (exit status %d, signal %d): with --recorder perf "
		    "the snapshot is taken at --after-ms, --max-capture-ms or "
		    "SIGINT", r->sp.exit_code, r->sp.term_signal);
	if ((rc = perf_snapshot(r, e)) < 0) {
		spawn_kill(&r->sp, SIGKILL);
		spawn_finish(&r->sp, NULL);
		return rc;
	}
	spawn_kill(&r->sp, SIGINT);
	spawn_finish(&r->sp, e);	/* perf exits 130 after SIGINT */
	return 0;
}

int
rec_perf_run(const struct rec_options *o)
{
	struct perf_import_run run;
	struct perf_rec *r;
	struct error e;
	const char *reason = NULL;
	char dest[PATH_MAX];
	uint64_t start = now_ns(CLOCK_REALTIME);
	int status = EXIT_FAIL;

	if (strcmp(assess_root(o), "/") != 0 && assess_root(o)[0] != '\0') {
		report(TOOL, "--recorder perf", "use --sysroot and "
		    "PTKIT_SYSROOT only with --doctor", "%s is not this "
		    "machine's root: recording needs the real /sys and /proc",
		    assess_root(o));
		return EXIT_FAIL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	r->o = o;
	r->ctl_fd = r->ack_fd = -1;
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
	run.state = "running";
	run.reason = reason;
	run.start_wall_ns = start;
	run.fired_wall_ns = now_ns(CLOCK_REALTIME);
	if (pt_snapshot_dest(o, 1, dest, sizeof(dest), &e) < 0 ||
	    perf_import(&run, r->data, dest, &e) < 0) {
		report_error(TOOL, "snapshot", &e, NULL);
		goto out;
	}
	printf("%s\n", dest);
	status = EXIT_OK;
out:
	if (r->ctl_fd >= 0)
		close(r->ctl_fd);
	if (r->ack_fd >= 0)
		close(r->ack_fd);
	ptperf_argv_free(&r->argv);
	if (r->scr.slot >= 0 || r->scr.path[0] != '\0')
		scratch_close(&r->scr);
	free(r->caps);
	free(r);
	return status;
}

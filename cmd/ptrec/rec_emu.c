/* rec_emu: see rec_emu.h. */
#include "rec_emu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "base/clockns.h"
#include "base/cleanup.h"
#include "base/signals.h"
#include "elfsym.h"
#include "emu_guard.h"
#include "emu_handoff.h"
#include "emu_snapshot.h"
#include "tool/progress.h"
#include "tool/report.h"
#include "base/progpath.h"
#include "base/scratch.h"
#include "base/spawn.h"

#define TOOL "ptrec"
#define QEMU "qemu-x86_64"
#define PLUGIN_NAME "libptkit-emu.so"
/* How long ptrec waits for the plugin to answer a request (wall time). */
#define ANSWER_MS 2000

static const char *const stop_indicators[] = {
	"ptkit_stop_indicator", "magic_trace_stop_indicator",
};

/* SIGINT/SIGTERM arrive here; the loop reads them from a pipe. */
static int signal_pipe[2] = { -1, -1 };

static void
on_signal(int sig)
{
	unsigned char c = (unsigned char)sig;
	int saved = errno;

	if (write(signal_pipe[1], &c, 1) < 0)
		(void)0;	/* the pipe is full: a signal is pending anyway */
	errno = saved;
}

struct recorder {
	const struct rec_options *o;
	struct scratch scr;
	char program[PATH_MAX];
	char plugin[PATH_MAX];
	struct emu_control *ctl;
	int events_fd, control_fd, log_fd;
	char log_path[PATH_MAX];
	char evbuf[4096];
	size_t evlen;
	char ctlbuf[1024];
	size_t ctllen;
	struct spawn sp;
	struct emu_guard guard;		/* ends qemu's forks if we are killed */
	struct capture_output co;	/* the program's stdout and stderr */
	/* the output cut into lines, so that progress waits for the end of
	 * a line the program is writing (the plugin matches --trigger-line) */
	struct capture_lines lines;
	char **argv;		/* qemu's, alive as long as sp */
	char plugin_arg[PATH_MAX + 16];
	int pid;		/* the program's (qemu's) */
	uint64_t snapshots;	/* written */
	struct emu_losses lost;	/* what the newest of them did not keep */
	int done;		/* the plugin stopped tracing */
	int failed;
	uint64_t start_wall_ns;
	uint64_t clock_wall_ns;	/* the wall time at virtual TSC 0 */
	struct progress prog;	/* on a terminal: how the recording goes */
	uint64_t prog_ms;	/* its last redraw */
	int stopping;		/* SIGINT/SIGTERM or a control stop */
};

/* ---- finding things ---------------------------------------------------- */

/* The plugin: $PTKIT_EMU_PLUGIN, else ../lib/ptkit/ beside ptrec, else
 * the install directory. */
static int
find_plugin(char *out, size_t size)
{
	const char *env = getenv("PTKIT_EMU_PLUGIN");

	if (env != NULL && env[0] != '\0') {
		snprintf(out, size, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	if (progpath_beside_self("../lib/ptkit/" PLUGIN_NAME, R_OK, out, size,
	    NULL) == 0)
		return 0;
	snprintf(out, size, "%s/%s", PTKIT_PKGLIBDIR, PLUGIN_NAME);
	return access(out, R_OK) == 0 ? 0 : -1;
}

int
rec_emu_available(char *why, size_t size)
{
	char path[PATH_MAX];

	if (progpath_search(QEMU, NULL, path, sizeof(path), NULL) < 0) {
		snprintf(why, size, "%s not found (install qemu-user)", QEMU);
		return 0;
	}
	if (find_plugin(path, sizeof(path)) < 0) {
		snprintf(why, size, "%s not found (set PTKIT_EMU_PLUGIN)",
		    PLUGIN_NAME);
		return 0;
	}
	snprintf(why, size, "%s with %s", QEMU, path);
	return 1;
}

/* ---- the plugin's configuration ---------------------------------------- */

static uint64_t
psb_period_for(uint64_t aux)
{
	/* a ring must hold several PSBs to be decodable after it wraps */
	return aux >= 64 * 1024 ? 4096 : 2048;
}

static int
write_trigger(FILE *f, const char *kind, const char *program,
    const char *sym, int required)
{
	uint64_t off, size;
	struct error e;
	int rc;

	rc = elfsym_lookup(program, sym, &off, &size, &e);
	if (rc == 0) {
		fprintf(f, "%s %" PRIu64 " %s\n", kind, off, program);
		return 0;
	}
	if (!required)
		return 0;
	report(TOOL, sym, "--trigger-symbol takes a function of PROGRAM",
	    "%s", e.msg);
	return -1;
}

/* One --filter, resolved as the hardware recorders resolve it. */
static int
write_filter(FILE *f, const char *program, const char *spec)
{
	struct ptfilter pf;
	char path[PATH_MAX];
	struct error e;
	int rc;

	rc = capture_filter_parse(program, spec, &pf, path, sizeof(path), &e);
	if (rc == -ERR_INVALID) {
		report(TOOL, NULL, NULL, "%s", e.msg);	/* "FILE: reason" */
		return -1;
	}
	if (rc < 0) {
		report(TOOL, spec, "--filter takes a function of PROGRAM or "
		    "ADDR/SIZE@FILE", "%s", e.msg);
		return -1;
	}
	fprintf(f, "filter %" PRIu64 " %" PRIu64 " %s\n", pf.offset, pf.size,
	    pf.path);
	return 0;
}

/* "<scratch>/<name>" into buf; says so when it does not fit. */
static int
scratch_file(const struct recorder *r, const char *name, char *buf,
    size_t size)
{
	if (scratch_path(&r->scr, name, buf, size) < 0) {
		report(TOOL, r->scr.path, NULL, "%s: the path is too long",
		    name);
		return -1;
	}
	return 0;
}

static int
write_config(struct recorder *r)
{
	const struct rec_options *o = r->o;
	char path[PATH_MAX];
	int cyc, noretcomp, i, rc = 0;
	size_t k;
	FILE *f;

	if (scratch_file(r, "config", path, sizeof(path)) < 0)
		return -1;
	if ((f = fopen(path, "we")) == NULL) {
		report(TOOL, path, NULL, "%s", strerror(errno));
		return -1;
	}
	cyc = o->timing != TIMING_LOW;
	noretcomp = o->timing == TIMING_HIGH;
	if (o->timing == TIMING_CONFIG) {
		cyc = (o->timing_config & 2) != 0;
		noretcomp = (o->timing_config & 0x800) != 0;
	}
	fprintf(f, "aux %" PRIu64 "\nbudget %" PRIu64 "\npsb %" PRIu64
	    "\ncyc %d\nretcomp %d\ntruth %d\nrepeat %" PRIu64 "\nfollow %d\n",
	    o->aux_bytes, o->budget_bytes, psb_period_for(o->aux_bytes), cyc,
	    !noretcomp, o->emu_truth != NULL, o->repeat, !o->no_follow);
	/* The clock every process of the run counts from: the start. */
	fprintf(f, "clock_origin %" PRIu64 "\n", clock_ns(CLOCK_MONOTONIC));
	if (o->has_after_ms)
		fprintf(f, "after_ns %" PRIu64 "\n", o->after_ms * 1000000);
	if (o->has_max_capture_ms)
		fprintf(f, "max_ns %" PRIu64 "\n", o->max_capture_ms * 1000000);
	if (o->min_capture_ms > 0)
		fprintf(f, "min_ns %" PRIu64 "\n", o->min_capture_ms * 1000000);
	if (o->has_tail_ms)
		fprintf(f, "tail_ns %" PRIu64 "\n", o->tail_ms * 1000000);
	if (o->trigger_hits > 0)
		fprintf(f, "hits %" PRIu64 "\n", o->trigger_hits);
	if (o->trigger_line != NULL)
		fprintf(f, "line %s\n", o->trigger_line);
	if (o->trigger_symbol != NULL)
		rc = write_trigger(f, "trigger", r->program, o->trigger_symbol,
		    1);
	for (k = 0; rc == 0 && k < 2; k++)
		rc = write_trigger(f, "stop", r->program, stop_indicators[k], 0);
	for (i = 0; rc == 0 && i < o->n_filters; i++)
		rc = write_filter(f, r->program, o->filters[i]);
	if (fclose(f) != 0 && rc == 0) {
		report(TOOL, path, NULL, "%s", strerror(errno));
		rc = -1;
	}
	return rc;
}

/* events (a FIFO), control (a shared page), output.log, the signal pipe */
static int
open_channels(struct recorder *r)
{
	char path[PATH_MAX];
	struct emu_control c;
	int fd;

	if (scratch_file(r, "events", path, sizeof(path)) < 0)
		return -1;
	if (mkfifo(path, 0600) < 0 ||
	    (r->events_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		goto fail;
	if (scratch_file(r, "control", path, sizeof(path)) < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.magic = EMU_CONTROL_MAGIC;
	if ((fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		goto fail;
	if (write(fd, &c, sizeof(c)) != (ssize_t)sizeof(c) ||
	    ftruncate(fd, 4096) < 0) {
		close(fd);
		goto fail;
	}
	r->ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r->ctl == MAP_FAILED) {
		r->ctl = NULL;
		goto fail;
	}
	if (scratch_file(r, "output.log", r->log_path,
	    sizeof(r->log_path)) < 0)
		return -1;
	r->log_fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	if (r->log_fd < 0)
		goto fail;
	if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		goto fail;
	return 0;
fail:
	report(TOOL, path, NULL, "%s", strerror(errno));
	return -1;
}

/*
 * Which files are the program's output, for the plugin's count of what
 * it wrote: the ends it is given (a pipe each, or the pty), as stat
 * knows them.  One it cannot stat stays unknown (0), and the plugin
 * counts fds 1 and 2 when neither is known.
 */
static void
tell_output_files(struct recorder *r)
{
	struct stat st;

	for (int i = 0; i < 2; i++) {
		if (r->co.write_fd[i] < 0 || fstat(r->co.write_fd[i], &st) < 0)
			continue;
		r->ctl->out_dev[i] = (uint64_t)st.st_dev;
		r->ctl->out_ino[i] = (uint64_t)st.st_ino;
	}
}

static int
open_control_fifo(struct recorder *r)
{
	if (r->o->control_fifo == NULL)
		return 0;
	/* O_RDWR: the FIFO never reports end of file between writers */
	r->control_fd = open(r->o->control_fifo, O_RDWR | O_NONBLOCK |
	    O_CLOEXEC);
	if (r->control_fd < 0) {
		report(TOOL, r->o->control_fifo, NULL, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

/* SA_RESTART: the loop learns of the signal from the pipe, not EINTR. */
static int
catch_signals(void)
{
	struct error e;

	if (signals_catch_stop(on_signal, 1, &e) < 0) {
		report_error(TOOL, NULL, &e, NULL);
		return -1;
	}
	return 0;
}

/* ---- the program ---------------------------------------------------------- */

static int
start_program(struct recorder *r)
{
	char *arg = r->plugin_arg, **argv;
	struct rlimit nocore = { 0, 0 };
	struct error e;
	size_t n = 0, i;
	int rc;

	while (r->o->program[n] != NULL)
		n++;
	if ((argv = calloc(n + 4, sizeof(*argv))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return -1;
	}
	r->argv = argv;
	if (snprintf(arg, sizeof(r->plugin_arg), "%s,dir=%s", r->plugin,
	    r->scr.path) >= (int)sizeof(r->plugin_arg)) {
		report(TOOL, r->scr.path, NULL, "path too long");
		return -1;
	}
	argv[0] = (char *)QEMU;
	argv[1] = (char *)"-plugin";
	argv[2] = arg;
	argv[3] = r->program;
	for (i = 1; i < n; i++)
		argv[3 + i] = r->o->program[i];
	/* qemu writes a guest core file into the cwd on a crash: not ours */
	setrlimit(RLIMIT_CORE, &nocore);
	if (capture_output_open(&r->co, &e) < 0) {
		report_error(TOOL, "output", &e, NULL);
		return -1;
	}
	tell_output_files(r);
	spawn_init(&r->sp, argv);
	r->sp.out = spawn_fd(r->co.write_fd[0]);
	r->sp.err = spawn_fd(r->co.write_fd[1]);
	/* Its own process group: a terminal's ^C is ptrec's trigger, and
	 * ptrec decides what the program gets. */
	r->sp.new_pgroup = 1;
	/* --cpus: qemu's threads (the program's vCPUs among them) inherit it */
	rc = capture_spawn_pinned(&r->sp, r->o->cpus, &e);
	r->pid = r->sp.pid;
	r->sp.out = r->sp.err = SPAWN_INHERIT;	/* r->co's, not spawn's */
	capture_output_started(&r->co);
	if (rc < 0) {
		report_error(TOOL, QEMU, &e, rc == -ERR_NOTFOUND ?
		    "install qemu-user" : NULL);
		return -1;
	}
	return 0;
}

/* The program's output to ptrec's stderr and output.log. */
static void
copy_output(struct recorder *r, int stream)
{
	unsigned matched;

	progress_done(&r->prog);	/* the program's line, not ours */
	if (capture_relay(&r->co.read_fd[stream], stream, r->log_fd,
	    &r->lines, &matched) == -2)
		r->failed = 1;
}

/*
 * A snapshot keeps the output the program had written when it was taken
 * (the plugin's count): some of it may still be in the pipes, or, for a
 * line trigger, not yet written at all (it fires at the write(2), before
 * the kernel has the line).  Relays until output.log holds that much, the
 * program's ends close, or OUTPUT_WAIT_MS pass (output the program sent
 * elsewhere, which was counted but never comes).
 */
#define OUTPUT_WAIT_MS 1000

static void
wait_for_output(struct recorder *r, uint64_t want)
{
	uint64_t since = clock_mono_ms();
	struct pollfd fds[2];
	struct stat st;

	while ((r->co.read_fd[0] >= 0 || r->co.read_fd[1] >= 0) &&
	    fstat(r->log_fd, &st) == 0 && (uint64_t)st.st_size < want &&
	    clock_mono_ms() - since < OUTPUT_WAIT_MS) {
		fds[0] = (struct pollfd){ .fd = r->co.read_fd[0],
		    .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = r->co.read_fd[1],
		    .events = POLLIN };
		if (poll(fds, 2, 10) < 0 && errno != EINTR)
			return;
		if (fds[0].revents && r->co.read_fd[0] >= 0)
			copy_output(r, 0);
		if (fds[1].revents && r->co.read_fd[1] >= 0)
			copy_output(r, 1);
	}
}

/* ---- snapshots ------------------------------------------------------------ */

static const char *
detail_of(const struct recorder *r, const char *reason)
{
	if (strcmp(reason, "symbol") == 0 || strcmp(reason, "tail") == 0)
		return r->o->trigger_symbol != NULL ? r->o->trigger_symbol :
		    r->o->trigger_line;
	if (strcmp(reason, "line") == 0)
		return r->o->trigger_line;
	return NULL;
}

static int
write_snapshot(struct recorder *r, struct emu_capture *c, const char *reason)
{
	char out[PATH_MAX], removed[PATH_MAX];
	struct emu_sideband sb;
	struct emu_run run;
	struct error e;
	int rc;

	progress_done(&r->prog);	/* what follows may say something */
	if (scratch_file(r, "perf-map.removed", removed, sizeof(removed)) < 0)
		return -1;
	if ((rc = emu_sideband_read(&sb, r->scr.path, &e)) < 0) {
		report_error(TOOL, "sideband", &e, NULL);
		return -1;
	}
	memset(&run, 0, sizeof(run));
	run.opt = r->o;
	run.program = r->program;
	run.pid = r->pid;
	run.state = "running";
	if (r->sp.pid <= 0 && r->sp.term_signal != 0) {
		run.state = "signaled";
		run.signal = r->sp.term_signal;
	} else if (r->sp.pid <= 0) {
		run.state = "exited";
		run.exit_code = r->sp.exit_code;
	}
	run.output_log = r->log_path;
	run.jit_map_removed = removed;
	run.start_wall_ns = r->start_wall_ns;
	run.clock_wall_ns = r->clock_wall_ns;
	run.psb_period = psb_period_for(r->o->aux_bytes);
	c->reason = reason;
	c->detail = detail_of(r, reason);
	rc = emu_snapshot_write(&run, &sb, c, r->snapshots + 1, out,
	    sizeof(out), &e);
	if (rc == 0)
		emu_losses(&run, &sb, c, &r->lost);
	emu_sideband_free(&sb);
	if (rc < 0) {
		report_error(TOOL, "snapshot", &e, NULL);
		return -1;
	}
	r->snapshots++;
	printf("%s\n", out);
	fflush(stdout);
	return 0;
}

static int
snapshot_from_plugin(struct recorder *r, uint64_t seq, const char *reason)
{
	struct emu_capture c;
	char dir[PATH_MAX];
	struct error e;
	int rc;

	if (emu_capture_read(&c, r->scr.path, seq, &e) < 0) {
		report_error(TOOL, "snapshot", &e, NULL);
		return -1;
	}
	if (c.has_output_end)
		wait_for_output(r, c.output_end);
	rc = write_snapshot(r, &c, reason);
	emu_capture_free(&c);
	/* the ring copies are in the snapshot now: free the scratch space */
	if (snprintf(dir, sizeof(dir), "%s/snap.%" PRIu64, r->scr.path, seq) <
	    (int)sizeof(dir) && !cleanup_keep_waste())
		PTKIT_DROP(cleanup_remove_tree(dir));	/* scratch_close retries */
	return rc;
}

/* The plugin could not answer (a crash, or every thread blocked). */
static int
snapshot_from_rings(struct recorder *r, const char *reason)
{
	struct emu_capture c;
	struct error e;
	int rc;

	if (emu_capture_from_rings(&c, r->scr.path, &e) < 0) {
		report_error(TOOL, "rings", &e, NULL);
		return -1;
	}
	if (c.n_rings == 0) {
		emu_capture_free(&c);
		report(TOOL, r->program, NULL, "no thread was traced");
		return -1;
	}
	/* The program is gone (it crashed, or was killed): so is every
	 * thread of it, whatever its ring's header says. */
	for (size_t i = 0; r->sp.pid <= 0 && i < c.n_rings; i++)
		c.rings[i].exited = 1;
	rc = write_snapshot(r, &c, reason);
	emu_capture_free(&c);
	return rc;
}

/*
 * The virtual TSC is CLOCK_MONOTONIC since the config's clock_origin plus
 * 1 ms (emu_handoff.h): the wall time at TSC 0, so that the manifest can
 * say when a trigger fired and a capture ended.  0 when unknown.
 */
#define EMU_CLOCK_BASE_NS 1000000ULL

static uint64_t
clock_wall_origin(const struct recorder *r)
{
	char path[PATH_MAX], line[256];
	uint64_t origin = 0, mono, real;
	FILE *f;

	if (scratch_path(&r->scr, "config", path, sizeof(path)) < 0 ||
	    (f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "clock_origin %" SCNu64, &origin) == 1)
			break;
	fclose(f);
	mono = clock_ns(CLOCK_MONOTONIC);
	real = clock_ns(CLOCK_REALTIME);
	if (origin == 0 || origin > mono || real < mono - origin +
	    EMU_CLOCK_BASE_NS)
		return 0;
	return real - (mono - origin) - EMU_CLOCK_BASE_NS;
}

/*
 * A long recording on a terminal shows, once a second after the first,
 * how long it has run, the instructions traced and the bytes of trace the
 * rings hold (from their headers); only while the program's output is at
 * the start of a line, so that no line of it is overwritten.
 */
static void
show_progress(struct recorder *r)
{
	uint64_t now = clock_mono_ms(), insns = 0, held = 0, kept;
	char path[PATH_MAX + 300], line[160];
	struct emu_ring_hdr h;
	struct dirent *de;
	unsigned threads = 0;
	DIR *d;
	int fd;

	if (!r->prog.enabled || r->done || r->lines.n[0] != 0 ||
	    r->lines.n[1] != 0 || now - r->prog_ms < 1000 ||
	    (r->prog_ms == 0 && (r->prog_ms = now) != 0))
		return;
	r->prog_ms = now;
	if ((d = opendir(r->scr.path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "ring.", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->scr.path, de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
			kept = h.total - (h.freed < h.total ? h.freed : h.total);
			insns += h.insns;
			held += kept < h.ring_size ? kept : h.ring_size;
			threads++;
		}
		close(fd);
	}
	closedir(d);
	snprintf(line, sizeof(line), "ptrec: recording %" PRIu64 " s: %"
	    PRIu64 " instructions, %.1f MiB of trace held, %u thread%s",
	    (clock_ns(CLOCK_REALTIME) - r->start_wall_ns) / 1000000000,
	    insns, (double)held / (1 << 20), threads, threads == 1 ? "" : "s");
	progress_line(&r->prog, line);
}

/* ---- the loop --------------------------------------------------------------- */

struct pending {
	uint64_t exit_seq;		/* the plugin's exit snapshot */
	uint64_t asked_ms;		/* a request is outstanding since */
	const char *asked_reason;
};

static void
ask_plugin(struct recorder *r, struct pending *p, int stop, const char *why)
{
	if (r->done || p->asked_ms != 0)
		return;
	r->ctl->stop = (uint64_t)stop;
	__atomic_store_n(&r->ctl->request_seq, r->ctl->request_seq + 1,
	    __ATOMIC_SEQ_CST);
	p->asked_ms = clock_mono_ms();
	p->asked_reason = why;
}

static void
on_event_line(struct recorder *r, struct pending *p, const char *line)
{
	char reason[32];
	uint64_t seq;

	if (strcmp(line, "done") == 0) {
		r->done = 1;
		if (r->stopping)
			spawn_kill(&r->sp, SIGKILL);
		return;
	}
	if (sscanf(line, "snapshot %" SCNu64 " %31s", &seq, reason) != 2)
		return;
	if (strcmp(reason, "request") == 0 && p->asked_reason != NULL)
		snprintf(reason, sizeof(reason), "%s", p->asked_reason);
	p->asked_ms = 0;
	if (strcmp(reason, "exit") == 0) {
		p->exit_seq = seq;	/* written once the exit status is known */
		return;
	}
	if (snapshot_from_plugin(r, seq, reason) < 0)
		r->failed = 1;
}

static void
read_events(struct recorder *r, struct pending *p)
{
	ssize_t n;
	char *nl;

	for (;;) {
		n = read(r->events_fd, r->evbuf + r->evlen,
		    sizeof(r->evbuf) - 1 - r->evlen);
		if (n <= 0)
			return;
		r->evlen += (size_t)n;
		r->evbuf[r->evlen] = '\0';
		while ((nl = strchr(r->evbuf, '\n')) != NULL) {
			*nl = '\0';
			on_event_line(r, p, r->evbuf);
			r->evlen -= (size_t)(nl + 1 - r->evbuf);
			memmove(r->evbuf, nl + 1, r->evlen + 1);
		}
	}
}

static void
on_signal_pipe(struct recorder *r, struct pending *p)
{
	unsigned char c;

	while (read(signal_pipe[0], &c, 1) == 1) {
		/*
		 * A second one gives up; after the last snapshot nothing is
		 * traced and the plugin answers nothing, so the first ends
		 * the program (as --control's stop does).
		 */
		if (r->stopping || r->done) {
			r->stopping = 1;
			spawn_kill(&r->sp, SIGKILL);
			continue;
		}
		r->stopping = 1;
		ask_plugin(r, p, 1, c == SIGINT ? "sigint" : "sigterm");
	}
}

static void
on_control_line(struct recorder *r, struct pending *p, const char *cmd)
{
	if (strcmp(cmd, "snapshot") == 0) {
		ask_plugin(r, p, 0, "control");
	} else if (strcmp(cmd, "stop") == 0) {
		r->stopping = 1;
		if (r->done)		/* nothing is traced any more */
			spawn_kill(&r->sp, SIGKILL);
		else
			ask_plugin(r, p, 1, "control");
	} else if (strcmp(cmd, "cancel") == 0) {
		r->stopping = 1;
		r->done = 1;
		spawn_kill(&r->sp, SIGKILL);
	}
	/* stderr: stdout carries snapshot paths only */
	report(TOOL, "control", NULL, "%s: %s", cmd, strcmp(cmd, "snapshot") ==
	    0 || strcmp(cmd, "stop") == 0 || strcmp(cmd, "cancel") == 0 ?
	    "ok" : "unknown command");
}

static void
read_control(struct recorder *r, struct pending *p)
{
	ssize_t n;
	char *nl;

	n = read(r->control_fd, r->ctlbuf + r->ctllen,
	    sizeof(r->ctlbuf) - 1 - r->ctllen);
	if (n <= 0)
		return;
	r->ctllen += (size_t)n;
	r->ctlbuf[r->ctllen] = '\0';
	while ((nl = strchr(r->ctlbuf, '\n')) != NULL) {
		*nl = '\0';
		on_control_line(r, p, r->ctlbuf);
		r->ctllen -= (size_t)(nl + 1 - r->ctlbuf);
		memmove(r->ctlbuf, nl + 1, r->ctllen + 1);
	}
	if (r->ctllen == sizeof(r->ctlbuf) - 1)
		r->ctllen = 0;		/* a line too long to be a command */
}

/* No answer in time: every thread sits in a syscall.  Read the rings. */
static void
check_answer(struct recorder *r, struct pending *p)
{
	if (p->asked_ms == 0 || clock_mono_ms() - p->asked_ms < ANSWER_MS)
		return;
	p->asked_ms = 0;
	if (snapshot_from_rings(r, p->asked_reason) < 0)
		r->failed = 1;
	if (r->stopping) {
		r->done = 1;
		spawn_kill(&r->sp, SIGKILL);
	}
}

static void
run_loop(struct recorder *r, struct pending *p)
{
	struct pollfd fds[5];
	int *out = &r->co.read_fd[0], *err = &r->co.read_fd[1], n;
	int events_open = 1;

	while (*out >= 0 || *err >= 0) {
		n = 0;
		fds[n++] = (struct pollfd){ .fd = *out, .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = *err, .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = events_open ? r->events_fd :
		    -1, .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = signal_pipe[0],
		    .events = POLLIN };
		fds[n++] = (struct pollfd){ .fd = r->control_fd,
		    .events = POLLIN };
		if (poll(fds, (nfds_t)n, p->asked_ms ? 100 : r->prog.enabled &&
		    !r->done ? 1000 : -1) < 0 && errno != EINTR)
			break;
		if (*out >= 0 && fds[0].revents)
			copy_output(r, 0);
		if (*err >= 0 && fds[1].revents)
			copy_output(r, 1);
		if (fds[2].revents & POLLIN)
			read_events(r, p);
		else if (fds[2].revents & POLLHUP)
			events_open = 0;	/* the plugin is gone */
		if (fds[3].revents)
			on_signal_pipe(r, p);
		if (r->control_fd >= 0 && fds[4].revents)
			read_control(r, p);
		check_answer(r, p);
		show_progress(r);
	}
	progress_done(&r->prog);
}

/* ---- the end ---------------------------------------------------------------- */

static const char *
crash_reason(const struct spawn *sp)
{
	return sp->term_signal != 0 ? "signal" : "exit";
}

static void
finish(struct recorder *r, struct pending *p)
{
	struct error e;

	/* a failing program is no failure; failing to wait for it is */
	if (spawn_finish(&r->sp, &e) < 0 && e.code != ERR_CHILD)
		report_error(TOOL, r->program, &e, NULL);
	r->sp.pid = 0;
	read_events(r, p);		/* what the plugin said last */
	if (p->exit_seq != 0) {
		if (snapshot_from_plugin(r, p->exit_seq, "exit") < 0)
			r->failed = 1;
	} else if (!r->done) {
		/* qemu died by a signal (the guest crashed, or we killed it)
		 * without running the plugin's exit: the rings are intact. */
		if (snapshot_from_rings(r, r->stopping ? "sigint" :
		    crash_reason(&r->sp)) < 0)
			r->failed = 1;
	}
	if (r->sp.term_signal != 0 && !r->stopping)
		report_warning(TOOL, r->program, "killed by signal %d (%s)",
		    r->sp.term_signal, strsignal(r->sp.term_signal));
}

static int
truth_collect(const struct recorder *r)
{
	char tpath[PATH_MAX + 32], buf[65536];
	struct emu_sideband sb;
	struct error e;
	FILE *out, *tf;
	size_t n, i, k;

	if (r->o->emu_truth == NULL)
		return 0;
	if (emu_sideband_read(&sb, r->scr.path, &e) < 0) {
		report_error(TOOL, "sideband", &e, NULL);
		return -1;
	}
	if ((out = fopen(r->o->emu_truth, "we")) == NULL) {
		report(TOOL, r->o->emu_truth, NULL, "%s", strerror(errno));
		emu_sideband_free(&sb);
		return -1;
	}
	/* One section per thread of every process: "thread TID PID" then
	 * its branches (tids are unique among the processes of a run). */
	for (i = 0; i < sb.n; i++) {
		if (sb.rec[i].type != SB_THREAD)
			continue;
		/* a thread that exec'd starts again in the same log */
		for (k = 0; k < i; k++)
			if (sb.rec[k].type == SB_THREAD &&
			    sb.rec[k].tid == sb.rec[i].tid)
				break;
		if (k < i)
			continue;
		snprintf(tpath, sizeof(tpath), "%s/truth.%d", r->scr.path,
		    sb.rec[i].tid);
		if ((tf = fopen(tpath, "re")) == NULL)
			continue;
		fprintf(out, "thread %d %d\n", sb.rec[i].tid, sb.rec[i].pid);
		while ((n = fread(buf, 1, sizeof(buf), tf)) > 0) {
			/* a crash leaves the mapped chunk's zero tail */
			size_t len = strnlen(buf, n);

			fwrite(buf, 1, len, out);
			if (len < n)
				break;
		}
		fclose(tf);
	}
	emu_sideband_free(&sb);
	if (fclose(out) != 0) {
		report(TOOL, r->o->emu_truth, NULL, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

/* What was not traced because of processes: one line each, once. */
static void
warn_processes(const struct recorder *r)
{
	struct emu_sideband sb;
	struct error e;
	char *w[16];
	size_t n, i;

	if (emu_sideband_read(&sb, r->scr.path, &e) < 0)
		return;		/* the snapshot said why already */
	n = emu_process_warnings(&sb, w, sizeof(w) / sizeof(w[0]));
	for (i = 0; i < n; i++) {
		report_warning(TOOL, r->program, "%s", w[i]);
		free(w[i]);
	}
	emu_sideband_free(&sb);
}

/* qemu-x86_64 runs ELF files only: a script needs its interpreter named. */
static int
check_elf(const char *path)
{
	unsigned char h[5] = { 0 };
	FILE *f = fopen(path, "re");
	size_t n = f != NULL ? fread(h, 1, sizeof(h), f) : 0;

	if (f != NULL)
		fclose(f);
	if (n == sizeof(h) && memcmp(h, "\177ELF\2", 5) == 0)
		return 0;
	report(TOOL, path, "run its interpreter instead, e.g. "
	    "ptrec -- python3 script.py", "not an x86-64 ELF executable");
	return -1;
}

static int
prepare(struct recorder *r)
{
	struct error e;
	char found[PATH_MAX];

	if (progpath_search(r->o->program[0], NULL, found, sizeof(found),
	    &e) < 0) {
		report_error(TOOL, NULL, &e, NULL);	/* missing, not executable */
		return -1;
	}
	if (realpath(found, r->program) == NULL) {
		report(TOOL, found, NULL, "%s", strerror(errno));
		return -1;
	}
	if (check_elf(r->program) < 0)
		return -1;
	if (capture_lines_init(&r->lines, r->o->trigger_line, &e) < 0) {
		report_error(TOOL, NULL, &e, NULL);
		return -1;
	}
	if (find_plugin(r->plugin, sizeof(r->plugin)) < 0) {
		report(TOOL, PLUGIN_NAME, "set PTKIT_EMU_PLUGIN or reinstall",
		    "not found");
		return -1;
	}
	if (scratch_open(&r->scr, TOOL, &e) < 0) {
		report_error(TOOL, "scratch", &e, NULL);
		return -1;
	}
	if (write_config(r) < 0 || open_channels(r) < 0 ||
	    open_control_fifo(r) < 0)
		return -1;
	return 0;
}

/*
 * The guardian, before qemu starts: qemu's first process dies with us by
 * PR_SET_PDEATHSIG, but the processes the program forks do not (a fork
 * clears it), and a SIGKILL runs none of our cleanup.
 */
static int
start_guard(struct recorder *r)
{
	struct error e;

	if (emu_guard_start(&r->guard, r->scr.path, &e) < 0) {
		report_error(TOOL, NULL, &e, NULL);
		return -1;
	}
	return 0;
}

int
rec_emu_run(const struct rec_options *o)
{
	struct recorder *r;
	struct pending p;
	int status = EXIT_FAIL;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		report(TOOL, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	r->o = o;
	r->events_fd = r->control_fd = r->log_fd = -1;
	r->co.read_fd[0] = r->co.read_fd[1] = -1;
	r->co.write_fd[0] = r->co.write_fd[1] = -1;
	r->scr.slot = -1;
	r->guard.fd = -1;
	memset(&p, 0, sizeof(p));
	r->start_wall_ns = clock_ns(CLOCK_REALTIME);
	progress_init(&r->prog, stderr, -1);
	if (prepare(r) == 0 && catch_signals() == 0 && start_guard(r) == 0 &&
	    (r->clock_wall_ns = clock_wall_origin(r), start_program(r)) == 0) {
		run_loop(r, &p);
		finish(r, &p);
		warn_processes(r);
		/* What the last snapshot lost, last: the line people read. */
		for (size_t i = 0; i < r->lost.n; i++)
			report(TOOL, NULL, NULL, "%s", r->lost.line[i]);
		if (truth_collect(r) < 0)
			r->failed = 1;
		status = r->snapshots > 0 ? EXIT_OK : EXIT_FAIL;
	}
	/* Ended normally (or never started it): what runs on is the
	 * program's. */
	emu_guard_release(&r->guard);
	free(r->argv);
	capture_output_close(&r->co);
	capture_lines_free(&r->lines);
	if (r->ctl != NULL)
		munmap(r->ctl, 4096);
	if (r->events_fd >= 0)
		close(r->events_fd);
	if (r->control_fd >= 0)
		close(r->control_fd);
	if (r->log_fd >= 0)
		close(r->log_fd);
	capture_scratch_close(&r->scr);
	free(r);
	return status;
}

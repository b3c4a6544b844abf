/*
 * Tests for the pt recorder's run (cmd/ptrec/rec_pt.c) on fake rings: the
 * real launch under ptrace, option parsing, output relay, trigger policy
 * and snapshot writing, with the perf events replaced by fakes that count
 * what the recorder asks of them (nothing here claims a hardware result).
 *
 *   - --trigger-line with --repeat 2 on a program that writes four lines
 *     at once and exits: two numbered snapshots, each for its own line,
 *     events disabled for each and enabled again between them;
 *   - --trigger-symbol with --filter: the filter string the event is
 *     opened with, the breakpoint armed at the symbol's runtime address
 *     with hits 1, and the parked thread: helper_trigger raises the
 *     SIGTRAP a sigtrap breakpoint raises, and the snapshot is written
 *     while it waits (its output.log ends before "after");
 *   - --trigger-line with --pid is refused, and so are the perf
 *     recorder's --trigger-symbol and --repeat, before perf starts.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "elfsym.h"
#include "fmt/manifest.h"
#include "options.h"
#include "rec_perf.h"
#include "rec_pt.h"
#include "tap.h"

static struct {
	int opens, enables, disables, closes, snapshots, bps;
	int pause_ok, pauses, counts, group_fd, event_fd;
	uint64_t bp_addr, bp_hits, bp_cookie;
	char filter[1024];
} F;

static int
fake_open(struct ptevent *ev, pid_t tid, const struct ptevent_spec *s,
    struct error *e)
{
	(void)e;
	memset(ev, 0, sizeof(*ev));
	ev->tid = tid;
	ev->fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	F.event_fd = ev->fd;
	ev->aux.size = s->aux_bytes;
	snprintf(F.filter, sizeof(F.filter), "%s", s->filter ? s->filter : "");
	F.opens++;
	return 0;
}

static int
fake_enable(struct ptevent *ev, struct error *e)
{
	(void)ev;
	(void)e;
	F.enables++;
	return 0;
}

static int
fake_disable(struct ptevent *ev, struct error *e)
{
	(void)ev;
	(void)e;
	F.disables++;
	return 0;
}

static int
fake_drain(struct ptevent *ev, ptsb_fn fn, void *arg, struct error *e)
{
	(void)ev;
	(void)fn;
	(void)arg;
	(void)e;
	return 0;
}

/* 64 bytes of a PSB-free pattern: a ring is only copied here. */
static uint64_t
fake_snapshot(struct ptevent *ev, uint8_t *out, int *truncated)
{
	(void)ev;
	memset(out, 0x55, 64);
	*truncated = 0;
	F.snapshots++;
	return 64;
}

static int
fake_time_conv(const struct ptevent *ev, struct perfdata_time_conv *tc,
    struct error *e)
{
	(void)ev;
	memset(tc, 0, sizeof(*tc));
	return error_set(e, ERR_UNSUPPORTED, "fake");
}

static void
fake_close(struct ptevent *ev)
{
	if (ev->fd >= 0) {
		close(ev->fd);
		F.closes++;
	}
	ev->fd = -1;
}

static int
fake_breakpoint(pid_t tid, uint64_t addr, uint64_t hits, uint64_t cookie,
    struct error *e)
{
	(void)tid;
	(void)e;
	F.bps++;
	F.bp_addr = addr;
	F.bp_hits = hits;
	F.bp_cookie = cookie;
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* With pause_ok 0 it fails as a kernel without aux_pause does. */
static int
fake_breakpoint_pause(pid_t tid, uint64_t addr, uint64_t hits, int group_fd,
    struct error *e)
{
	(void)tid;
	if (!F.pause_ok)
		return error_set(e, ERR_IO, "aux_pause breakpoint: Invalid "
		    "argument");
	F.pauses++;
	F.bp_addr = addr;
	F.bp_hits = hits;
	F.group_fd = group_fd;
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The counter: the trigger was hit once. */
static int64_t
fake_breakpoint_count(int fd, struct error *e)
{
	(void)fd;
	(void)e;
	F.counts++;
	return 1;
}

static const struct rec_pt_events fake = {
	fake_open, fake_enable, fake_disable, fake_drain, fake_snapshot,
	fake_time_conv, fake_close, fake_breakpoint, fake_breakpoint_pause,
	fake_breakpoint_count,
};

static struct ptcaps *skylake;
static char tmp[] = "/tmp/t_rec_pt.XXXXXX", helper[PATH_MAX];

/*
 * Runs ptrec's argv on the fakes with caps; stdout and stderr go to
 * files.  pause_ok: the fake kernel takes aux_pause breakpoints.
 */
static int
run_caps(char **argv, int argc, const char *out, const char *err,
    const struct ptcaps *caps, int pause_ok)
{
	struct rec_options o;
	int so = dup(1), se = dup(2), fo, fe, rc;

	memset(&F, 0, sizeof(F));
	F.pause_ok = pause_ok;
	optind = 0;
	if (rec_options_parse(argc, argv, &o) != CLI_RUN)
		return 100;
	fflush(stdout);
	fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = rec_pt_record(&o, caps, &fake) < 0 ? 1 : 0;	/* ptrec's status */
	fflush(stdout);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	close(fo);
	close(fe);
	return rc;
}

static int
run(char **argv, int argc, const char *out, const char *err)
{
	return run_caps(argv, argc, out, err, skylake, 0);
}

static size_t
slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, size - 1, f) : 0;

	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	return n;
}

/* Keeps, in place, only the lines of buf that start with prefix. */
static void
keep_lines(char *buf, const char *prefix)
{
	char *in = buf, *out = buf, *nl;
	size_t n;

	while (*in != '\0') {
		nl = strchr(in, '\n');
		n = nl != NULL ? (size_t)(nl - in) + 1 : strlen(in);
		if (strncmp(in, prefix, strlen(prefix)) == 0) {
			memmove(out, in, n);
			out += n;
		}
		in += n;
	}
	*out = '\0';
}

static const char *
setting(const struct manifest *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->recorder.nr_settings; i++)
		if (strcmp(m->recorder.settings[i].key, key) == 0)
			return m->recorder.settings[i].value;
	return "";
}

static int
read_manifest(const char *dir, struct manifest *m)
{
	char path[PATH_MAX + 32];
	struct error e;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	if (manifest_read(path, m, &e) < 0) {
		DIAG("%s: %s", path, e.msg);
		return -1;
	}
	return 0;
}

static void
test_line_repeat(void)
{
	char dir[PATH_MAX], out[PATH_MAX], err[PATH_MAX], want[3 * PATH_MAX];
	char buf[8192], path[PATH_MAX + 32];
	char *argv[] = { "ptrec", "--aux-bytes", "64K", "--budget-bytes",
	    "1M", "--trigger-line", "^tick [24]$", "--repeat", "2", "-o", dir,
	    "--", helper, "lines", NULL };
	struct manifest m;
	int k;

	snprintf(dir, sizeof(dir), "%s/line", tmp);
	snprintf(out, sizeof(out), "%s/line.out", tmp);
	snprintf(err, sizeof(err), "%s/line.err", tmp);
	IS_INT(run(argv, 14, out, err), 0, "exit status 0");
	slurp(out, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s\n%s.2\n", dir, dir);
	IS_STR(buf, want, "two snapshot lines, numbered as emu numbers them");
	for (k = 1; k <= 2; k++) {
		snprintf(path, sizeof(path), k == 1 ? "%s" : "%s.2", dir);
		if (read_manifest(path, &m) < 0) {
			OK(0, "snapshot %d", k);
			continue;
		}
		IS_STR(m.trigger.kind, "line", "snapshot %d: kind line", k);
		IS_STR(m.trigger.detail ? m.trigger.detail : "", "^tick [24]$",
		    "snapshot %d: detail is the regex", k);
		IS_STR(m.recorder.backend, "pt", "snapshot %d: backend pt", k);
		IS_INT((int)m.nr_threads, 1, "snapshot %d: one thread", k);
		manifest_free(&m);
		snprintf(path, sizeof(path), k == 1 ? "%s/output.log" :
		    "%s.2/output.log", dir);
		slurp(path, buf, sizeof(buf));
		OK(strstr(buf, k == 1 ? "tick 2\n" : "tick 4\n") != NULL,
		    "snapshot %d: output.log has its line", k);
	}
	IS_INT(F.opens, 1, "one event");
	IS_INT(F.disables, 2, "disabled for each snapshot");
	/* Whether it is enabled again depends on the program still running. */
	OK(F.enables >= 1, "enabled at the start");
	IS_INT(F.snapshots, 2, "its ring copied twice");
	IS_INT(F.closes, 1, "closed after the last");
	IS_INT(F.bps, 0, "no breakpoint");
	IS_STR(F.filter, "", "no filter");
}

static void
test_symbol_park(void)
{
	char dir[PATH_MAX], out[PATH_MAX], err[PATH_MAX], want[3 * PATH_MAX];
	char buf[8192], path[PATH_MAX + 32], cookie[32], real[PATH_MAX];
	char *argv[] = { "ptrec", "--aux-bytes", "64K", "--budget-bytes",
	    "1M", "--trigger-symbol", "trigger_here", "--filter",
	    "trigger_here", "-o", dir, "--", helper, "trap", cookie, NULL };
	unsigned long long addr = 0;
	uint64_t off = 0, size = 0;
	struct manifest m;
	struct error e;

	snprintf(cookie, sizeof(cookie), "%llu",
	    (unsigned long long)REC_PT_BP_COOKIE);
	snprintf(dir, sizeof(dir), "%s/sym", tmp);
	snprintf(out, sizeof(out), "%s/sym.out", tmp);
	snprintf(err, sizeof(err), "%s/sym.err", tmp);
	IS_INT(run(argv, 15, out, err), 0, "exit status 0");
	slurp(out, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s\n", dir);
	IS_STR(buf, want, "one snapshot line");
	if (read_manifest(dir, &m) == 0) {
		IS_STR(m.trigger.kind, "symbol", "kind symbol");
		IS_STR(m.trigger.detail ? m.trigger.detail : "", "trigger_here",
		    "detail is the symbol");
		IS_STR(setting(&m, "trigger_mode"), "park",
		    "kernel 6.1, no aux_pause: the thread is parked");
		IS_STR(m.target.state, "running",
		    "written while the program waits at the trigger");
		manifest_free(&m);
	} else {
		OK(0, "manifest");
	}
	snprintf(path, sizeof(path), "%s/output.log", dir);
	slurp(path, buf, sizeof(buf));
	OK(sscanf(buf, "before %llx\n", &addr) == 1,
	    "output.log starts with what the program wrote before");
	OK(strstr(buf, "after") == NULL,
	    "output.log ends at the trigger: the thread was parked");
	slurp(err, buf, sizeof(buf));
	OK(strstr(buf, "after\n") != NULL,
	    "then the program went on: our SIGTRAP was swallowed");
	IS_INT(F.bps, 1, "one breakpoint (one thread)");
	IS_U64(F.bp_addr, addr, "at trigger_here's runtime address");
	IS_U64(F.bp_hits, 1, "hits 1");
	IS_U64(F.bp_cookie, REC_PT_BP_COOKIE, "with our cookie");
	if (realpath(helper, real) == NULL ||
	    elfsym_lookup(real, "trigger_here", &off, &size, &e) < 0)
		DIAG("elfsym: %s", e.msg);
	snprintf(want, sizeof(want), "filter 0x%" PRIx64 "/0x%" PRIx64 "@%s",
	    off, size, real);
	IS_STR(F.filter, want, "the event opened with the kernel's filter");
	IS_INT(F.disables, 1, "disabled once");
	IS_INT(F.closes, 1, "closed after the only snapshot");
}

/* --repeat 2 with the parked thread: re-enabled between the two. */
static void
test_symbol_repeat(void)
{
	char dir[PATH_MAX], out[PATH_MAX], err[PATH_MAX], want[3 * PATH_MAX];
	char buf[8192], path[PATH_MAX + 32], cookie[32];
	char *argv[] = { "ptrec", "--aux-bytes", "64K", "--budget-bytes",
	    "1M", "--trigger-symbol", "trigger_here", "--repeat", "2", "-o",
	    dir, "--", helper, "trap", cookie, "2", NULL };
	struct manifest m;

	snprintf(cookie, sizeof(cookie), "%llu",
	    (unsigned long long)REC_PT_BP_COOKIE);
	snprintf(dir, sizeof(dir), "%s/rep", tmp);
	snprintf(out, sizeof(out), "%s/rep.out", tmp);
	snprintf(err, sizeof(err), "%s/rep.err", tmp);
	IS_INT(run(argv, 16, out, err), 0, "repeat: exit 0");
	slurp(out, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s\n%s.2\n", dir, dir);
	IS_STR(buf, want, "two snapshots");
	snprintf(path, sizeof(path), "%s.2", dir);
	if (read_manifest(path, &m) == 0) {
		IS_STR(m.trigger.kind, "symbol", "the second at the second hit");
		manifest_free(&m);
	} else {
		OK(0, "manifest");
	}
	snprintf(path, sizeof(path), "%s/output.log", dir);
	slurp(path, buf, sizeof(buf));
	OK(strstr(buf, "between") == NULL, "the first ends at the first hit");
	snprintf(path, sizeof(path), "%s.2/output.log", dir);
	slurp(path, buf, sizeof(buf));
	OK(strstr(buf, "between 1\n") != NULL && strstr(buf, "after") == NULL,
	    "the second ends at the second hit");
	IS_INT(F.disables, 2, "disabled for each");
	IS_INT(F.enables, 2, "enabled at the start and again after the first");
	IS_INT(F.snapshots, 2, "copied twice");
	IS_INT(F.closes, 1, "closed after the last");
}

/*
 * A 6.13 kernel: the breakpoint goes into the PT event's group with
 * aux_pause and nothing stops the thread; its counter tells the recorder.
 * When the kernel refuses it anyway, the parked thread takes over.
 */
static void
test_symbol_pause(void)
{
	char dir[PATH_MAX], out[PATH_MAX], err[PATH_MAX], buf[8192];
	char *argv[] = { "ptrec", "--aux-bytes", "64K", "--budget-bytes",
	    "1M", "--trigger-symbol", "trigger_here", "-o", dir, "--", helper,
	    "lines", NULL };
	struct ptcaps *c = malloc(sizeof(*c));
	struct manifest m;

	if (c == NULL)
		return;
	*c = *skylake;
	snprintf(c->kernel.release, sizeof(c->kernel.release), "6.13.0");
	c->kernel.major = 6;
	c->kernel.minor = 13;
	snprintf(dir, sizeof(dir), "%s/pause", tmp);
	snprintf(out, sizeof(out), "%s/pause.out", tmp);
	snprintf(err, sizeof(err), "%s/pause.err", tmp);
	IS_INT(run_caps(argv, 12, out, err, c, 1), 0, "aux_pause: exit 0");
	IS_INT(F.pauses, 1, "an aux_pause breakpoint");
	IS_INT(F.group_fd, F.event_fd, "in the PT event's group");
	IS_U64(F.bp_hits, 1, "hits 1");
	IS_INT(F.bps, 0, "no sigtrap breakpoint");
	OK(F.counts >= 1, "its counter read (%d times)", F.counts);
	if (read_manifest(dir, &m) == 0) {
		IS_STR(m.trigger.kind, "symbol", "the counter's hit is the "
		    "trigger");
		IS_STR(setting(&m, "trigger_mode"), "aux_pause",
		    "trigger_mode aux_pause");
		manifest_free(&m);
	} else {
		OK(0, "manifest");
	}

	snprintf(dir, sizeof(dir), "%s/pause-refused", tmp);
	IS_INT(run_caps(argv, 12, out, err, c, 0), 0,
	    "aux_pause refused: exit 0");
	IS_INT(F.pauses, 0, "no aux_pause breakpoint");
	IS_INT(F.bps, 1, "a sigtrap breakpoint instead");
	slurp(err, buf, sizeof(buf));
	OK(strstr(buf, "--trigger-symbol: aux_pause breakpoint: Invalid "
	    "argument; the thread is parked at the trigger until the snapshot "
	    "is written instead\n") != NULL, "says so");
	if (read_manifest(dir, &m) == 0) {
		IS_STR(setting(&m, "trigger_mode"), "park",
		    "trigger_mode park");
		manifest_free(&m);
	} else {
		OK(0, "manifest");
	}
	free(c);
}

/*
 * --control FIFO, as ptmcp drives it: "snapshot" takes one without using
 * up --repeat, an unknown command is answered so, "stop" ends the run
 * with a snapshot; each is acknowledged on stderr, so that stdout holds
 * the snapshot paths only.  The program (asleep for a minute) is killed at the stop.
 */
static void
test_control(void)
{
	char dir[PATH_MAX], out[PATH_MAX], err[PATH_MAX], fifo[PATH_MAX];
	char want[3 * PATH_MAX], buf[8192], path[PATH_MAX + 32];
	char *argv[] = { "ptrec", "--aux-bytes", "64K", "--budget-bytes",
	    "1M", "--control", fifo, "-o", dir, "--", helper, "sleep", "60",
	    NULL };
	static const char cmds[] = "snapshot\nbogus\nstop\nsnapshot\n";
	struct manifest m;
	int fd, k;

	snprintf(dir, sizeof(dir), "%s/ctl", tmp);
	snprintf(out, sizeof(out), "%s/ctl.out", tmp);
	snprintf(err, sizeof(err), "%s/ctl.err", tmp);
	snprintf(fifo, sizeof(fifo), "%s/ctl.fifo", tmp);
	if (mkfifo(fifo, 0600) < 0 ||
	    (fd = open(fifo, O_RDWR | O_NONBLOCK)) < 0 ||
	    write(fd, cmds, sizeof(cmds) - 1) != (ssize_t)sizeof(cmds) - 1) {
		OK(0, "fifo");
		return;
	}
	IS_INT(run(argv, 13, out, err), 0, "--control: exit 0");
	close(fd);
	slurp(out, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s\n%s.2\n", dir, dir);
	IS_STR(buf, want, "stdout: the two snapshots' paths only");
	slurp(err, buf, sizeof(buf));
	keep_lines(buf, "ptrec: ");	/* not the program's own output */
	IS_STR(buf, "ptrec: control: snapshot: ok\nptrec: control: bogus: "
	    "unknown command\nptrec: control: stop: ok\n", "stderr: three "
	    "answers; nothing read after stop");
	for (k = 1; k <= 2; k++) {
		snprintf(path, sizeof(path), k == 1 ? "%s" : "%s.2", dir);
		if (read_manifest(path, &m) < 0) {
			OK(0, "manifest %d", k);
			continue;
		}
		IS_STR(m.trigger.kind, "control", "snapshot %d: kind control",
		    k);
		IS_STR(m.target.state, "running", "snapshot %d: while it ran",
		    k);
		manifest_free(&m);
	}
	IS_INT(F.disables, 2, "disabled for each");
	IS_INT(F.enables, 2, "enabled again after the request");
}

/*
 * ptrec's argv through rec_perf_run, or rec_perf_record with caps when
 * caps is not NULL; stdout and stderr go to files.
 */
static int
run_perf_caps(char **argv, int argc, const char *out, const char *err,
    const struct ptcaps *caps)
{
	struct rec_options o;
	int so = dup(1), se = dup(2), fo, fe, rc;

	optind = 0;
	if (rec_options_parse(argc, argv, &o) != CLI_RUN)
		return 100;
	fflush(stdout);
	fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	if (caps != NULL)
		rc = rec_perf_record(&o, caps) < 0 ? 1 : 0;	/* ptrec's status */
	else
		rc = rec_perf_run(&o);
	fflush(stdout);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	close(fo);
	close(fe);
	return rc;
}

/*
 * The perf recorder over helper_fakeperf: the argv perf gets (-Se, the
 * kernel's filter string), the program's output relayed into output.log
 * and matched by --trigger-line, perf stopped with SIGINT at the line;
 * and, without a trigger, the snapshot perf's -Se takes at the program's
 * exit.
 */
static void
test_perf_fake(void)
{
	char dir[PATH_MAX], out[PATH_MAX], err[PATH_MAX], args[PATH_MAX];
	char want[3 * PATH_MAX], buf[8192], path[PATH_MAX + 32];
	char real[PATH_MAX], *p;
	char *line[] = { "ptrec", "--recorder", "perf", "--aux-bytes", "64K",
	    "--budget-bytes", "1M", "--filter", "trigger_here",
	    "--trigger-line", "^sleeping$", "-o", dir, "--", helper, "sleep",
	    "60", NULL };
	char *ex[] = { "ptrec", "--recorder", "perf", "--aux-bytes", "64K",
	    "--budget-bytes", "1M", "-o", dir, "--", helper, "lines", NULL };
	const char *src = getenv("PTKIT_SRC"), *b = getenv("PTKIT_BUILD");
	struct ptcaps *c = malloc(sizeof(*c));
	uint64_t off = 0, size = 0;
	struct manifest m;
	struct error e;

	if (c == NULL)
		return;
	*c = *skylake;
	snprintf(c->tools.perf_path, sizeof(c->tools.perf_path),
	    "%s/tests/unit/helper_fakeperf", b != NULL ? b : "build");
	snprintf(path, sizeof(path), "%s/tests/data/perf-record/cpu-clock.data",
	    src != NULL ? src : ".");
	snprintf(args, sizeof(args), "%s/fakeperf.argv", tmp);
	setenv("FAKEPERF_DATA", path, 1);
	setenv("FAKEPERF_ARGV", args, 1);
	snprintf(dir, sizeof(dir), "%s/perf-line", tmp);
	snprintf(out, sizeof(out), "%s/perf.out", tmp);
	snprintf(err, sizeof(err), "%s/perf.err", tmp);
	IS_INT(run_perf_caps(line, 17, out, err, c), 0, "perf, line: exit 0");
	slurp(out, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s\n", dir);
	IS_STR(buf, want, "one snapshot line");
	slurp(args, buf, sizeof(buf));
	OK(strstr(buf, "\n-Se\n") != NULL, "perf record -Se");
	if (realpath(helper, real) == NULL ||
	    elfsym_lookup(real, "trigger_here", &off, &size, &e) < 0)
		DIAG("elfsym: %s", e.msg);
	snprintf(want, sizeof(want), "\n--filter\nfilter 0x%" PRIx64 "/0x%"
	    PRIx64 "@%s\n", off, size, real);
	OK(strstr(buf, want) != NULL, "--filter with the kernel's string");
	p = strstr(buf, "\n--\n");
	snprintf(want, sizeof(want), "\n--\n%s\nsleep\n60\n", helper);
	IS_STR(p != NULL ? p : "", want, "the program last");
	if (read_manifest(dir, &m) == 0) {
		IS_STR(m.trigger.kind, "line", "kind line");
		IS_STR(m.trigger.detail ? m.trigger.detail : "", "^sleeping$",
		    "detail is the regex");
		IS_STR(m.recorder.backend, "perf", "backend perf");
		OK(strncmp(setting(&m, "filter"), "filter 0x", 9) == 0,
		    "settings.filter");
		manifest_free(&m);
	} else {
		OK(0, "manifest");
	}
	snprintf(path, sizeof(path), "%s/output.log", dir);
	slurp(path, buf, sizeof(buf));
	IS_STR(buf, "sleeping\n", "output.log is the program's output");

	snprintf(dir, sizeof(dir), "%s/perf-exit", tmp);
	IS_INT(run_perf_caps(ex, 12, out, err, c), 0, "perf, exit: exit 0");
	if (read_manifest(dir, &m) == 0) {
		IS_STR(m.trigger.kind, "exit",
		    "the program ended first: perf's -Se snapshot is the one");
		IS_STR(m.target.state, "exited", "state exited");
		manifest_free(&m);
	} else {
		OK(0, "manifest");
	}
	snprintf(path, sizeof(path), "%s/output.log", dir);
	slurp(path, buf, sizeof(buf));
	IS_STR(buf, "tick 1\ntick 2\ntick 3\ntick 4\n", "all its output");
	free(c);
}

static int
run_perf(char **argv, int argc, const char *out, const char *err)
{
	return run_perf_caps(argv, argc, out, err, NULL);
}

/* What the perf recorder cannot do, it refuses before starting perf. */
static void
test_perf_refusals(void)
{
	char out[PATH_MAX], err[PATH_MAX], buf[1024];
	char *sym[] = { "ptrec", "--recorder", "perf", "--trigger-symbol",
	    "main", "--", "true", NULL };
	char *rep[] = { "ptrec", "--recorder", "perf", "--repeat", "2",
	    "--after-ms", "10", "--", "true", NULL };
	char *ctl[] = { "ptrec", "--recorder", "perf", "--control", "/x",
	    "--", "true", NULL };

	snprintf(out, sizeof(out), "%s/perf.out", tmp);
	snprintf(err, sizeof(err), "%s/perf.err", tmp);
	IS_INT(run_perf(sym, 7, out, err), 1, "perf: --trigger-symbol fails");
	slurp(err, buf, sizeof(buf));
	IS_STR(buf, "ptrec: --trigger-symbol: the perf recorder has no symbol "
	    "trigger: use --recorder pt, which arms a hardware breakpoint per "
	    "thread, or --recorder emu\n", "and says what to use");
	IS_INT(run_perf(rep, 9, out, err), 1, "perf: --repeat 2 fails");
	slurp(err, buf, sizeof(buf));
	IS_STR(buf, "ptrec: --repeat: the perf recorder takes one snapshot per "
	    "run (perf keeps every snapshot of a run in one perf.data): use "
	    "--recorder pt or --recorder emu\n", "and says why");
	IS_INT(run_perf(ctl, 7, out, err), 1, "perf: --control fails");
	slurp(err, buf, sizeof(buf));
	IS_STR(buf, "ptrec: --control: the perf recorder takes no --control "
	    "requests (one snapshot per run, at its trigger or exit): use "
	    "--recorder pt or --recorder emu\n", "and says why");
	slurp(out, buf, sizeof(buf));
	IS_STR(buf, "", "no snapshot line");
}

static void
test_refusals(void)
{
	char out[PATH_MAX], err[PATH_MAX], buf[1024];
	char *argv[] = { "ptrec", "--pid", "1", "--trigger-line", "x", NULL };

	snprintf(out, sizeof(out), "%s/pid.out", tmp);
	snprintf(err, sizeof(err), "%s/pid.err", tmp);
	IS_INT(run(argv, 5, out, err), 1, "--pid with --trigger-line fails");
	slurp(err, buf, sizeof(buf));
	IS_STR(buf, "ptrec: --trigger-line: with --pid the program's output "
	    "is not ptrec's to read: launch the program with ptrec, or use "
	    "--trigger-symbol\n", "and says why");
	IS_INT(F.opens, 0, "before any event");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC"), *b = getenv("PTKIT_BUILD");
	char root[4200];
	struct error e;

	alarm(120);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/skylake",
	    src != NULL ? src : ".");
	snprintf(helper, sizeof(helper), "%s/tests/unit/helper_trigger",
	    b != NULL ? b : "build");
	if (mkdtemp(tmp) == NULL || (skylake = malloc(sizeof(*skylake))) ==
	    NULL || ptcaps_probe(skylake, root, PTCAPS_NO_TOOLS, &e) < 0) {
		OK(0, "setup %s", root);
		return tap_done();
	}
	setenv("TMPDIR", tmp, 1);
	test_line_repeat();
	test_symbol_park();
	test_symbol_repeat();
	test_symbol_pause();
	test_control();
	test_refusals();
	test_perf_refusals();
	test_perf_fake();
	free(skylake);
	STEP(cleanup_remove_tree(tmp));
	return tap_done();
}

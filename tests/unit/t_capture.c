/*
 * Tests for cmd/ptrec/capture: the decisions the hardware recorders make
 * without hardware.  --filter resolved to the kernel's exact string on
 * the fake Skylake tree (symbols of this very test program, checked
 * against where the loader put them), the trigger symbol's runtime
 * address, --trigger-line matching across reads and streams, the relay
 * into output.log, the trigger policy (--min-capture-ms, --tail-ms,
 * --after-ms, --max-capture-ms, --repeat) step by step, how the symbol
 * trigger is armed, and pttrace_launch_io's pipes (what rec_pt reads the
 * program's output from).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "rec/procmaps.h"
#include "rec/pttrace.h"
#include "tap.h"

/* A function of ours to filter on and to find at run time. */
__attribute__((noinline)) int capture_test_target(int x);

__attribute__((noinline)) int
capture_test_target(int x)
{
	return x * 3 + 1;
}

static struct ptcaps skylake;
static char self[PATH_MAX];

static struct rec_options
opts(void)
{
	struct rec_options o;

	memset(&o, 0, sizeof(o));
	o.repeat = 1;
	return o;
}

/* capture_test_target's file offset, from the loader's mapping of us. */
static uint64_t
expected_offset(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)&capture_test_target;
	struct procmaps m;
	struct error e;
	uint64_t off = 0;
	size_t i;

	if (procmaps_read(getpid(), 1, &m, &e) < 0)
		return 0;
	for (i = 0; i < m.n; i++)
		if (addr >= m.v[i].start && addr < m.v[i].end)
			off = addr - m.v[i].start + m.v[i].pgoff;
	procmaps_free(&m);
	return off;
}

static void
test_filters(void)
{
	struct capture_filters cf;
	struct ptfilter f;
	char path[PATH_MAX], sh[PATH_MAX], buf[8192], want[3 * PATH_MAX];
	const char *specs[3];
	struct error e;
	uint64_t off = expected_offset();

	OK(off != 0, "capture_test_target is mapped from %s", self);
	IS_INT(capture_filter_parse(self, "capture_test_target", &f, path,
	    sizeof(path), &e), 0, "a symbol of the program");
	IS_U64(f.offset, off, "its FILE offset, as the loader mapped it");
	OK(f.size > 0 && f.size < 256, "its size (%" PRIu64 ")", f.size);
	IS_STR(f.path, self, "the program's absolute path");

	OK(realpath("/bin/sh", sh) != NULL, "/bin/sh resolves");
	IS_INT(capture_filter_parse(self, "0x1040/0x2a@/bin/sh", &f, path,
	    sizeof(path), &e), 0, "ADDR/SIZE@FILE");
	IS_U64(f.offset, 0x1040, "offset taken as given");
	IS_U64(f.size, 0x2a, "size taken as given");
	IS_STR(f.path, sh, "FILE made absolute, links resolved");

	IS_INT(capture_filter_parse(self, "0x10/0x10@/nonexistent/x", &f,
	    path, sizeof(path), &e), -ERR_INVALID, "a missing FILE");
	IS_STR(e.msg, "/nonexistent/x: No such file or directory",
	    "missing FILE message");

	specs[0] = "capture_test_target";
	specs[1] = "4096/16@/bin/sh";
	specs[2] = "no_such_function_here";
	IS_INT(capture_filters_resolve(self, specs, 2, &cf, &e), 0,
	    "two filters resolve");
	IS_INT(ptfilter_string(&skylake, cf.f, cf.n, buf, sizeof(buf), &e) > 0,
	    1, "their kernel string");
	snprintf(want, sizeof(want), "filter 0x%" PRIx64 "/0x%" PRIx64 "@%s,"
	    "filter 0x1000/0x10@%s", off, cf.f[0].size, self, sh);
	IS_STR(buf, want, "exact PERF_EVENT_IOC_SET_FILTER string");

	IS_INT(capture_filters_resolve(self, specs, 3, &cf, &e),
	    -ERR_NOTFOUND, "an unknown symbol");
	snprintf(want, sizeof(want), "--filter no_such_function_here: %s: "
	    "no function 'no_such_function_here'", self);
	IS_STR(e.msg, want, "names the spec and the file");
	IS_INT(cf.n, 2, "the two before it were resolved");

	/* The fake Skylake has 2 ranges: a third is refused with the doctor's
	 * sentence, before any event is opened. */
	specs[2] = "0x0/0x8@/bin/sh";
	IS_INT(capture_filters_resolve(self, specs, 3, &cf, &e), 0,
	    "three filters resolve");
	IS_INT(ptfilter_string(&skylake, cf.f, cf.n, buf, sizeof(buf), &e),
	    -ERR_UNSUPPORTED, "three filters, two ranges");
	IS_STR(e.msg, "3 filters asked, and this CPU has 2 address ranges "
	    "(caps/num_address_ranges)", "too many message");
}

static void
test_runtime_addr(void)
{
	struct procmaps m;
	struct error e;
	uint64_t off = expected_offset();

	if (procmaps_read(getpid(), 1, &m, &e) < 0) {
		OK(0, "maps: %s", e.msg);
		return;
	}
	IS_U64(capture_runtime_addr(&m, self, off),
	    (uint64_t)(uintptr_t)&capture_test_target,
	    "file offset back to the runtime address (the breakpoint's)");
	IS_U64(capture_runtime_addr(&m, "/no/such/file", off), 0,
	    "a file not mapped: 0");
	IS_U64(capture_runtime_addr(&m, self, UINT64_C(1) << 40), 0,
	    "an offset beyond every mapping: 0");
	procmaps_free(&m);
}

static void
test_lines(void)
{
	struct capture_lines l;
	struct error e;
	char big[5000];

	IS_INT(capture_lines_init(&l, "^TRIG [0-9]+$", &e), 0, "regex");
	IS_INT(capture_lines_feed(&l, 0, "hel", 3), 0, "no line yet");
	IS_INT(capture_lines_feed(&l, 0, "lo\nTRIG 1\nTRI", 13), 1,
	    "one matching line of two");
	IS_INT(capture_lines_feed(&l, 1, "G 9\n", 4), 0,
	    "stderr has its own line: 'G 9' does not match");
	IS_INT(capture_lines_feed(&l, 0, "G 2\nTRIG 3\n", 11), 2,
	    "a line split across reads, then another");
	memset(big, 'x', sizeof(big));
	IS_INT(capture_lines_feed(&l, 1, big, sizeof(big)), 0,
	    "a long line, unfinished");
	IS_INT(capture_lines_feed(&l, 1, "TRIG 4\n", 7), 0,
	    "its end beyond 4095 bytes is not matched");
	IS_INT(capture_lines_feed(&l, 1, "TRIG 5\n", 7), 1,
	    "the next line is");
	capture_lines_free(&l);

	IS_INT(capture_lines_init(&l, "(", &e), -ERR_INVALID, "a bad regex");
	OK(strncmp(e.msg, "--trigger-line '(': ", 20) == 0, "message: %s",
	    e.msg);
	IS_INT(capture_lines_init(&l, NULL, &e), 0, "no --trigger-line");
	IS_INT(capture_lines_feed(&l, 0, "TRIG 1\n", 7), 0, "matches nothing");
	capture_lines_free(&l);
}

static void
test_relay(void)
{
	char logp[] = "/tmp/t_capture.XXXXXX", buf[64];
	struct capture_lines l;
	unsigned matched;
	struct error e;
	int p[2], log_fd, saved, devnull;
	ssize_t n;

	if (pipe2(p, O_NONBLOCK) < 0 || (log_fd = mkstemp(logp)) < 0) {
		OK(0, "pipe, log");
		return;
	}
	capture_lines_init(&l, "ready", &e);
	OK(write(p[1], "a\nready 1\n", 10) == 10, "the program writes");
	/* What would go to ptrec's stderr goes nowhere here. */
	saved = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	IS_INT(capture_relay(&p[0], 0, log_fd, &l, &matched), 10,
	    "10 bytes relayed");
	IS_INT(matched, 1, "one matching line");
	IS_INT(capture_relay(&p[0], 0, log_fd, &l, &matched), 0,
	    "nothing more ready");
	close(p[1]);
	IS_INT(capture_relay(&p[0], 0, log_fd, &l, &matched), -1,
	    "end of file");
	dup2(saved, 2);
	close(saved);
	close(devnull);
	IS_INT(p[0], -1, "the read end is closed");
	n = pread(log_fd, buf, sizeof(buf), 0);
	IS_MEM(buf, "a\nready 1\n", n == 10 ? 10 : 0, "output.log has it");
	IS_INT((int)n, 10, "all of it");
	close(log_fd);
	unlink(logp);
	capture_lines_free(&l);
}

static void
test_policy_tail_repeat(void)
{
	struct rec_options o = opts();
	struct capture_policy p;

	o.min_capture_ms = 100;
	o.tail_ms = 50;
	o.has_tail_ms = 1;
	o.repeat = 2;
	capture_policy_init(&p, &o, 1000);
	IS_INT(capture_on_trigger(&p, 1050), CAPTURE_NONE,
	    "before --min-capture-ms: ignored");
	IS_INT(capture_on_trigger(&p, 1100), CAPTURE_TAIL, "then a tail");
	IS_U64(capture_wait_ms(&p, 1110), 40, "its deadline in 40 ms");
	IS_INT(capture_on_trigger(&p, 1120), CAPTURE_NONE,
	    "a trigger during the tail: ignored");
	OK(capture_due(&p, 1149) == NULL, "tail not over at 1149");
	IS_STR(capture_due(&p, 1150), "tail", "tail over at 1150");
	IS_INT(capture_taken(&p, "tail"), 0, "snapshot 1 of 2: go on");
	IS_U64(p.taken, 1, "counted");
	IS_INT(capture_on_trigger(&p, 1200), CAPTURE_TAIL, "second trigger");
	IS_STR(capture_due(&p, 1260), "tail", "second tail");
	IS_INT(capture_taken(&p, "tail"), 1, "snapshot 2 of 2: the last");
	IS_INT(capture_on_trigger(&p, 1300), CAPTURE_NONE, "done: ignored");
	OK(capture_due(&p, 99999) == NULL, "done: nothing due");
	IS_U64(capture_wait_ms(&p, 1300), UINT64_MAX, "done: no deadline");
}

static void
test_policy_times(void)
{
	struct rec_options o = opts();
	struct capture_policy p;

	o.after_ms = 100;
	o.has_after_ms = 1;
	o.max_capture_ms = 250;
	o.has_max_capture_ms = 1;
	o.repeat = 5;
	capture_policy_init(&p, &o, 1000);
	OK(capture_due(&p, 1099) == NULL, "nothing at 1099");
	IS_STR(capture_due(&p, 1100), "after-ms", "--after-ms at 1100");
	IS_INT(capture_taken(&p, "after-ms"), 0, "repeat: go on");
	IS_U64(capture_wait_ms(&p, 1150), 50, "re-armed for 1200");
	IS_STR(capture_due(&p, 1200), "after-ms", "again at 1200");
	IS_INT(capture_taken(&p, "after-ms"), 0, "2 of 5");
	IS_STR(capture_due(&p, 1250), "max-capture",
	    "--max-capture-ms before the next --after-ms");
	IS_INT(capture_taken(&p, "max-capture"), 1, "max-capture is the last");

	o = opts();
	o.trigger_symbol = "f";
	capture_policy_init(&p, &o, 0);
	IS_INT(capture_on_trigger(&p, 0), CAPTURE_SNAPSHOT,
	    "no tail, no minimum: snapshot at once");
	IS_INT(capture_taken(&p, "symbol"), 1, "--repeat 1: the last");

	o.repeat = 2;
	capture_policy_init(&p, &o, 0);
	IS_INT(capture_taken(&p, "control"), 0, "a --control request: go on");
	IS_INT(capture_taken(&p, "control"), 0, "it does not use up --repeat");
	IS_INT(capture_taken(&p, "symbol"), 0, "1 of 2");
	IS_U64(p.taken, 3, "3 snapshots numbered");
	IS_INT(capture_taken(&p, "symbol"), 1, "2 of 2: the last");

	o.repeat = 3;
	capture_policy_init(&p, &o, 0);
	IS_INT(capture_taken(&p, "exit"), 1, "the program's exit ends it");
	capture_policy_init(&p, &o, 0);
	IS_INT(capture_taken(&p, "signal"), 1, "so does its death by a "
	    "signal");
	capture_policy_init(&p, &o, 0);
	IS_INT(capture_taken(&p, "sigint"), 1, "and SIGINT to ptrec");
	capture_policy_init(&p, &o, 0);
	IS_INT(capture_taken(&p, "sigterm"), 1, "and SIGTERM to ptrec");
}

static void
test_bp_mode(void)
{
	struct rec_options o = opts();

	IS_INT(capture_bp_mode(&o, 1), CAPTURE_BP_NONE, "no symbol: none");
	o.trigger_symbol = "f";
	IS_INT(capture_bp_mode(&o, 1), CAPTURE_BP_PAUSE,
	    "kernel 6.13+: aux_pause");
	IS_INT(capture_bp_mode(&o, 0), CAPTURE_BP_PARK, "older: park");
	IS_INT(capture_bp_mode(&o, -1), CAPTURE_BP_PARK, "unknown: park");
	o.repeat = 3;
	IS_INT(capture_bp_mode(&o, 1), CAPTURE_BP_PARK,
	    "--repeat: park (a paused trace has no tested resume)");
	o.repeat = 1;
	o.tail_ms = 20;
	o.has_tail_ms = 1;
	IS_INT(capture_bp_mode(&o, 1), CAPTURE_BP_TAIL,
	    "--tail-ms: the thread goes on tracing");
	IS_STR(capture_bp_mode_name(CAPTURE_BP_PAUSE), "aux_pause",
	    "manifest name");
	IS_STR(capture_bp_mode_name(CAPTURE_BP_PARK), "park", "park name");
	IS_STR(capture_bp_mode_name(CAPTURE_BP_TAIL), "tail", "tail name");
	OK(capture_bp_mode_name(CAPTURE_BP_NONE) == NULL, "none: no setting");
	IS_STR(capture_bp_mode_text(CAPTURE_BP_PAUSE), "aux_pause: the trace "
	    "ends at the trigger, the thread runs on", "pause text");
	IS_STR(capture_bp_mode_text(CAPTURE_BP_PARK), "the thread is parked "
	    "at the trigger until the snapshot is written", "park text");
}

static int
no_op_thread(pid_t tid, void *arg)
{
	(void)tid;
	(void)arg;
	return 0;
}

static void
test_launch_io(void)
{
	char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	struct pttrace_ops ops = { no_op_thread, NULL, NULL, NULL, NULL };
	struct pttrace t;
	struct error e;
	char buf[2][16];
	int p[2][2], wr[2], i;
	ssize_t n[2];

	for (i = 0; i < 2; i++) {
		if (pipe2(p[i], O_CLOEXEC) < 0) {
			OK(0, "pipe");
			return;
		}
		wr[i] = p[i][1];
	}
	IS_INT(pttrace_launch_io(&t, argv, NULL, wr, &ops, &e), 0,
	    "launch with pipes");
	close(wr[0]);
	close(wr[1]);
	IS_INT(pttrace_run(&t, &e), PTTRACE_DONE, "runs to its end");
	IS_INT(t.exit_code, 3, "exit status 3");
	pttrace_free(&t);
	for (i = 0; i < 2; i++) {
		n[i] = read(p[i][0], buf[i], sizeof(buf[i]));
		close(p[i][0]);
	}
	IS_MEM(buf[0], "out\n", n[0] == 4 ? 4 : 0, "stdout in the first pipe");
	IS_MEM(buf[1], "err\n", n[1] == 4 ? 4 : 0, "stderr in the second");
	IS_INT((int)(n[0] + n[1]), 8, "nothing else");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char root[4200];
	struct error e;

	snprintf(root, sizeof(root), "%s/tests/fixtures/sysfs/skylake",
	    src != NULL ? src : ".");
	if (ptcaps_probe(&skylake, root, PTCAPS_NO_TOOLS, &e) < 0 ||
	    realpath("/proc/self/exe", self) == NULL) {
		OK(0, "probe %s: %s", root, e.msg);
		return tap_done();
	}
	test_filters();
	test_runtime_addr();
	test_lines();
	test_relay();
	test_policy_tail_repeat();
	test_policy_times();
	test_bp_mode();
	test_launch_io();
	return tap_done();
}

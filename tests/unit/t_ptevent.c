/*
 * Tests for lib/ptevent on this machine's kernel: a software dummy event
 * per thread (no Intel PT needed), opened under pttrace before each thread
 * runs; each thread's own sideband ring must hold that thread's records:
 * the main thread's MMAP2 of libc and a FORK per thread it made, each
 * other thread's EXIT, every sample_id naming the ring's thread.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec/ptevent.h"
#include "rec/ptprobe.h"
#include "rec/pttrace.h"
#include "tap.h"

#define MAXT 16

struct ring {
	pid_t tid;
	struct ptevent ev;
	int mmap_libc, forks, exits, comms, switches, others, foreign;
	pid_t forked[MAXT];
};

struct test {
	struct ring r[MAXT];
	int n;
	int open_failed;
	char why[ERROR_MSG_MAX];
	int tc_rc;
	struct perfdata_time_conv tc;
	char tc_why[ERROR_MSG_MAX];
};

static struct ring *
ring_of(struct test *t, pid_t tid)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->r[i].tid == tid)
			return &t->r[i];
	return NULL;
}

static int
on_record(const struct ptsb_record *rec, void *arg)
{
	struct ring *r = arg;
	const char *f;

	if (rec->sid.tid != (uint32_t)r->tid)
		r->foreign++;
	switch (rec->type) {
	case PERF_RECORD_MMAP2:
		f = rec->u.mmap.filename;
		if (strstr(f, "/libc.so.6") != NULL && (rec->u.mmap.prot & 4))
			r->mmap_libc++;
		break;
	case PERF_RECORD_FORK:
		if (r->forks < MAXT)
			r->forked[r->forks] = (pid_t)rec->u.task.tid;
		r->forks++;
		break;
	case PERF_RECORD_EXIT: r->exits++; break;
	case PERF_RECORD_COMM: r->comms++; break;
	case PERF_RECORD_SWITCH: r->switches++; break;
	default: r->others++; break;
	}
	return 0;
}

static int
on_new(pid_t tid, void *arg)
{
	struct test *t = arg;
	struct ptevent_spec s = { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY,
	    64 * 1024, 0, NULL };
	struct ring *r;
	struct error e;

	if (t->n == MAXT)
		return -ERR_RANGE;
	r = &t->r[t->n];
	memset(r, 0, sizeof(*r));
	r->tid = tid;
	if (ptevent_open(&r->ev, tid, &s, &e) < 0 ||
	    ptevent_enable(&r->ev, &e) < 0) {
		t->open_failed++;
		snprintf(t->why, sizeof(t->why), "%s", e.msg);
		return 0;
	}
	if (t->n == 0) {
		t->tc_rc = ptevent_time_conv(&r->ev, &t->tc, &e);
		snprintf(t->tc_why, sizeof(t->tc_why), "%s", e.msg);
	}
	t->n++;
	return 0;
}

static void
on_gone(pid_t tid, int status, void *arg)
{
	struct ring *r = ring_of(arg, tid);
	struct error e;

	(void)status;
	/* The fd keeps the rings after the thread is gone: read them now. */
	if (r != NULL && r->ev.fd >= 0) {
		STEP(ptevent_drain(&r->ev, on_record, r, &e));
		ptevent_close(&r->ev);
	}
}

/* Every field the kernel reads of both trigger breakpoints. */
static void
test_bp_attr(void)
{
	struct perf_event_attr a;
	uint32_t action;

	ptevent_breakpoint_attr(&a, PTEVENT_BP_PAUSE, 0x401136, 3, 0);
	memcpy(&action, (const char *)&a + PTEVENT_AUX_ACTION_OFFSET,
	    sizeof(action));
	IS_INT(action, 2, "aux_pause: bit 1 of aux_action at byte 116");
	IS_INT(a.type, PERF_TYPE_BREAKPOINT, "type breakpoint");
	IS_INT(a.size, sizeof(a), "size");
	IS_INT(a.bp_type, 4, "HW_BREAKPOINT_X");
	IS_U64(a.bp_addr, 0x401136, "bp_addr is the runtime address");
	IS_U64(a.bp_len, 8, "bp_len sizeof(long), as x86 wants");
	IS_U64(a.sample_period, 3, "sample_period = hits");
	OK(a.exclude_kernel && a.exclude_hv && !a.disabled,
	    "user only, enabled with its group leader");
	OK(!a.sigtrap && !a.remove_on_exec && a.sig_data == 0,
	    "no signal: the thread is not stopped");
	ptevent_breakpoint_attr(&a, PTEVENT_BP_SIGTRAP, 0x401136, 1, 77);
	memcpy(&action, (const char *)&a + PTEVENT_AUX_ACTION_OFFSET,
	    sizeof(action));
	IS_INT(action, 0, "parking: no aux_action (pre-6.13 kernels refuse "
	    "it)");
	OK(a.sigtrap && a.remove_on_exec, "sigtrap, with remove_on_exec as "
	    "the kernel requires");
	IS_U64(a.sig_data, 77, "the cookie comes back as si_perf_data");
	IS_U64(a.sample_period, 1, "every hit");
}

int
main(void)
{
	const char *b = getenv("PTKIT_BUILD");
	char helper[4200], out[] = "/tmp/t_ptevent.XXXXXX";
	char *argv[] = { helper, out, "4", NULL };
	struct ptprobe bp;
	struct test *t = calloc(1, sizeof(*t));
	struct pttrace_ops ops = { on_new, on_gone, NULL, t };
	struct pttrace tr;
	struct error e;
	int i, j, fd, forks_ok = 1, exits_ok = 1, foreign = 0;

	alarm(120);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	test_bp_attr();
	ptprobe_breakpoint(&bp);
	if (!bp.ok && (bp.err == EACCES || bp.err == EPERM ||
	    bp.err == ENOSYS)) {
		DIAG("the live checks skipped: perf_event_open refused "
		    "here: %s", bp.what);
		return tap_done();
	}
	snprintf(helper, sizeof(helper), "%s/tests/unit/helper_threads",
	    b != NULL ? b : "build");
	if ((fd = mkstemp(out)) >= 0)
		close(fd);
	IS_INT(pttrace_launch(&tr, argv, NULL, &ops, &e), 0, "launch");
	IS_INT(pttrace_run(&tr, &e), PTTRACE_DONE, "run");
	IS_INT(t->open_failed, 0, "every event opened %s", t->why);
	IS_INT(t->n, 5, "an event per thread: main + 4");
	IS_INT(t->r[0].tid, tr.pid, "the first is the main thread");
	IS_INT(t->r[0].mmap_libc, 1,
	    "main's ring has ld.so mapping libc, after exec");
	IS_INT(t->r[0].forks, 6, "main's ring has a FORK per thread, the "
	    "forked child and the cloned process");
	for (i = 1; i < t->n; i++) {
		int found = 0;

		for (j = 0; j < t->r[0].forks && j < MAXT; j++)
			found |= t->r[0].forked[j] == t->r[i].tid;
		forks_ok &= found;
		exits_ok &= t->r[i].exits == 1 && t->r[i].forks == 0 &&
		    t->r[i].mmap_libc == 0;
	}
	OK(forks_ok, "the FORK records name exactly our threads");
	OK(exits_ok, "each thread's ring: its EXIT, nobody else's records");
	for (i = 0; i < t->n; i++)
		foreign += t->r[i].foreign;
	IS_INT(foreign, 0, "every sample_id names its ring's thread");
	if (t->tc_rc == 0)
		OK(t->tc.time_mult > 0 && t->tc.time_shift < 64,
		    "TSC conversion: mult %llu shift %llu",
		    (unsigned long long)t->tc.time_mult,
		    (unsigned long long)t->tc.time_shift);
	else {
		char want[200];

		snprintf(want, sizeof(want), "thread %d: the kernel gives no "
		    "TSC to perf time conversion (cap_user_time_zero is 0)",
		    (int)tr.pid);
		IS_INT(t->tc_rc, -ERR_UNSUPPORTED, "no TSC conversion here");
		IS_STR(t->tc_why, want, "and it says so");
	}
	pttrace_free(&tr);
	unlink(out);
	free(t);
	return tap_done();
}

/*
 * Tests for ptevent_breakpoint with pttrace's signal hook: the symbol
 * trigger without aux_pause.  A breakpoint on the helper's say() with
 * hits = 2 parks the main thread at its second call, before say() runs
 * (its line is not written yet, the instruction pointer is say's first
 * byte); the recorder swallows the SIGTRAP and the program goes on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

#include "rec/procmaps.h"
#include "rec/ptevent.h"
#include "rec/ptprobe.h"
#include "rec/pttrace.h"
#include "sym/symtab.h"
#include "tap.h"

static char helper[4200], out[] = "/tmp/t_ptevent_bp.XXXXXX";

struct test {
	uint64_t say;		/* runtime address */
	int bp_fd;
	char why[ERROR_MSG_MAX];
	int traps, other_signals;
	uint64_t rip_at_trap;
	int usr1_before_trap;
	long cookie;
};

static int
has_line(const char *kind)
{
	char line[128];
	FILE *f = fopen(out, "r");
	int found = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		found |= strncmp(line, kind, strlen(kind)) == 0;
	fclose(f);
	return found;
}

/* say()'s runtime address in process pid (PIE or not). */
static uint64_t
say_address(pid_t pid, struct error *e)
{
	char real[PATH_MAX];
	struct symtab *st;
	const struct sym *sy;
	struct procmaps m;
	uint64_t base = 0, addr = 0;
	size_t i;

	if (realpath(helper, real) == NULL ||
	    symtab_open(real, NULL, &st, e) < 0)
		return 0;
	if ((sy = symtab_find(st, "say")) != NULL &&
	    procmaps_read(pid, 0, &m, e) == 0) {
		for (i = 0; i < m.n; i++)
			if (strcmp(m.v[i].path, real) == 0 && m.v[i].pgoff == 0)
				base = m.v[i].start;
		/* PIE: link addresses start at 0; ET_EXEC: they are final. */
		addr = sy->addr < base ? base + sy->addr : sy->addr;
		procmaps_free(&m);
	}
	symtab_free(st);
	return addr;
}

static int
on_new(pid_t tid, void *arg)
{
	struct test *t = arg;
	struct error e;

	if (t->say != 0)
		return 0;	/* only the main thread */
	error_clear(&e);
	if ((t->say = say_address(tid, &e)) == 0 ||
	    (t->bp_fd = ptevent_breakpoint(tid, t->say, 2, 4242, &e)) < 0)
		snprintf(t->why, sizeof(t->why), "%s", e.msg);
	return 0;
}

static int
on_signal(pid_t tid, const siginfo_t *si, void *arg)
{
	struct test *t = arg;
	struct user_regs_struct regs;

	if (si->si_signo != SIGTRAP || si->si_code != PTEVENT_TRAP_PERF) {
		t->other_signals++;
		return 0;
	}
	t->traps++;
	/* Parked here: this is where a recorder takes its snapshot. */
	t->usr1_before_trap = has_line("usr1");
	if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0)
		t->rip_at_trap = regs.rip;
	/* si_perf_data follows si_addr in the kernel's siginfo. */
	memcpy(&t->cookie, (const char *)&si->si_addr + sizeof(void *),
	    sizeof(t->cookie));
	return 1;
}

int
main(void)
{
	const char *b = getenv("PTKIT_BUILD");
	char *argv[] = { helper, out, "2", NULL };
	struct test t = { 0, -1, "", 0, 0, 0, 0, 0 };
	struct pttrace_ops ops = { on_new, NULL, NULL, &t, on_signal };
	struct pttrace tr;
	struct ptprobe bp;
	struct error e;
	int fd;

	alarm(120);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	ptprobe_breakpoint(&bp);
	if (!bp.ok) {
		/* This VM: they open but never fire (the doctor says so). */
		printf("1..0 # SKIP no working hardware breakpoints here: "
		    "%s\n", bp.what);
		return 0;
	}
	snprintf(helper, sizeof(helper), "%s/tests/unit/helper_threads",
	    b != NULL ? b : "build");
	if ((fd = mkstemp(out)) >= 0)
		close(fd);
	IS_INT(pttrace_launch(&tr, argv, NULL, &ops, &e), 0, "launch");
	OK(t.bp_fd >= 0, "breakpoint on say() at 0x%llx %s",
	    (unsigned long long)t.say, t.why);
	IS_INT(pttrace_run(&tr, &e), PTTRACE_DONE, "run");
	IS_INT(tr.exit_code, 3, "the program went on to its end");
	IS_INT(t.traps, 1, "one trigger: the 2nd call");
	IS_U64(t.rip_at_trap, t.say, "parked at say's first instruction");
	IS_INT(t.usr1_before_trap, 0, "before say() wrote its line");
	OK(has_line("usr1"), "which it wrote after the recorder let it go");
	IS_INT(t.cookie, 4242, "the trap carries the cookie (sig_data)");
	OK(t.other_signals >= 1, "SIGUSR1 still went through the hook");
	if (t.bp_fd >= 0)
		close(t.bp_fd);
	pttrace_free(&tr);
	unlink(out);
	return tap_done();
}

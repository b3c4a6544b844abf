/*
 * Tests for lib/pttrace: a program with threads, a forked child, a cloned
 * process, a signal and an exec runs to the end under ptrace; every thread
 * is handed over before it runs its first instruction (it cannot have
 * written its line yet), the processes are not, and the signal arrives.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec/pttrace.h"
#include "tap.h"

struct seen {
	const char *out;
	pid_t tids[80];
	int n;
	int early;		/* threads that had written before thread_new */
	int execs;
	int exits;
	int fail_at;		/* thread_new fails at this call (0: never) */
	char cpus[64];		/* main thread's Cpus_allowed_list */
};

/* Whether OUT already has a line ending in " TID". */
static int
has_written(const char *path, pid_t tid)
{
	char line[128], want[32];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (f == NULL)
		return 0;
	snprintf(want, sizeof(want), " %d\n", (int)tid);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strlen(line) >= strlen(want) &&
		    strcmp(line + strlen(line) - strlen(want), want) == 0)
			found = 1;
	fclose(f);
	return found;
}

static void
read_cpus(pid_t tid, char *buf, size_t size)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	buf[0] = '\0';
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "Cpus_allowed_list:", 18) == 0)
			snprintf(buf, size, "%.60s", line + 19);
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static int
on_new(pid_t tid, void *arg)
{
	struct seen *s = arg;

	if (s->n == 0)
		read_cpus(tid, s->cpus, sizeof(s->cpus));
	if (has_written(s->out, tid))
		s->early++;
	if (s->n < 80)
		s->tids[s->n] = tid;
	s->n++;
	return s->fail_at != 0 && s->n == s->fail_at ? -ERR_PERM : 0;
}

static void
on_exit_(pid_t tid, int status, void *arg)
{
	(void)tid;
	(void)status;
	((struct seen *)arg)->exits++;
}

static void
on_exec(pid_t tid, void *arg)
{
	(void)tid;
	((struct seen *)arg)->execs++;
}

static int
was_seen(const struct seen *s, long id)
{
	int i;

	for (i = 0; i < s->n && i < 80; i++)
		if (s->tids[i] == (pid_t)id)
			return 1;
	return 0;
}

/* Counts OUT's lines of a kind, and those whose id thread_new saw. */
static void
count(const struct seen *s, const char *kind, int *lines, int *seen)
{
	char line[128], what[16];
	long id;
	FILE *f = fopen(s->out, "r");

	*lines = *seen = 0;
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%15s %ld", what, &id) == 2 &&
		    strcmp(what, kind) == 0) {
			(*lines)++;
			*seen += was_seen(s, id);
		}
	fclose(f);
}

static char helper[4200], outpath[] = "/tmp/t_pttrace.XXXXXX";

static int
run(struct seen *s, const char *n, const char *extra, const cpu_set_t *cpus,
    struct pttrace *t, struct error *e)
{
	char *argv[] = { helper, outpath, (char *)n, (char *)extra, NULL };
	struct pttrace_ops ops = { on_new, on_exit_, on_exec, s };
	int rc;

	memset(s, 0, sizeof(*s));
	s->out = outpath;
	truncate(outpath, 0);
	if ((rc = pttrace_launch(t, argv, cpus, &ops, e)) < 0)
		return rc;
	return pttrace_run(t, e);
}

static void
test_threads(void)
{
	struct pttrace t;
	struct seen s;
	struct error e;
	int lines, seen;

	IS_INT(run(&s, "8", NULL, NULL, &t, &e), PTTRACE_DONE, "runs to the end");
	IS_INT(t.exit_code, 3, "its exit code");
	IS_INT(t.term_signal, 0, "no signal ended it");
	IS_INT(s.n, 9, "thread_new for main + 8 threads");
	IS_INT(t.threads, 9, "counted");
	IS_INT(s.early, 0, "none had run before it was handed over");
	count(&s, "main", &lines, &seen);
	OK(lines == 1 && seen == 1, "the main thread was handed over");
	count(&s, "thread", &lines, &seen);
	OK(lines == 8 && seen == 8, "every thread was handed over (%d/%d)",
	    seen, lines);
	count(&s, "child", &lines, &seen);
	OK(lines == 1 && seen == 0, "the forked child was not");
	count(&s, "proc", &lines, &seen);
	OK(lines == 1 && seen == 0, "the cloned process was not");
	IS_INT(t.processes_detached, 1, "and was detached");
	count(&s, "usr1", &lines, &seen);
	IS_INT(lines, 1, "SIGUSR1 reached its handler");
	OK(t.signals_forwarded >= 1, "signals forwarded: %u",
	    t.signals_forwarded);
	IS_INT(s.exits, 9, "thread_exit for each thread");
	IS_INT(s.execs, 0, "no exec");
	pttrace_free(&t);
}

static void
test_exec_and_cpus(void)
{
	struct pttrace t;
	struct seen s;
	struct error e;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	IS_INT(run(&s, "2", "exec", &cpus, &t, &e), PTTRACE_DONE,
	    "exec, pinned");
	IS_INT(s.execs, 1, "one exec event");
	IS_INT(t.exit_code, 3, "exit code after exec");
	IS_INT(s.n, 3, "main + 2 threads after exec");
	IS_STR(s.cpus, "0", "pinned to CPU 0 from the first instruction");
	IS_INT(s.early, 0, "none ran early");
	pttrace_free(&t);
}

static void
test_failures(void)
{
	char *argv[] = { "no-such-program-ptkit", NULL };
	struct pttrace_ops ops = { on_new, NULL, NULL, NULL };
	struct pttrace t;
	struct seen s;
	struct error e;

	IS_INT(pttrace_launch(&t, argv, NULL, &ops, &e), -ERR_NOTFOUND,
	    "a missing program");
	IS_STR(e.msg, "no-such-program-ptkit: No such file or directory",
	    "its message");
	pttrace_free(&t);

	memset(&s, 0, sizeof(s));
	s.out = outpath;
	s.fail_at = 3;
	{
		char *av[] = { helper, outpath, "4", NULL };
		struct pttrace_ops o = { on_new, NULL, NULL, &s };

		IS_INT(pttrace_launch(&t, av, NULL, &o, &e), 0, "launched");
		IS_INT(pttrace_run(&t, &e), -ERR_PERM,
		    "a failing thread_new ends the run");
		OK(t.done, "the program is gone");
		IS_INT(t.term_signal, SIGKILL, "killed");
	}
}

static void
test_cpus(void)
{
	cpu_set_t set;
	struct error e;

	IS_INT(pttrace_parse_cpus("0-3,8,10-11", &set, &e), 7, "seven CPUs");
	OK(CPU_ISSET(0, &set) && CPU_ISSET(3, &set) && !CPU_ISSET(4, &set) &&
	    CPU_ISSET(8, &set) && CPU_ISSET(11, &set) && !CPU_ISSET(12, &set),
	    "the right ones");
	IS_INT(pttrace_parse_cpus("1", &set, &e), 1, "one CPU");
	IS_INT(pttrace_parse_cpus("3-1", &set, &e), -ERR_INVALID, "reversed");
	IS_STR(e.msg, "--cpus '3-1' is not a list of CPUs like 0-3,8 (each "
	    "below 1024)", "its message");
	IS_INT(pttrace_parse_cpus("0,", &set, &e), -ERR_INVALID,
	    "a trailing comma");
	IS_INT(pttrace_parse_cpus("", &set, &e), -ERR_INVALID, "empty");
	IS_INT(pttrace_parse_cpus("5000", &set, &e), -ERR_INVALID,
	    "beyond CPU_SETSIZE");
}

int
main(void)
{
	const char *b = getenv("PTKIT_BUILD");
	int fd;

	alarm(120);	/* a hang here must fail, not stall make check */
	/* A sanitized helper: LeakSanitizer cannot run under ptrace. */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	snprintf(helper, sizeof(helper), "%s/tests/unit/helper_threads",
	    b != NULL ? b : "build");
	if ((fd = mkstemp(outpath)) < 0) {
		OK(0, "mkstemp");
		return tap_done();
	}
	close(fd);
	test_threads();
	test_exec_and_cpus();
	test_failures();
	test_cpus();
	unlink(outpath);
	return tap_done();
}

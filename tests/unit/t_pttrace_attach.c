/*
 * Tests for pttrace_attach and pttrace_detach: a running program with two
 * threads is attached without a signal; its later threads are handed
 * over before they run; detaching lets it finish on its own.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rec/pttrace.h"
#include "tap.h"

extern char **environ;

static char helper[4200], out[] = "/tmp/t_pttrace_attach.XXXXXX", go[64];

struct seen {
	pid_t tids[80];
	int n;
	int thread_lines_early;	/* "thread" lines written before handover */
};

/* The id on OUT's line "KIND ID" number k (0-based), or 0. */
static long
line_id(const char *kind, int k)
{
	char line[128], what[16];
	long id;
	FILE *f = fopen(out, "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%15s %ld", what, &id) == 2 &&
		    strcmp(what, kind) == 0 && k-- == 0) {
			fclose(f);
			return id;
		}
	fclose(f);
	return 0;
}

static int
count_kind(const char *kind)
{
	char line[128], what[16];
	FILE *f = fopen(out, "r");
	int n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n += sscanf(line, "%15s", what) == 1 && strcmp(what, kind) == 0;
	fclose(f);
	return n;
}

static int
written(const char *kind, pid_t tid)
{
	int k;
	long id;

	for (k = 0; (id = line_id(kind, k)) != 0; k++)
		if (id == (long)tid)
			return 1;
	return 0;
}

static int
on_new(pid_t tid, void *arg)
{
	struct seen *s = arg;

	if (written("thread", tid))
		s->thread_lines_early++;
	if (s->n < 80)
		s->tids[s->n] = tid;
	s->n++;
	return 0;
}

static int
seen(const struct seen *s, long id)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->tids[i] == (pid_t)id)
			return 1;
	return 0;
}

/* Starts the helper in "wait" mode and waits until both threads exist. */
static pid_t
start(const char *n)
{
	char *argv[] = { helper, out, (char *)n, "wait", NULL };
	struct timespec ms = { 0, 1000000 };
	pid_t pid;
	int i;

	unlink(go);
	truncate(out, 0);
	if (posix_spawn(&pid, helper, NULL, NULL, argv, environ) != 0)
		return -1;
	for (i = 0; i < 10000 && line_id("early", 0) == 0; i++)
		nanosleep(&ms, NULL);
	return pid;
}

static void
let_go(void)
{
	FILE *f = fopen(go, "w");

	if (f != NULL)
		fclose(f);
}

static void
test_attach(void)
{
	struct seen s;
	struct pttrace_ops ops = { on_new, NULL, NULL, &s };
	struct pttrace t;
	struct error e;
	pid_t pid = start("4");
	int k, all = 1;

	memset(&s, 0, sizeof(s));
	IS_INT(pttrace_attach(&t, pid, &ops, &e), 0, "attach");
	IS_INT(s.n, 2, "both running threads handed over");
	OK(seen(&s, line_id("main", 0)) && seen(&s, line_id("early", 0)),
	    "they are main and the early thread");
	let_go();
	IS_INT(pttrace_run(&t, &e), PTTRACE_DONE, "runs to the end");
	IS_INT(t.exit_code, 3, "exit code");
	IS_INT(s.n, 6, "and the 4 later threads");
	IS_INT(s.thread_lines_early, 0, "each before its first instruction");
	for (k = 0; k < 4; k++)
		all &= seen(&s, line_id("thread", k));
	OK(all, "every later thread");
	IS_INT(t.processes_detached, 1, "the cloned process detached");
	IS_INT(count_kind("usr1"), 1, "its own SIGUSR1 arrived");
	OK(t.signals_forwarded >= 1, "passed on by the tracer");
	pttrace_free(&t);
}

static void
test_detach(void)
{
	struct seen s;
	struct pttrace_ops ops = { on_new, NULL, NULL, &s };
	struct pttrace t;
	struct error e;
	pid_t pid = start("3");
	int st = -1;

	memset(&s, 0, sizeof(s));
	IS_INT(pttrace_attach(&t, pid, &ops, &e), 0, "attach again");
	IS_INT(pttrace_detach(&t, &e), 0, "detach");
	let_go();
	IS_INT(waitpid(pid, &st, 0), pid, "the program ends on its own");
	OK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "exit 3, no signal: 0x%x",
	    st);
	IS_INT(s.n, 2, "nothing handed over after detach");
	IS_INT(count_kind("usr1"), 1, "its SIGUSR1 arrived untraced");
	OK(line_id("thread", 2) != 0, "its later threads ran");
}

static void
test_missing(void)
{
	struct seen s;
	struct pttrace_ops ops = { on_new, NULL, NULL, &s };
	struct pttrace t;
	struct error e;

	IS_INT(pttrace_attach(&t, 999999999, &ops, &e), -ERR_NOTFOUND,
	    "no such process");
	IS_STR(e.msg, "attach to 999999999: No such process", "its message");
}

int
main(void)
{
	const char *b = getenv("PTKIT_BUILD");
	int fd;

	alarm(120);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	snprintf(helper, sizeof(helper), "%s/tests/unit/helper_threads",
	    b != NULL ? b : "build");
	if ((fd = mkstemp(out)) < 0) {
		OK(0, "mkstemp");
		return tap_done();
	}
	close(fd);
	snprintf(go, sizeof(go), "%s.go", out);
	test_attach();
	test_detach();
	test_missing();
	unlink(out);
	unlink(go);
	return tap_done();
}

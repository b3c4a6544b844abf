/*
 * helper_threads: the program tests/unit/t_pttrace.c runs under ptrace.
 *
 *   helper_threads OUT N [exec|wait]
 *
 * Appends "main TID" to OUT, starts N threads that each append
 * "thread TID", forks a child process ("child PID") and clones a process
 * that shares its memory but is no thread ("proc PID"), catches a SIGUSR1
 * it sends itself ("usr1"), and exits 3.  With "exec" it first execs
 * itself without it (one exec event).  With "wait" it starts one thread
 * ("early TID") and waits, as does main, until the file OUT.go exists:
 * a process to attach to.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int out = -1;

/* Not inlined: tests put a breakpoint on it. */
__attribute__((noinline)) static void
say(const char *what, long id)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s %ld\n", what, id);

	if (write(out, line, (size_t)n) != n)
		_exit(9);
}

static void *
worker(void *arg)
{
	(void)arg;
	say("thread", (long)gettid());
	return NULL;
}

static void
on_usr1(int sig)
{
	(void)sig;
	say("usr1", 0);
}

static const char *go_path;

static void
wait_for_go(void)
{
	struct timespec ms = { 0, 1000000 };

	while (access(go_path, F_OK) != 0)
		nanosleep(&ms, NULL);
}

static void *
early_worker(void *arg)
{
	(void)arg;
	say("early", (long)gettid());
	wait_for_go();
	return NULL;
}

static int
proc_main(void *arg)
{
	(void)arg;
	say("proc", (long)getpid());
	return 0;
}

int
main(int argc, char **argv)
{
	static char stack[64 * 1024], go[4200];
	pthread_t t[64], early;
	int waiting = argc > 3 && strcmp(argv[3], "wait") == 0;
	long n, i;
	pid_t p;

	if (argc < 3)
		return 2;
	if (argc > 3 && strcmp(argv[3], "exec") == 0) {
		char *again[] = { argv[0], argv[1], argv[2], NULL };

		execv("/proc/self/exe", again);
		return 8;
	}
	out = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
	n = atol(argv[2]);
	if (out < 0 || n < 0 || n > 64)
		return 2;
	say("main", (long)getpid());
	if (waiting) {
		snprintf(go, sizeof(go), "%s.go", argv[1]);
		go_path = go;
		if (pthread_create(&early, NULL, early_worker, NULL) != 0)
			return 4;
		wait_for_go();
		pthread_join(early, NULL);
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 4;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if ((p = fork()) == 0) {
		say("child", (long)getpid());
		_exit(0);
	}
	waitpid(p, NULL, 0);
	/* No CLONE_THREAD and no exit signal: reported as a clone event. */
	p = clone(proc_main, stack + sizeof(stack), CLONE_VM, NULL);
	if (p < 0)
		return 5;
	waitpid(p, NULL, __WALL);
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	return 3;
}

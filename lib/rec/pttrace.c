/* pttrace: see pttrace.h. */
#include "rec/pttrace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* Sets of thread ids: a handful per program, so plain arrays. */

static int
tids_find(const struct pttrace_tids *s, pid_t tid)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == tid)
			return (int)i;
	return -1;
}

static int
tids_add(struct pttrace_tids *s, pid_t tid)
{
	if (tids_find(s, tid) >= 0)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		pid_t *v = realloc(s->v, cap * sizeof(*v));

		if (v == NULL)
			return -ERR_NOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = tid;
	return 0;
}

/* Removes tid; returns 1 if it was there. */
static int
tids_del(struct pttrace_tids *s, pid_t tid)
{
	int i = tids_find(s, tid);

	if (i < 0)
		return 0;
	s->v[i] = s->v[--s->n];
	return 1;
}

static void
tids_free(struct pttrace_tids *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void
pttrace_free(struct pttrace *t)
{
	tids_free(&t->live);
	tids_free(&t->pending);
	tids_free(&t->early);
}

/* Waits until tid is gone (stops on the way are dropped). */
static void
reap(pid_t tid)
{
	int st;

	for (;;) {
		if (waitpid(tid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return;
	}
}

static void
reap_set(const struct pttrace_tids *s, pid_t leader)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i] != leader)
			reap(s->v[i]);
}

/*
 * A traced thread stays a zombie until its tracer reaps it, and the
 * leader cannot be reaped before all of them: reap every thread the
 * kernel lists (including those whose clone we have not seen yet), then
 * the leader; never anybody else's children.
 */
static void
reap_all(struct pttrace *t)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	pid_t tid;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	if ((dir = opendir(path)) != NULL) {
		while ((d = readdir(dir)) != NULL)
			if ((tid = (pid_t)atoi(d->d_name)) > 0 && tid != t->pid)
				reap(tid);
		closedir(dir);
	}
	reap_set(&t->live, t->pid);
	reap_set(&t->pending, t->pid);
	reap_set(&t->early, t->pid);
	reap(t->pid);
}

void
pttrace_kill(struct pttrace *t)
{

	if (!t->done && t->pid > 0) {
		kill(t->pid, SIGKILL);
		reap_all(t);
		t->done = 1;
		t->term_signal = SIGKILL;
	}
	pttrace_free(t);
}

/* Between fork and exec: only async-signal-safe calls. */
static void
child(char *const argv[], const cpu_set_t *cpus, const int out[2], int errfd)
{
	int err, i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < 2; i++)
		if (out != NULL && out[i] >= 0 && dup2(out[i], 1 + i) < 0)
			_exit(127);
	if ((cpus == NULL || sched_setaffinity(0, sizeof(*cpus), cpus) == 0) &&
	    ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
		execvp(argv[0], argv);
	err = errno;
	if (write(errfd, &err, sizeof(err)) < 0)
		_exit(126);
	_exit(127);
}

/* The exec stop: exec worked, or the child says why it did not. */
static int
await_exec(struct pttrace *t, const char *prog, int errfd, struct error *e)
{
	int err = 0, st;
	ssize_t n;

	while ((n = read(errfd, &err, sizeof(err))) < 0 && errno == EINTR)
		;
	while (waitpid(t->pid, &st, __WALL) < 0)
		if (errno != EINTR)
			return error_set_errno(e, errno, "waitpid");
	if (n == (ssize_t)sizeof(err)) {
		t->done = 1;
		return error_set(e, err == ENOENT ? ERR_NOTFOUND : ERR_IO,
		    "%s: %s", prog, strerror(err));
	}
	if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) {
		t->done = 1;
		return error_set(e, ERR_CHILD, "%s: did not stop after exec "
		    "(status 0x%x)", prog, st);
	}
	if (ptrace(PTRACE_SETOPTIONS, t->pid, NULL, (void *)(long)
	    (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) < 0)
		return error_set_errno(e, errno, "PTRACE_SETOPTIONS");
	return 0;
}

int
pttrace_launch(struct pttrace *t, char *const argv[], const cpu_set_t *cpus,
    const struct pttrace_ops *ops, struct error *e)
{
	return pttrace_launch_io(t, argv, cpus, NULL, ops, e);
}

int
pttrace_launch_io(struct pttrace *t, char *const argv[], const cpu_set_t *cpus,
    const int out[2], const struct pttrace_ops *ops, struct error *e)
{
	int fds[2], rc;

	memset(t, 0, sizeof(*t));
	t->ops = *ops;
	t->exit_code = -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return error_set_errno(e, errno, "pipe");
	if ((t->pid = fork()) < 0) {
		rc = error_set_errno(e, errno, "fork");
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	if (t->pid == 0) {
		close(fds[0]);
		child(argv, cpus, out, fds[1]);
	}
	close(fds[1]);
	rc = await_exec(t, argv[0], fds[0], e);
	close(fds[0]);
	if (rc == 0 && (rc = tids_add(&t->live, t->pid)) < 0)
		error_set(e, ERR_NOMEM, "thread table");
	if (rc == 0) {
		t->threads++;
		rc = t->ops.thread_new(t->pid, t->ops.arg);
	}
	if (rc < 0)
		pttrace_kill(t);
	return rc;
}

/* Thread group of tid, from /proc; -1 when it cannot be read. */
static pid_t
tgid_of(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	pid_t tgid = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(buf, sizeof(buf), f) != NULL)
		if ((p = strstr(buf, "Tgid:")) == buf) {
			tgid = (pid_t)atoi(p + 5);
			break;
		}
	fclose(f);
	return tgid;
}

static int
cont(pid_t tid, int sig, struct error *e)
{
	/* ESRCH: it died meanwhile; its exit is still to be reaped. */
	if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return error_set_errno(e, errno, "PTRACE_CONT %d", (int)tid);
	return 0;
}

/* A new thread in its first stop: give it to the caller, then let it go. */
static int
start_thread(struct pttrace *t, pid_t tid, struct error *e)
{
	int rc;

	if (tgid_of(tid) != t->pid) {
		t->processes_detached++;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return 0;
	}
	if (tids_add(&t->live, tid) < 0)
		return error_set(e, ERR_NOMEM, "thread table");
	t->threads++;
	if ((rc = t->ops.thread_new(tid, t->ops.arg)) < 0)
		return rc;
	return cont(tid, 0, e);
}

static int
on_clone(struct pttrace *t, pid_t tid, struct error *e)
{
	unsigned long msg = 0;
	pid_t child_tid;
	int rc;

	if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) < 0)
		return error_set_errno(e, errno, "PTRACE_GETEVENTMSG");
	child_tid = (pid_t)msg;
	/* The new thread may have reported its first stop already. */
	if (tids_del(&t->early, child_tid))
		rc = start_thread(t, child_tid, e);
	else
		rc = tids_add(&t->pending, child_tid) < 0 ?
		    error_set(e, ERR_NOMEM, "thread table") : 0;
	return rc < 0 ? rc : cont(tid, 0, e);
}

/*
 * A new thread's first stop (SIGSTOP after TRACEME, PTRACE_EVENT_STOP
 * after SEIZE), or for a thread we know a group-stop.  Returns 1 when it
 * was neither.
 */
static int
on_first_stop(struct pttrace *t, pid_t tid, struct error *e)
{
	if (tids_del(&t->pending, tid))
		return start_thread(t, tid, e);
	if (tids_find(&t->live, tid) < 0) {
		/* First stop of a thread whose clone event is yet to come. */
		return tids_add(&t->early, tid) < 0 ?
		    error_set(e, ERR_NOMEM, "thread table") : 0;
	}
	return 1;
}

/* A stop that is not a ptrace event. */
static int
on_signal_stop(struct pttrace *t, pid_t tid, int sig, struct error *e)
{
	siginfo_t si;
	int rc;

	if (sig == SIGSTOP && (rc = on_first_stop(t, tid, e)) <= 0)
		return rc;
	/* A group-stop has no siginfo; resume it without a signal. */
	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0)
		return cont(tid, 0, e);
	if (t->ops.signal != NULL &&
	    (rc = t->ops.signal(tid, &si, t->ops.arg)) != 0)
		return rc < 0 ? rc : cont(tid, 0, e);
	t->signals_forwarded++;
	return cont(tid, sig, e);
}

static int
on_stop(struct pttrace *t, pid_t tid, int status, struct error *e)
{
	int sig = WSTOPSIG(status), event = status >> 16, rc;

	if (sig == SIGTRAP && event == PTRACE_EVENT_CLONE)
		return on_clone(t, tid, e);
	if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC) {
		if (t->ops.exec != NULL)
			t->ops.exec(tid, t->ops.arg);
		return cont(tid, 0, e);
	}
	if (event == PTRACE_EVENT_STOP) {
		if ((rc = on_first_stop(t, tid, e)) <= 0)
			return rc;
		/* A group-stop of a seized thread: keep it stopped. */
		if (ptrace(PTRACE_LISTEN, tid, NULL, NULL) == 0)
			return 0;
	}
	if (event != 0)
		return cont(tid, 0, e);
	return on_signal_stop(t, tid, sig, e);
}

static int
on_gone(struct pttrace *t, pid_t tid, int status)
{
	tids_del(&t->live, tid);
	tids_del(&t->pending, tid);
	tids_del(&t->early, tid);
	if (t->ops.thread_exit != NULL)
		t->ops.thread_exit(tid, status, t->ops.arg);
	if (tid != t->pid)
		return PTTRACE_EVENT;
	/* The leader is reaped after every other thread of the group. */
	t->done = 1;
	if (WIFEXITED(status))
		t->exit_code = WEXITSTATUS(status);
	else
		t->term_signal = WTERMSIG(status);
	return PTTRACE_DONE;
}

int
pttrace_step(struct pttrace *t, int nohang, struct error *e)
{
	int status, rc;
	pid_t tid;

	if (t->done)
		return PTTRACE_DONE;
	if (!t->started) {
		/* The main thread waits at its first instruction until now. */
		t->started = 1;
		if ((rc = cont(t->pid, 0, e)) < 0) {
			pttrace_kill(t);
			return rc;
		}
	}
	tid = waitpid(-1, &status, __WALL | (nohang ? WNOHANG : 0));
	if (tid == 0)
		return PTTRACE_IDLE;
	if (tid < 0) {
		if (errno == EINTR)
			return PTTRACE_IDLE;
		rc = error_set_errno(e, errno, "waitpid");
		pttrace_kill(t);
		return rc;
	}
	if (WIFEXITED(status) || WIFSIGNALED(status))
		return on_gone(t, tid, status);
	if (!WIFSTOPPED(status))
		return PTTRACE_EVENT;
	if ((rc = on_stop(t, tid, status, e)) < 0) {
		pttrace_kill(t);
		return rc;
	}
	return PTTRACE_EVENT;
}

int
pttrace_run(struct pttrace *t, struct error *e)
{
	int rc;

	while ((rc = pttrace_step(t, 0, e)) == PTTRACE_EVENT ||
	    rc == PTTRACE_IDLE)
		;
	return rc;
}

/* 1 when this process already traces tid (auto-attached as a clone). */
static int
traced_by_us(pid_t tid)
{
	char path[64], buf[512];
	FILE *f;
	int ours = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (strncmp(buf, "TracerPid:", 10) == 0) {
			ours = atoi(buf + 10) == (int)getpid();
			break;
		}
	fclose(f);
	return ours;
}

/* Seizes tid and hands it over.  1: seized, 0: gone or ours already. */
static int
seize_one(struct pttrace *t, pid_t tid, struct error *e)
{
	int rc;

	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)
	    (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)) < 0) {
		if (errno == ESRCH || (errno == EPERM && traced_by_us(tid)))
			return 0;
		return error_set(e, errno == EPERM ? ERR_PERM : ERR_IO,
		    "attach to %d (thread %d): %s", (int)t->pid, (int)tid,
		    strerror(errno));
	}
	if (tids_add(&t->live, tid) < 0)
		return error_set(e, ERR_NOMEM, "thread table");
	t->threads++;
	return (rc = t->ops.thread_new(tid, t->ops.arg)) < 0 ? rc : 1;
}

/* One pass over /proc/pid/task; returns how many threads were new. */
static int
seize_pass(struct pttrace *t, struct error *e)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	pid_t tid;
	int added = 0, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	if ((dir = opendir(path)) == NULL)
		return error_set(e, ERR_NOTFOUND, "attach to %d: %s",
		    (int)t->pid, strerror(errno == ENOENT ? ESRCH : errno));
	while (rc >= 0 && (d = readdir(dir)) != NULL) {
		if ((tid = (pid_t)atoi(d->d_name)) <= 0 ||
		    tids_find(&t->live, tid) >= 0 ||
		    tids_find(&t->pending, tid) >= 0 ||
		    tids_find(&t->early, tid) >= 0)
			continue;
		if ((rc = seize_one(t, tid, e)) > 0)
			added++;
	}
	closedir(dir);
	return rc < 0 ? rc : added;
}

int
pttrace_attach(struct pttrace *t, pid_t pid, const struct pttrace_ops *ops,
    struct error *e)
{
	int rc;

	memset(t, 0, sizeof(*t));
	t->ops = *ops;
	t->pid = pid;
	t->exit_code = -1;
	t->seized = t->started = 1;
	/* Threads may be created while we seize: rescan until stable. */
	while ((rc = seize_pass(t, e)) > 0)
		;
	if (rc < 0) {
		struct error ignored;

		/* e says why the seize failed: that is the error to return */
		PTKIT_DROP(pttrace_detach(t, &ignored));
		return rc;
	}
	return 0;
}

/*
 * Stops tid (PTRACE_INTERRUPT) and detaches it, passing on a signal that
 * was on its way; a clone event met on the way adds the new thread to
 * pending, which is detached in turn.
 */
/*
 * While detaching: is the signal thread tid stopped with one the caller
 * swallows (a breakpoint trigger's SIGTRAP, which would kill the program
 * once it is no longer ours to catch)?
 */
static int
swallowed(struct pttrace *t, pid_t tid)
{
	siginfo_t si;

	return t->ops.signal != NULL &&
	    ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) == 0 &&
	    t->ops.signal(tid, &si, t->ops.arg) == 1;
}

static int
detach_one(struct pttrace *t, pid_t tid, int stopped, struct error *e)
{
	int st, sig = 0, event;
	unsigned long msg;

	if (!stopped && ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return errno == ESRCH ? 0 : error_set_errno(e, errno,
		    "PTRACE_INTERRUPT %d", (int)tid);
	while (!stopped) {
		if (waitpid(tid, &st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (!WIFSTOPPED(st))
			return 0;	/* it exited meanwhile */
		event = st >> 16;
		if (event == PTRACE_EVENT_CLONE &&
		    ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0)
			tids_add(&t->pending, (pid_t)msg);
		if (event == 0 && WSTOPSIG(st) != SIGSTOP)
			sig = swallowed(t, tid) ? 0 : WSTOPSIG(st);
		stopped = event == PTRACE_EVENT_STOP || event == 0;
		if (!stopped)
			ptrace(PTRACE_CONT, tid, NULL, NULL);
	}
	if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return error_set_errno(e, errno, "PTRACE_DETACH %d", (int)tid);
	return 0;
}

int
pttrace_detach(struct pttrace *t, struct error *e)
{
	int rc = 0, r;

	while (rc == 0 && t->early.n > 0) {
		pid_t tid = t->early.v[--t->early.n];

		rc = detach_one(t, tid, 1, e);
	}
	while (rc == 0 && t->live.n > 0) {
		pid_t tid = t->live.v[--t->live.n];

		rc = detach_one(t, tid, 0, e);
	}
	while (rc == 0 && t->pending.n > 0) {
		pid_t tid = t->pending.v[--t->pending.n];

		/* Its first stop is on its way; wait for it, then let go. */
		rc = detach_one(t, tid, 0, e);
	}
	r = rc;
	t->done = 1;
	pttrace_free(t);
	return r;
}

int
pttrace_parse_cpus(const char *list, cpu_set_t *set, struct error *e)
{
	const char *s = list;
	unsigned long a, b, c;
	char *end;

	CPU_ZERO(set);
	while (*s != '\0') {
		if (*s < '0' || *s > '9')
			goto bad;
		a = b = strtoul(s, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			b = strtoul(end + 1, &end, 10);
		}
		if (b < a || b >= CPU_SETSIZE)
			goto bad;
		for (c = a; c <= b; c++)
			CPU_SET(c, set);
		s = end;
		if (*s == ',' && s[1] != '\0')
			s++;
		else if (*s != '\0')
			goto bad;
	}
	if (CPU_COUNT(set) == 0)
		goto bad;
	return CPU_COUNT(set);
bad:
	return error_set(e, ERR_INVALID, "--cpus '%s' is not a list of CPUs "
	    "like 0-3,8 (each below %d)", list, CPU_SETSIZE);
}

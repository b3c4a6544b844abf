/*
 * pttrace: running a program under ptrace so that each of its threads can
 * be given its own Intel PT event before the thread's first instruction.
 *
 * Owns the launch shim and thread following of notes/recorder.md §3.2 and
 * §3.3: fork, PTRACE_TRACEME, exec, the SIGTRAP stop after exec, then
 * PTRACE_O_TRACECLONE | TRACEEXEC | EXITKILL; every new thread is held in
 * its first stop while the caller's thread_new runs (where the recorder
 * opens and enables the thread's event), whichever of the clone event and
 * the new thread's stop arrives first; signals are passed on to the
 * program; a clone that made a process, not a thread, is detached
 * untraced.  Nothing here knows about PT: tests use it on any machine.
 *
 * The one place besides spawn.h that starts a program: ptrace needs the
 * child to ask for tracing between fork and exec, which posix_spawn
 * cannot do.  Still no shell: argv is exec'd as given (PATH searched).
 */
#ifndef PTKIT_PTTRACE_H
#define PTKIT_PTTRACE_H

#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include "base/error.h"

struct pttrace_ops {
	/*
	 * A thread of the program (the main thread right after exec, then
	 * each clone) is stopped before its first user instruction.  A
	 * negative return ends the run: the program is killed.
	 */
	int (*thread_new)(pid_t tid, void *arg);
	/* A thread is gone (status as waitpid gives it); may be NULL. */
	void (*thread_exit)(pid_t tid, int status, void *arg);
	/* A thread called execve: the mappings changed; may be NULL. */
	void (*exec)(pid_t tid, void *arg);
	void *arg;
	/*
	 * A signal is about to reach thread tid, which is stopped (parked)
	 * until this returns: 1 swallows it, 0 delivers it, negative ends
	 * the run.  A breakpoint trigger's SIGTRAP (si_code TRAP_PERF)
	 * arrives here with the thread at the breakpoint.  May be NULL
	 * (every signal is delivered).
	 */
	int (*signal)(pid_t tid, const siginfo_t *si, void *arg);
};

struct pttrace_tids {
	pid_t *v;
	size_t n, cap;
};

struct pttrace {
	pid_t pid;			/* the program */
	struct pttrace_ops ops;
	struct pttrace_tids live;	/* threads traced now */
	struct pttrace_tids pending;	/* cloned, first stop not seen */
	struct pttrace_tids early;	/* first stop seen before the clone */
	int seized;			/* attached, not launched */
	int started;			/* the main thread was continued */
	int done;			/* the program is gone */
	int exit_code;			/* -1 unless it exited */
	int term_signal;		/* 0 unless a signal ended it */
	unsigned threads;		/* thread_new calls */
	unsigned processes_detached;	/* clones that were processes */
	unsigned signals_forwarded;
};

/*
 * Starts argv[0] (PATH searched) under ptrace, pinned to cpus when not
 * NULL, and calls ops->thread_new for its main thread, which is left
 * stopped at its first instruction (pttrace_step continues it).  Returns 0,
 * -ERR_NOTFOUND or -ERR_IO when exec failed (e names the program and the
 * reason), -ERR_IO for fork/ptrace failures, or thread_new's error (the
 * program is then killed and reaped).
 */
int pttrace_launch(struct pttrace *t, char *const argv[],
    const cpu_set_t *cpus, const struct pttrace_ops *ops, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * pttrace_launch with the program's stdout and stderr on out[0] and
 * out[1] (a -1 keeps ours; ours stay open in the child only if they are
 * not close-on-exec, so pass pipe ends made with O_CLOEXEC).  Returns as
 * pttrace_launch.
 */
int pttrace_launch_io(struct pttrace *t, char *const argv[],
    const cpu_set_t *cpus, const int out[2], const struct pttrace_ops *ops,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Attaches to every thread of the running process pid with PTRACE_SEIZE
 * (no signal, no stop), rescanning /proc/pid/task until a pass finds no
 * new thread, and calls ops->thread_new for each while it runs; threads
 * created later are handed over in their first stop as with launch.  The
 * process is never killed because of us (no EXITKILL).  Returns 0,
 * -ERR_NOTFOUND (no such process), -ERR_PERM (ptrace refused: Yama
 * ptrace_scope, another tracer, another user), or thread_new's error
 * (everything attached so far is detached again).
 */
int pttrace_attach(struct pttrace *t, pid_t pid, const struct pttrace_ops *ops,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * After pttrace_attach: lets every thread go untraced (PTRACE_INTERRUPT,
 * then PTRACE_DETACH), passing on a signal caught on the way.  Returns 0
 * or -ERR_IO.  t's memory is freed either way.
 */
int pttrace_detach(struct pttrace *t, struct error *e) PTKIT_MUST_CHECK;

/*
 * Parses --cpus LIST ("0-3,8,10-11") into set.  Returns the number of
 * CPUs, or -ERR_INVALID (not a list, or a CPU beyond CPU_SETSIZE; e
 * quotes it).
 */
int pttrace_parse_cpus(const char *list, cpu_set_t *set, struct error *e)
    PTKIT_MUST_CHECK;

enum { PTTRACE_IDLE = 0, PTTRACE_EVENT = 1, PTTRACE_DONE = 2 };

/*
 * Handles one ptrace event (waits for one unless nohang); the first call
 * lets the main thread go.  It waits for any child of the calling process
 * (__WALL): the caller must have no other children running meanwhile.  Returns
 * PTTRACE_EVENT, PTTRACE_IDLE (nohang and nothing happened), PTTRACE_DONE
 * (the program has exited or was killed: exit_code / term_signal), or a
 * negative error (thread_new's, or -ERR_IO; the program is then killed).
 */
int pttrace_step(struct pttrace *t, int nohang, struct error *e)
    PTKIT_MUST_CHECK;

/* Steps until PTTRACE_DONE or an error. */
int pttrace_run(struct pttrace *t, struct error *e) PTKIT_MUST_CHECK;

/* Kills the program (SIGKILL), reaps it, frees t's memory. */
void pttrace_kill(struct pttrace *t);

/* Frees t's memory (after PTTRACE_DONE). */
void pttrace_free(struct pttrace *t);

#endif

/*
 * spawn: starting other programs with posix_spawn, argv arrays and pipes.
 *
 * Owns child processes for every tool: there is no shell anywhere in
 * ptkit, so this is the only way a tool runs another program.
 *
 * Protocol (after git's run-command):
 *   1. struct spawn sp; spawn_init(&sp, argv);
 *   2. set sp.in / sp.out / sp.err:  SPAWN_INHERIT (0) keeps ours,
 *      SPAWN_PIPE makes a pipe whose parent end is returned in the same
 *      field after spawn_start, SPAWN_NULL connects /dev/null, and a
 *      value >= 0 passed through spawn_fd() uses that descriptor.
 *   3. spawn_start(&sp, &e);  4. use the pipes;  5. close the pipe ends
 *      you got (or let spawn_finish close them);  6. spawn_finish(&sp, &e).
 * Descriptors passed with spawn_fd() stay open and stay the caller's.
 * On a failed spawn_start no child exists and no pipe end is left open.
 */
#ifndef PTKIT_SPAWN_H
#define PTKIT_SPAWN_H

#include <sys/types.h>

#include "base/error.h"

enum {
	SPAWN_INHERIT = 0,
	SPAWN_PIPE = -1,
	SPAWN_NULL = -2,
	SPAWN_FD_BASE = 1000000,	/* spawn_fd(fd) = SPAWN_FD_BASE + fd */
};

/* Marks fd (>= 0) as the descriptor a child stream should use. */
#define spawn_fd(fd) (SPAWN_FD_BASE + (fd))

struct spawn {
	char *const *argv;	/* argv[0] is looked up in PATH */
	char *const *envp;	/* NULL: inherit environ */
	int in, out, err;	/* see the protocol above */
	int new_pgroup;		/* put the child in its own process group */
	int die_with_parent;	/* a ptkit tool: ends when we do (below) */
	pid_t pid;		/* > 0 while the child runs */
	int exit_code;		/* after finish: exit status, or -1 */
	int term_signal;	/* after finish: signal that ended it, or 0 */
};

void spawn_init(struct spawn *sp, char *const *argv);

/*
 * Children that die with their parent.  posix_spawn cannot set
 * PR_SET_PDEATHSIG in the child, so a child that is a ptkit tool sets it
 * itself: with die_with_parent, spawn_start puts SPAWN_PARENT_ENV=<our
 * pid> in its environment, and the tool's main calls
 * spawn_die_with_parent first thing, which takes the variable out of the
 * environment again (the tool's own children, a traced program above
 * all, never see it), asks for sig when the parent dies, and returns 1
 * when the parent died already (before the request could be made): the
 * tool then exits at once.  A process killed past its cleanup (SIGKILL)
 * leaves its scratch to the next tool's sweep (base/scratch).  Returns 0
 * otherwise, also when not started so.
 */
#define SPAWN_PARENT_ENV "PTKIT_PARENT_PID"
int spawn_die_with_parent(int sig);

/*
 * Starts the child.  Returns 0, or -ERR_NOTFOUND (no such program),
 * -ERR_IO (pipe or spawn failed) with e saying which program.
 */
int spawn_start(struct spawn *sp, struct error *e) PTKIT_MUST_CHECK;

/*
 * Closes the parent's pipe ends that are still open, waits for the child,
 * and fills exit_code / term_signal.  Returns 0 when the child exited 0,
 * -ERR_CHILD when it exited non-zero or was killed (e says which), -ERR_IO
 * when waiting failed.
 */
int spawn_finish(struct spawn *sp, struct error *e) PTKIT_MUST_CHECK;

/*
 * Sends sig to the child (its process group with new_pgroup).  Fails only
 * when the child is gone already, which the wait that follows tells, so
 * callers need not look (not PTKIT_MUST_CHECK).
 */
int spawn_kill(struct spawn *sp, int sig);

/*
 * Runs argv to completion with stdin from /dev/null, collecting stdout
 * into a malloc'd NUL-terminated buffer (*out, *out_len; the caller frees
 * it) while stderr is inherited.  Returns as spawn_finish; on -ERR_CHILD
 * the output is still returned.
 */
int spawn_capture(char *const *argv, char **out, size_t *out_len,
    struct error *e) PTKIT_MUST_CHECK;

#endif

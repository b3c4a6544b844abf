/*
 * emu_guard: the emu recorder's processes end when ptrec is killed.
 *
 * Owns the guardian: a process forked from ptrec before qemu starts,
 * which waits on a pipe only ptrec writes to.  qemu's first process asks
 * for SIGKILL when ptrec dies (PR_SET_PDEATHSIG), but the kernel clears
 * that request in a fork child, so the processes the traced program
 * forks (each a qemu with the plugin) would run on after a SIGKILL'd
 * ptrec, writing into a scratch directory nobody reads.  When the pipe
 * ends without ptrec's word that it is done (ptrec killed, or crashed),
 * the guardian SIGKILLs every process whose command line names this
 * recording's scratch directory in the plugin's argument ("dir=PATH",
 * which every qemu of the recording carries, after a fork or an exec,
 * in whatever process group or session it went to), until none is
 * left, and exits.  A ptrec that ends normally releases it first: the
 * program's processes are then the program's own.
 *
 * The guardian is forked from a process that may have threads: it calls
 * only async-signal-safe functions (read, open, getdents64, kill) with
 * its memory on the stack.
 */
#ifndef PTREC_EMU_GUARD_H
#define PTREC_EMU_GUARD_H

#include <sys/types.h>

#include "base/error.h"

struct emu_guard {
	pid_t pid;		/* the guardian, or 0 */
	int fd;			/* the pipe's write end, or -1 */
};

/*
 * Starts the guardian of the recording whose scratch directory is
 * scratch.  Returns 0, or -ERR_IO (pipe or fork failed; nothing is
 * left) with e saying which.
 */
int emu_guard_start(struct emu_guard *g, const char *scratch,
    struct error *e) PTKIT_MUST_CHECK;

/* ptrec ends normally: the guardian exits without killing anything, and
 * is waited for.  A guard never started is fine. */
void emu_guard_release(struct emu_guard *g);

#endif

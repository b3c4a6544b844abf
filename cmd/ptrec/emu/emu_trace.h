/*
 * emu_trace: turns one guest thread's sequence of executed translation
 * blocks into Intel PT packets, as user-only tracing hardware would write
 * them, and optionally into the ground-truth branch log.
 *
 * Owns the per-thread state machine of notes/emu.md 6.2-6.4: the branch at
 * the end of the previous block resolved by where the next one starts
 * (TNT, TIP, compressed return), TIP.PGD/PGE around syscalls, qemu 7.2's
 * phantom page-crossing instruction and REP re-runs, signal delivery as
 * FUP + TIP.PGD then TIP.PGE(handler) with the deferral that resolves the
 * interruption point at rt_sigreturn, periodic PSB+, and the thread's
 * clock between the plugin's syncs with the host (one instruction = one
 * cycle = 1 ns of a 1 GHz TSC; clock is the plugin's to move forward).
 *
 * Not thread-safe by design: each guest thread has its own emu_thread and
 * only its own qemu thread touches it.  The handler set is shared
 * (emu_handlers) and is read without a lock; it only grows.
 */
#ifndef PTKIT_EMU_TRACE_H
#define PTKIT_EMU_TRACE_H

#include <stdint.h>

#include "emu_cls.h"
#include "emu_enc.h"

/* What the tracer needs to know about a translated block. */
struct emu_tb {
	uint64_t start;		/* first instruction */
	uint64_t end;		/* after the last instruction */
	uint64_t last_ip;	/* the last instruction */
	uint64_t target;	/* its direct target */
	uint32_t ninsn;
	uint8_t kind;		/* enum emu_kind of the last instruction */
	uint8_t call_next;
	uint8_t maybe_phantom;	/* last insn may not run in this block */
	uint8_t cut;		/* qemu listed one insn more, left to the next */
	uint8_t rep;
	uint8_t trigger;	/* starts at a trigger address */
	uint8_t in_filter;	/* starts inside the --filter ranges */
};

#define EMU_MAX_HANDLERS 128

/* Signal handler entry points, from the guest's rt_sigaction calls. */
struct emu_handlers {
	uint64_t addr[EMU_MAX_HANDLERS];
	volatile int n;
};

/* The ground-truth branch log of one thread (a growing shared mapping). */
struct emu_truth {
	int fd;
	char *map;		/* EMU_TRUTH_CHUNK bytes at file offset off */
	uint64_t off, pos;
	char *side;		/* lines held back while deferring */
	size_t side_n, side_cap;
	int diverted;
	int failed;
};

struct emu_thread_stats {
	uint64_t tbs, pge, pgd, async, defer, resolved, blind, phantom, rep;
	uint64_t unexpected;
};

struct emu_thread {
	int tid;
	struct emu_truth *truth;	/* NULL: no ground truth */
	const struct emu_handlers *handlers;
	int filtering;			/* --filter: trace inside ranges only */

	uint64_t clock;			/* virtual TSC */
	uint64_t insns;
	const struct emu_tb *prev;
	/* the block a snapshot stopped the trace before: it still runs, and
	 * tracing resumes at its start (emu_thread_stop) */
	const struct emu_tb *resume;
	int started, enabled, need_pge;
	int64_t last_syscall;

	int deferring;
	const struct emu_tb *dprev;
	uint64_t main_last_ip;
	int main_have_last_ip;

	struct emu_thread_stats st;
	struct emu_enc enc;
};

/* Starts the thread's state at virtual time clock; enc is set up by caller. */
void emu_thread_init(struct emu_thread *t, int tid, uint64_t clock,
    const struct emu_handlers *h, struct emu_truth *truth, int filtering);

/* tb is about to run. */
void emu_thread_tb(struct emu_thread *t, const struct emu_tb *tb);

/* The last block ended in a syscall, number num, now entering the kernel. */
void emu_thread_syscall(struct emu_thread *t, int64_t num);

/*
 * Ends the stream for a snapshot or the end: resolves a pending deferral
 * blindly, flushes TNT and commits.  Tracing may go on afterwards.
 */
void emu_thread_flush(struct emu_thread *t);

/*
 * Stops tracing where the thread is, about to run the block at ip, as a
 * trigger's breakpoint would on hardware: FUP(ip) + TIP.PGD, committed.
 * The next block enables tracing again (TSC + TIP.PGE).
 */
void emu_thread_stop(struct emu_thread *t, uint64_t ip);

/* Ground-truth log: open truth.<tid> in dir; 0 or -1 (errno set). */
int emu_truth_open(struct emu_truth *w, const char *path);
/* Opens the log at path to add to what it holds (a thread that exec'd). */
int emu_truth_append(struct emu_truth *w, const char *path);
void emu_truth_line(struct emu_truth *w, const char *line, size_t n);
void emu_truth_close(struct emu_truth *w);
/* Lets go of a log another process owns (a fork child's inherited copy):
 * unmaps and closes without writing or truncating the file. */
void emu_truth_abandon(struct emu_truth *w);

#endif

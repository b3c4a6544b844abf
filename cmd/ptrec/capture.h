/*
 * capture: what every recorder decides the same way about a capture.
 *
 * Owns the parts of ptrec that do not depend on how the trace is made,
 * so that the emu, pt and perf recorders agree on them:
 *   - --filter: "ADDR/SIZE@FILE" or a function of PROGRAM, resolved to a
 *     file offset, a size and an absolute path (notes/recorder.md §4:
 *     the kernel takes file offsets, so a filter holds wherever the
 *     loader puts the image);
 *   - where a file offset of a mapped file is in a process (the symbol
 *     trigger's breakpoint address);
 *   - the program's output: relayed to ptrec's stderr, kept for
 *     output.log, and matched line by line against --trigger-line;
 *   - the trigger policy: --min-capture-ms, --tail-ms, --after-ms,
 *     --max-capture-ms and --repeat as a state machine over a
 *     millisecond clock, with the reasons the manifest names ("symbol",
 *     "line", "tail", "after-ms", "max-capture", "exit");
 *   - how the symbol trigger is armed on hardware: aux_pause (Linux
 *     6.13+) or a parked thread.
 * Nothing here opens a perf event or runs a program: all of it is
 * tested without hardware.
 */
#ifndef PTREC_CAPTURE_H
#define PTREC_CAPTURE_H

#include <limits.h>
#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/scratch.h"
#include "base/spawn.h"
#include "options.h"
#include "rec/procmaps.h"
#include "rec/ptconfig.h"

/* ---- filters ------------------------------------------------------------ */

/*
 * One --filter SPEC: "ADDR/SIZE@FILE" (numbers in C syntax; FILE made
 * absolute) or the name of a function of program (an absolute path).
 * Fills f (f->path points at path, size bytes).  Returns 0,
 * -ERR_INVALID (an ADDR/SIZE@FILE whose FILE does not exist: e says
 * "FILE: reason"), or elfsym_lookup's error for a symbol (-ERR_NOTFOUND,
 * -ERR_FORMAT, -ERR_IO; e says why).
 */
int capture_filter_parse(const char *program, const char *spec,
    struct ptfilter *f, char *path, size_t size, struct error *e);

/* Every --filter of a run, with the paths they point at. */
struct capture_filters {
	struct ptfilter f[REC_MAX_FILTERS];
	char path[REC_MAX_FILTERS][PATH_MAX];
	int n;
};

/*
 * Parses specs[0..n) as capture_filter_parse does.  Returns 0 or its
 * error, with e prefixed by the spec ("--filter nosuch: ...").
 */
int capture_filters_resolve(const char *program, const char *const *specs,
    int n, struct capture_filters *out, struct error *e);

/* ---- the program -------------------------------------------------------- */

/*
 * The file the run records, as an absolute path without links: with
 * o->pid its /proc/PID/exe, else o->program[0] searched in $PATH as
 * execvp does.  Symbols of the program (--filter SYMBOL,
 * --trigger-symbol) are looked up there.  Returns 0, -ERR_NOTFOUND (e
 * says which).
 */
int capture_program_path(const struct rec_options *o, char *out, size_t size,
    struct error *e);

/*
 * spawn_start(sp) with the child pinned to the CPUs of --cpus (NULL: not
 * pinned): the calling thread takes the set for the spawn, which the
 * child and every thread it makes inherit (the emulator's, perf's and the
 * program's), then gets its own back.  Returns spawn_start's result, or
 * -ERR_INVALID / -ERR_IO for a set that cannot be taken (e says so).
 */
int capture_spawn_pinned(struct spawn *sp, const char *cpus, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * The end of a recorder's scratch directory: removed, or with
 * PTKIT_KEEP_WASTE=1 kept, and then where is said on stderr.  Not
 * removable in full: a warning.
 */
void capture_scratch_close(struct scratch *s);

/* ---- addresses ---------------------------------------------------------- */

/*
 * The runtime address of file offset off of path in the mappings m: the
 * mapping of path (compared as given: pass realpath's) that holds off,
 * start + (off - pgoff).  Returns it, or 0 when path is not mapped there.
 */
uint64_t capture_runtime_addr(const struct procmaps *m, const char *path,
    uint64_t off);

/* ---- the program's output ---------------------------------------------- */

/*
 * Where the program writes its stdout and stderr.  When ptrec's stderr,
 * where the program's output is shown, is a terminal, both go to one
 * pseudo-terminal ptrec relays (output post-processing off, so bytes pass
 * as written, with the window size of ptrec's stderr): the program sees
 * a terminal and its stdio line-buffers, as it would without ptrec.
 * Otherwise each is a pipe, and stdio block-buffers as into any pipe.
 */
struct capture_output {
	int read_fd[2];		/* ours: stdout's, stderr's (-1 with a pty) */
	int write_fd[2];	/* the program's ends until it has them */
	int pty;		/* one pseudo-terminal for both */
};

/* Returns 0, or -ERR_IO (e says what could not be made). */
int capture_output_open(struct capture_output *co, struct error *e)
    PTKIT_MUST_CHECK;

/* The program has its ends (it was started): ours are closed. */
void capture_output_started(struct capture_output *co);

/* Closes every descriptor still open. */
void capture_output_close(struct capture_output *co);

#define CAPTURE_LINE_MAX 4096

/*
 * The program's stdout (stream 0) and stderr (stream 1) cut into lines,
 * each matched against --trigger-line (POSIX extended, unanchored, as
 * emu's plugin does).  A line longer than CAPTURE_LINE_MAX - 1 bytes is
 * matched on its first CAPTURE_LINE_MAX - 1 bytes.
 */
struct capture_lines {
	regex_t re;
	int has_re;
	char buf[2][CAPTURE_LINE_MAX];
	size_t n[2];
};

/*
 * regex NULL: nothing ever matches.  Returns 0 or -ERR_INVALID (e quotes
 * regcomp's reason).
 */
int capture_lines_init(struct capture_lines *l, const char *regex,
    struct error *e);

/*
 * Feeds n bytes of stream; returns how many lines completed and matched.
 * n[stream] is 0 when the bytes so far end a line (also without regex).
 */
unsigned capture_lines_feed(struct capture_lines *l, int stream,
    const char *p, size_t n);

void capture_lines_free(struct capture_lines *l);

/*
 * Reads what is there on fd (the program's stream 0 or 1), writes it to
 * ptrec's stderr and to log_fd (when >= 0) and feeds lines (when not
 * NULL), setting *matched to the number of matching lines.  Returns the
 * bytes read (> 0), 0 when nothing was ready, -1 at end of file (fd is
 * then closed and set to -1), -2 when the log could not be written (the
 * bytes still went to stderr and were matched).
 */
int capture_relay(int *fd, int stream, int log_fd, struct capture_lines *lines,
    unsigned *matched);

/* ---- the trigger policy ------------------------------------------------- */

enum capture_action {
	CAPTURE_NONE,		/* nothing to do (yet) */
	CAPTURE_SNAPSHOT,	/* take a snapshot now */
	CAPTURE_TAIL,		/* keep tracing: a tail deadline is set */
};

struct capture_policy {
	uint64_t start_ms;
	uint64_t min_ms;		/* --min-capture-ms */
	uint64_t tail_ms;
	int has_tail;
	uint64_t after_ms;		/* --after-ms, 0: none */
	uint64_t deadline;		/* next --after-ms, or UINT64_MAX */
	uint64_t max_deadline;		/* --max-capture-ms, or UINT64_MAX */
	uint64_t tail_deadline;		/* or UINT64_MAX */
	uint64_t repeat;		/* snapshots to take, >= 1 */
	uint64_t taken;			/* snapshots written (numbering) */
	uint64_t counted;		/* of them, towards --repeat */
	int done;			/* the last one is written */
};

/* From o, with the capture starting at start_ms. */
void capture_policy_init(struct capture_policy *p, const struct rec_options *o,
    uint64_t start_ms);

/*
 * A trigger fired at now_ms (the symbol's hit or a matching line).
 * Returns CAPTURE_NONE before --min-capture-ms has passed, while a tail
 * runs, or when done; CAPTURE_TAIL when --tail-ms set a deadline;
 * CAPTURE_SNAPSHOT otherwise.
 */
enum capture_action capture_on_trigger(struct capture_policy *p,
    uint64_t now_ms);

/*
 * The time-driven snapshot due at now_ms, if any: "tail" (the tail after
 * a trigger ran out), "max-capture" (the last one), "after-ms" (re-armed
 * for --repeat).  NULL when none is due.
 */
const char *capture_due(struct capture_policy *p, uint64_t now_ms);

/*
 * A snapshot for reason was written: counts it (a --control "control"
 * request does not use up --repeat, as under emu).  Returns 1 when it
 * was the last (--repeat reached, or reason "max-capture", "exit",
 * "signal" (the program's), "sigint" or "sigterm" (ptrec's)): trace no
 * more; 0 to go on (re-enable the events).
 */
int capture_taken(struct capture_policy *p, const char *reason);

/* Milliseconds until the next deadline (0: one is due), UINT64_MAX: none. */
uint64_t capture_wait_ms(const struct capture_policy *p, uint64_t now_ms);

/* ---- the symbol trigger on hardware ------------------------------------ */

enum capture_bp_mode {
	CAPTURE_BP_NONE,	/* no --trigger-symbol */
	/*
	 * The breakpoint sits in the thread's PT event group with aux_pause:
	 * the kernel stops the trace in the breakpoint's handler, before the
	 * instruction runs, and the thread goes on untraced.
	 */
	CAPTURE_BP_PAUSE,
	/* A sigtrap breakpoint stops the thread there until the snapshot. */
	CAPTURE_BP_PARK,
	/* The same signal, but the thread goes on for --tail-ms. */
	CAPTURE_BP_TAIL,
};

/*
 * aux_pause: ptcaps_kernel_at_least(6, 13) (1 yes, 0 no, -1 unknown).
 * aux_pause ends the trace exactly where we want it only for one
 * snapshot without a tail: a tail must keep tracing, and resuming a
 * paused trace for --repeat needs a resume event nobody has run yet
 * (notes/recorder.md §6.4), so those park the thread instead.
 */
enum capture_bp_mode capture_bp_mode(const struct rec_options *o,
    int aux_pause);

/* The manifest's settings.trigger_mode: "aux_pause", "park", "tail"; NULL
 * for CAPTURE_BP_NONE. */
const char *capture_bp_mode_name(enum capture_bp_mode m);

/* A sentence for stderr and the docs: what the mode does. */
const char *capture_bp_mode_text(enum capture_bp_mode m);

#endif

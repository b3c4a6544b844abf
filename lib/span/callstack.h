/*
 * callstack: rebuilds one call stack per thread from the records of a
 * block stream (man ptkit-blocks.5) and hands out one span per function
 * call as soon as the call ends (man ptkit-spans.5).
 *
 * Owns the stack rules (below): what a call, a return, a jump, a
 * disable/enable pair and a gap do to the frames of a thread; the start
 * and end causes of every span; self and total time and instructions; the
 * inlined-code counts each frame gathers (as struct sym_inline pointers,
 * merged into a tree by the caller).  It knows nothing of ELF, files or
 * output formats: a struct cs_code answers "what instruction is at ip" and
 * "which function holds ip", and a struct cs_sink receives spans, gaps and
 * events.  So the engine runs the same on real images (codemap.h) and on
 * the synthetic code of its unit tests.
 *
 * Memory is bounded by the number of open threads times their stack depth
 * (and, per frame, by the inlined ranges of its function), never by the
 * number of spans: a span is handed to the sink when its frame closes and
 * forgotten.
 *
 * Rules (man/ptkit-spans.5, "How stacks are rebuilt", says the same to
 * readers of the spans):
 *  - a block's instructions belong to the frame on top while it ran;
 *  - call: pushes a frame whose return address is the call's end_ip plus
 *    the call's length (from cs_code.insn, i.e. the image bytes: libipt
 *    gives an instruction's size only for truncated blocks); a call to
 *    the next instruction (a PIC thunk) pushes nothing;
 *  - return to T: the frame whose return address is T returns (end seen)
 *    and the frames above it are closed as unwound; else, when T lies in
 *    the function of a frame lower down or in its .cold part (an
 *    exception landing pad), the frames above that one are unwound;
 *    else, from the bottom frame (or a signal handler), the caller is
 *    created retroactively (start
 *    ring_start, gap or trace_start, depth one less: depths can go below
 *    0, never a made-up parent); frames open when a segment of history
 *    begins (at the ring's start, after a gap) start at its first
 *    instant, the time of its first record;
 *  - jump (or taken conditional jump) to T outside the top frame's
 *    function: to another function's entry is a tail call (the frame is
 *    replaced, tail_call set; from a PLT stub it is the stub's resolution
 *    and not marked); into a function lower on the stack is a longjmp
 *    (frames above it unwound); into the .cold part of a function lower
 *    on the stack, a landing pad there (frames above it unwound);
 *    elsewhere (the top's own .cold part) changes nothing;
 *  - disabled then enabled at the ip after a syscall: a gap of cause
 *    syscall, stack kept; enabled at the ip an asynchronous disable gave:
 *    a gap of cause interrupt; enabled anywhere else: if a signal frame
 *    resumes there, that is its sigreturn (frames above unwound, the
 *    signal frame ends seen); otherwise a signal is delivered: an async
 *    frame is pushed for the handler;
 *  - GAP records of cause decode_error, unknown_image, overflow and lost
 *    (and OVERFLOW events) end every open frame with end gap, then the
 *    stack starts again from the next block (start gap);
 *  - END closes the open frames with end snapshot_end.
 *
 * Known limits: a frame is matched by return address or function, never
 * by stack pointer (the trace has none), so a longjmp or exception into a
 * recursive function lands in its most recent frame; a PLT stub reached
 * with lazy binding resolves through the dynamic linker, whose final jump
 * counts as a tail call (fixtures link with -z now).
 */
#ifndef PTKIT_CALLSTACK_H
#define PTKIT_CALLSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "fmt/blkstream.h"
#include "base/error.h"

struct sym_inline;

/* The branch kind of an instruction, as the stack needs it. */
enum cs_kind {
	CS_OTHER = 0,
	CS_CALL,		/* near call, direct or indirect */
	CS_RET,			/* near return */
	CS_JMP,			/* near jump, direct or indirect */
	CS_JCC,			/* conditional jump, loop, jrcxz */
	CS_SYSCALL,		/* syscall, sysenter, int */
	CS_FAR,			/* far call/jump/return, iret, sysret */
};

struct cs_insn {
	uint8_t len;		/* bytes, 1..15 */
	uint8_t kind;		/* enum cs_kind */
};

/*
 * The kind of an instruction of libipt class iclass (enum pt_insn_class,
 * as lib/dec/x86class gives it); trap says a far call is a system
 * instruction (struct x86_insn), which becomes CS_SYSCALL.
 */
uint8_t cs_kind_of(int iclass, int trap);

enum cs_fn_flag {
	CS_FN_PLT = 1 << 0,	/* a PLT stub: its jump is not a tail call */
	CS_FN_COLD = 1 << 1,	/* a split-off part (foo.cold): never called */
	CS_FN_LONGJMP = 1 << 2,	/* longjmp and kin: may jump below the bottom */
};

/* A function at run-time addresses. */
struct cs_fn {
	uint64_t lo, hi;	/* [lo, hi); lo is the entry */
	const char *name;	/* demangled; NULL when no symbol covers ip */
	const char *raw;	/* as the symbol table has it, or NULL */
	const char *module;	/* the mapped path, or NULL when unknown */
	uint64_t module_base;	/* run-time address of module offset 0 */
	unsigned flags;		/* enum cs_fn_flag */
};

/* A run of a block's instructions and the inlined call they are in. */
struct cs_inline_run {
	const struct sym_inline *inl;	/* innermost; NULL: not inlined */
	uint32_t n;
};

/*
 * What the engine asks about code.  Each callback returns 1 with *out
 * filled, 0 when it does not know (no image, no symbol, bytes that do not
 * decode), or a negative -ERR_* that stops the engine.
 *
 * inline_runs (may be NULL: no inline accounting) splits the ninsn
 * instructions from ip to end_ip into at most max runs, in order; it
 * returns the number of runs (their n summing to ninsn), 0 when it cannot
 * walk the block, or -ERR_*.
 *
 * block (may be NULL) answers both questions the engine has about every
 * block at once, so that an implementation can keep the answers per
 * block (a loop runs the same few blocks millions of times): in *out the
 * instruction at end_ip (what insn answers: end_known 1 and end, or
 * end_known 0) and the block's runs through inlined code (those of what
 * inline_runs answers with max CS_MAX_RUNS whose inl is not NULL, in
 * order; none when inline accounting is off or ninsn is 0; runs stay
 * valid until the next call).  It returns 0 or -ERR_*.  When
 * block is set, the engine asks it instead of insn and inline_runs for
 * blocks; the answers must be the same.
 *
 * gen (may be NULL) points at a counter the code moves whenever its
 * answers may change (new mappings).  With it, the engine keeps the
 * answers that block marks reuse (out->reuse 1: no runs, and asking
 * again would change nothing the code reports) and answers those blocks
 * itself while *gen stays the same: a hot loop then costs no call.  An
 * implementation that leaves reuse alone never has its answers kept.
 */
#define CS_MAX_RUNS 64

struct cs_block_info {
	struct cs_insn end;		/* the last instruction, if end_known */
	uint8_t end_known;
	uint8_t reuse;			/* may be kept while *gen holds */
	uint32_t n_runs;
	const struct cs_inline_run *runs;
};

struct cs_code {
	void *ctx;
	int (*insn)(void *ctx, uint32_t pid, uint64_t ip, struct cs_insn *out);
	int (*fn)(void *ctx, uint32_t pid, uint64_t ip, struct cs_fn *out);
	int (*inline_runs)(void *ctx, uint32_t pid, uint64_t ip,
	    uint64_t end_ip, uint32_t ninsn, struct cs_inline_run *runs,
	    size_t max);
	int (*block)(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
	    uint32_t ninsn, struct cs_block_info *out);
	const uint64_t *gen;
};

/* How an edge of a span was (not) observed. */
enum cs_start {
	CS_START_SEEN = 0,	/* entered by a call in the trace */
	CS_START_RING_START,	/* open when the retained trace began */
	CS_START_GAP,		/* open when the trace resumed after a gap */
	CS_START_TRACE_START,	/* the thread's trace began inside it */
	CS_START_SIGNAL,	/* a signal handler entered by the kernel */
	CS_START_RETURN,	/* entered by a return (signal trampoline) */
	CS_START_NR
};

enum cs_end {
	CS_END_SEEN = 0,	/* returned */
	CS_END_UNWOUND,		/* skipped by longjmp, an exception, ... */
	CS_END_SNAPSHOT_END,	/* still open when the trace ended */
	CS_END_GAP,		/* open when the trace broke off */
	CS_END_SIGRETURN,	/* a signal frame left by sigreturn */
	CS_END_NR
};

/* Their names are span/spandir's (spandir_start_name, ...). */

/* One inlined range's instructions inside a span (own, not nested). */
struct cs_inline_count {
	const struct sym_inline *inl;
	uint64_t insns;
};

/* A finished function call. */
struct cs_span {
	uint64_t id;			/* unique in the analysis, from 1 */
	uint64_t parent;		/* 0: none known */
	uint32_t tid, pid;
	int32_t depth;			/* 0 = the thread's first frame */
	struct cs_fn fn;
	uint64_t entry;			/* ip the frame was entered at */
	uint64_t call_site;		/* ip of the call; 0 unknown */
	uint64_t start_ns, end_ns;
	uint64_t self_ns;
	uint64_t insns, self_insns;
	uint8_t start, end;		/* enum cs_start, enum cs_end */
	uint8_t tail_call;		/* entered by a jump from another fn */
	uint8_t async;			/* a signal handler frame */
	const struct cs_inline_count *inl;	/* n_inl, merged by pointer */
	size_t n_inl;
};

enum cs_gap_cause {
	CS_GAP_SYSCALL = 0,		/* tracing off for a system call */
	CS_GAP_INTERRUPT,		/* tracing off, resumed where it stopped */
	CS_GAP_DISABLED,		/* tracing off, resumed elsewhere */
	CS_GAP_DECODE_ERROR,		/* from the block stream's GAPs ... */
	CS_GAP_UNKNOWN_IMAGE,
	CS_GAP_RING_START,
	CS_GAP_OVERFLOW,
	CS_GAP_LOST,
	CS_GAP_NR
};

struct cs_gap {
	uint32_t tid;
	uint8_t cause;			/* enum cs_gap_cause */
	uint64_t ip;			/* last ip known before it, 0 if none */
	uint64_t resume_ip;		/* where the trace went on, 0 unknown */
	uint64_t start_ns, end_ns;
	uint32_t frames_cut;		/* frames ended by it (end gap) */
	int32_t errcode;		/* libipt's, for decode errors */
	const char *text;		/* from the GAP record, or NULL */
};

enum cs_event_kind {
	CS_EV_THREAD_START = 0,
	CS_EV_THREAD_END,
	CS_EV_SIGNAL,			/* handler entered: ip handler, at resume */
	CS_EV_SIGRETURN,		/* back at ip */
	CS_EV_EXEC,			/* the process exec'd: arg is which
					   program of it runs from here */
	CS_EV_NR
};

struct cs_event {
	uint32_t tid;
	uint8_t kind;			/* enum cs_event_kind */
	uint64_t time;
	uint64_t ip, at;
};

/* Per-thread totals, given with the thread's end. */
struct cs_thread_stats {
	uint32_t tid, pid;
	uint64_t first_ns, last_ns;	/* times of the first, last record */
	uint64_t blocks, insns;
	uint64_t spans, max_depth_seen;
	int32_t min_depth;		/* lowest depth (retroactive callers) */
	uint64_t gaps, gap_ns;		/* every gap, and the time of those
					   inside [first_ns, last_ns] (all
					   but a ring start's) */
	uint64_t cut_frames;		/* frames ended by a gap */
	uint64_t unwound;		/* frames ended unwound */
	uint64_t tail_calls, signals, sigreturns;
	uint64_t ret_mismatch;		/* returns that matched no frame */
	uint64_t unknown_insn;		/* block ends we could not decode */
	uint64_t unnamed;		/* spans with no symbol */
	uint64_t ring_start;		/* the trace of this thread wrapped */
};

/*
 * Receivers.  Each returns 0, or a negative -ERR_* that stops the engine
 * (cs_feed returns it).  Pointers in the arguments are valid only during
 * the call.
 */
struct cs_sink {
	void *ctx;
	int (*span)(void *ctx, const struct cs_span *s);
	int (*gap)(void *ctx, const struct cs_gap *g);
	int (*event)(void *ctx, const struct cs_event *ev);
	int (*thread_end)(void *ctx, const struct cs_thread_stats *st);
};

struct callstack;

/*
 * A new engine (code and sink are copied; their ctx are borrowed).
 * max_depth bounds a thread's stack (0: CS_DEPTH_DEFAULT): a call that
 * would pass it ends the older half of the stack with end gap (counted as
 * cut_frames), so memory stays bounded under runaway recursion.
 * Returns NULL when out of memory.
 */
#define CS_DEPTH_DEFAULT 65536
struct callstack *cs_new(const struct cs_code *code, const struct cs_sink *sink,
    size_t max_depth);

/*
 * Feeds one record of the stream, in stream order.  Returns 0, a negative
 * error from a callback, or -ERR_FORMAT when records break the grouping
 * (a BLOCK outside a THREAD group: the stream reader already refuses it).
 */
int cs_feed(struct callstack *cs, const struct blks_record *r,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Feeds n BLOCK records (as blks_read_blocks() reads them), the same as n
 * cs_feed calls; returns as cs_feed, stopping at the first error.
 */
int cs_feed_blocks(struct callstack *cs, const struct blks_block *b,
    size_t n, struct error *e) PTKIT_MUST_CHECK;

/*
 * Feeds the BLOCK records of run (blkstream.h) until blks_run_next says
 * there are no more: the same as cs_feed_blocks on those blocks, for a
 * few ns a block.  While a thread has frames and tracing is on, blocks
 * are taken with the engine's state in registers: one that stays in the
 * top frame's function with its answers kept (cs_code.gen) costs no
 * call; a call, return or jump out, or a block to ask code.block about,
 * writes the state back first.  Returns as cs_feed_blocks; after an
 * error the run stands just past the block that failed.
 */
int cs_feed_run(struct callstack *cs, struct blks_run *run, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Chunks (ptspans -j).  A thread's records may be cut, after any BLOCK
 * record, into chunks that engines on other threads rebuild at once;
 * one engine that holds the true stack then applies their results in
 * stream order and hands out exactly what it would have made itself:
 * the same spans, gaps, events and totals, in the same order, with the
 * same ids.
 *
 * A chunk's engine (a worker) starts without the frames the chunks
 * before it left open: one virtual frame stands for the top of them.
 * What the chunk does to that frame is recorded, not done: its blocks'
 * instructions, inline runs and callees' time add to it; a return no
 * frame of the chunk matches returns from it (taken to be the frame
 * whose return address is the target, and not the bottom one), and the
 * next prior frame becomes the virtual one (taken to be in the function
 * the return lands in); a gap, an exec or the end closes them all.
 * Span ids are numbered from 1 in each chunk; a span whose parent or
 * depth depends on a prior frame says so.  What needs more of the true
 * stack than that (a tail call or a PLT stub's jump out of a prior
 * frame, a longjmp, sigreturn or landing pad that may land below the
 * chunk's frames, the retroactive callers below the bottom, a stack as
 * deep as max_depth) stops the chunk: it bails, and the applying
 * engine rebuilds it from its records itself.
 *
 * cs_chunk_begin starts a chunk on engine cs, which from then on only
 * makes chunks (its sink is not called).  With start->ctx NULL the
 * chunk's first record is a THREAD record; otherwise the chunk begins
 * in thread tid of pid, whose code is space (blks_space), after block
 * *ctx, the last record before it (a BLOCK with a known time: the cut
 * must follow a block).  Records are then fed with cs_feed and
 * cs_feed_run; an error for which cs_chunk_bailed() is true is the
 * chunk bailing, not a failure.  cs_chunk_end hands the result over
 * (*out, freed with cs_chunk_free or given back as start->reuse)
 * whether it bailed or not.
 *
 * cs_chunk_apply, on the engine that holds the true state of the
 * thread (having fed or applied everything before the chunk), checks
 * what the chunk took for that state and the prior frames; when it
 * holds, the chunk's spans, gaps, events and thread end go to that
 * engine's sink and its state goes on from the chunk's end: 1.  When
 * the chunk bailed or took something that does not hold: 0, and
 * nothing changed; the caller feeds the chunk's records to cs itself.
 * <0 on an error of the sink.
 */
struct cs_chunk;

struct cs_chunk_start {
	uint32_t tid, pid, space;
	const struct blks_block *ctx;	/* NULL: the chunk opens the thread */
	struct cs_chunk *reuse;		/* an applied result whose memory the
					   chunk takes over, or NULL */
	/* What cs_chunk_top_fn found: where the chunk takes a prior frame
	 * to be of the function its code is in (at ctx's ip, or where a
	 * return lands) and that is top_from, it takes top_to instead
	 * (NULL: none). */
	const struct cs_fn *top_from, *top_to;
};

int cs_chunk_begin(struct callstack *cs, const struct cs_chunk_start *start,
    struct error *e) PTKIT_MUST_CHECK;
int cs_chunk_bailed(const struct callstack *cs);
int cs_chunk_end(struct callstack *cs, struct cs_chunk **out,
    struct error *e) PTKIT_MUST_CHECK;
int cs_chunk_apply(struct callstack *cs, struct cs_chunk *c, struct error *e)
    PTKIT_MUST_CHECK;
void cs_chunk_free(struct cs_chunk *c);

/*
 * For a chunk cs_chunk_apply refused: 1 when a prior frame is not of the
 * function the chunk took it to be, with *from what it took and *to the
 * frame's (a thread whose frame runs another function's code, such as
 * one started in __clone, takes *to for the next chunks: cs_chunk_start's
 * top_from, top_to); 0 when none is.  Call it before feeding the chunk
 * to cs.
 */
int cs_chunk_top_fn(const struct callstack *cs, const struct cs_chunk *c,
    struct cs_fn *from, struct cs_fn *to);

/* Spans handed out so far. */
uint64_t cs_spans(const struct callstack *cs);

/* Frees the engine; frames still open are dropped silently. */
void cs_free(struct callstack *cs);

#endif

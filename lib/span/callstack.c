/* callstack: see callstack.h for the rules this file implements. */
#include "span/callstack.h"

#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIME_UNKNOWN UINT64_MAX

struct frame {
	uint64_t id, parent;
	int32_t depth;
	struct cs_fn fn;
	uint64_t entry, retaddr, call_site;
	uint64_t resume;		/* async: where sigreturn goes */
	uint64_t start_ns, child_ns;
	uint64_t self_insns, child_insns;
	uint8_t start, tail_call, async;
	struct cs_inline_count *inl;
	size_t n_inl, cap_inl;
};

/* The branch that ended the last block, resolved by what comes next. */
struct pending {
	int valid;
	uint8_t kind;			/* enum cs_kind */
	uint64_t end_ip, next_ip;	/* next_ip: end_ip + length, 0 unknown */
	uint64_t time;
};

struct thread {
	int open;
	uint32_t tid, pid;
	uint32_t space;			/* whose code: blks_space() of pid and
					   the program it runs (an exec moves
					   it on) */
	struct frame *f;
	size_t n, cap;
	uint8_t origin;			/* start cause of frames found below */
	uint64_t seg_start;		/* first time of the current segment */
	int seg_known;			/* seg_start is set */
	uint64_t last_time, last_ip;
	int have_time;
	struct pending pend;
	int disabled, dis_async;
	uint8_t dis_cause;		/* gap cause if it resumes at dis_resume */
	uint64_t dis_resume, dis_time, dis_ip;
	int gap_open;			/* a stream GAP waiting for its end */
	struct cs_gap gap;
	char gap_text[BLKS_TEXT_MAX + 1];
	struct cs_thread_stats st;
};

/*
 * A block's end and inline runs as code.block answered them with reuse
 * set (cs_code.gen).  Runs are kept by value (their inl pointers live as
 * long as the code's symbols), apart: most blocks have none.
 */
struct memo {
	uint64_t ip, end_ip;
	uint64_t key;			/* ninsn | pid << 32 */
	struct cs_insn end;
	uint8_t end_known, valid;
	uint8_t hot;			/* valid and end_known */
	uint8_t stay;			/* stay_flags of the branch at its end */
	uint8_t n_runs;			/* in memo_runs, same index */
};

#define MEMO_BITS 12
#define MEMO_RUNS 3	/* blocks with more runs are asked each time */

struct memo_runs {
	struct cs_inline_run run[MEMO_RUNS];
};

/*
 * fn_at's answers, kept like the memo's while *gen holds: a call costs
 * a probe instead of a question to the code.
 */
struct fn_memo {
	uint64_t ip;
	uint32_t pid;
	uint8_t valid;
	struct cs_fn fn;
};

#define FN_MEMO_BITS 11

struct callstack {
	struct cs_code code;
	struct cs_sink sink;
	size_t max_depth;
	uint64_t next_id;
	uint64_t spans;
	struct thread t;
	struct memo *memo;		/* 1 << MEMO_BITS; NULL without gen */
	struct memo_runs *memo_runs;	/* as many */
	uint64_t memo_gen;		/* *code.gen the memo holds for */
	struct fn_memo *fn_memo;	/* 1 << FN_MEMO_BITS; NULL without gen */
	uint64_t fn_memo_gen;		/* *code.gen fn_memo holds for */
};

struct callstack *
cs_new(const struct cs_code *code, const struct cs_sink *sink,
    size_t max_depth)
{
	struct callstack *cs;

	if ((cs = calloc(1, sizeof(*cs))) == NULL)
		return NULL;
	cs->code = *code;
	cs->sink = *sink;
	cs->max_depth = max_depth ? max_depth : CS_DEPTH_DEFAULT;
	if (cs->max_depth < 4)
		cs->max_depth = 4;
	cs->next_id = 1;
	if (code->gen != NULL && code->block != NULL) {
		cs->memo = calloc((size_t)1 << MEMO_BITS, sizeof(*cs->memo));
		cs->memo_runs = calloc((size_t)1 << MEMO_BITS,
		    sizeof(*cs->memo_runs));
		cs->fn_memo = calloc((size_t)1 << FN_MEMO_BITS,
		    sizeof(*cs->fn_memo));
		if (cs->memo == NULL || cs->memo_runs == NULL ||
		    cs->fn_memo == NULL) {
			free(cs->memo);
			free(cs->memo_runs);
			free(cs->fn_memo);
			free(cs);
			return NULL;
		}
		cs->fn_memo_gen = *code->gen;
		cs->memo_gen = *code->gen;
	}
	return cs;
}

uint64_t
cs_spans(const struct callstack *cs)
{
	return cs->spans;
}

static void
frames_free(struct thread *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->f[i].inl);
	free(t->f);
	t->f = NULL;
	t->n = t->cap = 0;
}

void
cs_free(struct callstack *cs)
{
	if (cs == NULL)
		return;
	frames_free(&cs->t);
	free(cs->memo);
	free(cs->memo_runs);
	free(cs->fn_memo);
	free(cs);
}

/* ----------------------------------------------------------------- */
/* Code questions */

/* The function at ip, asked of the code. */
static int
fn_asked(struct callstack *cs, uint32_t pid, uint64_t ip, struct cs_fn *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (cs->code.fn != NULL &&
	    (rc = cs->code.fn(cs->code.ctx, pid, ip, out)) != 0)
		return rc < 0 ? rc : 0;
	/* No symbol: a one-byte function, keeping what is known (module). */
	out->name = out->raw = NULL;
	out->flags = 0;
	out->lo = ip;
	out->hi = ip + 1;
	return 0;
}

/*
 * The function at ip; an unnamed one-byte range when nothing is known.
 * Kept in fn_memo while *gen holds (the code's answers stand so long).
 */
static int
fn_at(struct callstack *cs, uint32_t pid, uint64_t ip, struct cs_fn *out)
{
	struct fn_memo *m;
	uint64_t h;
	int rc;

	if (cs->fn_memo == NULL)
		return fn_asked(cs, pid, ip, out);
	if (*cs->code.gen != cs->fn_memo_gen) {
		memset(cs->fn_memo, 0, ((size_t)1 << FN_MEMO_BITS) *
		    sizeof(*cs->fn_memo));
		cs->fn_memo_gen = *cs->code.gen;
	}
	h = (ip ^ (uint64_t)pid << 40) * 0x9e3779b97f4a7c15ull;
	m = &cs->fn_memo[h >> (64 - FN_MEMO_BITS)];
	if (m->valid && m->ip == ip && m->pid == pid) {
		*out = m->fn;
		return 0;
	}
	if ((rc = fn_asked(cs, pid, ip, out)) < 0)
		return rc;
	/* The question may have moved *gen: keep only what still holds. */
	if (*cs->code.gen == cs->fn_memo_gen) {
		m->ip = ip;
		m->pid = pid;
		m->fn = *out;
		m->valid = 1;
	}
	return 0;
}

static int
in_fn(const struct cs_fn *fn, uint64_t ip)
{
	return ip >= fn->lo && ip < fn->hi;
}

/*
 * Whether cold is a split-off part of fn: its symbol is fn's with
 * ".cold" after it (gcc's X.cold, and X.cold.N of older releases).
 */
static int
cold_part_of(const struct cs_fn *cold, const struct cs_fn *fn)
{
	size_t n;

	if (!(cold->flags & CS_FN_COLD) || cold->raw == NULL ||
	    fn->raw == NULL || (fn->flags & CS_FN_COLD))
		return 0;
	n = strlen(fn->raw);
	return strncmp(cold->raw, fn->raw, n) == 0 &&
	    strncmp(cold->raw + n, ".cold", 5) == 0 &&
	    (cold->raw[n + 5] == '\0' || cold->raw[n + 5] == '.');
}

/*
 * The topmost frame whose function target's cold part belongs to, or -1
 * (target not in a cold part, or no frame of its function).  A landing
 * pad g++ moved into X.cold is X's code: an exception caught there
 * lands in X's frame.
 */
static long
cold_owner(struct callstack *cs, uint64_t target, int *rc)
{
	struct thread *t = &cs->t;
	struct cs_fn fn;

	if ((*rc = fn_at(cs, t->space, target, &fn)) < 0 ||
	    !(fn.flags & CS_FN_COLD))
		return -1;
	for (size_t i = t->n; i-- > 0;)
		if (cold_part_of(&fn, &t->f[i].fn))
			return (long)i;
	return -1;
}

uint8_t
cs_kind_of(int iclass, int trap)
{
	switch (iclass) {
	case ptic_call: return CS_CALL;
	case ptic_return: return CS_RET;
	case ptic_jump: return CS_JMP;
	case ptic_cond_jump: return CS_JCC;
	case ptic_far_call: return trap ? CS_SYSCALL : CS_FAR;
	case ptic_far_return: case ptic_far_jump: return CS_FAR;
	default: return CS_OTHER;	/* ptwrite, other, error */
	}
}

/*
 * The branch at the end of block b.  The image bytes decide (they give the
 * length a call's return address needs); libipt's class is the fallback
 * when the bytes cannot be read (in NULL).  A far call is a syscall or an
 * int.
 */
static inline __attribute__((always_inline)) void
set_pending(struct callstack *cs, const struct blks_block *b,
    const struct cs_insn *in, uint64_t time)
{
	struct pending *p = &cs->t.pend;

	p->valid = 1;
	p->end_ip = b->end_ip;
	p->time = time;
	if (in != NULL) {
		p->kind = in->kind;
		p->next_ip = b->end_ip + in->len;
	} else {
		p->kind = cs_kind_of(b->iclass, 1);
		p->next_ip = 0;
		cs->t.st.unknown_insn++;
	}
}

/* ----------------------------------------------------------------- */
/* Frames */

static struct frame *
top(struct thread *t)
{
	return t->n ? &t->f[t->n - 1] : NULL;
}

static int
grow(struct thread *t, struct error *e)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct frame *f;

	if ((f = realloc(t->f, cap * sizeof(*f))) == NULL)
		return error_set(e, ERR_NOMEM, "call stack of thread %u",
		    t->tid);
	memset(f + t->cap, 0, (cap - t->cap) * sizeof(*f));
	t->f = f;
	t->cap = cap;
	return 0;
}

static int
emit_span(struct callstack *cs, struct frame *f, uint64_t end_ns,
    uint8_t end)
{
	struct thread *t = &cs->t;
	struct cs_span s;
	uint64_t dur;

	/* Every member is set: no memset on this path. */
	s.id = f->id;
	s.parent = f->parent;
	s.tid = t->tid;
	s.pid = t->pid;
	s.depth = f->depth;
	s.fn = f->fn;
	s.entry = f->entry;
	s.call_site = f->call_site;
	s.start_ns = f->start_ns;
	s.end_ns = end_ns < f->start_ns ? f->start_ns : end_ns;
	dur = s.end_ns - s.start_ns;
	s.self_ns = f->child_ns > dur ? 0 : dur - f->child_ns;
	s.self_insns = f->self_insns;
	s.insns = f->self_insns + f->child_insns;
	s.start = f->start;
	s.end = end;
	s.tail_call = f->tail_call;
	s.async = f->async;
	s.inl = f->inl;
	s.n_inl = f->n_inl;
	cs->spans++;
	t->st.spans++;
	if (f->fn.name == NULL)
		t->st.unnamed++;
	if (end == CS_END_UNWOUND)
		t->st.unwound++;
	if (end == CS_END_GAP)
		t->st.cut_frames++;
	return cs->sink.span ? cs->sink.span(cs->sink.ctx, &s) : 0;
}

/* Closes the top frame, charging its time and instructions to its caller. */
static int
pop(struct callstack *cs, uint64_t end_ns, uint8_t end)
{
	struct thread *t = &cs->t;
	struct frame *f = top(t);
	uint64_t dur;
	int rc;

	if (end_ns < f->start_ns)
		end_ns = f->start_ns;
	dur = end_ns - f->start_ns;
	if (t->n > 1) {
		t->f[t->n - 2].child_ns += dur;
		t->f[t->n - 2].child_insns += f->self_insns + f->child_insns;
	}
	rc = emit_span(cs, f, end_ns, end);
	f->n_inl = 0;
	t->n--;
	return rc;
}

static int
pop_to(struct callstack *cs, size_t keep, uint64_t end_ns, uint8_t end)
{
	int rc;

	while (cs->t.n > keep)
		if ((rc = pop(cs, end_ns, end)) < 0)
			return rc;
	return 0;
}

/* Ends the older half of a stack that reached max_depth. */
static int
cut_bottom(struct callstack *cs, struct error *e)
{
	struct thread *t = &cs->t;
	size_t half = t->n / 2;
	int rc;

	(void)e;
	for (size_t i = 0; i < half; i++) {
		struct frame *f = &t->f[i];

		rc = emit_span(cs, f, t->last_time, CS_END_GAP);
		if (rc < 0)
			return rc;
		free(f->inl);
	}
	memmove(t->f, t->f + half, (t->n - half) * sizeof(*t->f));
	memset(t->f + t->n - half, 0, half * sizeof(*t->f));
	t->n -= half;
	t->origin = CS_START_GAP;
	return 0;
}

/* Pushes a frame for the code at ip; fills only what all pushes share. */
static int
push(struct callstack *cs, uint64_t ip, uint64_t time, uint8_t start,
    struct frame **out, struct error *e)
{
	struct thread *t = &cs->t;
	struct frame *f, *below;
	int rc;

	if (t->n >= cs->max_depth && (rc = cut_bottom(cs, e)) < 0)
		return rc;
	if (t->n == t->cap && (rc = grow(t, e)) < 0)
		return rc;
	below = top(t);
	f = &t->f[t->n];
	if ((rc = fn_at(cs, t->space, ip, &f->fn)) < 0)
		return rc;
	/* Member by member, keeping the slot's inline buffer: a memset of
	 * the whole frame (rep stos) cost more than the rest of a push. */
	f->id = cs->next_id++;
	f->parent = below ? below->id : 0;
	f->depth = below ? below->depth + 1 : 0;
	f->entry = ip;
	f->retaddr = f->call_site = f->resume = 0;
	f->start_ns = time;
	f->child_ns = f->self_insns = f->child_insns = 0;
	f->start = start;
	f->tail_call = f->async = 0;
	f->n_inl = 0;
	t->n++;
	if ((uint64_t)f->depth > t->st.max_depth_seen && f->depth > 0)
		t->st.max_depth_seen = (uint64_t)f->depth;
	*out = f;
	return 0;
}

/*
 * The frame a return (or a resumed trace) found below the bottom: it is
 * inserted under frame 0 with one depth less, and frame 0 becomes its
 * child.  Its start is the segment's, with the segment's cause.
 */
static int
push_below(struct callstack *cs, uint64_t ip, struct error *e)
{
	struct thread *t = &cs->t;
	struct frame nf, *f0;
	int rc;

	if (t->n == t->cap && (rc = grow(t, e)) < 0)
		return rc;
	memset(&nf, 0, sizeof(nf));
	if ((rc = fn_at(cs, t->space, ip, &nf.fn)) < 0)
		return rc;
	nf.inl = t->f[t->n].inl;	/* keep the spare slot's buffer */
	nf.cap_inl = t->f[t->n].cap_inl;
	memmove(t->f + 1, t->f, t->n * sizeof(*t->f));
	f0 = &t->f[1];
	nf.id = cs->next_id++;
	nf.parent = 0;
	nf.depth = t->n ? f0->depth - 1 : 0;
	nf.entry = 0;
	nf.start = t->origin;
	nf.start_ns = t->seg_start;
	if (t->n)
		f0->parent = nf.id;
	t->f[0] = nf;
	t->n++;
	if (nf.depth < t->st.min_depth)
		t->st.min_depth = nf.depth;
	return 0;
}

/* Adds n instructions of inlined range inl to frame f. */
static int
add_inline(struct frame *f, const struct sym_inline *inl, uint32_t n,
    struct error *e)
{
	struct cs_inline_count *c;
	size_t cap;

	/* Runs repeat: look at the most recent entries first. */
	for (size_t i = f->n_inl; i-- > 0;)
		if (f->inl[i].inl == inl) {
			f->inl[i].insns += n;
			return 0;
		}
	if (f->n_inl == f->cap_inl) {
		cap = f->cap_inl ? f->cap_inl * 2 : 8;
		if ((c = realloc(f->inl, cap * sizeof(*c))) == NULL)
			return error_set(e, ERR_NOMEM, "inline counts");
		f->inl = c;
		f->cap_inl = cap;
	}
	f->inl[f->n_inl].inl = inl;
	f->inl[f->n_inl].insns = n;
	f->n_inl++;
	return 0;
}

/* ----------------------------------------------------------------- */
/* Transitions */

static int
do_call(struct callstack *cs, const struct pending *p, uint64_t target,
    struct error *e)
{
	struct frame *f;
	int rc;

	/* A call to the next instruction reads the pc (PIC thunk). */
	if (p->next_ip != 0 && target == p->next_ip)
		return 0;
	if ((rc = push(cs, target, p->time, CS_START_SEEN, &f, e)) < 0)
		return rc;
	f->retaddr = p->next_ip;
	f->call_site = p->end_ip;
	return 0;
}

static int
do_return(struct callstack *cs, uint64_t target, uint64_t time,
    struct error *e)
{
	struct thread *t = &cs->t;
	struct frame *f;
	size_t i;
	int rc;

	for (i = t->n; i-- > 0;)
		if (t->f[i].retaddr == target && target != 0) {
			/* The bottom returns: its caller is found below it. */
			if (i == 0 && (rc = push_below(cs, target, e)) < 0)
				return rc;
			i += i == 0;
			if ((rc = pop_to(cs, i + 1, time, CS_END_UNWOUND)) < 0)
				return rc;
			return pop(cs, time, CS_END_SEEN);
		}
	/* A landing pad (exception) in a function lower on the stack, or
	 * in its cold part. */
	for (i = t->n ? t->n - 1 : 0; i-- > 0;)
		if (t->f[i].fn.name != NULL && in_fn(&t->f[i].fn, target))
			return pop_to(cs, i + 1, time, CS_END_UNWOUND);
	if (t->n > 1) {
		long owner = cold_owner(cs, target, &rc);

		if (rc < 0)
			return rc;
		if (owner >= 0 && (size_t)owner < t->n - 1)
			return pop_to(cs, (size_t)owner + 1, time,
			    CS_END_UNWOUND);
	}
	if ((f = top(t)) == NULL)
		return 0;
	if (f->async && f->retaddr == 0) {
		/* A handler returns into the signal trampoline. */
		uint64_t resume = f->resume;
		struct frame *nf;

		if ((rc = pop(cs, time, CS_END_SEEN)) < 0 ||
		    (rc = push(cs, target, time, CS_START_RETURN, &nf, e)) < 0)
			return rc;
		nf->async = 1;
		nf->resume = resume;
		return 0;
	}
	if (f->retaddr != 0)
		t->st.ret_mismatch++;
	if (t->n == 1 && (rc = push_below(cs, target, e)) < 0)
		return rc;
	if ((rc = pop(cs, time, CS_END_SEEN)) < 0)
		return rc;
	if (t->n == 0)
		return push_below(cs, target, e);
	return 0;
}

/* A longjmp into a frame older than the known bottom of the stack. */
static int
longjmp_below(struct callstack *cs, uint64_t target, uint64_t time,
    struct error *e)
{
	struct thread *t = &cs->t;
	int32_t depth = t->f[0].depth - 1;
	struct frame *f;
	int rc;

	if ((rc = pop_to(cs, 0, time, CS_END_UNWOUND)) < 0 ||
	    (rc = push(cs, target, t->seg_start, t->origin, &f, e)) < 0)
		return rc;
	f->depth = depth;
	f->entry = 0;
	if (depth < t->st.min_depth)
		t->st.min_depth = depth;
	return 0;
}

static int
do_jump(struct callstack *cs, const struct pending *p, uint64_t target,
    struct error *e)
{
	struct thread *t = &cs->t;
	struct frame *f = top(t), *nf;
	struct frame old;
	struct cs_fn fn;
	size_t i;
	int rc;

	if (f == NULL || in_fn(&f->fn, target))
		return 0;
	if ((rc = fn_at(cs, t->space, target, &fn)) < 0)
		return rc;
	if (fn.name == NULL)
		return 0;
	if (f->fn.flags & CS_FN_PLT) {
		/* The stub's jump to its target: the same call goes on. */
		f->fn = fn;
		return 0;
	}
	if (target == fn.lo && !(fn.flags & CS_FN_COLD)) {
		old = *f;
		if ((rc = pop(cs, p->time, CS_END_SEEN)) < 0 ||
		    (rc = push(cs, target, p->time, CS_START_SEEN, &nf, e)) < 0)
			return rc;
		nf->retaddr = old.retaddr;
		nf->call_site = p->end_ip;
		nf->tail_call = 1;
		nf->async = old.async;
		nf->resume = old.resume;
		t->st.tail_calls++;
		return 0;
	}
	/* Into the cold part of a function lower on the stack: an
	 * exception's landing pad there (of the top's own: no change). */
	if (fn.flags & CS_FN_COLD)
		for (i = t->n; i-- > 0;)
			if (cold_part_of(&fn, &t->f[i].fn))
				return pop_to(cs, i + 1, p->time,
				    CS_END_UNWOUND);
	/* longjmp: back into a function lower on the stack. */
	for (i = t->n - 1; i-- > 0;)
		if (t->f[i].fn.name != NULL && t->f[i].fn.lo == fn.lo)
			return pop_to(cs, i + 1, p->time, CS_END_UNWOUND);
	if ((f->fn.flags & CS_FN_LONGJMP) && t->f[0].retaddr == 0 &&
	    !t->f[0].async)
		return longjmp_below(cs, target, p->time, e);
	return 0;
}

/*
 * Whether the pending branch's going to next changes no frame: nothing
 * pending, no branch, a conditional jump not taken, or a jump inside the
 * top frame's function.  Most blocks end so; resolve() is for the rest.
 */
static inline int
branch_stays(const struct thread *t, uint64_t next)
{
	const struct pending *p = &t->pend;
	const struct cs_fn *fn;

	if (!p->valid || p->kind == CS_OTHER)
		return 1;
	if (p->kind == CS_JCC && next == p->next_ip)
		return 1;
	if (p->kind != CS_JCC && p->kind != CS_JMP && p->kind != CS_FAR)
		return 0;
	fn = &t->f[t->n - 1].fn;
	return next >= fn->lo && next < fn->hi;
}

/*
 * branch_stays as flags of the pending branch, for a test without
 * branches (cs_feed_run): the branch stays when STAY_ALWAYS, when
 * STAY_FALL and it fell through, when STAY_IN_FN and it went somewhere
 * in the top frame's function.
 */
#define STAY_ALWAYS 1u
#define STAY_FALL 2u
#define STAY_IN_FN 4u

static unsigned
stay_flags(int valid, uint8_t kind)
{
	if (!valid)
		return STAY_ALWAYS;
	switch (kind) {
	case CS_OTHER:
		return STAY_ALWAYS;
	case CS_JCC:
		return STAY_FALL | STAY_IN_FN;
	case CS_JMP:
	case CS_FAR:
		return STAY_IN_FN;
	default:
		return 0;
	}
}

/*
 * Resolves the branch that ended the last block: it went to next.  The
 * transitions read t->pend in place (nothing they call changes it).
 */
static int
resolve(struct callstack *cs, uint64_t next, struct error *e)
{
	struct thread *t = &cs->t;
	const struct pending *p = &t->pend;

	if (!p->valid || t->n == 0) {
		t->pend.valid = 0;
		return 0;
	}
	t->pend.valid = 0;
	switch (p->kind) {
	case CS_CALL:
		return do_call(cs, p, next, e);
	case CS_RET:
		return do_return(cs, next, p->time, e);
	case CS_JCC:
		if (next == p->next_ip)
			return 0;
		/* FALLTHROUGH */
	case CS_JMP:
	case CS_FAR:
		return do_jump(cs, p, next, e);
	default:
		return 0;
	}
}

/* ----------------------------------------------------------------- */
/* Records */

/* Frames found open from now on started at time, as far as we know. */
static void
set_segment(struct thread *t, uint64_t time)
{
	t->seg_start = time;
	t->seg_known = 1;
}

static uint64_t
rec_time(struct thread *t, uint64_t time)
{
	if (time == TIME_UNKNOWN)
		return t->last_time;
	t->have_time = 1;
	if (!t->seg_known && t->n == 0)
		set_segment(t, time);
	if (time > t->last_time || t->last_time == 0)
		t->last_time = time;
	return t->last_time;
}

static int
emit_gap(struct callstack *cs, struct cs_gap *g)
{
	struct thread *t = &cs->t;

	g->tid = t->tid;
	if (g->end_ns < g->start_ns)
		g->end_ns = g->start_ns;
	t->st.gaps++;
	/* The overwritten trace before a ring start lies before first_ns:
	 * not a hole in the history the thread's time is measured over. */
	if (g->cause != CS_GAP_RING_START)
		t->st.gap_ns += g->end_ns - g->start_ns;
	return cs->sink.gap ? cs->sink.gap(cs->sink.ctx, g) : 0;
}

static int
emit_event(struct callstack *cs, uint8_t kind, uint64_t time, uint64_t ip,
    uint64_t at)
{
	struct cs_event ev = { cs->t.tid, kind, time, ip, at };

	return cs->sink.event ? cs->sink.event(cs->sink.ctx, &ev) : 0;
}

/* A stream gap that was waiting for the trace to resume ends here. */
static int
close_stream_gap(struct callstack *cs, uint64_t ip, uint64_t time)
{
	struct thread *t = &cs->t;

	if (!t->gap_open)
		return 0;
	t->gap_open = 0;
	/* Frames open at the resume began before the history: they start
	 * at its first instant, which is here (after a ring start too). */
	if (t->n == 0)
		set_segment(t, time);
	t->gap.resume_ip = ip;
	t->gap.end_ns = time;
	return emit_gap(cs, &t->gap);
}

/* The first code of a segment: the thread's start, after a gap, ... */
static int
begin_segment(struct callstack *cs, uint64_t ip, struct error *e)
{
	struct thread *t = &cs->t;
	struct frame *f;
	int rc;

	if (t->origin == CS_START_TRACE_START && t->st.blocks == 0 &&
	    (rc = emit_event(cs, CS_EV_THREAD_START, t->seg_start, ip, 0)) < 0)
		return rc;
	if ((rc = push(cs, ip, t->seg_start, t->origin, &f, e)) < 0)
		return rc;
	return 0;
}

/*
 * Empties the memo when *gen moved.  Only a question to the code can
 * move it while blocks are fed (and a MAP record between them): after
 * each, and before the first block, is as good as before every block.
 */
static inline void
memo_fresh(struct callstack *cs)
{
	if (*cs->code.gen != cs->memo_gen) {
		memset(cs->memo, 0, ((size_t)1 << MEMO_BITS) *
		    sizeof(*cs->memo));
		cs->memo_gen = *cs->code.gen;
	}
}

/* The memo slot of block b; the whole memo is emptied when *gen moved. */
static inline struct memo *
memo_slot(struct callstack *cs, const struct blks_block *b)
{
	uint64_t h;

	memo_fresh(cs);
	h = (b->ip ^ (b->end_ip << 17) ^ ((uint64_t)b->ninsn << 40)) *
	    0x9e3779b97f4a7c15ull;
	return &cs->memo[h >> (64 - MEMO_BITS)];
}

/* Adds the inline runs the memo keeps for slot m to frame f. */
static int __attribute__((noinline))
memo_inline(struct callstack *cs, struct frame *f, const struct memo *m,
    struct error *e)
{
	const struct memo_runs *mr = &cs->memo_runs[m - cs->memo];
	int rc;

	for (uint8_t i = 0; i < m->n_runs; i++)
		if ((rc = add_inline(f, mr->run[i].inl, mr->run[i].n, e)) < 0)
			return rc;
	return 0;
}

/* The inline runs and the end of block b, from code.block. */
static int __attribute__((noinline))
block_asked_once(struct callstack *cs, struct frame *f,
    const struct blks_block *b, uint64_t time, struct memo *m,
    struct error *e)
{
	struct cs_block_info bi;
	int rc;

	bi.reuse = 0;
	if ((rc = cs->code.block(cs->code.ctx, cs->t.space, b->ip, b->end_ip,
	    b->ninsn, &bi)) < 0)
		return rc;
	for (uint32_t i = 0; i < bi.n_runs; i++)
		if (bi.runs[i].inl != NULL &&
		    (rc = add_inline(f, bi.runs[i].inl, bi.runs[i].n, e)) < 0)
			return rc;
	set_pending(cs, b, bi.end_known ? &bi.end : NULL, time);
	if (m != NULL && bi.reuse && bi.n_runs <= MEMO_RUNS) {
		struct memo_runs *mr = &cs->memo_runs[m - cs->memo];

		m->n_runs = 0;
		for (uint32_t i = 0; i < bi.n_runs; i++)
			if (bi.runs[i].inl != NULL)
				mr->run[m->n_runs++] = bi.runs[i];
		m->ip = b->ip;
		m->end_ip = b->end_ip;
		m->key = b->ninsn | (uint64_t)cs->t.space << 32;
		m->end = bi.end;
		m->end_known = bi.end_known;
		m->hot = bi.end_known;
		m->stay = (uint8_t)stay_flags(1, bi.end.kind);
		m->valid = 1;
	}
	return 0;
}

/* The same, from the memo when it holds the block. */
static inline __attribute__((always_inline)) int
block_known(struct callstack *cs, struct frame *f, const struct blks_block *b,
    uint64_t time, struct error *e)
{
	struct memo *m = NULL;

	if (cs->memo != NULL) {
		m = memo_slot(cs, b);
		if (m->valid && m->ip == b->ip && m->end_ip == b->end_ip &&
		    m->key == (b->ninsn | (uint64_t)cs->t.space << 32)) {
			int rc = m->n_runs ? memo_inline(cs, f, m, e) : 0;

			set_pending(cs, b, m->end_known ? &m->end : NULL, time);
			return rc;
		}
	}
	return block_asked_once(cs, f, b, time, m, e);
}

/* The same from code.inline_runs and code.insn. */
static int
block_asked(struct callstack *cs, struct frame *f, const struct blks_block *b,
    uint64_t time, struct error *e)
{
	struct cs_inline_run runs[CS_MAX_RUNS];
	struct cs_insn in;
	int rc = 0, nr;

	if (cs->code.inline_runs != NULL && b->ninsn > 0) {
		nr = cs->code.inline_runs(cs->code.ctx, cs->t.space, b->ip,
		    b->end_ip, b->ninsn, runs, CS_MAX_RUNS);
		if (nr < 0)
			return nr;
		for (int i = 0; i < nr; i++)
			if (runs[i].inl != NULL &&
			    (rc = add_inline(f, runs[i].inl, runs[i].n, e)) < 0)
				return rc;
	}
	if (cs->code.insn != NULL &&
	    (rc = cs->code.insn(cs->code.ctx, cs->t.space, b->end_ip, &in)) < 0)
		return rc;
	set_pending(cs, b, rc == 1 ? &in : NULL, time);
	return 0;
}

static int __attribute__((noinline))
on_block(struct callstack *cs, const struct blks_block *b, struct error *e)
{
	struct thread *t = &cs->t;
	uint64_t time;
	struct frame *f;
	int rc;

	/* The thread's first blocks come here (common_block sends them). */
	if (t->st.blocks == 0 && b->time != TIME_UNKNOWN)
		t->st.first_ns = b->time;
	time = rec_time(t, b->time);
	if ((rc = close_stream_gap(cs, b->ip, time)) < 0)
		return rc;
	if (t->disabled) {
		/* Resumed without an enable event: as if it had one. */
		t->disabled = 0;
		t->pend.valid = 0;
	}
	if (t->n == 0) {
		t->pend.valid = 0;
		if (!t->seg_known)
			set_segment(t, time);
		if ((rc = begin_segment(cs, b->ip, e)) < 0)
			return rc;
	} else if (!branch_stays(t, b->ip) && (rc = resolve(cs, b->ip, e)) < 0)
		return rc;
	if (t->n == 0 && (rc = begin_segment(cs, b->ip, e)) < 0)
		return rc;
	f = top(t);
	f->self_insns += b->ninsn;
	t->st.blocks++;
	t->st.insns += b->ninsn;
	t->last_ip = b->end_ip;
	if (cs->code.block != NULL)
		return block_known(cs, f, b, time, e);
	return block_asked(cs, f, b, time, e);
}

/* Tracing stopped: remember where it should resume and why. */
static int
on_disabled(struct callstack *cs, const struct blks_event *ev,
    uint64_t time, struct error *e)
{
	struct thread *t = &cs->t;
	struct pending p = t->pend;
	int rc;

	t->disabled = 1;
	t->dis_time = time;
	t->dis_ip = t->last_ip;
	t->dis_resume = 0;
	t->dis_cause = CS_GAP_DISABLED;
	t->dis_async = ev->arg == BLKS_DIS_ASYNC;
	if (t->dis_async) {
		/* The branch before it completed: it went to `at`. */
		if (ev->at != 0 && (rc = resolve(cs, ev->at, e)) < 0)
			return rc;
		t->dis_resume = ev->at;
		t->dis_cause = CS_GAP_INTERRUPT;
		t->pend.valid = 0;
		return 0;
	}
	t->pend.valid = 0;
	if (p.valid && (p.kind == CS_SYSCALL || p.kind == CS_FAR)) {
		t->dis_resume = p.next_ip;
		t->dis_cause = CS_GAP_SYSCALL;
	} else if (p.valid && p.kind == CS_CALL) {
		/* A call out of the traced region comes back after it. */
		t->dis_resume = p.next_ip;
	}
	return 0;
}

/* The topmost signal frame that sigreturn to ip leaves, or -1. */
static long
sigreturn_frame(const struct thread *t, uint64_t ip)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->f[i].async && t->f[i].resume == ip && ip != 0)
			return (long)i;
	return -1;
}

static int
enter_signal(struct callstack *cs, uint64_t handler, uint64_t resume,
    uint64_t time, struct error *e)
{
	struct thread *t = &cs->t;
	struct frame *f;
	int rc;

	if ((rc = push(cs, handler, time, CS_START_SIGNAL, &f, e)) < 0)
		return rc;
	f->async = 1;
	f->resume = resume;
	t->st.signals++;
	return emit_event(cs, CS_EV_SIGNAL, time, handler, resume);
}

static int
leave_signal(struct callstack *cs, long i, uint64_t ip, uint64_t time)
{
	struct thread *t = &cs->t;
	int rc;

	if ((rc = pop_to(cs, (size_t)i + 1, time, CS_END_UNWOUND)) < 0 ||
	    (rc = pop(cs, time, CS_END_SIGRETURN)) < 0)
		return rc;
	t->st.sigreturns++;
	return emit_event(cs, CS_EV_SIGRETURN, time, ip, 0);
}

/* Tracing resumed at ip: a gap, then what the place says happened. */
static int
on_enabled(struct callstack *cs, uint64_t ip, uint64_t time, struct error *e)
{
	struct thread *t = &cs->t;
	struct cs_gap g;
	long i;
	int rc;

	if ((rc = close_stream_gap(cs, ip, time)) < 0)
		return rc;
	if (!t->disabled) {
		if (t->n == 0)
			set_segment(t, time);
		return 0;
	}
	t->disabled = 0;
	memset(&g, 0, sizeof(g));
	g.ip = t->dis_ip;
	g.resume_ip = ip;
	g.start_ns = t->dis_time;
	g.end_ns = time;
	g.cause = t->dis_cause;
	if ((rc = emit_gap(cs, &g)) < 0)
		return rc;
	if (t->n == 0) {
		set_segment(t, time);
		return 0;
	}
	if (ip == t->dis_resume && ip != 0)
		return 0;
	if ((i = sigreturn_frame(t, ip)) >= 0)
		return leave_signal(cs, i, ip, time);
	if (t->dis_resume != 0 || t->dis_async)
		return enter_signal(cs, ip, t->dis_resume, time, e);
	/* Resumed somewhere else for no reason we know: a jump there. */
	struct pending p = { 1, CS_JMP, t->dis_ip, 0, time };
	return do_jump(cs, &p, ip, e);
}

/* A hole in the history: every open frame is cut. */
static int
on_gap(struct callstack *cs, uint8_t cause, uint64_t ip, uint64_t time,
    int32_t errcode, const char *text)
{
	struct thread *t = &cs->t;
	uint32_t cut = (uint32_t)t->n;
	int rc;

	if ((rc = close_stream_gap(cs, 0, time)) < 0)
		return rc;
	t->pend.valid = 0;
	t->disabled = 0;
	if (cause == CS_GAP_RING_START) {
		t->origin = CS_START_RING_START;
		t->st.ring_start = 1;
	} else {
		if ((rc = pop_to(cs, 0, time, CS_END_GAP)) < 0)
			return rc;
		t->origin = CS_START_GAP;
	}
	memset(&t->gap, 0, sizeof(t->gap));
	t->gap.cause = cause;
	t->gap.ip = ip ? ip : t->last_ip;
	t->gap.start_ns = time;
	t->gap.end_ns = time;
	t->gap.frames_cut = cause == CS_GAP_RING_START ? 0 : cut;
	t->gap.errcode = errcode;
	snprintf(t->gap_text, sizeof(t->gap_text), "%s", text ? text : "");
	t->gap.text = t->gap_text;
	t->gap_open = 1;
	set_segment(t, time);
	return 0;
}

static uint8_t
gap_cause(uint8_t blks_cause)
{
	switch (blks_cause) {
	case BLKS_GAP_UNKNOWN_IMAGE: return CS_GAP_UNKNOWN_IMAGE;
	case BLKS_GAP_RING_START: return CS_GAP_RING_START;
	case BLKS_GAP_OVERFLOW: return CS_GAP_OVERFLOW;
	case BLKS_GAP_LOST: return CS_GAP_LOST;
	default: return CS_GAP_DECODE_ERROR;
	}
}

/*
 * The process exec'd: its stack is gone with its program (the frames end
 * unwound), and the code from here is the next program's.
 */
static int
on_exec(struct callstack *cs, const struct blks_event *ev, uint64_t time)
{
	struct thread *t = &cs->t;
	int rc;

	if ((rc = close_stream_gap(cs, 0, time)) < 0 ||
	    (rc = pop_to(cs, 0, time, CS_END_UNWOUND)) < 0)
		return rc;
	t->space = blks_space(t->pid, (uint32_t)ev->arg);
	t->pend.valid = 0;
	t->disabled = 0;
	t->origin = CS_START_TRACE_START;
	return emit_event(cs, CS_EV_EXEC, time, 0, ev->arg);
}

static int
on_event(struct callstack *cs, const struct blks_event *ev, struct error *e)
{
	struct thread *t = &cs->t;
	uint64_t time = rec_time(t, ev->time);
	long i;
	int rc;

	switch (ev->kind) {
	case BLKS_EV_ENABLED:
		return on_enabled(cs, ev->ip, time, e);
	case BLKS_EV_DISABLED:
		return on_disabled(cs, ev, time, e);
	case BLKS_EV_OVERFLOW:
		return on_gap(cs, CS_GAP_OVERFLOW, ev->ip, time, 0,
		    "overflow event");
	case BLKS_EV_EXEC:
		return on_exec(cs, ev, time);
	case BLKS_EV_ASYNC_BRANCH:
		/* Interrupted at `at`, went on at ip with tracing on. */
		if (ev->at != 0 && (rc = resolve(cs, ev->at, e)) < 0)
			return rc;
		t->pend.valid = 0;
		if (t->n == 0 || ev->ip == ev->at || ev->ip == 0)
			return 0;
		if ((i = sigreturn_frame(t, ev->ip)) >= 0)
			return leave_signal(cs, i, ev->ip, time);
		return enter_signal(cs, ev->ip, ev->at, time, e);
	default:
		return 0;
	}
}

static int
on_thread(struct callstack *cs, const struct blks_thread *th)
{
	struct thread *t = &cs->t;
	struct frame *f = t->f;
	size_t cap = t->cap;

	memset(t, 0, sizeof(*t));
	t->f = f;
	t->cap = cap;
	t->open = 1;
	t->tid = th->tid;
	t->pid = th->pid;
	t->space = th->pid;
	t->origin = th->flags & BLKS_THREAD_WRAPPED ? CS_START_RING_START :
	    CS_START_TRACE_START;
	t->st.tid = th->tid;
	t->st.pid = th->pid;
	if (th->flags & BLKS_THREAD_WRAPPED)
		t->st.ring_start = 1;
	return 0;
}

static int
on_end(struct callstack *cs)
{
	struct thread *t = &cs->t;
	int rc;

	if ((rc = close_stream_gap(cs, 0, t->last_time)) < 0)
		return rc;
	if (t->disabled && t->n > 0) {
		/* The trace ended with tracing off (exit, or blocked). */
		struct cs_gap g;

		memset(&g, 0, sizeof(g));
		g.cause = t->dis_cause;
		g.ip = t->dis_ip;
		g.start_ns = g.end_ns = t->dis_time;
		if ((rc = emit_gap(cs, &g)) < 0)
			return rc;
	}
	if ((rc = pop_to(cs, 0, t->last_time, CS_END_SNAPSHOT_END)) < 0)
		return rc;
	if ((rc = emit_event(cs, CS_EV_THREAD_END, t->last_time, t->last_ip,
	    0)) < 0)
		return rc;
	t->st.last_ns = t->last_time;
	t->st.first_ns = t->st.blocks ? t->st.first_ns : 0;
	t->open = 0;
	return cs->sink.thread_end ? cs->sink.thread_end(cs->sink.ctx,
	    &t->st) : 0;
}

/*
 * on_block for the common block, inlined in the loop: a thread with
 * frames and blocks before, tracing on, no stream gap waiting, a known
 * time and code.block to ask.  The same steps as on_block, minus the
 * tests those conditions settle; everything else goes to on_block.
 */
static inline int
common_block(struct callstack *cs, const struct blks_block *b,
    struct error *e)
{
	struct thread *t = &cs->t;
	uint64_t time;
	int rc;

	if (t->n == 0 || (t->gap_open | t->disabled) != 0 ||
	    b->time == TIME_UNKNOWN || t->st.blocks == 0 ||
	    cs->code.block == NULL)
		return on_block(cs, b, e);
	time = rec_time(t, b->time);
	if (!branch_stays(t, b->ip)) {
		if ((rc = resolve(cs, b->ip, e)) < 0)
			return rc;
		if (t->n == 0 && (rc = begin_segment(cs, b->ip, e)) < 0)
			return rc;
	}
	t->f[t->n - 1].self_insns += b->ninsn;
	t->st.blocks++;
	t->st.insns += b->ninsn;
	t->last_ip = b->end_ip;
	return block_known(cs, &t->f[t->n - 1], b, time, e);
}

int
cs_feed_blocks(struct callstack *cs, const struct blks_block *b, size_t n,
    struct error *e)
{
	struct thread *t = &cs->t;
	int rc;

	if (n > 0 && !t->open)
		return error_set(e, ERR_FORMAT, "%s record outside a thread",
		    blks_type_name(BLKS_BLOCK));
	for (size_t i = 0; i < n; i++)
		if ((rc = common_block(cs, &b[i], e)) < 0)
			return rc;
	return 0;
}

/*
 * Whether the blocks that come next may take hot_run: common_block's
 * conditions, the memo there.
 */
static int
hot_ready(const struct callstack *cs)
{
	const struct thread *t = &cs->t;

	return t->n > 0 && (t->gap_open | t->disabled) == 0 &&
	    t->st.blocks > 0 && cs->memo != NULL;
}

/*
 * What hot_run keeps in locals: the pending branch, the latest time, and
 * the blocks and instructions not yet added to the thread and its top
 * frame (f).
 */
struct hot {
	struct frame *f;
	uint64_t lo, width;		/* f's function: ip - lo < width */
	unsigned stay;			/* stay_flags of the pending branch */
	uint8_t kind;
	uint64_t end_ip, next_ip;	/* the pending branch's */
	uint64_t last_time;
	uint64_t insns, blocks;		/* f's and the thread's, since the
					   last flush */
};

static inline void
hot_top(struct thread *t, struct hot *h)
{
	h->f = &t->f[t->n - 1];
	h->lo = h->f->fn.lo;
	h->width = h->f->fn.hi > h->lo ? h->f->fn.hi - h->lo : 0;
}

static inline void
hot_load_pending(struct thread *t, struct hot *h)
{
	h->kind = t->pend.kind;
	h->end_ip = t->pend.end_ip;
	h->next_ip = t->pend.next_ip;
	h->stay = stay_flags(t->pend.valid, h->kind);
}

/*
 * Writes h back: the engine's state is as common_block leaves it.  The
 * last block counted (there are blocks) set the pending branch, at the
 * latest time; without blocks, the pending branch is still the one
 * hot_load_pending read.
 */
static inline void
hot_flush(struct thread *t, struct hot *h)
{
	/* Not without blocks: after a failed push, f may be gone. */
	if (h->blocks > 0) {
		h->f->self_insns += h->insns;
		t->st.blocks += h->blocks;
		t->st.insns += h->insns;
		t->last_ip = h->end_ip;
		t->have_time = 1;
		t->pend.valid = 1;
		t->pend.kind = h->kind;
		t->pend.end_ip = h->end_ip;
		t->pend.next_ip = h->next_ip;
		t->pend.time = h->last_time;
		h->blocks = h->insns = 0;
	}
	t->last_time = h->last_time;
}

/*
 * b, whole: the loop below reads four members of most blocks, and leaves
 * the class byte where it is.
 */
static inline void
whole(const struct blks_run *r, const struct blks_block *b,
    struct blks_block *out)
{
	out->ip = b->ip;
	out->end_ip = b->end_ip;
	out->ninsn = b->ninsn;
	out->time = b->time;
	blks_run_class(r, out);
}

/*
 * The blocks of run, while the thread stays where hot_ready holds, with
 * common_block's steps and the engine's state in locals (struct hot):
 * a block that stays in the top frame's function and whose answers the
 * memo keeps costs no call; a branch to resolve or a block to ask
 * writes them back first.  Returns 0 when the run ends, 1 when a block
 * left hot_ready's conditions or had no time (common_block took it),
 * or <0 on an error.
 */
static int
hot_run(struct callstack *cs, struct blks_run *run, struct error *e)
{
	struct thread *t = &cs->t;
	struct memo *const memo = cs->memo;
	const uint64_t pid = (uint64_t)t->space << 32;
	struct blks_run r = *run;
	struct blks_block b, slow;
	struct hot h;
	int rc = 0;

	memset(&h, 0, sizeof(h));
	memo_fresh(cs);
	hot_top(t, &h);
	hot_load_pending(t, &h);
	h.last_time = t->last_time;
	while (blks_run_next(&r, &b)) {
		struct memo *m;
		uint64_t k, time;
		unsigned stays;

		if (__builtin_expect(b.time == TIME_UNKNOWN, 0)) {
			whole(&r, &b, &slow);
			rc = 1;
			break;
		}
		/* rec_time: the time is known, and 0 is the least. */
		time = b.time > h.last_time ? b.time : h.last_time;
		stays = (h.stay & STAY_ALWAYS) |
		    ((h.stay >> 1) & (b.ip == h.next_ip)) |
		    ((h.stay >> 2) & (b.ip - h.lo < h.width));
		if (!stays) {
			/* The pending branch at its time, then this one's. */
			hot_flush(t, &h);
			t->last_time = h.last_time = time;
			if ((rc = resolve(cs, b.ip, e)) < 0 ||
			    (t->n == 0 && (rc = begin_segment(cs, b.ip, e)) < 0))
				break;
			hot_top(t, &h);
			hot_load_pending(t, &h);
			memo_fresh(cs);
		}
		h.last_time = time;
		h.insns += b.ninsn;
		h.blocks++;
		h.end_ip = b.end_ip;
		k = (b.ip ^ (b.end_ip << 17) ^ ((uint64_t)b.ninsn << 40)) *
		    0x9e3779b97f4a7c15ull;
		m = &memo[k >> (64 - MEMO_BITS)];
		if (__builtin_expect(m->ip == b.ip && m->end_ip == b.end_ip &&
		    m->key == (b.ninsn | pid) && m->hot, 1)) {
			if (m->n_runs != 0 &&
			    (rc = memo_inline(cs, h.f, m, e)) < 0)
				break;
			h.kind = m->end.kind;
			h.next_ip = b.end_ip + m->end.len;
			h.stay = m->stay;
			continue;
		}
		/* block_known's other answers (the block by value: b stays
		 * in registers). */
		hot_flush(t, &h);
		whole(&r, &b, &slow);
		if (m->valid && m->ip == b.ip && m->end_ip == b.end_ip &&
		    m->key == (b.ninsn | pid)) {
			if (m->n_runs != 0 &&
			    (rc = memo_inline(cs, h.f, m, e)) < 0)
				break;
			set_pending(cs, &slow, NULL, h.last_time);
		} else if ((rc = block_asked_once(cs, h.f, &slow, h.last_time,
		    m, e)) < 0)
			break;
		hot_load_pending(t, &h);
		memo_fresh(cs);
	}
	hot_flush(t, &h);
	*run = r;
	if (rc == 1 && (rc = common_block(cs, &slow, e)) == 0)
		rc = 1;
	return rc;
}

int
cs_feed_run(struct callstack *cs, struct blks_run *run, struct error *e)
{
	struct blks_block b;
	int rc;

	for (;;) {
		if (cs->t.open && hot_ready(cs)) {
			if ((rc = hot_run(cs, run, e)) <= 0)
				return rc;
			continue;
		}
		if (!blks_run_next(run, &b))
			return 0;
		if ((rc = cs_feed_blocks(cs, &b, 1, e)) < 0)
			return rc;
	}
}

int
cs_feed(struct callstack *cs, const struct blks_record *r, struct error *e)
{
	struct thread *t = &cs->t;
	const struct blks_gap *g;

	switch (r->type) {
	case BLKS_THREAD:
		if (t->open)
			return error_set(e, ERR_FORMAT, "thread %u opened "
			    "inside thread %u", r->u.thread.tid, t->tid);
		return on_thread(cs, &r->u.thread);
	case BLKS_END:
		return t->open ? on_end(cs) : 0;
	case BLKS_BLOCK:
	case BLKS_EVENT:
	case BLKS_GAP:
		if (!t->open)
			return error_set(e, ERR_FORMAT, "%s record outside a "
			    "thread", blks_type_name(r->type));
		break;
	default:
		return 0;
	}
	if (r->type == BLKS_BLOCK)
		return cs_feed_blocks(cs, &r->u.block, 1, e);
	if (r->type == BLKS_EVENT)
		return on_event(cs, &r->u.event, e);
	g = &r->u.gap;
	return on_gap(cs, gap_cause(g->cause), g->ip, rec_time(t, g->time),
	    g->errcode, g->text);
}

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
	/*
	 * A chunk begun mid-thread (cs_chunk_begin): f[0] is the virtual
	 * frame, standing for the top of the frames the chunks before left
	 * open (prior frame popped + 1); its counts are what this chunk adds
	 * to that frame.  reset: the chunk closed every prior frame (a gap,
	 * an exec), and knows the whole stack from then on.
	 */
	int virt, reset;
	uint32_t popped;
	int32_t relmax;			/* deepest push while virt, relative */
	int64_t vmax;			/* most frames above the prior ones
					   that are left, at a push while virt */
	int gap_add_prior;		/* gap.frames_cut lacks the prior frames */
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

struct cs_chunk;

struct callstack {
	struct cs_code code;
	struct cs_sink sink;
	struct cs_chunk *co;		/* chunk mode: what the chunk made */
	int bailed;			/* chunk mode: it needs the true stack */
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
	cs_chunk_free(cs->co);
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

/*
 * A chunk met what only the true stack below it can answer: it stops,
 * and is rebuilt by the engine that holds that stack (cs_chunk_apply
 * says so).  Only in chunk mode, with the virtual frame there.
 */
static int
bail(struct callstack *cs)
{
	cs->bailed = 1;
	return -ERR_UNSUPPORTED;
}

static int pop_all_prior(struct callstack *cs, uint64_t end_ns, uint8_t end);
static int same_fn(const struct cs_fn *a, const struct cs_fn *b);
static int no_fn_below(struct callstack *cs, const struct cs_fn *fn,
    const struct frame *top_frame);
static void co_thread_record(struct cs_chunk *c, const struct blks_thread *th);

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

	if (t->virt && t->n == 1)
		return bail(cs);
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

	if (keep == 0 && cs->t.virt) {
		if ((rc = pop_to(cs, 1, end_ns, end)) < 0)
			return rc;
		return pop_all_prior(cs, end_ns, end);
	}
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
	if (t->virt)
		return bail(cs);
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
	if (__builtin_expect(t->virt, 0)) {
		/* Depths are relative to the prior top's (cs_chunk_apply). */
		if (f->depth > t->relmax)
			t->relmax = f->depth;
		if ((int64_t)t->n - 2 - t->popped > t->vmax)
			t->vmax = (int64_t)t->n - 2 - t->popped;
	} else if ((uint64_t)f->depth > t->st.max_depth_seen && f->depth > 0)
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

	if (t->virt)
		return bail(cs);
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
add_inline(struct frame *f, const struct sym_inline *inl, uint64_t n,
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

static int return_to_prior(struct callstack *cs, uint64_t target,
    uint64_t time, struct error *e);

static int
do_return(struct callstack *cs, uint64_t target, uint64_t time,
    struct error *e)
{
	struct thread *t = &cs->t;
	struct frame *f;
	size_t i;
	int rc;

	for (i = t->n; i-- > 0;)
		if (i == 0 && t->virt)
			return return_to_prior(cs, target, time, e);
		else if (t->f[i].retaddr == target && target != 0) {
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

	if (t->virt)
		return bail(cs);
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
	/* The prior top's frame changing: what it inherits is not known. */
	if (t->virt && t->n == 1 && ((f->fn.flags & CS_FN_PLT) ||
	    (target == fn.lo && !(fn.flags & CS_FN_COLD))))
		return bail(cs);
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
	if (fn.flags & CS_FN_COLD) {
		for (i = t->n; i-- > 0;)
			if (cold_part_of(&fn, &t->f[i].fn))
				return pop_to(cs, i + 1, p->time,
				    CS_END_UNWOUND);
		if (t->virt)
			return bail(cs);	/* the frames below may */
	}
	/* longjmp: back into a function lower on the stack. */
	for (i = t->n - 1; i-- > 0;)
		if (t->f[i].fn.name != NULL && t->f[i].fn.lo == fn.lo)
			return pop_to(cs, i + 1, p->time, CS_END_UNWOUND);
	if (t->virt)
		return no_fn_below(cs, &fn, f);
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

/*
 * The topmost signal frame that sigreturn to ip leaves, or -1; -2 when
 * only the frames below a chunk's virtual frame could say.
 */
static long
sigreturn_frame(const struct thread *t, uint64_t ip)
{
	for (size_t i = t->n; i-- > 0;) {
		if (i == 0 && t->virt)
			return -2;
		if (t->f[i].async && t->f[i].resume == ip && ip != 0)
			return (long)i;
	}
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
	if ((i = sigreturn_frame(t, ip)) == -2)
		return bail(cs);
	if (i >= 0)
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
	int add_prior = t->virt;
	int rc;

	if (t->virt && cause == CS_GAP_RING_START)
		return bail(cs);
	/* The prior frames are counted where the chunk is applied. */
	cut -= (uint32_t)add_prior;
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
	t->gap_add_prior = add_prior;
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

	/* The frames after it start when the segment did, which only the
	 * true stack's thread knows. */
	if (t->virt)
		return bail(cs);
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
		if ((i = sigreturn_frame(t, ev->ip)) == -2)
			return bail(cs);
		if (i >= 0)
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
		if (cs->co != NULL)
			co_thread_record(cs->co, &r->u.thread);
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

/* ----------------------------------------------------------------- */
/* Chunks: see callstack.h, "Chunks". */

#define VIRT_ID (1ull << 63)	/* | j: prior frame j's id, apply's to fill */

enum { IT_SPAN, IT_GAP, IT_EVENT, IT_POP, IT_POP_ALL, IT_THREAD_END };

/* What a chunk adds to a prior frame: the virtual frame's counts. */
struct delta {
	uint64_t self_insns, child_ns, child_insns;
};

/* One thing the chunk made, in the order the serial engine makes it. */
struct item {
	uint8_t kind;
	uint8_t rel;			/* span: depth relative to prior top's */
	uint8_t add_prior;		/* gap: frames_cut lacks prior frames */
	uint8_t end;			/* pops: end cause */
	uint64_t time;			/* pops: when */
	size_t inl, n_inl;		/* span, pops: in c->inl */
	size_t text;			/* gap: in c->text, SIZE_MAX none */
	union {
		struct cs_span s;
		struct cs_gap g;
		struct cs_event ev;
		struct delta d;
	} u;
};

/* What a chunk took a prior frame to be; apply checks each. */
enum { AS_FN, AS_RET, AS_NO_FN };
struct assume {
	uint8_t kind;
	uint32_t j;			/* prior frame j: 1 the top at begin */
	uint64_t ret;			/* AS_RET: its return address; and it
					   is not the bottom frame.  AS_NO_FN:
					   no named frame below it is of the
					   function entered at ret */
	struct cs_fn fn;		/* AS_FN: its function */
};

#define NO_FN_SEEN 64			/* AS_NO_FN already taken, by lo */

struct cs_chunk {
	int mid;			/* begun mid-thread, after a block */
	int bailed;
	struct blks_thread th;		/* !mid: its THREAD record (no name) */
	struct item *item;
	size_t n_item, cap_item;
	struct cs_inline_count *inl;
	size_t n_inl, cap_inl;
	char *text;
	size_t n_text, cap_text;
	struct assume *as;
	size_t n_as, cap_as;
	int has_top;			/* cs_chunk_start's top_from, top_to */
	struct cs_fn top_from, top_to;
	struct {
		uint32_t j;
		uint64_t lo;
	} no_fn_seen[NO_FN_SEEN];
	/* mid: the state the chunk took the thread to be in. */
	struct pending pend0;
	uint64_t last_time0, last_ip0;
	uint32_t space0;
	/* Where it ended: t.f holds the frames left (owned here). */
	struct thread t;
	struct cs_thread_stats end_st;	/* IT_THREAD_END's */
	uint64_t ids, spans;		/* ids 1..ids pushed; spans made */
};

static int
vec_room(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if ((np = realloc(*p, c * size)) == NULL)
		return -ERR_NOMEM;
	*p = np;
	*cap = c;
	return 0;
}

static struct item *
co_item(struct cs_chunk *c, uint8_t kind)
{
	struct item *it;

	if (c->n_item == c->cap_item && vec_room((void **)&c->item,
	    &c->cap_item, c->n_item + 1, sizeof(*c->item)) < 0)
		return NULL;
	/* Member by member: most items are spans, which set their own. */
	it = &c->item[c->n_item++];
	it->kind = kind;
	it->rel = it->add_prior = it->end = 0;
	it->time = 0;
	it->inl = it->n_inl = 0;
	it->text = SIZE_MAX;
	return it;
}

static int
co_inl(struct cs_chunk *c, const struct cs_inline_count *inl, size_t n,
    struct item *it)
{
	if (vec_room((void **)&c->inl, &c->cap_inl, c->n_inl + n,
	    sizeof(*c->inl)) < 0)
		return -ERR_NOMEM;
	if (n > 0)
		memcpy(c->inl + c->n_inl, inl, n * sizeof(*inl));
	it->inl = c->n_inl;
	it->n_inl = n;
	c->n_inl += n;
	return 0;
}

static int
co_span(void *ctx, const struct cs_span *s)
{
	struct callstack *cs = ctx;
	struct item *it;

	if ((it = co_item(cs->co, IT_SPAN)) == NULL)
		return -ERR_NOMEM;
	it->u.s = *s;
	it->u.s.inl = NULL;
	it->rel = (uint8_t)cs->t.virt;
	return co_inl(cs->co, s->inl, s->n_inl, it);
}

static int
co_gap(void *ctx, const struct cs_gap *g)
{
	struct callstack *cs = ctx;
	struct cs_chunk *c = cs->co;
	struct item *it;
	size_t len;

	if ((it = co_item(c, IT_GAP)) == NULL)
		return -ERR_NOMEM;
	it->u.g = *g;
	it->u.g.text = NULL;
	if (g == &cs->t.gap && cs->t.gap_add_prior) {
		it->add_prior = 1;
		cs->t.gap_add_prior = 0;
	}
	if (g->text != NULL) {
		len = strlen(g->text) + 1;
		if (vec_room((void **)&c->text, &c->cap_text, c->n_text + len,
		    1) < 0)
			return -ERR_NOMEM;
		memcpy(c->text + c->n_text, g->text, len);
		it->text = c->n_text;
		c->n_text += len;
	}
	return 0;
}

static int
co_event(void *ctx, const struct cs_event *ev)
{
	struct callstack *cs = ctx;
	struct item *it;

	if ((it = co_item(cs->co, IT_EVENT)) == NULL)
		return -ERR_NOMEM;
	it->u.ev = *ev;
	return 0;
}

static int
co_thread_end(void *ctx, const struct cs_thread_stats *st)
{
	struct callstack *cs = ctx;
	struct item *it;

	if ((it = co_item(cs->co, IT_THREAD_END)) == NULL)
		return -ERR_NOMEM;
	cs->co->end_st = *st;
	if (cs->co->mid)
		cs->co->end_st.blocks--;	/* cs_chunk_begin's one */
	return 0;
}

static void
co_thread_record(struct cs_chunk *c, const struct blks_thread *th)
{
	c->th = *th;
	c->th.name = "";
}

static int
add_assume(struct cs_chunk *c, uint8_t kind, uint32_t j, uint64_t ret,
    const struct cs_fn *fn)
{
	struct assume *a;

	if (vec_room((void **)&c->as, &c->cap_as, c->n_as + 1,
	    sizeof(*c->as)) < 0)
		return -ERR_NOMEM;
	a = &c->as[c->n_as++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->j = j;
	a->ret = ret;
	if (fn != NULL)
		a->fn = *fn;
	return 0;
}

/*
 * A jump into the middle of fn that no frame of the chunk is in: the
 * serial engine would look for a frame of fn below (a longjmp) in the
 * prior frames too.  Taken to find none (checked by apply); the same
 * jump again takes nothing new.  The top in a longjmp function may
 * jump below the bottom, which only the true stack knows.
 */
static int
no_fn_below(struct callstack *cs, const struct cs_fn *fn,
    const struct frame *top_frame)
{
	struct cs_chunk *c = cs->co;
	uint32_t j = cs->t.popped + 1;
	size_t h = (size_t)((fn->lo * 0x9e3779b97f4a7c15ull) >> 58);
	int rc;

	if (top_frame->fn.flags & CS_FN_LONGJMP)
		return bail(cs);
	if (c->no_fn_seen[h].j == j && c->no_fn_seen[h].lo == fn->lo)
		return 0;
	if ((rc = add_assume(c, AS_NO_FN, j, fn->lo, NULL)) < 0)
		return rc;
	c->no_fn_seen[h].j = j;
	c->no_fn_seen[h].lo = fn->lo;
	return 0;
}

/* f becomes the virtual frame of prior frame j, whose function is fn. */
static void
virt_frame(struct frame *f, uint32_t j, const struct cs_fn *fn)
{
	f->id = VIRT_ID | j;
	f->parent = 0;
	f->depth = -(int32_t)(j - 1);
	f->fn = *fn;
	f->entry = f->retaddr = f->call_site = f->resume = 0;
	f->start_ns = f->child_ns = f->self_insns = f->child_insns = 0;
	f->start = 0;
	f->tail_call = f->async = 0;
	f->n_inl = 0;
}

/* An item closing the prior top, with what the chunk added to it. */
static int
co_pop(struct callstack *cs, uint8_t kind, uint64_t end_ns, uint8_t end)
{
	struct frame *f = &cs->t.f[0];
	struct item *it;

	if ((it = co_item(cs->co, kind)) == NULL)
		return -ERR_NOMEM;
	it->time = end_ns;
	it->end = end;
	it->u.d.self_insns = f->self_insns;
	it->u.d.child_ns = f->child_ns;
	it->u.d.child_insns = f->child_insns;
	return co_inl(cs->co, f->inl, f->n_inl, it);
}

/* Every prior frame ends (a gap, an exec, the end): the chunk knows the
 * whole stack from here. */
static int
pop_all_prior(struct callstack *cs, uint64_t end_ns, uint8_t end)
{
	struct thread *t = &cs->t;
	int rc;

	if ((rc = co_pop(cs, IT_POP_ALL, end_ns, end)) < 0)
		return rc;
	t->f[0].n_inl = 0;
	t->n = 0;
	t->virt = 0;
	t->reset = 1;
	return 0;
}

/*
 * A return no frame of the chunk matches: it returns from the prior top,
 * as the serial engine finds when that frame's return address is the
 * target and it is not the bottom one (assumed here, checked by apply).
 * The caller's frame, the next prior one, is taken to be in the
 * function the return lands in.
 */
static int
return_to_prior(struct callstack *cs, uint64_t target, uint64_t time,
    struct error *e)
{
	struct thread *t = &cs->t;
	struct cs_fn fn;
	int rc;

	(void)e;
	if (target == 0)
		return bail(cs);
	if ((rc = pop_to(cs, 1, time, CS_END_UNWOUND)) < 0 ||
	    (rc = add_assume(cs->co, AS_RET, t->popped + 1, target,
	    NULL)) < 0 ||
	    (rc = co_pop(cs, IT_POP, time, CS_END_SEEN)) < 0)
		return rc;
	t->popped++;
	if ((rc = fn_at(cs, t->space, target, &fn)) < 0)
		return rc;
	if (cs->co->has_top && same_fn(&fn, &cs->co->top_from))
		fn = cs->co->top_to;
	if ((rc = add_assume(cs->co, AS_FN, t->popped + 1, 0, &fn)) < 0)
		return rc;
	virt_frame(&t->f[0], t->popped + 1, &fn);
	return 0;
}

static void
chunk_frames_free(struct cs_chunk *c)
{
	for (size_t i = 0; i < c->t.n; i++)
		free(c->t.f[i].inl);
	free(c->t.f);
	c->t.f = NULL;
	c->t.n = c->t.cap = 0;
}

/* c emptied for another chunk, keeping its buffers. */
static void
chunk_reset(struct cs_chunk *c)
{
	struct cs_chunk keep = *c;

	chunk_frames_free(c);
	memset(c, 0, sizeof(*c));
	c->item = keep.item;
	c->cap_item = keep.cap_item;
	c->inl = keep.inl;
	c->cap_inl = keep.cap_inl;
	c->text = keep.text;
	c->cap_text = keep.cap_text;
	c->as = keep.as;
	c->cap_as = keep.cap_as;
}

void
cs_chunk_free(struct cs_chunk *c)
{
	if (c == NULL)
		return;
	chunk_frames_free(c);
	free(c->item);
	free(c->inl);
	free(c->text);
	free(c->as);
	free(c);
}

int
cs_chunk_begin(struct callstack *cs, const struct cs_chunk_start *start,
    struct error *e)
{
	struct thread *t = &cs->t;
	const struct blks_block *b = start->ctx;
	struct cs_sink sink = { cs, co_span, co_gap, co_event, co_thread_end };
	struct frame *f = t->f;
	size_t cap = t->cap;
	struct cs_fn fn;
	int rc;

	cs_chunk_free(cs->co);
	if (start->reuse != NULL) {
		cs->co = start->reuse;
		chunk_reset(cs->co);
	} else if ((cs->co = calloc(1, sizeof(*cs->co))) == NULL)
		return error_set(e, ERR_NOMEM, "chunk");
	cs->sink = sink;
	cs->bailed = 0;
	cs->next_id = 1;
	cs->spans = 0;
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->cap = cap;
	if (b == NULL)
		return 0;		/* its first record is THREAD */
	if (t->cap == 0 && (rc = grow(t, e)) < 0)
		return rc;
	cs->co->mid = 1;
	t->open = 1;
	t->tid = t->st.tid = start->tid;
	t->pid = t->st.pid = start->pid;
	t->space = start->space;
	t->origin = CS_START_TRACE_START;
	t->st.blocks = 1;		/* blocks came before: not the first */
	t->virt = 1;
	t->relmax = INT32_MIN;
	t->vmax = INT64_MIN;
	t->seg_known = 1;
	t->have_time = 1;
	t->last_time = b->time;
	t->last_ip = b->end_ip;
	if ((rc = fn_at(cs, t->space, b->ip, &fn)) < 0)
		return rc;
	if (start->top_from != NULL) {
		cs->co->has_top = 1;
		cs->co->top_from = *start->top_from;
		cs->co->top_to = *start->top_to;
	}
	if (cs->co->has_top && same_fn(&fn, &cs->co->top_from))
		fn = cs->co->top_to;
	if ((rc = add_assume(cs->co, AS_FN, 1, 0, &fn)) < 0)
		return rc;
	virt_frame(&t->f[0], 1, &fn);
	t->n = 1;
	/* The branch that ended the block before: asked as the serial
	 * engine asked it (the counters it moves are the caller's to
	 * leave out). */
	if (cs->code.block != NULL) {
		struct cs_block_info bi;

		bi.reuse = 0;
		if ((rc = cs->code.block(cs->code.ctx, t->space, b->ip,
		    b->end_ip, b->ninsn, &bi)) < 0)
			return rc;
		set_pending(cs, b, bi.end_known ? &bi.end : NULL, b->time);
	} else {
		struct cs_insn in;

		rc = cs->code.insn != NULL ? cs->code.insn(cs->code.ctx,
		    t->space, b->end_ip, &in) : 0;
		if (rc < 0)
			return rc;
		set_pending(cs, b, rc == 1 ? &in : NULL, b->time);
	}
	t->st.unknown_insn = 0;
	cs->co->pend0 = t->pend;
	cs->co->last_time0 = b->time;
	cs->co->last_ip0 = b->end_ip;
	cs->co->space0 = t->space;
	return 0;
}

int
cs_chunk_bailed(const struct callstack *cs)
{
	return cs->bailed;
}

int
cs_chunk_end(struct callstack *cs, struct cs_chunk **out, struct error *e)
{
	struct cs_chunk *c = cs->co;
	struct thread *t = &cs->t;
	struct frame *f;

	*out = NULL;
	if (c == NULL)
		return error_set(e, ERR_INTERNAL, "no chunk begun");
	cs->co = NULL;
	c->bailed = cs->bailed;
	if (!c->bailed) {
		c->t = *t;
		c->t.f = NULL;
		c->t.n = c->t.cap = 0;
		if (t->n > 0 &&
		    (c->t.f = calloc(t->n, sizeof(*c->t.f))) == NULL) {
			cs_chunk_free(c);
			return error_set(e, ERR_NOMEM, "chunk frames");
		}
		for (size_t i = 0; i < t->n; i++) {
			f = &c->t.f[i];
			*f = t->f[i];
			f->inl = NULL;
			f->cap_inl = 0;
			c->t.n = c->t.cap = i + 1;
			if (f->n_inl == 0)
				continue;
			if ((f->inl = malloc(f->n_inl * sizeof(*f->inl))) ==
			    NULL) {
				f->n_inl = 0;
				cs_chunk_free(c);
				return error_set(e, ERR_NOMEM, "chunk frames");
			}
			memcpy(f->inl, t->f[i].inl, f->n_inl * sizeof(*f->inl));
			f->cap_inl = f->n_inl;
		}
		if (c->mid)
			c->t.st.blocks--;
		c->ids = cs->next_id - 1;
		c->spans = cs->spans;
	}
	t->open = 0;
	t->n = 0;
	t->virt = 0;
	*out = c;
	return 0;
}

static int
same_fn(const struct cs_fn *a, const struct cs_fn *b)
{
	return a->lo == b->lo && a->hi == b->hi && a->name == b->name &&
	    a->raw == b->raw && a->module == b->module &&
	    a->module_base == b->module_base && a->flags == b->flags;
}

/* Whether what c took the stack of cs's thread to be holds. */
static int
chunk_holds(const struct callstack *cs, const struct cs_chunk *c)
{
	const struct thread *t = &cs->t;
	size_t n0 = t->n;

	if (!t->open || t->tid != c->t.tid || n0 == 0 || t->disabled ||
	    t->gap_open || t->space != c->space0 ||
	    t->last_time != c->last_time0 || t->last_ip != c->last_ip0 ||
	    t->pend.valid != c->pend0.valid || t->pend.kind != c->pend0.kind ||
	    t->pend.end_ip != c->pend0.end_ip ||
	    t->pend.next_ip != c->pend0.next_ip ||
	    t->pend.time != c->pend0.time)
		return 0;
	for (size_t i = 0; i < c->n_as; i++) {
		const struct assume *a = &c->as[i];

		if (a->j > n0)
			return 0;
		if (a->kind == AS_FN &&
		    !same_fn(&t->f[n0 - a->j].fn, &a->fn))
			return 0;
		if (a->kind == AS_RET && (a->j == n0 ||
		    t->f[n0 - a->j].retaddr != a->ret))
			return 0;
		if (a->kind == AS_NO_FN)
			for (size_t k = n0 - a->j; k-- > 0;)
				if (t->f[k].fn.name != NULL &&
				    t->f[k].fn.lo == a->ret)
					return 0;
	}
	return c->t.vmax == INT64_MIN ||
	    (int64_t)n0 + c->t.vmax < (int64_t)cs->max_depth;
}

int
cs_chunk_top_fn(const struct callstack *cs, const struct cs_chunk *c,
    struct cs_fn *from, struct cs_fn *to)
{
	const struct thread *t = &cs->t;

	if (!c->mid || !t->open)
		return 0;
	for (size_t i = 0; i < c->n_as; i++) {
		const struct assume *a = &c->as[i];

		if (a->kind != AS_FN || a->j > t->n ||
		    same_fn(&t->f[t->n - a->j].fn, &a->fn))
			continue;
		*from = a->fn;
		*to = t->f[t->n - a->j].fn;
		return 1;
	}
	return 0;
}

/* What the chunk added to the prior top goes to the true one. */
static int
add_delta(struct callstack *cs, const struct cs_chunk *c, const struct delta *d,
    size_t inl, size_t n_inl, struct error *e)
{
	struct frame *f = top(&cs->t);
	int rc;

	if (f == NULL)
		return error_set(e, ERR_INTERNAL, "chunk: no frame to add to");
	f->self_insns += d->self_insns;
	f->child_ns += d->child_ns;
	f->child_insns += d->child_insns;
	for (size_t i = 0; i < n_inl; i++)
		if ((rc = add_inline(f, c->inl[inl + i].inl,
		    c->inl[inl + i].insns, e)) < 0)
			return rc;
	return 0;
}

/* The true thread's totals with the chunk's added (D: the prior top's
 * depth, to which the chunk's relative depths are relative). */
static void
add_stats(struct cs_thread_stats *r, const struct cs_thread_stats *w,
    const struct cs_chunk *c, int64_t d)
{
	r->blocks += w->blocks;
	r->insns += w->insns;
	r->spans += w->spans;
	r->gaps += w->gaps;
	r->gap_ns += w->gap_ns;
	r->cut_frames += w->cut_frames;
	r->unwound += w->unwound;
	r->tail_calls += w->tail_calls;
	r->signals += w->signals;
	r->sigreturns += w->sigreturns;
	r->ret_mismatch += w->ret_mismatch;
	r->unknown_insn += w->unknown_insn;
	r->unnamed += w->unnamed;
	r->ring_start |= w->ring_start;
	if (w->min_depth < r->min_depth)
		r->min_depth = w->min_depth;
	if (w->max_depth_seen > r->max_depth_seen)
		r->max_depth_seen = w->max_depth_seen;
	if (c->t.relmax != INT32_MIN && d + c->t.relmax > 0 &&
	    (uint64_t)(d + c->t.relmax) > r->max_depth_seen)
		r->max_depth_seen = (uint64_t)(d + c->t.relmax);
	if (!c->mid)
		r->first_ns = w->first_ns;
	r->last_ns = w->last_ns;
}

/* Chunk ids to the analysis's: local ones after base, virtual ones the
 * true prior frame's (still on the stack, at n0 - j). */
static uint64_t
true_id(const struct thread *t, size_t n0, uint64_t base, uint64_t id)
{
	if (id & VIRT_ID)
		return t->f[n0 - (id & ~VIRT_ID)].id;
	return id ? base + id : 0;
}

/* The thread goes on where the chunk left it. */
static int
take_state(struct callstack *cs, const struct cs_chunk *c, size_t n0,
    uint64_t base, int64_t d, uint32_t pop_all_cut, struct error *e)
{
	struct thread *t = &cs->t;
	const struct thread *w = &c->t;
	struct frame *nf;
	int rc;

	if (w->virt && (rc = add_delta(cs, c, &(struct delta){
	    w->f[0].self_insns, w->f[0].child_ns, w->f[0].child_insns },
	    SIZE_MAX, 0, e)) < 0)
		return rc;
	if (w->virt)
		for (size_t i = 0; i < w->f[0].n_inl; i++)
			if ((rc = add_inline(top(t), w->f[0].inl[i].inl,
			    w->f[0].inl[i].insns, e)) < 0)
				return rc;
	for (size_t k = w->virt ? 1 : 0; k < w->n; k++) {
		struct cs_inline_count *inl;
		size_t cap_inl;

		if (t->n == t->cap && (rc = grow(t, e)) < 0)
			return rc;
		nf = &t->f[t->n];
		inl = nf->inl;
		cap_inl = nf->cap_inl;
		*nf = w->f[k];
		nf->inl = inl;
		nf->cap_inl = cap_inl;
		nf->n_inl = 0;
		if (w->f[k].n_inl > cap_inl) {
			if ((inl = realloc(nf->inl, w->f[k].n_inl *
			    sizeof(*inl))) == NULL)
				return error_set(e, ERR_NOMEM, "inline counts");
			nf->inl = inl;
			nf->cap_inl = w->f[k].n_inl;
		}
		if (w->f[k].n_inl > 0)
			memcpy(nf->inl, w->f[k].inl, w->f[k].n_inl *
			    sizeof(*inl));
		nf->n_inl = w->f[k].n_inl;
		nf->id = true_id(t, n0, base, nf->id);
		nf->parent = true_id(t, n0, base, nf->parent);
		if (w->virt)
			nf->depth += (int32_t)d;
		t->n++;
	}
	t->space = w->space;
	if (w->reset || !c->mid) {
		t->origin = w->origin;
		t->seg_start = w->seg_start;
		t->seg_known = w->seg_known;
	}
	t->last_time = w->last_time;
	t->last_ip = w->last_ip;
	t->have_time = w->have_time;
	t->pend = w->pend;
	t->disabled = w->disabled;
	t->dis_async = w->dis_async;
	t->dis_cause = w->dis_cause;
	t->dis_resume = w->dis_resume;
	t->dis_time = w->dis_time;
	t->dis_ip = w->dis_ip;
	t->gap_open = w->gap_open;
	t->gap = w->gap;
	memcpy(t->gap_text, w->gap_text, sizeof(t->gap_text));
	t->gap.text = t->gap_text;
	if (w->gap_add_prior)
		t->gap.frames_cut += pop_all_cut;
	add_stats(&t->st, &w->st, c, d);
	return 0;
}

int
cs_chunk_apply(struct callstack *cs, struct cs_chunk *c, struct error *e)
{
	struct thread *t = &cs->t;
	uint64_t base = cs->next_id - 1;
	uint32_t pop_all_cut = 0;
	size_t n0;
	int64_t d;
	int rc;

	if (c->bailed)
		return 0;
	if (!c->mid) {
		if (t->open)
			return 0;
		if ((rc = on_thread(cs, &c->th)) < 0)
			return rc;
	} else if (!chunk_holds(cs, c))
		return 0;
	n0 = t->n;
	d = n0 ? t->f[n0 - 1].depth : 0;
	for (size_t i = 0; i < c->n_item; i++) {
		const struct item *it = &c->item[i];
		struct cs_span s;
		struct cs_gap g;

		rc = 0;
		switch (it->kind) {
		case IT_SPAN:
			s = it->u.s;
			s.inl = it->n_inl ? c->inl + it->inl : NULL;
			s.n_inl = it->n_inl;
			s.id = true_id(t, n0, base, s.id);
			s.parent = true_id(t, n0, base, s.parent);
			if (it->rel)
				s.depth += (int32_t)d;
			if (cs->sink.span != NULL)
				rc = cs->sink.span(cs->sink.ctx, &s);
			break;
		case IT_GAP:
			g = it->u.g;
			g.text = it->text == SIZE_MAX ? NULL : c->text +
			    it->text;
			if (it->add_prior)
				g.frames_cut += pop_all_cut;
			if (cs->sink.gap != NULL)
				rc = cs->sink.gap(cs->sink.ctx, &g);
			break;
		case IT_EVENT:
			if (cs->sink.event != NULL)
				rc = cs->sink.event(cs->sink.ctx, &it->u.ev);
			break;
		case IT_POP:
		case IT_POP_ALL:
			if ((rc = add_delta(cs, c, &it->u.d, it->inl,
			    it->n_inl, e)) < 0)
				return rc;
			if (it->kind == IT_POP)
				rc = pop(cs, it->time, it->end);
			else {
				pop_all_cut = (uint32_t)t->n;
				rc = pop_to(cs, 0, it->time, it->end);
			}
			break;
		case IT_THREAD_END:
			add_stats(&t->st, &c->end_st, c, d);
			t->open = 0;
			t->n = 0;
			if (cs->sink.thread_end != NULL)
				rc = cs->sink.thread_end(cs->sink.ctx, &t->st);
			break;
		}
		if (rc < 0)
			return rc;
	}
	if (t->open && (rc = take_state(cs, c, n0, base, d, pop_all_cut,
	    e)) < 0)
		return rc;
	cs->spans += c->spans;
	cs->next_id += c->ids;
	return 1;
}

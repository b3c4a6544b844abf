/* emu_trace: see emu_trace.h. */
#include "emu_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYS_RT_SIGRETURN 15

/* ---- ground truth ------------------------------------------------------ */

static int
truth_map_at(struct emu_truth *w, uint64_t off)
{
	if (w->map != NULL)
		munmap(w->map, EMU_TRUTH_CHUNK);
	w->map = NULL;
	if (ftruncate(w->fd, (off_t)(off + EMU_TRUTH_CHUNK)) < 0)
		return -1;
	w->map = mmap(NULL, EMU_TRUTH_CHUNK, PROT_READ | PROT_WRITE,
	    MAP_SHARED, w->fd, (off_t)off);
	if (w->map == MAP_FAILED) {
		w->map = NULL;
		return -1;
	}
	w->off = off;
	w->pos = 0;
	return 0;
}

int
emu_truth_open(struct emu_truth *w, const char *path)
{
	memset(w, 0, sizeof(*w));
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w->fd < 0)
		return -1;
	return truth_map_at(w, 0);
}

int
emu_truth_append(struct emu_truth *w, const char *path)
{
	struct stat st;
	uint64_t size;

	memset(w, 0, sizeof(*w));
	w->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (w->fd < 0)
		return -1;
	size = (uint64_t)st.st_size;
	if (fstat(w->fd, &st) < 0 ||
	    (size = (uint64_t)st.st_size,
	    truth_map_at(w, size - size % EMU_TRUTH_CHUNK) < 0)) {
		emu_truth_abandon(w);
		return -1;
	}
	w->pos = size % EMU_TRUTH_CHUNK;
	return 0;
}

static void
truth_put(struct emu_truth *w, const char *s, size_t n)
{
	size_t room;

	while (n > 0 && !w->failed) {
		room = EMU_TRUTH_CHUNK - w->pos;
		if (room == 0) {
			if (truth_map_at(w, w->off + EMU_TRUTH_CHUNK) < 0) {
				w->failed = 1;
				return;
			}
			continue;
		}
		if (room > n)
			room = n;
		memcpy(w->map + w->pos, s, room);
		w->pos += room;
		s += room;
		n -= room;
	}
}

void
emu_truth_line(struct emu_truth *w, const char *line, size_t n)
{
	size_t cap;
	char *s;

	if (!w->diverted) {
		truth_put(w, line, n);
		return;
	}
	if (w->side_n + n > w->side_cap) {
		cap = (w->side_n + n) * 2 + 256;
		if ((s = realloc(w->side, cap)) == NULL) {
			w->failed = 1;
			return;
		}
		w->side = s;
		w->side_cap = cap;
	}
	memcpy(w->side + w->side_n, line, n);
	w->side_n += n;
}

static void
truth_undivert(struct emu_truth *w)
{
	w->diverted = 0;
	truth_put(w, w->side, w->side_n);
	w->side_n = 0;
}

void
emu_truth_close(struct emu_truth *w)
{
	if (w->map != NULL) {
		munmap(w->map, EMU_TRUTH_CHUNK);
		/* The file ends where the log does, not at the chunk's end. */
		if (ftruncate(w->fd, (off_t)(w->off + w->pos)) < 0)
			w->failed = 1;
	}
	if (w->fd >= 0)
		close(w->fd);
	free(w->side);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

void
emu_truth_abandon(struct emu_truth *w)
{
	if (w->map != NULL)
		munmap(w->map, EMU_TRUTH_CHUNK);
	if (w->fd >= 0)
		close(w->fd);
	free(w->side);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

/*
 * Paths a block rarely takes (the ground-truth log, signals, stops) are
 * COLD: out of line, so that the per-block path keeps a small frame and
 * no buffer of theirs on its stack.
 */
#define COLD __attribute__((cold, noinline))

static COLD void
truth_event(struct emu_thread *t, const char *what, uint64_t from,
    uint64_t to)
{
	char line[64];
	int n;

	if (t->truth == NULL)
		return;
	n = snprintf(line, sizeof(line), "%" PRIx64 " %" PRIx64 " %s\n",
	    from, to, what);
	emu_truth_line(t->truth, line, (size_t)n);
}

static inline void
truth(struct emu_thread *t, uint64_t from, uint64_t to, enum emu_kind k)
{
	if (t->truth != NULL)
		truth_event(t, emu_kind_name(k), from, to);
}

/* ---- the state machine ------------------------------------------------- */

void
emu_thread_init(struct emu_thread *t, int tid, uint64_t clock,
    const struct emu_handlers *h, struct emu_truth *tw, int filtering)
{
	t->tid = tid;
	t->truth = tw;
	t->handlers = h;
	t->filtering = filtering;
	t->clock = clock;
	t->insns = 0;
	t->prev = t->resume = NULL;
	t->started = t->enabled = t->need_pge = 0;
	t->last_syscall = -1;
	t->deferring = 0;
	memset(&t->st, 0, sizeof(t->st));
}

static int
is_handler(const struct emu_thread *t, uint64_t ip)
{
	int i, n = __atomic_load_n(&t->handlers->n, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (t->handlers->addr[i] == ip)
			return 1;
	return 0;
}

static void
pge(struct emu_thread *t, uint64_t ip)
{
	emu_enc_pge(&t->enc, t->clock, ip);
	t->enabled = 1;
	t->st.pge++;
}

/* An asynchronous stop at `at` (a signal), tracing resumes at `to`. */
static COLD void
async_stop(struct emu_thread *t, uint64_t at, uint64_t to)
{
	emu_enc_fup(&t->enc, t->clock, at);
	emu_enc_pgd(&t->enc, t->clock);
	truth_event(t, "async", at, 0);
	t->st.async++;
	pge(t, to);
}

/* The last instruction of prev ran and next runs now. */
static void
transition(struct emu_thread *t, const struct emu_tb *prev, uint64_t next)
{
	struct emu_enc *e = &t->enc;

	switch (prev->kind) {
	case EMU_JCC:
		if (next == prev->target) {
			emu_enc_tnt(e, t->clock, 1);
			truth(t, prev->last_ip, next, EMU_JCC);
		} else if (next == prev->end) {
			emu_enc_tnt(e, t->clock, 0);
		} else {
			async_stop(t, prev->last_ip, next);
			t->st.unexpected++;
		}
		return;
	case EMU_JMP:
	case EMU_CALL:
		if (prev->kind == EMU_CALL && !prev->call_next)
			emu_enc_call(e, prev->end);
		truth(t, prev->last_ip, prev->target, (enum emu_kind)prev->kind);
		if (next != prev->target) {
			async_stop(t, prev->target, next);
			t->st.unexpected++;
		}
		return;
	case EMU_CALL_IND:
		emu_enc_call(e, prev->end);
		/* fall through */
	case EMU_JMP_IND:
	case EMU_FAR:
		emu_enc_tip(e, t->clock, next);
		truth(t, prev->last_ip, next, (enum emu_kind)prev->kind);
		return;
	case EMU_RET:
		emu_enc_ret(e, t->clock, next);
		truth(t, prev->last_ip, next, EMU_RET);
		return;
	default:
		if (next == prev->end)
			return;
		if (next == prev->last_ip) {	/* a REP iteration */
			t->st.rep++;
			return;
		}
		async_stop(t, prev->end, next);
		t->st.unexpected++;
		return;
	}
}

static COLD void
start_defer(struct emu_thread *t, const struct emu_tb *prev, uint64_t handler)
{
	struct emu_enc *e = &t->enc;

	emu_enc_divert(e);
	if (t->truth != NULL)
		t->truth->diverted = 1;
	t->main_last_ip = e->last_ip;
	t->main_have_last_ip = e->have_last_ip;
	t->deferring = 1;
	t->dprev = prev;
	emu_enc_rs_clear(e);	/* no compression across the unknown point */
	e->have_last_ip = 0;	/* the side buffer starts with a full IP */
	t->st.defer++;
	pge(t, handler);
}

/*
 * resume == 0: the interruption point was never learnt (siglongjmp, a
 * fault inside the block, the thread ended): stop just before prev's last
 * instruction, which every decoder accepts.
 */
static COLD void
resolve_defer(struct emu_thread *t, uint64_t resume)
{
	struct emu_enc *e = &t->enc;
	uint64_t side_last = 0;
	int side_have, cyc = e->cyc, truth_div = 0;

	emu_enc_undivert(e);
	side_last = e->last_ip;
	side_have = e->have_last_ip;
	e->last_ip = t->main_last_ip;
	e->have_last_ip = t->main_have_last_ip;
	e->cyc = 0;	/* these packets come before the side buffer's */
	emu_enc_rs_clear(e);
	t->deferring = 0;
	if (t->truth != NULL) {
		truth_div = 1;
		t->truth->diverted = 0;
	}
	if (resume != 0) {
		transition(t, t->dprev, resume);
	} else {
		resume = t->dprev->last_ip;
		t->st.blind++;
	}
	emu_enc_fup(e, t->clock, resume);
	emu_enc_pgd(e, t->clock);
	t->st.async++;
	if (truth_div) {
		truth_event(t, "async", resume, 0);
		truth_undivert(t->truth);
	}
	e->cyc = cyc;
	emu_enc_rs_clear(e);
	emu_enc_append_side(e);
	e->last_ip = side_last;
	e->have_last_ip = side_have;
	t->st.resolved++;
}

static int
starts_deferral(const struct emu_thread *t, const struct emu_tb *p,
    uint64_t next)
{
	if (t->deferring)
		return 0;
	if (p->kind == EMU_JCC)
		return next != p->target && next != p->end;
	if (p->kind == EMU_JMP_IND || p->kind == EMU_CALL_IND ||
	    p->kind == EMU_RET || p->kind == EMU_FAR)
		return is_handler(t, next);
	return 0;
}

/*
 * --filter: tracing only inside the filter ranges, as hardware IP
 * filtering shows it: TIP.PGE(target) on the way in, TIP.PGD(target) in
 * place of the branch's own packet on the way out (SDM "Filtering by IP").
 * Returns 1 when the block's transition was handled here.
 */
static int
filter_step(struct emu_thread *t, const struct emu_tb *tb)
{
	if (!t->started) {
		t->started = 1;
		emu_enc_psb(&t->enc, t->clock, 0, 0);
		if (tb->in_filter)
			pge(t, tb->start);
		return 1;
	}
	if (t->enabled && tb->in_filter)
		return 0;
	if (t->enabled) {
		if (t->deferring)
			resolve_defer(t, 0);
		if (t->prev != NULL)
			truth(t, t->prev->last_ip, tb->start,
			    (enum emu_kind)t->prev->kind);
		emu_enc_pgd_ip(&t->enc, t->clock, tb->start);
		emu_enc_rs_clear(&t->enc);
		t->enabled = 0;
		t->st.pgd++;
		return 1;
	}
	t->need_pge = 0;
	if (tb->in_filter) {
		emu_enc_tsc(&t->enc, t->clock);
		pge(t, tb->start);
	}
	return 1;
}

/*
 * The block a snapshot stopped the trace before has run: tracing starts
 * again at its start, and its last branch is traced as usual.  Returns it.
 */
static COLD const struct emu_tb *
resume_trace(struct emu_thread *t)
{
	const struct emu_tb *p = t->resume;

	t->resume = NULL;
	t->need_pge = 0;
	emu_enc_tsc(&t->enc, t->clock);
	pge(t, p->start);
	t->prev = p;
	return p;
}

void
emu_thread_tb(struct emu_thread *t, const struct emu_tb *tb)
{
	const struct emu_tb *p = t->prev;

	if (t->resume != NULL && t->need_pge)
		p = resume_trace(t);

	if (t->filtering && filter_step(t, tb)) {
		if (t->enabled && emu_enc_psb_due(&t->enc))
			emu_enc_psb(&t->enc, t->clock, 1, tb->start);
		t->prev = tb;
		t->clock += tb->ninsn;
		t->insns += tb->ninsn;
		t->st.tbs++;
		t->st.phantom += tb->cut;
		return;
	}
	if (!t->started) {
		t->started = 1;
		emu_enc_psb(&t->enc, t->clock, 0, 0);
		pge(t, tb->start);
	} else if (t->need_pge) {
		t->need_pge = 0;
		/* Back from rt_sigreturn at the interrupted point, unless
		 * another pending signal is delivered at once. */
		if (t->deferring && t->last_syscall == SYS_RT_SIGRETURN &&
		    !is_handler(t, tb->start))
			resolve_defer(t, tb->start);
		emu_enc_tsc(&t->enc, t->clock);
		pge(t, tb->start);
	} else if (p != NULL && p->maybe_phantom && tb->start == p->last_ip) {
		/* qemu listed an instruction it did not run: undo its count */
		t->clock--;
		t->insns--;
		t->st.phantom++;
	} else if (p != NULL) {
		if (starts_deferral(t, p, tb->start))
			start_defer(t, p, tb->start);
		else
			transition(t, p, tb->start);
	}
	if (emu_enc_psb_due(&t->enc))
		emu_enc_psb(&t->enc, t->clock, 1, tb->start);
	t->prev = tb;
	t->clock += tb->ninsn;
	t->insns += tb->ninsn;
	t->st.tbs++;
	t->st.phantom += tb->cut;
}

void
emu_thread_syscall(struct emu_thread *t, int64_t num)
{
	t->last_syscall = num;
	if (t->resume != NULL && t->need_pge)
		resume_trace(t);	/* the stopped block ends in this one */
	if (!t->enabled)
		return;
	if (t->deferring && num != SYS_RT_SIGRETURN)
		resolve_defer(t, 0);	/* the handler did not return */
	emu_enc_pgd(&t->enc, t->clock);
	if (t->prev != NULL)
		truth_event(t, "syscall", t->prev->last_ip, 0);
	t->enabled = 0;
	t->need_pge = 1;
	t->prev = NULL;
	t->st.pgd++;
	emu_enc_commit(&t->enc);
}

void
emu_thread_stop(struct emu_thread *t, uint64_t ip)
{
	if (t->deferring)
		resolve_defer(t, 0);
	if (!t->enabled) {
		emu_thread_flush(t);
		return;
	}
	emu_enc_fup(&t->enc, t->clock, ip);
	emu_enc_pgd(&t->enc, t->clock);
	truth_event(t, "async", ip, 0);
	t->enabled = 0;
	t->need_pge = 1;
	t->resume = t->prev != NULL && t->prev->start == ip ? t->prev : NULL;
	t->prev = NULL;
	t->st.pgd++;
	emu_enc_commit(&t->enc);
}

void
emu_thread_flush(struct emu_thread *t)
{
	if (t->deferring)
		resolve_defer(t, 0);
	emu_enc_tnt_flush(&t->enc);
	emu_enc_commit(&t->enc);
}

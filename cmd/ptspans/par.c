/*
 * ptspans -j: the parallel engine.  The main thread reads the block
 * stream and cuts each thread's records into chunks (after a BLOCK
 * record, every chunk_blocks blocks; a THREAD record begins one, END
 * ends one); a pool of workers rebuilds each chunk's calls on its own
 * (span/callstack "Chunks", through a code map view of its own); the
 * main thread applies the results in stream order to the one engine
 * that holds the true stacks, whose sink writes as the serial engine
 * does, so the output is the same bytes.  A chunk that bailed, or took
 * something about the frames before it that does not hold, is fed to
 * that engine from its records instead.
 *
 * Memory: at most `window` chunks (records and results) are held at
 * once; the main thread waits for the oldest when the window is full.
 * MAP records change the code the workers read: every chunk before one
 * is applied before the code map takes it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "span/codemap.h"
#include "spans.h"

#define TIME_UNKNOWN UINT64_MAX

enum { SEG_RUN, SEG_REC };

/* A piece of a chunk: BLOCK records as they lay in the stream, or one
 * record decoded. */
struct seg {
	uint8_t type;
	size_t off, len;		/* RUN: bytes at c->bytes + off */
	uint64_t prev_ip, prev_time;	/* RUN: the delta state there */
	struct blks_record rec;		/* REC */
	size_t text;			/* REC GAP: text in bytes, or none */
};

enum { CH_FILLING, CH_QUEUED, CH_RUNNING, CH_DONE };

struct chunk {
	int state;
	int mid;			/* begins after ctx, not with THREAD */
	struct blks_block ctx;
	uint32_t tid, pid, space;
	struct seg *seg;
	size_t n_seg, cap_seg;
	uint8_t *bytes;
	size_t n_bytes, cap_bytes;
	uint64_t blocks;
	struct blks_thread th;		/* !mid: its THREAD record */
	char th_name[BLKS_TEXT_MAX + 1];
	int has_end;
	struct blks_end end;
	/* What the thread's top frames were found to be (cs_chunk_top_fn),
	 * taken when the chunk starts. */
	int has_top;
	struct cs_fn top_from, top_to;
	/* The worker's. */
	struct cs_chunk *res;
	struct codemap_stats st;	/* its questions to the code */
	int failed;
	struct error err;
};

/* A thread whose top frame runs another function's code (cs_chunk_top_fn),
 * by tid, direct mapped. */
#define TOPS 64
struct top_fn {
	uint32_t tid;
	int used;
	struct cs_fn from, to;
};

struct worker {
	struct spans_par *p;
	pthread_t thread;
	int started;
	struct callstack *cs;
	struct codemap_view *view;
};

struct spans_par {
	unsigned jobs;
	uint64_t chunk_blocks;
	struct codemap *cm;
	struct callstack *real;
	struct spans_par_hooks hooks;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	int stop;
	struct chunk **ring;		/* chunks in flight, stream order */
	size_t window, head, n;
	struct chunk **spare;		/* applied, for reuse */
	size_t n_spare;
	struct worker *w;
	struct codemap_stats added;	/* applied chunks' questions */
	struct top_fn top[TOPS];	/* under lock */
	uint64_t chunks, rebuilt;
};

static void
chunk_free(struct chunk *c)
{
	if (c == NULL)
		return;
	cs_chunk_free(c->res);
	free(c->seg);
	free(c->bytes);
	free(c);
}

/* ----------------------------------------------------------------- */
/* Workers */

static void
stats_sub(struct codemap_stats *d, const struct codemap_stats *a,
    const struct codemap_stats *b)
{
	memset(d, 0, sizeof(*d));
	d->insn_lookups = a->insn_lookups - b->insn_lookups;
	d->insn_misses = a->insn_misses - b->insn_misses;
	d->insn_undecodable = a->insn_undecodable - b->insn_undecodable;
	d->fn_lookups = a->fn_lookups - b->fn_lookups;
	d->fn_misses = a->fn_misses - b->fn_misses;
	d->fn_unknown = a->fn_unknown - b->fn_unknown;
	d->inline_walks = a->inline_walks - b->inline_walks;
	d->inline_walk_failed = a->inline_walk_failed - b->inline_walk_failed;
}

static void
stats_add(struct codemap_stats *d, const struct codemap_stats *a)
{
	d->insn_lookups += a->insn_lookups;
	d->insn_misses += a->insn_misses;
	d->insn_undecodable += a->insn_undecodable;
	d->fn_lookups += a->fn_lookups;
	d->fn_misses += a->fn_misses;
	d->fn_unknown += a->fn_unknown;
	d->inline_walks += a->inline_walks;
	d->inline_walk_failed += a->inline_walk_failed;
}

/* The records of c, to engine cs (a worker's, or the true one). */
static int
feed_chunk(struct callstack *cs, struct chunk *c, struct error *e)
{
	int rc = 0;

	for (size_t i = 0; i < c->n_seg && rc >= 0; i++) {
		struct seg *s = &c->seg[i];

		if (s->type == SEG_RUN) {
			struct blks_run run = { c->bytes + s->off,
			    c->bytes + s->off + s->len, s->prev_ip,
			    s->prev_time };

			rc = cs_feed_run(cs, &run, e);
			continue;
		}
		if (s->rec.type == BLKS_GAP)
			s->rec.u.gap.text = s->text == SIZE_MAX ? NULL :
			    (const char *)c->bytes + s->text;
		if (s->rec.type == BLKS_THREAD)
			s->rec.u.thread.name = c->th_name;
		rc = cs_feed(cs, &s->rec, e);
	}
	return rc;
}

static void
run_chunk(struct worker *w, struct chunk *c)
{
	struct cs_chunk_start start = { c->tid, c->pid, c->space,
	    c->mid ? &c->ctx : NULL, c->res,
	    c->has_top ? &c->top_from : NULL, c->has_top ? &c->top_to : NULL };
	struct codemap_stats s0, s1;
	int rc;

	error_clear(&c->err);
	c->res = NULL;		/* the engine's now */
	if ((rc = cs_chunk_begin(w->cs, &start, &c->err)) == 0) {
		/* What begin asked (the block before) the serial engine
		 * asked already. */
		codemap_view_stats(w->view, &s0);
		rc = feed_chunk(w->cs, c, &c->err);
		codemap_view_stats(w->view, &s1);
		stats_sub(&c->st, &s1, &s0);
	}
	if (rc < 0 && !cs_chunk_bailed(w->cs)) {
		c->failed = 1;
		if (c->err.code == ERR_OK)
			error_set(&c->err, -rc, "chunk of thread %u", c->tid);
	}
	if (cs_chunk_end(w->cs, &c->res, &c->err) < 0)
		c->failed = 1;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct spans_par *p = w->p;
	struct chunk *c;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		c = NULL;
		if (p->stop)
			break;
		for (size_t i = 0; i < p->n && c == NULL; i++)
			if (p->ring[(p->head + i) % p->window]->state ==
			    CH_QUEUED)
				c = p->ring[(p->head + i) % p->window];
		if (c == NULL) {
			pthread_cond_wait(&p->work, &p->lock);
			continue;
		}
		c->state = CH_RUNNING;
		{
			const struct top_fn *tf = &p->top[c->tid % TOPS];

			c->has_top = tf->used && tf->tid == c->tid;
			if (c->has_top) {
				c->top_from = tf->from;
				c->top_to = tf->to;
			}
		}
		pthread_mutex_unlock(&p->lock);
		run_chunk(w, c);
		pthread_mutex_lock(&p->lock);
		c->state = CH_DONE;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ----------------------------------------------------------------- */
/* The pool */

void
spans_par_free(struct spans_par *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; p->w != NULL && i < p->jobs; i++) {
		if (p->w[i].started)
			pthread_join(p->w[i].thread, NULL);
		cs_free(p->w[i].cs);
		codemap_view_free(p->w[i].view);
	}
	for (size_t i = 0; i < p->n; i++)
		chunk_free(p->ring[(p->head + i) % p->window]);
	for (size_t i = 0; i < p->n_spare; i++)
		chunk_free(p->spare[i]);
	free(p->ring);
	free(p->spare);
	free(p->w);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int
spans_par_new(struct spans_par **out, const struct spans_par_config *cfg,
    struct error *e)
{
	struct spans_par *p;
	struct cs_sink none = { 0 };

	*out = NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return error_set(e, ERR_NOMEM, "workers");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->jobs = cfg->jobs;
	p->chunk_blocks = cfg->chunk_blocks ? cfg->chunk_blocks :
	    SPANS_CHUNK_BLOCKS;
	p->cm = cfg->cm;
	p->real = cfg->real;
	p->hooks = cfg->hooks;
	p->window = 2 * (size_t)p->jobs + 2;
	p->ring = calloc(p->window, sizeof(*p->ring));
	p->spare = calloc(p->window + 1, sizeof(*p->spare));
	p->w = calloc(p->jobs, sizeof(*p->w));
	if (p->ring == NULL || p->spare == NULL || p->w == NULL)
		goto nomem;
	for (unsigned i = 0; i < p->jobs; i++) {
		struct worker *w = &p->w[i];
		struct cs_code code;

		w->p = p;
		if (codemap_view_new(p->cm, &w->view, e) < 0)
			goto fail;
		codemap_view_code(w->view, &code);
		if ((w->cs = cs_new(&code, &none, 0)) == NULL)
			goto nomem;
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			error_set(e, ERR_NOMEM, "cannot start worker %u of %u",
			    i + 1, p->jobs);
			goto fail;
		}
		w->started = 1;
	}
	*out = p;
	return 0;
nomem:
	error_set(e, ERR_NOMEM, "workers");
fail:
	spans_par_free(p);
	return -e->code;
}

static struct chunk *
chunk_new(struct spans_par *p)
{
	struct chunk *c;

	if (p->n_spare > 0) {
		c = p->spare[--p->n_spare];
		c->n_seg = c->n_bytes = 0;
	} else if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->state = CH_FILLING;
	c->mid = c->has_end = c->failed = 0;
	c->blocks = 0;
	memset(&c->st, 0, sizeof(c->st));
	return c;
}

/* c, applied, to be filled again (its result's memory too). */
static void
chunk_recycle(struct spans_par *p, struct chunk *c)
{
	if (p->n_spare <= p->window)
		p->spare[p->n_spare++] = c;
	else
		chunk_free(c);
}

static struct seg *
seg_add(struct chunk *c, uint8_t type)
{
	struct seg *s;

	if (c->n_seg == c->cap_seg) {
		size_t cap = c->cap_seg ? 2 * c->cap_seg : 64;

		if ((s = realloc(c->seg, cap * sizeof(*s))) == NULL)
			return NULL;
		c->seg = s;
		c->cap_seg = cap;
	}
	s = &c->seg[c->n_seg++];
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->text = SIZE_MAX;
	return s;
}

/* len bytes into c's bytes (and 8 spare after them: blks_run_next reads
 * 8 bytes at every record); their offset, or SIZE_MAX. */
static size_t
bytes_add(struct chunk *c, const void *b, size_t len)
{
	size_t off = c->n_bytes;

	if (c->n_bytes + len + 8 > c->cap_bytes) {
		size_t cap = c->cap_bytes ? c->cap_bytes : 1 << 16;
		uint8_t *nb;

		while (cap < c->n_bytes + len + 8)
			cap *= 2;
		if ((nb = realloc(c->bytes, cap)) == NULL)
			return SIZE_MAX;
		c->bytes = nb;
		c->cap_bytes = cap;
	}
	memcpy(c->bytes + off, b, len);
	memset(c->bytes + off + len, 0, 8);
	c->n_bytes += len;
	return off;
}

static int
add_run(struct chunk *c, const uint8_t *p, size_t len, uint64_t prev_ip,
    uint64_t prev_time, struct error *e)
{
	struct seg *s;

	if (len == 0)
		return 0;
	if ((s = seg_add(c, SEG_RUN)) == NULL ||
	    (s->off = bytes_add(c, p, len)) == SIZE_MAX)
		return error_set(e, ERR_NOMEM, "chunk of thread %u", c->tid);
	s->len = len;
	s->prev_ip = prev_ip;
	s->prev_time = prev_time;
	return 0;
}

static int
add_rec(struct chunk *c, const struct blks_record *rec, struct error *e)
{
	struct seg *s;

	if ((s = seg_add(c, SEG_REC)) == NULL)
		return error_set(e, ERR_NOMEM, "chunk of thread %u", c->tid);
	s->rec = *rec;
	if (rec->type == BLKS_GAP && rec->u.gap.text != NULL &&
	    (s->text = bytes_add(c, rec->u.gap.text,
	    strlen(rec->u.gap.text) + 1)) == SIZE_MAX)
		return error_set(e, ERR_NOMEM, "chunk of thread %u", c->tid);
	return 0;
}

/* Applies the oldest chunk, waiting for its worker. */
static int
apply_oldest(struct spans_par *p, struct error *e)
{
	struct chunk *c;
	int rc;

	pthread_mutex_lock(&p->lock);
	c = p->ring[p->head];
	while (c->state != CH_DONE)
		pthread_cond_wait(&p->done, &p->lock);
	p->head = (p->head + 1) % p->window;
	p->n--;
	pthread_mutex_unlock(&p->lock);
	if (c->failed) {
		*e = c->err;
		chunk_free(c);
		return -e->code;
	}
	if (!c->mid && p->hooks.thread != NULL)
		p->hooks.thread(p->hooks.ctx, &c->th);
	if (c->has_end && p->hooks.end != NULL)
		p->hooks.end(p->hooks.ctx, &c->end);
	p->chunks++;
	if ((rc = cs_chunk_apply(p->real, c->res, e)) == 1)
		stats_add(&p->added, &c->st);
	else if (rc == 0) {
		struct cs_fn from, to;

		if (cs_chunk_top_fn(p->real, c->res, &from, &to)) {
			struct top_fn *tf = &p->top[c->tid % TOPS];

			pthread_mutex_lock(&p->lock);
			tf->tid = c->tid;
			tf->used = 1;
			tf->from = from;
			tf->to = to;
			pthread_mutex_unlock(&p->lock);
		}
		p->rebuilt++;
		rc = feed_chunk(p->real, c, e);
	}
	chunk_recycle(p, c);
	return rc < 0 ? rc : 0;
}

/* Applies every chunk whose worker is done, oldest first. */
static int
apply_done(struct spans_par *p, struct error *e)
{
	int rc, ready;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		ready = p->n > 0 && p->ring[p->head]->state == CH_DONE;
		pthread_mutex_unlock(&p->lock);
		if (!ready)
			return 0;
		if ((rc = apply_oldest(p, e)) < 0)
			return rc;
	}
}

static int
drain(struct spans_par *p, struct error *e)
{
	int rc;

	while (p->n > 0)
		if ((rc = apply_oldest(p, e)) < 0)
			return rc;
	return 0;
}

/* Hands c to the workers, making room in the window first. */
static int
submit(struct spans_par *p, struct chunk *c, struct error *e)
{
	int rc;

	if ((rc = apply_done(p, e)) < 0)
		return rc;
	while (p->n == p->window)
		if ((rc = apply_oldest(p, e)) < 0)
			return rc;
	pthread_mutex_lock(&p->lock);
	c->state = CH_QUEUED;
	p->ring[(p->head + p->n++) % p->window] = c;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* The chunk after c's last block, b (c goes to the workers). */
static int
cut(struct spans_par *p, struct chunk **c, const struct blks_block *b,
    struct error *e)
{
	struct chunk *n;
	int rc;

	if ((n = chunk_new(p)) == NULL)
		return error_set(e, ERR_NOMEM, "chunk of thread %u", (*c)->tid);
	n->mid = 1;
	n->ctx = *b;
	n->tid = (*c)->tid;
	n->pid = (*c)->pid;
	n->space = (*c)->space;
	if ((rc = submit(p, *c, e)) < 0) {
		chunk_free(n);
		*c = NULL;
		return rc;
	}
	*c = n;
	return 0;
}

/* The run's blocks into c, cut every chunk_blocks blocks. */
static int
take_run(struct spans_par *p, struct chunk **c, struct blks_run *run,
    struct error *e)
{
	struct blks_run r = *run;	/* in registers: this loop sees every
					   block */
	const uint8_t *from = r.p;
	uint64_t ip = r.prev_ip, time = r.prev_time;
	uint64_t n = (*c)->blocks, want = p->chunk_blocks;
	struct blks_block b;
	int rc;

	while (blks_run_next(&r, &b)) {
		if (++n < want || b.time == TIME_UNKNOWN)
			continue;
		(*c)->blocks = n;
		if ((rc = add_run(*c, from, (size_t)(r.p - from), ip, time,
		    e)) < 0 || (rc = cut(p, c, &b, e)) < 0) {
			*run = r;
			return rc;
		}
		n = 0;
		from = r.p;
		ip = r.prev_ip;
		time = r.prev_time;
	}
	(*c)->blocks = n;
	*run = r;
	return add_run(*c, from, (size_t)(r.p - from), ip, time, e);
}

static int
take_record(struct spans_par *p, struct chunk **c, const struct blks_record *rec,
    struct error *e)
{
	int rc;

	switch (rec->type) {
	case BLKS_MAP:
		/* Every chunk before it reads the code as it was. */
		if ((rc = drain(p, e)) < 0)
			return rc;
		return p->hooks.map != NULL ?
		    p->hooks.map(p->hooks.ctx, &rec->u.map, e) : 0;
	case BLKS_THREAD:
		if (*c != NULL)
			return error_set(e, ERR_FORMAT, "thread %u opened "
			    "inside thread %u", rec->u.thread.tid, (*c)->tid);
		if ((*c = chunk_new(p)) == NULL)
			return error_set(e, ERR_NOMEM, "chunk of thread %u",
			    rec->u.thread.tid);
		(*c)->th = rec->u.thread;
		snprintf((*c)->th_name, sizeof((*c)->th_name), "%s",
		    rec->u.thread.name);
		(*c)->th.name = (*c)->th_name;
		(*c)->tid = rec->u.thread.tid;
		(*c)->pid = rec->u.thread.pid;
		(*c)->space = rec->u.thread.pid;
		return add_rec(*c, rec, e);
	case BLKS_BLOCK:
	case BLKS_EVENT:
	case BLKS_GAP:
	case BLKS_END:
		break;
	default:
		return 0;
	}
	if (*c == NULL)
		return error_set(e, ERR_FORMAT, "%s record outside a thread",
		    blks_type_name(rec->type));
	if ((rc = add_rec(*c, rec, e)) < 0)
		return rc;
	if (rec->type == BLKS_EVENT && rec->u.event.kind == BLKS_EV_EXEC)
		(*c)->space = blks_space((*c)->pid, (uint32_t)rec->u.event.arg);
	if (rec->type == BLKS_END) {
		(*c)->has_end = 1;
		(*c)->end = rec->u.end;
		rc = submit(p, *c, e);
		*c = NULL;
		return rc;
	}
	if (rec->type == BLKS_BLOCK && ++(*c)->blocks >= p->chunk_blocks &&
	    rec->u.block.time != TIME_UNKNOWN)
		return cut(p, c, &rec->u.block, e);
	return 0;
}

int
spans_par_read(struct spans_par *p, struct blks_reader *rd, struct error *e,
    int *read_error)
{
	struct chunk *c = NULL;
	struct blks_record rec;
	struct blks_run run;
	int rc;

	*read_error = 0;
	for (;;) {
		if (blks_run_begin(rd, &run)) {
			rc = c != NULL ? take_run(p, &c, &run, e) :
			    error_set(e, ERR_FORMAT, "%s record outside a "
			    "thread", blks_type_name(BLKS_BLOCK));
			blks_run_end(rd, &run);
			if (rc < 0)
				goto out;
			p->hooks.read(p->hooks.ctx);
		}
		if ((rc = blks_read(rd, &rec, e)) != 1) {
			*read_error = rc < 0;
			break;
		}
		if ((rc = take_record(p, &c, &rec, e)) < 0)
			goto out;
	}
	/* What was read before an error is made, as the serial engine
	 * would. */
	if (c != NULL) {
		struct error e2;

		if (submit(p, c, &e2) < 0 && rc >= 0) {
			*e = e2;
			rc = -e2.code;
		}
		c = NULL;
	}
	if (rc >= 0)
		return drain(p, e);
	{
		struct error e2;

		if (drain(p, &e2) < 0)
			*read_error = 0, *e = e2, rc = -e2.code;
	}
	return rc;
out:
	chunk_free(c);
	return rc;
}

void
spans_par_stats(const struct spans_par *p, struct codemap_stats *added,
    uint64_t *chunks, uint64_t *rebuilt)
{
	*added = p->added;
	*chunks = p->chunks;
	*rebuilt = p->rebuilt;
}

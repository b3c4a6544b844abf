/*
 * ptspans -o: index.bin built on a thread of its own.  The rows the sink
 * makes are copied into batches and handed over; the thread adds them to
 * the spanidx writer in order and, at the end, writes the file (after
 * the other files are closed: an index older than its spans.jsonl is a
 * stale one).  Building the index took more CPU than rebuilding the
 * calls and formatting the lines together, all of it on the main thread.
 *
 * Only with -j above 1: on two cores, shared with ptdecode, the thread
 * cost CPU (the copies, the hand-overs) and gave no time back, as the
 * parallel engine did not; without it the rows are added as they come.
 *
 * Memory: BATCHES batches of BATCH_ROWS rows, whatever the trace's
 * length; the main thread waits for a free one.  The strings of a row
 * live as long as the run (the code map's), except an unnamed function's
 * rendered name, which is copied into the batch.  The first error the
 * thread meets is kept (its rows after it are dropped: the run fails) and
 * returned by the next spans_ixt_add or by spans_ixt_finish.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/spanidx.h"
#include "spans.h"

#define BATCH_ROWS 4096
#define BATCHES 4

struct batch {
	struct spanidx_row row[BATCH_ROWS];
	size_t n;
	char *names;			/* unnamed functions' names */
	size_t n_names, cap_names;
};

struct spans_ixt {
	struct spanidx_writer *ix;	/* the thread's, until it is done */
	int inline_only;		/* no thread: rows added as they come */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct batch b[BATCHES];
	size_t head, full;		/* full batches from head, in order */
	struct batch *filling;		/* the main thread's, or NULL */
	const char *path;		/* set: finish after the last batch */
	int quit;			/* spans_ixt_free without a finish */
	int bad;			/* the thread's own: an add failed */
	int failed;			/* bad, as the main thread sees it */
	struct error err;		/* the thread's first error */
	int done;			/* the thread has finished */
};

static void
batch_add_all(struct spans_ixt *t, struct batch *b)
{
	/* Names were copied by offset: the arena may have moved. */
	for (size_t i = 0; i < b->n; i++) {
		struct spanidx_row *r = &b->row[i];

		if (r->flags & SPANIDX_F_UNNAMED)
			r->fn = b->names + (uintptr_t)r->fn;
		if (!t->bad && spanidx_add(t->ix, r, &t->err) < 0)
			t->bad = 1;
	}
	b->n = 0;
	b->n_names = 0;
}

static void *
ixt_main(void *arg)
{
	struct spans_ixt *t = arg;
	struct batch *b;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		while (t->full == 0 && t->path == NULL && !t->quit)
			pthread_cond_wait(&t->cond, &t->lock);
		if (t->quit)
			break;
		if (t->full == 0)
			break;		/* path set and every batch added */
		b = &t->b[t->head];
		pthread_mutex_unlock(&t->lock);
		batch_add_all(t, b);
		pthread_mutex_lock(&t->lock);
		t->head = (t->head + 1) % BATCHES;
		t->full--;
		t->failed = t->bad;
		pthread_cond_broadcast(&t->cond);
	}
	if (!t->quit) {
		const char *path = t->path;
		struct spanidx_writer *ix = t->ix;

		t->ix = NULL;	/* finish frees it, written or not */
		pthread_mutex_unlock(&t->lock);
		if (t->bad)
			spanidx_writer_free(ix);
		else if (spanidx_writer_finish(ix, path, &t->err) < 0)
			t->bad = 1;
		pthread_mutex_lock(&t->lock);
		t->failed = t->bad;
	}
	t->done = 1;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int
spans_ixt_new(struct spans_ixt **out, struct spanidx_writer *ix, int thread,
    struct error *e)
{
	struct spans_ixt *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (t == NULL) {
		spanidx_writer_free(ix);
		return error_set(e, ERR_NOMEM, "index thread");
	}
	t->ix = ix;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	if (!thread) {
		t->inline_only = 1;
		*out = t;
		return 0;
	}
	if (pthread_create(&t->thread, NULL, ixt_main, t) != 0) {
		spans_ixt_free(t);
		return error_set(e, ERR_NOMEM, "index thread: cannot start it");
	}
	t->started = 1;
	*out = t;
	return 0;
}

/* Hands the batch being filled to the thread; 0 or its error. */
static int
hand_over(struct spans_ixt *t, struct error *e)
{
	int failed;

	pthread_mutex_lock(&t->lock);
	if (t->filling != NULL) {
		t->full++;
		t->filling = NULL;
		pthread_cond_broadcast(&t->cond);
	}
	failed = t->failed;
	pthread_mutex_unlock(&t->lock);
	if (failed) {
		*e = t->err;	/* set before failed, under the lock */
		return -e->code;
	}
	return 0;
}

int
spans_ixt_add(struct spans_ixt *t, const struct spanidx_row *row,
    struct error *e)
{
	struct batch *b = t->filling;
	struct spanidx_row *r;

	if (t->inline_only)
		return spanidx_add(t->ix, row, e);
	if (b == NULL) {
		pthread_mutex_lock(&t->lock);
		while (t->full == BATCHES)
			pthread_cond_wait(&t->cond, &t->lock);
		b = t->filling = &t->b[(t->head + t->full) % BATCHES];
		pthread_mutex_unlock(&t->lock);
	}
	r = &b->row[b->n];
	*r = *row;
	if (row->flags & SPANIDX_F_UNNAMED) {
		size_t len = strlen(row->fn) + 1;

		if (b->cap_names - b->n_names < len) {
			size_t cap = b->cap_names ? b->cap_names : 1 << 16;
			char *grown;

			while (cap - b->n_names < len)
				cap *= 2;
			if ((grown = realloc(b->names, cap)) == NULL)
				return error_set(e, ERR_NOMEM, "index rows");
			b->names = grown;
			b->cap_names = cap;
		}
		memcpy(b->names + b->n_names, row->fn, len);
		r->fn = (const char *)(uintptr_t)b->n_names;
		b->n_names += len;
	}
	if (++b->n == BATCH_ROWS)
		return hand_over(t, e);
	return 0;
}

int
spans_ixt_finish(struct spans_ixt *t, const char *path, struct error *e)
{
	int rc;

	if (t->inline_only) {
		struct spanidx_writer *ix = t->ix;

		t->ix = NULL;	/* finish frees it, written or not */
		return spanidx_writer_finish(ix, path, e);
	}
	rc = hand_over(t, e);
	pthread_mutex_lock(&t->lock);
	t->path = path;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&t->lock);
	while (!t->done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	if (t->failed) {
		*e = t->err;
		return -e->code;
	}
	return 0;
}

void
spans_ixt_free(struct spans_ixt *t)
{
	if (t == NULL)
		return;
	if (t->started) {
		pthread_mutex_lock(&t->lock);
		t->quit = t->path == NULL;	/* no finish asked: drop it */
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->thread, NULL);
	}
	spanidx_writer_free(t->ix);
	for (size_t i = 0; i < BATCHES; i++)
		free(t->b[i].names);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

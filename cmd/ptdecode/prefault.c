/* prefault: see prefault.h. */
#include "prefault.h"

#include <unistd.h>

static void *
prefault_thread(void *arg)
{
	struct prefault *p = arg;
	long page = sysconf(_SC_PAGESIZE);
	size_t step = page > 0 ? (size_t)page : 4096;
	volatile uint8_t sink = 0;

	for (size_t off = p->len; off > 0; ) {
		off = off > step ? off - step : 0;
		if (atomic_load_explicit(&p->stop, memory_order_relaxed))
			break;
		sink ^= p->buf[off];
	}
	(void)sink;
	return NULL;
}

void
prefault_start(struct prefault *p, const uint8_t *buf, size_t len)
{
	p->buf = buf;
	p->len = len;
	atomic_init(&p->stop, 0);
	p->started = len > 0 &&
	    pthread_create(&p->thread, NULL, prefault_thread, p) == 0;
}

void
prefault_stop(struct prefault *p)
{
	atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
}

void
prefault_finish(struct prefault *p)
{
	prefault_stop(p);
	if (p->started)
		pthread_join(p->thread, NULL);
	p->started = 0;
}

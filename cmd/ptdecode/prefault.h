/*
 * prefault: maps a trace's pages on a thread of its own while the
 * decoder reads it.
 *
 * Why: the decoder's first pass over a thread's trace (finding every PSB
 * to cut it into chunks) is serial and is the first to touch the
 * perf.data mapping, and on a virtual machine mapping a page costs
 * microseconds: on 72 MiB of trace that pass spent most of its 60-90 ms
 * on page faults.  A second thread touching the pages from the far end
 * backwards maps about half of them meanwhile (the pass and the thread
 * meet in the middle), on a core the pipeline does not use yet.  It
 * only reads: the bytes and the output are the same.
 */
#ifndef PTDECODE_PREFAULT_H
#define PTDECODE_PREFAULT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct prefault {
	const uint8_t *buf;
	size_t len;
	atomic_int stop;
	int started;
	pthread_t thread;
};

/*
 * Starts touching buf[0..len) from its end.  Without a thread nothing
 * happens (the decoder maps the pages itself).
 */
void prefault_start(struct prefault *p, const uint8_t *buf, size_t len);

/* Asks the thread to stop where it is (cheap: call it more than once). */
void prefault_stop(struct prefault *p);

/* Stops and joins the thread; buf may go after this. */
void prefault_finish(struct prefault *p);

#endif

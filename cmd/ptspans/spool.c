/*
 * spool: a file written by a thread of its own (spans.h, spool_fopen).
 *
 * -o writes gigabytes of span lines, and on this kind of machine the
 * kernel's copy of each write into the page cache costs as much CPU as
 * formatting them (a third of ptspans -o's time, measured): done on a
 * thread of its own it runs beside the engine instead of after it.  The
 * FILE's writes are copied into one of SPOOL_BUFS buffers, a full one
 * goes to the thread, and the writer waits only when every buffer is
 * waiting to be written.  The first write error is kept, and every
 * write and the close after it fail with its errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fdio.h"
#include "spans.h"

#define SPOOL_BUF ((size_t)4 << 20)
#define SPOOL_BUFS 3

struct spool {
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	char *buf[SPOOL_BUFS];
	size_t len[SPOOL_BUFS];
	size_t fill;			/* the buffer being filled */
	size_t head, queued;		/* full buffers, oldest first */
	int closing;
	int err;			/* errno of the first failed write
					   (atomic) */
};

static void *
spool_main(void *arg)
{
	struct spool *s = arg;
	size_t b;
	int err;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (s->queued == 0 && !s->closing)
			pthread_cond_wait(&s->cv, &s->lock);
		if (s->queued == 0)
			break;
		b = s->head;
		pthread_mutex_unlock(&s->lock);
		if (__atomic_load_n(&s->err, __ATOMIC_ACQUIRE) == 0 &&
		    (fdio_write_all(s->fd, s->buf[b], s->len[b], &err),
		    err != 0))
			__atomic_store_n(&s->err, err, __ATOMIC_RELEASE);
		pthread_mutex_lock(&s->lock);
		s->len[b] = 0;
		s->head = (s->head + 1) % SPOOL_BUFS;
		s->queued--;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The buffer being filled goes to the thread; the next one is taken
 * when it is free. */
static void
spool_hand_over(struct spool *s)
{
	pthread_mutex_lock(&s->lock);
	s->queued++;
	s->fill = (s->fill + 1) % SPOOL_BUFS;
	pthread_cond_broadcast(&s->cv);
	while (s->queued == SPOOL_BUFS)
		pthread_cond_wait(&s->cv, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static ssize_t
spool_write(void *cookie, const char *p, size_t n)
{
	struct spool *s = cookie;
	size_t done = 0, k;

	while (done < n) {
		if ((k = (size_t)__atomic_load_n(&s->err, __ATOMIC_ACQUIRE)) !=
		    0) {
			errno = (int)k;
			return done > 0 ? (ssize_t)done : -1;
		}
		k = SPOOL_BUF - s->len[s->fill];
		if (k > n - done)
			k = n - done;
		memcpy(s->buf[s->fill] + s->len[s->fill], p + done, k);
		s->len[s->fill] += k;
		done += k;
		if (s->len[s->fill] == SPOOL_BUF)
			spool_hand_over(s);
	}
	return (ssize_t)n;
}

static void
spool_free(struct spool *s)
{
	for (int i = 0; i < SPOOL_BUFS; i++)
		free(s->buf[i]);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int
spool_close(void *cookie)
{
	struct spool *s = cookie;
	int err;

	pthread_mutex_lock(&s->lock);
	if (s->len[s->fill] > 0) {
		s->queued++;
		s->fill = (s->fill + 1) % SPOOL_BUFS;
	}
	s->closing = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	err = s->err;
	if (close(s->fd) < 0 && err == 0)
		err = errno;
	spool_free(s);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

FILE *
spool_fopen(const char *path)
{
	cookie_io_functions_t io = { NULL, spool_write, NULL, spool_close };
	struct spool *s;
	FILE *f;
	int err;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cv, NULL);
	for (int i = 0; i < SPOOL_BUFS; i++)
		if ((s->buf[i] = malloc(SPOOL_BUF)) == NULL) {
			spool_free(s);
			errno = ENOMEM;
			return NULL;
		}
	if ((s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0666)) < 0) {
		err = errno;
		spool_free(s);
		errno = err;
		return NULL;
	}
	if ((err = pthread_create(&s->thread, NULL, spool_main, s)) != 0) {
		close(s->fd);
		spool_free(s);
		errno = err;
		return NULL;
	}
	if ((f = fopencookie(s, "w", io)) == NULL) {
		err = errno;
		spool_close(s);
		errno = err;
		return NULL;
	}
	return f;
}

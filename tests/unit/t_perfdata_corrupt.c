/*
 * t_perfdata_corrupt: damaged perf.data files give a clean error, never a
 * crash (run it under SANITIZE=address,undefined).  For each sample file
 * (perf record with and without -z, the Skylake intel_pt trace, one from
 * our writer) it generates truncated copies, which must all be rejected
 * with an error that names a file offset, and bit-flipped copies, which
 * must either parse or be rejected the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt/perfdata.h"
#include "tap.h"

#define NR_TRUNCATIONS 100
#define NR_FLIPS 160

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint8_t *
load(const char *rel, size_t *len)
{
	const char *src = getenv("PTKIT_SRC");
	char path[4096];
	uint8_t *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/%s", src ? src : ".", rel);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* 1 if the error is one a damaged file may give, with its offset named. */
static int
clean_error(int rc, const struct error *e)
{
	return (rc == -ERR_FORMAT || rc == -ERR_TRUNCATED ||
	    rc == -ERR_UNSUPPORTED) && e->code == -rc &&
	    strstr(e->msg, "offset ") != NULL;
}

/* Parses a copy in a buffer of exactly len bytes, so ASan sees overreads. */
static int
parse_copy(const uint8_t *data, size_t len, struct error *e)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct perfdata *pd = NULL;
	int rc;

	if (copy == NULL)
		return -ERR_NOMEM;
	memcpy(copy, data, len);
	error_clear(e);
	rc = perfdata_read_buffer(&pd, copy, len, "damaged", e);
	if (rc == 0) {
		/* touch what a consumer would */
		for (size_t i = 0; i < pd->nr_queues; i++) {
			uint8_t *q;
			size_t qlen;

			if (perfdata_queue_data(pd, &pd->queues[i], &q, &qlen,
			    e) == 0)
				free(q);
		}
		for (size_t i = 0; i < pd->nr_mmaps; i++)
			(void)strlen(pd->mmaps[i].filename);
		for (size_t i = 0; i < pd->nr_comms; i++)
			(void)strlen(pd->comms[i].comm);
	}
	perfdata_free(pd);
	free(copy);
	return rc;
}

static void
damage(const char *rel)
{
	size_t len = 0, bad_trunc = 0, bad_flip = 0, rejected = 0;
	uint8_t *data = load(rel, &len), *mut;
	char first_bad[ERROR_MSG_MAX + 64] = "";
	struct error e;
	int rc;

	if (!OK(data != NULL && len > 0, "%s: loaded", rel))
		return;
	rc = parse_copy(data, len, &e);
	IS_INT(rc, 0, "%s: intact file parses", rel);
	for (int i = 0; i < NR_TRUNCATIONS; i++) {
		size_t cut = i < 10 ? (size_t)i * 12 :
		    (size_t)(next_random() % len);

		rc = parse_copy(data, cut, &e);
		if (!clean_error(rc, &e)) {
			if (bad_trunc++ == 0)
				snprintf(first_bad, sizeof(first_bad),
				    "cut at %zu: rc %d: %s", cut, rc, e.msg);
		}
	}
	if (!OK(bad_trunc == 0, "%s: %d truncated copies all rejected with "
	    "an offset", rel, NR_TRUNCATIONS))
		DIAG("%s", first_bad);
	mut = malloc(len);
	if (mut == NULL)
		return;
	for (int i = 0; i < NR_FLIPS; i++) {
		/* half the flips in the first 4 KiB: headers and sizes */
		size_t pos = (size_t)(next_random() % (i & 1 && len > 4096 ?
		    4096 : len));

		memcpy(mut, data, len);
		mut[pos] ^= (uint8_t)(1u << (next_random() % 8));
		if (i % 5 == 0)
			mut[pos] = 0xff;
		rc = parse_copy(mut, len, &e);
		if (rc < 0)
			rejected++;
		if (rc < 0 && !clean_error(rc, &e) && bad_flip++ == 0)
			snprintf(first_bad, sizeof(first_bad),
			    "flip at %zu: rc %d: %s", pos, rc, e.msg);
	}
	if (!OK(bad_flip == 0, "%s: %d bit-flipped copies parse or give a "
	    "clean error", rel, NR_FLIPS))
		DIAG("%s", first_bad);
	DIAG("%s: %zu of %d flipped copies rejected", rel, rejected, NR_FLIPS);
	free(mut);
	free(data);
}

int
main(void)
{
	damage("perf-record/cpu-clock.data");
	damage("perf-record/cpu-clock-z.data");
	damage("perf-record/ptkit-writer.data");
	damage("quipper-echo/perf.data.intel_pt-4.14");
	return tap_done();
}

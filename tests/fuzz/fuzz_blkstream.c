/*
 * libFuzzer target for the block stream reader: any input must end in a
 * clean 0 or negative return, never a crash, a hang or a leak, and every
 * record it accepts must render as JSON Lines; reading it again through a
 * FILE with blks_read_blocks() between blks_read() calls gives the same
 * records and the same end.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "base/jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same_block(const struct blks_block *a, const struct blks_block *b)
{
	return a->ip == b->ip && a->end_ip == b->end_ip &&
	    a->ninsn == b->ninsn && a->iclass == b->iclass &&
	    a->flags == b->flags && a->mode == b->mode && a->time == b->time;
}

/*
 * Reads the input again mixing blks_read_blocks() (at most max a call)
 * and blks_read(), through a FILE (so the window refills): the records
 * and the end must be those of the memory reader, rec[0..n) and rc.
 */
static void
reread(const uint8_t *data, size_t size, const struct blks_record *rec,
    size_t n, int rc, size_t max)
{
	struct blks_block b[4];
	struct blks_record r;
	struct blks_reader *rd;
	struct error e;
	size_t k = 0, got;
	FILE *f;
	int rc2;

	if ((f = fmemopen((void *)(uintptr_t)data, size, "rb")) == NULL)
		return;
	if (blks_reader_open(&rd, f, "fuzz", &e) < 0) {
		fclose(f);
		return;
	}
	for (;;) {
		got = blks_read_blocks(rd, b, max);
		for (size_t i = 0; i < got; i++, k++) {
			if (k >= n || rec[k].type != BLKS_BLOCK ||
			    !same_block(&rec[k].u.block, &b[i]))
				abort();
		}
		if (got > 0)
			continue;
		memset(&r, 0, sizeof(r));
		if ((rc2 = blks_read(rd, &r, &e)) <= 0)
			break;
		if (k >= n || r.type != rec[k].type || (r.type == BLKS_BLOCK &&
		    !same_block(&r.u.block, &rec[k].u.block)))
			abort();
		k++;
	}
	if (k != n || (rc2 < 0) != (rc < 0))
		abort();
	blks_reader_free(rd);
	fclose(f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct blks_reader *r;
	struct blks_record rec;
	struct error e;
	struct jsonw w;
	static struct blks_record seen[4096];	/* types and blocks */
	uint32_t tid = 0;
	size_t n = 0;
	int rc;

	if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL)
		return 0;
	if (blks_reader_open_mem(&r, data, size, "fuzz", &e) < 0)
		return 0;
	jsonw_init(&w, sink);
	blks_jsonl_header(&w, blks_reader_header(r));
	while ((rc = blks_read(r, &rec, &e)) > 0) {
		if (rec.type == BLKS_THREAD)
			tid = rec.u.thread.tid;
		blks_jsonl_record(&w, &rec, tid);
		if (n < sizeof(seen) / sizeof(seen[0])) {
			memset(&seen[n], 0, sizeof(seen[n]));
			seen[n].type = rec.type;
			if (rec.type == BLKS_BLOCK)
				seen[n].u.block = rec.u.block;
		}
		n++;
	}
	(void)jsonw_finish(&w);
	blks_reader_free(r);
	if (n <= sizeof(seen) / sizeof(seen[0])) {
		reread(data, size, seen, n, rc, 1);
		reread(data, size, seen, n, rc, 3);
	}
	return 0;
}

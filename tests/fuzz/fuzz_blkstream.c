/*
 * libFuzzer target for the block stream reader: any input must end in a
 * clean 0 or negative return, never a crash, a hang or a leak, and every
 * record it accepts must render as JSON Lines.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "blkstream.h"
#include "error.h"
#include "jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct blks_reader *r;
	struct blks_record rec;
	struct error e;
	struct jsonw w;
	uint32_t tid = 0;
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
	}
	(void)jsonw_finish(&w);
	blks_reader_free(r);
	return 0;
}

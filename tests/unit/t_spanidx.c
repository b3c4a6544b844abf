/*
 * Unit tests of lib/spanidx: rows written come back from the mapped file
 * column by column, strings are shared, and damaged files are refused
 * with the reason.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/spanidx.h"
#include "tap.h"

static char path[256];

static int
write_rows(size_t n)
{
	struct spanidx_writer *w;
	struct spanidx_row r;
	struct error e;

	if (spanidx_writer_new(&w, &e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.id = 100 + i;
		r.parent = i ? 100 + i - 1 : 0;
		r.tid = 7;
		r.pid = 6;
		r.depth = (int32_t)i - 1;
		r.fn = i % 2 ? "odd" : "int add<int>(int, int)";
		r.raw = i % 2 ? "odd" : "_Z3addIiET_S0_S0_";
		r.module = i == 2 ? NULL : "/bin/prog";
		r.call_site = 0x401000 + i;
		r.entry = 0x402000;
		r.start_ns = 10 * i;
		r.end_ns = 10 * i + 5;
		r.self_ns = 3;
		r.insns = 1000 + i;
		r.self_insns = 500 + i;
		r.start = (uint8_t)i;
		r.end = 1;
		r.flags = SPANIDX_F_TAIL_CALL;
		if (spanidx_add(w, &r, &e) < 0) {
			spanidx_writer_free(w);
			return -1;
		}
	}
	return spanidx_writer_finish(w, path, &e);
}

static void
test_round_trip(void)
{
	struct spanidx ix;
	struct error e;

	IS_INT(write_rows(3), 0, "three rows written");
	IS_INT(spanidx_open(&ix, path, &e), 0, "index opens");
	IS_U64(ix.rows, 3, "three rows");
	IS_U64(spanidx_u64(&ix, SPANIDX_ID, 2), 102, "id of row 2");
	IS_U64(spanidx_u64(&ix, SPANIDX_PARENT, 0), 0, "no parent");
	IS_U64(spanidx_u64(&ix, SPANIDX_PARENT, 2), 101, "parent of row 2");
	IS_INT(spanidx_i32(&ix, SPANIDX_DEPTH, 0), -1, "negative depth");
	IS_U64(spanidx_u32(&ix, SPANIDX_TID, 1), 7, "tid");
	IS_STR(spanidx_str(&ix, spanidx_u32(&ix, SPANIDX_FN, 0)),
	    "int add<int>(int, int)", "fn with spaces and template");
	IS_STR(spanidx_str(&ix, spanidx_u32(&ix, SPANIDX_RAW, 1)), "odd",
	    "raw");
	IS_INT(spanidx_u32(&ix, SPANIDX_FN, 0), spanidx_u32(&ix, SPANIDX_FN, 2),
	    "equal strings are stored once");
	IS_STR(spanidx_str(&ix, spanidx_u32(&ix, SPANIDX_MODULE, 2)), "",
	    "no module is the empty string");
	IS_U64(spanidx_u64(&ix, SPANIDX_SELF_INSNS, 2), 502, "self_insns");
	IS_U64(spanidx_u64(&ix, SPANIDX_END_NS, 1), 15, "end_ns");
	IS_INT(spanidx_u8(&ix, SPANIDX_START, 2), 2, "start cause");
	IS_INT(spanidx_u8(&ix, SPANIDX_FLAGS, 1), SPANIDX_F_TAIL_CALL, "flags");
	spanidx_close(&ix);
}

static void
test_empty(void)
{
	struct spanidx ix;
	struct error e;

	IS_INT(write_rows(0), 0, "an empty index is written");
	IS_INT(spanidx_open(&ix, path, &e), 0, "and opens");
	IS_U64(ix.rows, 0, "with no rows");
	spanidx_close(&ix);
}

static void
corrupt(long off, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "r+");

	if (f == NULL)
		return;
	fseek(f, off, SEEK_SET);
	fwrite(bytes, 1, n, f);
	fclose(f);
}

static void
test_damage(void)
{
	struct spanidx ix;
	struct error e;
	uint32_t v2 = 2;
	uint64_t huge = 1ull << 40;

	IS_INT(spanidx_open(&ix, "/nonexistent/index.bin", &e), -ERR_NOTFOUND,
	    "missing file");
	write_rows(3);
	corrupt(0, "XXXX", 4);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT, "bad magic refused");
	write_rows(3);
	corrupt(8, &v2, 4);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_UNSUPPORTED,
	    "version 2 refused");
	write_rows(3);
	corrupt(16, &huge, 8);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_TRUNCATED,
	    "rows past the end refused");
	OK(strstr(e.msg, "runs past the end") != NULL, "message: %s", e.msg);
	write_rows(3);
	corrupt(64, "zz", 2);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT,
	    "a renamed column refused");
	IS_STR(strrchr(e.msg, ':'), ": no column id", "message names it");
	if (truncate(path, 40) == 0)
		IS_INT(spanidx_open(&ix, path, &e), -ERR_TRUNCATED,
		    "a cut file refused");
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/t_spanidx.%d",
	    tmp ? tmp : "/tmp", (int)getpid());
	test_round_trip();
	test_empty();
	test_damage();
	unlink(path);
	return tap_done();
}

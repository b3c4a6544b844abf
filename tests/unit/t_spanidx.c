/*
 * Unit tests of lib/spanidx: rows written come back from the mapped file
 * column by column at every width, strings are shared, and damaged or
 * forged files (flipped bits, resealed checksums) are refused with the
 * reason; the writer refuses rows the reader would.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xxh64.h"
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

/* The file's bytes, read whole into buf (at most size); the length. */
static size_t
slurp(uint8_t *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return 0;
	n = fread(buf, 1, size, f);
	fclose(f);
	return n;
}

static void
spill(const uint8_t *buf, size_t n)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return;
	fwrite(buf, 1, n, f);
	fclose(f);
}

/* Every checksum made right again, as a forger would. */
static void
reseal(uint8_t *buf, size_t n)
{
	spanidx_reseal(buf, n);
}

static void
test_damage(void)
{
	struct spanidx ix;
	struct error e;
	uint32_t v9 = 9;
	uint64_t huge = 1ull << 40;

	IS_INT(spanidx_open(&ix, "/nonexistent/index.bin", &e), -ERR_NOTFOUND,
	    "missing file");
	write_rows(3);
	corrupt(0, "XXXX", 4);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT, "bad magic refused");
	write_rows(3);
	corrupt(8, &v9, 4);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_UNSUPPORTED,
	    "version 9 refused");
	write_rows(3);
	corrupt(16, &huge, 8);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT,
	    "a changed row count refused");
	OK(strstr(e.msg, "damaged: the header's checksum does not match") !=
	    NULL, "message: %s", e.msg);
	write_rows(3);
	corrupt(300, "zz", 2);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT,
	    "a changed body refused");
	IS_STR(strchr(e.msg, ':'), ": damaged: the checksum does not match",
	    "message says so");
	write_rows(3);
	if (truncate(path, 200) == 0)
		IS_INT(spanidx_open(&ix, path, &e), -ERR_TRUNCATED,
		    "a cut file refused");
	OK(strstr(e.msg, "200 bytes, the header says") != NULL,
	    "message: %s", e.msg);
	if (truncate(path, 40) == 0)
		IS_INT(spanidx_open(&ix, path, &e), -ERR_TRUNCATED,
		    "a file shorter than a header refused");
}

/* Every single-bit flip of a small index: refused, never read. */
static void
test_bit_flips(void)
{
	static uint8_t good[4096], bad[4096];
	size_t n, opened = 0;
	struct spanidx ix;
	struct error e;

	write_rows(5);
	n = slurp(good, sizeof(good));
	OK(n > SPANIDX_HEADER_SIZE && n < sizeof(good), "%zu bytes", n);
	for (size_t bit = 0; bit < n * 8; bit++) {
		memcpy(bad, good, n);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		spill(bad, n);
		if (spanidx_open(&ix, path, &e) == 0) {
			opened++;
			spanidx_close(&ix);
		} else if (e.msg[0] == '\0')
			opened += 1000000;	/* an error must say why */
	}
	IS_U64(opened, 0, "none of %zu flipped bits opens", n * 8);
}

/* Block 0's directory entry in the file's bytes. */
static uint8_t *
block0(uint8_t *buf)
{
	return buf + SPANIDX_HEADER_SIZE;
}

/* Forged files with good checksums: the value checks catch them. */
static void
test_forged(void)
{
	static uint8_t buf[4096];
	struct spanidx ix;
	struct error e;
	uint64_t base;
	size_t n;

	write_rows(3);
	n = slurp(buf, sizeof(buf));
	reseal(buf, n);
	spill(buf, n);
	IS_INT(spanidx_open(&ix, path, &e), 0, "resealed unchanged: opens");
	spanidx_close(&ix);
	/* The function column's base moved past the table. */
	memcpy(&base, block0(buf) + SPANIDX_B_BASE + 8 * SPANIDX_P_FUNC, 8);
	base += 2;
	memcpy(block0(buf) + SPANIDX_B_BASE + 8 * SPANIDX_P_FUNC, &base, 8);
	reseal(buf, n);
	spill(buf, n);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT, "forged functions");
	IS_STR(strchr(e.msg, ':'), ": damaged: row 1 (span 101): its "
	    "function is not in the table", "message names the row");
	/* A start so late that the span ends past the clock. */
	n = (write_rows(3), slurp(buf, sizeof(buf)));
	base = UINT64_MAX - 3;
	memcpy(block0(buf) + SPANIDX_B_BASE + 8 * SPANIDX_P_START_NS, &base,
	    8);
	reseal(buf, n);
	spill(buf, n);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT, "forged times");
	IS_STR(strchr(e.msg, ':'), ": damaged: row 0 (span 100): it ends "
	    "past the clock's range", "message names the row");
	/* A column claiming 60 bits: not a width the format has. */
	n = (write_rows(3), slurp(buf, sizeof(buf)));
	block0(buf)[SPANIDX_B_BITS + SPANIDX_P_SELF_INSNS] = 60;
	reseal(buf, n);
	spill(buf, n);
	IS_INT(spanidx_open(&ix, path, &e), -ERR_FORMAT, "a 60-bit column");
	IS_STR(strchr(e.msg, ':'), ": block 0: column self_insns has 60 "
	    "bits", "message names the block and the column");
}

/*
 * Every block of a larger index: one bit flipped in each of its columns'
 * bits is an error naming the block and the column, at spanidx_open and
 * at the first spanidx_check of a lazily opened index, while the other
 * blocks still read.
 */
static void
test_block_flips(void)
{
	static uint8_t good[1 << 17], bad[1 << 17];
	struct spanidx_writer *w;
	struct spanidx_row r;
	struct spanidx ix;
	struct error e;
	uint64_t nblocks = 0, flipped = 0, wrong = 0, data_off;
	size_t n;
	enum { N = 3 * SPANIDX_BLOCK_ROWS + 77 };

	IS_INT(spanidx_writer_new(&w, &e), 0, "writer");
	for (uint64_t i = 0; i < N; i++) {
		memset(&r, 0, sizeof(r));
		r.id = i + 1;
		r.parent = i / 3 + 1 == i + 1 ? 0 : i / 3 + 1;
		r.tid = (uint32_t)(i % 3);
		r.depth = (int32_t)(i % 9);
		r.fn = i % 5 ? "f" : "g";
		r.call_site = 0x1000 + i % 11;
		r.start_ns = i * 10;
		r.end_ns = i * 10 + i % 97;
		r.self_ns = (i % 97) / 2;
		r.insns = i % 1000;
		r.self_insns = r.insns / 2;
		r.start = (uint8_t)(i % SPANIDX_START_NR);
		r.end = (uint8_t)(i % SPANIDX_END_NR);
		r.flags = (uint8_t)(i % 8);
		if (spanidx_add(w, &r, &e) < 0)
			break;
	}
	IS_INT(spanidx_writer_finish(w, path, &e), 0, "%d rows", N);
	n = slurp(good, sizeof(good));
	OK(n < sizeof(good), "%zu bytes", n);
	IS_INT(spanidx_open(&ix, path, &e), 0, "opens: %s", e.msg);
	nblocks = ix.n_blocks;
	data_off = (uint64_t)(ix.data - ix.base);
	spanidx_close(&ix);
	IS_U64(nblocks, 4, "four blocks");
	for (uint64_t b = 0; b < nblocks; b++)
		for (unsigned c = 0; c < SPANIDX_NPCOLS; c++) {
			const uint8_t *d = good + SPANIDX_HEADER_SIZE + b *
			    SPANIDX_BLOCK_SIZE;
			uint64_t off, first = b * SPANIDX_BLOCK_ROWS, last;
			uint32_t rel;
			char want[256];
			int fd;

			if (d[SPANIDX_B_BITS + c] == 0)
				continue;	/* no bits to flip */
			memcpy(&off, d + SPANIDX_B_OFF, 8);
			memcpy(&rel, d + SPANIDX_B_REL + 4 * c, 4);
			last = b + 1 < nblocks ? first + SPANIDX_BLOCK_ROWS - 1 :
			    N - 1;
			memcpy(bad, good, n);
			bad[data_off + off + rel] ^= 0x10;
			spill(bad, n);
			flipped++;
			snprintf(want, sizeof(want), ": damaged: block %" PRIu64
			    " (rows %" PRIu64 " to %" PRIu64 "): the checksum of "
			    "its ", b, first, last);
			if (spanidx_open(&ix, path, &e) != -ERR_FORMAT ||
			    strstr(e.msg, want) == NULL) {
				DIAG("block %" PRIu64 " column %u: %s", b, c,
				    e.msg);
				wrong++;
			}
			if ((fd = open(path, O_RDONLY)) < 0 ||
			    spanidx_open_lazy_fd(&ix, fd, path, &e) != 0) {
				wrong++;
				if (fd >= 0)
					close(fd);
				continue;
			}
			close(fd);
			/* the other blocks read; this one is refused */
			for (uint64_t o = 0; o < nblocks; o++)
				wrong += spanidx_check(&ix, o * SPANIDX_BLOCK_ROWS,
				    o * SPANIDX_BLOCK_ROWS + 1, SPANIDX_COLS_ALL,
				    &e) != (o == b ? -ERR_FORMAT : 0);
			wrong += spanidx_check(&ix, 0, ix.rows, SPANIDX_COLS_ALL,
			    &e) != -ERR_FORMAT || strstr(e.msg, want) == NULL;
			spanidx_close(&ix);
		}
	OK(flipped >= 4 * 8, "%" PRIu64 " columns flipped", flipped);
	IS_U64(wrong, 0, "each an error naming its block, the others read");
}

/* Values of every width come back, and the writer refuses what the
 * reader would. */
static void
test_codec(void)
{
	static const uint64_t wide[] = { 0, 1, 0x7f, 0x1ffffffffull,
	    (1ull << 56) - 1, 1ull << 56, UINT64_MAX / 2 };
	struct spanidx_writer *w;
	struct spanidx_row r;
	struct spanidx ix;
	struct error e;
	uint64_t x = 88172645463325252ull, wrong = 0;
	enum { N = 5000 };

	IS_INT(spanidx_writer_new(&w, &e), 0, "writer");
	for (uint64_t i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memset(&r, 0, sizeof(r));
		r.id = i + 1;
		r.parent = i ? x % (i + 1) : 0;	/* 0: none; never i + 1 */
		r.tid = (uint32_t)(x >> 40);
		r.pid = 4000000000u;
		r.depth = (int32_t)(x % 2001) - 1000;
		r.fn = i % 3 ? "f" : "g";
		r.entry = wide[i % 7];
		r.call_site = x;
		r.start_ns = wide[(i + 1) % 7];
		r.end_ns = r.start_ns + (x & 0xffff);
		r.self_ns = (x & 0xffff) / 2;
		r.insns = wide[(i + 2) % 7];
		r.self_insns = r.insns / 3;
		r.start = (uint8_t)(i % SPANIDX_START_NR);
		r.end = (uint8_t)(i % SPANIDX_END_NR);
		r.flags = (uint8_t)(i % 8);
		if (spanidx_add(w, &r, &e) < 0)
			break;
	}
	IS_INT(spanidx_writer_finish(w, path, &e), 0, "%d rows written", N);
	IS_INT(spanidx_open(&ix, path, &e), 0, "and open: %s", e.msg);
	x = 88172645463325252ull;
	for (uint64_t i = 0; i < N && ix.rows == N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		wrong += spanidx_u64(&ix, SPANIDX_ID, i) != i + 1;
		wrong += spanidx_u64(&ix, SPANIDX_PARENT, i) !=
		    (i ? x % (i + 1) : 0);
		wrong += spanidx_u32(&ix, SPANIDX_TID, i) != (uint32_t)(x >> 40);
		wrong += spanidx_u32(&ix, SPANIDX_PID, i) != 4000000000u;
		wrong += spanidx_i32(&ix, SPANIDX_DEPTH, i) !=
		    (int32_t)(x % 2001) - 1000;
		wrong += strcmp(spanidx_str(&ix, spanidx_u32(&ix, SPANIDX_FN,
		    i)), i % 3 ? "f" : "g") != 0;
		wrong += spanidx_u64(&ix, SPANIDX_ENTRY, i) != wide[i % 7];
		wrong += spanidx_u64(&ix, SPANIDX_CALL_SITE, i) != x;
		wrong += spanidx_u64(&ix, SPANIDX_START_NS, i) !=
		    wide[(i + 1) % 7];
		wrong += spanidx_u64(&ix, SPANIDX_END_NS, i) !=
		    wide[(i + 1) % 7] + (x & 0xffff);
		wrong += spanidx_u64(&ix, SPANIDX_SELF_NS, i) !=
		    (x & 0xffff) / 2;
		wrong += spanidx_u64(&ix, SPANIDX_INSNS, i) != wide[(i + 2) % 7];
		wrong += spanidx_u8(&ix, SPANIDX_START, i) !=
		    i % SPANIDX_START_NR;
		wrong += spanidx_u8(&ix, SPANIDX_END, i) != i % SPANIDX_END_NR;
		wrong += spanidx_u8(&ix, SPANIDX_FLAGS, i) != i % 8;
	}
	IS_U64(ix.rows, N, "every row");
	IS_U64(wrong, 0, "every value of every width read back");
	IS_U64(ix.n_funcs, 14, "one function per name and entry");
	IS_INT(spanidx_block(&ix, 0)[SPANIDX_B_BITS + SPANIDX_P_START], 3,
	    "start causes 0..5: 3 bits");
	IS_INT(spanidx_block(&ix, 0)[SPANIDX_B_BITS + SPANIDX_P_START_NS], 64,
	    "57 bits and more: 64");
	IS_INT(spanidx_block(&ix, 0)[SPANIDX_B_BITS + SPANIDX_P_DEPTH], 11,
	    "depths -1000..1000: 11 bits");
	IS_INT(spanidx_block(&ix, 0)[SPANIDX_B_BITS + SPANIDX_P_ID], 0,
	    "ids in row order take no bits");
	spanidx_close(&ix);

	IS_INT(spanidx_writer_new(&w, &e), 0, "writer");
	memset(&r, 0, sizeof(r));
	r.id = 5;
	r.start_ns = 10;
	r.end_ns = 9;
	IS_INT(spanidx_add(w, &r, &e), -ERR_RANGE, "an end before the start");
	IS_STR(e.msg, "span 5 ends at 9 ns, before it starts at 10 ns",
	    "says which span");
	r.end_ns = 20;
	r.parent = 5;
	IS_INT(spanidx_add(w, &r, &e), -ERR_RANGE, "its own parent");
	IS_STR(e.msg, "span 5 is its own parent", "says which span");
	r.parent = 0;
	r.self_ns = 11;
	IS_INT(spanidx_add(w, &r, &e), -ERR_RANGE, "self beyond the span");
	r.self_ns = 0;
	r.end = SPANIDX_END_NR;
	IS_INT(spanidx_add(w, &r, &e), -ERR_RANGE, "an unknown end cause");
	spanidx_writer_free(w);
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
	test_bit_flips();
	test_forged();
	test_block_flips();
	test_codec();
	unlink(path);
	return tap_done();
}

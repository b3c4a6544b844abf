/*
 * Tests for lib/ptsb: kernel sideband records laid into a small ring, one
 * of them across its end, read back field for field; the control page's
 * head and tail; corrupt and unknown records.
 */
#include <stdlib.h>
#include <string.h>

#include "rec/ptsb.h"
#include "tap.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
    PERF_SAMPLE_IDENTIFIER)
#define RING 1024

struct rec {
	uint8_t b[512];
	size_t n;
};

static void
put(struct rec *r, const void *p, size_t n)
{
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void
put32(struct rec *r, uint32_t v)
{
	put(r, &v, 4);
}

static void
put64(struct rec *r, uint64_t v)
{
	put(r, &v, 8);
}

/* A string padded with NULs to 8 bytes, as the kernel writes it. */
static void
putstr(struct rec *r, const char *s)
{
	size_t n = strlen(s) + 1, pad = (8 - n % 8) % 8;

	put(r, s, n);
	while (pad-- > 0)
		put(r, "", 1);
}

static void
begin(struct rec *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { type, misc, 0 };

	r->n = 0;
	put(r, &h, sizeof(h));
}

/* Trailer pid/tid 10/11, time t, cpu 3, identifier 77; sets the size. */
static void
end(struct rec *r, uint64_t t)
{
	uint16_t size;

	put32(r, 10);
	put32(r, 11);
	put64(r, t);
	put32(r, 3);
	put32(r, 0);
	put64(r, 77);
	size = (uint16_t)r->n;
	memcpy(r->b + 6, &size, 2);
}

static uint8_t ring[RING];
static uint64_t head;

static void
emit(const struct rec *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		ring[(head + i) % RING] = r->b[i];
	head += r->n;
}

struct seen {
	int n;
	struct ptsb_record r[16];
	char strings[16][64];
};

static int
collect(const struct ptsb_record *rec, void *arg)
{
	struct seen *s = arg;
	const char *str = rec->type == PERF_RECORD_MMAP2 ? rec->u.mmap.filename
	    : rec->type == PERF_RECORD_COMM ? rec->u.comm.comm : "";

	if (s->n == 16)
		return -ERR_RANGE;
	s->r[s->n] = *rec;
	snprintf(s->strings[s->n], 64, "%s", str);
	s->n++;
	return 0;
}

static void
emit_all(uint64_t start)
{
	struct rec r;

	head = start;
	begin(&r, PERF_RECORD_MMAP2, 0);
	put32(&r, 10); put32(&r, 11);
	put64(&r, 0x400000); put64(&r, 0x2000); put64(&r, 0x1000);
	put32(&r, 8); put32(&r, 1); put64(&r, 4242); put64(&r, 0);
	put32(&r, 5); put32(&r, 2);
	putstr(&r, "/usr/bin/x");
	end(&r, 1000);
	emit(&r);
	begin(&r, PERF_RECORD_COMM, PERFDATA_MISC_COMM_EXEC);
	put32(&r, 10); put32(&r, 11); putstr(&r, "x");
	end(&r, 1001);
	emit(&r);
	begin(&r, PERF_RECORD_FORK, 0);
	put32(&r, 10); put32(&r, 10); put32(&r, 12); put32(&r, 11);
	put64(&r, 1002);
	end(&r, 1002);
	emit(&r);
	begin(&r, 99, 0);	/* a type we do not know */
	put64(&r, 0xdead);
	end(&r, 1003);
	emit(&r);
	begin(&r, PERF_RECORD_ITRACE_START, 0);
	put32(&r, 10); put32(&r, 11);
	end(&r, 1004);
	emit(&r);
	begin(&r, PERF_RECORD_AUX, 0);
	put64(&r, 0x3000); put64(&r, 0x10000); put64(&r, PERF_AUX_FLAG_OVERWRITE);
	end(&r, 1005);
	emit(&r);
	begin(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT |
	    PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	end(&r, 1006);
	emit(&r);
	begin(&r, PERF_RECORD_LOST, 0);
	put64(&r, 77); put64(&r, 5);
	end(&r, 1007);
	emit(&r);
	begin(&r, PERF_RECORD_EXIT, 0);
	put32(&r, 10); put32(&r, 10); put32(&r, 12); put32(&r, 11);
	put64(&r, 1008);
	end(&r, 1008);
	emit(&r);
}

static void
check_all(const struct seen *s, const char *how)
{
	const struct ptsb_record *r = s->r;

	IS_INT(s->n, 8, "%s: 8 known records", how);
	IS_INT(r[0].type, PERF_RECORD_MMAP2, "%s: MMAP2", how);
	OK(r[0].u.mmap.addr == 0x400000 && r[0].u.mmap.len == 0x2000 &&
	    r[0].u.mmap.pgoff == 0x1000 && r[0].u.mmap.ino == 4242 &&
	    r[0].u.mmap.maj == 8 && r[0].u.mmap.min == 1 &&
	    r[0].u.mmap.prot == 5 && r[0].u.mmap.flags == 2,
	    "%s: MMAP2 fields", how);
	IS_STR(s->strings[0], "/usr/bin/x", "%s: MMAP2 filename", how);
	OK(r[0].u.mmap.sid.pid == 10 && r[0].u.mmap.sid.tid == 11 &&
	    r[0].u.mmap.sid.time == 1000 && r[0].u.mmap.sid.cpu == 3 &&
	    r[0].u.mmap.sid.id == 77, "%s: the sample_id trailer", how);
	OK(r[1].type == PERF_RECORD_COMM && r[1].u.comm.exec &&
	    strcmp(s->strings[1], "x") == 0, "%s: COMM with exec", how);
	OK(r[2].type == PERF_RECORD_FORK && r[2].u.task.is_fork &&
	    r[2].u.task.tid == 12 && r[2].u.task.ptid == 11 &&
	    r[2].u.task.time == 1002, "%s: FORK", how);
	OK(r[3].type == PERF_RECORD_ITRACE_START && r[3].u.itrace.tid == 11 &&
	    r[3].sid.time == 1004, "%s: ITRACE_START (unknown type skipped)",
	    how);
	OK(r[4].type == PERF_RECORD_AUX && r[4].u.aux.aux_offset == 0x3000 &&
	    r[4].u.aux.aux_size == 0x10000 &&
	    r[4].u.aux.flags == PERF_AUX_FLAG_OVERWRITE, "%s: AUX", how);
	OK(r[5].type == PERF_RECORD_SWITCH && r[5].u.sw.out &&
	    r[5].u.sw.preempt && !r[5].u.sw.cpu_wide, "%s: SWITCH out", how);
	OK(r[6].type == PERF_RECORD_LOST && r[6].u.lost.id == 77 &&
	    r[6].u.lost.lost == 5, "%s: LOST", how);
	OK(r[7].type == PERF_RECORD_EXIT && !r[7].u.task.is_fork &&
	    r[7].u.task.sid.time == 1008, "%s: EXIT", how);
}

static void
test_walk(uint64_t start, const char *how)
{
	struct seen s;
	struct error e;
	uint64_t tail = start;

	memset(ring, 0, sizeof(ring));
	emit_all(start);
	memset(&s, 0, sizeof(s));
	IS_INT(ptsb_walk(ring, RING, head, &tail, ST, collect, &s, &e), 9,
	    "%s: 9 records walked", how);
	IS_U64(tail, head, "%s: tail reaches head", how);
	check_all(&s, how);
}

static void
test_drain(void)
{
	static struct perf_event_mmap_page pc;
	struct seen s;
	struct error e;

	memset(ring, 0, sizeof(ring));
	emit_all(5 * RING + 200);	/* straddles, after several laps */
	pc.data_head = head;
	pc.data_tail = 5 * RING + 200;
	pc.data_size = RING;
	memset(&s, 0, sizeof(s));
	IS_INT(ptsb_drain(&pc, ring, ST, collect, &s, &e), 9, "drain");
	IS_U64(pc.data_tail, head, "data_tail written back");
	check_all(&s, "drain");
	IS_INT(ptsb_drain(&pc, ring, ST, collect, &s, &e), 0,
	    "nothing new: nothing walked");
}

static void
test_bad(void)
{
	struct ptsb_record rec;
	struct rec r;
	struct error e;
	uint64_t tail = 0;
	struct seen s;

	begin(&r, PERF_RECORD_COMM, 0);
	put32(&r, 1); put32(&r, 2); put(&r, "abcdefgh", 8);	/* no NUL */
	end(&r, 1);
	IS_INT(ptsb_parse(r.b, r.n, ST, &rec, &e), -ERR_FORMAT, "no NUL");
	IS_STR(e.msg, "sideband record type 3 of 56 bytes is short or lacks "
	    "its string's NUL", "no NUL message");
	begin(&r, PERF_RECORD_AUX, 0);
	put64(&r, 1);
	r.b[6] = 16;
	IS_INT(ptsb_parse(r.b, 16, ST, &rec, &e), -ERR_TRUNCATED,
	    "no room for the trailer");
	IS_STR(e.msg, "sideband record type 11: 16 bytes do not hold its "
	    "32-byte sample_id", "trailer message");
	memset(ring, 0, sizeof(ring));
	ring[6] = 4;	/* a header claiming 4 bytes */
	IS_INT(ptsb_walk(ring, RING, 64, &tail, ST, collect, &s, &e),
	    -ERR_FORMAT, "a corrupt size");
	IS_STR(e.msg, "sideband ring: record of 4 bytes at 0 (head 64)",
	    "corrupt message");
	IS_U64(tail, 0, "tail stays before the bad record");
	IS_INT((int)ptsb_trailer_size(ST), 32, "trailer of 0x10086");
}

int
main(void)
{
	test_walk(0, "from 0");
	test_walk(RING - 40, "across the end");
	test_walk(RING - 4, "a header across the end");
	test_drain();
	test_bad();
	return tap_done();
}

/*
 * blocks_bench: the cost per record of everything between a decoder and
 * the block stream, without a decoder: ptdec's driver (ptdec_out, the
 * ordering, joining and counting of records, the sink) and the blkstream
 * writer, then the blkstream reader.
 *
 * It reads a block stream (ptdecode's output), keeps the records of its
 * first thread, and replays them through ptdec_decode_thread() with a
 * backend that decodes nothing: it hands the stored records of each PSB
 * interval of a made-up trace (PSB, PSBEND, padding) to ptdec_out, as a
 * decoder would.  The sink writes them with blks_writer to OUT.
 *
 *   blocks_bench [-j N] [-r] [-b] STREAM OUT
 *	replays the whole first thread; OUT holds the header, MAP records
 *	and that thread's group as the driver wrote them: for a stream
 *	ptdecode wrote, OUT is the same bytes (check with cmp; END is
 *	copied from STREAM, its counters are checked).
 *   blocks_bench -t [-j N] [-n RECORDS] [-s SKIP] [-p POOL] [-R ROUNDS] [-b]
 *	    STREAM
 *	timing: replays POOL records (after the first SKIP: a trace starts
 *	in the dynamic loader) again and again until
 *	RECORDS went through (default: as many as STREAM has) and writes
 *	to /dev/null; then reads STREAM with the reader (from memory and
 *	through a FILE, with blks_read() alone and with blks_read_blocks()
 *	too).  Prints ns per record, the best of ROUNDS runs.
 *
 * -b pushes blocks with ptdec_out_push_block(), as a decoder that knows
 * the fast path does; without it every record goes through
 * ptdec_out_push() with a struct blks_record.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "dec/ptdec.h"

#define PSB_BYTES 32		/* PSB, PSBEND, PADs */
#define PER_INTERVAL 1000	/* records a made-up PSB interval holds */

/* The records to replay: blocks compactly, the others with their place. */
struct recs {
	struct blks_block *blk;
	size_t nr_blk, cap_blk;
	struct blks_record *other;
	size_t *other_at;		/* index of the record in the stream */
	size_t nr_other, cap_other;
	size_t nr;			/* records in all */
	uint32_t *blk_at;		/* index of each block's record */
};

struct fake {
	struct ptdec_thread th;		/* first: the driver hands it back */
	const struct recs *recs;
	size_t total;			/* records to replay */
	int push_block;
};

struct worker {
	const struct fake *f;
};

static double
now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *
grow(void *p, size_t *cap, size_t size)
{
	size_t c = *cap ? 2 * *cap : 4096;

	if ((p = realloc(p, c * size)) == NULL) {
		fprintf(stderr, "blocks_bench: out of memory\n");
		exit(1);
	}
	*cap = c;
	return p;
}

static const char *
keep(const char *s)
{
	char *d = strdup(s != NULL ? s : "");

	if (d == NULL) {
		fprintf(stderr, "blocks_bench: out of memory\n");
		exit(1);
	}
	return d;
}

static void
recs_add(struct recs *rs, const struct blks_record *r)
{
	if (r->type == BLKS_BLOCK) {
		if (rs->nr_blk == rs->cap_blk) {
			size_t cap = rs->cap_blk;

			rs->blk = grow(rs->blk, &rs->cap_blk, sizeof(*rs->blk));
			rs->blk_at = grow(rs->blk_at, &cap,
			    sizeof(*rs->blk_at));
		}
		rs->blk_at[rs->nr_blk] = (uint32_t)rs->nr;
		rs->blk[rs->nr_blk++] = r->u.block;
	} else {
		if (rs->nr_other == rs->cap_other) {
			size_t cap = rs->cap_other;

			rs->other = grow(rs->other, &rs->cap_other,
			    sizeof(*rs->other));
			rs->other_at = grow(rs->other_at, &cap,
			    sizeof(*rs->other_at));
		}
		rs->other_at[rs->nr_other] = rs->nr;
		rs->other[rs->nr_other] = *r;
		if (r->type == BLKS_GAP)
			rs->other[rs->nr_other].u.gap.text =
			    keep(r->u.gap.text);
		rs->nr_other++;
	}
	rs->nr++;
}

static int
fake_worker_new(void **out, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, struct error *e)
{
	struct worker *w = malloc(sizeof(*w));

	(void)cfg;
	if (w == NULL)
		return error_set(e, ERR_NOMEM, "worker");
	w->f = (const struct fake *)th;
	*out = w;
	return 0;
}

static void
fake_worker_free(void *w)
{
	free(w);
}

/* Blocks blk[0..n) of the pool, pushed as a decoder would. */
static int
push_blocks(const struct fake *f, const struct blks_block *blk, size_t n,
    struct ptdec_out *out, struct error *e)
{
	struct blks_record r;
	int rc;

	r.type = BLKS_BLOCK;
	for (size_t i = 0; i < n; i++) {
		const struct blks_block *b = &blk[i];

		if (f->push_block)
			rc = ptdec_out_push_block(out, b->ip, b->end_ip,
			    b->ninsn, b->iclass, b->flags, b->mode, b->time,
			    e);
		else {
			r.u.block = *b;
			rc = ptdec_out_push(out, &r, e);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Finds where record k of the pool is among blocks and others. */
static void
seek(const struct recs *rs, size_t k, size_t *bi, size_t *oi)
{
	size_t lo = 0, hi = rs->nr_other;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rs->other_at[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	*oi = lo;
	*bi = k - lo;
}

static int
fake_decode_chunk(void *wv, const struct ptdec_chunk *c,
    struct ptdec_out *out, struct error *e)
{
	const struct fake *f = ((struct worker *)wv)->f;
	const struct recs *rs = f->recs;
	size_t from = c->begin / PSB_BYTES * PER_INTERVAL;
	size_t to = (c->begin / PSB_BYTES + c->nr_psb) * PER_INTERVAL;
	size_t k = from % rs->nr, bi, oi, stop;
	int rc;

	if (to > f->total)
		to = f->total;
	seek(rs, k, &bi, &oi);
	for (size_t i = from; i < to; ) {
		if (k == rs->nr)
			k = bi = oi = 0;
		if (oi < rs->nr_other && rs->other_at[oi] == k) {
			if ((rc = ptdec_out_push(out, &rs->other[oi++], e)) < 0)
				return rc;
			k++;
			i++;
			continue;
		}
		/* A run of blocks: to the next other, the pool's end or to. */
		stop = oi < rs->nr_other ? rs->other_at[oi] : rs->nr;
		if (stop - k > to - i)
			stop = k + (to - i);
		if ((rc = push_blocks(f, &rs->blk[bi], stop - k, out, e)) < 0)
			return rc;
		bi += stop - k;
		i += stop - k;
		k = stop;
	}
	return 0;
}

static const struct ptdec_backend fake_backend = {
	"replay", fake_worker_new, fake_decode_chunk, fake_worker_free,
};

static int
sink_emit(void *ctx, const struct blks_record *r, struct error *e)
{
	return blks_write(ctx, r, e);
}

static int
sink_emit_blocks(void *ctx, const struct blks_block *b, size_t n,
    struct error *e)
{
	return blks_write_blocks(ctx, b, n, e);
}

static void
die(const char *what, const struct error *e)
{
	fprintf(stderr, "blocks_bench: %s: %s\n", what, e->msg);
	exit(1);
}

/* Runs the replay of f; returns the driver's END counters in *end. */
static void
replay(struct fake *f, struct blks_writer *w, unsigned jobs,
    struct blks_end *end)
{
	size_t npsb = (f->total + PER_INTERVAL - 1) / PER_INTERVAL;
	struct ptdec_config cfg;
	struct ptdec_sink sink;
	uint8_t *trace;
	struct error e;

	if ((trace = calloc(npsb + 1, PSB_BYTES)) == NULL)
		exit(1);
	for (size_t i = 0; i < npsb * PSB_BYTES; i += PSB_BYTES) {
		for (size_t k = 0; k < 16; k += 2) {
			trace[i + k] = 0x02;
			trace[i + k + 1] = 0x82;
		}
		trace[i + 16] = 0x02;
		trace[i + 17] = 0x23;
	}
	f->th.buf = trace;
	f->th.len = npsb * PSB_BYTES;
	memset(&cfg, 0, sizeof(cfg));
	cfg.jobs = jobs;
	/* Chunks of about 72 intervals, as a 64 KiB chunk of real trace. */
	cfg.chunk_bytes = 72 * PSB_BYTES;
	memset(&sink, 0, sizeof(sink));
	sink.emit = sink_emit;
	sink.emit_blocks = sink_emit_blocks;
	sink.ctx = w;
	if (ptdec_decode_thread(&fake_backend, &cfg, &f->th, &sink, end,
	    &e) < 0)
		die("replay", &e);
	free(trace);
}

struct stream {
	uint8_t *bytes;
	size_t len;
	struct blks_header hdr;
	struct blks_record *maps;
	size_t nr_maps, cap_maps;
	struct blks_record thread, end;
	struct recs recs;
	size_t nr_threads;
};

static void
load(struct stream *s, const char *path, size_t skip, size_t pool)
{
	struct blks_reader *rd;
	struct blks_record r;
	struct error e;
	FILE *f;
	long n;
	int rc, in = 0, done = 0;

	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) < 0 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
	    (s->bytes = malloc((size_t)n + 1)) == NULL ||
	    fread(s->bytes, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(1);
	}
	fclose(f);
	s->len = (size_t)n;
	if (blks_reader_open_mem(&rd, s->bytes, s->len, path, &e) < 0)
		die(path, &e);
	s->hdr = *blks_reader_header(rd);
	s->hdr.snapshot = keep(s->hdr.snapshot);
	while ((rc = blks_read(rd, &r, &e)) == 1) {
		if (r.type == BLKS_THREAD)
			s->nr_threads++;
		if (done)
			continue;
		switch (r.type) {
		case BLKS_MAP:
			if (s->nr_maps == s->cap_maps)
				s->maps = grow(s->maps, &s->cap_maps,
				    sizeof(*s->maps));
			r.u.map.name = keep(r.u.map.name);
			r.u.map.image = keep(r.u.map.image);
			r.u.map.symbols = keep(r.u.map.symbols);
			s->maps[s->nr_maps++] = r;
			break;
		case BLKS_THREAD:
			r.u.thread.name = keep(r.u.thread.name);
			s->thread = r;
			in = 1;
			break;
		case BLKS_END:
			s->end = r;
			done = 1;
			break;
		default:
			if (in && skip > 0)
				skip--;
			else if (in && (pool == 0 || s->recs.nr < pool))
				recs_add(&s->recs, &r);
		}
	}
	if (rc < 0 || !done)
		die(path, &e);
	blks_reader_free(rd);
}

static struct blks_writer *
open_out(const struct stream *s, int fd)
{
	struct blks_writer *w;
	struct error e;

	if (blks_writer_open_fd(&w, fd, &s->hdr, &e) < 0)
		die("writer", &e);
	for (size_t i = 0; i < s->nr_maps; i++) {
		if (blks_write(w, &s->maps[i], &e) < 0)
			die("writer", &e);
	}
	if (blks_write(w, &s->thread, &e) < 0)
		die("writer", &e);
	return w;
}

static void
close_out(struct blks_writer *w, const struct blks_record *end)
{
	struct blks_record eos;
	struct error e;

	memset(&eos, 0, sizeof(eos));
	eos.type = BLKS_EOS;
	eos.u.eos.nr_threads = 1;
	if (blks_write(w, end, &e) < 0 || blks_write(w, &eos, &e) < 0 ||
	    blks_writer_close(w, &e) < 0)
		die("writer", &e);
}

static int
verify(struct stream *s, const char *out, unsigned jobs, int push_block)
{
	static const enum blks_counter same[] = { BLKS_C_BLOCKS, BLKS_C_INSNS,
	    BLKS_C_EVENTS, BLKS_C_GAPS, BLKS_C_BYTES_SKIPPED };
	struct fake f = { .recs = &s->recs, .total = s->recs.nr,
	    .push_block = push_block };
	struct blks_writer *w;
	struct blks_end end;
	int fd, bad = 0;

	if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
		perror(out);
		return 1;
	}
	w = open_out(s, fd);
	replay(&f, w, jobs, &end);
	close_out(w, &s->end);
	close(fd);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		if (end.c[same[i]] != s->end.u.end.c[same[i]]) {
			fprintf(stderr, "blocks_bench: %s: driver %llu, "
			    "stream %llu\n", blks_counter_name(same[i]),
			    (unsigned long long)end.c[same[i]],
			    (unsigned long long)s->end.u.end.c[same[i]]);
			bad = 1;
		}
	}
	return bad;
}

/*
 * Reads the stream once (mode 0: from memory, 1: through a FILE, 2: also
 * with blks_read_blocks); returns the CPU seconds, *n the records.
 */
static double
time_read(const struct stream *s, const char *path, int mode, uint64_t *n)
{
	static struct blks_block blk[1024];
	int file = mode > 0;
	struct blks_reader *rd;
	struct blks_record r;
	struct error e;
	uint64_t sum = 0;
	FILE *f = NULL;
	double c0;
	int rc;

	if (file && (f = fopen(path, "rb")) == NULL) {
		perror(path);
		exit(1);
	}
	*n = 0;
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	if ((file ? blks_reader_open(&rd, f, path, &e) :
	    blks_reader_open_mem(&rd, s->bytes, s->len, path, &e)) < 0)
		die(path, &e);
	for (;;) {
		size_t got = mode == 2 ? blks_read_blocks(rd, blk, 1024) : 0;

		for (size_t i = 0; i < got; i++)
			sum += blk[i].ninsn;
		*n += got;
		if (got > 0)
			continue;
		if ((rc = blks_read(rd, &r, &e)) != 1)
			break;
		(*n)++;
		if (r.type == BLKS_BLOCK)
			sum += r.u.block.ninsn;
	}
	if (rc < 0)
		die(path, &e);
	blks_reader_free(rd);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (f != NULL)
		fclose(f);
	if (sum != s->end.u.end.c[BLKS_C_INSNS] && s->nr_threads == 1)
		fprintf(stderr, "blocks_bench: read %llu insns, END says %llu\n",
		    (unsigned long long)sum,
		    (unsigned long long)s->end.u.end.c[BLKS_C_INSNS]);
	return c0;
}

static void
bench_read(const struct stream *s, const char *path, int rounds)
{
	static const char *const how[] = { "memory", "FILE",
	    "FILE, blks_read_blocks" };

	for (int mode = 0; mode < 3; mode++) {
		double best = 1e9;
		uint64_t n = 0;

		for (int k = 0; k < rounds; k++) {
			double c = time_read(s, path, mode, &n);

			best = c < best ? c : best;
		}
		printf("read (%s): %llu records, best of %d: %.3f s cpu: "
		    "%.2f ns/record\n", how[mode],
		    (unsigned long long)n, rounds, best,
		    best * 1e9 / (double)n);
	}
}

/* The fastest of rounds replays (the machine is shared and noisy). */
static void
bench(struct stream *s, const char *path, size_t total, unsigned jobs,
    int push_block, int rounds)
{
	struct fake f = { .recs = &s->recs, .push_block = push_block };
	struct blks_record end = s->end;
	double t1 = 1e9, c1 = 1e9;

	f.total = total ? total : s->end.u.end.c[BLKS_C_BLOCKS] +
	    s->end.u.end.c[BLKS_C_EVENTS] + s->end.u.end.c[BLKS_C_GAPS];
	for (int k = 0; k < rounds; k++) {
		struct blks_writer *w;
		double t0, c0;
		int fd;

		if ((fd = open("/dev/null", O_WRONLY)) < 0)
			exit(1);
		w = open_out(s, fd);
		t0 = now(CLOCK_MONOTONIC);
		c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		replay(&f, w, jobs, &end.u.end);
		t0 = now(CLOCK_MONOTONIC) - t0;
		c0 = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
		t1 = t0 < t1 ? t0 : t1;
		c1 = c0 < c1 ? c0 : c1;
		end.u.end.tid = s->end.u.end.tid;
		close_out(w, &end);
		close(fd);
	}
	printf("driver+writer -j%u (%s): %zu records (pool %zu), best of "
	    "%d: %.3f s wall, %.3f s cpu: %.2f ns/record wall, %.2f cpu\n",
	    jobs, push_block ? "push_block" : "push", f.total, s->recs.nr,
	    rounds, t1, c1, t1 * 1e9 / (double)f.total,
	    c1 * 1e9 / (double)f.total);
	bench_read(s, path, rounds);
}

int
main(int argc, char *argv[])
{
	struct stream s;
	size_t total = 0, pool = 4096, skip = 0;
	unsigned jobs = 1;
	int c, timing = 0, push_block = 0, rounds = 1;

	while ((c = getopt(argc, argv, "bj:n:p:R:s:t")) != -1) {
		switch (c) {
		case 'b':
			push_block = 1;
			break;
		case 'j':
			jobs = (unsigned)atoi(optarg);
			break;
		case 'n':
			total = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			pool = strtoull(optarg, NULL, 0);
			break;
		case 's':
			skip = strtoull(optarg, NULL, 0);
			break;
		case 'R':
			rounds = atoi(optarg) > 0 ? atoi(optarg) : 1;
			break;
		case 't':
			timing = 1;
			break;
		default:
			return 2;
		}
	}
	if (optind + (timing ? 1 : 2) != argc) {
		fprintf(stderr, "usage: blocks_bench [-b] [-j N] STREAM OUT\n"
		    "       blocks_bench -t [-b] [-j N] [-n RECORDS] "
		    "[-s SKIP] [-p POOL] [-R ROUNDS] STREAM\n");
		return 2;
	}
	memset(&s, 0, sizeof(s));
	load(&s, argv[optind], timing ? skip : 0, timing ? pool : 0);
	if (s.recs.nr == 0) {
		fprintf(stderr, "blocks_bench: no records to replay\n");
		return 1;
	}
	if (!timing)
		return verify(&s, argv[optind + 1], jobs, push_block);
	bench(&s, argv[optind], total, jobs, push_block, rounds);
	return 0;
}

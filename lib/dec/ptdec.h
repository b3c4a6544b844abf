/*
 * ptdec: decoding one thread's Intel PT into block stream records, in
 * parallel, behind one decoder interface.
 *
 * Owns: the images a decode reads instructions from (one libipt
 * pt_image_section_cache shared by every worker, sections per pid), the
 * decode parameters (CPU identity, MTC/nominal frequency, CPUID 0x15
 * ratio, TSC to nanoseconds), splitting a ring at PSB packets into chunks,
 * decoding chunks on a pool of workers with one decoder each, and handing
 * the records to a sink in trace order.  The decoder itself sits behind
 * struct ptdec_backend: ptdec_backend_libipt (libipt's block decoder) is
 * one; the fast decoder (ptdec_backend_fast, ptdec_fast.c) is the other.
 *
 * The unit of decoding is the PSB interval: a decoder synchronises at a
 * PSB and decodes until it reaches the next PSB's PSB+, which libipt
 * reports as status updates bound to the FUP's ip: exactly where the next
 * interval's decoder starts, so an interval boundary neither loses nor
 * duplicates a block.  (This needs MODE.exec in every PSB+, which
 * hardware and the emu recorder write.)  Chunks group whole intervals (at
 * least chunk_bytes of trace) to give each worker enough work.  Since
 * every interval decodes on its own, the output depends on the trace only:
 * not on the chunk size, not on the number of jobs.
 *
 * Blocks end at branches: where the decoder split a straight run of
 * instructions (its block cache, a section boundary, a PSB+ inside it),
 * the driver joins the pieces, and where the block cache left the class
 * of the last instruction out, the backend decodes it (lib/x86class).
 *
 * Errors never end a decode: a decoder error becomes a GAP record (cause
 * decode_error, or unknown_image when no image holds the ip) and decoding
 * resumes at the next PSB; bytes before the first PSB become a GAP
 * (ring_start when the ring wrapped).  Only allocation failures and sink
 * errors make ptdec_decode_thread() fail.
 *
 * Blocks that end at a branch, pushed in a row, can travel as encoded
 * runs (struct ptdec_run): block stream bytes the worker wrote against
 * the block before them, which the emitter only copies to a sink that
 * takes them (emit_encoded); the bytes equal what the sink's writer would
 * have made of the blocks.
 *
 * Memory: at most 2 x jobs chunks' records are held at once.
 */
#ifndef PTKIT_PTDEC_H
#define PTKIT_PTDEC_H

#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "dec/ptimages.h"

#define PTDEC_CHUNK_DEFAULT (64 * 1024)

/* TSC to nanoseconds since the capture start (perf's TIME_CONV). */
struct ptdec_time {
	uint64_t shift, mult, zero;	/* perf ns = zero + tsc * mult >> shift */
	uint64_t base_ns;		/* subtracted: record time 0 */
	int valid;			/* 0: the trace has no usable time */
};

/*
 * perf time in ns of a TSC value (perf's formula, overflow-safe).  Inline:
 * the fast decoder converts at every packet that moves the time.
 */
static inline uint64_t
ptdec_tsc_to_perf_ns(const struct ptdec_time *t, uint64_t tsc)
{
	uint64_t quot, rem;

	if (t->shift >= 64)
		return t->zero;
	if (t->shift == 0)
		return t->zero + tsc * t->mult;
	quot = tsc >> t->shift;
	rem = tsc & ((1ULL << t->shift) - 1);
	return t->zero + quot * t->mult +
	    (uint64_t)(((unsigned __int128)rem * t->mult) >> t->shift);
}

/* Record time of a TSC value: perf ns minus base_ns (0 if not valid). */
static inline uint64_t
ptdec_tsc_to_ns(const struct ptdec_time *t, uint64_t tsc)
{
	uint64_t ns;

	if (!t->valid)
		return 0;
	ns = ptdec_tsc_to_perf_ns(t, tsc);
	/* Trace from before the capture start reads as its start. */
	return ns >= t->base_ns ? ns - t->base_ns : 0;
}

/* The images of a decode (struct ptdec_images, dec/ptimages.h). */
/* Returns 0 or -ERR_NOMEM. */
int ptdec_images_init(struct ptdec_images *im, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Maps [vaddr, vaddr+size) of process pid to file at offset.  The file is
 * opened through the iscache (shared, loaded once).  Returns 0,
 * -ERR_NOTFOUND (libipt cannot load the file: it is missing or the offset
 * is past its end; the message says which), -ERR_NOMEM.
 */
int ptdec_images_add(struct ptdec_images *im, uint32_t pid, uint64_t vaddr,
    uint64_t size, uint64_t offset, const char *file, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * ptdec_images_add of the file open on fd (which must stay open until
 * ptdec_images_fini), name naming it in messages: for a file that was
 * checked when it was opened (beneath its snapshot), so that no later
 * open by its path can reach another.  Returns as ptdec_images_add, or
 * -ERR_UNSUPPORTED when /proc/self/fd is not there (libipt takes only
 * names): the caller then decides whether the path will do.
 */
int ptdec_images_add_fd(struct ptdec_images *im, uint32_t pid, uint64_t vaddr,
    uint64_t size, uint64_t offset, int fd, const char *name,
    struct error *e) PTKIT_MUST_CHECK;

void ptdec_images_fini(struct ptdec_images *im);

/* Everything a decoder needs besides the trace. */
struct ptdec_config {
	struct pt_cpu cpu;		/* for errata; all 0: none */
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx;
	uint8_t mtc_freq, nom_freq;
	struct ptdec_time time;
	const struct ptdec_images *images;
	size_t chunk_bytes;		/* 0: PTDEC_CHUNK_DEFAULT; SIZE_MAX: one */
	unsigned jobs;			/* workers; 0 or 1: decode inline */
	int window;			/* keep only records in [from_ns, to_ns] */
	uint64_t from_ns, to_ns;
	/* Called in order after each chunk is out: trace bytes done. */
	void (*progress)(void *ctx, uint64_t bytes_done);
	void *progress_ctx;
};

/* One thread's trace. */
struct ptdec_thread {
	uint32_t tid, pid;
	const uint8_t *buf;		/* the ring, oldest byte first */
	size_t len;
	int wrapped;			/* older trace was overwritten */
};

/*
 * A chunk: the PSB intervals starting at psb[0..nr_psb) (psb[0] is begin);
 * each interval ends at the next PSB, the last one at next (the next
 * chunk's first PSB, or the end of the trace).  index is its place.
 */
struct ptdec_chunk {
	size_t index;
	uint64_t begin, next;
	const uint64_t *psb;
	size_t nr_psb;
};

/* How a thread's trace is cut: chunks over one array of PSB offsets. */
struct ptdec_plan {
	struct ptdec_chunk *chunk;
	size_t nr;
	uint64_t *psb;
	size_t nr_psb;
	uint64_t first_psb;		/* the trace length when there is none */
	size_t chunk_psbs;		/* most PSBs in one chunk */
};

/*
 * The most blocks a backend decodes in a row without reading a packet.
 * Direct branches need no trace, so a decoder in a loop of them (a
 * program spinning in `for (;;);`, which is `jmp .`) returns blocks for
 * ever while the next packet is one the loop never asks for (a TNT, a
 * TIP, an event at an ip the loop never reaches); at the end of the
 * trace libipt says so and the decode ends.  A path of direct branches
 * only is deterministic, so one longer than the code's distinct blocks
 * cycles; the blocks between two packets are such paths joined by at
 * most 47 branches that take their bits from one cached TNT (a long TNT
 * holds 47).  No real program's path comes near 65536 (it would be 1360
 * direct branches in a row between each two of those bits).  Past the
 * bound (within 63 blocks: ptdec_ipt.c looks every 64 blocks) the native
 * decoder ends the stretch with a decode_error GAP of text
 * PTDEC_SPIN_TEXT (error 0: libipt reported none) at the loop and goes on
 * at the next PSB; the fast decoder gives such an interval to libipt
 * before it gets there (see ptdec_fast.c).
 */
#define PTDEC_SPIN_MAX 65536
#define PTDEC_SPIN_TEXT "no trace for 65536 blocks: a loop of direct branches"

/*
 * A record time a backend does not know (an interval that failed before
 * its first timing packet): the driver writes the time of the record
 * before it instead, which only it knows across chunks.
 */
#define PTDEC_TIME_UNKNOWN UINT64_MAX

/*
 * A run of blocks a backend pushed with ptdec_out_push_final, encoded as
 * block stream bytes (blks_put_block) against the delta state of the
 * block pushed just before it, its base: with one, the emitter only
 * copies bytes, and with several jobs the workers do the encoding.
 */
struct ptdec_run {
	size_t off, len;		/* its bytes in out->enc */
	uint64_t nblk, ninsn;
	uint64_t last_ip, last_time;	/* end ip and time of its last block */
};

/*
 * Where a backend puts one chunk's records: blocks as struct blks_block
 * (32 bytes) or, where they are final, as encoded runs; events, gaps and
 * runs beside them with their place.  With several jobs they are kept
 * until the driver writes the chunk in order; with one, the driver writes
 * them whenever an array is full.  Its fields are the driver's: backends
 * use the functions below.
 */
struct ptdec_other;
struct ptdec_out {
	struct blks_block *blk;		/* blocks, in order */
	size_t nr_blk, cap_blk;
	struct ptdec_other *other;	/* events, gaps and runs, with their
					   place */
	size_t nr_other, cap_other;
	int held;			/* a mark is held: keep everything */
	/* One job: writes the records so far (the emitter). */
	int (*flush)(void *ctx, struct ptdec_out *o, struct error *e);
	void *flush_ctx;
	uint64_t fallbacks;		/* intervals a backend gave libipt */
	int enc_ok;			/* the sink takes runs: no window */
	uint8_t *enc;			/* the runs' bytes */
	size_t enc_len, enc_cap;
	struct ptdec_run *run;		/* the open run (last in other), or
					   NULL: the next final block opens
					   one if it has a base */
};

/*
 * Appends a record (BLOCK, EVENT or GAP; strings must be static).
 * Returns 0, -ERR_NOMEM, or (one job) the sink's error.
 */
int ptdec_out_push(struct ptdec_out *o, const struct blks_record *r,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Makes room for one more block: writes the records so far (one job) or
 * grows the array.  For ptdec_out_push_block.  Returns 0, -ERR_NOMEM or
 * (one job) the sink's error.
 */
int ptdec_out_room(struct ptdec_out *o, struct error *e) PTKIT_MUST_CHECK;

/*
 * Appends a BLOCK: the same as ptdec_out_push() of a BLOCK record with
 * these fields (mode is enum pt_exec_mode, iclass enum pt_insn_class,
 * flags BLKS_BLOCK_*, time ns or PTDEC_TIME_UNKNOWN), for a few ns: no
 * struct blks_record, no call unless the array is full.  Returns 0,
 * -ERR_NOMEM, or (one job) the sink's error.
 */
static inline PTKIT_MUST_CHECK int
ptdec_out_push_block(struct ptdec_out *o, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, uint8_t iclass, uint8_t flags, uint8_t mode,
    uint64_t time, struct error *e)
{
	struct blks_block *b;

	if (o->nr_blk == o->cap_blk) {
		int rc = ptdec_out_room(o, e);

		if (rc < 0)
			return rc;
	}
	o->run = NULL;
	b = &o->blk[o->nr_blk++];
	b->ip = ip;
	b->end_ip = end_ip;
	b->ninsn = ninsn;
	b->iclass = iclass;
	b->flags = flags;
	b->mode = mode;
	b->time = time;
	return 0;
}

/* ptdec_out_push_final when no run is open or its bytes are full. */
int ptdec_out_push_final_slow(struct ptdec_out *o, uint64_t ip,
    uint64_t end_ip, uint32_t ninsn, uint8_t iclass, uint8_t mode,
    uint64_t time, struct error *e) PTKIT_MUST_CHECK;

/*
 * Appends a BLOCK with no flags that the emitter cannot change: one that
 * ends at a branch (iclass other than ptic_error and ptic_other), so no
 * later block joins it.  The same records as ptdec_out_push_block, for
 * fewer ns: when the sink takes encoded runs and the record pushed last
 * is a block the emitter cannot change either, the block is encoded
 * right here.  Same returns.
 */
static inline PTKIT_MUST_CHECK int
ptdec_out_push_final(struct ptdec_out *o, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, uint8_t iclass, uint8_t mode, uint64_t time,
    struct error *e)
{
	struct ptdec_run *r = o->run;
	uint8_t *p, *q;

	if (r == NULL || time == PTDEC_TIME_UNKNOWN ||
	    o->enc_len + BLKS_BLOCK_MAX > o->enc_cap ||
	    (unsigned)iclass - 2u > 13u || mode > 3)
		return ptdec_out_push_final_slow(o, ip, end_ip, ninsn, iclass,
		    mode, time, e);
	p = o->enc + o->enc_len;
	q = blks_put_block(p, ip, end_ip, ninsn,
	    (uint64_t)iclass | (uint64_t)mode << 6, time, r->last_ip,
	    r->last_time);
	o->enc_len += (size_t)(q - p);
	r->len += (size_t)(q - p);
	r->nblk++;
	r->ninsn += ninsn;
	r->last_ip = end_ip;
	r->last_time = time;
	return 0;
}

/*
 * A backend's loop that pushes many final blocks holds the open run in a
 * cursor: its next byte and delta state stay in registers, where
 * ptdec_out_push_final reloads them from the out for every block (its
 * byte stores may alias anything).  While a cursor holds the run (from a
 * ptdec_out_cursor_begin that returned 1 to ptdec_out_cursor_end) nothing
 * else may touch the out.
 */
struct ptdec_cursor {
	uint8_t *p;			/* where the next block goes */
	size_t left;			/* blocks that surely fit */
	size_t start;			/* left at begin; 0: holds nothing */
	uint64_t prev_ip, prev_time;	/* the delta state */
	uint64_t ninsn;			/* taken since begin */
};

/*
 * Holds the open run in c: 1, or 0 when no run is open or its bytes are
 * full (push the next block with ptdec_out_push_final, which opens a run
 * or makes room when it can, and begin again).
 */
static inline int
ptdec_out_cursor_begin(struct ptdec_out *o, struct ptdec_cursor *c)
{
	const struct ptdec_run *r = o->run;

	c->start = c->left = 0;
	if (r == NULL || o->enc_cap - o->enc_len < 2 * BLKS_BLOCK_MAX)
		return 0;
	/* counting blocks at their largest: one compare a block */
	c->start = c->left = (o->enc_cap - o->enc_len) / BLKS_BLOCK_MAX - 1;
	c->p = o->enc + o->enc_len;
	c->prev_ip = r->last_ip;
	c->prev_time = r->last_time;
	c->ninsn = 0;
	return 1;
}

/* Gives what c took back to the open run, if it holds it. */
static inline void
ptdec_out_cursor_end(struct ptdec_out *o, struct ptdec_cursor *c)
{
	struct ptdec_run *r = o->run;
	size_t n;

	if (c->start == 0)
		return;
	n = (size_t)(c->p - (o->enc + o->enc_len));
	o->enc_len += n;
	r->len += n;
	r->nblk += c->start - c->left;
	r->ninsn += c->ninsn;
	r->last_ip = c->prev_ip;
	r->last_time = c->prev_time;
	c->start = c->left = 0;
}

/*
 * Encodes a block at c: one ptdec_out_push_final may take (a class that
 * ends at a branch, no flags, a known time) whose length, instruction
 * count and class byte were packed once (blks_block_rest, not 0).
 * Returns 1, or 0 when c holds nothing or no more room: end the cursor
 * and push the block with ptdec_out_push_final.
 */
static inline int
ptdec_cursor_put_rest(struct ptdec_cursor *c, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, uint32_t rest, uint64_t time)
{
	if (c->left == 0)
		return 0;
	c->left--;
	c->p = blks_put_block_rest(c->p, ip, rest, time, c->prev_ip,
	    c->prev_time);
	c->prev_ip = end_ip;
	c->prev_time = time;
	c->ninsn += ninsn;
	return 1;
}

/*
 * A backend that may give up on what it pushed (and decode it another
 * way) marks where that starts: until ptdec_out_unmark(), nothing pushed
 * since the mark is written (the arrays grow instead), and
 * ptdec_out_rollback() drops it.  One mark at a time; decode_chunk
 * releases it before it returns.
 */
struct ptdec_out_mark {
	size_t nr_blk, nr_other, enc_len;
};

void ptdec_out_mark(struct ptdec_out *o, struct ptdec_out_mark *m);

/* Drops every record pushed since m; the mark stays held. */
void ptdec_out_rollback(struct ptdec_out *o, const struct ptdec_out_mark *m);

/* Releases the mark: what was pushed stays. */
void ptdec_out_unmark(struct ptdec_out *o);

/*
 * A decoder.  worker_new makes one worker's state for one thread (its own
 * decoder and image copy); decode_chunk appends the chunk's records to out
 * (BLOCK, EVENT and GAP records only) and returns 0 or -ERR_NOMEM /
 * -ERR_INTERNAL: trace errors are records, not failures.  Workers are used
 * by one thread at a time.
 */
struct ptdec_backend {
	const char *name;
	int (*worker_new)(void **worker, const struct ptdec_config *cfg,
	    const struct ptdec_thread *th, struct error *e);
	int (*decode_chunk)(void *worker, const struct ptdec_chunk *c,
	    struct ptdec_out *out, struct error *e);
	void (*worker_free)(void *worker);
};

extern const struct ptdec_backend ptdec_backend_libipt;

/*
 * The fast decoder (lib/dec/ptdec_fast.c): libipt's packets, ptkit's own flow
 * walker over cached basic blocks; hands what it does not handle to
 * libipt.  Its records equal ptdec_backend_libipt's.
 */
extern const struct ptdec_backend ptdec_backend_fast;

/*
 * Where records go, in order.  emit returns 0 or a negative err_code
 * (with e filled), which stops the decode.  emit_blocks, when set, takes
 * runs of BLOCK records (n >= 1) instead of emit, which then sees only
 * the others; same returns.  emit_encoded, when set (and the decode has
 * no window), takes runs of BLOCK records already encoded as block
 * stream bytes (blks_write_encoded's arguments): the first is encoded
 * against the end ip and time of the record handed over just before.
 */
struct ptdec_sink {
	int (*emit)(void *ctx, const struct blks_record *r, struct error *e);
	void *ctx;
	int (*emit_blocks)(void *ctx, const struct blks_block *b, size_t n,
	    struct error *e);
	int (*emit_encoded)(void *ctx, const uint8_t *p, size_t len,
	    uint64_t last_ip, uint64_t last_time, struct error *e);
};

/*
 * Finds every PSB of th's trace and groups the intervals into chunks of at
 * least chunk_bytes (0: one chunk).  Fills *plan (free with
 * ptdec_plan_free).  Returns 0 or -ERR_NOMEM.
 */
int ptdec_split(const struct ptdec_thread *th, size_t chunk_bytes,
    struct ptdec_plan *plan, struct error *e) PTKIT_MUST_CHECK;

void ptdec_plan_free(struct ptdec_plan *plan);

/*
 * The TSC in each PSB+ of plan (plan->nr_psb of them, into tsc[]; 0 for a
 * PSB+ without one).  Returns 0 or -ERR_NOMEM.
 */
int ptdec_psb_tscs(const struct ptdec_thread *th, const struct ptdec_plan *plan,
    uint64_t *tsc, struct error *e) PTKIT_MUST_CHECK;

/*
 * Decodes one thread with backend: emits, in order, a GAP for the bytes
 * before the first PSB (ring_start when th->wrapped), then every chunk's
 * records, filtered to [from_ns, to_ns].  With a window, PSB intervals
 * whose PSB times (TSC in PSB+) put them outside it are not decoded.  Does not emit THREAD or END:
 * *end receives the counters for the caller's END record.
 * Returns 0, or -ERR_NOMEM, -ERR_IO (threads), or the sink's error.
 */
int ptdec_decode_thread(const struct ptdec_backend *backend,
    const struct ptdec_config *cfg, const struct ptdec_thread *th,
    const struct ptdec_sink *sink, struct blks_end *end, struct error *e)
    PTKIT_MUST_CHECK;

#endif

/*
 * blkstream: the block stream that ptdecode writes and ptspans reads.
 *
 * Owns the binary format of man/ptkit-blocks.5: the file header (magic,
 * version, header size, time conversion, snapshot path), the record
 * framing (type byte, LEB128 payload length, payload), the delta and
 * varint encoding of every record, a buffered writer, a streaming reader
 * that bounds-checks every length against the bytes that exist and names
 * the byte offset of anything malformed, and the JSON Lines rendering of
 * the same records (ptdecode --format jsonl): the writer is blkstream.c,
 * the reader blkstream_read.c, the names and JSON Lines blkstream_jsonl.c.
 *
 * Records are grouped by thread: MAP records may appear anywhere outside a
 * thread group; a THREAD record opens a group, BLOCK, EVENT and GAP records
 * belong to the open group, END closes it, and EOS ends the stream.  The
 * delta state (previous block end ip, previous time) starts at 0 in every
 * THREAD record, so each group decodes on its own.
 *
 * Times in records are nanoseconds since the header's time_base_ns (the
 * capture start, in perf-clock nanoseconds); the header's TIME_CONV values
 * say how the decoder got there from TSC.
 */
#ifndef PTKIT_BLKSTREAM_H
#define PTKIT_BLKSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

struct jsonw;

#define BLKS_MAGIC "\x89PTKBLK\n"	/* 8 bytes, no NUL */
#define BLKS_MAGIC_LEN 8
#define BLKS_VERSION 1
#define BLKS_HEADER_FIXED 56		/* header bytes before the path */
#define BLKS_PATH_MAX 4096		/* snapshot, map name and image paths */
#define BLKS_TEXT_MAX 256		/* GAP text, THREAD name */
#define BLKS_BUILD_ID_MAX 32
#define BLKS_PAYLOAD_MAX (3 * BLKS_PATH_MAX)	/* largest legal payload */

enum blks_type {
	BLKS_MAP = 1,
	BLKS_THREAD = 2,
	BLKS_BLOCK = 3,
	BLKS_EVENT = 4,
	BLKS_GAP = 5,
	BLKS_END = 6,
	BLKS_EOS = 7,
};

/* Which decoder made the stream (header). */
enum blks_decoder {
	BLKS_DECODER_NATIVE = 0,	/* libipt's block decoder */
	BLKS_DECODER_FAST = 1,
	BLKS_DECODER_PERF = 2,		/* converted from perf script */
};

/* Header flags. */
#define BLKS_HDR_TIMED 0x1u	/* record times come from the trace */

struct blks_header {
	uint16_t version;
	uint32_t flags;
	uint32_t decoder;		/* enum blks_decoder */
	uint64_t time_shift, time_mult, time_zero;	/* TIME_CONV */
	uint64_t time_base_ns;		/* perf ns of record time 0 */
	const char *snapshot;		/* NUL-terminated; "" if unknown */
};

/* MAP flags. */
#define BLKS_MAP_MISSING 0x1u	/* image not found: decode gaps expected */
#define BLKS_MAP_LIVE 0x2u	/* image read from the live filesystem */
#define BLKS_MAP_JIT 0x4u	/* code made at run time: image is a dump
				   of its bytes, symbols its JIT map */

struct blks_map {
	uint32_t pid;
	uint32_t exec;			/* which program of pid: 0 the first,
					   n after its nth exec.  Written only
					   when set, so older readers skip it */
	uint32_t flags;
	uint64_t start, size, pgoff;	/* [start, start+size) maps file pgoff */
	uint8_t build_id_size;
	uint8_t build_id[BLKS_BUILD_ID_MAX];
	const char *name;		/* the path as the process mapped it */
	const char *image;		/* the file to read (archive copy) */
	const char *symbols;		/* JIT map naming its functions (perf's
					   /tmp/perf-PID.map format); NULL or
					   "" when none.  Written only when
					   set, so older readers skip it */
};

/*
 * Whose code an address is, as one key: the pid and which program of it
 * (an exec gives a process new code at the same addresses).  Linux pids
 * stay below 2^22 (PID_MAX_LIMIT), which leaves the program 10 bits.
 */
#define BLKS_EXEC_SHIFT 22
#define BLKS_EXEC_MAX 1023u
static inline uint32_t
blks_space(uint32_t pid, uint32_t exec)
{
	return pid | (exec > BLKS_EXEC_MAX ? BLKS_EXEC_MAX : exec) <<
	    BLKS_EXEC_SHIFT;
}

/* THREAD flags. */
#define BLKS_THREAD_WRAPPED 0x1u	/* the ring wrapped: older trace lost */

struct blks_thread {
	uint32_t tid, pid;
	uint32_t flags;
	uint64_t trace_bytes;		/* bytes of PT in this thread's ring */
	const char *name;		/* comm; "" if unknown */
};

/* BLOCK flags (libipt's pt_block bits). */
#define BLKS_BLOCK_SPECULATIVE 0x1u
#define BLKS_BLOCK_TRUNCATED 0x2u	/* last insn crosses a section end */

/*
 * A run of instructions ending in a change of flow (or an event).
 * iclass is libipt's enum pt_insn_class of the last instruction.
 */
struct blks_block {
	uint64_t ip, end_ip;		/* first and last instruction */
	uint32_t ninsn;
	uint8_t iclass;
	uint8_t flags;
	uint8_t mode;			/* enum pt_exec_mode */
	uint64_t time;			/* ns since time_base_ns */
};

enum blks_event_kind {
	BLKS_EV_ENABLED = 1,		/* arg: 1 if resumed */
	BLKS_EV_DISABLED = 2,		/* arg: reason; at: async source ip */
	BLKS_EV_ASYNC_BRANCH = 3,	/* ip: target; at: source */
	BLKS_EV_OVERFLOW = 4,
	BLKS_EV_EXEC_MODE = 5,		/* arg: enum pt_exec_mode */
	BLKS_EV_PAGING = 6,		/* arg: cr3; flags: NON_ROOT, ASYNC */
	BLKS_EV_TSX = 7,		/* arg: bit0 speculative, bit1 aborted */
	BLKS_EV_STOP = 8,
	BLKS_EV_VMCS = 9,		/* arg: vmcs base; flags: ASYNC */
	BLKS_EV_EXSTOP = 10,
	BLKS_EV_MWAIT = 11,		/* arg: hints, at: ext */
	BLKS_EV_PWRE = 12,		/* arg: state | sub_state << 8 | hw << 16 */
	BLKS_EV_PWRX = 13,		/* arg: last | deepest << 8 | reasons << 16 */
	BLKS_EV_PTWRITE = 14,		/* arg: payload */
	BLKS_EV_CBR = 15,		/* arg: core:bus ratio */
	BLKS_EV_EXEC = 16,		/* the process exec'd: arg is the
					   program's index (MAP exec) */
	BLKS_EV_KIND_MAX = 17
};

/* Reasons for BLKS_EV_DISABLED. */
enum blks_disable_reason {
	BLKS_DIS_SYNC = 0,	/* a branch left the traced region (ret, syscall) */
	BLKS_DIS_ASYNC = 1,	/* interrupt, fault or signal at `at` */
};

/* EVENT flags. */
#define BLKS_EVF_IP_SUPPRESSED 0x1u
#define BLKS_EVF_STATUS_UPDATE 0x2u
#define BLKS_EVF_NON_ROOT 0x4u
#define BLKS_EVF_ASYNC 0x8u

struct blks_event {
	uint8_t kind;			/* enum blks_event_kind */
	uint8_t flags;
	uint64_t ip;			/* where it binds; 0 if suppressed */
	uint64_t at;			/* second ip (see the kinds) */
	uint64_t arg;
	uint64_t time;
};

enum blks_gap_cause {
	BLKS_GAP_DECODE_ERROR = 1,	/* libipt error; resynced at next PSB */
	BLKS_GAP_UNKNOWN_IMAGE = 2,	/* no image holds ip */
	BLKS_GAP_RING_START = 3,	/* the ring wrapped: history before lost */
	BLKS_GAP_OVERFLOW = 4,		/* the CPU dropped packets (OVF) */
	BLKS_GAP_LOST = 5,		/* data lost (AUX truncated, out of window) */
	BLKS_GAP_CAUSE_MAX = 6
};

struct blks_gap {
	uint8_t cause;			/* enum blks_gap_cause */
	uint64_t ip;			/* last ip known, 0 if none */
	uint64_t time;
	uint64_t offset;		/* byte offset in the thread's trace */
	uint64_t bytes_skipped;		/* trace bytes not decoded */
	int32_t errcode;		/* libipt's -pte_*, 0 if none */
	const char *text;		/* pt_errstr() or a sentence; may be "" */
};

/* END counters, in this order in the record. */
enum blks_counter {
	BLKS_C_BLOCKS,
	BLKS_C_INSNS,
	BLKS_C_EVENTS,
	BLKS_C_GAPS,
	BLKS_C_DECODE_ERRORS,
	BLKS_C_UNKNOWN_IMAGE,
	BLKS_C_OVERFLOWS,
	BLKS_C_TRACE_BYTES,
	BLKS_C_BYTES_SKIPPED,
	BLKS_C_PSBS,		/* sync points: the PSBs decoding started at */
	BLKS_C_FALLBACKS,	/* PSB intervals the fast decoder gave libipt */
	BLKS_C_NR
};

struct blks_end {
	uint32_t tid;
	uint64_t c[BLKS_C_NR];		/* indexed by enum blks_counter */
};

struct blks_eos {
	uint32_t nr_threads;
};

struct blks_record {
	uint8_t type;			/* enum blks_type */
	union {
		struct blks_map map;
		struct blks_thread thread;
		struct blks_block block;
		struct blks_event event;
		struct blks_gap gap;
		struct blks_end end;
		struct blks_eos eos;
	} u;
};

/* Names used in JSON Lines and messages; "unknown" for a value out of range. */
const char *blks_type_name(unsigned type);
const char *blks_event_name(unsigned kind);
const char *blks_gap_cause_name(unsigned cause);
const char *blks_counter_name(unsigned counter);
const char *blks_decoder_name(unsigned decoder);

/* ----------------------------------------------------------------- */
/* Writer */

struct blks_writer;

/*
 * Creates a writer that writes to fd (borrowed: not closed) or to out
 * (borrowed: flushed, not closed), and writes the header.  Records are
 * buffered; blks_writer_close() flushes.  Returns 0 and *out, or -ERR_NOMEM,
 * -ERR_INVALID (a path longer than BLKS_PATH_MAX), -ERR_IO.
 */
int blks_writer_open_fd(struct blks_writer **out, int fd,
    const struct blks_header *h, struct error *e) PTKIT_MUST_CHECK;
int blks_writer_open_file(struct blks_writer **out, FILE *f,
    const struct blks_header *h, struct error *e) PTKIT_MUST_CHECK;

/*
 * Appends one record.  Returns 0, -ERR_INVALID (a string or build-id too
 * long, an unknown type, a BLOCK/EVENT/GAP/END outside a thread group, a
 * THREAD inside one, an END whose tid is not the open thread's), -ERR_IO.
 * After an error the writer only accepts blks_writer_close().
 */
int blks_write(struct blks_writer *w, const struct blks_record *r,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Appends n BLOCK records: the same bytes and returns as n blks_write()
 * calls, for a few ns a block (no struct blks_record, one call).  Stops at
 * the first block that fails.
 */
int blks_write_blocks(struct blks_writer *w, const struct blks_block *b,
    size_t n, struct error *e) PTKIT_MUST_CHECK;

/*
 * Appends BLOCK records encoded elsewhere with blks_put_block (len bytes
 * at p): the caller encoded the first against the writer's delta state
 * (the end ip and time of the record written last, which it knows), and
 * last_ip / last_time are the end ip and time of the last block in p,
 * the state the next record is encoded against.  Large runs go to the fd
 * without a copy.  Returns 0, -ERR_INVALID (outside a thread group),
 * -ERR_IO.
 */
int blks_write_encoded(struct blks_writer *w, const uint8_t *p, size_t len,
    uint64_t last_ip, uint64_t last_time, struct error *e) PTKIT_MUST_CHECK;

/* ----------------------------------------------------------------- */
/* Encoding BLOCK records outside the writer (decoder workers) */

/*
 * Room blks_put_block may use for one record: frame, four varints, the
 * class byte, and one byte it may write past the record's end.
 */
#define BLKS_BLOCK_MAX 43

/* The format's signed varints: a difference, zigzagged. */
static inline uint64_t
blks_zigzag(uint64_t delta)
{
	int64_t s = (int64_t)delta;

	return ((uint64_t)s << 1) ^ (uint64_t)(s >> 63);
}

/*
 * The byte after a BLOCK's counts: class | flags << 4 | mode << 6, or -1
 * when a value does not fit its bits (blks_write refuses the block).
 */
static inline int
blks_class_byte(unsigned iclass, unsigned flags, unsigned mode)
{
	if (iclass > 15 || flags > 3 || mode > 3)
		return -1;
	return (int)(iclass | flags << 4 | mode << 6);
}

/* blks_put_block for the shapes its fast path leaves. */
uint8_t *blks_put_block_varints(uint8_t *p, uint64_t dip, uint64_t len,
    uint32_t ninsn, uint64_t cls, uint64_t dt);

/*
 * Writes one whole BLOCK record (frame and payload) at p, encoded against
 * the delta state prev_ip / prev_time, with cls from blks_class_byte;
 * returns its end.  p must have BLKS_BLOCK_MAX bytes of room.  The one
 * encoding of a block: the writer uses it too.
 *
 * Most blocks take 7 or 8 bytes: every value but the ip delta fits one
 * byte, the ip delta one or two (which one varies from block to block, so
 * it is chosen without a branch).  Those are built in a register and
 * stored at once, on a little-endian machine.
 */
static inline uint8_t *
blks_put_block(uint8_t *p, uint64_t ip, uint64_t end_ip, uint32_t ninsn,
    uint64_t cls, uint64_t time, uint64_t prev_ip, uint64_t prev_time)
{
	uint64_t dip = blks_zigzag(ip - prev_ip);
	uint64_t len = blks_zigzag(end_ip - ip);
	uint64_t dt = blks_zigzag(time - prev_time);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (((dip >> 14) | ((len | ninsn | dt) >> 7)) == 0) {
		uint64_t two = (dip & 0x7f) | 0x80 | (dip >> 7) << 8;
		uint64_t big = dip >= 0x80;
		/* two when big, dip when not, without a branch. */
		uint64_t enc = dip ^ ((dip ^ two) & (0 - big));
		uint64_t rest = len | (uint64_t)ninsn << 8 | cls << 16 |
		    dt << 24;
		uint64_t w = BLKS_BLOCK | (5 + big) << 8 | enc << 16 |
		    rest << (24 + 8 * big);

		__builtin_memcpy(p, &w, sizeof(w));
		return p + 7 + big;
	}
#endif
	return blks_put_block_varints(p, dip, len, ninsn, cls, dt);
}

/* Bytes handed to the fd or FILE so far plus those buffered. */
uint64_t blks_writer_bytes(const struct blks_writer *w);

/*
 * Flushes and frees w (NULL is fine).  Does not write EOS: the caller does,
 * so that a stream cut short by an error stays recognisably incomplete.
 * Returns 0 or -ERR_IO (or the error that made the writer unusable).
 */
int blks_writer_close(struct blks_writer *w, struct error *e) PTKIT_MUST_CHECK;

/*
 * A block's length, instruction count and class byte packed for
 * blks_put_block_rest, for a block known before its ip and time (a run of
 * code the decoder meets again and again): 0 when they do not fit the
 * short form (then use blks_put_block).
 */
static inline uint32_t
blks_block_rest(uint64_t ip, uint64_t end_ip, uint32_t ninsn, uint64_t cls)
{
	uint64_t len = blks_zigzag(end_ip - ip);

	if (len > 0x7f || ninsn > 0x7f || cls == 0 || cls > 0xff)
		return 0;
	return (uint32_t)(len | (uint64_t)ninsn << 8 | cls << 16);
}

/*
 * blks_put_block of the block at ip whose other fields rest packs
 * (blks_block_rest, not 0): the same bytes, for less work.
 */
static inline uint8_t *
blks_put_block_rest(uint8_t *p, uint64_t ip, uint32_t rest, uint64_t time,
    uint64_t prev_ip, uint64_t prev_time)
{
	uint64_t dip = blks_zigzag(ip - prev_ip);
	uint64_t dt = blks_zigzag(time - prev_time);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (((dip >> 14) | (dt >> 7)) == 0) {
		uint64_t two = (dip & 0x7f) | 0x80 | (dip >> 7) << 8;
		uint64_t big = dip >= 0x80;
		uint64_t enc = dip ^ ((dip ^ two) & (0 - big));
		uint64_t w = BLKS_BLOCK | (5 + big) << 8 | enc << 16 |
		    (rest | dt << 24) << (24 + 8 * big);

		__builtin_memcpy(p, &w, sizeof(w));
		return p + 7 + big;
	}
#endif
	return blks_put_block_varints(p, dip, rest & 0xff, rest >> 8 & 0xff,
	    rest >> 16, dt);
}

/* ----------------------------------------------------------------- */
/* Reader */

struct blks_reader;

/*
 * Reads and checks the header from in (borrowed).  name is used in
 * messages.  Returns 0 and *out, or -ERR_FORMAT (bad magic, header size),
 * -ERR_UNSUPPORTED (a version this reader does not know), -ERR_TRUNCATED,
 * -ERR_IO, -ERR_NOMEM.  Messages name the byte offset.
 */
int blks_reader_open(struct blks_reader **out, FILE *in, const char *name,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * As blks_reader_open, reading fd (borrowed: not closed; nothing must
 * have read from it through a FILE) on a thread of the reader's own, a
 * chunk of up to 1 MiB ahead of the caller, who then spends no time in
 * read(2).  Without a thread (pthread_create failed) it reads in the
 * caller's.
 */
int blks_reader_open_fd(struct blks_reader **out, int fd, const char *name,
    struct error *e) PTKIT_MUST_CHECK;

/* As blks_reader_open, over len bytes at buf (borrowed). */
int blks_reader_open_mem(struct blks_reader **out, const void *buf,
    size_t len, const char *name, struct error *e) PTKIT_MUST_CHECK;

/* The header; valid until blks_reader_free(). */
const struct blks_header *blks_reader_header(const struct blks_reader *r);

/*
 * Reads the next record into *rec (strings point into the reader and stay
 * valid until the next call).  Records of unknown type are skipped and
 * counted.  Returns 1 for a record, 0 after the EOS record, or -ERR_FORMAT
 * (a malformed record, a record out of its group, bytes after EOS),
 * -ERR_TRUNCATED (the stream ends inside a record or before EOS), -ERR_IO.
 * Messages name the byte offset of the record.  After an error or 0, keeps
 * returning the same.
 */
int blks_read(struct blks_reader *r, struct blks_record *rec,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Reads the BLOCK records that come next, at most max, into b, for a few
 * ns each (no call per record, the same checks): a loop over the blocks
 * between blks_read() calls.  Returns how many; 0 says nothing, only
 * that blks_read() must read the next record (which may be a BLOCK too:
 * one of a rarer shape, or one past the buffered bytes).  Never fails:
 * errors are blks_read()'s.
 */
size_t blks_read_blocks(struct blks_reader *r, struct blks_block *b,
    size_t max);

/*
 * Reading BLOCK records where they lie, with no struct per record copied
 * out: a run is the reader's window from its position on, and
 * blks_run_next decodes the records there one by one, for a consumer that
 * uses each block at once (ptspans' engine, cs_feed_run).  The same
 * records, checks and values as blks_read_blocks; the reader is not
 * touched until blks_run_end.
 */
struct blks_run {
	const uint8_t *p;		/* the next record */
	const uint8_t *end;		/* a record at p < end has 8 bytes */
	uint64_t prev_ip, prev_time;	/* the delta state at p */
};

/*
 * Opens a run at the reader's position: 1, or 0 when blks_read must
 * read what comes next (outside a thread group, after an error or EOS).
 * Between blks_run_begin and blks_run_end only the run may be used.
 */
int blks_run_begin(struct blks_reader *r, struct blks_run *run)
   ;

/* Puts the reader after the records the run decoded. */
void blks_run_end(struct blks_reader *r, const struct blks_run *run);

/* The format's signed varints, back to a difference. */
static inline uint64_t
blks_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/*
 * The next BLOCK record of the run into *b: 1, or 0 when the record there
 * has a rarer shape or the window ends (blks_read's turn: run_end, then
 * blks_read).  Only the shape blks_put_block gives most blocks is taken
 * here (7 or 8 bytes: a one-byte length, an ip delta of one or two
 * bytes, every other value one byte), decoded from one 64-bit load as a
 * little-endian machine holds it; the general decoder takes the rest,
 * with the same result.
 */
static inline int
blks_run_next(struct blks_run *run, struct blks_block *b)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w, big, dip, rest;

	if (run->p >= run->end)
		return 0;
	__builtin_memcpy(&w, run->p, sizeof(w));
	/* No branch on big: it changes from block to block. */
	big = w >> 23 & 1;
	dip = (w >> 16 & 0x7f) | (w >> 17 & 0x3f80 & (0 - big));
	rest = w >> (24 + 8 * big);
	/*
	 * Type BLOCK and a length of exactly 5 + big; the ip delta no longer
	 * than big says, len, ninsn and dt one byte each (rest holds them
	 * in bytes 0, 1 and 3).
	 */
	if ((((w & 0xffff) ^ (0x0503 + (big << 8))) |
	    (rest & 0x80008080) | (w & 0x80000000 & (0 - big))) != 0)
		return 0;
	b->ip = run->prev_ip + blks_unzigzag(dip);
	b->end_ip = b->ip + blks_unzigzag(rest & 0xff);
	b->ninsn = (uint32_t)(rest >> 8 & 0xff);
	b->iclass = rest >> 16 & 0xf;
	b->flags = rest >> 20 & 0x3;
	b->mode = rest >> 22 & 0x3;
	b->time = run->prev_time + blks_unzigzag(rest >> 24 & 0xff);
	run->prev_ip = b->end_ip;
	run->prev_time = b->time;
	run->p += 7 + big;
	return 1;
#else
	(void)run;
	(void)b;
	return 0;
#endif
}

/*
 * The class byte's fields (iclass, flags, mode) of the block the last
 * blks_run_next on run returned (it returned 1): a consumer that leaves
 * them unread in most blocks takes them here for the few that need
 * them.  The byte is the record's last but one.
 */
static inline void
blks_run_class(const struct blks_run *run, struct blks_block *b)
{
	uint8_t cls = run->p[-2];

	b->iclass = cls & 0xf;
	b->flags = (cls >> 4) & 0x3;
	b->mode = cls >> 6;
}

/* Byte offset of the next unread byte. */
uint64_t blks_reader_offset(const struct blks_reader *r);

/* Records of unknown type skipped so far. */
uint64_t blks_reader_unknown(const struct blks_reader *r);

void blks_reader_free(struct blks_reader *r);

/* ----------------------------------------------------------------- */
/* JSON Lines */

/*
 * Writes the header, or a record, as one JSON object and a newline.
 * tid is the open thread (added to BLOCK, EVENT, GAP lines).  Addresses
 * are "0x..." strings, everything else numbers or names.  Errors are
 * sticky in w (jsonw_finish reports them).
 */
void blks_jsonl_header(struct jsonw *w, const struct blks_header *h);
void blks_jsonl_record(struct jsonw *w, const struct blks_record *r,
    uint32_t tid);

#endif

/*
 * perfdata: writing and reading perf.data (PERFILE2) files that carry an
 * Intel PT trace.
 *
 * Owns the on-disk perf.data format: the file header, the attr section,
 * the kernel and perf-tool records a snapshot needs, their sample_id
 * trailers, the feature sections, and decompression of the records that
 * `perf record -z` writes.  What stock perf 6.1 accepts, and why each
 * field is what it is, is in shared/design/notes/perfdata.md; the layout
 * a snapshot uses is in man/ptkit-snapshot.5.
 *
 * Writer: perfdata_writer_open() takes the intel_pt configuration (attr
 * config, PMU type, the 17 priv values, host strings) and writes records
 * in the order the caller gives them; perfdata_writer_close() writes the
 * HEADER_AUXTRACE index, HEADER_BUILD_ID and the string features, then the
 * file header.  Every kernel record gets the sample_id trailer
 * (TID|TIME|[CPU]|IDENTIFIER) from a struct perfdata_sid.  Callers are
 * responsible for the two rules perf imposes on the content: sideband
 * (COMM, MMAP2) times earlier than the first TSC of the trace, and every
 * AUXTRACE payload ending on a PT packet boundary.  The writer pads each
 * payload to 8 bytes with zero (PT PAD) bytes itself.
 *
 * Reader: perfdata_read() maps the file and parses it completely into a
 * struct perfdata: attrs, intel_pt priv values, TIME_CONV, sideband
 * (MMAP/MMAP2, COMM, ITRACE_START, EXIT, AUX), AUXTRACE chunks grouped into
 * queues, build-ids and host strings.  Every length is checked against
 * the bytes that exist; malformed input gives ERR_FORMAT or ERR_TRUNCATED
 * with the file offset in the message.  Unknown record types and feature
 * bits are skipped and counted (nr_unknown_records, nr_unknown_features).
 * AUXTRACE data points into the mapping (or into a buffer the reader owns
 * for records that came out of a COMPRESSED record), valid until
 * perfdata_free().
 *
 * Host byte order is assumed little-endian (x86-64); big-endian
 * (byte-swapped magic) files are rejected with ERR_UNSUPPORTED.
 */
#ifndef PTKIT_PERFDATA_H
#define PTKIT_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Record types written by perf tools, not the kernel (tools/lib/perf). */
enum perfdata_user_type {
	PERFDATA_REC_HEADER_ATTR = 64,
	PERFDATA_REC_BUILD_ID = 67,
	PERFDATA_REC_FINISHED_ROUND = 68,
	PERFDATA_REC_ID_INDEX = 69,
	PERFDATA_REC_AUXTRACE_INFO = 70,
	PERFDATA_REC_AUXTRACE = 71,
	PERFDATA_REC_AUXTRACE_ERROR = 72,
	PERFDATA_REC_THREAD_MAP = 73,
	PERFDATA_REC_CPU_MAP = 74,
	PERFDATA_REC_TIME_CONV = 79,
	PERFDATA_REC_COMPRESSED = 81,
	PERFDATA_REC_FINISHED_INIT = 82,
	PERFDATA_REC_USER_MAX = 83	/* first type we do not know */
};

/* Feature bits (adds_features) this module reads or writes. */
enum perfdata_feature {
	PERFDATA_FEAT_BUILD_ID = 2,
	PERFDATA_FEAT_HOSTNAME = 3,
	PERFDATA_FEAT_OSRELEASE = 4,
	PERFDATA_FEAT_VERSION = 5,
	PERFDATA_FEAT_ARCH = 6,
	PERFDATA_FEAT_NRCPUS = 7,
	PERFDATA_FEAT_CPUDESC = 8,
	PERFDATA_FEAT_CPUID = 9,
	PERFDATA_FEAT_CMDLINE = 11,
	PERFDATA_FEAT_AUXTRACE = 18,
	PERFDATA_FEAT_COMPRESSED = 27,
	PERFDATA_FEAT_KNOWN_MAX = 32	/* bits at or above are "unknown" */
};

/* Index of each intel_pt AUXTRACE_INFO priv value (perf's intel-pt.h). */
enum perfdata_pt_priv {
	PERFDATA_PT_PMU_TYPE,
	PERFDATA_PT_TIME_SHIFT,
	PERFDATA_PT_TIME_MULT,
	PERFDATA_PT_TIME_ZERO,
	PERFDATA_PT_CAP_USER_TIME_ZERO,
	PERFDATA_PT_TSC_BIT,
	PERFDATA_PT_NORETCOMP_BIT,
	PERFDATA_PT_HAVE_SCHED_SWITCH,
	PERFDATA_PT_SNAPSHOT_MODE,
	PERFDATA_PT_PER_CPU_MMAPS,
	PERFDATA_PT_MTC_BIT,
	PERFDATA_PT_MTC_FREQ_BITS,
	PERFDATA_PT_TSC_CTC_N,
	PERFDATA_PT_TSC_CTC_D,
	PERFDATA_PT_CYC_BIT,
	PERFDATA_PT_MAX_NONTURBO_RATIO,
	PERFDATA_PT_FILTER_STR_LEN,
	PERFDATA_PT_PRIV_NR		/* 17 */
};

/* AUXTRACE_INFO type for Intel PT. */
#define PERFDATA_AUXTRACE_INTEL_PT 1

/* intel_pt attr.config bits (/sys/bus/event_source/devices/intel_pt/format). */
#define PERFDATA_PT_CFG_PT		(1ULL << 0)
#define PERFDATA_PT_CFG_CYC		(1ULL << 1)
#define PERFDATA_PT_CFG_MTC		(1ULL << 9)
#define PERFDATA_PT_CFG_TSC		(1ULL << 10)
#define PERFDATA_PT_CFG_NORETCOMP	(1ULL << 11)
#define PERFDATA_PT_CFG_PTW		(1ULL << 12)
#define PERFDATA_PT_CFG_BRANCH		(1ULL << 13)
#define PERFDATA_PT_CFG_MTC_PERIOD_SHIFT 14	/* 4 bits: 14..17 */
#define PERFDATA_PT_CFG_MTC_PERIOD_MASK	(0xfULL << 14)
#define PERFDATA_PT_CFG_CYC_THRESH_SHIFT 19	/* 4 bits: 19..22 */
#define PERFDATA_PT_CFG_PSB_PERIOD_SHIFT 24	/* 4 bits: 24..27 */

#define PERFDATA_BUILD_ID_MAX 20
#define PERFDATA_NO_CPU UINT32_MAX	/* cpu = -1: per-thread buffers */

/* MMAP2 misc bit: the record carries a build-id instead of dev/inode. */
#define PERFDATA_MISC_MMAP_BUILD_ID (1U << 14)
/* COMM misc bit: the name changed because of exec. */
#define PERFDATA_MISC_COMM_EXEC (1U << 13)
/* AUX flags bit: data was lost (ring overwritten before it was read). */
#define PERFDATA_AUX_FLAG_TRUNCATED 1ULL

/*
 * TIME_CONV: perf time (ns) from TSC:
 *   ns = time_zero + (tsc >> shift) * mult + (((tsc & ((1<<shift)-1)) * mult) >> shift)
 */
struct perfdata_time_conv {
	uint64_t time_shift;
	uint64_t time_mult;
	uint64_t time_zero;
	uint64_t time_cycles;
	uint64_t time_mask;
	uint8_t cap_user_time_zero;
	uint8_t cap_user_time_short;
};

/*
 * The intel_pt AUXTRACE_INFO payload: the priv values (indexed by enum
 * perfdata_pt_priv) and the optional address-filter string.  The reader
 * sets nr_priv to the number of values the record held (older perf wrote
 * fewer); missing values read as 0.
 */
struct perfdata_pt_info {
	uint64_t priv[PERFDATA_PT_PRIV_NR];
	unsigned nr_priv;
	char *filter;		/* NULL or NUL-terminated; owned by its holder */
};

/*
 * sample_id trailer values of a kernel record.  cpu is PERFDATA_NO_CPU in
 * per-thread mode.  The writer fills the id itself.
 */
struct perfdata_sid {
	uint32_t pid;
	uint32_t tid;
	uint64_t time;		/* perf time, ns */
	uint32_t cpu;
	uint64_t id;		/* reader: the id found (0 if none) */
};

struct perfdata_mmap {
	struct perfdata_sid sid;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	int is_mmap2;		/* reader: 0 for an old PERF_RECORD_MMAP */
	uint16_t misc;		/* reader: header.misc as written */
	/* dev/inode form, when build_id_size == 0 */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	/* build-id form (PERFDATA_MISC_MMAP_BUILD_ID), when build_id_size > 0 */
	uint8_t build_id_size;
	uint8_t build_id[PERFDATA_BUILD_ID_MAX];
	uint32_t prot, flags;
	const char *filename;	/* reader: borrowed from the perfdata */
	uint64_t file_offset;	/* reader: where the record starts */
};

struct perfdata_comm {
	struct perfdata_sid sid;
	uint32_t pid, tid;
	int exec;		/* PERFDATA_MISC_COMM_EXEC was set */
	const char *comm;	/* reader: borrowed from the perfdata */
	uint64_t file_offset;
};

/* PERF_RECORD_EXIT (and, with is_fork, PERF_RECORD_FORK: same layout). */
struct perfdata_task {
	struct perfdata_sid sid;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
	int is_fork;
	uint64_t file_offset;
};

struct perfdata_itrace_start {
	struct perfdata_sid sid;
	uint32_t pid, tid;
	uint64_t file_offset;
};

struct perfdata_aux {
	struct perfdata_sid sid;
	uint64_t aux_offset, aux_size, flags;
	uint64_t file_offset;
};

/*
 * PERF_RECORD_SWITCH (context switch of the sampled task) and
 * PERF_RECORD_SWITCH_CPU_WIDE (which also names the other task): what
 * per-CPU decoding needs to know which thread ran.  sid.cpu is the CPU.
 */
struct perfdata_switch {
	struct perfdata_sid sid;
	int out;		/* switched out (else in) */
	int preempt;		/* out while runnable */
	int cpu_wide;
	uint32_t next_prev_pid;	/* cpu_wide: the task switched to/from */
	uint32_t next_prev_tid;
	uint64_t file_offset;
};

/* One AUXTRACE record: a chunk of one queue's trace. */
struct perfdata_auxtrace {
	uint64_t size;		/* payload bytes (including padding) */
	uint64_t offset;	/* offset in the AUX area (informational) */
	uint64_t reference;	/* a TSC near the data */
	uint32_t idx;		/* queue number */
	uint32_t tid;		/* UINT32_MAX in per-CPU mode */
	uint32_t cpu;		/* PERFDATA_NO_CPU in per-thread mode */
	const uint8_t *data;	/* reader: size bytes, borrowed */
	uint64_t file_offset;	/* reader: where the record header starts */
	int in_compressed;	/* reader: came out of a COMPRESSED record */
};

/*
 * A queue: every AUXTRACE chunk with the same idx, in file order, which
 * perf treats as one continuous stream.  chunk[] indexes
 * struct perfdata.auxtrace.
 */
struct perfdata_queue {
	uint32_t idx, tid, cpu;
	size_t nr_chunks;
	size_t *chunk;
	uint64_t total_size;
};

struct perfdata_build_id {
	int32_t pid;
	uint16_t misc;
	uint8_t size;		/* 20 unless the record says otherwise */
	uint8_t id[PERFDATA_BUILD_ID_MAX];
	char *filename;		/* owned by the perfdata */
};

struct perfdata_attr {
	uint32_t type, size;
	uint64_t config, sample_period, sample_type, read_format, flags;
	uint64_t config1, config2;
	size_t nr_ids;
	uint64_t *ids;
};

/* attr.flags bits used here. */
#define PERFDATA_ATTR_DISABLED		(1ULL << 0)
#define PERFDATA_ATTR_EXCLUDE_KERNEL	(1ULL << 5)
#define PERFDATA_ATTR_EXCLUDE_HV	(1ULL << 6)
#define PERFDATA_ATTR_MMAP		(1ULL << 8)
#define PERFDATA_ATTR_COMM		(1ULL << 9)
#define PERFDATA_ATTR_ENABLE_ON_EXEC	(1ULL << 12)
#define PERFDATA_ATTR_TASK		(1ULL << 13)
#define PERFDATA_ATTR_SAMPLE_ID_ALL	(1ULL << 18)
#define PERFDATA_ATTR_MMAP2		(1ULL << 23)
#define PERFDATA_ATTR_COMM_EXEC		(1ULL << 24)

/* Host strings (cosmetic features); any may be NULL. */
struct perfdata_host {
	const char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	uint32_t nr_cpus_avail, nr_cpus_online;	/* 0: feature not written */
	const char *const *cmdline;	/* the recording's command line */
	size_t nr_cmdline;		/* 0: feature not written */
};

/* A parsed perf.data.  Everything is owned by it; perfdata_free() frees. */
struct perfdata {
	char *path;
	uint64_t file_size;
	uint64_t data_offset, data_size;
	uint64_t features[4];		/* the adds_features bitmap */

	size_t nr_attrs;
	struct perfdata_attr *attrs;

	int has_pt_info;
	struct perfdata_pt_info pt;
	uint32_t auxtrace_info_type;	/* PERFDATA_AUXTRACE_INTEL_PT, or other */
	int has_time_conv;
	struct perfdata_time_conv time_conv;

	size_t nr_mmaps;
	struct perfdata_mmap *mmaps;
	size_t nr_comms;
	struct perfdata_comm *comms;
	size_t nr_tasks;
	struct perfdata_task *tasks;
	size_t nr_itrace_starts;
	struct perfdata_itrace_start *itrace_starts;
	size_t nr_auxs;
	struct perfdata_aux *auxs;
	size_t nr_auxtrace;
	struct perfdata_auxtrace *auxtrace;
	size_t nr_queues;
	struct perfdata_queue *queues;	/* sorted by idx */

	size_t nr_build_ids;
	struct perfdata_build_id *build_ids;
	uint64_t nr_auxtrace_index;	/* entries in HEADER_AUXTRACE */

	/* host strings from the features; NULL when absent; owned */
	char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	uint32_t nr_cpus_avail, nr_cpus_online;

	/* counters */
	uint64_t nr_records;		/* every record parsed, all types */
	uint64_t nr_samples;		/* PERF_RECORD_SAMPLE */
	uint64_t nr_lost;		/* PERF_RECORD_LOST records */
	uint64_t nr_compressed;		/* COMPRESSED records */
	uint64_t decompressed_bytes;
	uint64_t nr_skipped_records;	/* known types not parsed further */
	uint64_t nr_unknown_records;	/* unknown types (also a warning) */
	uint64_t nr_unknown_features;	/* unknown feature bits (warning) */
	uint64_t nr_warnings;
	char first_warning[256];	/* text of the first warning, or "" */

	/* context switches (added after the first API; read-only) */
	size_t nr_switches;
	struct perfdata_switch *switches;
	/* HEADER_AUXTRACE entries that do not point at an AUXTRACE record */
	uint64_t nr_bad_index;

	/* private to the reader */
	void *map;
	size_t map_len;
	void **owned;			/* decompressed buffers, strings */
	size_t nr_owned, cap_owned;
};

/*
 * Reads and parses path.  Returns 0 and *out (free with perfdata_free),
 * or -ERR_IO (cannot open/map), -ERR_FORMAT (malformed: the message names
 * the file offset), -ERR_TRUNCATED (a length points past the end of the
 * file or record: message names the offset), -ERR_UNSUPPORTED (big-endian
 * or pipe-mode file), -ERR_NOMEM.  On failure *out is NULL.
 */
int perfdata_read(struct perfdata **out, const char *path, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * As perfdata_read for the open file fd (which it closes whatever
 * happens), named path in messages: for a reader that opened the file
 * itself, beneath its snapshot (lib/base/beneath).
 */
int perfdata_read_fd(struct perfdata **out, int fd, const char *path,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * As perfdata_read, parsing len bytes at buf; name is used in messages.
 * buf is borrowed and must outlive *out (AUXTRACE data points into it).
 */
int perfdata_read_buffer(struct perfdata **out, const void *buf, size_t len,
    const char *name, struct error *e) PTKIT_MUST_CHECK;

/* Frees a perfdata and everything it owns; NULL is fine. */
void perfdata_free(struct perfdata *pd);

/* The queue with that idx, or NULL. */
const struct perfdata_queue *perfdata_queue_by_idx(const struct perfdata *pd,
    uint32_t idx);

/*
 * Copies a queue's chunks, in order, into one new buffer (*buf, *len; the
 * caller frees *buf).  Returns 0 or -ERR_NOMEM.
 */
int perfdata_queue_data(const struct perfdata *pd,
    const struct perfdata_queue *q, uint8_t **buf, size_t *len,
    struct error *e) PTKIT_MUST_CHECK;

/* Converts a TSC to perf time with the TIME_CONV formula above. */
uint64_t perfdata_tsc_to_perf_time(uint64_t tsc,
    const struct perfdata_time_conv *tc);

/*
 * The intel_pt timing parameters ptdecode needs, derived from the attr
 * config and priv values: mtc_freq is the MTC period exponent (config
 * bits 14..17, 0 when MTC is off), tsc_ctc_n/d the TSC:CTC ratio, and
 * max_nonturbo_ratio.  Returns 0, or -ERR_NOTFOUND when the file has no
 * intel_pt AUXTRACE_INFO or no attr whose type is its PMU type.
 */
struct perfdata_pt_timing {
	uint64_t config;		/* the intel_pt attr's config */
	unsigned mtc_freq;
	uint32_t tsc_ctc_n, tsc_ctc_d;
	uint32_t max_nonturbo_ratio;
	int tsc, mtc, cyc, noretcomp, per_cpu;
};
int perfdata_pt_timing(const struct perfdata *pd,
    struct perfdata_pt_timing *out, struct error *e) PTKIT_MUST_CHECK;

/* ----------------------------------------------------------------- */
/* Writer */

struct perfdata_writer;

struct perfdata_writer_config {
	uint64_t pt_config;		/* intel_pt attr.config (PERFDATA_PT_CFG_*) */
	struct perfdata_pt_info pt;	/* priv[PMU_TYPE] is the attr type */
	int per_cpu;			/* 1: per-CPU buffers; the writer then
					   sets priv[PER_CPU_MMAPS] to 1 */
	int sample_cpu;			/* add PERF_SAMPLE_CPU to sample_type */
	struct perfdata_host host;	/* optional cosmetic features */
};

/* The id in the attr section and in every trailer the writer emits. */
#define PERFDATA_WRITER_ID 1

/*
 * Fills cfg with the defaults that perf 6.1 decodes: pt|tsc|branch (plus
 * noretcomp if noretcomp), PMU type 10, identity time conversion
 * (shift 0, mult 1, zero 0, cap_user_time_zero 1), the format bit values
 * of the intel_pt PMU, per-thread buffers, PERF_SAMPLE_CPU on.
 */
void perfdata_writer_config_default(struct perfdata_writer_config *cfg,
    int noretcomp);

/*
 * Creates path (O_EXCL: it must not exist) and writes the header
 * placeholder and attr section.  Returns 0 and *out, or -ERR_IO,
 * -ERR_EXISTS, -ERR_INVALID (bad config), -ERR_NOMEM.
 */
int perfdata_writer_open(struct perfdata_writer **out, const char *path,
    const struct perfdata_writer_config *cfg, struct error *e) PTKIT_MUST_CHECK;

/*
 * Record writers.  Each returns 0 or -ERR_IO / -ERR_INVALID (a string too
 * long, a build-id longer than 20 bytes) / -ERR_NOMEM.  After an error the
 * writer is unusable except for perfdata_writer_abort.
 */
int perfdata_write_time_conv(struct perfdata_writer *w,
    const struct perfdata_time_conv *tc, struct error *e) PTKIT_MUST_CHECK;
/* AUXTRACE_INFO from cfg->pt (written by the caller once, anywhere). */
int perfdata_write_auxtrace_info(struct perfdata_writer *w, struct error *e)
    PTKIT_MUST_CHECK;
int perfdata_write_comm(struct perfdata_writer *w,
    const struct perfdata_comm *c, struct error *e) PTKIT_MUST_CHECK;
/* MMAP2; build-id form when m->build_id_size > 0. */
int perfdata_write_mmap2(struct perfdata_writer *w,
    const struct perfdata_mmap *m, struct error *e) PTKIT_MUST_CHECK;
int perfdata_write_itrace_start(struct perfdata_writer *w,
    const struct perfdata_itrace_start *it, struct error *e) PTKIT_MUST_CHECK;
int perfdata_write_aux(struct perfdata_writer *w,
    const struct perfdata_aux *a, struct error *e) PTKIT_MUST_CHECK;
/* EXIT, or FORK when t->is_fork. */
int perfdata_write_task(struct perfdata_writer *w,
    const struct perfdata_task *t, struct error *e) PTKIT_MUST_CHECK;
int perfdata_write_finished_round(struct perfdata_writer *w,
    struct error *e) PTKIT_MUST_CHECK;
/*
 * One AUXTRACE record: header from a (size and data are taken from the
 * arguments; a->size, a->data are ignored), then len bytes of data, then
 * zero padding to 8.  The record goes into the HEADER_AUXTRACE index.
 * data must end on a PT packet boundary.
 */
int perfdata_write_auxtrace(struct perfdata_writer *w,
    const struct perfdata_auxtrace *a, const void *data, size_t len,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * A piece of AUXTRACE data: len bytes at mem or, when mem is NULL, at
 * offset off of the file open on fd (named name in messages).  A trace
 * in a file is copied into perf.data by the kernel (copy_file_range),
 * never through a buffer of the whole trace: a ring of many megabytes
 * costs one pass over the page cache instead of a read into memory, the
 * page faults of that memory, and a write out of it.
 */
struct perfdata_piece {
	const void *mem;
	int fd;
	uint64_t off;
	uint64_t len;
	const char *name;
};

/*
 * perfdata_write_auxtrace with the data in n pieces, written one after
 * the other: the same bytes in the file as perfdata_write_auxtrace of
 * their concatenation.  Returns 0, -ERR_TRUNCATED (a file that ends
 * inside its piece: "NAME: ends at byte B, inside the N bytes of trace
 * at OFF"), -ERR_IO (a failed read names the file and offset, a failed
 * write perf.data and its offset, as perfdata_write_auxtrace does),
 * -ERR_INVALID, -ERR_NOMEM.
 */
int perfdata_write_auxtrace_pieces(struct perfdata_writer *w,
    const struct perfdata_auxtrace *a, const struct perfdata_piece *p,
    size_t n, struct error *e) PTKIT_MUST_CHECK;

/*
 * Adds an entry to HEADER_BUILD_ID (written at close).  size <= 20;
 * pid -1 for "any process".  Returns 0, -ERR_INVALID, -ERR_NOMEM.
 */
int perfdata_writer_add_build_id(struct perfdata_writer *w, int32_t pid,
    const uint8_t *id, size_t size, const char *filename, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Writes the features and the final header, syncs and closes; frees w
 * whatever happens.  Returns 0 or -ERR_IO (the file is then removed).
 */
int perfdata_writer_close(struct perfdata_writer *w, struct error *e)
    PTKIT_MUST_CHECK;

/* Closes, removes the file, frees w.  NULL is fine. */
void perfdata_writer_abort(struct perfdata_writer *w);

/* Bytes of records written so far (the data section size). */
uint64_t perfdata_writer_data_size(const struct perfdata_writer *w);

#endif

/*
 * output: ptdecode's standard output, as the binary block stream or as
 * JSON Lines (man ptkit-blocks.5), with the totals for the summary line
 * and the progress display on a terminal.
 */
#ifndef PTDECODE_OUTPUT_H
#define PTDECODE_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "base/jsonw.h"
#include "prefault.h"
#include "tool/progress.h"
#include "snapload.h"

enum { OUTPUT_BLOCKS, OUTPUT_JSONL };

/*
 * Standard output less the first skip bytes (see output_open); every
 * byte of it leaves through this, which counts them and keeps the errno
 * of the write that failed.
 */
struct output_skip {
	int fd;
	uint64_t skip;
	uint64_t written;	/* bytes that reached fd */
	int err;		/* errno of the failed write, or 0 */
};

struct output {
	int format;
	const struct ptdec_backend *backend;	/* the decoder */
	struct blks_writer *w;
	FILE *wf;			/* stdout through ws, or NULL */
	struct output_skip ws;
	struct jsonw j;
	uint32_t tid;			/* the open thread */
	uint64_t threads;
	uint64_t total[BLKS_C_NR];	/* summed END counters */
	struct progress prog;
	uint64_t bytes_before, bytes_total;
	struct prefault pf;		/* the open thread's trace */
};

/*
 * Writes the header and the MAP records (only the pid of thread tid when
 * has_tid) to stdout, at once: a reader (ptspans) can load the images'
 * symbols while the decoders are set up.  Returns 0 or
 * -ERR_IO/-ERR_NOMEM/-ERR_INVALID.
 */
int output_open(struct output *out, int format, const struct snap *s,
    uint32_t tid, int has_tid, struct error *e);

/* Writes a header made elsewhere (the perf converter). */
int output_open_header(struct output *out, int format,
    const struct blks_header *h, struct error *e);

/* Writes one record, keeping the open thread for JSON Lines. */
int output_record(struct output *out, const struct blks_record *r,
    struct error *e);

/* THREAD, the decoded records, END.  Returns 0 or an error. */
int output_thread(struct output *out, struct snap *s,
    const struct snap_thread *t, struct error *e);

/*
 * After rc == 0 writes EOS; flushes.  Returns rc, or the write error.
 * Safe after a failed output_open.
 */
int output_close(struct output *out, int rc, struct error *e);

/*
 * Whether a write to standard output failed: the error then says
 * "write failed after N bytes: <reason>", and its object is stdout.
 */
int output_write_failed(const struct output *out);

#endif

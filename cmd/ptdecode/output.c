/* output: see output.h. */
#include "output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/pipebuf.h"
#include "dec/ptdec.h"

/* JSON Lines leave in runs this long. */
#define JSONL_BUFFER (256 * 1024)

/*
 * fopencookie's write: drops what is left of skip, writes the rest.  A
 * write that fails returns the bytes of buf taken so far (never -1, which
 * stdio would take for a count) and keeps its errno, which stdio may not.
 */
static ssize_t
skip_write(void *cookie, const char *buf, size_t size)
{
	struct output_skip *k = cookie;
	size_t off = 0, n;

	if (k->err != 0)
		return 0;
	if (k->skip > 0) {
		off = k->skip < size ? (size_t)k->skip : size;
		k->skip -= off;
	}
	n = fdio_write_all(k->fd, buf + off, size - off, &k->err);
	k->written += n;
	return (ssize_t)(off + n);
}

/* Standard output through skip_write, buffered by mode. */
static int
open_stdout(struct output *out, uint64_t skip, int mode, struct error *e)
{
	static const cookie_io_functions_t io = { .write = skip_write };

	out->ws.fd = STDOUT_FILENO;
	out->ws.skip = skip;
	if ((out->wf = fopencookie(&out->ws, "w", io)) == NULL)
		return error_set(e, ERR_NOMEM, "stdout");
	if (setvbuf(out->wf, NULL, mode, mode == _IONBF ? 0 : JSONL_BUFFER)
	    != 0) {
		fclose(out->wf);
		out->wf = NULL;
		return error_set(e, ERR_NOMEM, "stdout buffer");
	}
	return 0;
}

/*
 * After a write to standard output failed, whatever the layer that saw
 * it said: the one message, with the reason the system gave and how far
 * the output got, so a cut stream is never taken for a whole one.
 */
static int
write_failed(struct output *out, struct error *e)
{
	return error_set_errno(e, out->ws.err, "write failed after %llu "
	    "bytes", (unsigned long long)out->ws.written);
}

int
output_write_failed(const struct output *out)
{
	return out->ws.err != 0;
}

int
output_open_header(struct output *out, int format,
    const struct blks_header *h, struct error *e)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->format = format;
	progress_init(&out->prog, stderr, -1);
	if (format == OUTPUT_BLOCKS) {
		pipebuf_widen(STDOUT_FILENO, PIPEBUF_WANT);
		if ((rc = open_stdout(out, 0, _IONBF, e)) < 0)
			return rc;
		rc = blks_writer_open_file(&out->w, out->wf, h, e);
		return output_write_failed(out) ? write_failed(out, e) : rc;
	}
	if ((rc = open_stdout(out, 0, _IOFBF, e)) < 0)
		return rc;
	jsonw_init(&out->j, out->wf);
	blks_jsonl_header(&out->j, h);
	return 0;
}

int
output_record(struct output *out, const struct blks_record *r,
    struct error *e)
{
	int rc;

	if (r->type == BLKS_THREAD)
		out->tid = r->u.thread.tid;
	if (out->format == OUTPUT_BLOCKS) {
		rc = blks_write(out->w, r, e);
	} else {
		blks_jsonl_record(&out->j, r, out->tid);
		rc = out->j.error != 0 ? error_set(e, -out->j.error,
		    "JSON Lines writer failed") : 0;
	}
	return output_write_failed(out) ? write_failed(out, e) : rc;
}

/*
 * The binary stream: the header and MAP records through a writer of
 * their own, closed (so flushed) at once, then the writer of the rest,
 * which writes the same header first (blkstream has no flush and no
 * writer without a header): the FILE drops that many bytes.  The bytes
 * on stdout are those of one writer.
 */
static int
open_blocks(struct output *out, const struct snap *s, uint32_t pid,
    int has_tid, struct error *e)
{
	struct blks_writer *w;
	struct blks_record r;
	uint64_t header;
	int rc;

	pipebuf_widen(STDOUT_FILENO, PIPEBUF_WANT);
	/* w's buffer is the only one: its writes go straight through. */
	if ((rc = open_stdout(out, 0, _IONBF, e)) < 0)
		return rc;
	if ((rc = blks_writer_open_file(&w, out->wf, &s->hdr, e)) < 0)
		return output_write_failed(out) ? write_failed(out, e) : rc;
	header = blks_writer_bytes(w);
	r.type = BLKS_MAP;
	for (size_t i = 0; i < s->nr_maps && rc == 0; i++) {
		if (has_tid && s->maps[i].pid != pid)
			continue;
		r.u.map = s->maps[i];
		rc = blks_write(w, &r, e);
	}
	if (rc < 0) {
		PTKIT_DROP(blks_writer_close(w, NULL));	/* rc came first */
		return output_write_failed(out) ? write_failed(out, e) : rc;
	}
	if ((rc = blks_writer_close(w, e)) < 0)
		return output_write_failed(out) ? write_failed(out, e) : rc;
	/* The header again, into skip: not a byte of it reaches the fd. */
	out->ws.skip = header;
	rc = blks_writer_open_file(&out->w, out->wf, &s->hdr, e);
	return output_write_failed(out) ? write_failed(out, e) : rc;
}

int
output_open(struct output *out, int format, const struct snap *s,
    uint32_t tid, int has_tid, struct error *e)
{
	uint32_t pid = UINT32_MAX;
	struct blks_record r;
	int rc;

	memset(out, 0, sizeof(*out));
	out->format = format;
	progress_init(&out->prog, stderr, -1);
	for (size_t i = 0; i < s->nr_threads; i++) {
		if (has_tid && s->threads[i].tid != tid)
			continue;
		pid = s->threads[i].pid;
		out->bytes_total += s->threads[i].queue->total_size;
	}
	if (format == OUTPUT_BLOCKS)
		return open_blocks(out, s, pid, has_tid, e);
	if ((rc = open_stdout(out, 0, _IOFBF, e)) < 0)
		return rc;
	jsonw_init(&out->j, out->wf);
	blks_jsonl_header(&out->j, &s->hdr);
	r.type = BLKS_MAP;
	for (size_t i = 0; i < s->nr_maps; i++) {
		if (has_tid && s->maps[i].pid != pid)
			continue;
		r.u.map = s->maps[i];
		if ((rc = output_record(out, &r, e)) < 0)
			return rc;
	}
	return 0;
}

/* The decoder's first records: its pass over the trace is done. */
static int
sink_emit(void *ctx, const struct blks_record *r, struct error *e)
{
	struct output *out = ctx;

	prefault_stop(&out->pf);
	return output_record(out, r, e);
}

/* Runs of blocks: straight into the binary writer, else one by one. */
static int
sink_emit_blocks(void *ctx, const struct blks_block *b, size_t n,
    struct error *e)
{
	struct output *out = ctx;
	struct blks_record r;
	int rc = 0;

	prefault_stop(&out->pf);
	if (out->format == OUTPUT_BLOCKS)
		return blks_write_blocks(out->w, b, n, e);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	for (size_t i = 0; i < n && rc == 0; i++) {
		r.u.block = b[i];
		rc = output_record(out, &r, e);
	}
	return rc;
}

/* Runs of blocks the decoder encoded: bytes for the binary writer. */
static int
sink_emit_encoded(void *ctx, const uint8_t *p, size_t len, uint64_t last_ip,
    uint64_t last_time, struct error *e)
{
	struct output *out = ctx;

	prefault_stop(&out->pf);
	return blks_write_encoded(out->w, p, len, last_ip, last_time, e);
}

static void
show_progress(void *ctx, uint64_t done)
{
	struct output *out = ctx;

	progress_update(&out->prog, "decoding", out->bytes_before + done,
	    out->bytes_total);
}

/*
 * Where each program of thread t's process begins in its trace th: an
 * exec starts the next program at a PSB (the emu recorder writes one
 * there; hardware writes one soon after), so every PSB interval is one
 * program's, the one running at its PSB's time.  Fills start[i] (trace
 * offset) and exec[i] for *n parts (at most max); 1 part at offset 0 for
 * a process that never exec'd.
 */
static int
program_parts(const struct snap *s, const struct snap_thread *t,
    const struct ptdec_thread *th, uint64_t *start, uint32_t *exec,
    size_t max, size_t *n, struct error *e)
{
	struct ptdec_plan plan;
	uint64_t *tsc = NULL;
	uint32_t x;
	int rc;

	*n = 1;
	start[0] = 0;
	exec[0] = 0;
	if (snap_exec_index(s, t->pid, UINT64_MAX) == 0 || !s->cfg.time.valid)
		return 0;
	if ((rc = ptdec_split(th, 0, &plan, e)) < 0)
		return rc;
	if (plan.nr_psb > 0 && (tsc = calloc(plan.nr_psb, sizeof(*tsc))) ==
	    NULL) {
		ptdec_plan_free(&plan);
		return error_set(e, ERR_NOMEM, "program parts");
	}
	if (plan.nr_psb > 0 && (rc = ptdec_psb_tscs(th, &plan, tsc, e)) < 0)
		goto out;
	for (size_t i = 0; i < plan.nr_psb; i++) {
		if (tsc[i] == 0)
			continue;	/* no time: the program before's */
		x = snap_exec_index(s, t->pid,
		    ptdec_tsc_to_perf_ns(&s->cfg.time, tsc[i]));
		if (*n == 1 && start[0] == 0 && exec[0] == 0 && i == 0) {
			exec[0] = x;	/* the ring kept only later programs */
			continue;
		}
		if (x == exec[*n - 1] || *n == max)
			continue;
		start[*n] = plan.psb[i];
		exec[(*n)++] = x;
	}
out:
	free(tsc);
	ptdec_plan_free(&plan);
	return rc;
}

/* The EVENT that says the process exec'd program exec at its time. */
static int
output_exec(struct output *out, const struct snap *s, uint32_t pid,
    uint32_t exec, struct error *e)
{
	struct blks_record r;
	uint64_t t = snap_exec_time(s, pid, exec);

	memset(&r, 0, sizeof(r));
	r.type = BLKS_EVENT;
	r.u.event.kind = BLKS_EV_EXEC;
	r.u.event.flags = BLKS_EVF_IP_SUPPRESSED;
	r.u.event.arg = exec;
	r.u.event.time = t > s->cfg.time.base_ns ? t - s->cfg.time.base_ns : 0;
	return output_record(out, &r, e);
}

#define MAX_PROGRAMS 64

int
output_thread(struct output *out, struct snap *s, const struct snap_thread *t,
    struct error *e)
{
	struct ptdec_sink sink = { sink_emit, out, sink_emit_blocks,
	    out->format == OUTPUT_BLOCKS ? sink_emit_encoded : NULL };
	struct ptdec_thread th, part;
	struct blks_record r;
	struct blks_end end;
	uint64_t start[MAX_PROGRAMS];
	uint32_t exec[MAX_PROGRAMS];
	size_t nparts = 1, bytes_before = out->bytes_before;
	uint8_t *owned;
	int rc;

	memset(&th, 0, sizeof(th));
	if ((rc = snap_thread_trace(s, t, &th.buf, &th.len, &owned, e)) < 0)
		return rc;
	th.tid = t->tid;
	th.pid = t->pid;
	th.wrapped = t->wrapped;
	memset(&r, 0, sizeof(r));
	r.type = BLKS_THREAD;
	r.u.thread = (struct blks_thread){ .tid = t->tid, .pid = t->pid,
	    .flags = t->wrapped ? BLKS_THREAD_WRAPPED : 0,
	    .trace_bytes = th.len, .name = t->name };
	s->cfg.progress = show_progress;
	s->cfg.progress_ctx = out;
	prefault_start(&out->pf, th.buf, th.len);
	rc = program_parts(s, t, &th, start, exec, MAX_PROGRAMS, &nparts, e);
	if (rc == 0)
		rc = output_record(out, &r, e);
	memset(&r.u.end, 0, sizeof(r.u.end));
	/* one decode per program: each with its own code (blks_space) */
	for (size_t i = 0; rc == 0 && i < nparts; i++) {
		part = th;
		part.buf = th.buf + start[i];
		part.len = (i + 1 < nparts ? start[i + 1] : th.len) - start[i];
		part.pid = blks_space(t->pid, exec[i]);
		part.wrapped = i == 0 && th.wrapped;
		if (exec[i] != 0 && (rc = output_exec(out, s, t->pid, exec[i],
		    e)) < 0)
			break;
		out->bytes_before = bytes_before + start[i];
		rc = ptdec_decode_thread(out->backend, &s->cfg, &part, &sink,
		    &end, e);
		for (int k = 0; rc == 0 && k < BLKS_C_NR; k++)
			r.u.end.c[k] += end.c[k];
	}
	out->bytes_before = bytes_before;
	r.u.end.tid = t->tid;
	prefault_finish(&out->pf);
	free(owned);
	if (rc < 0)
		return rc;
	r.type = BLKS_END;
	for (int i = 0; i < BLKS_C_NR; i++)
		out->total[i] += r.u.end.c[i];
	out->threads++;
	out->bytes_before += th.len;
	return output_record(out, &r, e);
}

int
output_close(struct output *out, int rc, struct error *e)
{
	struct blks_record r;
	struct error ce;
	int crc = 0;

	progress_done(&out->prog);
	error_clear(&ce);
	if (rc == 0 && (out->format != OUTPUT_BLOCKS || out->w != NULL)) {
		memset(&r, 0, sizeof(r));
		r.type = BLKS_EOS;
		r.u.eos.nr_threads = (uint32_t)out->threads;
		rc = output_record(out, &r, e);
	}
	if (out->format == OUTPUT_BLOCKS) {
		crc = blks_writer_close(out->w, &ce);
		out->w = NULL;
	} else if (out->wf != NULL && (crc = jsonw_finish(&out->j)) < 0) {
		error_set(&ce, -crc, "JSON Lines writer failed");
	}
	/* The last bytes leave here: a close that fails is a failed write. */
	if (out->wf != NULL && fclose(out->wf) != 0 && crc == 0)
		crc = error_set_errno(&ce, errno, "stdout: close");
	out->wf = NULL;
	/* Whatever failed after it (a writer, a sink), the cut came first. */
	if (output_write_failed(out))
		return write_failed(out, e);
	if (rc == 0 && crc < 0) {
		*e = ce;
		rc = crc;
	}
	return rc;
}

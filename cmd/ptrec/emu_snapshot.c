/* emu_snapshot: see emu_snapshot.h. */
#include "emu_snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "rec/ptcaps.h"
#include "rec/ptsb.h"
#include "snapwrite.h"

/* ---- sideband ------------------------------------------------------------ */

static int
sb_add(struct emu_sideband *sb, const struct emu_sb_rec *r, struct error *e)
{
	struct emu_sb_rec *n;
	size_t cap;

	if (sb->n == sb->cap) {
		cap = sb->cap ? sb->cap * 2 : 64;
		if ((n = realloc(sb->rec, cap * sizeof(*n))) == NULL)
			return error_set(e, ERR_NOMEM, "sideband");
		sb->rec = n;
		sb->cap = cap;
	}
	sb->rec[sb->n++] = *r;
	return 0;
}

static void
sb_counter(struct emu_sideband *sb, const char *name, uint64_t v)
{
	size_t i;

	for (i = 0; i < sb->n_counters; i++)
		if (strcmp(sb->counter[i].name, name) == 0)
			break;
	if (i == sizeof(sb->counter) / sizeof(sb->counter[0]))
		return;
	if (i == sb->n_counters) {
		snprintf(sb->counter[i].name, sizeof(sb->counter[i].name),
		    "%s", name);
		sb->n_counters++;
	}
	sb->counter[i].value = v;
}

/* Parses one line; returns 1 if it was a record, 0 to skip, -1 if bad. */
static int
sb_parse(char *line, struct emu_sb_rec *r, struct emu_sideband *sb)
{
	char word[16], name[48];
	int n = 0;
	uint64_t v;

	memset(r, 0, sizeof(*r));
	if (sscanf(line, "%15s %n", word, &n) < 1)
		return 0;
	line += n;
	if (strcmp(word, "map") == 0) {
		r->type = SB_MAP;
		if (sscanf(line, "%" SCNx64 " %d %d %" SCNx64 " %" SCNx64 " %"
		    SCNx64 " %x %n", &r->time, &r->pid, &r->tid, &r->addr,
		    &r->len, &r->pgoff, &r->prot, &n) < 7)
			return -1;
	} else if (strcmp(word, "unmap") == 0 || strcmp(word, "prot") == 0) {
		r->type = word[0] == 'u' ? SB_UNMAP : SB_PROT;
		if (sscanf(line, "%" SCNx64 " %d %d %" SCNx64 " %" SCNx64
		    " %n", &r->time, &r->pid, &r->tid, &r->addr, &r->len,
		    &n) < 5)
			return -1;
		return 1;
	} else if (strcmp(word, "thread") == 0) {
		r->type = SB_THREAD;
		return sscanf(line, "%" SCNx64 " %d %d %d", &r->time, &r->pid,
		    &r->tid, &r->ptid) == 4 ? 1 : -1;
	} else if (strcmp(word, "exit") == 0) {
		r->type = SB_EXIT;
		return sscanf(line, "%" SCNx64 " %d %d", &r->time, &r->pid,
		    &r->tid) == 3 ? 1 : -1;
	} else if (strcmp(word, "process") == 0) {
		r->type = SB_PROCESS;
		return sscanf(line, "%" SCNx64 " %d %d %d", &r->time, &r->pid,
		    &r->ppid, &r->ptid) == 4 ? 1 : -1;
	} else if (strcmp(word, "execfail") == 0) {
		r->type = SB_EXECFAIL;
		return sscanf(line, "%" SCNx64 " %d %d", &r->time, &r->pid,
		    &r->tid) == 3 ? 1 : -1;
	} else if (strcmp(word, "program") == 0) {
		r->type = SB_PROGRAM;
		if (sscanf(line, "%" SCNx64 " %d %d %d %n", &r->time, &r->pid,
		    &r->tid, &r->exec_index, &n) < 4)
			return -1;
	} else if (strcmp(word, "exec") == 0) {
		r->type = SB_EXEC;
		if (sscanf(line, "%" SCNx64 " %d %d %n", &r->time, &r->pid,
		    &r->tid, &n) < 3)
			return -1;
	} else if (strcmp(word, "comm") == 0) {
		r->type = SB_COMM;
		if (sscanf(line, "%" SCNx64 " %d %d %n", &r->time, &r->pid,
		    &r->tid, &n) < 3)
			return -1;
	} else if (strcmp(word, "counter") == 0) {
		if (sscanf(line, "%47s %" SCNu64, name, &v) != 2)
			return -1;
		sb_counter(sb, name, v);
		return 0;
	} else {
		return strcmp(word, "snapshot") == 0 ? 0 : -1;
	}
	if ((r->text = strdup(line + n)) == NULL)
		return -1;
	return 1;
}

/* One process's file: its records into sb, its counters added to sb's. */
static int
sb_read_file(struct emu_sideband *sb, const char *path, struct error *e)
{
	struct emu_sideband own;	/* this process's counters */
	struct emu_sb_rec r;
	char *line = NULL;
	size_t cap = 0, i, j;
	ssize_t len;
	FILE *f;
	int rc = 0, k;

	memset(&own, 0, sizeof(own));
	if ((f = fopen(path, "re")) == NULL)
		return error_set_errno(e, errno, "%s", path);
	while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] != '\n')
			break;		/* a line still being written */
		line[len - 1] = '\0';
		k = sb_parse(line, &r, &own);
		if (k < 0)
			rc = error_set(e, ERR_FORMAT, "%s: bad line '%s'", path,
			    line);
		else if (k > 0 && (rc = sb_add(sb, &r, e)) < 0)
			free(r.text);
	}
	free(line);
	fclose(f);
	for (i = 0; i < own.n_counters; i++) {
		uint64_t v = own.counter[i].value;

		for (j = 0; j < sb->n_counters; j++)
			if (strcmp(sb->counter[j].name, own.counter[i].name) ==
			    0)
				v += sb->counter[j].value;
		sb_counter(sb, own.counter[i].name, v);
	}
	return rc;
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
emu_sideband_read(struct emu_sideband *sb, const char *scratch,
    struct error *e)
{
	char path[PATH_MAX], **names = NULL, **grown;
	size_t n = 0, i;
	struct dirent *de;
	DIR *d;
	int rc;

	memset(sb, 0, sizeof(*sb));
	snprintf(path, sizeof(path), "%s/sideband", scratch);
	if ((rc = sb_read_file(sb, path, e)) < 0) {
		emu_sideband_free(sb);
		return rc;
	}
	if ((d = opendir(scratch)) == NULL) {
		emu_sideband_free(sb);
		return error_set_errno(e, errno, "%s", scratch);
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "sideband.", 9) != 0)
			continue;
		if ((grown = realloc(names, (n + 1) * sizeof(*names))) ==
		    NULL || (grown[n] = strdup(de->d_name)) == NULL) {
			if (grown != NULL)
				names = grown;
			rc = error_set(e, ERR_NOMEM, "sideband");
			break;
		}
		names = grown;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_name);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", scratch, names[i]);
		if (rc == 0)
			rc = sb_read_file(sb, path, e);
		free(names[i]);
	}
	free(names);
	if (rc < 0)
		emu_sideband_free(sb);
	return rc;
}

/*
 * Did the exec at record i fail, or run under the emulator?  A program
 * the plugin followed starts with a "program" record of the same process
 * (in a file read later); a failed execve returns with "execfail".
 * Otherwise the program ran natively: not traced.
 */
static int
exec_traced_or_failed(const struct emu_sideband *sb, size_t i)
{
	size_t j;

	for (j = i + 1; j < sb->n; j++) {
		if (sb->rec[j].pid != sb->rec[i].pid)
			continue;
		if (sb->rec[j].type == SB_PROGRAM)
			return 1;
		if (sb->rec[j].tid != sb->rec[i].tid)
			continue;
		if (sb->rec[j].type == SB_EXECFAIL)
			return 1;
		if (sb->rec[j].type == SB_EXEC)
			return 0;
	}
	return 0;
}

/* Programs exec'd that ran without the emulator: processes not traced. */
static uint64_t
execs_untraced(const struct emu_sideband *sb)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < sb->n; i++)
		n += sb->rec[i].type == SB_EXEC &&
		    !exec_traced_or_failed(sb, i);
	return n;
}

/*
 * Of those, the ones that ran before time t (0: any time): an exec made
 * once tracing had ended (after the last snapshot) has time 0 or later.
 */
static uint64_t
execs_untraced_before(const struct emu_sideband *sb, uint64_t t)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < sb->n; i++)
		n += sb->rec[i].type == SB_EXEC &&
		    !exec_traced_or_failed(sb, i) &&
		    (t == 0 || (sb->rec[i].time != 0 && sb->rec[i].time <= t));
	return n;
}

static char *
fmt_line(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	return p;
}

size_t
emu_process_warnings(const struct emu_sideband *sb, char **out, size_t max)
{
	size_t i, n = 0, lost = 0;
	char *w;

	for (i = 0; i < sb->n; i++) {
		if (sb->rec[i].type != SB_EXEC ||
		    exec_traced_or_failed(sb, i))
			continue;
		if (n + 1 >= max) {
			lost++;
			continue;
		}
		w = fmt_line("process %d exec'd %s, which ran without the "
		    "emulator and was not traced (not an x86-64 program or "
		    "script qemu-x86_64 runs, or exec'd from a thread other "
		    "than the process's first)", sb->rec[i].pid,
		    sb->rec[i].text);
		if (w != NULL)
			out[n++] = w;
	}
	if (lost > 0 && (w = fmt_line("%zu more exec'd programs were not "
	    "traced", lost)) != NULL)
		out[n++] = w;
	for (i = 0; i < sb->n_counters; i++) {
		if (strcmp(sb->counter[i].name, "fork_untraced") != 0 ||
		    sb->counter[i].value == 0 || n >= max)
			continue;
		w = fmt_line("%" PRIu64 " child process%s not traced: "
		    "--no-follow traces only the first process",
		    sb->counter[i].value, sb->counter[i].value == 1 ?
		    " was" : "es were");
		if (w != NULL)
			out[n++] = w;
	}
	return n;
}

void
emu_sideband_free(struct emu_sideband *sb)
{
	size_t i;

	for (i = 0; i < sb->n; i++)
		free(sb->rec[i].text);
	free(sb->rec);
	memset(sb, 0, sizeof(*sb));
}

/* ---- captures ------------------------------------------------------------ */

static int
read_whole(const char *path, uint8_t **data, uint64_t *len, struct error *e)
{
	struct stat st;
	ssize_t n;
	int fd;

	*data = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", path);
	if (fstat(fd, &st) < 0 || (*data = malloc((size_t)st.st_size + 1)) ==
	    NULL) {
		close(fd);
		return error_set(e, ERR_NOMEM, "%s", path);
	}
	n = read(fd, *data, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(*data);
		*data = NULL;
		return error_set(e, ERR_IO, "%s: short read", path);
	}
	*len = (uint64_t)n;
	return 0;
}

/*
 * r's trace as the plugin copied it, snap.<seq>/<tid>.pt: the file is
 * copied into perf.data when the snapshot is written, not read here.
 */
static int
ring_copied(struct emu_ring_copy *r, const char *path, struct error *e)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return error_set_errno(e, errno, "%s", path);
	if ((r->file = strdup(path)) == NULL)
		return error_set(e, ERR_NOMEM, "%s", path);
	r->kept = (uint64_t)st.st_size;
	r->file_off[0] = 0;
	r->file_len[0] = r->kept;
	return 0;
}

/*
 * r's trace left in its ring (IN_RING: the snapshot at the program's
 * exit), read once qemu is gone: where its kept bytes are in path, after
 * checking the ring still holds them all.
 */
static int
ring_in_place(struct emu_ring_copy *r, const char *path, struct error *e)
{
	struct emu_ring_hdr h;
	uint64_t from, pos[2], len[2];
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", path);
	n = pread(fd, &h, sizeof(h), 0);
	if (n < 0 || fstat(fd, &st) < 0) {
		int saved = errno;

		close(fd);
		return error_set_errno(e, saved, "%s", path);
	}
	close(fd);
	if ((size_t)n < sizeof(h) || h.magic != EMU_RING_MAGIC ||
	    h.tid != r->tid || h.ring_size == 0 || h.ring_size +
	    EMU_HDR_SIZE > (uint64_t)st.st_size)
		return error_set(e, ERR_FORMAT, "%s: not the emu ring of "
		    "thread %d", path, r->tid);
	from = r->total - r->kept;
	if (r->kept > r->total || r->kept > h.ring_size || h.total < r->total ||
	    h.total - from > h.ring_size || h.freed > from)
		return error_set(e, ERR_FORMAT, "%s: no longer holds the %"
		    PRIu64 " bytes of trace the snapshot lists (stream bytes %"
		    PRIu64 " to %" PRIu64 ")", path, r->kept, from, r->total);
	if ((r->file = strdup(path)) == NULL)
		return error_set(e, ERR_NOMEM, "%s", path);
	emu_ring_split(h.ring_size, r->total, from, pos, len);
	r->file_off[0] = EMU_HDR_SIZE + pos[0];
	r->file_len[0] = len[0];
	r->file_off[1] = EMU_HDR_SIZE + pos[1];
	r->file_len[1] = len[1];
	return 0;
}

static int
capture_add(struct emu_capture *c, const struct emu_ring_copy *r,
    struct error *e)
{
	struct emu_ring_copy *n;

	n = realloc(c->rings, (c->n_rings + 1) * sizeof(*n));
	if (n == NULL)
		return error_set(e, ERR_NOMEM, "rings");
	c->rings = n;
	c->rings[c->n_rings++] = *r;
	return 0;
}

/* snap.<seq>/jit: "START LEN" lines, the bytes in jit.<START>. */
static int
capture_read_jit(struct emu_capture *c, const char *dir, struct error *e)
{
	char path[PATH_MAX + 64], line[128];
	struct snapwrite_code j, *grown;
	uint64_t len = 0;
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/perf.map", dir);
	if (access(path, F_OK) == 0 && (c->jit_map = strdup(path)) == NULL)
		return error_set(e, ERR_NOMEM, "%s", path);
	snprintf(path, sizeof(path), "%s/jit", dir);
	if ((f = fopen(path, "re")) == NULL)
		return 0;	/* no code without a file ran */
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		memset(&j, 0, sizeof(j));
		if (sscanf(line, "%" SCNx64 " %" SCNx64, &j.start, &j.len) !=
		    2) {
			rc = error_set(e, ERR_FORMAT, "%s: bad line", path);
			break;
		}
		snprintf(path, sizeof(path), "%s/jit.%" PRIx64, dir, j.start);
		if ((rc = read_whole(path, &j.data, &len, e)) < 0)
			break;
		j.len = len;
		grown = realloc(c->jit, (c->n_jit + 1) * sizeof(*grown));
		if (grown == NULL) {
			free(j.data);
			rc = error_set(e, ERR_NOMEM, "JIT code");
			break;
		}
		c->jit = grown;
		c->jit[c->n_jit++] = j;
	}
	fclose(f);
	return rc;
}

static int
cmp_tid(const void *a, const void *b)
{
	const struct emu_ring_copy *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Queues and manifest rows in tid order, whatever order threads dumped. */
static void
capture_sort(struct emu_capture *c)
{
	if (c->n_rings > 1)
		qsort(c->rings, c->n_rings, sizeof(c->rings[0]), cmp_tid);
}

static int capture_add_rings(struct emu_capture *c, const char *scratch,
    const struct emu_sideband *children, struct error *e);

int
emu_capture_read(struct emu_capture *c, const char *scratch, uint64_t seq,
    struct error *e)
{
	char path[PATH_MAX], line[256];
	struct emu_sideband sb;
	struct emu_ring_copy r;
	FILE *f;
	int rc = 0, in_ring;

	memset(c, 0, sizeof(*c));
	c->seq = seq;
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/threads", scratch,
	    seq);
	if ((f = fopen(path, "re")) == NULL)
		return error_set_errno(e, errno, "%s", path);
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		memset(&r, 0, sizeof(r));
		if (sscanf(line, "%d %" SCNu64 " %" SCNu64 " %d %" SCNx64 " %"
		    SCNx64 " %" SCNu64 " %d %d", &r.tid, &r.total, &r.kept,
		    &r.wrapped, &r.first_time, &r.last_time, &r.insns,
		    &r.exited, &in_ring) != 9) {
			rc = error_set(e, ERR_FORMAT, "%s: bad line", path);
			break;
		}
		if (in_ring)
			snprintf(path, sizeof(path), "%s/ring.%d", scratch,
			    r.tid);
		else
			snprintf(path, sizeof(path), "%s/snap.%" PRIu64
			    "/%d.pt", scratch, seq, r.tid);
		if ((rc = in_ring ? ring_in_place(&r, path, e) :
		    ring_copied(&r, path, e)) < 0)
			break;
		if ((rc = capture_add(c, &r, e)) < 0)
			free(r.file);
	}
	fclose(f);
	/* The other processes' rings: a child that ended is complete in its
	 * file; one still running is read as it is now.  Not the first
	 * process's own threads the snapshot left out (started after it). */
	if (rc == 0 && (rc = emu_sideband_read(&sb, scratch, e)) == 0) {
		rc = capture_add_rings(c, scratch, &sb, e);
		emu_sideband_free(&sb);
	}
	if (rc < 0) {
		emu_capture_free(c);
		return rc;
	}
	capture_sort(c);
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64, scratch, seq);
	if ((rc = capture_read_jit(c, path, e)) < 0) {
		emu_capture_free(c);
		return rc;
	}
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/info", scratch, seq);
	if ((f = fopen(path, "re")) != NULL) {
		uint64_t out = 0, end = 0;
		int n = fscanf(f, "%*s %*d %" SCNx64 " %" SCNu64 " %" SCNu64,
		    &c->fired_time, &out, &end);

		if (n < 1)
			c->fired_time = 0;
		c->output_offset = out;
		c->has_output_offset = n >= 2;
		c->output_end = end;
		c->has_output_end = n == 3;
		fclose(f);
	}
	return 0;
}

/*
 * What hardware would have written when the thread stopped where the
 * header says: the TNT bits it had not flushed, and, if it was running
 * guest code, the asynchronous stop there (FUP + TIP.PGD).  qemu 7.2 does
 * not tell the faulting instruction, only the block holding it, so the
 * FUP names that block's first instruction: the trace is exact up to
 * the block that faulted (DECISIONS.md).
 */
static size_t
final_packets(const struct emu_ring_hdr *h, uint8_t *buf, size_t size)
{
	struct pt_encoder *enc;
	struct pt_packet p;
	struct pt_config cfg;
	size_t len = 0;
	int n;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	if ((enc = pt_alloc_encoder(&cfg)) == NULL)
		return 0;
	if (h->tnt_bits > 0 && h->tnt_bits <= 47) {
		memset(&p, 0, sizeof(p));
		p.type = h->tnt_bits <= 6 ? ppt_tnt_8 : ppt_tnt_64;
		p.payload.tnt.bit_size = (uint8_t)h->tnt_bits;
		p.payload.tnt.payload = h->tnt_payload;
		if ((n = pt_enc_next(enc, &p)) > 0)
			len += (size_t)n;
	}
	if (h->cur_ip != 0) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_fup;
		p.payload.ip.ipc = pt_ipc_sext_48;
		p.payload.ip.ip = h->cur_ip;
		if ((n = pt_enc_next(enc, &p)) > 0)
			len += (size_t)n;
		memset(&p, 0, sizeof(p));
		p.type = ppt_tip_pgd;
		p.payload.ip.ipc = pt_ipc_suppressed;
		if ((n = pt_enc_next(enc, &p)) > 0)
			len += (size_t)n;
	}
	pt_free_encoder(enc);
	return len;
}

/*
 * One ring as its thread left it; returns 0, 1 when the thread gave all
 * its history back for the budget (it is not in the snapshot), or an
 * error.  Only the bytes it holds are copied: rings are sparse, and
 * dozens of threads' rings would not fit in memory whole.
 */
static int
ring_from_file(const char *path, struct emu_ring_copy *r, struct error *e)
{
	const struct emu_ring_hdr *h;
	uint8_t tail[64];
	struct stat st;
	uint64_t total, from, kept;
	size_t n = 0;
	void *map;
	int fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", path);
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < EMU_HDR_SIZE) {
		close(fd);
		return error_set(e, ERR_FORMAT, "%s: too short", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return error_set_errno(e, errno, "%s", path);
	h = map;
	if (h->magic != EMU_RING_MAGIC || h->ring_size == 0 ||
	    h->ring_size + EMU_HDR_SIZE > (uint64_t)st.st_size) {
		rc = error_set(e, ERR_FORMAT, "%s: not an emu ring", path);
		goto out;
	}
	memset(r, 0, sizeof(*r));
	total = h->total;
	from = emu_ring_first(h, total);
	if (from == total && h->freed != 0) {
		rc = 1;
		goto out;
	}
	if (h->state == EMU_RING_LIVE)
		n = final_packets(h, tail, sizeof(tail));
	if ((r->data = malloc(total - from + n + 1)) == NULL) {
		rc = error_set(e, ERR_NOMEM, "%s", path);
		goto out;
	}
	kept = emu_ring_unroll_from((const uint8_t *)map + EMU_HDR_SIZE,
	    h->ring_size, total, from, r->data);
	memcpy(r->data + kept, tail, n);
	kept += n;
	total += n;
	if (kept > h->ring_size) {	/* the tail overwrote the oldest */
		memmove(r->data, r->data + kept - h->ring_size, h->ring_size);
		kept = h->ring_size;
	}
	r->tid = h->tid;
	r->total = total;
	r->kept = kept;
	r->wrapped = total > h->ring_size;
	r->exited = h->state == EMU_RING_CLOSED;
	r->first_time = h->first_time;
	r->last_time = h->clock;
	r->insns = h->insns;
out:
	munmap(map, (size_t)st.st_size);
	return rc;
}

static int
capture_has(const struct emu_capture *c, int tid)
{
	size_t i;

	for (i = 0; i < c->n_rings; i++)
		if (c->rings[i].tid == tid)
			return 1;
	return 0;
}

static int forked(const struct emu_sideband *sb, int pid);

static int exec_followed(const struct emu_sideband *sb, int pid);

/*
 * tid is a thread of a fork child (a process other than the first), or
 * of a process that exec'd: the threads the exec ended are no longer the
 * leader's to copy.
 */
static int
child_thread(const struct emu_sideband *sb, int tid)
{
	size_t i;

	for (i = 0; i < sb->n; i++)
		if (sb->rec[i].type == SB_THREAD && sb->rec[i].tid == tid)
			return forked(sb, sb->rec[i].pid) ||
			    exec_followed(sb, sb->rec[i].pid);
	return 0;
}

/*
 * Adds the rings SCRATCH/ring.<tid> of every thread c does not hold yet;
 * with children, only those of the fork children it lists.
 */
static int
capture_add_rings(struct emu_capture *c, const char *scratch,
    const struct emu_sideband *children, struct error *e)
{
	char path[PATH_MAX];
	struct emu_ring_copy r;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if ((d = opendir(scratch)) == NULL)
		return error_set_errno(e, errno, "%s", scratch);
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "ring.", 5) != 0 ||
		    capture_has(c, atoi(de->d_name + 5)) || (children != NULL &&
		    !child_thread(children, atoi(de->d_name + 5))))
			continue;
		snprintf(path, sizeof(path), "%s/%s", scratch, de->d_name);
		if ((rc = ring_from_file(path, &r, e)) < 0)
			break;
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if ((rc = capture_add(c, &r, e)) < 0)
			free(r.data);
	}
	closedir(d);
	return rc;
}

int
emu_capture_from_rings(struct emu_capture *c, const char *scratch,
    struct error *e)
{
	int rc;

	memset(c, 0, sizeof(*c));
	rc = capture_add_rings(c, scratch, NULL, e);
	if (rc < 0)
		emu_capture_free(c);
	else
		capture_sort(c);
	return rc;
}

void
emu_capture_free(struct emu_capture *c)
{
	size_t i;

	for (i = 0; i < c->n_rings; i++) {
		free(c->rings[i].data);
		free(c->rings[i].file);
	}
	free(c->rings);
	for (i = 0; i < c->n_jit; i++)
		free(c->jit[i].data);
	free(c->jit);
	free(c->jit_map);
	memset(c, 0, sizeof(*c));
}

/* ---- the snapshot -------------------------------------------------------- */

/*
 * The name of tid: its own COMM, else the program's (the first COMM),
 * else "?".
 */
static const char *
comm_of(const struct emu_sideband *sb, int tid)
{
	const char *name = NULL;
	size_t i;

	for (i = 0; i < sb->n; i++)
		if (sb->rec[i].type == SB_COMM && (sb->rec[i].tid == tid ||
		    name == NULL))
			name = sb->rec[i].text;
	return name != NULL ? name : "?";
}

/*
 * The name thread record i starts with: the COMM the plugin writes right
 * after it, else the thread's latest.  The second program of a process
 * that exec'd has a name of its own.
 */
static const char *
comm_at(const struct emu_sideband *sb, size_t i)
{
	size_t j;

	for (j = i + 1; j < sb->n && j <= i + 3; j++)
		if (sb->rec[j].type == SB_COMM && sb->rec[j].tid == sb->rec[i].tid)
			return sb->rec[j].text;
	return comm_of(sb, sb->rec[i].tid);
}

/*
 * Thread record i is the start of a program the process exec'd: the
 * program record, else NULL.
 */
static const struct emu_sb_rec *
starts_program(const struct emu_sideband *sb, size_t i)
{
	size_t j;

	for (j = i + 1; j < sb->n && j <= i + 3; j++)
		if (sb->rec[j].type == SB_PROGRAM &&
		    sb->rec[j].pid == sb->rec[i].pid)
			return &sb->rec[j];
	return NULL;
}

/* pid began as a fork child (not by exec: its COMM is no exec's). */
static int
forked(const struct emu_sideband *sb, int pid)
{
	size_t i;

	for (i = 0; i < sb->n; i++)
		if (sb->rec[i].type == SB_PROCESS && sb->rec[i].pid == pid)
			return 1;
	return 0;
}

/* pid exec'd a program the plugin followed. */
static int
exec_followed(const struct emu_sideband *sb, int pid)
{
	size_t i;

	for (i = 0; i < sb->n; i++)
		if (sb->rec[i].type == SB_PROGRAM && sb->rec[i].pid == pid)
			return 1;
	return 0;
}

static struct ptsb_record
perf_record(uint32_t type, const struct emu_sb_rec *r)
{
	struct ptsb_record p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.sid.pid = (uint32_t)r->pid;
	p.sid.tid = (uint32_t)r->tid;
	p.sid.time = r->time;
	p.sid.cpu = PERFDATA_NO_CPU;
	return p;
}

/* 1 when the snapshot holds tid's ring as it was while tid still ran. */
static int
ring_live(const struct emu_capture *c, int tid)
{
	size_t i;

	for (i = 0; i < c->n_rings; i++)
		if (c->rings[i].tid == tid)
			return !c->rings[i].exited;
	return 0;
}

/*
 * The plugin's records as perf's, in the plugin's order: a code mapping
 * is an MMAP2 (perf walks code only), a new thread a FORK (when it has a
 * parent), its COMM and an ITRACE_START, an exit an EXIT, unless the
 * thread's ring was copied before it exited (the sideband is read later,
 * so its exit would come or go with the timing).  The strings stay sb's.
 */
static int
perf_sideband(const struct emu_sideband *sb, const struct emu_capture *c,
    struct ptsb_record **out, size_t *n, struct error *e)
{
	const struct emu_sb_rec *r, *prog;
	struct ptsb_record *p;
	size_t i;

	*n = 0;
	if ((*out = p = calloc(3 * sb->n + 1, sizeof(*p))) == NULL)
		return error_set(e, ERR_NOMEM, "sideband");
	for (i = 0; i < sb->n; i++) {
		r = &sb->rec[i];
		switch (r->type) {
		case SB_MAP:
			if (!(r->prot & 4 /* PROT_EXEC */))
				break;
			p[*n] = perf_record(PERF_RECORD_MMAP2, r);
			p[*n].u.mmap.pid = (uint32_t)r->pid;
			p[*n].u.mmap.tid = (uint32_t)r->tid;
			p[*n].u.mmap.addr = r->addr;
			p[*n].u.mmap.len = r->len;
			p[*n].u.mmap.pgoff = r->pgoff;
			p[*n].u.mmap.prot = r->prot;
			p[*n].u.mmap.flags = 2;		/* MAP_PRIVATE */
			p[*n].u.mmap.filename = r->text;
			(*n)++;
			break;
		case SB_PROCESS:
			/* perf gives the child a copy of the parent's maps */
			p[*n] = perf_record(PERF_RECORD_FORK, r);
			p[*n].sid.tid = (uint32_t)r->pid;
			p[*n].u.task.pid = p[*n].u.task.tid = (uint32_t)r->pid;
			p[*n].u.task.ppid = (uint32_t)r->ppid;
			p[*n].u.task.ptid = (uint32_t)r->ptid;
			p[*n].u.task.time = r->time;
			(*n)++;
			break;
		case SB_THREAD:
			if (r->ptid != 0) {
				p[*n] = perf_record(PERF_RECORD_FORK, r);
				p[*n].u.task.pid = p[*n].u.task.ppid =
				    (uint32_t)r->pid;
				p[*n].u.task.tid = (uint32_t)r->tid;
				p[*n].u.task.ptid = (uint32_t)r->ptid;
				p[*n].u.task.time = r->time;
				(*n)++;
			}
			/* a program exec'd is named at its start, before the
			   images qemu mapped for it (perf's order; ptdecode
			   tells the programs of a process apart by it) */
			prog = starts_program(sb, i);
			p[*n] = perf_record(PERF_RECORD_COMM,
			    prog != NULL ? prog : r);
			p[*n].u.comm.pid = (uint32_t)r->pid;
			p[*n].u.comm.tid = (uint32_t)r->tid;
			p[*n].u.comm.exec = r->ptid == 0 &&
			    (!forked(sb, r->pid) || prog != NULL);
			p[*n].u.comm.comm = comm_at(sb, i);
			(*n)++;
			p[*n] = perf_record(PERF_RECORD_ITRACE_START, r);
			p[*n].u.itrace.pid = (uint32_t)r->pid;
			p[*n].u.itrace.tid = (uint32_t)r->tid;
			(*n)++;
			break;
		case SB_EXIT:
			if (ring_live(c, r->tid))
				break;
			p[*n] = perf_record(PERF_RECORD_EXIT, r);
			p[*n].u.task.pid = p[*n].u.task.ppid = (uint32_t)r->pid;
			p[*n].u.task.tid = p[*n].u.task.ptid = (uint32_t)r->tid;
			p[*n].u.task.time = r->time;
			(*n)++;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* The attr config under --timing, and the bits of it pt.* repeats. */
static uint64_t
pt_config_of(const struct emu_run *run, int *cyc, int *noretcomp)
{
	const struct rec_options *o = run->opt;
	uint64_t cfg;

	*cyc = o->timing != TIMING_LOW;
	*noretcomp = o->timing == TIMING_HIGH;
	if (o->timing == TIMING_CONFIG) {
		*cyc = (o->timing_config & PERFDATA_PT_CFG_CYC) != 0;
		*noretcomp = (o->timing_config & PERFDATA_PT_CFG_NORETCOMP) != 0;
	}
	cfg = PERFDATA_PT_CFG_PT | PERFDATA_PT_CFG_TSC | PERFDATA_PT_CFG_BRANCH;
	if (*cyc)
		cfg |= PERFDATA_PT_CFG_CYC;
	if (*noretcomp)
		cfg |= PERFDATA_PT_CFG_NORETCOMP;
	/* psb_period v: a PSB+ every 2^(v+11) bytes */
	cfg |= (uint64_t)(run->psb_period >= 4096 ? 1 : 0) <<
	    PERFDATA_PT_CFG_PSB_PERIOD_SHIFT;
	return cfg;
}

/* pt.* and the perf.data config of the emulated PT. */
static void
pt_facts(const struct emu_run *run, struct snapwrite_pt *pt,
    struct perfdata_writer_config *wcfg, struct perfdata_time_conv *tc)
{
	static const char *const profile[] = { "low", "normal", "high",
	    "config" };
	int cyc, noretcomp;

	memset(pt, 0, sizeof(*pt));
	pt->config = pt_config_of(run, &cyc, &noretcomp);
	pt->pmu_type = 10;
	pt->branch = 1;
	pt->tsc = 1;
	pt->cyc = cyc;
	pt->noretcomp = noretcomp;
	pt->psb_period = (uint32_t)run->psb_period;
	pt->tsc_hz = 1000000000ULL;
	pt->nom_freq = 1;
	pt->time_mult = 1;
	pt->clock = "virtual";
	pt->timing_profile = profile[run->opt->timing];
	perfdata_writer_config_default(wcfg, noretcomp);
	wcfg->pt_config = pt->config;
	wcfg->pt.priv[PERFDATA_PT_MAX_NONTURBO_RATIO] = 1;
	wcfg->sample_cpu = 0;
	memset(tc, 0, sizeof(*tc));
	tc->time_mult = 1;		/* 1 GHz virtual TSC: ns == ticks */
	tc->cap_user_time_zero = 1;
}

/* The CPU the trace describes is emu's (DECISIONS.md): no errata. */
static void
emulated_cpu(struct ptcaps_cpu *cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	memset(cpu, 0, sizeof(*cpu));
	snprintf(cpu->vendor, sizeof(cpu->vendor), "GenuineIntel");
	snprintf(cpu->model_name, sizeof(cpu->model_name),
	    "ptkit emu (qemu-x86_64 TCG)");
	cpu->family = 6;
	cpu->online = n > 0 ? (int)n : 0;
}

/* One thread row and AUXTRACE queue per ring copy, and their span. */
static void
ring_threads(const struct emu_run *run, const struct emu_sideband *sb,
    const struct emu_capture *c, struct snapwrite_thread *t,
    struct snapwrite_source *src)
{
	uint64_t start = UINT64_MAX, end = 0;
	size_t i, j;

	for (i = 0; i < c->n_rings; i++) {
		const struct emu_ring_copy *r = &c->rings[i];

		t[i].tid = r->tid;
		for (j = 0; j < sb->n; j++)
			if (sb->rec[j].tid == r->tid)
				t[i].pid = sb->rec[j].pid;
		t[i].name = comm_of(sb, r->tid);
		t[i].auxtrace_idx = (uint32_t)i;
		t[i].ring_size = run->opt->aux_bytes;
		t[i].data = r->data;
		t[i].kept = r->kept;
		t[i].file = r->file;
		t[i].range[0] = (struct snapwrite_range){ r->file_off[0],
		    r->file_len[0] };
		t[i].range[1] = (struct snapwrite_range){ r->file_off[1],
		    r->file_len[1] };
		t[i].offset = r->total - r->kept;
		t[i].reference = r->last_time;
		t[i].start_ns = r->first_time;
		t[i].end_ns = r->last_time;
		/* overwritten, or given back for the budget: either way the
		   history starts later than the thread */
		t[i].wrapped = r->wrapped || r->kept < r->total;
		t[i].exited = r->exited;
		if (r->first_time < start)
			start = r->first_time;
		if (r->last_time > end)
			end = r->last_time;
	}
	src->threads = t;
	src->n_threads = c->n_rings;
	src->start_tsc = src->start_ns = start == UINT64_MAX ? 0 : start;
	src->end_tsc = src->end_ns = end;
	src->fired_ns = c->fired_time ? c->fired_time : end;
	src->output_offset = c->output_offset;
	src->has_output_offset = c->has_output_offset;
}

/* ---- what was not kept ---------------------------------------------------- */

static uint64_t
counter_of(const struct emu_sideband *sb, const char *name)
{
	size_t i;

	for (i = 0; i < sb->n_counters; i++)
		if (strcmp(sb->counter[i].name, name) == 0)
			return sb->counter[i].value;
	return 0;
}

/* "128 MiB", "64 KiB", else bytes: sizes as the options take them. */
static void
size_text(uint64_t n, char *buf, size_t size)
{
	if (n >= (1ULL << 30) && n % (1ULL << 30) == 0)
		snprintf(buf, size, "%" PRIu64 " GiB", n >> 30);
	else if (n >= (1ULL << 20) && n % (1ULL << 20) == 0)
		snprintf(buf, size, "%" PRIu64 " MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, size, "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(buf, size, "%" PRIu64 " bytes", n);
}

static void
loss(struct emu_losses *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
loss(struct emu_losses *out, const char *fmt, ...)
{
	va_list ap;

	if (out->n == EMU_LOSS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(out->line[out->n++], EMU_LOSS_LINE, fmt, ap);
	va_end(ap);
}

void
emu_losses(const struct emu_run *run, const struct emu_sideband *sb,
    const struct emu_capture *c, struct emu_losses *out)
{
	uint64_t threads = 0, n, wrapped = 0, overwritten = 0;
	char budget[32], aux[32];
	size_t i;

	out->n = 0;
	for (i = 0; i < sb->n; i++)
		threads += sb->rec[i].type == SB_THREAD;
	size_text(run->opt->budget_bytes, budget, sizeof(budget));
	size_text(run->opt->aux_bytes, aux, sizeof(aux));
	if ((n = counter_of(sb, "untraced_budget_full")) > 0)
		loss(out, "%" PRIu64 " of %" PRIu64 " threads were not traced: "
		    "the ring budget (%s) was full; raise --budget-bytes", n,
		    threads, budget);
	if ((n = counter_of(sb, "untraced_slots_full")) > 0)
		loss(out, "%" PRIu64 " of %" PRIu64 " threads were not traced: "
		    "the emu plugin's limit on rings in one run was reached; "
		    "record a shorter part of the run (--max-capture-ms)", n,
		    threads);
	if ((n = counter_of(sb, "untraced_ring_errors")) > 0)
		loss(out, "%" PRIu64 " of %" PRIu64 " threads were not traced: "
		    "their rings could not be made in the scratch directory "
		    "(the plugin said why); free space in TMPDIR", n, threads);
	if ((n = counter_of(sb, "budget_trimmed_threads")) > 0)
		loss(out, "%" PRIu64 " of %" PRIu64 " threads gave up the "
		    "oldest %" PRIu64 " bytes of their history after they "
		    "ended (%" PRIu64 " of them all of it): the ring budget "
		    "(%s) was full; raise --budget-bytes", n, threads,
		    counter_of(sb, "budget_dropped_bytes"),
		    counter_of(sb, "budget_dropped_threads"), budget);
	for (i = 0; i < c->n_rings; i++)
		if (c->rings[i].wrapped) {
			wrapped++;
			overwritten += c->rings[i].total -
			    run->opt->aux_bytes;
		}
	if (wrapped > 0)
		loss(out, "%" PRIu64 " of %" PRIu64 " threads' rings (%s each) "
		    "wrapped: their oldest %" PRIu64 " bytes of trace were "
		    "overwritten; raise --aux-bytes", wrapped, threads, aux,
		    overwritten);
}

#define MAX_COUNTERS (3 + sizeof(((struct emu_sideband *)0)->counter) / \
	sizeof(((struct emu_sideband *)0)->counter[0]))

/* The instructions run, how a fault was located, the plugin's counters. */
static size_t
capture_counters(const struct emu_sideband *sb, const struct emu_capture *c,
    struct snapwrite_counter *out)
{
	uint64_t insns = 0;
	size_t i, n = 0;

	for (i = 0; i < c->n_rings; i++)
		insns += c->rings[i].insns;
	out[n++] = (struct snapwrite_counter){ "guest_instructions", insns };
	/* with fork_untraced (the plugin's): the processes not traced */
	out[n++] = (struct snapwrite_counter){ MANIFEST_C_EXEC_UNTRACED,
	    execs_untraced(sb) };
	if (strcmp(c->reason, "signal") == 0)
		out[n++] = (struct snapwrite_counter){
		    "fault_located_to_block", 1 };
	for (i = 0; i < sb->n_counters; i++)
		out[n++] = (struct snapwrite_counter){ sb->counter[i].name,
		    sb->counter[i].value };
	return n;
}

/* The --filter specs as given, one space between; NULL without any. */
static const char *
join_filters(const struct rec_options *o, char *buf, size_t size)
{
	size_t used = 0;
	int i, n;

	if (o->n_filters == 0)
		return NULL;
	buf[0] = '\0';
	for (i = 0; i < o->n_filters && used < size; i++) {
		n = snprintf(buf + used, size - used, "%s%s", i ? " " : "",
		    o->filters[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

int
emu_snapshot_write(const struct emu_run *run, const struct emu_sideband *sb,
    const struct emu_capture *c, uint64_t index, char *out, size_t out_size,
    struct error *e)
{
	static const char *const fault_located[] = { "the trace ends at the "
	    "start of the block that faulted: qemu 7.2 does not tell the "
	    "faulting instruction" };
	const struct rec_options *o = run->opt;
	char filters[REC_MAX_FILTERS * 64];
	const struct snapwrite_setting settings[] = {
		{ .key = "budget_bytes", .num = o->budget_bytes, .numeric = 1 },
		{ .key = "psb_period_bytes", .num = run->psb_period,
		  .numeric = 1 },
		{ .key = "repeat", .num = o->repeat, .numeric = 1 },
		/* the options given, as given; those not given are left out */
		{ .key = "cpus", .text = o->cpus },
		{ .key = "filter", .text = join_filters(o, filters,
		  sizeof(filters)) },
		{ .key = "trigger_hits", .num = o->trigger_hits,
		  .numeric = o->trigger_hits != 0 },
		{ .key = "tail_ms", .num = o->tail_ms,
		  .numeric = o->has_tail_ms },
		{ .key = "after_ms", .num = o->after_ms,
		  .numeric = o->has_after_ms },
		{ .key = "min_capture_ms", .num = o->min_capture_ms,
		  .numeric = o->min_capture_ms != 0 },
		{ .key = "max_capture_ms", .num = o->max_capture_ms,
		  .numeric = o->has_max_capture_ms },
		{ .key = "clock_model",
		  .text = "emulated: one clock shared by all threads, the "
		  "host's monotonic time under emulation as a 1 GHz TSC "
		  "(read at every syscall return and every 65536 instructions, "
		  "1 ns per instruction in between, never backwards), CBR 1, "
		  "nom_freq 1" },
		{ .key = "emulator", .text = "qemu-x86_64 7.2" },
		{ .key = "trigger_symbol", .text = o->trigger_symbol },
		{ .key = "trigger_line", .text = o->trigger_line },
	};
	struct snapwrite_counter counters[MAX_COUNTERS];
	/* what was not kept, the fault, what processes did untraced */
	char *warnings[EMU_LOSS_MAX + 1 + 16];
	struct emu_losses lost;
	struct perfdata_writer_config wcfg;
	struct perfdata_time_conv tc;
	struct snapwrite_thread *threads;
	struct snapwrite_source src;
	struct ptsb_record *rec;
	struct ptcaps_cpu cpu;
	size_t n_warnings = 0, n_proc, i;
	int rc;

	if ((rc = snapwrite_dest(o, index, out, out_size, e)) < 0)
		return rc;
	if ((threads = calloc(c->n_rings + 1, sizeof(*threads))) == NULL)
		return error_set(e, ERR_NOMEM, "snapshot");
	memset(&src, 0, sizeof(src));
	if ((rc = perf_sideband(sb, c, &rec, &src.n_sideband, e)) < 0) {
		free(threads);
		return rc;
	}
	src.sideband = rec;
	src.opt = o;
	src.backend = "emu";
	src.settings = settings;
	src.n_settings = sizeof(settings) / sizeof(settings[0]);
	emulated_cpu(&cpu);
	src.cpu = &cpu;
	src.emulated = 1;
	pt_facts(run, &src.pt, &wcfg, &tc);
	src.pid = run->pid;
	src.state = run->state;
	src.exit_code = run->exit_code;
	src.signal = run->signal;
	src.jit_map = c->jit_map != NULL ? c->jit_map : run->jit_map_removed;
	src.jit = c->jit;
	src.n_jit = c->n_jit;
	src.wconfig = &wcfg;
	src.tc = &tc;
	ring_threads(run, sb, c, threads, &src);
	src.reason = c->reason;
	src.detail = c->detail;
	src.start_wall_ns = run->start_wall_ns;
	if (run->clock_wall_ns != 0) {
		src.end_wall_ns = run->clock_wall_ns + src.end_ns;
		src.fired_wall_ns = run->clock_wall_ns + src.fired_ns;
	}
	src.counters = counters;
	src.n_counters = capture_counters(sb, c, counters);
	emu_losses(run, sb, c, &lost);
	for (i = 0; i < lost.n; i++)
		warnings[n_warnings++] = lost.line[i];
	if (strcmp(c->reason, "signal") == 0)
		warnings[n_warnings++] = (char *)fault_located[0];
	n_proc = emu_process_warnings(sb, warnings + n_warnings,
	    sizeof(warnings) / sizeof(warnings[0]) - n_warnings);
	n_warnings += n_proc;
	src.warnings = (const char *const *)warnings;
	src.n_warnings = n_warnings;
	src.output_log = run->output_log;
	/*
	 * output.log keeps what the program had written when the snapshot
	 * was taken, as the plugin counted it, and not what came after (the
	 * program runs on while the snapshot is written); with a process
	 * that ran untraced, whose writes nobody counted, all that came.
	 */
	if (c->has_output_end &&
	    execs_untraced_before(sb, c->fired_time) == 0 &&
	    counter_of(sb, "fork_untraced") == 0) {
		src.output_log_max = c->output_end;
		src.has_output_log_max = 1;
	}
	rc = snapwrite(&src, out, e);
	for (i = n_warnings - n_proc; i < n_warnings; i++)
		free(warnings[i]);
	free(rec);
	free(threads);
	return rc;
}

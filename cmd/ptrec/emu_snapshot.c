/* emu_snapshot: see emu_snapshot.h. */
#include "emu_snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "jit_archive.h"
#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "rec_manifest.h"
#include "fmt/snapshot.h"

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

int
emu_sideband_read(struct emu_sideband *sb, const char *path, struct error *e)
{
	struct emu_sb_rec r;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int rc = 0, k;

	memset(sb, 0, sizeof(*sb));
	if ((f = fopen(path, "re")) == NULL)
		return error_set_errno(e, errno, "%s", path);
	while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] != '\n')
			break;		/* a line still being written */
		line[len - 1] = '\0';
		k = sb_parse(line, &r, sb);
		if (k < 0)
			rc = error_set(e, ERR_FORMAT, "%s: bad line '%s'", path,
			    line);
		else if (k > 0 && (rc = sb_add(sb, &r, e)) < 0)
			free(r.text);
	}
	free(line);
	fclose(f);
	if (rc < 0)
		emu_sideband_free(sb);
	return rc;
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
	struct emu_jit_code j, *grown;
	uint64_t len;
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

int
emu_capture_read(struct emu_capture *c, const char *scratch, uint64_t seq,
    struct error *e)
{
	char path[PATH_MAX], line[256];
	struct emu_ring_copy r;
	uint64_t len = 0;
	FILE *f;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->seq = seq;
	snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/threads", scratch,
	    seq);
	if ((f = fopen(path, "re")) == NULL)
		return error_set_errno(e, errno, "%s", path);
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		memset(&r, 0, sizeof(r));
		if (sscanf(line, "%d %" SCNu64 " %" SCNu64 " %d %" SCNx64 " %"
		    SCNx64 " %" SCNu64 " %d", &r.tid, &r.total, &r.kept,
		    &r.wrapped, &r.first_time, &r.last_time, &r.insns,
		    &r.exited) != 8) {
			rc = error_set(e, ERR_FORMAT, "%s: bad line", path);
			break;
		}
		snprintf(path, sizeof(path), "%s/snap.%" PRIu64 "/%d.pt",
		    scratch, seq, r.tid);
		if ((rc = read_whole(path, &r.data, &len, e)) < 0)
			break;
		r.kept = len;
		if ((rc = capture_add(c, &r, e)) < 0)
			free(r.data);
	}
	fclose(f);
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
		if (fscanf(f, "%*s %*d %" SCNx64, &c->fired_time) != 1)
			c->fired_time = 0;
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

static int
ring_from_file(const char *path, struct emu_ring_copy *r, struct error *e)
{
	const struct emu_ring_hdr *h;
	uint8_t *ring = NULL, tail[64];
	struct stat st;
	uint64_t total;
	size_t n;
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
	if (h->magic != EMU_RING_MAGIC ||
	    h->ring_size + EMU_HDR_SIZE > (uint64_t)st.st_size) {
		rc = error_set(e, ERR_FORMAT, "%s: not an emu ring", path);
		goto out;
	}
	memset(r, 0, sizeof(*r));
	ring = malloc(h->ring_size);
	r->data = malloc(h->ring_size);
	if (ring == NULL || r->data == NULL) {
		free(r->data);
		rc = error_set(e, ERR_NOMEM, "%s", path);
		goto out;
	}
	memcpy(ring, (const uint8_t *)map + EMU_HDR_SIZE, h->ring_size);
	total = h->total;
	if (h->state == EMU_RING_LIVE) {
		n = final_packets(h, tail, sizeof(tail));
		emu_ring_put(ring, h->ring_size, &total, tail, n);
	}
	r->tid = h->tid;
	r->total = total;
	r->kept = emu_ring_unroll(ring, h->ring_size, total, r->data);
	r->wrapped = total > h->ring_size;
	r->exited = h->state == EMU_RING_CLOSED;
	r->first_time = h->first_time;
	r->last_time = h->clock;
	r->insns = h->insns;
out:
	free(ring);
	munmap(map, (size_t)st.st_size);
	return rc;
}

int
emu_capture_from_rings(struct emu_capture *c, const char *scratch,
    struct error *e)
{
	char path[PATH_MAX];
	struct emu_ring_copy r;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if ((d = opendir(scratch)) == NULL)
		return error_set_errno(e, errno, "%s", scratch);
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "ring.", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", scratch, de->d_name);
		if ((rc = ring_from_file(path, &r, e)) < 0)
			break;
		if ((rc = capture_add(c, &r, e)) < 0)
			free(r.data);
	}
	closedir(d);
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

	for (i = 0; i < c->n_rings; i++)
		free(c->rings[i].data);
	free(c->rings);
	for (i = 0; i < c->n_jit; i++)
		free(c->jit[i].data);
	free(c->jit);
	free(c->jit_map);
	memset(c, 0, sizeof(*c));
}

/* ---- writing ------------------------------------------------------------- */

#define MAX_IMAGES 512

/* An archived image and what MMAP2 records say about it. */
struct image_row {
	const char *path;
	struct snapshot_image img;
	int ok;
};

struct writer_ctx {
	const struct emu_run *run;
	const struct emu_sideband *sb;
	const struct emu_capture *cap;
	struct snapshot *snap;
	struct perfdata_writer *pd;
	struct image_row img[MAX_IMAGES];
	size_t n_img;
	struct jit_row {
		const struct emu_jit_code *code;
		struct rec_jit_image im;
	} *jit;				/* one per dumped region archived */
	size_t n_jit;
};

static int
dest_path(const struct emu_run *run, uint64_t index, char *out, size_t size,
    struct error *e)
{
	const struct rec_options *o = run->opt;
	char id[SNAPSHOT_ID_LEN + 1], parent[PATH_MAX];
	int rc, n;

	if (o->out_dir != NULL) {
		n = index > 1 ? snprintf(out, size, "%s.%" PRIu64, o->out_dir,
		    index) : snprintf(out, size, "%s", o->out_dir);
		return n > 0 && (size_t)n < size ? 0 :
		    error_set(e, ERR_RANGE, "%s: path too long", o->out_dir);
	}
	if ((rc = snapshot_make_id(id, sizeof(id), time(NULL), e)) < 0)
		return rc;
	if (o->store != NULL) {
		snprintf(parent, sizeof(parent), "%s/snapshots", o->store);
		if (mkdir(o->store, 0700) < 0 && errno != EEXIST)
			return error_set_errno(e, errno, "%s", o->store);
	} else {
		snprintf(parent, sizeof(parent), "ptkit-snapshots");
	}
	if (mkdir(parent, 0700) < 0 && errno != EEXIST)
		return error_set_errno(e, errno, "%s", parent);
	n = snprintf(out, size, "%s/%s", parent, id);
	return n > 0 && (size_t)n < size ? 0 :
	    error_set(e, ERR_RANGE, "%s: path too long", parent);
}

static const struct image_row *
image_archive(struct writer_ctx *w, const char *path)
{
	struct image_row *r;
	struct error e;
	size_t i;

	for (i = 0; i < w->n_img; i++)
		if (strcmp(w->img[i].path, path) == 0)
			return &w->img[i];
	if (w->n_img == MAX_IMAGES)
		return NULL;
	r = &w->img[w->n_img++];
	r->path = path;
	r->ok = snapshot_archive_file(w->snap, path, NULL, &r->img, &e) == 0;
	if (!r->ok)
		manifest_add_warning(&w->snap->manifest, NULL,
		    "image %s not archived: %s", path, e.msg);
	return r;
}

static struct perfdata_sid
sid_of(int pid, int tid, uint64_t time)
{
	struct perfdata_sid s;

	memset(&s, 0, sizeof(s));
	s.pid = (uint32_t)pid;
	s.tid = (uint32_t)tid;
	s.time = time;
	s.cpu = PERFDATA_NO_CPU;
	return s;
}

/* The archived JIT code holding addr, or NULL. */
static const struct jit_row *
jit_at(const struct writer_ctx *w, uint64_t addr)
{
	for (size_t i = 0; i < w->n_jit; i++)
		if (addr >= w->jit[i].code->start &&
		    addr - w->jit[i].code->start < w->jit[i].code->len)
			return &w->jit[i];
	return NULL;
}

/*
 * An anonymous executable mapping whose bytes were dumped is described as
 * a mapping of its archived image (jit_archive.h), so perf and ptdecode
 * read its code; others stay //anon, which neither can decode.
 */
static void
map_jit(struct writer_ctx *w, const struct emu_sb_rec *r,
    struct perfdata_mmap *m)
{
	const struct jit_row *j;
	uint64_t delta;

	if (strcmp(r->text, "//anon") != 0 || (j = jit_at(w, r->addr)) == NULL)
		return;
	delta = r->addr - j->code->start;
	m->filename = j->im.name;
	m->pgoff = j->im.pgoff + delta;
	if (m->len > j->code->len - delta)
		m->len = j->code->len - delta;
	m->build_id_size = (uint8_t)j->im.img.build_id_size;
	memcpy(m->build_id, j->im.img.build_id, j->im.img.build_id_size);
}

static int
write_map(struct writer_ctx *w, const struct emu_sb_rec *r, struct error *e)
{
	const struct image_row *im = NULL;
	struct perfdata_mmap m;

	if (!(r->prot & 4 /* PROT_EXEC */))
		return 0;		/* perf walks code only */
	memset(&m, 0, sizeof(m));
	m.sid = sid_of(r->pid, r->tid, r->time);
	m.pid = (uint32_t)r->pid;
	m.tid = (uint32_t)r->tid;
	m.addr = r->addr;
	m.len = r->len;
	m.pgoff = r->pgoff;
	m.prot = r->prot;
	m.flags = 2;			/* MAP_PRIVATE */
	m.filename = r->text;
	if (r->text[0] == '/')
		im = image_archive(w, r->text);
	if (im != NULL && im->ok && im->img.build_id_size > 0) {
		m.build_id_size = (uint8_t)im->img.build_id_size;
		memcpy(m.build_id, im->img.build_id, im->img.build_id_size);
	}
	map_jit(w, r, &m);
	return perfdata_write_mmap2(w->pd, &m, e);
}

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

static int
write_thread(struct writer_ctx *w, const struct emu_sb_rec *r,
    struct error *e)
{
	struct perfdata_comm c;
	struct perfdata_task t;
	struct perfdata_itrace_start it;
	int rc;

	if (r->ptid != 0) {
		memset(&t, 0, sizeof(t));
		t.sid = sid_of(r->pid, r->tid, r->time);
		t.pid = t.ppid = (uint32_t)r->pid;
		t.tid = (uint32_t)r->tid;
		t.ptid = (uint32_t)r->ptid;
		t.time = r->time;
		t.is_fork = 1;
		if ((rc = perfdata_write_task(w->pd, &t, e)) < 0)
			return rc;
	}
	memset(&c, 0, sizeof(c));
	c.sid = sid_of(r->pid, r->tid, r->time);
	c.pid = (uint32_t)r->pid;
	c.tid = (uint32_t)r->tid;
	c.exec = r->ptid == 0;
	c.comm = comm_of(w->sb, r->tid);
	if ((rc = perfdata_write_comm(w->pd, &c, e)) < 0)
		return rc;
	memset(&it, 0, sizeof(it));
	it.sid = sid_of(r->pid, r->tid, r->time);
	it.pid = (uint32_t)r->pid;
	it.tid = (uint32_t)r->tid;
	return perfdata_write_itrace_start(w->pd, &it, e);
}

static int
write_exit(struct writer_ctx *w, const struct emu_sb_rec *r, struct error *e)
{
	struct perfdata_task t;

	memset(&t, 0, sizeof(t));
	t.sid = sid_of(r->pid, r->tid, r->time);
	t.pid = t.ppid = (uint32_t)r->pid;
	t.tid = t.ptid = (uint32_t)r->tid;
	t.time = r->time;
	return perfdata_write_task(w->pd, &t, e);
}

static int
cmp_time(const void *a, const void *b)
{
	const struct emu_sb_rec *x = *(const struct emu_sb_rec *const *)a;
	const struct emu_sb_rec *y = *(const struct emu_sb_rec *const *)b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/* Sideband in time order, so that every map precedes the trace it serves. */
static int
write_sideband(struct writer_ctx *w, struct error *e)
{
	const struct emu_sb_rec **order;
	size_t i;
	int rc = 0;

	if ((order = calloc(w->sb->n + 1, sizeof(*order))) == NULL)
		return error_set(e, ERR_NOMEM, "sideband");
	for (i = 0; i < w->sb->n; i++)
		order[i] = &w->sb->rec[i];
	qsort(order, w->sb->n, sizeof(*order), cmp_time);
	for (i = 0; rc == 0 && i < w->sb->n; i++) {
		switch (order[i]->type) {
		case SB_MAP: rc = write_map(w, order[i], e); break;
		case SB_THREAD: rc = write_thread(w, order[i], e); break;
		case SB_EXIT: rc = write_exit(w, order[i], e); break;
		default: break;
		}
	}
	free(order);
	return rc;
}

static int
write_traces(struct writer_ctx *w, struct error *e)
{
	const struct emu_ring_copy *r;
	struct perfdata_auxtrace a;
	size_t i;
	int rc;

	for (i = 0; i < w->cap->n_rings; i++) {
		r = &w->cap->rings[i];
		memset(&a, 0, sizeof(a));
		a.offset = r->total - r->kept;
		a.reference = r->last_time ? r->last_time : 1;
		a.idx = (uint32_t)i;
		a.tid = (uint32_t)r->tid;
		a.cpu = PERFDATA_NO_CPU;
		if ((rc = perfdata_write_auxtrace(w->pd, &a, r->data, r->kept,
		    e)) < 0)
			return rc;
	}
	return perfdata_write_finished_round(w->pd, e);
}

static int
write_build_ids(struct writer_ctx *w, struct error *e)
{
	size_t i;
	int rc;

	for (i = 0; i < w->n_img; i++) {
		if (!w->img[i].ok || w->img[i].img.build_id_size == 0)
			continue;
		rc = perfdata_writer_add_build_id(w->pd, -1,
		    w->img[i].img.build_id, w->img[i].img.build_id_size,
		    w->img[i].path, e);
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < w->n_jit; i++) {
		rc = perfdata_writer_add_build_id(w->pd, -1,
		    w->jit[i].im.img.build_id, w->jit[i].im.img.build_id_size,
		    w->jit[i].im.name, e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

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

static int
write_perf_data(struct writer_ctx *w, struct error *e)
{
	struct perfdata_writer_config cfg;
	struct perfdata_time_conv tc;
	int cyc, noretcomp, rc;

	pt_config_of(w->run, &cyc, &noretcomp);
	perfdata_writer_config_default(&cfg, noretcomp);
	cfg.pt_config = pt_config_of(w->run, &cyc, &noretcomp);
	cfg.pt.priv[PERFDATA_PT_MAX_NONTURBO_RATIO] = 1;
	cfg.sample_cpu = 0;
	rc = perfdata_writer_open(&w->pd,
	    snapshot_path(w->snap, SNAPSHOT_PERF_DATA), &cfg, e);
	if (rc < 0)
		return rc;
	memset(&tc, 0, sizeof(tc));
	tc.time_mult = 1;		/* 1 GHz virtual TSC: ns == ticks */
	tc.cap_user_time_zero = 1;
	if ((rc = perfdata_write_time_conv(w->pd, &tc, e)) < 0 ||
	    (rc = perfdata_write_auxtrace_info(w->pd, e)) < 0 ||
	    (rc = write_sideband(w, e)) < 0 ||
	    (rc = write_traces(w, e)) < 0 ||
	    (rc = write_build_ids(w, e)) < 0) {
		perfdata_writer_abort(w->pd);
		w->pd = NULL;
		return rc;
	}
	rc = perfdata_writer_close(w->pd, e);
	w->pd = NULL;
	return rc;
}

/* ---- the manifest --------------------------------------------------------- */

static int
fill_host(struct manifest *m, struct error *e)
{
	struct utsname u;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int rc = 0;

	if (uname(&u) == 0) {
		rc = manifest_set_string(&m->host.hostname, u.nodename, e);
		if (rc == 0)
			rc = manifest_set_string(&m->host.kernel, u.release, e);
	}
	/* The CPU the trace describes is emu's (DECISIONS.md): no errata. */
	if (rc == 0)
		rc = manifest_set_string(&m->host.cpu_vendor, "GenuineIntel", e);
	if (rc == 0)
		rc = manifest_set_string(&m->host.cpu_model_name,
		    "ptkit emu (qemu-x86_64 TCG)", e);
	m->host.cpu_family = 6;
	m->host.cpu_model = 0;
	m->host.cpu_stepping = 0;
	m->host.nr_cpus = n > 0 ? (uint32_t)n : 1;
	m->host.emulated = 1;
	return rc;
}

static int
fill_recorder(struct manifest *m, const struct emu_run *run, struct error *e)
{
	const struct rec_options *o = run->opt;
	int rc;

	if ((rc = manifest_set_string(&m->recorder.backend, "emu", e)) < 0 ||
	    (rc = manifest_set_string(&m->recorder.version, PTKIT_VERSION,
	    e)) < 0 ||
	    (rc = rec_manifest_setting(m, "aux_bytes", o->aux_bytes, e)) < 0 ||
	    (rc = rec_manifest_setting(m, "budget_bytes", o->budget_bytes, e)) < 0 ||
	    (rc = rec_manifest_setting(m, "psb_period_bytes", run->psb_period, e)) < 0 ||
	    (rc = rec_manifest_setting(m, "repeat", o->repeat, e)) < 0 ||
	    (rc = manifest_set_setting(m, "clock_model",
	    "virtual TSC 1 GHz, CPI 1, CBR 1, nom_freq 1", e)) < 0 ||
	    (rc = manifest_set_setting(m, "emulator", "qemu-x86_64 7.2", e)) < 0)
		return rc;
	if (o->trigger_symbol != NULL &&
	    (rc = manifest_set_setting(m, "trigger_symbol", o->trigger_symbol,
	    e)) < 0)
		return rc;
	if (o->trigger_line != NULL &&
	    (rc = manifest_set_setting(m, "trigger_line", o->trigger_line,
	    e)) < 0)
		return rc;
	return 0;
}

static int
fill_pt(struct manifest *m, const struct emu_run *run, struct error *e)
{
	static const char *const profile[] = { "low", "normal", "high",
	    "config" };
	int cyc, noretcomp;

	m->pt.config = pt_config_of(run, &cyc, &noretcomp);
	m->pt.pmu_type = 10;
	m->pt.branch = 1;
	m->pt.tsc = 1;
	m->pt.cyc = cyc;
	m->pt.noretcomp = noretcomp;
	m->pt.psb_period = (uint32_t)run->psb_period;
	m->pt.tsc_hz = 1000000000ULL;
	m->pt.nom_freq = 1;
	m->pt.time_mult = 1;
	if (manifest_set_string(&m->pt.clock, "virtual", e) < 0)
		return -ERR_NOMEM;
	return manifest_set_string(&m->pt.timing_profile,
	    profile[run->opt->timing], e);
}

static int
fill_threads(struct manifest *m, const struct emu_sideband *sb,
    const struct emu_capture *c, struct error *e)
{
	struct manifest_thread t;
	size_t i, j;
	int rc;

	for (i = 0; i < c->n_rings; i++) {
		const struct emu_ring_copy *r = &c->rings[i];

		memset(&t, 0, sizeof(t));
		t.tid = (uint32_t)r->tid;
		t.name = (char *)comm_of(sb, r->tid);
		t.auxtrace_idx = (uint32_t)i;
		t.bytes_kept = r->kept;
		t.wrapped = r->wrapped;
		t.start_ns = r->first_time;
		t.end_ns = r->last_time;
		t.exited = r->exited;
		for (j = 0; j < sb->n; j++)
			if (sb->rec[j].tid == r->tid)
				t.pid = (uint32_t)sb->rec[j].pid;
		if ((rc = manifest_add_thread(m, &t, e)) < 0)
			return rc;
	}
	return 0;
}

static int
fill_capture(struct manifest *m, const struct emu_run *run,
    const struct emu_sideband *sb, const struct emu_capture *c,
    struct error *e)
{
	uint64_t start = UINT64_MAX, end = 0, insns;
	size_t i;
	int rc;

	for (i = 0; i < c->n_rings; i++) {
		if (c->rings[i].first_time < start)
			start = c->rings[i].first_time;
		if (c->rings[i].last_time > end)
			end = c->rings[i].last_time;
		m->threads[i].ring_size = run->opt->aux_bytes;
	}
	m->capture.start_tsc = m->capture.start_ns =
	    start == UINT64_MAX ? 0 : start;
	m->capture.end_tsc = m->capture.end_ns = end;
	m->capture.start_wall_ns = run->start_wall_ns;
	m->trigger.fired_ns = c->fired_time ? c->fired_time : end;
	if ((rc = manifest_set_string(&m->trigger.kind, c->reason, e)) < 0)
		return rc;
	if (c->detail != NULL &&
	    (rc = manifest_set_string(&m->trigger.detail, c->detail, e)) < 0)
		return rc;
	for (i = 0, insns = 0; i < c->n_rings; i++)
		insns += c->rings[i].insns;
	if ((rc = manifest_set_counter(m, "guest_instructions", insns, e)) < 0)
		return rc;
	if (strcmp(c->reason, "signal") == 0 &&
	    ((rc = manifest_set_counter(m, "fault_located_to_block", 1, e)) < 0 ||
	    (rc = manifest_add_warning(m, e, "the trace ends at the start of "
	    "the block that faulted: qemu 7.2 does not tell the faulting "
	    "instruction")) < 0))
		return rc;
	for (i = 0; i < sb->n_counters; i++)
		if ((rc = manifest_set_counter(m, sb->counter[i].name,
		    sb->counter[i].value, e)) < 0)
			return rc;
	return 0;
}

/*
 * The JIT map first (the code images take their symbols from it), then
 * each dumped region as an image.  A region that cannot be archived is a
 * warning: its code stays //anon.
 */
static int
archive_jit(struct writer_ctx *w, struct error *e)
{
	const struct emu_capture *c = w->cap;
	const char *copy = c->jit_map != NULL ? c->jit_map :
	    w->run->jit_map_removed;
	struct manifest *m = &w->snap->manifest;
	struct error ie;
	size_t i;
	int rc;

	if ((rc = rec_jit_archive_map(w->snap, w->run->pid, copy, e)) < 0)
		return rc;
	if (c->n_jit == 0)
		return 0;
	if ((w->jit = calloc(c->n_jit, sizeof(*w->jit))) == NULL)
		return error_set(e, ERR_NOMEM, "JIT code");
	for (i = 0; i < c->n_jit; i++) {
		struct jit_row *j = &w->jit[w->n_jit];

		j->code = &c->jit[i];
		rc = rec_jit_image(w->snap, w->run->pid, j->code->start,
		    j->code->data, j->code->len, &j->im, &ie);
		if (rc == -ERR_NOMEM)
			return error_set(e, ERR_NOMEM, "%s", ie.msg);
		if (rc < 0) {
			if ((rc = manifest_add_warning(m, e, "JIT code at "
			    "0x%" PRIx64 " not archived: %s", j->code->start,
			    ie.msg)) < 0)
				return rc;
			continue;
		}
		w->n_jit++;
	}
	return manifest_set_counter(m, "jit_regions", w->n_jit, e);
}

int
emu_snapshot_write(const struct emu_run *run, const struct emu_sideband *sb,
    const struct emu_capture *c, uint64_t index, char *out, size_t out_size,
    struct error *e)
{
	struct writer_ctx *w;
	struct manifest *m;
	int rc;

	if ((rc = dest_path(run, index, out, out_size, e)) < 0)
		return rc;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "snapshot");
	w->run = run;
	w->sb = sb;
	w->cap = c;
	if ((rc = snapshot_begin(&w->snap, out, e)) < 0) {
		free(w);
		return rc;
	}
	m = &w->snap->manifest;
	if ((rc = fill_host(m, e)) < 0 || (rc = fill_recorder(m, run, e)) < 0 ||
	    (rc = fill_pt(m, run, e)) < 0 || (rc = rec_manifest_target(m, run->opt, run->pid,
	    run->exit_code, run->signal, run->state, e)) < 0 ||
	    (rc = archive_jit(w, e)) < 0 ||
	    (rc = write_perf_data(w, e)) < 0 ||
	    (rc = fill_threads(m, sb, c, e)) < 0 ||
	    (rc = fill_capture(m, run, sb, c, e)) < 0 ||
	    (rc = snapshot_copy_in(w->snap, SNAPSHOT_OUTPUT_LOG,
	    run->output_log, e)) < 0) {
		snapshot_abort(w->snap);
		free(w->jit);
		free(w);
		return rc;
	}
	rc = snapshot_commit(w->snap, e);
	free(w->jit);
	free(w);
	return rc;
}

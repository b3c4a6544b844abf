/* snapload: see snapload.h. */
#include "snapload.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/scratch.h"
#include "fmt/snapshot.h"

static char *
path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	if (p != NULL)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

static int
readable(const char *path)
{
	return path != NULL && access(path, R_OK) == 0;
}

/*
 * The snapshot's file rel, resolved beneath the snapshot directory: 1 and
 * *out when it is there and readable, 0 when not, or -ERR_PERM (a link
 * leading out), -ERR_NOMEM.
 */
static int
member(const struct snap *s, const char *rel, char **out, struct error *e)
{
	int rc = snapshot_member(s->dir, rel, out, e);

	if (rc == -ERR_NOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	if (!readable(*out)) {
		free(*out);
		*out = NULL;
		return 0;
	}
	return 1;
}

/*
 * The archived file rel, opened beneath the snapshot the first time it is
 * asked for and kept open: 1 with *out ("DIR/REL", the name the block
 * stream gives it) and *fd (the snap's), 0 when it is not there, or
 * -ERR_PERM (a link or a path out of the snapshot), -ERR_IO, -ERR_NOMEM.
 */
static int
member_fd(struct snap *s, const char *rel, char **out, int *fd,
    struct error *e)
{
	struct snap_file *f;
	int rc;

	*out = NULL;
	*fd = -1;
	for (size_t i = 0; i < s->nr_files && *fd < 0; i++)
		if (strcmp(s->files[i].rel, rel) == 0)
			*fd = s->files[i].fd;
	if (*fd < 0) {
		if (s->nr_files == s->cap_files) {
			size_t cap = s->cap_files * 2 + 16;

			if ((f = realloc(s->files, cap * sizeof(*f))) == NULL)
				return error_set(e, ERR_NOMEM, "%s", rel);
			s->files = f;
			s->cap_files = cap;
		}
		if ((rc = snapshot_member_open(s->dir, rel, e)) < 0)
			return rc == -ERR_NOTFOUND ? 0 : rc;
		f = &s->files[s->nr_files];
		if ((f->rel = strdup(rel)) == NULL) {
			close(rc);
			return error_set(e, ERR_NOMEM, "%s", rel);
		}
		f->fd = *fd = rc;
		s->nr_files++;
	}
	if ((*out = path_join(s->dir, rel)) == NULL)
		return error_set(e, ERR_NOMEM, "%s", rel);
	return 1;
}

/* The archive copy of a mapped file by the manifest's path table. */
static int
archived_by_path(struct snap *s, const char *name, char **out, int *fd,
    struct error *e)
{
	const struct manifest_image *im = manifest_find_image(&s->man, name);

	*out = NULL;
	*fd = -1;
	if (im == NULL || im->archived == NULL)
		return 0;
	return member_fd(s, im->archived, out, fd, e);
}

/* The archive copy by build-id, in perf's build-id cache layout. */
static int
archived_by_build_id(struct snap *s, const uint8_t *id, size_t size,
    char **out, int *fd, struct error *e)
{
	char hex[2 * PERFDATA_BUILD_ID_MAX + 1], rel[128];

	*out = NULL;
	*fd = -1;
	if (size < 2 || size > PERFDATA_BUILD_ID_MAX)
		return 0;
	snapshot_hex(id, size, hex);
	snprintf(rel, sizeof(rel), "images/.build-id/%.2s/%s/elf", hex,
	    hex + 2);
	return member_fd(s, rel, out, fd, e);
}

/* The build-id HEADER_BUILD_ID gives for a file name, if any. */
static const struct perfdata_build_id *
header_build_id(const struct perfdata *pd, const char *name)
{
	for (size_t i = 0; i < pd->nr_build_ids; i++) {
		if (pd->build_ids[i].filename != NULL &&
		    strcmp(pd->build_ids[i].filename, name) == 0)
			return &pd->build_ids[i];
	}
	return NULL;
}

static void
note_first(char *buf, size_t size, unsigned count, const char *name)
{
	if (count == 1)
		snprintf(buf, size, "%s", name);
}

/*
 * Decides which file backs mapping m; sets flags.  Returns 0 and a new
 * string in *out, with *fd the archived file's descriptor (-1 for a live
 * or missing one), or -ERR_PERM (an archived file that leads out of the
 * snapshot), -ERR_NOMEM.
 */
static int
resolve_image(struct snap *s, const struct perfdata_mmap *m, uint32_t *flags,
    const uint8_t **bid, uint8_t *bid_size, char **out, int *fd,
    struct error *e)
{
	const struct perfdata_build_id *hb = header_build_id(s->pd,
	    m->filename);
	int rc;

	*bid = m->build_id_size ? m->build_id : hb ? hb->id : NULL;
	*bid_size = m->build_id_size ? m->build_id_size : hb ? hb->size : 0;
	*flags = 0;
	if ((rc = archived_by_path(s, m->filename, out, fd, e)) != 0 ||
	    (rc = archived_by_build_id(s, *bid, *bid_size, out, fd, e)) != 0)
		return rc < 0 ? rc : 0;
	if (m->filename[0] == '/' && readable(m->filename)) {
		*flags = BLKS_MAP_LIVE;
		note_first(s->first_live, sizeof(s->first_live), ++s->nr_live,
		    m->filename);
		*out = strdup(m->filename);
	} else {
		*flags = BLKS_MAP_MISSING;
		note_first(s->first_missing, sizeof(s->first_missing),
		    ++s->nr_missing, m->filename);
		*out = strdup("");
	}
	return *out == NULL ? error_set(e, ERR_NOMEM, "image map") : 0;
}

static int
is_exec_map(const struct perfdata_mmap *m)
{
	/* Old MMAP records only describe executable mappings. */
	return !m->is_mmap2 || (m->prot & PROT_EXEC) != 0;
}

/* Code made at run time: a dump of its bytes, or no file at all. */
static int
is_jit_map(const struct perfdata_mmap *m)
{
	return strcmp(m->filename, SNAPSHOT_ANON) == 0 ||
	    strncmp(m->filename, SNAPSHOT_JIT_IMAGE_PREFIX,
	    sizeof(SNAPSHOT_JIT_IMAGE_PREFIX) - 1) == 0;
}

/*
 * The archived JIT map of pid (absolute), "" when none.  Returns 0, or
 * -ERR_PERM (it leads out of the snapshot), -ERR_NOMEM.
 */
static int
jit_symbols(const struct snap *s, uint32_t pid, char **out, struct error *e)
{
	const struct manifest_jit_map *j = manifest_find_jit_map(&s->man, pid);
	int rc = 0;

	*out = NULL;
	if (j != NULL && j->archived != NULL &&
	    (rc = member(s, j->archived, out, e)) < 0)
		return rc;
	if (*out == NULL && (*out = strdup("")) == NULL)
		return error_set(e, ERR_NOMEM, "JIT map");
	return 0;
}

uint32_t
snap_exec_index(const struct snap *s, uint32_t pid, uint64_t time)
{
	const struct perfdata *pd = s->pd;
	uint32_t n = 0;
	int named = 0;

	for (size_t i = 0; i < pd->nr_comms; i++) {
		const struct perfdata_comm *c = &pd->comms[i];

		if (c->pid != pid)
			continue;
		n += c->exec && named && c->sid.time <= time;
		named = 1;
	}
	return n;
}

uint64_t
snap_exec_time(const struct snap *s, uint32_t pid, uint32_t exec)
{
	const struct perfdata *pd = s->pd;
	uint32_t n = 0;
	int named = 0;

	for (size_t i = 0; exec > 0 && i < pd->nr_comms; i++) {
		const struct perfdata_comm *c = &pd->comms[i];

		if (c->pid != pid)
			continue;
		if (c->exec && named && ++n == exec)
			return c->sid.time;
		named = 1;
	}
	return 0;
}

/*
 * m, as a map of program exec of process pid (its own, or inherited at a
 * fork: the child's first program).
 */
static int
add_map(struct snap *s, const struct perfdata_mmap *m, uint32_t pid,
    uint32_t exec, struct error *e)
{
	struct blks_map *bm;
	const uint8_t *bid;
	uint8_t bid_size;
	struct error ie;
	char *image, *name, *symbols;
	int rc, fd = -1;

	if (s->nr_maps == s->cap_maps) {
		size_t cap = s->cap_maps * 2 + 16;

		if ((bm = realloc(s->maps, cap * sizeof(*bm))) == NULL)
			return error_set(e, ERR_NOMEM, "image maps");
		memset(bm + s->cap_maps, 0, (cap - s->cap_maps) *
		    sizeof(*bm));
		s->maps = bm;
		s->cap_maps = cap;
	}
	bm = &s->maps[s->nr_maps];
	image = symbols = NULL;
	if ((rc = resolve_image(s, m, &bm->flags, &bid, &bid_size, &image,
	    &fd, e)) < 0 || (rc = is_jit_map(m) ? jit_symbols(s, pid, &symbols, e) :
	    (symbols = strdup("")) == NULL ? error_set(e, ERR_NOMEM,
	    "image map") : 0) < 0) {
		free(image);
		free(symbols);
		return rc;
	}
	if ((name = strdup(m->filename)) == NULL) {
		free(image);
		free(symbols);
		return error_set(e, ERR_NOMEM, "image map");
	}
	if (is_jit_map(m))
		bm->flags |= BLKS_MAP_JIT;
	bm->pid = pid;
	bm->exec = exec;
	bm->start = m->addr;
	bm->size = m->len;
	bm->pgoff = m->pgoff;
	bm->name = name;
	bm->image = image;
	bm->symbols = symbols;
	bm->build_id_size = bid_size <= BLKS_BUILD_ID_MAX ? bid_size : 0;
	if (bid != NULL)
		memcpy(bm->build_id, bid, bm->build_id_size);
	s->nr_maps++;
	if (bm->flags & BLKS_MAP_MISSING)
		return 0;
	/* An archived file through its descriptor; a live one as named
	 * (and an archived one too where /proc is not there to do it). */
	rc = fd < 0 ? -ERR_UNSUPPORTED : ptdec_images_add_fd(&s->images,
	    blks_space(pid, exec), m->addr, m->len, m->pgoff, fd, image, &ie);
	if (rc == -ERR_UNSUPPORTED)
		rc = ptdec_images_add(&s->images, blks_space(pid, exec),
		    m->addr, m->len, m->pgoff, image, &ie);
	if (rc == -ERR_NOMEM)
		return error_set(e, ERR_NOMEM, "%s", ie.msg);
	return 0;
}

/*
 * A fork child starts with its parent's memory: as perf does, it gets the
 * code maps its parent had at the fork (time), the parent's own and those
 * the parent got from its own parent, recursively.
 */
static int
inherit_maps(struct snap *s, uint32_t pid, uint32_t ppid, uint64_t time,
    int depth, struct error *e)
{
	const struct perfdata_task *t;
	const struct perfdata_mmap *m;
	uint32_t exec;
	int rc;

	if (depth > 64)
		return 0;	/* a cycle the plugin cannot have written */
	/* the program the parent ran at the fork */
	exec = snap_exec_index(s, ppid, time);
	for (size_t i = 0; i < s->pd->nr_mmaps; i++) {
		m = &s->pd->mmaps[i];
		if (m->pid == ppid && m->sid.time <= time && is_exec_map(m) &&
		    snap_exec_index(s, ppid, m->sid.time) == exec &&
		    (rc = add_map(s, m, pid, 0, e)) < 0)
			return rc;
	}
	/* what the parent had from its own parent, while it still ran the
	   program it was forked with */
	for (size_t i = 0; exec == 0 && i < s->pd->nr_tasks; i++) {
		t = &s->pd->tasks[i];
		if (t->is_fork && t->pid == ppid && t->ppid != ppid &&
		    t->time <= time && (rc = inherit_maps(s, pid, t->ppid,
		    t->time, depth + 1, e)) < 0)
			return rc;
	}
	return 0;
}

static int
load_maps(struct snap *s, struct error *e)
{
	const struct perfdata_task *t;
	int rc;

	if ((rc = ptdec_images_init(&s->images, e)) < 0)
		return rc;
	/* inherited first: what the child maps itself replaces them */
	for (size_t i = 0; i < s->pd->nr_tasks; i++) {
		t = &s->pd->tasks[i];
		if (t->is_fork && t->pid != t->ppid && (rc = inherit_maps(s,
		    t->pid, t->ppid, t->time, 0, e)) < 0)
			return rc;
	}
	for (size_t i = 0; i < s->pd->nr_mmaps; i++) {
		if (!is_exec_map(&s->pd->mmaps[i]))
			continue;
		const struct perfdata_mmap *m = &s->pd->mmaps[i];

		if ((rc = add_map(s, m, m->pid, snap_exec_index(s, m->pid,
		    m->sid.time), e)) < 0)
			return rc;
	}
	return 0;
}

static const struct manifest_thread *
manifest_thread(const struct manifest *m, uint32_t tid)
{
	for (size_t i = 0; i < m->nr_threads; i++) {
		if (m->threads[i].tid == tid)
			return &m->threads[i];
	}
	return NULL;
}

/* The last COMM name of tid, and its pid, from the sideband. */
static const char *
comm_of(const struct perfdata *pd, uint32_t tid, uint32_t *pid)
{
	const char *name = NULL;

	for (size_t i = 0; i < pd->nr_comms; i++) {
		if (pd->comms[i].tid == tid) {
			name = pd->comms[i].comm;
			*pid = pd->comms[i].pid;
		}
	}
	return name;
}

/* Per-CPU queues carry no tid: ITRACE_START on that CPU names it. */
static uint32_t
queue_tid(const struct perfdata *pd, const struct perfdata_queue *q,
    uint32_t *pid)
{
	if (q->tid != UINT32_MAX)
		return q->tid;
	for (size_t i = 0; i < pd->nr_itrace_starts; i++) {
		if (pd->itrace_starts[i].sid.cpu == q->cpu) {
			*pid = pd->itrace_starts[i].pid;
			return pd->itrace_starts[i].tid;
		}
	}
	return q->cpu;
}

static int
load_threads(struct snap *s, struct error *e)
{
	const struct perfdata *pd = s->pd;

	s->threads = calloc(pd->nr_queues + 1, sizeof(*s->threads));
	if (s->threads == NULL)
		return error_set(e, ERR_NOMEM, "threads");
	for (size_t i = 0; i < pd->nr_queues; i++) {
		struct snap_thread *t = &s->threads[s->nr_threads++];
		const struct manifest_thread *mt;
		const char *comm;
		uint32_t pid = 0;

		t->queue = &pd->queues[i];
		t->tid = queue_tid(pd, t->queue, &pid);
		comm = comm_of(pd, t->tid, &pid);
		if ((mt = manifest_thread(&s->man, t->tid)) != NULL) {
			pid = mt->pid;
			t->wrapped = mt->wrapped;
			if (mt->name != NULL)
				comm = mt->name;
		}
		t->pid = pid != 0 ? pid : t->tid;
		t->name = comm != NULL ? comm : "";
	}
	return 0;
}

/* CPU identity for libipt's errata: Intel only, never emu's. */
static void
load_cpu(struct snap *s)
{
	const struct manifest *m = &s->man;

	if (m->host.emulated || m->host.cpu_vendor == NULL ||
	    strstr(m->host.cpu_vendor, "Intel") == NULL)
		return;
	s->cfg.cpu.vendor = pcv_intel;
	s->cfg.cpu.family = (uint16_t)m->host.cpu_family;
	s->cfg.cpu.model = (uint8_t)m->host.cpu_model;
	s->cfg.cpu.stepping = (uint8_t)m->host.cpu_stepping;
}

static int
load_params(struct snap *s, struct error *e)
{
	const uint64_t *priv = s->pd->pt.priv;
	struct perfdata_pt_timing t;
	int rc;

	if ((rc = perfdata_pt_timing(s->pd, &t, e)) < 0)
		return error_prefix(e, "%s/perf.data", s->dir);
	load_cpu(s);
	s->cfg.mtc_freq = (uint8_t)(t.mtc ? t.mtc_freq : 0);
	s->cfg.nom_freq = (uint8_t)(t.max_nonturbo_ratio ?
	    t.max_nonturbo_ratio : s->man.pt.nom_freq);
	s->cfg.cpuid_0x15_eax = t.tsc_ctc_d ? t.tsc_ctc_d : s->man.pt.tsc_ctc_d;
	s->cfg.cpuid_0x15_ebx = t.tsc_ctc_n ? t.tsc_ctc_n : s->man.pt.tsc_ctc_n;
	s->cfg.time.shift = priv[PERFDATA_PT_TIME_SHIFT];
	s->cfg.time.mult = priv[PERFDATA_PT_TIME_MULT];
	s->cfg.time.zero = priv[PERFDATA_PT_TIME_ZERO];
	s->cfg.time.base_ns = s->man.capture.start_ns;
	s->cfg.time.valid = t.tsc && priv[PERFDATA_PT_CAP_USER_TIME_ZERO];
	s->cfg.images = &s->images;
	s->hdr.flags = s->cfg.time.valid ? BLKS_HDR_TIMED : 0;
	s->hdr.decoder = BLKS_DECODER_NATIVE;
	s->hdr.time_shift = s->cfg.time.shift;
	s->hdr.time_mult = s->cfg.time.mult;
	s->hdr.time_zero = s->cfg.time.zero;
	s->hdr.time_base_ns = s->cfg.time.base_ns;
	s->hdr.snapshot = s->dir;
	return 0;
}

/*
 * A file of the snapshot, opened beneath it: a link, a FIFO or a path out
 * of it is refused, and the reader gets the very file that was checked.
 */
static int
snap_open(const struct snap *s, const char *name, struct error *e)
{
	int fd = snapshot_member_open(s->dir, name, e);

	if (fd == -ERR_NOTFOUND)
		return error_set(e, ERR_NOTFOUND, "%s/%s: no such file",
		    s->dir, name);
	return fd;
}

int
snap_load(struct snap *s, const char *dir, struct error *e)
{
	char real[PATH_MAX], *path;
	int rc, fd;

	memset(s, 0, sizeof(*s));
	manifest_init(&s->man);
	if (realpath(dir, real) == NULL)
		return errno == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "no such snapshot directory") :
		    error_set_errno(e, errno, "cannot resolve the path");
	if ((s->dir = strdup(real)) == NULL)
		return error_set(e, ERR_NOMEM, "%s", dir);
	/* a snapshot directory still being written, or left half written */
	switch (scratch_owner_of(s->dir)) {
	case SCRATCH_OWNER_DEAD:
		return error_set(e, ERR_FORMAT, "incomplete snapshot: "
		    "recorder killed");
	case SCRATCH_OWNER_ALIVE:
		return error_set(e, ERR_FORMAT, "incomplete snapshot: "
		    "still being written");
	default:
		break;
	}
	if ((rc = snapshot_read_manifest(s->dir, &s->man, e)) == -ERR_NOTFOUND)
		return error_set(e, ERR_NOTFOUND, "%s/%s: no such file",
		    s->dir, SNAPSHOT_MANIFEST);
	if (rc < 0)
		return rc;
	if ((fd = snap_open(s, SNAPSHOT_PERF_DATA, e)) < 0)
		return fd;
	if ((path = path_join(s->dir, SNAPSHOT_PERF_DATA)) == NULL) {
		close(fd);
		return error_set(e, ERR_NOMEM, "%s", SNAPSHOT_PERF_DATA);
	}
	rc = perfdata_read_fd(&s->pd, fd, path, e);
	free(path);
	if (rc < 0)
		return rc;
	if ((rc = load_params(s, e)) < 0 || (rc = load_maps(s, e)) < 0)
		return rc;
	return load_threads(s, e);
}

int
snap_thread_trace(const struct snap *s, const struct snap_thread *t,
    const uint8_t **buf, size_t *len, uint8_t **owned, struct error *e)
{
	const struct perfdata_queue *q = t->queue;
	int rc;

	*owned = NULL;
	if (q->nr_chunks == 1) {
		*buf = s->pd->auxtrace[q->chunk[0]].data;
		*len = (size_t)s->pd->auxtrace[q->chunk[0]].size;
		return 0;
	}
	if ((rc = perfdata_queue_data(s->pd, q, owned, len, e)) < 0)
		return rc;
	*buf = *owned;
	return 0;
}

void
snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->nr_maps; i++) {
		free((char *)s->maps[i].name);
		free((char *)s->maps[i].image);
		free((char *)s->maps[i].symbols);
	}
	free(s->maps);
	free(s->threads);
	if (s->images.iscache != NULL)
		ptdec_images_fini(&s->images);
	/* after the sections, which libipt may map again until then */
	for (size_t i = 0; i < s->nr_files; i++) {
		close(s->files[i].fd);
		free(s->files[i].rel);
	}
	free(s->files);
	perfdata_free(s->pd);
	manifest_free(&s->man);
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

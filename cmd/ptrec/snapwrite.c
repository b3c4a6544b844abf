/* snapwrite: see snapwrite.h. */
#include "snapwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/mkpath.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "fmt/store.h"
#include "jit_archive.h"
#include "rec/procmaps.h"
#include "tool/report.h"

/* ---- destination ---------------------------------------------------------- */

int
snapwrite_dest(const struct rec_options *o, uint64_t index, char *out,
    size_t size, struct error *e)
{
	char id[STORE_ID_SIZE], parent[PATH_MAX];
	int rc, n;

	if (o->out_dir != NULL) {
		n = index > 1 ? snprintf(out, size, "%s.%" PRIu64, o->out_dir,
		    index) : snprintf(out, size, "%s", o->out_dir);
		return n > 0 && (size_t)n < size ? 0 :
		    error_set(e, ERR_RANGE, "%s: path too long", o->out_dir);
	}
	if ((rc = store_id_make(id, sizeof(id), time(NULL), e)) < 0)
		return rc;
	if (o->store != NULL) {
		if ((rc = store_snapshots_dir(o->store, parent,
		    sizeof(parent), e)) < 0)
			return rc;
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

int
snapwrite_dest_check(const struct rec_options *o, struct error *e)
{
	char path[PATH_MAX], parent[PATH_MAX], *slash;
	struct stat st;
	uint64_t i;
	int rc;

	if (o->out_dir == NULL)
		return 0;
	for (i = 1; i <= o->repeat; i++) {
		if ((rc = snapwrite_dest(o, i, path, sizeof(path), e)) < 0)
			return rc;
		if (lstat(path, &st) == 0)
			return error_set(e, ERR_EXISTS, "%s: already exists",
			    path);
	}
	if ((rc = mkpath_parents(o->out_dir, 0755, e)) < 0) {
		error_prefix(e, "%s", o->out_dir);
		return rc;
	}
	snprintf(parent, sizeof(parent), "%s", o->out_dir);
	while ((slash = strrchr(parent, '/')) != NULL && slash[1] == '\0' &&
	    slash != parent)
		*slash = '\0';		/* "a/b/" is "a/b" */
	if ((slash = strrchr(parent, '/')) == NULL)
		snprintf(parent, sizeof(parent), ".");
	else
		slash[slash == parent] = '\0';	/* "/x": "/" */
	if (access(parent, W_OK | X_OK) < 0)
		return error_set_errno(e, errno, "%s: %s", o->out_dir, parent);
	return 0;
}

/* ---- images --------------------------------------------------------------- */

/* An archived image and what MMAP2 records say about it. */
struct image_row {
	const char *path;
	struct snapshot_image img;
	int ok;
};

/* Dumped JIT code archived as an image. */
struct jit_row {
	const struct snapwrite_code *code;
	struct rec_jit_image im;
};

struct writer_ctx {
	const struct snapwrite_source *src;
	struct snapshot *snap;
	struct perfdata_writer *pd;
	struct image_row *img;
	size_t n_img, cap_img;
	struct jit_row *jit;		/* one per dumped region archived */
	size_t n_jit;
};

/* The vDSO is the same in every process of a kernel: ours is theirs. */
static int
archive_vdso(struct snapshot *s, struct snapshot_image *img, struct error *e)
{
	const void *base;
	size_t size;
	int rc;

	if ((rc = procmaps_vdso(&base, &size, e)) < 0)
		return rc;
	return snapshot_archive_memory(s, "[vdso]", base, size, img, e);
}

/*
 * What could not be archived (what, then why): when the snapshot itself
 * could not be written (a full disk), nothing after it can be whole, and
 * the snapshot fails with why; else (an image gone, unreadable) it is a
 * loss told on stderr at once and in the manifest's warnings.
 */
static int
not_archived(struct writer_ctx *w, const char *what, const char *why,
    struct error *e)
{
	if (w->snap->write_errno != 0)
		return error_set(e, ERR_IO, "%s not archived: %s", what, why);
	report_warning("ptrec", "snapshot", "%s not archived: %s", what, why);
	return manifest_add_warning(&w->snap->manifest, e, "%s not archived: "
	    "%s", what, why);
}

/*
 * Archives the image mapped as path, once per path; one that cannot be
 * read is a warning and its row says so.  Returns 0 and *row, or
 * -ERR_NOMEM, or -ERR_IO when the snapshot could not be written.
 */
static int
image_archive(struct writer_ctx *w, const char *path,
    const struct image_row **row, struct error *e)
{
	struct image_row *r;
	struct error ae;
	size_t i, cap;

	for (i = 0; i < w->n_img; i++)
		if (strcmp(w->img[i].path, path) == 0) {
			*row = &w->img[i];
			return 0;
		}
	if (w->n_img == w->cap_img) {
		cap = w->cap_img ? 2 * w->cap_img : 64;
		if ((r = realloc(w->img, cap * sizeof(*r))) == NULL)
			return error_set(e, ERR_NOMEM, "images");
		w->img = r;
		w->cap_img = cap;
	}
	r = &w->img[w->n_img++];
	memset(r, 0, sizeof(*r));
	r->path = path;
	if (w->src->host_vdso && strcmp(path, "[vdso]") == 0)
		r->ok = archive_vdso(w->snap, &r->img, &ae) == 0;
	else
		r->ok = snapshot_archive_file(w->snap, path, NULL, &r->img,
		    &ae) == 0;
	*row = r;
	if (!r->ok) {
		char what[PATH_MAX + 8];

		snprintf(what, sizeof(what), "image %s", path);
		return not_archived(w, what, ae.msg, e);
	}
	/*
	 * perf finds an archived image by its build-id only: without one it
	 * reads the file at its path, which may change or go.
	 */
	if (r->img.build_id_size == 0 && path[0] == '/') {
		report_warning("ptrec", path, "no build-id: perf decodes it "
		    "from this path only while the file is unchanged; "
		    "ptdecode uses the archived copy (link with "
		    "-Wl,--build-id)");
		return manifest_add_warning(&w->snap->manifest, e, "image %s "
		    "has no build-id: perf decodes it from this path only "
		    "while the file is unchanged; ptdecode uses the archived "
		    "copy", path);
	}
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
	const struct snapwrite_source *src = w->src;
	struct manifest *m = &w->snap->manifest;
	struct error ie;
	size_t i;
	int rc;

	if (src->pid <= 0)
		return 0;
	if ((rc = rec_jit_archive_map(w->snap, src->pid, src->jit_map,
	    e)) < 0)
		return rc;
	if (src->n_jit == 0)
		return 0;
	if ((w->jit = calloc(src->n_jit, sizeof(*w->jit))) == NULL)
		return error_set(e, ERR_NOMEM, "JIT code");
	for (i = 0; i < src->n_jit; i++) {
		struct jit_row *j = &w->jit[w->n_jit];

		j->code = &src->jit[i];
		rc = rec_jit_image(w->snap, src->pid, j->code->start,
		    j->code->data, j->code->len, &j->im, &ie);
		if (rc == -ERR_NOMEM)
			return error_set(e, ERR_NOMEM, "%s", ie.msg);
		if (rc < 0) {
			char what[64];

			snprintf(what, sizeof(what), "JIT code at 0x%" PRIx64,
			    j->code->start);
			if ((rc = not_archived(w, what, ie.msg, e)) < 0)
				return rc;
			continue;
		}
		w->n_jit++;
	}
	return manifest_set_counter(m, "jit_regions", w->n_jit, e);
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
map_jit(const struct writer_ctx *w, struct perfdata_mmap *m)
{
	const struct jit_row *j;
	uint64_t delta;

	if (m->filename == NULL || strcmp(m->filename, SNAPSHOT_ANON) != 0 ||
	    (j = jit_at(w, m->addr)) == NULL)
		return;
	delta = m->addr - j->code->start;
	m->filename = j->im.name;
	m->pgoff = j->im.pgoff + delta;
	if (m->len > j->code->len - delta)
		m->len = j->code->len - delta;
	m->build_id_size = (uint8_t)j->im.img.build_id_size;
	memcpy(m->build_id, j->im.img.build_id, j->im.img.build_id_size);
}

/*
 * perf wrote the file: archive the images it maps, and say so when one
 * is not the file perf saw.
 */
static int
archive_images(struct writer_ctx *w, struct error *e)
{
	const struct snapwrite_image *im;
	const struct image_row *r;
	struct manifest *m = &w->snap->manifest;
	size_t i, before;
	unsigned archived = 0;
	int rc;

	for (i = 0; i < w->src->n_images; i++) {
		im = &w->src->images[i];
		before = w->n_img;
		if ((rc = image_archive(w, im->path, &r, e)) < 0)
			return rc;
		if (w->n_img == before || !r->ok)
			continue;	/* seen before, or a warning says why */
		archived++;
		if (im->build_id != NULL &&
		    (im->build_id_size != r->img.build_id_size ||
		    memcmp(im->build_id, r->img.build_id,
		    r->img.build_id_size) != 0) &&
		    (rc = manifest_add_warning(m, e, "image %s: its build-id "
		    "changed since perf recorded it", im->path)) < 0)
			return rc;
	}
	return manifest_set_counter(m, "images_archived", archived, e);
}

/* ---- perf.data ------------------------------------------------------------ */

/* MMAP2 in build-id form when the image was archived with one. */
static int
write_mmap(struct writer_ctx *w, const struct ptsb_record *r, struct error *e)
{
	struct perfdata_mmap m = r->u.mmap;
	const struct image_row *im = NULL;
	int rc;

	m.sid = r->sid;
	if (!(m.prot & PROT_EXEC))
		return 0;		/* the decoder walks code only */
	if (m.filename != NULL && (m.filename[0] == '/' ||
	    (w->src->host_vdso && strcmp(m.filename, "[vdso]") == 0)) &&
	    (rc = image_archive(w, m.filename, &im, e)) < 0)
		return rc;
	if (im != NULL && im->ok && im->img.build_id_size > 0) {
		m.build_id_size = (uint8_t)im->img.build_id_size;
		memcpy(m.build_id, im->img.build_id, im->img.build_id_size);
	}
	map_jit(w, &m);
	return perfdata_write_mmap2(w->pd, &m, e);
}

static int
write_record(struct writer_ctx *w, const struct ptsb_record *r,
    struct error *e)
{
	struct perfdata_comm c;
	struct perfdata_task t;
	struct perfdata_itrace_start it;
	struct perfdata_aux a;

	switch (r->type) {
	case PERF_RECORD_MMAP2:
		return write_mmap(w, r, e);
	case PERF_RECORD_COMM:
		c = r->u.comm;
		c.sid = r->sid;
		return perfdata_write_comm(w->pd, &c, e);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		t = r->u.task;
		t.sid = r->sid;
		t.is_fork = r->type == PERF_RECORD_FORK;
		return perfdata_write_task(w->pd, &t, e);
	case PERF_RECORD_ITRACE_START:
		it = r->u.itrace;
		it.sid = r->sid;
		return perfdata_write_itrace_start(w->pd, &it, e);
	case PERF_RECORD_AUX:
		a = r->u.aux;
		a.sid = r->sid;
		return perfdata_write_aux(w->pd, &a, e);
	default:
		return 0;	/* SWITCH: per-thread rings need none */
	}
}

static int
cmp_time(const void *a, const void *b)
{
	const struct ptsb_record *x = *(const struct ptsb_record *const *)a;
	const struct ptsb_record *y = *(const struct ptsb_record *const *)b;

	if (x->sid.time != y->sid.time)
		return x->sid.time < y->sid.time ? -1 : 1;
	return x < y ? -1 : x > y;	/* as given among equals */
}

/*
 * Sideband in time order (a recorder may give it ring by ring), so that
 * every map precedes the trace that needs it.
 */
static int
write_sideband(struct writer_ctx *w, struct error *e)
{
	const struct snapwrite_source *src = w->src;
	const struct ptsb_record **order;
	size_t i;
	int rc = 0;

	if ((order = calloc(src->n_sideband + 1, sizeof(*order))) == NULL)
		return error_set(e, ERR_NOMEM, "sideband");
	for (i = 0; i < src->n_sideband; i++)
		order[i] = &src->sideband[i];
	qsort(order, src->n_sideband, sizeof(*order), cmp_time);
	for (i = 0; rc == 0 && i < src->n_sideband; i++)
		rc = write_record(w, order[i], e);
	free(order);
	return rc;
}

/*
 * The PERF_RECORD_AUX the kernel writes as a thread's ring is read: where
 * the kept trace sits in the ring's stream, with the truncated flag when
 * older trace was overwritten, so that perf says history was lost ("AUX
 * data lost N times").
 */
static int
write_aux(struct writer_ctx *w, const struct snapwrite_thread *t,
    struct error *e)
{
	struct perfdata_aux a;

	memset(&a, 0, sizeof(a));
	a.sid.pid = (uint32_t)t->pid;
	a.sid.tid = (uint32_t)t->tid;
	a.sid.time = t->end_ns;
	a.sid.cpu = PERFDATA_NO_CPU;
	a.aux_offset = t->offset;
	a.aux_size = t->kept;
	a.flags = t->wrapped ? PERFDATA_AUX_FLAG_TRUNCATED : 0;
	return perfdata_write_aux(w->pd, &a, e);
}

/* A thread's trace from its file, opened one thread at a time (there
 * may be thousands). */
static int
write_trace_file(struct writer_ctx *w, const struct perfdata_auxtrace *a,
    const struct snapwrite_thread *t, struct error *e)
{
	struct perfdata_piece p[2];
	int fd, rc;

	if (t->range[0].len + t->range[1].len != t->kept)
		return error_set(e, ERR_INTERNAL, "%s: %" PRIu64 " bytes of "
		    "trace in ranges of %" PRIu64 " and %" PRIu64, t->file,
		    t->kept, t->range[0].len, t->range[1].len);
	if ((fd = open(t->file, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", t->file);
	for (int i = 0; i < 2; i++)
		p[i] = (struct perfdata_piece){ .fd = fd,
		    .off = t->range[i].off, .len = t->range[i].len,
		    .name = t->file };
	rc = perfdata_write_auxtrace_pieces(w->pd, a, p, 2, e);
	close(fd);
	return rc;
}

static int
write_traces(struct writer_ctx *w, struct error *e)
{
	const struct snapwrite_thread *t;
	struct perfdata_auxtrace a;
	size_t i;
	int rc;

	for (i = 0; i < w->src->n_threads; i++) {
		t = &w->src->threads[i];
		if ((rc = write_aux(w, t, e)) < 0)
			return rc;
		memset(&a, 0, sizeof(a));
		a.offset = t->offset;
		a.reference = t->reference ? t->reference : 1;
		a.idx = t->auxtrace_idx;
		a.tid = (uint32_t)t->tid;
		a.cpu = PERFDATA_NO_CPU;
		if ((rc = t->file != NULL ? write_trace_file(w, &a, t, e) :
		    perfdata_write_auxtrace(w->pd, &a, t->data, t->kept,
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
		if ((rc = perfdata_writer_add_build_id(w->pd, -1,
		    w->img[i].img.build_id, w->img[i].img.build_id_size,
		    w->img[i].path, e)) < 0)
			return rc;
	}
	for (i = 0; i < w->n_jit; i++)
		if ((rc = perfdata_writer_add_build_id(w->pd, -1,
		    w->jit[i].im.img.build_id, w->jit[i].im.img.build_id_size,
		    w->jit[i].im.name, e)) < 0)
			return rc;
	return 0;
}

/*
 * The header features perf record writes about the host, which
 * perf report --header-only shows: from uname(2) and the recorder's CPU
 * (u and cpuid hold the strings).  A recorder that set them keeps its own.
 */
static void
host_features(const struct snapwrite_source *src, struct perfdata_host *h,
    struct utsname *u, char *cpuid, size_t size)
{
	const struct ptcaps_cpu *cpu = src->cpu;

	if (h->hostname != NULL || uname(u) != 0)
		return;
	h->hostname = u->nodename;
	h->osrelease = u->release;
	h->version = "ptkit " PTKIT_VERSION;
	h->arch = u->machine;
	if (cpu != NULL) {
		h->cpudesc = cpu->model_name[0] != '\0' ? cpu->model_name :
		    NULL;
		/* perf's x86 form: vendor,family,model,stepping */
		if (cpu->vendor[0] != '\0' && cpu->family >= 0) {
			snprintf(cpuid, size, "%s,%d,%d,%d", cpu->vendor,
			    cpu->family, cpu->model, cpu->stepping);
			h->cpuid = cpuid;
		}
		h->nr_cpus_avail = h->nr_cpus_online = cpu->online > 0 ?
		    (uint32_t)cpu->online : 1;
	}
	if (src->opt != NULL && src->opt->argc > 0) {
		h->cmdline = (const char *const *)src->opt->argv;
		h->nr_cmdline = (size_t)src->opt->argc;
	}
}

static int
write_perf_data(struct writer_ctx *w, struct error *e)
{
	const struct snapwrite_source *src = w->src;
	struct perfdata_writer_config cfg;
	struct utsname u;
	char cpuid[160];
	int rc;

	if (src->perf_data != NULL) {
		if ((rc = snapshot_copy_in(w->snap, SNAPSHOT_PERF_DATA,
		    src->perf_data, e)) < 0)
			return rc;
		return archive_images(w, e);
	}
	cfg = *src->wconfig;
	host_features(src, &cfg.host, &u, cpuid, sizeof(cpuid));
	if ((rc = perfdata_writer_open(&w->pd,
	    snapshot_path(w->snap, SNAPSHOT_PERF_DATA), &cfg, e)) < 0)
		return rc;
	if ((rc = perfdata_write_time_conv(w->pd, src->tc, e)) < 0 ||
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

/* Hostname and kernel from uname(2), the CPU from the recorder. */
static int
fill_host(struct manifest *m, const struct snapwrite_source *src,
    struct error *e)
{
	const struct ptcaps_cpu *cpu = src->cpu;
	struct utsname u;
	int rc;

	if (uname(&u) == 0 &&
	    ((rc = manifest_set_string(&m->host.hostname, u.nodename, e)) < 0 ||
	    (rc = manifest_set_string(&m->host.kernel, u.release, e)) < 0))
		return rc;
	if ((rc = manifest_set_string(&m->host.cpu_vendor, cpu->vendor,
	    e)) < 0 || (rc = manifest_set_string(&m->host.cpu_model_name,
	    cpu->model_name, e)) < 0)
		return rc;
	m->host.cpu_family = cpu->family > 0 ? (uint32_t)cpu->family : 0;
	m->host.cpu_model = cpu->model > 0 ? (uint32_t)cpu->model : 0;
	m->host.cpu_stepping = cpu->stepping > 0 ? (uint32_t)cpu->stepping : 0;
	m->host.nr_cpus = cpu->online > 0 ? (uint32_t)cpu->online : 1;
	m->host.emulated = src->emulated;
	return 0;
}

static int
set_setting(struct manifest *m, const struct snapwrite_setting *s,
    struct error *e)
{
	char buf[32];

	if (s->numeric) {
		snprintf(buf, sizeof(buf), "%" PRIu64, s->num);
		return manifest_set_setting(m, s->key, buf, e);
	}
	return s->text != NULL ? manifest_set_setting(m, s->key, s->text, e) :
	    0;
}

static int
fill_recorder(struct manifest *m, const struct snapwrite_source *src,
    struct error *e)
{
	const struct snapwrite_setting aux = { "aux_bytes", NULL,
	    src->opt->aux_bytes, 1 };
	size_t i;
	int rc;

	if ((rc = manifest_set_string(&m->recorder.backend, src->backend,
	    e)) < 0 || (rc = manifest_set_string(&m->recorder.version,
	    PTKIT_VERSION, e)) < 0 || (rc = set_setting(m, &aux, e)) < 0)
		return rc;
	for (i = 0; i < src->n_settings; i++)
		if ((rc = set_setting(m, &src->settings[i], e)) < 0)
			return rc;
	for (i = 0; i < src->n_notes; i++)
		if ((rc = manifest_add_warning(m, e, "%s", src->notes[i])) < 0)
			return rc;
	return 0;
}

static int
fill_pt(struct manifest *m, const struct snapwrite_pt *p, struct error *e)
{
	int rc;

	m->pt.config = p->config;
	m->pt.pmu_type = p->pmu_type;
	m->pt.branch = p->branch;
	m->pt.tsc = p->tsc;
	m->pt.mtc = p->mtc;
	m->pt.cyc = p->cyc;
	m->pt.noretcomp = p->noretcomp;
	m->pt.mtc_period = p->mtc_period;
	m->pt.cyc_threshold = p->cyc_threshold;
	m->pt.psb_period = p->psb_period;
	m->pt.tsc_hz = p->tsc_hz;
	m->pt.nom_freq = p->nom_freq;
	m->pt.tsc_ctc_n = p->tsc_ctc_n;
	m->pt.tsc_ctc_d = p->tsc_ctc_d;
	m->pt.time_shift = p->time_shift;
	m->pt.time_mult = p->time_mult;
	m->pt.time_zero = p->time_zero;
	if (p->clock != NULL &&
	    (rc = manifest_set_string(&m->pt.clock, p->clock, e)) < 0)
		return rc;
	if (p->timing_profile != NULL &&
	    (rc = manifest_set_string(&m->pt.timing_profile,
	    p->timing_profile, e)) < 0)
		return rc;
	return 0;
}

/* How the target ran; opt->program is NULL when attached. */
static int
fill_target(struct manifest *m, const struct snapwrite_source *src,
    struct error *e)
{
	char *const *program = src->opt->program;
	char cwd[PATH_MAX];
	size_t argc = 0;
	int rc;

	while (program != NULL && program[argc] != NULL)
		argc++;
	if (argc > 0 && (rc = manifest_set_argv(m, argc,
	    (const char *const *)program, e)) < 0)
		return rc;
	m->target.pid = (uint32_t)src->pid;
	if (getcwd(cwd, sizeof(cwd)) != NULL &&
	    (rc = manifest_set_string(&m->target.cwd, cwd, e)) < 0)
		return rc;
	m->target.exit_code = src->exit_code;
	m->target.signal = src->signal;
	return manifest_set_string(&m->target.state, src->state, e);
}

static int
fill_threads(struct manifest *m, const struct snapwrite_source *src,
    struct error *e)
{
	const struct snapwrite_thread *r;
	struct manifest_thread t;
	size_t i;
	int rc;

	for (i = 0; i < src->n_threads; i++) {
		r = &src->threads[i];
		memset(&t, 0, sizeof(t));
		t.tid = (uint32_t)r->tid;
		t.pid = (uint32_t)r->pid;
		t.name = (char *)r->name;
		t.auxtrace_idx = r->auxtrace_idx;
		t.ring_size = r->ring_size;
		t.bytes_kept = r->kept;
		t.wrapped = r->wrapped;
		t.start_ns = r->start_ns;
		t.end_ns = r->end_ns;
		t.exited = r->exited;
		if ((rc = manifest_add_thread(m, &t, e)) < 0)
			return rc;
		if (src->warn_wrapped && r->wrapped &&
		    (rc = manifest_add_warning(m, e, "thread %d: its %" PRIu64
		    "-byte ring wrapped; the trace keeps only its newest part",
		    r->tid, r->ring_size)) < 0)
			return rc;
	}
	return 0;
}

static int
fill_capture(struct manifest *m, const struct snapwrite_source *src,
    struct error *e)
{
	size_t i;
	int rc;

	m->capture.start_ns = src->start_ns;
	m->capture.end_ns = src->end_ns;
	m->capture.start_tsc = src->start_tsc;
	m->capture.end_tsc = src->end_tsc;
	m->capture.start_wall_ns = src->start_wall_ns;
	m->capture.end_wall_ns = src->end_wall_ns;
	m->trigger.fired_ns = src->fired_ns;
	m->trigger.fired_wall_ns = src->fired_wall_ns;
	m->trigger.output_offset = src->has_output_offset ?
	    (int64_t)src->output_offset : -1;
	if ((rc = manifest_set_string(&m->trigger.kind, src->reason, e)) < 0)
		return rc;
	if (src->detail != NULL &&
	    (rc = manifest_set_string(&m->trigger.detail, src->detail, e)) < 0)
		return rc;
	for (i = 0; i < src->n_counters; i++)
		if ((rc = manifest_set_counter(m, src->counters[i].name,
		    src->counters[i].value, e)) < 0)
			return rc;
	for (i = 0; i < src->n_warnings; i++)
		if ((rc = manifest_add_warning(m, e, "%s",
		    src->warnings[i])) < 0)
			return rc;
	return 0;
}

/* ---- the snapshot --------------------------------------------------------- */

void
snapwrite_sideband_span(const struct ptsb_record *r, size_t n,
    uint64_t *start, uint64_t *end)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (r[i].sid.time < lo)
			lo = r[i].sid.time;
		if (r[i].sid.time > hi)
			hi = r[i].sid.time;
	}
	*start = lo == UINT64_MAX ? 0 : lo;
	*end = hi;
}

int
snapwrite(const struct snapwrite_source *src, const char *dest,
    struct error *e)
{
	struct writer_ctx *w;
	struct manifest *m;
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "snapshot");
	w->src = src;
	if ((rc = snapshot_begin(&w->snap, dest, e)) < 0) {
		free(w);
		return rc;
	}
	m = &w->snap->manifest;
	if ((rc = fill_host(m, src, e)) < 0 ||
	    (rc = fill_recorder(m, src, e)) < 0 ||
	    (rc = fill_pt(m, &src->pt, e)) < 0 ||
	    (rc = fill_target(m, src, e)) < 0 ||
	    (rc = archive_jit(w, e)) < 0 ||
	    (rc = write_perf_data(w, e)) < 0 ||
	    (rc = fill_threads(m, src, e)) < 0 ||
	    (rc = fill_capture(m, src, e)) < 0 ||
	    (src->output_log != NULL && (rc = snapshot_copy_in_prefix(w->snap,
	    SNAPSHOT_OUTPUT_LOG, src->output_log, src->has_output_log_max ?
	    src->output_log_max : UINT64_MAX, e)) < 0)) {
		snapshot_abort(w->snap);
	} else {
		rc = snapshot_commit(w->snap, e);
	}
	free(w->img);
	free(w->jit);
	free(w);
	return rc;
}

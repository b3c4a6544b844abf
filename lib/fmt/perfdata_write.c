/*
 * perfdata writer: see perfdata.h.  The file is written front to back
 * with pwrite (and copy_file_range for AUXTRACE data in files): a header
 * placeholder, the attr section, records as the caller gives them, then
 * (at close) the feature table and payloads, and finally the real header
 * at offset 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/perfdata.h"
#include "fmt/perfdata_int.h"

struct auxtrace_index_ent {
	uint64_t offset, size;
};

struct build_id_ent {
	int32_t pid;
	uint8_t size;
	uint8_t id[PERFDATA_BUILD_ID_MAX];
	char *filename;
};

struct perfdata_writer {
	int fd;
	char *path;
	struct perfdata_writer_config cfg;
	char *filter;			/* copy of cfg.pt.filter */
	char *host_str[6];		/* copies of cfg.host strings */
	char **cmdline;			/* copy of cfg.host.cmdline */
	size_t nr_cmdline;
	uint64_t sample_type;
	uint64_t pos;			/* next write offset */
	int failed;
	struct pd_buf rec;		/* the record being assembled */
	struct auxtrace_index_ent *index;
	size_t nr_index, cap_index;
	struct build_id_ent *bids;
	size_t nr_bids, cap_bids;
};

static int
write_at(struct perfdata_writer *w, const void *p, size_t len, uint64_t off,
    struct error *e)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t n = pwrite(w->fd, b, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->failed = 1;
			return error_set_errno(e, errno, "%s: write at offset %llu",
			    w->path, (unsigned long long)off);
		}
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Appends the assembled record and advances the data position. */
static int
emit(struct perfdata_writer *w, struct error *e)
{
	int rc;

	if (w->rec.failed) {
		w->failed = 1;
		return error_set(e, ERR_NOMEM, "%s: record buffer", w->path);
	}
	rc = write_at(w, w->rec.p, w->rec.len, w->pos, e);
	if (rc < 0)
		return rc;
	w->pos += w->rec.len;
	return 0;
}

static int
check_usable(struct perfdata_writer *w, struct error *e)
{
	if (w == NULL)
		return error_set(e, ERR_INVALID, "perf.data writer is NULL");
	if (w->failed)
		return error_set(e, ERR_INVALID,
		    "%s: writer is unusable after an earlier error", w->path);
	return 0;
}

/* Starts a record: header with size patched by finish_record. */
static void
begin_record(struct perfdata_writer *w, uint32_t type, uint16_t misc)
{
	w->rec.len = 0;
	w->rec.failed = 0;
	pd_put_u32(&w->rec, type);
	pd_put_u16(&w->rec, misc);
	pd_put_u16(&w->rec, 0);
}

static void
put_trailer(struct perfdata_writer *w, const struct perfdata_sid *sid)
{
	pd_put_u32(&w->rec, sid->pid);
	pd_put_u32(&w->rec, sid->tid);
	pd_put_u64(&w->rec, sid->time);
	if (w->sample_type & PERF_SAMPLE_CPU) {
		pd_put_u32(&w->rec, sid->cpu);
		pd_put_u32(&w->rec, 0);
	}
	pd_put_u64(&w->rec, PERFDATA_WRITER_ID);
}

static int
finish_record(struct perfdata_writer *w, struct error *e)
{
	if (w->rec.len > UINT16_MAX || w->rec.len % 8 != 0) {
		w->failed = 1;
		return error_set(e, ERR_INVALID,
		    "%s: record of %zu bytes does not fit a perf record",
		    w->path, w->rec.len);
	}
	if (!w->rec.failed) {
		uint16_t sz = (uint16_t)w->rec.len;

		memcpy(w->rec.p + 6, &sz, 2);
	}
	return emit(w, e);
}

/* A NUL-terminated string padded with zeros to a multiple of align. */
static void
put_padded_string(struct pd_buf *b, const char *s, size_t align)
{
	size_t n = strlen(s) + 1;
	size_t padded = (n + align - 1) / align * align;

	pd_put_bytes(b, s, n);
	pd_put_zeros(b, padded - n);
}

static int
check_name(struct perfdata_writer *w, const char *what, const char *s,
    struct error *e)
{
	if (s == NULL)
		return error_set(e, ERR_INVALID, "%s: %s name is NULL",
		    w->path, what);
	if (strlen(s) > PATH_MAX) {
		w->failed = 1;
		return error_set(e, ERR_INVALID, "%s: %s name of %zu bytes is too long",
		    w->path, what, strlen(s));
	}
	return 0;
}

void
perfdata_writer_config_default(struct perfdata_writer_config *cfg,
    int noretcomp)
{
	uint64_t *p = cfg->pt.priv;

	memset(cfg, 0, sizeof(*cfg));
	cfg->pt_config = PERFDATA_PT_CFG_PT | PERFDATA_PT_CFG_TSC |
	    PERFDATA_PT_CFG_BRANCH;
	if (noretcomp)
		cfg->pt_config |= PERFDATA_PT_CFG_NORETCOMP;
	cfg->pt.nr_priv = PERFDATA_PT_PRIV_NR;
	p[PERFDATA_PT_PMU_TYPE] = 10;
	p[PERFDATA_PT_TIME_SHIFT] = 0;
	p[PERFDATA_PT_TIME_MULT] = 1;
	p[PERFDATA_PT_TIME_ZERO] = 0;
	p[PERFDATA_PT_CAP_USER_TIME_ZERO] = 1;
	p[PERFDATA_PT_TSC_BIT] = PERFDATA_PT_CFG_TSC;
	p[PERFDATA_PT_NORETCOMP_BIT] = PERFDATA_PT_CFG_NORETCOMP;
	p[PERFDATA_PT_MTC_BIT] = PERFDATA_PT_CFG_MTC;
	p[PERFDATA_PT_MTC_FREQ_BITS] = PERFDATA_PT_CFG_MTC_PERIOD_MASK;
	p[PERFDATA_PT_CYC_BIT] = PERFDATA_PT_CFG_CYC;
	cfg->sample_cpu = 1;
}

static void
put_attr(struct pd_buf *b, const struct perfdata_writer *w)
{
	uint64_t flags = PERFDATA_ATTR_DISABLED | PERFDATA_ATTR_EXCLUDE_KERNEL |
	    PERFDATA_ATTR_EXCLUDE_HV | PERFDATA_ATTR_MMAP |
	    PERFDATA_ATTR_COMM | PERFDATA_ATTR_ENABLE_ON_EXEC |
	    PERFDATA_ATTR_TASK | PERFDATA_ATTR_SAMPLE_ID_ALL |
	    PERFDATA_ATTR_MMAP2 | PERFDATA_ATTR_COMM_EXEC;
	size_t start = b->len;

	pd_put_u32(b, (uint32_t)w->cfg.pt.priv[PERFDATA_PT_PMU_TYPE]);
	pd_put_u32(b, PD_ATTR_SIZE);
	pd_put_u64(b, w->cfg.pt_config);
	pd_put_u64(b, 1);		/* sample_period */
	pd_put_u64(b, w->sample_type);
	pd_put_u64(b, 0);		/* read_format */
	pd_put_u64(b, flags);
	pd_put_zeros(b, PD_ATTR_SIZE - (b->len - start));
}

static int
write_header(struct perfdata_writer *w, uint64_t data_size,
    const uint64_t features[4], struct error *e)
{
	struct pd_buf b = { 0 };
	int rc;

	pd_put_u64(&b, PD_MAGIC);
	pd_put_u64(&b, PD_HEADER_SIZE);
	pd_put_u64(&b, PD_ATTR_SIZE + 16);
	pd_put_u64(&b, PD_HEADER_SIZE);		/* attrs.offset */
	pd_put_u64(&b, PD_ATTR_SIZE + 16);	/* attrs.size: one attr */
	pd_put_u64(&b, PD_WRITER_DATA_OFFSET);
	pd_put_u64(&b, data_size);
	pd_put_u64(&b, 0);			/* event_types */
	pd_put_u64(&b, 0);
	for (int i = 0; i < 4; i++)
		pd_put_u64(&b, features[i]);
	if (b.failed) {
		free(b.p);
		return error_set(e, ERR_NOMEM, "%s: header", w->path);
	}
	rc = write_at(w, b.p, b.len, 0, e);
	free(b.p);
	return rc;
}

static int
write_attr_section(struct perfdata_writer *w, struct error *e)
{
	struct pd_buf b = { 0 };
	uint64_t ids_off = PD_HEADER_SIZE + PD_ATTR_SIZE + 16;
	uint64_t zero[4] = { 0 };
	int rc;

	put_attr(&b, w);
	pd_put_u64(&b, ids_off);
	pd_put_u64(&b, 8);
	pd_put_u64(&b, PERFDATA_WRITER_ID);
	if (b.failed) {
		free(b.p);
		return error_set(e, ERR_NOMEM, "%s: attr section", w->path);
	}
	rc = write_header(w, 0, zero, e);
	if (rc == 0)
		rc = write_at(w, b.p, b.len, PD_HEADER_SIZE, e);
	free(b.p);
	return rc;
}

static int
copy_config(struct perfdata_writer *w, const struct perfdata_writer_config *cfg,
    struct error *e)
{
	const char *hs[6] = { cfg->host.hostname, cfg->host.osrelease,
	    cfg->host.version, cfg->host.arch, cfg->host.cpudesc,
	    cfg->host.cpuid };

	w->cfg = *cfg;
	w->cfg.pt.filter = NULL;
	if (cfg->per_cpu)
		w->cfg.pt.priv[PERFDATA_PT_PER_CPU_MMAPS] = 1;
	if (cfg->pt.filter != NULL && (w->filter = strdup(cfg->pt.filter)) == NULL)
		return error_set(e, ERR_NOMEM, "perf.data writer: filter");
	for (int i = 0; i < 6; i++) {
		if (hs[i] != NULL && (w->host_str[i] = strdup(hs[i])) == NULL)
			return error_set(e, ERR_NOMEM, "perf.data writer: host");
	}
	if (cfg->host.nr_cmdline > 0) {
		w->cmdline = calloc(cfg->host.nr_cmdline, sizeof(*w->cmdline));
		if (w->cmdline == NULL)
			return error_set(e, ERR_NOMEM, "perf.data writer: cmdline");
		for (size_t i = 0; i < cfg->host.nr_cmdline; i++, w->nr_cmdline++)
			if ((w->cmdline[i] = strdup(cfg->host.cmdline[i])) == NULL)
				return error_set(e, ERR_NOMEM,
				    "perf.data writer: cmdline");
	}
	memset(&w->cfg.host, 0, sizeof(w->cfg.host));
	w->cfg.host.nr_cpus_avail = cfg->host.nr_cpus_avail;
	w->cfg.host.nr_cpus_online = cfg->host.nr_cpus_online;
	return 0;
}

static void
writer_free(struct perfdata_writer *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nr_bids; i++)
		free(w->bids[i].filename);
	for (int i = 0; i < 6; i++)
		free(w->host_str[i]);
	for (size_t i = 0; i < w->nr_cmdline; i++)
		free(w->cmdline[i]);
	free(w->cmdline);
	free(w->bids);
	free(w->index);
	free(w->rec.p);
	free(w->filter);
	free(w->path);
	free(w);
}

int
perfdata_writer_open(struct perfdata_writer **out, const char *path,
    const struct perfdata_writer_config *cfg, struct error *e)
{
	struct perfdata_writer *w;
	int rc;

	*out = NULL;
	if (cfg->pt.priv[PERFDATA_PT_PMU_TYPE] == 0 ||
	    cfg->pt.priv[PERFDATA_PT_PMU_TYPE] > UINT32_MAX)
		return error_set(e, ERR_INVALID,
		    "%s: intel_pt PMU type %llu is not a dynamic PMU type", path,
		    (unsigned long long)cfg->pt.priv[PERFDATA_PT_PMU_TYPE]);
	if (cfg->pt.filter != NULL && strlen(cfg->pt.filter) > 4096)
		return error_set(e, ERR_INVALID, "%s: address filter too long",
		    path);
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return error_set(e, ERR_NOMEM, "%s: writer", path);
	w->fd = -1;
	if ((w->path = strdup(path)) == NULL) {
		writer_free(w);
		return error_set(e, ERR_NOMEM, "%s: writer", path);
	}
	if ((rc = copy_config(w, cfg, e)) < 0) {
		writer_free(w);
		return rc;
	}
	w->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	    PERF_SAMPLE_IDENTIFIER;
	if (cfg->sample_cpu)
		w->sample_type |= PERF_SAMPLE_CPU;
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rc = error_set_errno(e, errno, "%s: create", path);
		if (errno == EEXIST)
			e->code = ERR_EXISTS, rc = -ERR_EXISTS;
		writer_free(w);
		return rc;
	}
	w->pos = PD_WRITER_DATA_OFFSET;
	if ((rc = write_attr_section(w, e)) < 0) {
		perfdata_writer_abort(w);
		return rc;
	}
	*out = w;
	return 0;
}

int
perfdata_write_time_conv(struct perfdata_writer *w,
    const struct perfdata_time_conv *tc, struct error *e)
{
	int rc = check_usable(w, e);

	if (rc < 0)
		return rc;
	begin_record(w, PERFDATA_REC_TIME_CONV, 0);
	pd_put_u64(&w->rec, tc->time_shift);
	pd_put_u64(&w->rec, tc->time_mult);
	pd_put_u64(&w->rec, tc->time_zero);
	pd_put_u64(&w->rec, tc->time_cycles);
	pd_put_u64(&w->rec, tc->time_mask);
	pd_put_u8(&w->rec, tc->cap_user_time_zero);
	pd_put_u8(&w->rec, tc->cap_user_time_short);
	pd_put_zeros(&w->rec, 6);
	return finish_record(w, e);
}

int
perfdata_write_auxtrace_info(struct perfdata_writer *w, struct error *e)
{
	int rc = check_usable(w, e);
	size_t flen = w->filter != NULL ? strlen(w->filter) : 0;

	if (rc < 0)
		return rc;
	begin_record(w, PERFDATA_REC_AUXTRACE_INFO, 0);
	pd_put_u32(&w->rec, PERFDATA_AUXTRACE_INTEL_PT);
	pd_put_u32(&w->rec, 0);
	for (int i = 0; i < PERFDATA_PT_PRIV_NR; i++) {
		uint64_t v = w->cfg.pt.priv[i];

		if (i == PERFDATA_PT_FILTER_STR_LEN)
			v = flen;
		pd_put_u64(&w->rec, v);
	}
	if (flen > 0)
		put_padded_string(&w->rec, w->filter, 8);
	return finish_record(w, e);
}

int
perfdata_write_comm(struct perfdata_writer *w, const struct perfdata_comm *c,
    struct error *e)
{
	int rc = check_usable(w, e);

	if (rc < 0 || (rc = check_name(w, "COMM", c->comm, e)) < 0)
		return rc;
	begin_record(w, PERF_RECORD_COMM, c->exec ? PERFDATA_MISC_COMM_EXEC : 0);
	pd_put_u32(&w->rec, c->pid);
	pd_put_u32(&w->rec, c->tid);
	put_padded_string(&w->rec, c->comm, 8);
	put_trailer(w, &c->sid);
	return finish_record(w, e);
}

int
perfdata_write_mmap2(struct perfdata_writer *w, const struct perfdata_mmap *m,
    struct error *e)
{
	int rc = check_usable(w, e);
	uint16_t misc = PERF_RECORD_MISC_USER;

	if (rc < 0 || (rc = check_name(w, "MMAP2 file", m->filename, e)) < 0)
		return rc;
	if (m->build_id_size > PERFDATA_BUILD_ID_MAX) {
		w->failed = 1;
		return error_set(e, ERR_INVALID, "%s: MMAP2 build-id of %u bytes",
		    w->path, m->build_id_size);
	}
	if (m->build_id_size > 0)
		misc |= PERFDATA_MISC_MMAP_BUILD_ID;
	begin_record(w, PERF_RECORD_MMAP2, misc);
	pd_put_u32(&w->rec, m->pid);
	pd_put_u32(&w->rec, m->tid);
	pd_put_u64(&w->rec, m->addr);
	pd_put_u64(&w->rec, m->len);
	pd_put_u64(&w->rec, m->pgoff);
	if (m->build_id_size > 0) {
		pd_put_u8(&w->rec, m->build_id_size);
		pd_put_zeros(&w->rec, 3);
		pd_put_bytes(&w->rec, m->build_id, m->build_id_size);
		pd_put_zeros(&w->rec, PERFDATA_BUILD_ID_MAX - m->build_id_size);
	} else {
		pd_put_u32(&w->rec, m->maj);
		pd_put_u32(&w->rec, m->min);
		pd_put_u64(&w->rec, m->ino);
		pd_put_u64(&w->rec, m->ino_generation);
	}
	pd_put_u32(&w->rec, m->prot);
	pd_put_u32(&w->rec, m->flags);
	put_padded_string(&w->rec, m->filename, 8);
	put_trailer(w, &m->sid);
	return finish_record(w, e);
}

int
perfdata_write_itrace_start(struct perfdata_writer *w,
    const struct perfdata_itrace_start *it, struct error *e)
{
	int rc = check_usable(w, e);

	if (rc < 0)
		return rc;
	begin_record(w, PERF_RECORD_ITRACE_START, 0);
	pd_put_u32(&w->rec, it->pid);
	pd_put_u32(&w->rec, it->tid);
	put_trailer(w, &it->sid);
	return finish_record(w, e);
}

int
perfdata_write_aux(struct perfdata_writer *w, const struct perfdata_aux *a,
    struct error *e)
{
	int rc = check_usable(w, e);

	if (rc < 0)
		return rc;
	begin_record(w, PERF_RECORD_AUX, 0);
	pd_put_u64(&w->rec, a->aux_offset);
	pd_put_u64(&w->rec, a->aux_size);
	pd_put_u64(&w->rec, a->flags);
	put_trailer(w, &a->sid);
	return finish_record(w, e);
}

int
perfdata_write_task(struct perfdata_writer *w, const struct perfdata_task *t,
    struct error *e)
{
	int rc = check_usable(w, e);

	if (rc < 0)
		return rc;
	begin_record(w, t->is_fork ? PERF_RECORD_FORK : PERF_RECORD_EXIT, 0);
	pd_put_u32(&w->rec, t->pid);
	pd_put_u32(&w->rec, t->ppid);
	pd_put_u32(&w->rec, t->tid);
	pd_put_u32(&w->rec, t->ptid);
	pd_put_u64(&w->rec, t->time);
	put_trailer(w, &t->sid);
	return finish_record(w, e);
}

int
perfdata_write_finished_round(struct perfdata_writer *w, struct error *e)
{
	int rc = check_usable(w, e);

	if (rc < 0)
		return rc;
	begin_record(w, PERFDATA_REC_FINISHED_ROUND, 0);
	return finish_record(w, e);
}

/* The copy through memory: a bounded buffer, never the whole trace. */
#define PIECE_BUF_SIZE (1U << 20)

/*
 * Appends the bytes of file piece p at w->pos: by copy_file_range while
 * the kernel does it, else (a file system or kernel that cannot, or an
 * error) through a buffer, which also tells a failed read of the source
 * from a failed write of perf.data for the message.
 */
static int
copy_piece(struct perfdata_writer *w, const struct perfdata_piece *p,
    struct error *e)
{
	uint64_t left = p->len, in = p->off;
	uint8_t *buf = NULL;
	int kernel = 1, rc = 0;
	ssize_t n;

	while (rc == 0 && left > 0) {
		size_t want = left < ((size_t)1 << 30) ? (size_t)left :
		    (size_t)1 << 30;

		if (kernel) {
			off_t from = (off_t)in, to = (off_t)w->pos;

			n = copy_file_range(p->fd, &from, w->fd, &to, want, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {	/* 0: the file ended; the read says */
				kernel = 0;
				continue;
			}
		} else {
			if (buf == NULL && (buf = malloc(PIECE_BUF_SIZE)) ==
			    NULL) {
				rc = error_set(e, ERR_NOMEM, "%s: copying %s",
				    w->path, p->name);
				break;
			}
			if (want > PIECE_BUF_SIZE)
				want = PIECE_BUF_SIZE;
			n = pread(p->fd, buf, want, (off_t)in);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = error_set_errno(e, errno,
				    "%s: read at offset %llu", p->name,
				    (unsigned long long)in);
				break;
			}
			if (n == 0) {
				rc = error_set(e, ERR_TRUNCATED, "%s: ends at "
				    "byte %llu, inside the %llu bytes of trace "
				    "at %llu", p->name, (unsigned long long)in,
				    (unsigned long long)p->len,
				    (unsigned long long)p->off);
				break;
			}
			if ((rc = write_at(w, buf, (size_t)n, w->pos, e)) < 0)
				break;
		}
		in += (uint64_t)n;
		left -= (uint64_t)n;
		w->pos += (uint64_t)n;
	}
	free(buf);
	if (rc < 0)
		w->failed = 1;
	return rc;
}

int
perfdata_write_auxtrace_pieces(struct perfdata_writer *w,
    const struct perfdata_auxtrace *a, const struct perfdata_piece *p,
    size_t n, struct error *e)
{
	static const uint8_t pad[8];
	uint64_t len = 0, padded;
	uint64_t start = w != NULL ? w->pos : 0;
	int rc = check_usable(w, e);
	size_t i;

	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		if (p[i].len > 0 && p[i].mem == NULL && p[i].fd < 0)
			return error_set(e, ERR_INVALID, "%s: AUXTRACE data "
			    "is NULL", w->path);
		if (p[i].len > UINT64_MAX - 7 - len)
			return error_set(e, ERR_INVALID, "%s: AUXTRACE data "
			    "of more than 2^64 bytes", w->path);
		len += p[i].len;
	}
	padded = (len + 7) / 8 * 8;
	if (pd_grow((void **)&w->index, &w->cap_index, w->nr_index + 1,
	    sizeof(*w->index)) < 0) {
		w->failed = 1;
		return error_set(e, ERR_NOMEM, "%s: AUXTRACE index", w->path);
	}
	begin_record(w, PERFDATA_REC_AUXTRACE, 0);
	pd_put_u64(&w->rec, padded);
	pd_put_u64(&w->rec, a->offset);
	pd_put_u64(&w->rec, a->reference);
	pd_put_u32(&w->rec, a->idx);
	pd_put_u32(&w->rec, a->tid);
	pd_put_u32(&w->rec, a->cpu);
	pd_put_u32(&w->rec, 0);
	if ((rc = finish_record(w, e)) < 0)
		return rc;
	for (i = 0; i < n; i++) {
		if (p[i].len == 0)
			continue;
		if (p[i].mem == NULL) {
			if ((rc = copy_piece(w, &p[i], e)) < 0)
				return rc;
			continue;
		}
		if ((rc = write_at(w, p[i].mem, (size_t)p[i].len, w->pos,
		    e)) < 0)
			return rc;
		w->pos += p[i].len;
	}
	if (padded > len &&
	    (rc = write_at(w, pad, (size_t)(padded - len), w->pos, e)) < 0)
		return rc;
	w->pos += padded - len;
	w->index[w->nr_index].offset = start;
	w->index[w->nr_index].size = PD_AUXTRACE_HDR_SIZE;
	w->nr_index++;
	return 0;
}

int
perfdata_write_auxtrace(struct perfdata_writer *w,
    const struct perfdata_auxtrace *a, const void *data, size_t len,
    struct error *e)
{
	const struct perfdata_piece p = { .mem = data, .fd = -1, .len = len };

	/* The pieces' checks are this one's: a usable writer, data given. */
	return perfdata_write_auxtrace_pieces(w, a, &p, 1, e);
}

int
perfdata_writer_add_build_id(struct perfdata_writer *w, int32_t pid,
    const uint8_t *id, size_t size, const char *filename, struct error *e)
{
	struct build_id_ent *b;
	int rc = check_usable(w, e);

	if (rc < 0 || (rc = check_name(w, "build-id file", filename, e)) < 0)
		return rc;
	if (size == 0 || size > PERFDATA_BUILD_ID_MAX)
		return error_set(e, ERR_INVALID, "%s: build-id of %zu bytes for %s",
		    w->path, size, filename);
	if (pd_grow((void **)&w->bids, &w->cap_bids, w->nr_bids + 1,
	    sizeof(*w->bids)) < 0)
		return error_set(e, ERR_NOMEM, "%s: build-id list", w->path);
	b = &w->bids[w->nr_bids];
	memset(b, 0, sizeof(*b));
	if ((b->filename = strdup(filename)) == NULL)
		return error_set(e, ERR_NOMEM, "%s: build-id list", w->path);
	b->pid = pid;
	b->size = (uint8_t)size;
	memcpy(b->id, id, size);
	w->nr_bids++;
	return 0;
}

uint64_t
perfdata_writer_data_size(const struct perfdata_writer *w)
{
	return w->pos - PD_WRITER_DATA_OFFSET;
}

/* Feature payloads, each built into b. */
static void
feat_build_id(const struct perfdata_writer *w, struct pd_buf *b)
{
	for (size_t i = 0; i < w->nr_bids; i++) {
		const struct build_id_ent *bi = &w->bids[i];
		size_t start = b->len;
		size_t n = strlen(bi->filename) + 1;
		size_t padded = (n + 63) / 64 * 64;
		uint16_t sz = (uint16_t)(PD_BUILD_ID_FIXED + padded);

		pd_put_u32(b, PERFDATA_REC_BUILD_ID);
		pd_put_u16(b, PERF_RECORD_MISC_USER | PD_MISC_BUILD_ID_SIZE);
		pd_put_u16(b, sz);
		pd_put_u32(b, (uint32_t)bi->pid);
		pd_put_bytes(b, bi->id, bi->size);
		pd_put_zeros(b, PERFDATA_BUILD_ID_MAX - bi->size);
		pd_put_u8(b, bi->size);
		pd_put_zeros(b, 3);
		pd_put_bytes(b, bi->filename, n);
		pd_put_zeros(b, padded - n);
		(void)start;
	}
}

static void
feat_string(struct pd_buf *b, const char *s)
{
	size_t n = strlen(s) + 1;
	size_t padded = (n + 63) / 64 * 64;

	pd_put_u32(b, (uint32_t)padded);
	pd_put_bytes(b, s, n);
	pd_put_zeros(b, padded - n);
}

static void
feat_auxtrace(const struct perfdata_writer *w, struct pd_buf *b)
{
	pd_put_u64(b, w->nr_index);
	for (size_t i = 0; i < w->nr_index; i++) {
		pd_put_u64(b, w->index[i].offset);
		pd_put_u64(b, w->index[i].size);
	}
}

/* Builds feature bit's payload into b; returns 1 if the feature exists. */
static int
build_feature(const struct perfdata_writer *w, int bit, struct pd_buf *b)
{
	switch (bit) {
	case PERFDATA_FEAT_BUILD_ID:
		if (w->nr_bids == 0)
			return 0;
		feat_build_id(w, b);
		return 1;
	case PERFDATA_FEAT_HOSTNAME:
	case PERFDATA_FEAT_OSRELEASE:
	case PERFDATA_FEAT_VERSION:
	case PERFDATA_FEAT_ARCH: {
		const char *s = w->host_str[bit - PERFDATA_FEAT_HOSTNAME];

		if (s == NULL)
			return 0;
		feat_string(b, s);
		return 1;
	}
	case PERFDATA_FEAT_NRCPUS:
		if (w->cfg.host.nr_cpus_avail == 0)
			return 0;
		pd_put_u32(b, w->cfg.host.nr_cpus_avail);
		pd_put_u32(b, w->cfg.host.nr_cpus_online);
		return 1;
	case PERFDATA_FEAT_CPUDESC:
	case PERFDATA_FEAT_CPUID: {
		const char *s = w->host_str[4 + bit - PERFDATA_FEAT_CPUDESC];

		if (s == NULL)
			return 0;
		feat_string(b, s);
		return 1;
	}
	case PERFDATA_FEAT_CMDLINE:
		/* perf's layout: a count, then each string as the others */
		if (w->nr_cmdline == 0)
			return 0;
		pd_put_u32(b, (uint32_t)w->nr_cmdline);
		for (size_t i = 0; i < w->nr_cmdline; i++)
			feat_string(b, w->cmdline[i]);
		return 1;
	case PERFDATA_FEAT_AUXTRACE:
		feat_auxtrace(w, b);
		return 1;
	default:
		return 0;
	}
}

static int
write_features(struct perfdata_writer *w, uint64_t features[4],
    struct error *e)
{
	static const int bits[] = { PERFDATA_FEAT_BUILD_ID,
	    PERFDATA_FEAT_HOSTNAME, PERFDATA_FEAT_OSRELEASE,
	    PERFDATA_FEAT_VERSION, PERFDATA_FEAT_ARCH, PERFDATA_FEAT_NRCPUS,
	    PERFDATA_FEAT_CPUDESC, PERFDATA_FEAT_CPUID, PERFDATA_FEAT_CMDLINE,
	    PERFDATA_FEAT_AUXTRACE };
	struct pd_buf table = { 0 }, payload = { 0 };
	size_t nbits = sizeof(bits) / sizeof(bits[0]), nr = 0;
	uint64_t payload_start;
	int rc;

	for (size_t i = 0; i < nbits; i++) {
		struct pd_buf tmp = { 0 };

		if (build_feature(w, bits[i], &tmp))
			nr++;
		free(tmp.p);
	}
	payload_start = w->pos + nr * 16;
	for (size_t i = 0; i < nbits; i++) {
		size_t before = payload.len;

		if (!build_feature(w, bits[i], &payload))
			continue;
		features[bits[i] / 64] |= 1ULL << (bits[i] % 64);
		pd_put_u64(&table, payload_start + before);
		pd_put_u64(&table, payload.len - before);
	}
	if (table.failed || payload.failed) {
		rc = error_set(e, ERR_NOMEM, "%s: feature sections", w->path);
	} else {
		rc = write_at(w, table.p, table.len, w->pos, e);
		if (rc == 0)
			rc = write_at(w, payload.p, payload.len,
			    w->pos + table.len, e);
	}
	free(table.p);
	free(payload.p);
	return rc;
}

int
perfdata_writer_close(struct perfdata_writer *w, struct error *e)
{
	uint64_t features[4] = { 0 };
	int rc = check_usable(w, e);

	if (rc < 0) {
		perfdata_writer_abort(w);
		return rc;
	}
	rc = write_features(w, features, e);
	if (rc == 0)
		rc = write_header(w, w->pos - PD_WRITER_DATA_OFFSET, features, e);
	if (rc == 0 && fsync(w->fd) < 0)
		rc = error_set_errno(e, errno, "%s: fsync", w->path);
	if (rc == 0) {
		int fd = w->fd;

		w->fd = -1;
		if (close(fd) < 0)
			rc = error_set_errno(e, errno, "%s: close", w->path);
	}
	if (rc < 0) {
		perfdata_writer_abort(w);
		return rc;
	}
	writer_free(w);
	return 0;
}

void
perfdata_writer_abort(struct perfdata_writer *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0) {
		close(w->fd);
		w->fd = -1;
	}
	unlink(w->path);
	writer_free(w);
}

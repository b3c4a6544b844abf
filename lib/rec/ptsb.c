/* ptsb: see ptsb.h. */
#include "rec/ptsb.h"

#include <string.h>

/* A cursor over one record's payload, before its trailer. */
struct cur {
	const uint8_t *p, *end;
	int short_read;
};

static uint32_t
u32(struct cur *c)
{
	uint32_t v = 0;

	if ((size_t)(c->end - c->p) < sizeof(v)) {
		c->short_read = 1;
		return 0;
	}
	memcpy(&v, c->p, sizeof(v));
	c->p += sizeof(v);
	return v;
}

static uint64_t
u64(struct cur *c)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < sizeof(v)) {
		c->short_read = 1;
		return 0;
	}
	memcpy(&v, c->p, sizeof(v));
	c->p += sizeof(v);
	return v;
}

/* A NUL-terminated string in the rest of the payload, or NULL. */
static const char *
str(struct cur *c)
{
	const uint8_t *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
	const char *s = (const char *)c->p;

	if (nul == NULL)
		return NULL;
	c->p = c->end;
	return s;
}

size_t
ptsb_trailer_size(uint64_t st)
{
	size_t n = 0;

	n += st & PERF_SAMPLE_TID ? 8 : 0;
	n += st & PERF_SAMPLE_TIME ? 8 : 0;
	n += st & PERF_SAMPLE_ID ? 8 : 0;
	n += st & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	n += st & PERF_SAMPLE_CPU ? 8 : 0;
	n += st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
	return n;
}

/* The trailer, in the kernel's order (perf_event.h, sample_id). */
static void
parse_sid(struct cur *c, uint64_t st, struct perfdata_sid *sid)
{
	memset(sid, 0, sizeof(*sid));
	sid->cpu = PERFDATA_NO_CPU;
	if (st & PERF_SAMPLE_TID) {
		sid->pid = u32(c);
		sid->tid = u32(c);
	}
	if (st & PERF_SAMPLE_TIME)
		sid->time = u64(c);
	if (st & PERF_SAMPLE_ID)
		sid->id = u64(c);
	if (st & PERF_SAMPLE_STREAM_ID)
		(void)u64(c);
	if (st & PERF_SAMPLE_CPU) {
		sid->cpu = u32(c);
		(void)u32(c);
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		sid->id = u64(c);
}

static int
parse_mmap2(struct cur *c, uint16_t misc, struct perfdata_mmap *m)
{
	m->is_mmap2 = 1;
	m->misc = misc;
	m->pid = u32(c);
	m->tid = u32(c);
	m->addr = u64(c);
	m->len = u64(c);
	m->pgoff = u64(c);
	if (misc & PERFDATA_MISC_MMAP_BUILD_ID) {
		if ((size_t)(c->end - c->p) < 24)
			return -1;
		m->build_id_size = c->p[0] <= PERFDATA_BUILD_ID_MAX ?
		    c->p[0] : PERFDATA_BUILD_ID_MAX;
		memcpy(m->build_id, c->p + 4, PERFDATA_BUILD_ID_MAX);
		c->p += 24;
	} else {
		m->maj = u32(c);
		m->min = u32(c);
		m->ino = u64(c);
		m->ino_generation = u64(c);
	}
	m->prot = u32(c);
	m->flags = u32(c);
	return c->short_read || (m->filename = str(c)) == NULL ? -1 : 0;
}

static int
parse_payload(struct cur *c, struct ptsb_record *r)
{
	switch (r->type) {
	case PERF_RECORD_MMAP2:
		return parse_mmap2(c, r->misc, &r->u.mmap);
	case PERF_RECORD_COMM:
		r->u.comm.pid = u32(c);
		r->u.comm.tid = u32(c);
		r->u.comm.exec = (r->misc & PERFDATA_MISC_COMM_EXEC) != 0;
		return c->short_read || (r->u.comm.comm = str(c)) == NULL ?
		    -1 : 0;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		r->u.task.is_fork = r->type == PERF_RECORD_FORK;
		r->u.task.pid = u32(c);
		r->u.task.ppid = u32(c);
		r->u.task.tid = u32(c);
		r->u.task.ptid = u32(c);
		r->u.task.time = u64(c);
		break;
	case PERF_RECORD_ITRACE_START:
		r->u.itrace.pid = u32(c);
		r->u.itrace.tid = u32(c);
		break;
	case PERF_RECORD_AUX:
		r->u.aux.aux_offset = u64(c);
		r->u.aux.aux_size = u64(c);
		r->u.aux.flags = u64(c);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		r->u.sw.cpu_wide = 1;
		r->u.sw.next_prev_pid = u32(c);
		r->u.sw.next_prev_tid = u32(c);
		/* fall through */
	case PERF_RECORD_SWITCH:
		r->u.sw.out = (r->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
		r->u.sw.preempt =
		    (r->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
		break;
	case PERF_RECORD_LOST:
		r->u.lost.id = u64(c);
		r->u.lost.lost = u64(c);
		break;
	default:
		return 1;
	}
	return c->short_read ? -1 : 0;
}

/* Every perfdata struct begins with its sample_id. */
static void
copy_sid(struct ptsb_record *r)
{
	switch (r->type) {
	case PERF_RECORD_MMAP2: r->u.mmap.sid = r->sid; break;
	case PERF_RECORD_COMM: r->u.comm.sid = r->sid; break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: r->u.task.sid = r->sid; break;
	case PERF_RECORD_ITRACE_START: r->u.itrace.sid = r->sid; break;
	case PERF_RECORD_AUX: r->u.aux.sid = r->sid; break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: r->u.sw.sid = r->sid; break;
	default: break;
	}
}

int
ptsb_parse(const void *raw, size_t len, uint64_t sample_type,
    struct ptsb_record *rec, struct error *e)
{
	const uint8_t *p = raw;
	struct perf_event_header h;
	size_t tsize = ptsb_trailer_size(sample_type);
	struct cur payload, trailer;
	int rc;

	memset(rec, 0, sizeof(*rec));
	if (len < sizeof(h))
		return error_set(e, ERR_TRUNCATED, "sideband record of %zu "
		    "bytes", len);
	memcpy(&h, p, sizeof(h));
	rec->type = h.type;
	rec->misc = h.misc;
	if (h.size > len || h.size < sizeof(h) + tsize)
		return error_set(e, ERR_TRUNCATED, "sideband record type %u: "
		    "%u bytes do not hold its %zu-byte sample_id", h.type,
		    h.size, tsize);
	payload.p = p + sizeof(h);
	payload.end = p + h.size - tsize;
	payload.short_read = 0;
	trailer.p = payload.end;
	trailer.end = p + h.size;
	trailer.short_read = 0;
	parse_sid(&trailer, sample_type, &rec->sid);
	if ((rc = parse_payload(&payload, rec)) > 0)
		return -ERR_UNSUPPORTED;
	if (rc < 0)
		return error_set(e, ERR_FORMAT, "sideband record type %u of %u "
		    "bytes is short or lacks its string's NUL", h.type, h.size);
	copy_sid(rec);
	return 0;
}

int
ptsb_walk(const uint8_t *data, uint64_t size, uint64_t head, uint64_t *tail,
    uint64_t sample_type, ptsb_fn fn, void *arg, struct error *e)
{
	uint8_t copy[65536];	/* a record's size field is 16 bits */
	struct perf_event_header h;
	struct ptsb_record rec;
	uint64_t off, first;
	int n = 0, rc;

	while (*tail < head) {
		if (head - *tail < sizeof(h))
			return error_set(e, ERR_FORMAT, "sideband ring: %llu "
			    "bytes left, less than a header",
			    (unsigned long long)(head - *tail));
		off = *tail & (size - 1);
		first = size - off < sizeof(h) ? size - off : sizeof(h);
		memcpy(&h, data + off, first);
		memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		if (h.size < sizeof(h) || h.size > head - *tail)
			return error_set(e, ERR_FORMAT, "sideband ring: record "
			    "of %u bytes at %llu (head %llu)", h.size,
			    (unsigned long long)*tail,
			    (unsigned long long)head);
		/* Copy it out whole: it may straddle the end of the ring. */
		first = size - off < h.size ? size - off : h.size;
		memcpy(copy, data + off, first);
		memcpy(copy + first, data, h.size - first);
		rc = ptsb_parse(copy, h.size, sample_type, &rec, e);
		if (rc < 0 && rc != -ERR_UNSUPPORTED)
			return rc;
		if (rc == 0 && (rc = fn(&rec, arg)) < 0)
			return rc;
		*tail += h.size;
		n++;
	}
	return n;
}

int
ptsb_drain(struct perf_event_mmap_page *pc, const uint8_t *data,
    uint64_t sample_type, ptsb_fn fn, void *arg, struct error *e)
{
	uint64_t head = __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pc->data_tail;
	int n;

	n = ptsb_walk(data, pc->data_size, head, &tail, sample_type, fn, arg,
	    e);
	/* What was handed over is released, even after a failure. */
	__atomic_store_n(&pc->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

/* spandir: see spandir.h. */
#include "span/spandir.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/json.h"
#include "base/xxh64.h"
#include "sym/symtab.h"

static const char *const file_names[SPANDIR_FILE_NR] = {
	"spans.jsonl", "inline.jsonl", "gaps.jsonl", "threads.jsonl",
	"events.jsonl", "index.bin", "aggregates.bin", "manifest.json",
};

/* index.bin checks causes against its own counts of them. */
_Static_assert(CS_START_NR == SPANIDX_START_NR, "start causes");
_Static_assert(CS_END_NR == SPANIDX_END_NR, "end causes");

static const char *const start_names[CS_START_NR] = {
	"seen", "ring_start", "gap", "trace_start", "signal", "return",
};
static const char *const end_names[CS_END_NR] = {
	"seen", "unwound", "snapshot_end", "gap", "sigreturn",
};
static const char *const gap_names[CS_GAP_NR] = {
	"syscall", "interrupt", "disabled", "decode_error", "unknown_image",
	"ring_start", "overflow", "lost",
};
static const char *const event_names[CS_EV_NR] = {
	"thread_start", "thread_end", "signal", "sigreturn", "exec",
};

const char *
spandir_file_name(enum spandir_file f)
{
	return (unsigned)f < SPANDIR_FILE_NR ? file_names[f] : "?";
}

int
spandir_path(const char *dir, enum spandir_file f, char *buf, size_t size,
    struct error *e)
{
	int n = snprintf(buf, size, "%s/%s", dir, spandir_file_name(f));

	if (n < 0 || (size_t)n >= size)
		return error_set(e, ERR_RANGE, "%s: path too long", dir);
	return 0;
}

const char *
spandir_zst_name(enum spandir_file f)
{
	if (f == SPANDIR_SPANS)
		return "spans.jsonl" SPANDIR_ZST;
	return f == SPANDIR_INLINE ? "inline.jsonl" SPANDIR_ZST : NULL;
}

int
spandir_find(const char *dir, enum spandir_file f, char *buf, size_t size,
    const char **name)
{
	const char *forms[2] = { spandir_zst_name(f), spandir_file_name(f) };
	struct stat sb;

	for (int i = 0; i < 2; i++) {
		int n;

		if (forms[i] == NULL)
			continue;
		n = snprintf(buf, size, "%s/%s", dir, forms[i]);
		if (n < 0 || (size_t)n >= size)
			return -ERR_RANGE;
		if (stat(buf, &sb) == 0) {
			*name = forms[i];
			return 0;
		}
	}
	return -ERR_NOTFOUND;
}

const char *
spandir_start_name(unsigned v)
{
	return v < CS_START_NR ? start_names[v] : "unknown";
}

const char *
spandir_end_name(unsigned v)
{
	return v < CS_END_NR ? end_names[v] : "unknown";
}

const char *
spandir_gap_cause_name(unsigned v)
{
	return v < CS_GAP_NR ? gap_names[v] : "unknown";
}

const char *
spandir_event_name(unsigned v)
{
	return v < CS_EV_NR ? event_names[v] : "unknown";
}

static int
index_of(const char *name, const char *const *names, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

int
spandir_start_of(const char *name)
{
	return index_of(name, start_names, CS_START_NR);
}

int
spandir_end_of(const char *name)
{
	return index_of(name, end_names, CS_END_NR);
}

/* ----------------------------------------------------------------- */
/* Reading */

const json_t *
spandir_manifest_member(const json_t *m, const char *path)
{
	const json_t *v = m;
	char key[64];

	while (v != NULL && *path != '\0') {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		v = json_object_get(v, key);
		path += n + (path[n] == '.');
	}
	return v;
}

uint64_t
spandir_manifest_u64(const json_t *m, const char *path, uint64_t dflt)
{
	const json_t *v = spandir_manifest_member(m, path);

	return json_is_integer(v) && json_integer_value(v) >= 0 ?
	    (uint64_t)json_integer_value(v) : dflt;
}

const char *
spandir_manifest_str(const json_t *m, const char *path, const char *dflt)
{
	const json_t *v = spandir_manifest_member(m, path);

	return json_is_string(v) ? json_string_value(v) : dflt;
}

const char *
spandir_xxh64_member(enum spandir_file f)
{
	switch (f) {
	case SPANDIR_GAPS:
		return SPANDIR_M_GAPS_XXH64;
	case SPANDIR_THREADS:
		return SPANDIR_M_THREADS_XXH64;
	case SPANDIR_EVENTS:
		return SPANDIR_M_EVENTS_XXH64;
	default:
		return NULL;
	}
}

int
spandir_manifest_xxh64(const json_t *m, const char *member, uint64_t *sum)
{
	const json_t *v = json_object_get(m, member);
	const char *s;

	if (v == NULL)
		return 0;
	if (!json_is_string(v) || strlen(s = json_string_value(v)) != 18 ||
	    s[0] != '0' || s[1] != 'x')
		return -1;
	*sum = 0;
	for (int i = 2; i < 18; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			*sum = *sum << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*sum = *sum << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -1;
	}
	return 1;
}

int
spandir_fd_xxh64(int fd, uint64_t *sum)
{
	static const size_t chunk = 1 << 16;
	struct xxh64 h;
	char *buf = malloc(chunk);
	ssize_t n;

	if (buf == NULL)
		return -1;
	xxh64_init(&h, 0);
	while ((n = read(fd, buf, chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			free(buf);
			errno = err;
			return -1;
		}
		xxh64_update(&h, buf, (size_t)n);
	}
	free(buf);
	*sum = xxh64_digest(&h);
	return 0;
}

static uint64_t
member_u64(const json_t *o, const char *key, int *bad)
{
	const json_t *v = json_object_get(o, key);
	const char *s;
	char *end;
	uint64_t x;

	if (json_is_integer(v))
		return (uint64_t)json_integer_value(v);
	if (json_is_null(v))
		return 0;
	if (json_is_string(v)) {		/* "0x..." addresses */
		s = json_string_value(v);
		errno = 0;
		x = strtoull(s, &end, 0);
		if (errno == 0 && end != s && *end == '\0')
			return x;
	}
	*bad = 1;
	return 0;
}

static const char *
member_str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int
spandir_span_row(const json_t *o, struct spanidx_row *r)
{
	const char *st = member_str(o, SPANDIR_SPAN_START);
	const char *en = member_str(o, SPANDIR_SPAN_END);
	int bad = 0, s, t;

	memset(r, 0, sizeof(*r));
	r->id = member_u64(o, SPANDIR_SPAN_ID, &bad);
	r->parent = member_u64(o, SPANDIR_SPAN_PARENT, &bad);
	r->tid = (uint32_t)member_u64(o, SPANDIR_SPAN_TID, &bad);
	r->pid = (uint32_t)member_u64(o, SPANDIR_SPAN_PID, &bad);
	r->depth = (int32_t)member_u64(o, SPANDIR_SPAN_DEPTH, &bad);
	r->fn = member_str(o, SPANDIR_SPAN_FN);
	r->raw = member_str(o, SPANDIR_SPAN_RAW);
	r->module = member_str(o, SPANDIR_SPAN_MODULE);
	r->call_site = member_u64(o, SPANDIR_SPAN_CALL_SITE, &bad);
	r->entry = member_u64(o, SPANDIR_SPAN_ENTRY, &bad);
	r->start_ns = member_u64(o, SPANDIR_SPAN_START_NS, &bad);
	r->end_ns = member_u64(o, SPANDIR_SPAN_END_NS, &bad);
	r->self_ns = member_u64(o, SPANDIR_SPAN_SELF_NS, &bad);
	r->insns = member_u64(o, SPANDIR_SPAN_INSNS, &bad);
	r->self_insns = member_u64(o, SPANDIR_SPAN_SELF_INSNS, &bad);
	s = st ? spandir_start_of(st) : -1;
	t = en ? spandir_end_of(en) : -1;
	if (bad || r->fn == NULL || r->id == 0 || s < 0 || t < 0)
		return -1;
	r->start = (uint8_t)s;
	r->end = (uint8_t)t;
	r->flags = (uint8_t)(
	    (json_is_true(json_object_get(o, SPANDIR_SPAN_TAIL_CALL)) ?
	    SPANIDX_F_TAIL_CALL : 0) |
	    (json_is_true(json_object_get(o, SPANDIR_SPAN_ASYNC)) ?
	    SPANIDX_F_ASYNC : 0) |
	    (r->raw == NULL ? SPANIDX_F_UNNAMED : 0));
	return 0;
}

/* ----------------------------------------------------------------- */
/* Writing the other records */

static void
kv_str_or_null(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	if (s == NULL)
		jsonw_null(w);
	else
		jsonw_string(w, s);
}

static void
kv_addr(struct jsonw *w, const char *key, uint64_t a)
{
	char buf[32];

	jsonw_key(w, key);
	if (a == 0) {
		jsonw_null(w);
		return;
	}
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a);
	jsonw_string(w, buf);
}

static void
kv_id(struct jsonw *w, const char *key, uint64_t id)
{
	jsonw_key(w, key);
	if (id == 0)
		jsonw_null(w);
	else
		jsonw_u64(w, id);
}

void
spandir_write_inline(struct jsonw *w, const struct spandir_inline *in)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANDIR_SCHEMA);
	jsonw_kv_u64(w, "id", in->id);
	jsonw_kv_u64(w, "span", in->span);
	jsonw_kv_u64(w, "tid", in->tid);
	kv_id(w, "parent", in->parent);
	jsonw_kv_string(w, "fn", in->site->name);
	kv_str_or_null(w, "raw", in->site->raw);
	jsonw_kv_u64(w, "depth", in->site->depth);
	kv_str_or_null(w, "call_file", in->site->call_file);
	jsonw_kv_u64(w, "call_line", in->site->call_line);
	jsonw_kv_u64(w, "call_column", in->site->call_column);
	jsonw_kv_u64(w, "insns", in->insns);
	jsonw_kv_u64(w, "total_insns", in->total_insns);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spandir_write_gap(struct jsonw *w, const struct cs_gap *g)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANDIR_SCHEMA);
	jsonw_kv_u64(w, SPANDIR_REC_TID, g->tid);
	jsonw_kv_string(w, "cause", spandir_gap_cause_name(g->cause));
	kv_addr(w, "ip", g->ip);
	kv_addr(w, "resume_ip", g->resume_ip);
	jsonw_kv_u64(w, SPANDIR_REC_START_NS, g->start_ns);
	jsonw_kv_u64(w, SPANDIR_REC_END_NS, g->end_ns);
	jsonw_kv_u64(w, "dur_ns", g->end_ns - g->start_ns);
	jsonw_kv_u64(w, "frames_cut", g->frames_cut);
	if (g->errcode != 0)
		jsonw_kv_i64(w, "error", g->errcode);
	if (g->text != NULL && g->text[0] != '\0')
		jsonw_kv_string(w, "text", g->text);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spandir_write_event(struct jsonw *w, const struct cs_event *ev)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANDIR_SCHEMA);
	jsonw_kv_string(w, "kind", spandir_event_name(ev->kind));
	jsonw_kv_u64(w, "tid", ev->tid);
	jsonw_kv_u64(w, "time_ns", ev->time);
	kv_addr(w, "ip", ev->ip);
	if (ev->kind == CS_EV_EXEC)
		jsonw_kv_u64(w, "exec", ev->at);	/* which program */
	else if (ev->at != 0)
		kv_addr(w, "at", ev->at);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spandir_write_map(struct jsonw *w, const struct blks_map *m)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANDIR_SCHEMA);
	jsonw_kv_string(w, "kind", "mmap");
	jsonw_kv_u64(w, "pid", m->pid);
	if (m->exec != 0)
		jsonw_kv_u64(w, "exec", m->exec);
	kv_addr(w, "start", m->start);
	kv_addr(w, "end", m->start + m->size);
	jsonw_kv_u64(w, "pgoff", m->pgoff);
	jsonw_kv_string(w, "name", m->name);
	if (m->flags & BLKS_MAP_MISSING)
		jsonw_kv_bool(w, "missing", 1);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spandir_write_trigger(struct jsonw *w, const struct spandir_trigger *t)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANDIR_SCHEMA);
	jsonw_kv_string(w, "kind", "trigger");
	jsonw_kv_string(w, "trigger", t->kind);
	if (t->detail != NULL)
		jsonw_kv_string(w, "detail", t->detail);
	jsonw_kv_u64(w, "time_ns", t->time_ns);
	jsonw_kv_u64(w, "wall_ns", t->wall_ns);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spandir_write_thread(struct jsonw *w, const struct spandir_thread *t)
{
	const struct cs_thread_stats *st = t->st;

	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANDIR_SCHEMA);
	jsonw_kv_u64(w, SPANDIR_REC_TID, st->tid);
	jsonw_kv_u64(w, SPANDIR_REC_PID, st->pid);
	jsonw_kv_string(w, SPANDIR_REC_NAME, t->name);
	jsonw_kv_bool(w, "wrapped", st->ring_start != 0);
	jsonw_kv_u64(w, SPANDIR_REC_FIRST_NS, st->first_ns);
	jsonw_kv_u64(w, SPANDIR_REC_LAST_NS, st->last_ns);
	jsonw_kv_u64(w, "gap_ns", st->gap_ns);
	jsonw_kv_u64(w, "blocks", st->blocks);
	jsonw_kv_u64(w, "insns", st->insns);
	jsonw_kv_u64(w, "spans", st->spans);
	jsonw_kv_u64(w, "gaps", st->gaps);
	jsonw_kv_u64(w, "max_depth", st->max_depth_seen);
	jsonw_kv_i64(w, "min_depth", st->min_depth);
	jsonw_kv_u64(w, "tail_calls", st->tail_calls);
	jsonw_kv_u64(w, "signals", st->signals);
	jsonw_kv_u64(w, "unwound", st->unwound);
	jsonw_kv_u64(w, "cut_frames", st->cut_frames);
	jsonw_kv_u64(w, "ret_mismatch", st->ret_mismatch);
	jsonw_kv_u64(w, "trace_bytes", t->counters[BLKS_C_TRACE_BYTES]);
	jsonw_kv_u64(w, "decode_errors", t->counters[BLKS_C_DECODE_ERRORS]);
	jsonw_kv_u64(w, "overflows", t->counters[BLKS_C_OVERFLOWS]);
	jsonw_kv_u64(w, "bytes_skipped", t->counters[BLKS_C_BYTES_SKIPPED]);
	jsonw_object_end(w);
	jsonw_newline(w);
}

/* ----------------------------------------------------------------- */
/* manifest.json */

static void
write_quality(struct jsonw *w, const struct spandir_quality *q)
{
	jsonw_key(w, SPANDIR_M_QUALITY);
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "threads", q->threads);
	jsonw_kv_u64(w, "blocks", q->blocks);
	jsonw_kv_u64(w, "insns", q->insns);
	jsonw_kv_u64(w, "spans", q->spans);
	jsonw_kv_u64(w, "spans_unnamed", q->unnamed);
	jsonw_kv_u64(w, "unwound", q->unwound);
	jsonw_kv_u64(w, "cut_frames", q->cut_frames);
	jsonw_kv_u64(w, "tail_calls", q->tail_calls);
	jsonw_kv_u64(w, "signals", q->signals);
	jsonw_kv_u64(w, "sigreturns", q->sigreturns);
	jsonw_kv_u64(w, "ret_mismatch", q->ret_mismatch);
	jsonw_kv_u64(w, "unknown_insn", q->unknown_insn);
	jsonw_kv_u64(w, "wrapped_threads", q->ring_start_threads);
	jsonw_kv_u64(w, "decode_errors", q->decode_errors);
	jsonw_kv_u64(w, "overflows", q->overflows);
	jsonw_kv_i64(w, "min_depth", q->min_depth);
	jsonw_kv_u64(w, "max_depth", q->max_depth);
	jsonw_kv_u64(w, "inline_records", q->inline_records);
	jsonw_kv_u64(w, "inline_insns", q->inline_insns);
	jsonw_kv_u64(w, "inline_walks_failed", q->inline_walks_failed);
	jsonw_kv_u64(w, "images", q->images);
	jsonw_kv_u64(w, "images_missing", q->images_missing);
	jsonw_kv_u64(w, "images_without_symbols", q->images_without_symbols);
	jsonw_kv_u64(w, "undecodable_insns", q->undecodable_insns);
	jsonw_key(w, SPANDIR_Q_GAPS);
	jsonw_object_begin(w);
	for (unsigned i = 0; i < CS_GAP_NR; i++)
		jsonw_kv_u64(w, spandir_gap_cause_name(i), q->gaps[i]);
	jsonw_object_end(w);
	jsonw_key(w, SPANDIR_Q_GAP_NS);
	jsonw_object_begin(w);
	for (unsigned i = 0; i < CS_GAP_NR; i++)
		jsonw_kv_u64(w, spandir_gap_cause_name(i), q->gap_ns[i]);
	jsonw_object_end(w);
	jsonw_object_end(w);
}

static void
write_capture(struct jsonw *w, const struct spandir_capture *c)
{
	jsonw_key(w, SPANDIR_M_SNAPSHOT_ID);
	if (c->snapshot_id == NULL)
		jsonw_null(w);
	else
		jsonw_string(w, c->snapshot_id);
	if (!c->known)
		return;
	jsonw_key(w, SPANDIR_M_CAPTURE);
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "start_ns", c->start_ns);
	jsonw_kv_u64(w, "end_ns", c->end_ns);
	jsonw_kv_u64(w, "start_wall_ns", c->start_wall_ns);
	jsonw_kv_u64(w, "end_wall_ns", c->end_wall_ns);
	jsonw_object_end(w);
}

/* The manifest with its checksum member's digits all 0, written to f. */
static int
write_unsealed(FILE *f, const struct spandir_manifest *m)
{
	const struct blks_header *h = m->time;
	struct jsonw w;

	jsonw_init(&w, f);
	jsonw_object_begin(&w);
	jsonw_kv_u64(&w, "v", SPANDIR_MANIFEST_VERSION);
	jsonw_kv_string(&w, SPANDIR_M_ANALYSIS_ID, m->analysis_id);
	jsonw_kv_string(&w, SPANDIR_M_TOOL, m->tool);
	jsonw_kv_string(&w, SPANDIR_M_SNAPSHOT, m->snapshot);
	write_capture(&w, &m->capture);
	jsonw_kv_string(&w, SPANDIR_M_DECODER, m->decoder);
	jsonw_key(&w, "options");
	jsonw_object_begin(&w);
	jsonw_kv_bool(&w, "inline", m->inline_on);
	jsonw_object_end(&w);
	jsonw_key(&w, "time");
	jsonw_object_begin(&w);
	jsonw_kv_u64(&w, "base_ns", h->time_base_ns);
	jsonw_kv_u64(&w, "time_shift", h->time_shift);
	jsonw_kv_u64(&w, "time_mult", h->time_mult);
	jsonw_kv_u64(&w, "time_zero", h->time_zero);
	jsonw_kv_bool(&w, "timed", (h->flags & BLKS_HDR_TIMED) != 0);
	jsonw_object_end(&w);
	write_quality(&w, m->quality);
	jsonw_key(&w, SPANDIR_M_THREADS);
	jsonw_array_begin(&w);
	for (size_t i = 0; i < m->n_threads; i++) {
		const struct spandir_coverage *c = &m->threads[i];
		uint64_t span = c->last_ns - c->first_ns;

		jsonw_object_begin(&w);
		jsonw_kv_u64(&w, SPANDIR_COV_TID, c->tid);
		jsonw_kv_u64(&w, SPANDIR_COV_FIRST_NS, c->first_ns);
		jsonw_kv_u64(&w, SPANDIR_COV_LAST_NS, c->last_ns);
		jsonw_kv_u64(&w, SPANDIR_COV_GAP_NS, c->gap_ns);
		jsonw_kv_u64(&w, "insns", c->insns);
		jsonw_kv_u64(&w, SPANDIR_COV_SPANS, c->spans);
		jsonw_key(&w, "coverage");
		jsonw_double(&w, span == 0 ? 1.0 : (double)(span -
		    (c->gap_ns < span ? c->gap_ns : span)) / (double)span);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	if (m->spans_hashed) {
		char hex[24];

		snprintf(hex, sizeof(hex), "0x%016" PRIx64, m->spans_xxh64);
		jsonw_kv_string(&w, SPANDIR_M_SPANS_XXH64, hex);
	}
	for (int i = 0; m->files_hashed && i < SPANDIR_JSONL_NR; i++) {
		const char *member = spandir_xxh64_member((enum spandir_file)i);
		char hex[24];

		if (member == NULL)
			continue;
		snprintf(hex, sizeof(hex), "0x%016" PRIx64, m->files_xxh64[i]);
		jsonw_kv_string(&w, member, hex);
	}
	jsonw_key(&w, SPANDIR_M_FILES);
	jsonw_array_begin(&w);
	for (int i = 0; i <= SPANDIR_AGGREGATES; i++)
		jsonw_string(&w, m->jsonl_zst && spandir_zst_name(
		    (enum spandir_file)i) != NULL ? spandir_zst_name(
		    (enum spandir_file)i) : file_names[i]);
	jsonw_array_end(&w);
	jsonw_kv_string(&w, SPANDIR_M_MANIFEST_XXH64, "0x0000000000000000");
	jsonw_object_end(&w);
	jsonw_newline(&w);
	return jsonw_finish(&w);
}

#define TAIL_KEY "\"" SPANDIR_M_MANIFEST_XXH64 "\":\"0x"
#define TAIL_KEY_LEN (sizeof(TAIL_KEY) - 1)

void
spandir_manifest_tail(const void *body, size_t len, char *tail)
{
	char hex[17];

	snprintf(hex, sizeof(hex), "%016" PRIx64, xxh64(body, len, 0));
	memcpy(tail, TAIL_KEY, TAIL_KEY_LEN);
	memcpy(tail + TAIL_KEY_LEN, hex, 16);
	memcpy(tail + TAIL_KEY_LEN + 16, "\"}\n", 3);
}

/*
 * Written in memory first: the checksum covers the bytes before it, and
 * jsonw writes straight to its stream.  jsonw's output has no spaces, so
 * the placeholder member is exactly the last SPANDIR_MANIFEST_TAIL bytes.
 */
int
spandir_write_manifest(FILE *f, const struct spandir_manifest *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if ((mem = open_memstream(&buf, &len)) == NULL)
		return -ERR_NOMEM;
	rc = write_unsealed(mem, m);
	if (fclose(mem) != 0 && rc == 0)
		rc = -ERR_NOMEM;
	if (rc == 0 && (len < SPANDIR_MANIFEST_TAIL || memcmp(buf + len -
	    SPANDIR_MANIFEST_TAIL, TAIL_KEY, TAIL_KEY_LEN) != 0))
		rc = -ERR_INTERNAL;
	if (rc == 0) {
		spandir_manifest_tail(buf, len - SPANDIR_MANIFEST_TAIL,
		    buf + len - SPANDIR_MANIFEST_TAIL);
		if (fwrite(buf, 1, len, f) != len)
			rc = -ERR_IO;
	}
	{
		int err = errno;	/* why fwrite failed, for the caller */

		free(buf);
		errno = err;
	}
	return rc;
}

/* Whether the last SPANDIR_MANIFEST_TAIL bytes of buf are a checksum
 * member, its value in *sum. */
static int
tail_of(const char *buf, size_t len, uint64_t *sum)
{
	const char *t = buf + len - SPANDIR_MANIFEST_TAIL;

	if (len < SPANDIR_MANIFEST_TAIL + 1 ||
	    memcmp(t, TAIL_KEY, TAIL_KEY_LEN) != 0 ||
	    memcmp(t + TAIL_KEY_LEN + 16, "\"}\n", 3) != 0)
		return 0;
	*sum = 0;
	for (size_t i = 0; i < 16; i++) {
		char c = t[TAIL_KEY_LEN + i];

		if (c >= '0' && c <= '9')
			*sum = *sum << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*sum = *sum << 4 | (uint64_t)(c - 'a' + 10);
		else
			return 0;
	}
	return 1;
}

/* The "v" of a manifest, or -1 when it has none that is a number. */
static json_int_t
version_of(const json_t *doc)
{
	const json_t *v = json_object_get(doc, "v");

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Why a manifest is of another version than this ptkit reads. */
static int
version_error(json_int_t v, struct error *e)
{
	return error_set(e, ERR_UNSUPPORTED, "%s: analysis version %lld, not "
	    "%d (written by %s ptspans: run ptspans again)",
	    file_names[SPANDIR_MANIFEST], (long long)v,
	    SPANDIR_MANIFEST_VERSION, v < SPANDIR_MANIFEST_VERSION ?
	    "an older" : "a newer");
}

json_t *
spandir_manifest_parse(const char *buf, size_t len, struct error *e)
{
	const char *name = file_names[SPANDIR_MANIFEST];
	uint64_t want;
	json_int_t v;
	json_t *doc;

	if (!tail_of(buf, len, &want)) {
		/* Only to say why: an analysis of before the checksum is
		 * told apart by its version, all else is damage. */
		doc = json_read_buffer(buf, len, NULL);
		v = version_of(doc);
		if (v >= 0 && v < SPANDIR_MANIFEST_VERSION &&
		    json_object_get(doc, SPANDIR_M_MANIFEST_XXH64) == NULL)
			version_error(v, e);
		else
			error_set(e, ERR_FORMAT, "%s does not end with its "
			    "checksum (%s): it was cut short, changed or "
			    "damaged (run ptspans again)", name,
			    SPANDIR_M_MANIFEST_XXH64);
		json_decref(doc);
		return NULL;
	}
	if (xxh64(buf, len - SPANDIR_MANIFEST_TAIL, 0) != want) {
		error_set(e, ERR_FORMAT, "%s does not match its checksum (%s "
		    "0x%016" PRIx64 "): it was changed or damaged (run ptspans "
		    "again)", name, SPANDIR_M_MANIFEST_XXH64, want);
		return NULL;
	}
	if ((doc = json_read_buffer(buf, len, e)) == NULL) {
		error_prefix(e, "%s", name);
		return NULL;
	}
	if ((v = version_of(doc)) != SPANDIR_MANIFEST_VERSION) {
		json_decref(doc);
		version_error(v, e);
		return NULL;
	}
	return doc;
}

/* Past this a manifest.json is no manifest ptspans writes (a thread's
 * entry is some 150 bytes), and is not read into memory. */
#define MANIFEST_MAX (64u << 20)

json_t *
spandir_manifest_read_fd(int fd, struct error *e)
{
	const char *name = file_names[SPANDIR_MANIFEST];
	size_t len;
	char *buf;
	json_t *doc;

	if (fdio_read_all(fd, MANIFEST_MAX, &buf, &len) < 0) {
		if (errno == EFBIG)
			error_set(e, ERR_FORMAT, "%s: larger than %u MiB: not "
			    "a manifest (run ptspans again)", name,
			    MANIFEST_MAX >> 20);
		else if (errno == ENOMEM)
			error_set(e, ERR_NOMEM, "%s: out of memory", name);
		else
			error_set_errno(e, errno, "%s", name);
		return NULL;
	}
	doc = spandir_manifest_parse(buf, len, e);
	free(buf);
	return doc;
}

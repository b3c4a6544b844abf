/*
 * blkstream_jsonl: the block stream's names (record types, event kinds,
 * gap causes, END counters, decoders, instruction classes, execution
 * modes: blks_*_name) and the JSON Lines rendering of its records
 * (ptdecode --format jsonl; man/ptkit-blocks.5).
 */
#include "fmt/blkstream.h"

#include <inttypes.h>
#include <stdio.h>

#include "base/jsonw.h"

static const char *const type_names[] = {
	NULL, "map", "thread", "block", "event", "gap", "end", "eos",
};

static const char *const event_names[BLKS_EV_KIND_MAX] = {
	NULL, "enabled", "disabled", "async_branch", "overflow", "exec_mode",
	"paging", "tsx", "stop", "vmcs", "exstop", "mwait", "pwre", "pwrx",
	"ptwrite", "cbr", "exec",
};

static const char *const gap_names[BLKS_GAP_CAUSE_MAX] = {
	NULL, "decode_error", "unknown_image", "ring_start", "overflow",
	"lost",
};

static const char *const counter_names[BLKS_C_NR] = {
	"blocks", "insns", "events", "gaps", "decode_errors",
	"unknown_image", "overflows", "trace_bytes", "bytes_skipped",
	"psbs", "fallbacks",
};

static const char *const decoder_names[] = { "native", "fast", "perf" };

/* libipt's enum pt_insn_class, in order. */
static const char *const class_names[] = {
	"error", "other", "call", "return", "jump", "cond_jump", "far_call",
	"far_return", "far_jump", "ptwrite",
};

static const char *const mode_names[] = { "unknown", "16", "32", "64" };

#define NAME_OF(table, i) \
	((i) < sizeof(table) / sizeof((table)[0]) && (table)[i] != NULL ? \
	    (table)[i] : "unknown")

const char *
blks_type_name(unsigned type)
{
	return NAME_OF(type_names, type);
}

const char *
blks_event_name(unsigned kind)
{
	return NAME_OF(event_names, kind);
}

const char *
blks_gap_cause_name(unsigned cause)
{
	return NAME_OF(gap_names, cause);
}

const char *
blks_counter_name(unsigned counter)
{
	return NAME_OF(counter_names, counter);
}

const char *
blks_decoder_name(unsigned decoder)
{
	return NAME_OF(decoder_names, decoder);
}


static void
kv_hex(struct jsonw *w, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	jsonw_kv_string(w, key, buf);
}

void
blks_jsonl_header(struct jsonw *w, const struct blks_header *h)
{
	jsonw_object_begin(w);
	jsonw_kv_string(w, "type", "header");
	jsonw_kv_u64(w, "version", h->version ? h->version : BLKS_VERSION);
	jsonw_kv_string(w, "decoder", blks_decoder_name(h->decoder));
	jsonw_kv_string(w, "snapshot", h->snapshot ? h->snapshot : "");
	jsonw_kv_bool(w, "timed", (h->flags & BLKS_HDR_TIMED) != 0);
	jsonw_kv_u64(w, "time_shift", h->time_shift);
	jsonw_kv_u64(w, "time_mult", h->time_mult);
	jsonw_kv_u64(w, "time_zero", h->time_zero);
	jsonw_kv_u64(w, "time_base_ns", h->time_base_ns);
	jsonw_object_end(w);
	jsonw_newline(w);
}

static void
jsonl_map(struct jsonw *w, const struct blks_map *m)
{
	char bid[2 * BLKS_BUILD_ID_MAX + 1];

	for (unsigned i = 0; i < m->build_id_size && i < BLKS_BUILD_ID_MAX;
	    i++)
		snprintf(bid + 2 * i, 3, "%02x", m->build_id[i]);
	bid[2 * (m->build_id_size <= BLKS_BUILD_ID_MAX ?
	    m->build_id_size : 0)] = '\0';
	jsonw_kv_u64(w, "pid", m->pid);
	if (m->exec != 0)
		jsonw_kv_u64(w, "exec", m->exec);
	kv_hex(w, "start", m->start);
	kv_hex(w, "end", m->start + m->size);
	kv_hex(w, "pgoff", m->pgoff);
	jsonw_kv_string(w, "name", m->name ? m->name : "");
	jsonw_kv_string(w, "image", m->image ? m->image : "");
	jsonw_kv_string(w, "build_id", bid);
	jsonw_kv_bool(w, "missing", (m->flags & BLKS_MAP_MISSING) != 0);
	jsonw_kv_bool(w, "live", (m->flags & BLKS_MAP_LIVE) != 0);
	if (m->flags & BLKS_MAP_JIT) {
		jsonw_kv_bool(w, "jit", 1);
		jsonw_kv_string(w, "symbols", m->symbols ? m->symbols : "");
	}
}

static void
jsonl_block(struct jsonw *w, const struct blks_block *b)
{
	kv_hex(w, "ip", b->ip);
	kv_hex(w, "end_ip", b->end_ip);
	jsonw_kv_u64(w, "ninsn", b->ninsn);
	jsonw_kv_string(w, "class", NAME_OF(class_names, b->iclass));
	jsonw_kv_string(w, "mode", NAME_OF(mode_names, b->mode));
	jsonw_kv_u64(w, "time", b->time);
	if (b->flags & BLKS_BLOCK_SPECULATIVE)
		jsonw_kv_bool(w, "speculative", 1);
	if (b->flags & BLKS_BLOCK_TRUNCATED)
		jsonw_kv_bool(w, "truncated", 1);
}

static void
jsonl_event(struct jsonw *w, const struct blks_event *ev)
{
	jsonw_kv_string(w, "kind", blks_event_name(ev->kind));
	if (ev->flags & BLKS_EVF_IP_SUPPRESSED)
		jsonw_kv_bool(w, "ip_suppressed", 1);
	else
		kv_hex(w, "ip", ev->ip);
	if (ev->kind == BLKS_EV_ASYNC_BRANCH || (ev->kind ==
	    BLKS_EV_DISABLED && ev->arg == BLKS_DIS_ASYNC))
		kv_hex(w, "at", ev->at);
	if (ev->kind == BLKS_EV_DISABLED)
		jsonw_kv_string(w, "reason",
		    ev->arg == BLKS_DIS_ASYNC ? "async" : "sync");
	else if (ev->kind == BLKS_EV_PAGING || ev->kind == BLKS_EV_VMCS)
		kv_hex(w, "arg", ev->arg);
	else
		jsonw_kv_u64(w, "arg", ev->arg);
	if (ev->flags & BLKS_EVF_STATUS_UPDATE)
		jsonw_kv_bool(w, "status_update", 1);
	if (ev->flags & BLKS_EVF_ASYNC)
		jsonw_kv_bool(w, "async", 1);
	if (ev->flags & BLKS_EVF_NON_ROOT)
		jsonw_kv_bool(w, "non_root", 1);
	jsonw_kv_u64(w, "time", ev->time);
}

static void
jsonl_gap(struct jsonw *w, const struct blks_gap *g)
{
	jsonw_kv_string(w, "cause", blks_gap_cause_name(g->cause));
	kv_hex(w, "ip", g->ip);
	jsonw_kv_u64(w, "time", g->time);
	jsonw_kv_u64(w, "offset", g->offset);
	jsonw_kv_u64(w, "bytes_skipped", g->bytes_skipped);
	jsonw_kv_i64(w, "error", g->errcode);
	jsonw_kv_string(w, "text", g->text ? g->text : "");
}

static void
jsonl_end(struct jsonw *w, const struct blks_end *end)
{
	jsonw_kv_u64(w, "tid", end->tid);
	for (int i = 0; i < BLKS_C_NR; i++)
		jsonw_kv_u64(w, counter_names[i], end->c[i]);
}

static void
jsonl_thread(struct jsonw *w, const struct blks_thread *t)
{
	jsonw_kv_u64(w, "tid", t->tid);
	jsonw_kv_u64(w, "pid", t->pid);
	jsonw_kv_string(w, "name", t->name ? t->name : "");
	jsonw_kv_u64(w, "trace_bytes", t->trace_bytes);
	jsonw_kv_bool(w, "wrapped", (t->flags & BLKS_THREAD_WRAPPED) != 0);
}

void
blks_jsonl_record(struct jsonw *w, const struct blks_record *r, uint32_t tid)
{
	jsonw_object_begin(w);
	jsonw_kv_string(w, "type", blks_type_name(r->type));
	if (r->type == BLKS_BLOCK || r->type == BLKS_EVENT ||
	    r->type == BLKS_GAP)
		jsonw_kv_u64(w, "tid", tid);
	switch (r->type) {
	case BLKS_MAP:
		jsonl_map(w, &r->u.map);
		break;
	case BLKS_THREAD:
		jsonl_thread(w, &r->u.thread);
		break;
	case BLKS_BLOCK:
		jsonl_block(w, &r->u.block);
		break;
	case BLKS_EVENT:
		jsonl_event(w, &r->u.event);
		break;
	case BLKS_GAP:
		jsonl_gap(w, &r->u.gap);
		break;
	case BLKS_END:
		jsonl_end(w, &r->u.end);
		break;
	case BLKS_EOS:
		jsonw_kv_u64(w, "threads", r->u.eos.nr_threads);
		break;
	}
	jsonw_object_end(w);
	jsonw_newline(w);
}

/*
 * ptspans internals: the run (stream in, engine, outputs), the span-line
 * writer and the inline trees.  The analysis directory's format (names,
 * keys, schema, the other records, the manifest) is span/spandir's.
 */
#ifndef PTSPANS_SPANS_H
#define PTSPANS_SPANS_H

#include <stdint.h>
#include <stdio.h>

#include "fmt/blkstream.h"
#include "span/callstack.h"
#include "span/spandir.h"
#include "base/error.h"
#include "base/jsonw.h"

#define SPANS_DEBUG_DIRS_MAX 16

struct spans_options {
	const char *out_dir;
	uint64_t jobs;			/* -j: 1 the serial engine */
	uint64_t chunk_blocks;		/* --chunk-blocks; 0 the default */
	int no_inline;
	int no_compress;	/* spans.jsonl plain, not spans.jsonl.zst */
	int format;		/* 0 jsonl, 1 summary */
	const char *debug_dirs[SPANS_DEBUG_DIRS_MAX];
	size_t n_debug_dirs;
};

/* Per-function totals for --format summary (and the manifest). */
struct fn_total {
	char *key;		/* "fn\tmodule" */
	uint64_t calls, spans, self_ns, self_insns, insns;
};

struct fn_totals {
	struct fn_total *slot;
	size_t n, cap;
};

/* An inline tree node of one span (see write.c). */
struct inl_node {
	const struct sym_inline *site;	/* any range of the call site */
	long parent;			/* index, -1 for the span itself */
	uint64_t own, total;
	uint64_t id;
};

struct inl_tree {
	struct inl_node *node;
	size_t n, cap;
};

/*
 * The span line writer.  Span lines are most of the output (gigabytes):
 * they are built in one large buffer and handed to out in big pieces, and
 * the members that depend on the call rather than on its time (tid, pid,
 * fn, raw, module, depth, call_site, entry) are rendered once and kept by
 * their values and the addresses of the function's strings, which must
 * therefore stay valid and unchanged while the writer lives (symbol
 * tables and mappings do).
 * Lines are formatted on the caller's thread: handing spans to a thread
 * of their own moved 128 bytes a span between the cores, which cost this
 * 2-vCPU VM more CPU than the formatting (pipeline 2.4-2.9 s with it,
 * 1.7-1.8 s without, same minutes).
 * spans_writer_new returns NULL when out of memory.  spans_write_span
 * returns 0, or -ERR_NOMEM or -ERR_IO (sticky); spans_writer_flush
 * writes everything given so far and returns 0 or the first error
 * (-ERR_IO: out failed; ferror(out) says so too).
 * spans_writer_free does not flush.
 */
struct span_writer;
struct span_writer *spans_writer_new(FILE *out);
int spans_write_span(struct span_writer *w, const struct cs_span *s);
int spans_writer_flush(struct span_writer *w);
void spans_writer_free(struct span_writer *w);

/*
 * From now on the writer hashes the lines it writes out (XXH64, seed 0),
 * and spans_writer_digest gives the hash of all of them so far (after a
 * flush): what the manifest keeps of a spans.jsonl written uncompressed,
 * which has no checksum of its own (a zstd frame has one).
 */
void spans_writer_hash_lines(struct span_writer *w);
uint64_t spans_writer_digest(const struct span_writer *w);

/* A span's inline_insns: the instructions of all its inline records. */
uint64_t spans_inline_insns(const struct cs_span *s);

/*
 * spans_inline_tree builds the span's inline tree in t (for inline.jsonl;
 * 0 or -ERR_NOMEM); spans_write_inline writes that tree's nodes (ids from
 * *next_id) to w, one record each.
 */
int spans_inline_tree(struct inl_tree *t, const struct cs_span *s);
void spans_write_inline(struct jsonw *w, const struct cs_span *s,
    struct inl_tree *t, uint64_t *next_id);

/* What follows path's last '/', or path. */
const char *spans_base_name(const char *path);

/* The display name of a span's function (unnamed: "module+0xoff"). */
const char *spans_fn_name(const struct cs_fn *fn, uint64_t entry, char *buf,
    size_t size);

void fn_totals_free(struct fn_totals *t);
/* Sorts by self_insns, descending, then by key. */
void fn_totals_sort(struct fn_totals *t);

/*
 * The parallel engine (par.c): records cut into chunks of chunk_blocks
 * blocks (0: SPANS_CHUNK_BLOCKS), rebuilt by jobs workers, applied in
 * stream order to real, the engine whose sink writes.  The hooks get
 * what the serial run's reading did besides feeding the engine, each
 * just before the engine makes what follows it: a MAP record (every
 * chunk before it applied), a THREAD record (its chunk about to be
 * applied), an END record (the same).
 */
#define SPANS_CHUNK_BLOCKS (1u << 13)

struct spans_par;
struct codemap;
struct codemap_stats;

struct spans_par_hooks {
	void *ctx;
	int (*map)(void *ctx, const struct blks_map *m, struct error *e);
	void (*thread)(void *ctx, const struct blks_thread *th);
	void (*end)(void *ctx, const struct blks_end *end);
	void (*read)(void *ctx);	/* after a run of blocks: progress */
};

struct spans_par_config {
	unsigned jobs;
	uint64_t chunk_blocks;
	struct codemap *cm;
	struct callstack *real;
	struct spans_par_hooks hooks;
};

int spans_par_new(struct spans_par **out, const struct spans_par_config *cfg,
    struct error *e);
/* Reads rd to its end: 0, or <0 with e (*read_error: the reader's). */
int spans_par_read(struct spans_par *p, struct blks_reader *rd,
    struct error *e, int *read_error);
/* The code questions of the chunks applied (the real engine's own are
 * its code map's), how many chunks there were and how many of them the
 * real engine rebuilt itself. */
void spans_par_stats(const struct spans_par *p, struct codemap_stats *added,
    uint64_t *chunks, uint64_t *rebuilt);
void spans_par_free(struct spans_par *p);

/*
 * index.bin built on a thread of its own (ixthread.c), or, without
 * thread, on the caller's as the rows come.  spans_ixt_new takes ix
 * (freed on failure too).  spans_ixt_add copies row (an
 * unnamed function's name with it: SPANIDX_F_UNNAMED) and returns 0 or
 * the first error the thread met before it.  spans_ixt_finish has the
 * index written to path after the last row and waits for it: 0 or the
 * first error.
 */
struct spans_ixt;
struct spanidx_writer;
struct spanidx_row;
int spans_ixt_new(struct spans_ixt **out, struct spanidx_writer *ix,
    int thread, struct error *e) PTKIT_MUST_CHECK;
int spans_ixt_add(struct spans_ixt *t, const struct spanidx_row *row,
    struct error *e) PTKIT_MUST_CHECK;
int spans_ixt_finish(struct spans_ixt *t, const char *path,
    struct error *e) PTKIT_MUST_CHECK;
void spans_ixt_free(struct spans_ixt *t);

/* Reads the stream from in and writes what o asks for.  Returns an exit
 * status (the error reported). */
int spans_run(const struct spans_options *o, FILE *in);

/*
 * -o DIR is written in DIR.ptspans-XXXXXX beside it, which holds its
 * owner's lock (base/scratch) until it is renamed into place: what a
 * killed ptspans left there, spans_sweep_dead_temps removes (those of
 * DIR only; returns how many).
 */
unsigned spans_sweep_dead_temps(const char *dir);

#endif

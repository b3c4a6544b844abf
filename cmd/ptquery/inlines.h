/*
 * inlines: the inlined calls of inline.jsonl, by span, for the outputs
 * that show them as frames (--inline: folded, timeline, chrome).  A
 * record's chain is its inlined call and those it is nested in, up to
 * the span's function.
 */
#ifndef PTQUERY_INLINES_H
#define PTQUERY_INLINES_H

#include <stddef.h>
#include <stdint.h>

#include "span/analysis.h"

struct inline_rec {
	uint64_t id, span, parent;	/* parent: a record's id, 0 none */
	char *fn;			/* owned */
	uint64_t insns;			/* its own, not its nested calls' */
	uint32_t depth;			/* 1: inlined into the function */
};

struct inlines {
	struct inline_rec *rec;		/* by span, then id */
	size_t n;
};

/* Reads a's inline.jsonl into in (empty when there is none).  Returns
 * 0, or -1 after reporting. */
int inlines_read(const struct analysis *a, struct inlines *in);
void inlines_free(struct inlines *in);

/* The records of span: *n of them from the one returned (NULL: none). */
const struct inline_rec *inlines_of(const struct inlines *in, uint64_t span,
    size_t *n);

/* The record of span whose id is id among recs[0..n), or NULL. */
const struct inline_rec *inlines_parent(const struct inline_rec *recs,
    size_t n, uint64_t id);

#endif

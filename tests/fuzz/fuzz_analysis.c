/*
 * fuzz_analysis: libFuzzer target over the analysis readers ptquery and
 * ptdiff open (lib/span/analysis, lib/fmt/spanidx, the analysis
 * manifest): the input is cut into an analysis directory's files and
 * opened, walked and read back as ptquery would, without a crash, a hang,
 * a leak or undefined behaviour.
 *
 * Input: one byte saying which files exist (bit 0 manifest.json, bit 1
 * spans.jsonl, bit 2 index.bin, bit 4 aggregates.bin) and whether
 * index.bin's size and checksums are made right before it is read (bit
 * 3: as a forger would, so that the fuzzer reaches the checks behind
 * them; bit 5 likewise aggregates.bin's checksum, and the identity of
 * the index it was made from, that of the index.bin given; bit 6
 * manifest.json's:
 * its part is taken as the bytes before the checksum member, which is
 * appended), then their bytes in that order, separated by the line "@@"
 * (a part missing is empty).
 * Without index.bin the reader rebuilds it from spans.jsonl.  The totals
 * are asked for as summary and hotpaths ask (span/aggkeep when it holds
 * them), opened both ways.
 * The directory is then opened again lazily and read block by block,
 * each checked before it is read, as at and a timeline do.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/le.h"
#include "span/aggkeep.h"
#include "span/aggregate.h"
#include "span/analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
put(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	char path[PATH_MAX];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	rc = n > 0 && fwrite(p, 1, n, f) != n ? -1 : 0;
	return fclose(f) != 0 ? -1 : rc;
}

/* index.bin with its size field and every checksum made to match. */
static int
put_sealed(const char *dir, const uint8_t *p, size_t n)
{
	uint8_t *copy;
	int rc;

	if (n < SPANIDX_HEADER_SIZE)
		return put(dir, "index.bin", p, n);
	if ((copy = malloc(n)) == NULL)
		return -1;
	memcpy(copy, p, n);
	spanidx_reseal(copy, n);
	rc = put(dir, "index.bin", copy, n);
	free(copy);
	return rc;
}

/* aggregates.bin with its checksum made to match, and made from the
 * index.bin already written when there is one. */
static int
put_sealed_kept(const char *dir, const uint8_t *p, size_t n)
{
	struct error e;
	uint64_t id;
	uint8_t *copy;
	int rc;

	if (n < AGGKEEP_HEADER_SIZE)
		return put(dir, "aggregates.bin", p, n);
	if ((copy = malloc(n)) == NULL)
		return -1;
	memcpy(copy, p, n);
	if (aggkeep_index_id_at(dir, &id, &e) == 0)
		le_put_u64(copy + AGGKEEP_INDEX_AT, id);
	le_put_u64(copy + AGGKEEP_CHECKSUM_AT, aggkeep_checksum(copy, n));
	rc = put(dir, "aggregates.bin", copy, n);
	free(copy);
	return rc;
}

/* manifest.json: p[0..n) and the checksum member over them. */
static int
put_sealed_manifest(const char *dir, const uint8_t *p, size_t n)
{
	uint8_t *copy;
	int rc;

	if ((copy = malloc(n + SPANDIR_MANIFEST_TAIL)) == NULL)
		return -1;
	if (n > 0)
		memcpy(copy, p, n);
	spandir_manifest_tail(copy, n, (char *)copy + n);
	rc = put(dir, "manifest.json", copy, n + SPANDIR_MANIFEST_TAIL);
	free(copy);
	return rc;
}

/* The totals as summary and hotpaths ask for them. */
static void
totals(const struct analysis *a, uint64_t *sum)
{
	struct agg_filter f = { .to_ns = AGG_WINDOW_END, .has_tid = 1,
	    .tid = 1000 };
	struct error e;
	struct agg g;

	for (int i = 0; i < 3; i++) {
		if (agg_hotpaths(&g, a, i == 2 ? AGG_MODULE : AGG_FUNCTION,
		    i == 0 ? NULL : &f, &e) < 0) {
			if (e.msg[0] == '\0')
				abort();
			continue;
		}
		for (size_t r = 0; r < g.n; r++)
			*sum += strlen(g.row[r].name) + g.row[r].self_ns +
			    strlen(g.row[r].module);
		agg_free(&g);
	}
	if (a->kept.base != NULL)
		*sum += aggkeep_pid(&a->kept, 1000);
}

static int
visit(void *ctx, const struct analysis_visit *v)
{
	uint64_t *sum = ctx;

	*sum += v->depth + v->row;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "manifest.json", "spans.jsonl",
	    "index.bin", "aggregates.bin" };
	char dir[] = "/tmp/fuzz_analysis.XXXXXX";
	const uint8_t *p, *end = data + size, *sep;
	struct analysis a;
	struct error e;
	uint64_t sum = 0;
	unsigned which;

	if (size < 1 || mkdtemp(dir) == NULL)
		return 0;
	which = data[0];
	p = data + 1;
	for (int i = 0; i < 4; i++) {
		unsigned bit = i == 3 ? 16 : 1u << i;

		sep = p < end ? memmem(p, (size_t)(end - p), "\n@@\n", 4) :
		    NULL;
		if (sep == NULL)
			sep = end;
		if ((which & bit) && (i == 0 && (which & 64) ?
		    put_sealed_manifest(dir, p, (size_t)(sep - p)) :
		    i == 2 && (which & 8) ?
		    put_sealed(dir, p, (size_t)(sep - p)) :
		    i == 3 && (which & 32) ?
		    put_sealed_kept(dir, p, (size_t)(sep - p)) :
		    put(dir, names[i], p, (size_t)(sep - p))) < 0)
			goto out;
		p = sep < end ? sep + 4 : end;
	}
	if (analysis_open_for(&a, dir, ANALYSIS_TOTALS, &e) == 0) {
		totals(&a, &sum);
		if (analysis_open_index(&a, &e) == 0)
			totals(&a, &sum);
		else if (e.msg[0] == '\0')
			abort();
		analysis_close(&a);
	} else if (e.msg[0] == '\0') {
		abort();
	}
	if (analysis_open(&a, dir, &e) == 0) {
		for (uint64_t r = 0; r < analysis_rows(&a) && r < 4096; r++) {
			sum += strlen(analysis_fn(&a, r));
			sum += strlen(analysis_module(&a, r));
		}
		sum += analysis_manifest_u64(&a, "quality.spans", 0);
		sum += strlen(analysis_manifest_str(&a, "snapshot", ""));
		if (analysis_walk(&a, visit, &sum, &e) < 0 && e.msg[0] == '\0')
			abort();
		(void)analysis_find_span(&a, sum);
		totals(&a, &sum);
		analysis_close(&a);
	} else if (e.msg[0] == '\0') {
		abort();	/* a failure says why */
	}
	/* As at and a timeline read it: block by block, checked first. */
	if (analysis_open_lazy(&a, dir, &e) == 0) {
		const struct spanidx *ix = &a.ix;

		for (uint64_t r = 0; r < ix->rows && r < 8192; r++) {
			if (spanidx_check(ix, r, r + 1, SPANIDX_COLS_ALL, &e) < 0) {
				if (e.msg[0] == '\0')
					abort();
				r |= SPANIDX_BLOCK_ROWS - 1;	/* the next block */
				continue;
			}
			for (unsigned c = 0; c < SPANIDX_NCOLS; c++)
				sum += spanidx_value(ix, c, r);
			sum += strlen(analysis_fn(&a, r));
		}
		analysis_close(&a);
	} else if (e.msg[0] == '\0') {
		abort();
	}
out:
	if (cleanup_remove_tree(dir) < 0)
		abort();
	return 0;
}

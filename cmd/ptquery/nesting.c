/* nesting: see nesting.h. */
#include "nesting.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

struct by_id {
	uint64_t id;
	uint64_t row;
};

static int
cmp_id(const void *a, const void *b)
{
	const struct by_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Rows of the whole index by span id, for walking up parents. */
static struct by_id *
index_by_id(const struct spanidx *ix)
{
	struct by_id *m = malloc((ix->rows + 1) * sizeof(*m));

	if (m == NULL)
		return NULL;
	for (uint64_t r = 0; r < ix->rows; r++) {
		m[r].id = spanidx_u64(ix, SPANIDX_ID, r);
		m[r].row = r;
	}
	qsort(m, ix->rows, sizeof(*m), cmp_id);
	return m;
}

static int64_t
row_of_id(const struct by_id *m, uint64_t n, uint64_t id)
{
	uint64_t lo = 0, hi = n;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (m[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && m[lo].id == id ? (int64_t)m[lo].row : -1;
}

struct node {
	uint32_t tid;
	uint64_t start_ns, end_ns, id;
	int64_t parent;			/* index into rows, -1: a root */
	size_t first_child, n_children;	/* in kids */
};

/* Siblings (and roots) in call order: by parent, tid, start, then id. */
static int
cmp_sibling(const void *a, const void *b, void *ctx)
{
	const struct node *nodes = ctx;
	const struct node *x = &nodes[*(const size_t *)a];
	const struct node *y = &nodes[*(const size_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	/* events without times (id 0) in the order they were given */
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The tick of nanosecond ns, rounded down. */
static uint64_t
tick_of_ns(uint64_t ns)
{
	return (uint64_t)(((unsigned __int128)ns << NESTING_TICK_BITS) / 1000);
}

/*
 * The nearest ancestor of each row among those exported: up the parent
 * ids through the whole index, each row's answer kept for the rows below
 * it (memo: -2 not known yet, -1 none, else an index into rows).
 */
static int
find_parents(const struct analysis *a, struct node *nodes, const uint64_t *rows,
    size_t n)
{
	const struct spanidx *ix = &a->ix;
	int64_t *sel = malloc((ix->rows + 1) * sizeof(*sel));
	int64_t *memo = malloc((ix->rows + 1) * sizeof(*memo));
	uint64_t *path = malloc((ix->rows + 1) * sizeof(*path));
	struct by_id *m = index_by_id(ix);
	int rc = -1;

	if (sel == NULL || memo == NULL || path == NULL || m == NULL)
		goto out;
	for (uint64_t r = 0; r < ix->rows; r++)
		sel[r] = memo[r] = -2;
	for (size_t i = 0; i < n; i++)
		sel[rows[i]] = (int64_t)i;
	for (size_t i = 0; i < n; i++) {
		uint64_t pid = spanidx_u64(ix, SPANIDX_PARENT, rows[i]);
		size_t np = 0;
		int64_t ans = -1, pr;

		while (pid != 0 && (pr = row_of_id(m, ix->rows, pid)) >= 0) {
			if (sel[pr] >= 0) {
				ans = sel[pr];
				break;
			}
			if (memo[pr] != -2) {
				ans = memo[pr];
				break;
			}
			if (np == ix->rows)
				break;		/* a cycle no analysis has */
			path[np++] = (uint64_t)pr;
			pid = spanidx_u64(ix, SPANIDX_PARENT, (uint64_t)pr);
		}
		while (np > 0)
			memo[path[--np]] = ans;
		nodes[i].parent = ans;
	}
	rc = 0;
out:
	free(sel);
	free(memo);
	free(path);
	free(m);
	return rc;
}

int
nesting_layout(const struct analysis *a, const uint64_t *rows, size_t n,
    size_t *order, uint64_t *start, uint64_t *end)
{
	return nesting_layout_extra(a, rows, n, NULL, 0, order, start, end);
}

int
nesting_layout_extra(const struct analysis *a, const uint64_t *rows,
    size_t n0, const size_t *parent, size_t m, size_t *order,
    uint64_t *start, uint64_t *end)
{
	const struct spanidx *ix = &a->ix;
	size_t n = n0 + m;
	struct node *nodes = calloc(n + 1, sizeof(*nodes));
	size_t *kids = malloc((n + 1) * sizeof(*kids));
	size_t *stack = malloc((n + 1) * sizeof(*stack));
	size_t *next = malloc((n + 1) * sizeof(*next));
	size_t nroots = 0, k = 0, x;
	uint64_t prev = 0, t;
	int rc = -1, have = 0;

	if (nodes == NULL || kids == NULL || stack == NULL || next == NULL)
		goto out;
	for (size_t i = 0; i < n0; i++) {
		nodes[i].tid = spanidx_u32(ix, SPANIDX_TID, rows[i]);
		nodes[i].start_ns = spanidx_u64(ix, SPANIDX_START_NS, rows[i]);
		nodes[i].end_ns = spanidx_u64(ix, SPANIDX_END_NS, rows[i]);
		nodes[i].id = spanidx_u64(ix, SPANIDX_ID, rows[i]);
		kids[i] = i;
	}
	if (find_parents(a, nodes, rows, n0) < 0)
		goto out;
	/* The events without times: at the start of the span holding them,
	 * first among its children (id 0 sorts before every span's). */
	for (size_t j = 0; j < m; j++) {
		size_t up = parent[j], hops = 0;

		while (up >= n0 && hops++ < m)
			up = parent[up - n0];
		nodes[n0 + j].tid = nodes[up].tid;
		nodes[n0 + j].start_ns = nodes[n0 + j].end_ns =
		    nodes[up].start_ns;
		nodes[n0 + j].id = 0;
		nodes[n0 + j].parent = (int64_t)parent[j];
		kids[n0 + j] = n0 + j;
	}
	qsort_r(kids, n, sizeof(*kids), cmp_sibling, nodes);
	for (size_t i = 0; i < n; i++) {
		const struct node *c = &nodes[kids[i]];

		if (c->parent < 0) {
			nroots++;
			continue;
		}
		if (nodes[c->parent].n_children++ == 0)
			nodes[c->parent].first_child = i;
	}
	/* Roots first in kids (parent -1), by tid and start: depth first,
	 * one tick clock per thread. */
	for (size_t r = 0; r < nroots; r++) {
		size_t top = 0;

		if (r == 0 || nodes[kids[r]].tid != nodes[kids[r - 1]].tid)
			have = 0;
		x = kids[r];
		for (;;) {
			if (x != SIZE_MAX) {	/* enter x */
				t = tick_of_ns(nodes[x].start_ns);
				start[x] = have && t <= prev ? prev + 1 : t;
				prev = start[x];
				have = 1;
				order[k++] = x;
				stack[top] = x;
				next[top++] = 0;
			}
			x = stack[top - 1];
			if (next[top - 1] < nodes[x].n_children) {
				x = kids[nodes[x].first_child + next[top - 1]++];
				continue;
			}
			t = tick_of_ns(nodes[x].end_ns);
			end[x] = t <= prev ? prev + 1 : t;
			prev = end[x];
			x = SIZE_MAX;
			if (--top == 0)
				break;
		}
	}
	rc = 0;
out:
	free(nodes);
	free(kids);
	free(stack);
	free(next);
	return rc;
}

int
nesting_print_us(char *buf, size_t size, uint64_t ticks)
{
	uint64_t us = ticks >> NESTING_TICK_BITS;
	uint64_t frac = ticks & ((1u << NESTING_TICK_BITS) - 1);
	/* frac / 2^20 = frac * 5^20 / 10^20: 20 decimal digits, exact */
	unsigned __int128 dec = (unsigned __int128)frac * 95367431640625ull;
	char digits[21];
	int n = 20;

	if (frac == 0)
		return snprintf(buf, size, "%" PRIu64, us);
	digits[20] = '\0';
	for (int i = 19; i >= 0; i--) {
		digits[i] = (char)('0' + (int)(dec % 10));
		dec /= 10;
	}
	while (n > 1 && digits[n - 1] == '0')
		digits[--n] = '\0';
	return snprintf(buf, size, "%" PRIu64 ".%s", us, digits);
}

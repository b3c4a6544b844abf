/*
 * symtab_bench: load time and lookup rate of lib/symtab on one image
 * (libc with its libc6-dbg debuginfo by default).  Prints figures; never
 * asserts them.
 *
 *   symtab_bench [IMAGE [LOOKUPS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sym/symtab.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long
rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = 0;
	fclose(f);
	return res * 4;
}

/* xorshift: reproducible addresses without libc's rand state. */
static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int
main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/lib/x86_64-linux-gnu/libc.so.6";
	long n = argc > 2 ? atol(argv[2]) : 5000000;
	struct symtab *st = NULL;
	struct symtab_stats stats;
	const struct sym *first, *last;
	struct sym_line ln;
	struct error e;
	double t0, c0, best = 1e9, best_cpu = 1e9, t;
	uint64_t seed = 88172645463325252ull, lo, span, hits = 0;
	long before, i, r;

	before = rss_kib();
	for (r = 0; r < 5; r++) {
		symtab_free(st);
		t0 = now();
		c0 = cpu_now();
		if (symtab_open(path, NULL, &st, &e) != 0) {
			fprintf(stderr, "symtab_bench: %s\n", e.msg);
			return 1;
		}
		t = now() - t0;
		if (t < best)
			best = t;
		t = cpu_now() - c0;
		if (t < best_cpu)
			best_cpu = t;
	}
	symtab_get_stats(st, &stats);
	printf("image: %s\ndebuginfo: %s\n", path,
	    symtab_debug_path(st) ? symtab_debug_path(st) : "(none)");
	printf("functions: %zu (%zu from DWARF, %zu PLT), inlined ranges: %zu, "
	    "line rows: %zu\n", stats.n_syms, stats.n_from_dwarf, stats.n_plt,
	    stats.n_inlines, stats.n_lines);
	printf("load time: %.1f ms wall, %.1f ms CPU (best of 5)\n",
	    best * 1e3, best_cpu * 1e3);
	printf("table size: %zu KiB (process RSS grew %ld KiB over 5 loads)\n",
	    stats.n_bytes / 1024, rss_kib() - before);
	first = symtab_sym(st, 0);
	last = symtab_sym(st, stats.n_syms - 1);
	if (first == NULL || last == NULL)
		return 0;
	lo = first->addr;
	span = last->addr + last->size - lo;

	/* Rates per CPU second: wall time on a shared machine says little. */
	c0 = cpu_now();
	for (i = 0; i < n; i++)
		hits += symtab_lookup(st, lo + next_rand(&seed) % span) != NULL;
	t = cpu_now() - c0;
	printf("function lookups: %.1f M/s of CPU (%.0f%% hit)\n",
	    (double)n / t / 1e6, 100.0 * (double)hits / (double)n);

	hits = 0;
	c0 = cpu_now();
	for (i = 0; i < n; i++) {
		uint64_t a = lo + next_rand(&seed) % span;

		hits += symtab_lookup(st, a) != NULL;
		hits += symtab_inline_at(st, a) != NULL;
		hits += (uint64_t)symtab_line(st, a, &ln);
	}
	t = cpu_now() - c0;
	printf("function + inline + line lookups: %.1f M/s of CPU\n",
	    (double)n / t / 1e6);
	symtab_free(st);
	return hits == 0;
}

/*
 * compare: two analyses, function by function.
 *
 * Owns what ptdiff decides: how rows of A and B pair (demangled name
 * within module, the module compared by file name so that two builds in
 * different directories still pair; several rows of one side with one
 * key stay unpaired and are listed as ambiguous; then a row only one side
 * has pairs with the one row of the other side that differs from it only
 * by the compiler's clone suffixes, .constprop.N, .isra.N, .part.N,
 * .llvm.N, .lto_priv.N, a cold part with a cold part, and says so), which
 * modules are compared (--module, --exclude-module; the rows left out
 * counted), the metrics and their deltas, the class of each row (new,
 * vanished, slower, faster, same), the noise band of instruction counts
 * (runs of more than one thread are not deterministic: changes within it
 * are same and cross no bound), which metrics are trustworthy for the
 * pair (comparability), and which rows cross a --fail-on bound.
 */
#ifndef PTDIFF_COMPARE_H
#define PTDIFF_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "span/aggregate.h"
#include "span/analysis.h"
#include "base/error.h"

enum metric {
	M_CALLS,
	M_TOTAL_NS,
	M_SELF_NS,
	M_INSNS,
	M_SELF_INSNS,
	M_MEAN_NS,		/* sum of span durations / spans */
	M_MEAN_SELF_NS,		/* self_ns / spans */
	M_MEAN_INSNS,		/* insns / outermost spans: one outermost
				   call, callees included */
	M_MEAN_SELF_INSNS,	/* self_insns / spans */
	M_COUNT
};

/* "calls", "self_ns", ...; NULL past M_COUNT. */
const char *metric_name(enum metric m);
/* Non-zero for the metrics measured in time. */
int metric_is_time(enum metric m);

enum row_class { C_SAME, C_SLOWER, C_FASTER, C_NEW, C_VANISHED, C_AMBIGUOUS };
const char *row_class_name(enum row_class c);

/* One --fail-on METRIC:+PCT. */
struct bound {
	enum metric metric;
	double pct;
	const char *text;	/* as given, for messages */
};

/*
 * Parses "self_ns:+10%" (the '%' and the '+' are optional; "calls:+0").
 * Returns 0, or -ERR_INVALID with e saying what is wrong.
 */
int bound_parse(const char *s, struct bound *b, struct error *e);

/* One side of the comparison. */
struct side {
	const char *path;
	struct analysis an;
	struct agg agg;
	json_t *snap;		/* the snapshot's manifest.json, or NULL */
	int opened;
};

struct diff_row {
	const char *name, *module;	/* module: its file name */
	const char *name_b;		/* B's name when it pairs by clone
					   suffix, else NULL */
	enum row_class cls;
	int has_a, has_b;
	double a[M_COUNT], b[M_COUNT];
	double primary_delta;		/* B - A of the class metric */
	int noise;			/* changed, within the noise band */
	int crossed;			/* crossed some --fail-on bound */
	enum metric crossed_metric;	/* the first bound it crossed */
	double crossed_pct;		/* its relative change, in percent */
};

/* One line of the comparability verdict. */
struct check {
	const char *what;		/* "executable build-id", ... */
	char a[160], b[160];
	int same;
};

#define MAX_CHECKS 12

struct comparison {
	struct side a, b;
	struct diff_row *row;
	size_t n;
	struct check check[MAX_CHECKS];
	size_t n_checks;
	int times_trusted;		/* times mean the same on both sides */
	int times_virtual;		/* both from emu's virtual clock */
	int per_call;			/* windows differ: compare means */
	enum metric class_metric;	/* decides slower / faster */
	size_t n_changed, n_crossed, n_ignored;
	size_t n_filtered[2];		/* rows of A, of B: modules left out */
	size_t n_noise;			/* rows same within the noise band */
	int deterministic;		/* one thread on each side */
	double insns_total;		/* the larger side's instructions */
	double noise_insns;		/* the band, in instructions */
};

/* A noise band as given: N instructions, or P% of the capture's. */
struct noise_spec {
	int given;			/* else: the default */
	int pct;			/* value is a percentage */
	double value;
};

/* Default band where runs are not deterministic: of the capture's insns. */
#define NOISE_DEFAULT_PCT 0.1

/*
 * Parses "N" or "P%".  Returns 0, or -ERR_INVALID with e saying what is
 * wrong.
 */
int noise_parse(const char *s, struct noise_spec *n, struct error *e);

struct compare_options {
	enum agg_group group;
	uint64_t min_ns;
	const struct bound *bounds;
	size_t n_bounds;
	/* Modules compared (file name or path): only these, none of those. */
	const char *const *modules;
	size_t n_modules;
	const char *const *excluded;
	size_t n_excluded;
	struct noise_spec noise;
};

/*
 * name without the clone suffixes gcc and clang add to a function they
 * specialise (.constprop.N, .isra.N, .part.N, .llvm.N, .lto_priv.N, in
 * any number and order), into buf; a trailing ".cold" or ".cold.N" stays
 * as ".cold" (another part of the function, not a version of it: the cold
 * part of one version pairs with the cold part of another).  Returns the
 * length written.
 */
size_t clone_base(const char *name, char *buf, size_t size);

/*
 * Opens A and B, aggregates and pairs their rows, classifies them and
 * checks the bounds.  A snapshot manifest that is there but refused (a
 * link, a FIFO, not JSON) is said on stderr as a warning, and that side
 * goes without the snapshot's context.  Returns 0, or a negative -ERR_*
 * with e saying which side failed and why.  comparison_free() releases c
 * in every case.
 */
int comparison_run(struct comparison *c, const char *path_a,
    const char *path_b, const struct compare_options *o, struct error *e);
void comparison_free(struct comparison *c);

#endif

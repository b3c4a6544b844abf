/*
 * ptquery: questions over an analysis directory.  This file parses the
 * command line, opens the analysis (lib/analysis) and hands it to the
 * kind asked for (kinds.c, summary.c, decoded.c).
 */
#include <signal.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/spawn.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "fmt/store.h"
#include "span/aggregate.h"
#include "span/analysis.h"
#include "span/spandir.h"
#include "tool/cli.h"
#include "query.h"
#include "tool/report.h"

const char *const query_tool = "ptquery";

static const struct tool_info tool = {
	"ptquery",
	"ptquery ANALYSIS --kind KIND [--group function|inline|module]\n"
	"        [--sort COLUMN] [--function NAME] [--address ADDR]\n"
	"        [--module IMAGE]... [--exclude-module IMAGE]... [--pid PID]\n"
	"        [--tid TID] [--from NS] [--to NS] [--at NS] [--span ID]\n"
	"        [--format text|table|csv|json|folded|chrome|fxt] [--limit N]\n"
	"        [--cursor C] [--max-bytes N] [--depth N] [--min-share P]\n"
	"        [--weight ns|insns] [--inline] [--incomplete] [--wall-clock]\n"
	"        [--max-insns N]",
};

enum { OPT_KIND = 256, OPT_GROUP, OPT_SORT, OPT_FUNCTION, OPT_TID, OPT_FROM,
	OPT_TO, OPT_AT, OPT_SPAN, OPT_FORMAT, OPT_LIMIT, OPT_CURSOR,
	OPT_MAX_BYTES, OPT_HELP, OPT_VERSION, OPT_PID, OPT_MODULE, OPT_DEPTH,
	OPT_WEIGHT, OPT_INCOMPLETE, OPT_WALL_CLOCK, OPT_EXCLUDE_MODULE,
	OPT_MIN_SHARE, OPT_INLINE, OPT_ADDRESS, OPT_MAX_INSNS };

#define QUERY_KINDS "summary|hotpaths|timeline|calls|at|branches|insns|gaps|threads|tree|source|images"

static const struct option long_options[] = {
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "function", required_argument, NULL, OPT_FUNCTION },
	{ "module", required_argument, NULL, OPT_MODULE },
	{ "exclude-module", required_argument, NULL, OPT_EXCLUDE_MODULE },
	{ "min-share", required_argument, NULL, OPT_MIN_SHARE },
	{ "inline", no_argument, NULL, OPT_INLINE },
	{ "address", required_argument, NULL, OPT_ADDRESS },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "at", required_argument, NULL, OPT_AT },
	{ "span", required_argument, NULL, OPT_SPAN },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "weight", required_argument, NULL, OPT_WEIGHT },
	{ "cursor", required_argument, NULL, OPT_CURSOR },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "max-insns", required_argument, NULL, OPT_MAX_INSNS },
	{ "incomplete", no_argument, NULL, OPT_INCOMPLETE },
	{ "wall-clock", no_argument, NULL, OPT_WALL_CLOCK },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/*
 * The numeric options, by option code.  Returns 0, or -1 after a usage
 * error.
 */
static int
parse_number_option(int c, const char *arg, struct query_options *o)
{
	static const struct {
		int code;
		const char *name;
		size_t offset;
	} numbers[] = {
		{ OPT_TID, "--tid", offsetof(struct query_options, tid) },
		{ OPT_PID, "--pid", offsetof(struct query_options, pid) },
		{ OPT_FROM, "--from", offsetof(struct query_options, from_ns) },
		{ OPT_TO, "--to", offsetof(struct query_options, to_ns) },
		{ OPT_AT, "--at", offsetof(struct query_options, at_ns) },
		{ OPT_SPAN, "--span", offsetof(struct query_options, span) },
		{ OPT_LIMIT, "--limit", offsetof(struct query_options, limit) },
		{ OPT_MAX_BYTES, "--max-bytes",
		    offsetof(struct query_options, max_bytes) },
		{ OPT_DEPTH, "--depth", offsetof(struct query_options, depth) },
		{ OPT_MAX_INSNS, "--max-insns",
		    offsetof(struct query_options, max_insns) },
	};
	size_t i;

	for (i = 0; numbers[i].code != c; i++)
		;	/* parse_options calls this only for the codes above */
	o->has_tid |= c == OPT_TID;
	o->has_pid |= c == OPT_PID;
	o->has_at |= c == OPT_AT;
	o->has_span |= c == OPT_SPAN;
	o->has_limit |= c == OPT_LIMIT;
	o->has_depth |= c == OPT_DEPTH;
	return cli_opt_size(&tool, numbers[i].name, arg, 0, INT64_MAX,
	    (uint64_t *)((char *)o + numbers[i].offset));
}

/*
 * The options naming one of a list.  Returns 0, or -1 after a usage
 * error.
 */
static int
parse_choice_option(int c, const char *arg, struct query_options *o)
{
	switch (c) {
	case OPT_KIND:
		o->kind = cli_opt_choice(&tool, "--kind", arg, QUERY_KINDS);
		return o->kind < 0 ? -1 : 0;
	case OPT_GROUP:
		o->group = cli_opt_choice(&tool, "--group", arg,
		    "function|inline|module");
		return o->group < 0 ? -1 : 0;
	case OPT_WEIGHT:
		o->weight = cli_opt_choice(&tool, "--weight", arg, "ns|insns");
		return o->weight++ < 0 ? -1 : 0;
	default:
		o->format = cli_opt_choice(&tool, "--format", arg,
		    "text|table|csv|json|folded|chrome|fxt");
		return o->format < 0 ? -1 : 0;
	}
}

/* --module and --exclude-module add to their lists. */
static int
add_module(const char ***list, size_t *n, const char *arg)
{
	const char **grown = realloc(*list, (*n + 1) * sizeof(*grown));

	if (grown == NULL) {
		report(tool.name, NULL, NULL, "out of memory");
		return -1;
	}
	*list = grown;
	grown[(*n)++] = arg;
	return 0;
}

/* --min-share P: a percentage, 0 to 100, decimals allowed. */
static int
parse_share(const char *arg, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end != '\0' || !(v >= 0 && v <= 100)) {
		cli_usage_error(&tool, "--min-share: '%s' is not a percentage "
		    "from 0 to 100", arg);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * The filters a kind has no use for are refused rather than ignored, so
 * that an answer never looks filtered when it is not.  Returns 0, or -1
 * after a usage error.
 */
static int
filters_apply(const struct query_options *o)
{
	static const char *const kinds[] = { "summary", "hotpaths",
	    "timeline", "calls", "at", "branches", "insns", "gaps", "threads",
	    "tree", "source", "images" };
	int window = o->from_ns != 0 || o->to_ns != INT64_MAX;
	int folded = o->format == F_FOLDED;
	const char *bad = NULL;

	if ((o->has_at || o->has_span) && o->kind != K_AT)
		bad = o->has_at ? "--at" : "--span";
	else if (window && (o->kind == K_AT || o->kind == K_SOURCE))
		bad = o->from_ns != 0 ? "--from" : "--to";
	else if (o->has_group && o->group != AGG_FUNCTION && !folded &&
	    o->kind != K_HOTPATHS)
		bad = "--group";
	else if (query_module_filtered(o) && (o->kind == K_GAPS ||
	    o->kind == K_THREADS))
		bad = o->n_modules ? "--module" : "--exclude-module";
	else if (o->kind == K_SOURCE && (o->has_tid || (o->has_pid &&
	    o->address == NULL)))
		bad = o->has_tid ? "--tid" : "--pid";
	if (bad == NULL)
		return 0;
	cli_usage_error(&tool, "%s does not apply to --kind %s", bad,
	    kinds[o->kind]);
	return -1;
}

static enum cli_parse
parse_options(int argc, char *argv[], struct query_options *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_TID: case OPT_PID: case OPT_FROM: case OPT_TO:
		case OPT_AT:
		case OPT_SPAN: case OPT_LIMIT: case OPT_MAX_BYTES: case OPT_DEPTH:
		case OPT_MAX_INSNS:
			if (parse_number_option(c, optarg, o) < 0)
				return CLI_USAGE;
			break;
		case OPT_KIND: case OPT_GROUP: case OPT_FORMAT: case OPT_WEIGHT:
			if (parse_choice_option(c, optarg, o) < 0)
				return CLI_USAGE;
			o->has_group |= c == OPT_GROUP;
			break;
		case OPT_SORT:
			o->sort = optarg;
			break;
		case OPT_FUNCTION:
			o->function = optarg;
			break;
		case OPT_MODULE:
			if (add_module(&o->modules, &o->n_modules, optarg) < 0)
				return CLI_USAGE;
			break;
		case OPT_EXCLUDE_MODULE:
			if (add_module(&o->exclude, &o->n_exclude, optarg) < 0)
				return CLI_USAGE;
			break;
		case OPT_MIN_SHARE:
			if (parse_share(optarg, &o->min_share) < 0)
				return CLI_USAGE;
			break;
		case OPT_INLINE:
			o->inline_frames = 1;
			break;
		case OPT_ADDRESS:
			o->address = optarg;
			break;
		case OPT_CURSOR:
			o->cursor = optarg;
			break;
		case OPT_INCOMPLETE:
			o->incomplete = 1;
			break;
		case OPT_WALL_CLOCK:
			o->wall_clock = 1;
			break;
		case OPT_HELP:
			return cli_help(&tool);
		case OPT_VERSION:
			return cli_version(&tool);
		default:
			return cli_bad_option(&tool, c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(&tool, "no analysis directory given");
	if (argc - optind > 1)
		return cli_usage_error(&tool, "too many arguments");
	if (o->kind < 0)
		return cli_usage_error(&tool, "--kind is required");
	if (o->has_at && o->has_span)
		return cli_usage_error(&tool, "--at and --span both give the "
		    "instant: use one");
	if (o->has_limit && o->limit == 0)
		return cli_usage_error(&tool, "--limit 0 gives no rows: a page "
		    "has at least one");
	if (o->from_ns >= o->to_ns)
		return cli_usage_error(&tool, "--from must be below --to");
	if (o->wall_clock && o->kind != K_TIMELINE && o->kind != K_AT)
		return cli_usage_error(&tool, "--wall-clock applies to --kind "
		    "timeline and at only");
	if (o->weight != 0 && o->format != F_FOLDED)
		return cli_usage_error(&tool, "--weight applies to --format "
		    "folded only");
	if (o->min_share >= 0 && o->kind != K_TREE)
		return cli_usage_error(&tool, "--min-share applies to --kind "
		    "tree only");
	if (o->address != NULL && o->kind != K_SOURCE)
		return cli_usage_error(&tool, "--address applies to --kind "
		    "source only");
	if (o->inline_frames && (o->format == F_FXT ||
	    (o->format != F_FOLDED && o->format != F_CHROME &&
	    o->kind != K_TIMELINE)))
		return cli_usage_error(&tool, "--inline applies to --kind "
		    "timeline and to --format folded and chrome only (fxt "
		    "has no inlined calls)");
	if (filters_apply(o) < 0)
		return CLI_USAGE;
	o->analysis = argv[optind];
	return CLI_RUN;
}

/* --pid: the threads of that process, from the index's thread table. */
static int
pid_threads(const struct analysis *a, struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	uint32_t tid, pid, *grown;
	uint64_t spans;
	size_t i;

	for (uint64_t t = 0; t < ix->n_threads; t++) {
		spanidx_thread(ix, t, &tid, &pid, &spans);
		if (pid != o->pid)
			continue;
		for (i = 0; i < o->n_pid_tids && o->pid_tids[i] != tid; i++)
			;
		if (i < o->n_pid_tids)
			continue;
		grown = realloc(o->pid_tids, (o->n_pid_tids + 1) *
		    sizeof(*grown));
		if (grown == NULL) {
			report(tool.name, NULL, NULL, "out of memory");
			return -1;
		}
		o->pid_tids = grown;
		o->pid_tids[o->n_pid_tids++] = tid;
	}
	return 0;
}

/*
 * The threads and processes the analysis knows (threads.jsonl's, else
 * the spans'), in list for an error message: "1234, 1235".
 */
static void
known_ids(const struct analysis *a, int pids, char *list, size_t size)
{
	const struct spanidx *ix = &a->ix;
	uint32_t seen[64];
	size_t n = 0, len = 0, i;

	list[0] = '\0';
	/* the thread table is in the order the threads' first spans come */
	for (uint64_t t = 0; t < ix->n_threads && n < 64; t++) {
		uint32_t tid, pid, v;
		uint64_t spans;

		spanidx_thread(ix, t, &tid, &pid, &spans);
		v = pids ? pid : tid;

		for (i = 0; i < n && seen[i] != v; i++)
			;
		if (i < n)
			continue;
		seen[n++] = v;
		if (len < size)
			len += (size_t)snprintf(list + len, size - len, "%s%"
			    PRIu32, n > 1 ? ", " : "", v);
	}
	if (n == 64 && len < size)
		snprintf(list + len, size - len, ", ...");
}

/*
 * Each --module and --exclude-module names an image some span is in:
 * a name that matches none is an error naming the images there are.
 * Returns 0, or -1 after reporting.
 */
static int
check_modules(const struct analysis *a, const struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	uint32_t *seen = NULL, *grown;
	size_t n = 0, i, k;
	int rc = 0;

	if (!query_module_filtered(o))
		return 0;
	/* every function of the table is some span's, in the order of the
	 * first spans of each */
	for (uint64_t f = 0; f < ix->n_funcs; f++) {
		uint32_t mod;

		memcpy(&mod, spanidx_func(ix, f) + 8, sizeof(mod));

		for (i = 0; i < n && seen[i] != mod; i++)
			;
		if (i < n)
			continue;
		if ((grown = realloc(seen, (n + 1) * sizeof(*seen))) == NULL) {
			free(seen);
			report(tool.name, NULL, NULL, "out of memory");
			return -1;
		}
		seen = grown;
		seen[n++] = mod;
	}
	for (k = 0; k < o->n_modules + o->n_exclude && rc == 0; k++) {
		const char *name = k < o->n_modules ? o->modules[k] :
		    o->exclude[k - o->n_modules];
		char list[1024];
		size_t len = 0;

		for (i = 0; i < n; i++)
			if (query_module_is(spanidx_str(ix, seen[i]), name))
				break;
		if (i < n)
			continue;
		list[0] = '\0';
		for (i = 0; i < n && len < sizeof(list); i++)
			if (seen[i] != 0)
				len += (size_t)snprintf(list + len, sizeof(list) -
				    len, "%s%s", len ? ", " : "",
				    spanidx_str(ix, seen[i]));
		report(tool.name, a->dir, NULL, "%s %s: no span is in such an "
		    "image; the images with spans: %s", k < o->n_modules ?
		    "--module" : "--exclude-module", name, list[0] ? list :
		    "none");
		rc = -1;
	}
	free(seen);
	return rc;
}

/*
 * --tid and --pid name threads the analysis has: one it does not is an
 * error naming those it has (a filter that matches nothing would answer
 * "nothing ran").  Returns 0, or -1 after reporting.
 */
static int
check_threads(const struct analysis *a, const struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	char list[512];
	uint64_t r;

	/* A thread the kept aggregates have (main opened the index when
	 * they did not have it). */
	if (o->has_tid && !a->index_deferred) {
		for (r = 0; r < ix->n_threads; r++) {
			uint32_t tid, pid;
			uint64_t spans;

			spanidx_thread(ix, r, &tid, &pid, &spans);
			if (tid == o->tid)
				break;
		}
		if (r == ix->n_threads) {
			known_ids(a, 0, list, sizeof(list));
			report(tool.name, a->dir, NULL, "--tid %" PRIu64 ": no "
			    "such thread; the threads with spans: %s", o->tid,
			    list[0] ? list : "none");
			return -1;
		}
	}
	if (check_modules(a, o) < 0)
		return -1;
	if (o->has_pid && o->n_pid_tids == 0) {
		known_ids(a, 1, list, sizeof(list));
		report(tool.name, a->dir, NULL, "--pid %" PRIu64 ": no such "
		    "process; the processes with spans: %s", o->pid,
		    list[0] ? list : "none");
		return -1;
	}
	return 0;
}

/*
 * The analysis's snapshot's manifest, for the kinds that show what it
 * says (the clock, the trigger, the recorder): read once, beneath the
 * snapshot, so a manifest.json swapped for a link is refused and said,
 * not followed.  Returns 1 when *m holds it, 0 when the analysis names no
 * snapshot or its manifest could not be read.
 */
static int
read_snapshot_manifest(const struct analysis *a, struct manifest *m)
{
	char snap[PATH_MAX];
	struct error e;

	manifest_init(m);
	if (store_analysis_source(a->dir, analysis_manifest_str(a,
	    SPANDIR_M_SNAPSHOT, ""), snap, sizeof(snap), &e) < 0) {
		report_warning(tool.name, a->dir, "%s (the snapshot's trigger, "
		    "recorder and clock are not shown)", e.msg);
		return 0;
	}
	if (snap[0] == '\0')
		return 0;
	if (snapshot_read_manifest(snap, m, &e) < 0) {
		report_warning(tool.name, snap, "%s (the snapshot's trigger, "
		    "recorder and clock are not shown)", e.msg);
		return 0;
	}
	return 1;
}

/*
 * --function as a user types it: the function it stands for (a clone's
 * suffix, a mangled name), or a function only ever inlined.  Returns 0,
 * or -1 after reporting.
 */
static int
resolve_function(const struct analysis *a, struct query_options *o)
{
	struct agg_host *hosts = NULL;
	struct error e, e2;
	size_t n = 0;
	int64_t off;

	if (o->function == NULL)
		return 0;
	o->function_asked = o->function;
	if ((off = agg_resolve_function(a, o->function, &e)) >= 0) {
		o->function = spanidx_str(&a->ix, (uint32_t)off);
		return 0;
	}
	if (e.code == ERR_NOTFOUND &&
	    agg_inline_hosts(a, o->function, NULL, &hosts, &n, &e2) == 0 &&
	    n > 0) {
		free(hosts);
		o->function_inline = 1;
		return 0;
	}
	free(hosts);
	report_error(tool.name, a->dir, &e, NULL);
	return -1;
}

/*
 * Whether the query needs only the totals the analysis keeps (so that
 * the index is not opened): summary and hotpaths by function or module
 * of the whole trace or one thread, without a window, --function,
 * --pid or --module (whose checks read the spans).
 */
static int
totals_only(const struct query_options *o)
{
	return (o->kind == K_SUMMARY || (o->kind == K_HOTPATHS &&
	    o->format != F_FOLDED && o->group != AGG_INLINE &&
	    o->function == NULL)) && !o->has_pid && o->n_modules == 0 &&
	    o->n_exclude == 0 && o->from_ns == 0 && o->to_ns == INT64_MAX;
}

/* Whether the kind checks the blocks of the index it reads itself (the
 * span formats read the whole index: folded walks it, chrome and fxt
 * lay out the nesting of every span). */
static int
lazy_kind(const struct query_options *o)
{
	return (o->kind == K_AT || o->kind == K_TIMELINE) &&
	    o->format <= F_JSON;
}

static int
run_kind(const struct analysis *a, const struct query_options *o)
{
	switch (o->kind) {
	case K_SUMMARY:
		return kind_summary(a, o);
	case K_HOTPATHS:
		return kind_hotpaths(a, o);
	case K_TIMELINE:
		return kind_timeline(a, o);
	case K_CALLS:
		return kind_calls(a, o);
	case K_AT:
		return kind_at(a, o);
	case K_GAPS:
		return kind_gaps(a, o);
	case K_THREADS:
		return kind_threads(a, o);
	case K_TREE:
		return kind_tree(a, o);
	case K_SOURCE:
		return kind_source(a, o);
	case K_IMAGES:
		return kind_images(a, o);
	default:
		return kind_decoded(a, o);
	}
}

/* stdout's state until the exit's last flush (report_stdout_keep_errno) */
static struct report_kept_stdout kept_stdout;

int
main(int argc, char *argv[])
{
	struct query_options o = { .kind = -1, .to_ns = INT64_MAX,
	    .min_share = -1, .max_insns = QUERY_MAX_INSNS };
	struct analysis a;
	struct manifest snap;
	struct error e;
	enum cli_parse p;
	int rc;

	manifest_init(&snap);
	/* Started by ptmcp or ptquery: ends when it does (its cleanup
	 * removes its scratch and partial output). */
	if (spawn_die_with_parent(SIGTERM))
		return EXIT_FAIL;
	/* Writers check ferror(stdout) at the end: keep why it failed. */
	if (report_stdout_keep_errno(&kept_stdout) < 0) {
		report(tool.name, "stdout", NULL, "out of memory");
		return EXIT_FAIL;
	}
	if ((p = parse_options(argc, argv, &o)) != CLI_RUN) {
		free(o.modules);
		free(o.exclude);
		return report_close_stdout(tool.name, p == CLI_DONE ? EXIT_OK :
		    EXIT_USAGE);
	}
	/* at and a timeline read a few blocks of the index: those alone
	 * are checked (kinds.c), the rest is never read */
	if (analysis_open_for(&a, o.analysis, totals_only(&o) ?
	    ANALYSIS_TOTALS : lazy_kind(&o) ? ANALYSIS_LAZY : ANALYSIS_ALL,
	    &e) < 0 ||
	    (a.index_deferred && o.has_tid &&
	    aggkeep_pid_of(&a.kept, (uint32_t)o.tid, NULL) < 0 &&
	    analysis_open_index(&a, &e) < 0)) {
		report_error(tool.name, o.analysis, &e, NULL);
		free(o.modules);
		free(o.exclude);
		return EXIT_FAIL;
	}
	if (a.rebuilt[0] != '\0' && a.unsaved[0] != '\0')
		report_warning(tool.name, a.dir, "index.bin %s: rebuilt from "
		    "spans.jsonl in memory (not saved: %s)", a.rebuilt,
		    a.unsaved);
	else if (a.rebuilt[0] != '\0')
		report_warning(tool.name, a.dir, "index.bin %s: rebuilt from "
		    "spans.jsonl", a.rebuilt);
	/* Only the kinds that would have answered from it. */
	if (a.kept_refused[0] != '\0' && (o.kind == K_SUMMARY ||
	    o.kind == K_HOTPATHS))
		report_warning(tool.name, a.dir, "%s: totals found by walking "
		    "every span instead", a.kept_refused);
	if ((o.has_pid && pid_threads(&a, &o) < 0) ||
	    check_threads(&a, &o) < 0) {
		rc = EXIT_FAIL;
	} else {
		if (read_snapshot_manifest(&a, &snap)) {
			o.snap = &snap;
			o.clock = manifest_clock_note(&snap);
		}
		rc = resolve_function(&a, &o) < 0 ? EXIT_FAIL :
		    run_kind(&a, &o);
	}
	manifest_free(&snap);
	free(o.pid_tids);
	free(o.modules);
	free(o.exclude);
	analysis_close(&a);
	return report_close_stdout(tool.name, rc);
}

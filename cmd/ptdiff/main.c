/*
 * ptdiff: compare two analyses function by function.
 *
 * main parses the command line, runs the comparison (compare.c), prints it
 * (render.c) and turns the result into diff(1)'s exit status.
 */
#include <signal.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "base/spawn.h"
#include "tool/cli.h"
#include "compare.h"
#include "render.h"
#include "tool/report.h"

static const struct tool_info tool = {
	"ptdiff",
	"ptdiff [--format text|json|csv|markdown] [--group function|inline]\n"
	"       [--fail-on METRIC:+PCT] ... [--min-ns N] [--module MODULE] ...\n"
	"       [--exclude-module MODULE] ... [--noise-insns N|PCT%] A B",
};

enum { OPT_FORMAT = 256, OPT_GROUP, OPT_FAIL_ON, OPT_MIN_NS, OPT_HELP,
	OPT_VERSION, OPT_MODULE, OPT_EXCLUDE_MODULE, OPT_NOISE_INSNS };

#define DIFF_MAX_BOUNDS 32
#define DIFF_MAX_MODULES 64

struct diff_options {
	int format, group;
	struct bound bounds[DIFF_MAX_BOUNDS];
	size_t n_bounds;
	uint64_t min_ns;
	const char *modules[DIFF_MAX_MODULES];
	size_t n_modules;
	const char *excluded[DIFF_MAX_MODULES];
	size_t n_excluded;
	struct noise_spec noise;
	const char *a, *b;
};

static const struct option long_options[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "fail-on", required_argument, NULL, OPT_FAIL_ON },
	{ "min-ns", required_argument, NULL, OPT_MIN_NS },
	{ "module", required_argument, NULL, OPT_MODULE },
	{ "exclude-module", required_argument, NULL, OPT_EXCLUDE_MODULE },
	{ "noise-insns", required_argument, NULL, OPT_NOISE_INSNS },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static enum cli_parse
parse_options(int argc, char *argv[], struct diff_options *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if ((o->format = cli_opt_choice(&tool, "--format",
			    optarg, "text|json|csv|markdown")) < 0)
				return CLI_USAGE;
			break;
		case OPT_GROUP:
			if ((o->group = cli_opt_choice(&tool, "--group",
			    optarg, "function|inline")) < 0)
				return CLI_USAGE;
			break;
		case OPT_FAIL_ON: {
			struct error e;

			if (o->n_bounds == DIFF_MAX_BOUNDS)
				return cli_usage_error(&tool,
				    "more than %d --fail-on bounds",
				    DIFF_MAX_BOUNDS);
			if (bound_parse(optarg, &o->bounds[o->n_bounds], &e) < 0)
				return cli_usage_error(&tool,
				    "option '--fail-on': %s", e.msg);
			o->n_bounds++;
			break;
		}
		case OPT_MIN_NS:
			if (cli_opt_u64(&tool, "--min-ns", optarg, 0,
			    INT64_MAX, &o->min_ns) < 0)
				return CLI_USAGE;
			break;
		case OPT_MODULE:
		case OPT_EXCLUDE_MODULE: {
			int incl = c == OPT_MODULE;
			size_t *n = incl ? &o->n_modules : &o->n_excluded;

			if (*n == DIFF_MAX_MODULES)
				return cli_usage_error(&tool, "more than %d "
				    "--%s options", DIFF_MAX_MODULES, incl ?
				    "module" : "exclude-module");
			if (optarg[0] == '\0')
				return cli_usage_error(&tool, "option '--%s': "
				    "an empty module name", incl ? "module" :
				    "exclude-module");
			(incl ? o->modules : o->excluded)[(*n)++] = optarg;
			break;
		}
		case OPT_NOISE_INSNS: {
			struct error e;

			if (noise_parse(optarg, &o->noise, &e) < 0)
				return cli_usage_error(&tool,
				    "option '--noise-insns': %s", e.msg);
			break;
		}
		case OPT_HELP:
			return cli_help(&tool);
		case OPT_VERSION:
			return cli_version(&tool);
		default:
			return cli_bad_option(&tool, c, argv);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error(&tool, "need two analyses, A and B");
	o->a = argv[optind];
	o->b = argv[optind + 1];
	return CLI_RUN;
}

/* Names every row that crossed a bound, for the CI log. */
static void
report_crossings(const struct comparison *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct diff_row *r = &c->row[i];

		if (!r->crossed)
			continue;
		fprintf(stderr, "ptdiff: %s (%s): %s ", r->name, r->module,
		    metric_name(r->crossed_metric));
		if (r->crossed_pct > 1e300)
			fputs("+inf%", stderr);
		else
			fprintf(stderr, "%+.2f%%", r->crossed_pct);
		fprintf(stderr, " (%.0f -> %.0f) crosses the bound\n",
		    r->a[r->crossed_metric], r->b[r->crossed_metric]);
	}
}

/* diff(1)'s convention: 0 nothing to report, 1 something, 2 trouble. */
static int
exit_status(const struct comparison *c, const struct diff_options *o)
{
	if (o->n_bounds > 0)
		return c->n_crossed > 0 ? EXIT_FAIL : EXIT_OK;
	return c->n_changed > 0 ? EXIT_FAIL : EXIT_OK;
}

/* stdout's state until the exit's last flush (report_stdout_keep_errno) */
static struct report_kept_stdout kept_stdout;

int
main(int argc, char *argv[])
{
	static const enum agg_group groups[] = { AGG_FUNCTION, AGG_INLINE };
	struct diff_options o = { 0 };
	struct compare_options co;
	struct comparison c;
	struct error e;
	enum cli_parse p;
	int rc;

	/* Started by ptmcp or ptquery: ends when it does (its cleanup
	 * removes its scratch and partial output). */
	if (spawn_die_with_parent(SIGTERM))
		return EXIT_FAIL;
	/* Writers check ferror(stdout) at the end: keep why it failed. */
	if (report_stdout_keep_errno(&kept_stdout) < 0) {
		report(tool.name, "stdout", NULL, "out of memory");
		return EXIT_FAIL;
	}
	if ((p = parse_options(argc, argv, &o)) != CLI_RUN)
		return report_close_stdout(tool.name, p == CLI_DONE ? EXIT_OK :
		    EXIT_USAGE);
	co.group = groups[o.group];
	co.min_ns = o.min_ns;
	co.bounds = o.bounds;
	co.n_bounds = o.n_bounds;
	co.modules = o.modules;
	co.n_modules = o.n_modules;
	co.excluded = o.excluded;
	co.n_excluded = o.n_excluded;
	co.noise = o.noise;
	if (comparison_run(&c, o.a, o.b, &co, &e) < 0) {
		report_error(tool.name, NULL, &e, NULL);
		comparison_free(&c);
		return EXIT_USAGE;
	}
	if (render_comparison(stdout, &c, (enum diff_format)o.format) < 0)
		rc = EXIT_USAGE;
	else
		rc = exit_status(&c, &o);
	report_crossings(&c);
	comparison_free(&c);
	/* A failed write is trouble (2), never a clean 0 or 1. */
	return report_close_stdout(tool.name, rc) != rc ? EXIT_USAGE : rc;
}

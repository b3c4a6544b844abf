/*
 * ptdiff: compare two analyses function by function.
 *
 * This file parses the command line; the comparison arrives with issue #8.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "report.h"

static const struct tool_info tool = {
	"ptdiff",
	"ptdiff [--format text|json|csv|markdown] [--group function|inline]\n"
	"       [--fail-on METRIC:+PCT] ... [--min-ns N] A B",
};

enum { OPT_FORMAT = 256, OPT_GROUP, OPT_FAIL_ON, OPT_MIN_NS, OPT_HELP,
	OPT_VERSION };

#define DIFF_MAX_BOUNDS 32

struct diff_options {
	int format, group;
	const char *fail_on[DIFF_MAX_BOUNDS];
	int n_fail_on;
	uint64_t min_ns;
	const char *a, *b;
};

static const struct option long_options[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "fail-on", required_argument, NULL, OPT_FAIL_ON },
	{ "min-ns", required_argument, NULL, OPT_MIN_NS },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int
parse_options(int argc, char *argv[], struct diff_options *o)
{
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if ((o->format = cli_opt_choice(&tool, "--format",
			    optarg, "text|json|csv|markdown")) < 0)
				return -o->format;
			break;
		case OPT_GROUP:
			if ((o->group = cli_opt_choice(&tool, "--group",
			    optarg, "function|inline")) < 0)
				return -o->group;
			break;
		case OPT_FAIL_ON:
			if (o->n_fail_on == DIFF_MAX_BOUNDS)
				return cli_usage_error(&tool,
				    "more than %d --fail-on bounds",
				    DIFF_MAX_BOUNDS);
			o->fail_on[o->n_fail_on++] = optarg;
			break;
		case OPT_MIN_NS:
			if ((rc = cli_opt_u64(&tool, "--min-ns", optarg, 0,
			    INT64_MAX, &o->min_ns)) != 0)
				return rc;
			break;
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
	return -1;
}

int
main(int argc, char *argv[])
{
	struct diff_options o = { 0 };
	int rc;

	if ((rc = parse_options(argc, argv, &o)) >= 0)
		return report_close_stdout(tool.name, rc);
	return cli_not_built(&tool, "comparison", 8);
}

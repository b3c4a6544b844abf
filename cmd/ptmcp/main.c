/*
 * ptmcp: the MCP server for agents, and the store driver.
 *
 * This file parses the command line and hands the verb to its module:
 * serve.c for the MCP server, verbs.c for the store verbs, drive.c for
 * the verbs that run the other tools.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tool/cli.h"
#include "tool/report.h"
#include "serve.h"
#include "server.h"
#include "verbs.h"

static const struct tool_info tool = {
	"ptmcp",
	"ptmcp [--store STORE] serve [--max-jobs N]\n"
	"ptmcp [--store STORE] run [ptrec options] -- PROGRAM [ARG ...]\n"
	"ptmcp [--store STORE] attach --pid PID [ptrec options]\n"
	"ptmcp [--store STORE] decode SNAPSHOT_ID\n"
	"ptmcp [--store STORE] query SNAPSHOT_ID [ptquery options]\n"
	"ptmcp [--store STORE] compare ID_A ID_B [ptdiff options]\n"
	"ptmcp [--store STORE] list\n"
	"ptmcp [--store STORE] show ID\n"
	"ptmcp [--store STORE] import [--new-id] DIR\n"
	"ptmcp [--store STORE] export ID DIR\n"
	"ptmcp [--store STORE] prune [prune options] [ID ...]\n"
	"ptmcp [--store STORE] doctor",
};

enum { OPT_STORE = 256, OPT_HELP, OPT_VERSION };

static const char *const verbs[] = {
	"serve", "run", "attach", "decode", "query", "compare", "list",
	"show", "import", "export", "prune", "doctor",
};

static const struct option long_options[] = {
	{ "store", required_argument, NULL, OPT_STORE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int
is_verb(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(s, verbs[i]) == 0)
			return 1;
	return 0;
}

static int
run_verb(const char *store, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(const struct tool_info *, const char *, int,
		    char **);
	} table[] = {
		{ "list", verb_list }, { "show", verb_show },
		{ "import", verb_import }, { "export", verb_export },
		{ "prune", verb_prune },
		{ "doctor", verb_doctor }, { "run", verb_run },
		{ "attach", verb_attach }, { "decode", verb_decode },
		{ "query", verb_query }, { "compare", verb_compare },
	};
	size_t i;

	if (strcmp(argv[0], "serve") == 0) {
		uint64_t max_jobs = MAX_JOBS_DEFAULT;

		if (argc == 3 && strcmp(argv[1], "--max-jobs") == 0) {
			if (cli_opt_u64(&tool, "--max-jobs", argv[2], 1, 1024,
			    &max_jobs) < 0)
				return EXIT_USAGE;
		} else if (argc > 1) {
			cli_usage_error(&tool, "serve takes only --max-jobs N");
			return EXIT_USAGE;
		}
		return serve_main(store, (unsigned)max_jobs);
	}
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(argv[0], table[i].name) == 0)
			return table[i].fn(&tool, store, argc, argv);
	cli_usage_error(&tool, "unknown verb '%s'", argv[0]);
	return EXIT_USAGE;
}

/* The options before the verb; *verb is the index of the verb in argv. */
static enum cli_parse
parse_options(int argc, char *argv[], const char **store, int *verb)
{
	int c;

	opterr = 0;
	/* '+': stop at the verb; its own options follow it. */
	while ((c = getopt_long(argc, argv, "+:", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_STORE:
			*store = optarg;
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
		return cli_usage_error(&tool, "no verb given");
	if (!is_verb(argv[optind]))
		return cli_usage_error(&tool, "unknown verb '%s'",
		    argv[optind]);
	*verb = optind;
	return CLI_RUN;
}

/* Where stdout's failed write keeps its errno (report.h). */
static struct report_kept_stdout kept_stdout;

int
main(int argc, char *argv[])
{
	const char *store = NULL;
	enum cli_parse p;
	int verb = 0;

	/* The verbs' output is checked at the end: keep why a write failed. */
	if (report_stdout_keep_errno(&kept_stdout) < 0) {
		report(tool.name, "stdout", NULL, "out of memory");
		return EXIT_FAIL;
	}

	p = parse_options(argc, argv, &store, &verb);
	if (p == CLI_DONE)
		return report_close_stdout(tool.name, EXIT_OK);
	if (p == CLI_USAGE)
		return EXIT_USAGE;
	return run_verb(store, argc - verb, argv + verb);
}

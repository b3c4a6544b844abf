/*
 * ptspans: block stream to function calls (an analysis directory).
 *
 * This file parses the command line; run.c does the work.
 */
#include <getopt.h>
#include <stdio.h>

#include "tool/cli.h"
#include "tool/report.h"
#include "spans.h"

static const struct tool_info tool = {
	"ptspans",
	"ptspans [-o DIR] [--no-inline] [--no-compress] "
	    "[--format jsonl|summary] [--debug-dir DIR...]",
};

enum { OPT_NO_INLINE = 256, OPT_NO_COMPRESS, OPT_FORMAT, OPT_DEBUG_DIR, OPT_HELP,
	OPT_VERSION };

static const struct option long_options[] = {
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "no-compress", no_argument, NULL, OPT_NO_COMPRESS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static enum cli_parse
parse_options(int argc, char *argv[], struct spans_options *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:", long_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out_dir = optarg;
			break;
		case OPT_NO_INLINE:
			o->no_inline = 1;
			break;
		case OPT_NO_COMPRESS:
			o->no_compress = 1;
			break;
		case OPT_FORMAT:
			if ((o->format = cli_opt_choice(&tool, "--format",
			    optarg, "jsonl|summary")) < 0)
				return CLI_USAGE;
			break;
		case OPT_DEBUG_DIR:
			if (o->n_debug_dirs == SPANS_DEBUG_DIRS_MAX)
				return cli_usage_error(&tool, "at most %d "
				    "--debug-dir options", SPANS_DEBUG_DIRS_MAX);
			o->debug_dirs[o->n_debug_dirs++] = optarg;
			break;
		case OPT_HELP:
			return cli_help(&tool);
		case OPT_VERSION:
			return cli_version(&tool);
		default:
			return cli_bad_option(&tool, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&tool, "unexpected argument '%s'",
		    argv[optind]);
	return CLI_RUN;
}

int
main(int argc, char *argv[])
{
	struct spans_options o = { 0 };
	enum cli_parse p;

	if ((p = parse_options(argc, argv, &o)) != CLI_RUN)
		return report_close_stdout(tool.name, p == CLI_DONE ? EXIT_OK :
		    EXIT_USAGE);
	if (cli_finish_pipe_on_sigint(&tool, "ptspans: interrupt: reading "
	    "the block stream to its end; interrupt again to stop now\n") < 0)
		return EXIT_FAIL;
	/* Nothing reads stdin through the FILE: the block stream reader
	 * reads its fd (run.c). */
	return report_close_stdout(tool.name, spans_run(&o, stdin));
}

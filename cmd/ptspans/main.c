/*
 * ptspans: block stream to function calls (an analysis directory).
 *
 * This file parses the command line; run.c does the work.
 */
#include <signal.h>
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "base/spawn.h"
#include "tool/cli.h"
#include "tool/report.h"
#include "spans.h"

static const struct tool_info tool = {
	"ptspans",
	"ptspans [-j JOBS] [-o DIR] [--no-inline] [--no-compress] "
	    "[--format jsonl|summary] [--debug-dir DIR...]",
};

enum { OPT_NO_INLINE = 256, OPT_NO_COMPRESS, OPT_FORMAT, OPT_DEBUG_DIR,
	OPT_CHUNK, OPT_HELP, OPT_VERSION };

static const struct option long_options[] = {
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "no-compress", no_argument, NULL, OPT_NO_COMPRESS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
	{ "chunk-blocks", required_argument, NULL, OPT_CHUNK },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static enum cli_parse
parse_options(int argc, char *argv[], struct spans_options *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":j:o:", long_options, NULL)) !=
	    -1) {
		switch (c) {
		case 'j':
			if (cli_opt_u64(&tool, "-j", optarg, 1, 1024,
			    &o->jobs) < 0)
				return CLI_USAGE;
			break;
		case OPT_CHUNK:
			if (cli_opt_u64(&tool, "--chunk-blocks", optarg, 1,
			    UINT32_MAX, &o->chunk_blocks) < 0)
				return CLI_USAGE;
			break;
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

	/* Started by ptmcp or ptquery: ends when it does (its cleanup
	 * removes its scratch and partial output). */
	if (spawn_die_with_parent(SIGTERM))
		return EXIT_FAIL;
	if ((p = parse_options(argc, argv, &o)) != CLI_RUN)
		return report_close_stdout(tool.name, p == CLI_DONE ? EXIT_OK :
		    EXIT_USAGE);
	if (o.jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		/* The parallel engine spends about 1.5 times the serial one's
		 * CPU (cutting, passing and applying chunks): with fewer than
		 * 4 cores, which ptdecode shares in a pipeline, it finished
		 * later (ptspans(1), PARALLEL ENGINE). */
		o.jobs = n >= 4 ? (uint64_t)n : 1;
	}
	if (cli_finish_pipe_on_sigint(&tool, "ptspans: interrupt: reading "
	    "the block stream to its end; interrupt again to stop now\n") < 0)
		return EXIT_FAIL;
	/* Nothing reads stdin through the FILE: the block stream reader
	 * reads its fd (run.c). */
	return report_close_stdout(tool.name, spans_run(&o, stdin));
}

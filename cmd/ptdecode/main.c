/*
 * ptdecode: snapshot directory to block stream.
 *
 * This file parses the command line; the decoder arrives with issue #5.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

static const struct tool_info tool = {
	"ptdecode",
	"ptdecode [-j JOBS] [--format blocks|jsonl] [--decoder native|fast|perf]\n"
	"         [--tid TID] [--from NS] [--to NS] [SNAPSHOT]",
};

enum { OPT_FORMAT = 256, OPT_DECODER, OPT_TID, OPT_FROM, OPT_TO, OPT_HELP,
	OPT_VERSION };

struct decode_options {
	uint64_t jobs;
	int format;		/* 0 blocks, 1 jsonl */
	int decoder;		/* 0 native, 1 fast, 2 perf */
	uint64_t tid, from_ns, to_ns;
	int has_tid;
	const char *snapshot;
};

static const struct option long_options[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "decoder", required_argument, NULL, OPT_DECODER },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Returns -1 to go on, or the exit status main should return. */
static int
parse_options(int argc, char *argv[], struct decode_options *o)
{
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":j:", long_options, NULL)) != -1) {
		switch (c) {
		case 'j':
			if ((rc = cli_opt_u64(&tool, "-j", optarg, 1, 1024,
			    &o->jobs)) != 0)
				return rc;
			break;
		case OPT_FORMAT:
			if ((o->format = cli_opt_choice(&tool, "--format",
			    optarg, "blocks|jsonl")) < 0)
				return -o->format;
			break;
		case OPT_DECODER:
			if ((o->decoder = cli_opt_choice(&tool, "--decoder",
			    optarg, "native|fast|perf")) < 0)
				return -o->decoder;
			break;
		case OPT_TID:
			o->has_tid = 1;
			if ((rc = cli_opt_u64(&tool, "--tid", optarg, 0,
			    INT32_MAX, &o->tid)) != 0)
				return rc;
			break;
		case OPT_FROM:
			if ((rc = cli_opt_u64(&tool, "--from", optarg, 0,
			    INT64_MAX, &o->from_ns)) != 0)
				return rc;
			break;
		case OPT_TO:
			if ((rc = cli_opt_u64(&tool, "--to", optarg, 0,
			    INT64_MAX, &o->to_ns)) != 0)
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
	if (argc - optind > 1)
		return cli_usage_error(&tool, "too many arguments");
	o->snapshot = optind < argc ? argv[optind] : NULL;
	return -1;
}

int
main(int argc, char *argv[])
{
	struct decode_options o = { .jobs = 0, .to_ns = INT64_MAX };
	int rc;

	if ((rc = parse_options(argc, argv, &o)) >= 0)
		return report_close_stdout(tool.name, rc);
	return cli_not_built(&tool, "decoding", 5);
}

/*
 * ptquery: questions over an analysis directory.  This file parses the
 * command line, opens the analysis (lib/analysis) and hands it to the
 * kind asked for (kinds.c, summary.c, decoded.c).
 */
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "span/analysis.h"
#include "tool/cli.h"
#include "query.h"
#include "tool/report.h"

const char *const query_tool = "ptquery";

static const struct tool_info tool = {
	"ptquery",
	"ptquery ANALYSIS --kind KIND [--group function|inline|module]\n"
	"        [--sort COLUMN] [--function NAME] [--pid PID] [--tid TID]\n"
	"        [--from NS] [--to NS] [--at NS] [--span ID]\n"
	"        [--format text|table|csv|json|folded|chrome|fxt] [--limit N]\n"
	"        [--cursor C] [--max-bytes N] [--incomplete]",
};

enum { OPT_KIND = 256, OPT_GROUP, OPT_SORT, OPT_FUNCTION, OPT_TID, OPT_FROM,
	OPT_TO, OPT_AT, OPT_SPAN, OPT_FORMAT, OPT_LIMIT, OPT_CURSOR,
	OPT_MAX_BYTES, OPT_HELP, OPT_VERSION, OPT_PID, OPT_INCOMPLETE };

#define QUERY_KINDS "summary|hotpaths|timeline|calls|at|branches|insns|gaps|threads"

static const struct option long_options[] = {
	{ "kind", required_argument, NULL, OPT_KIND },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "function", required_argument, NULL, OPT_FUNCTION },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "at", required_argument, NULL, OPT_AT },
	{ "span", required_argument, NULL, OPT_SPAN },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "cursor", required_argument, NULL, OPT_CURSOR },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "incomplete", no_argument, NULL, OPT_INCOMPLETE },
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
	};
	size_t i;

	for (i = 0; numbers[i].code != c; i++)
		;	/* parse_options calls this only for the codes above */
	o->has_tid |= c == OPT_TID;
	o->has_pid |= c == OPT_PID;
	o->has_at |= c == OPT_AT;
	o->has_span |= c == OPT_SPAN;
	o->has_limit |= c == OPT_LIMIT;
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
	default:
		o->format = cli_opt_choice(&tool, "--format", arg,
		    "text|table|csv|json|folded|chrome|fxt");
		return o->format < 0 ? -1 : 0;
	}
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
		case OPT_SPAN: case OPT_LIMIT: case OPT_MAX_BYTES:
			if (parse_number_option(c, optarg, o) < 0)
				return CLI_USAGE;
			break;
		case OPT_KIND: case OPT_GROUP: case OPT_FORMAT:
			if (parse_choice_option(c, optarg, o) < 0)
				return CLI_USAGE;
			break;
		case OPT_SORT:
			o->sort = optarg;
			break;
		case OPT_FUNCTION:
			o->function = optarg;
			break;
		case OPT_CURSOR:
			o->cursor = optarg;
			break;
		case OPT_INCOMPLETE:
			o->incomplete = 1;
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
	if (o->from_ns >= o->to_ns)
		return cli_usage_error(&tool, "--from must be below --to");
	o->analysis = argv[optind];
	return CLI_RUN;
}

/* --pid: the threads of that process, from the spans' index. */
static int
pid_threads(const struct analysis *a, struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	uint32_t tid, *grown;
	size_t i;

	for (uint64_t r = 0; r < ix->rows; r++) {
		if (spanidx_u32(ix, SPANIDX_PID, r) != o->pid)
			continue;
		tid = spanidx_u32(ix, SPANIDX_TID, r);
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
	default:
		return kind_decoded(a, o);
	}
}

int
main(int argc, char *argv[])
{
	struct query_options o = { .kind = -1, .to_ns = INT64_MAX };
	struct analysis a;
	struct error e;
	enum cli_parse p;
	int rc;

	if ((p = parse_options(argc, argv, &o)) != CLI_RUN)
		return report_close_stdout(tool.name, p == CLI_DONE ? EXIT_OK :
		    EXIT_USAGE);
	if (analysis_open(&a, o.analysis, &e) < 0) {
		report_error(tool.name, o.analysis, &e, NULL);
		return EXIT_FAIL;
	}
	if (a.rebuilt[0] != '\0')
		report_warning(tool.name, a.dir, "index.bin %s: rebuilt from "
		    "spans.jsonl", a.rebuilt);
	if (o.has_pid && pid_threads(&a, &o) < 0) {
		analysis_close(&a);
		return EXIT_FAIL;
	}
	rc = run_kind(&a, &o);
	free(o.pid_tids);
	analysis_close(&a);
	return report_close_stdout(tool.name, rc);
}

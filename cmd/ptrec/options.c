/* options: see options.h. */
#include "options.h"

#include <getopt.h>
#include <regex.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/numparse.h"
#include "rec/pttrace.h"
#include "tool/report.h"

const struct tool_info ptrec_tool = {
	"ptrec",
	"ptrec [-o DIR | --store STORE] [--recorder auto|pt|perf|emu]\n"
	"      [--aux-bytes N] [--budget-bytes N] [--timing low|normal|high|CONFIG]\n"
	"      [--cpus LIST] [--filter SYMBOL | --filter ADDR/SIZE@FILE] ...\n"
	"      [--after-ms N] [--max-capture-ms N] [--min-capture-ms N]\n"
	"      [--tail-ms N] [--trigger-symbol SYM [--trigger-hits N]]\n"
	"      [--trigger-line REGEX] [--repeat N] [--control FIFO]\n"
	"      [--emu-truth FILE] [--no-follow] [--] PROGRAM [ARG ...]\n"
	"ptrec --pid PID [capture options]\n"
	"ptrec --doctor [--format text|json] [--sysroot DIR]",
};

#define T (&ptrec_tool)

enum {
	OPT_STORE = 256, OPT_RECORDER, OPT_AUX_BYTES, OPT_BUDGET_BYTES,
	OPT_TIMING, OPT_CPUS, OPT_FILTER, OPT_AFTER_MS, OPT_MAX_CAPTURE_MS,
	OPT_MIN_CAPTURE_MS, OPT_TAIL_MS, OPT_TRIGGER_SYMBOL, OPT_TRIGGER_HITS,
	OPT_TRIGGER_LINE, OPT_REPEAT, OPT_CONTROL, OPT_EMU_TRUTH, OPT_PID,
	OPT_DOCTOR, OPT_FORMAT, OPT_HELP, OPT_VERSION, OPT_SYSROOT,
	OPT_NO_FOLLOW,
};

static const struct option long_options[] = {
	{ "store", required_argument, NULL, OPT_STORE },
	{ "recorder", required_argument, NULL, OPT_RECORDER },
	{ "aux-bytes", required_argument, NULL, OPT_AUX_BYTES },
	{ "budget-bytes", required_argument, NULL, OPT_BUDGET_BYTES },
	{ "timing", required_argument, NULL, OPT_TIMING },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "after-ms", required_argument, NULL, OPT_AFTER_MS },
	{ "max-capture-ms", required_argument, NULL, OPT_MAX_CAPTURE_MS },
	{ "min-capture-ms", required_argument, NULL, OPT_MIN_CAPTURE_MS },
	{ "tail-ms", required_argument, NULL, OPT_TAIL_MS },
	{ "trigger-symbol", required_argument, NULL, OPT_TRIGGER_SYMBOL },
	{ "trigger-hits", required_argument, NULL, OPT_TRIGGER_HITS },
	{ "trigger-line", required_argument, NULL, OPT_TRIGGER_LINE },
	{ "repeat", required_argument, NULL, OPT_REPEAT },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "emu-truth", required_argument, NULL, OPT_EMU_TRUTH },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "doctor", no_argument, NULL, OPT_DOCTOR },
	{ "no-follow", no_argument, NULL, OPT_NO_FOLLOW },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "sysroot", required_argument, NULL, OPT_SYSROOT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Ring sizes: at least a page, at most 4 GiB per ring, 64 GiB in all. */
#define AUX_MIN 4096ULL
#define AUX_MAX (4ULL << 30)
#define BUDGET_MAX (64ULL << 30)
#define MS_MAX (1000ULL * 86400 * 365)

/* The value parsers return 0, or -1 after reporting a usage error. */
static int
parse_ms(const char *opt, const char *arg, uint64_t min, uint64_t *out,
    int *has)
{
	if (has != NULL)
		*has = 1;
	return cli_opt_u64(T, opt, arg, min, MS_MAX, out);
}

static int
parse_timing(const char *arg, struct rec_options *o)
{
	static const char *const names[] = { "low", "normal", "high" };
	struct error e;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(arg, names[i]) == 0) {
			o->timing = (enum rec_timing)i;
			return 0;
		}
	}
	if (parse_u64(arg, 0, UINT64_MAX, &o->timing_config, &e) < 0) {
		cli_usage_error(T, "option '--timing': '%s' is not low, "
		    "normal, high or a config number", arg);
		return -1;
	}
	o->timing = TIMING_CONFIG;
	return 0;
}

static int
parse_recorder(const char *arg, struct rec_options *o)
{
	int v = cli_opt_choice(T, "--recorder", arg, "auto|pt|perf|emu");

	if (v < 0)
		return -1;
	o->recorder = (enum rec_recorder)v;
	o->has_recorder = 1;
	return 0;
}

/* PTKIT_RECORDER stands in for --recorder; unset or empty: auto. */
static enum cli_parse
recorder_from_env(struct rec_options *o)
{
	static const char *const names[] = { "auto", "pt", "perf", "emu" };
	const char *env = getenv("PTKIT_RECORDER");
	size_t i;

	if (o->has_recorder || env == NULL || env[0] == '\0')
		return CLI_RUN;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(env, names[i]) == 0) {
			o->recorder = (enum rec_recorder)i;
			return CLI_RUN;
		}
	return cli_usage_error(T, "PTKIT_RECORDER: '%s' is not one of "
	    "auto|pt|perf|emu", env);
}

/* A regex qemu's plugin would only reject after the program started. */
static enum cli_parse
check_trigger_line(const char *regex)
{
	char why[256];
	regex_t re;
	int rc;

	if (regex == NULL)
		return CLI_RUN;
	if ((rc = regcomp(&re, regex, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, &re, why, sizeof(why));
		return cli_usage_error(T, "option '--trigger-line': '%s': %s",
		    regex, why);
	}
	regfree(&re);
	if (strchr(regex, '\n') != NULL)
		return cli_usage_error(T, "option '--trigger-line': a line "
		    "holds no newline");
	return CLI_RUN;
}

/* --cpus: a list of CPUs of which at least one is ours to run on. */
static enum cli_parse
check_cpus(const char *list)
{
	cpu_set_t want, ours, both;
	struct error e;

	if (list == NULL)
		return CLI_RUN;
	if (pttrace_parse_cpus(list, &want, &e) < 0)
		return cli_usage_error(T, "%s", e.msg);	/* names --cpus */
	if (sched_getaffinity(0, sizeof(ours), &ours) == 0) {
		CPU_AND(&both, &want, &ours);
		if (CPU_COUNT(&both) == 0)
			return cli_usage_error(T, "option '--cpus': none of "
			    "'%s' is a CPU this process may run on", list);
	}
	return CLI_RUN;
}

/* Options with a value that is a plain string. */
static int
parse_string_option(int c, const char *arg, char *const argv[],
    struct rec_options *o)
{
	switch (c) {
	case 'o': o->out_dir = arg; break;
	case OPT_STORE: o->store = arg; break;
	case OPT_CPUS: o->cpus = arg; break;
	case OPT_TRIGGER_SYMBOL: o->trigger_symbol = arg; break;
	case OPT_TRIGGER_LINE: o->trigger_line = arg; break;
	case OPT_CONTROL: o->control_fifo = arg; break;
	case OPT_EMU_TRUTH: o->emu_truth = arg; break;
	case OPT_SYSROOT: o->sysroot = arg; break;
	case OPT_FILTER:
		if (o->n_filters == REC_MAX_FILTERS) {
			cli_usage_error(T, "more than %d --filter options",
			    REC_MAX_FILTERS);
			return -1;
		}
		o->filters[o->n_filters++] = arg;
		break;
	default:
		cli_bad_option(T, '?', argv);
		return -1;
	}
	return 0;
}

static int
parse_value_option(int c, const char *arg, char *const argv[],
    struct rec_options *o)
{
	switch (c) {
	case OPT_RECORDER: return parse_recorder(arg, o);
	case OPT_TIMING: return parse_timing(arg, o);
	case OPT_AUX_BYTES:
		return cli_opt_size(T, "--aux-bytes", arg, AUX_MIN, AUX_MAX,
		    &o->aux_bytes);
	case OPT_BUDGET_BYTES:
		return cli_opt_size(T, "--budget-bytes", arg, AUX_MIN,
		    BUDGET_MAX, &o->budget_bytes);
	/* 0 would be a snapshot before the program's first instruction */
	case OPT_AFTER_MS:
		return parse_ms("--after-ms", arg, 1, &o->after_ms,
		    &o->has_after_ms);
	case OPT_MAX_CAPTURE_MS:
		return parse_ms("--max-capture-ms", arg, 1, &o->max_capture_ms,
		    &o->has_max_capture_ms);
	case OPT_MIN_CAPTURE_MS:
		return parse_ms("--min-capture-ms", arg, 0, &o->min_capture_ms,
		    NULL);
	case OPT_TAIL_MS:
		return parse_ms("--tail-ms", arg, 0, &o->tail_ms,
		    &o->has_tail_ms);
	case OPT_TRIGGER_HITS:
		return cli_opt_u64(T, "--trigger-hits", arg, 1, UINT32_MAX,
		    &o->trigger_hits);
	case OPT_REPEAT:
		return cli_opt_u64(T, "--repeat", arg, 1, 1000000, &o->repeat);
	case OPT_PID:
		return cli_opt_u64(T, "--pid", arg, 1, INT32_MAX, &o->pid);
	case OPT_FORMAT: {
		int v = cli_opt_choice(T, "--format", arg, "text|json");

		if (v < 0)
			return -1;
		o->doctor_json = v == 1;
		return 0;
	}
	default:
		return parse_string_option(c, arg, argv, o);
	}
}

/* Rules between options, checked once all are read. */
static enum cli_parse
check_combinations(struct rec_options *o, int has_program)
{
	if (o->doctor)
		return has_program || o->pid != 0 ? cli_usage_error(T,
		    "--doctor takes no program and no --pid") : CLI_RUN;
	if (o->pid != 0 && has_program)
		return cli_usage_error(T, "give a PROGRAM or --pid, not both");
	if (o->pid == 0 && !has_program)
		return cli_usage_error(T, "no program to record");
	if (o->out_dir != NULL && o->store != NULL)
		return cli_usage_error(T, "give -o or --store, not both");
	if (o->trigger_hits != 0 && o->trigger_symbol == NULL)
		return cli_usage_error(T,
		    "--trigger-hits needs --trigger-symbol");
	if (o->has_tail_ms && o->trigger_symbol == NULL &&
	    o->trigger_line == NULL)
		return cli_usage_error(T,
		    "--tail-ms needs --trigger-symbol or --trigger-line");
	if (o->budget_bytes != 0 && o->aux_bytes > o->budget_bytes)
		return cli_usage_error(T,
		    "--aux-bytes is larger than --budget-bytes");
	if (o->cpus != NULL && o->pid != 0)
		return cli_usage_error(T, "--cpus pins a program ptrec starts, "
		    "not a running --pid");
	if (check_trigger_line(o->trigger_line) != CLI_RUN ||
	    check_cpus(o->cpus) != CLI_RUN)
		return CLI_USAGE;
	return recorder_from_env(o);
}

static void
rec_options_defaults(struct rec_options *o)
{
	memset(o, 0, sizeof(*o));
	o->recorder = REC_AUTO;
	o->aux_bytes = 32ULL << 20;
	o->budget_bytes = 128ULL << 20;
	o->timing = TIMING_NORMAL;
	o->repeat = 1;
}

enum cli_parse
rec_options_parse(int argc, char *argv[], struct rec_options *o)
{
	int c;

	rec_options_defaults(o);
	opterr = 0;
	/* '+': the first operand starts the program's own argv. */
	while ((c = getopt_long(argc, argv, "+:o:", long_options, NULL)) != -1) {
		if (c == OPT_HELP)
			return cli_help(T);
		if (c == OPT_VERSION)
			return cli_version(T);
		if (c == OPT_DOCTOR) {
			o->doctor = 1;
			continue;
		}
		if (c == OPT_NO_FOLLOW) {
			o->no_follow = 1;
			continue;
		}
		if (c == '?' || c == ':')
			return cli_bad_option(T, c, argv);
		if (parse_value_option(c, optarg, argv, o) < 0)
			return CLI_USAGE;
	}
	if (optind < argc)
		o->program = argv + optind;
	return check_combinations(o, optind < argc);
}

/*
 * ptdecode: snapshot directory to block stream (man ptdecode.1, man
 * ptkit-blocks.5).
 *
 * main parses the command line, finds the snapshot (argument or first
 * line of stdin), loads it (snapload.c), decodes thread after thread with
 * lib/ptdec and writes the records as the binary stream or JSON Lines
 * (output.c); --decoder perf converts perf script's output instead
 * (perfconv.c).
 */
#include <limits.h>
#include <signal.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/spawn.h"
#include "tool/cli.h"
#include "output.h"
#include "perfconv.h"
#include "dec/ptdec.h"
#include "tool/report.h"
#include "snapload.h"

static const struct tool_info tool = {
	"ptdecode",
	"ptdecode [-j JOBS] [--format blocks|jsonl] [--decoder native|fast|perf]\n"
	"         [--pid PID] [--tid TID] [--from NS] [--to NS] [--chunk-size N]\n"
	"         [SNAPSHOT]",
};

enum { OPT_FORMAT = 256, OPT_DECODER, OPT_TID, OPT_FROM, OPT_TO, OPT_HELP,
	OPT_VERSION, OPT_CHUNK, OPT_PID };

struct decode_options {
	uint64_t jobs;
	int format;		/* 0 blocks, 1 jsonl */
	int decoder;		/* 0 native, 1 fast, 2 perf; -1 not given */
	uint64_t tid, pid, from_ns, to_ns;
	uint64_t chunk_bytes;	/* 0: the library's default */
	int has_tid, has_pid;
	const char *snapshot;
};

static const struct option long_options[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "decoder", required_argument, NULL, OPT_DECODER },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "chunk-size", required_argument, NULL, OPT_CHUNK },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static enum cli_parse
parse_options(int argc, char *argv[], struct decode_options *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":j:", long_options, NULL)) != -1) {
		switch (c) {
		case 'j':
			if (cli_opt_u64(&tool, "-j", optarg, 1, 1024,
			    &o->jobs) < 0)
				return CLI_USAGE;
			break;
		case OPT_FORMAT:
			if ((o->format = cli_opt_choice(&tool, "--format",
			    optarg, "blocks|jsonl")) < 0)
				return CLI_USAGE;
			break;
		case OPT_DECODER:
			if ((o->decoder = cli_opt_choice(&tool, "--decoder",
			    optarg, "native|fast|perf")) < 0)
				return CLI_USAGE;
			break;
		case OPT_TID:
			o->has_tid = 1;
			if (cli_opt_u64(&tool, "--tid", optarg, 0, INT32_MAX,
			    &o->tid) < 0)
				return CLI_USAGE;
			break;
		case OPT_PID:
			o->has_pid = 1;
			if (cli_opt_u64(&tool, "--pid", optarg, 0, INT32_MAX,
			    &o->pid) < 0)
				return CLI_USAGE;
			break;
		case OPT_FROM:
			if (cli_opt_u64(&tool, "--from", optarg, 0, INT64_MAX,
			    &o->from_ns) < 0)
				return CLI_USAGE;
			break;
		case OPT_TO:
			if (cli_opt_u64(&tool, "--to", optarg, 0, INT64_MAX,
			    &o->to_ns) < 0)
				return CLI_USAGE;
			break;
		case OPT_CHUNK:
			if (cli_opt_size(&tool, "--chunk-size", optarg, 1,
			    UINT32_MAX, &o->chunk_bytes) < 0)
				return CLI_USAGE;
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
	return CLI_RUN;
}

enum { DECODER_NATIVE, DECODER_FAST, DECODER_PERF };

/* PTKIT_DECODER when --decoder was not given. */
static enum cli_parse
decoder_from_env(struct decode_options *o)
{
	const char *env = getenv("PTKIT_DECODER");

	if (o->decoder >= 0)
		return CLI_RUN;
	/* the fast decoder's records are libipt's (t5001, the fuzzer) */
	o->decoder = DECODER_FAST;
	if (env == NULL || *env == '\0')
		return CLI_RUN;
	if ((o->decoder = cli_opt_choice(&tool, "PTKIT_DECODER", env,
	    "native|fast|perf")) < 0)
		return CLI_USAGE;
	return CLI_RUN;
}

/*
 * The snapshot named on the first line of stdin.  Says how many further
 * lines it ignores.  Returns a malloc'd path, or NULL after a message
 * with *status the exit status.
 */
static char *
snapshot_from_stdin(int *status)
{
	char *line = NULL, *first = NULL;
	size_t cap = 0;
	unsigned more = 0, lineno = 0, bad = 0;
	ssize_t n;

	if (isatty(STDIN_FILENO)) {
		cli_usage_error(&tool, "no SNAPSHOT given (argument or stdin)");
		return NULL;
	}
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		if (first != NULL || bad) {
			more++;
			continue;
		}
		/* Never cut a path at a NUL, never quote a huge line. */
		if (strlen(line) != (size_t)n) {
			report(tool.name, "stdin", NULL, "line %u holds a NUL "
			    "byte: not a snapshot path", lineno);
			bad = 1;
		} else if (n >= PATH_MAX) {
			report(tool.name, "stdin", NULL, "line %u is %zd bytes "
			    "long: not a snapshot path (at most %d)", lineno, n,
			    PATH_MAX - 1);
			bad = 1;
		} else if ((first = strdup(line)) == NULL) {
			report(tool.name, "stdin", NULL, "out of memory");
			bad = 1;
		}
	}
	free(line);
	*status = EXIT_USAGE;
	if (bad) {
		*status = EXIT_FAIL;	/* input, not the command line */
		free(first);
		return NULL;
	}
	if (first == NULL)
		cli_usage_error(&tool, "no SNAPSHOT on standard input");
	else if (more > 0)
		report(tool.name, NULL, "decode each with: xargs -n1 ptdecode",
		    "decoding %s; ignored %u more snapshot%s on stdin", first,
		    more, more == 1 ? "" : "s");
	return first;
}

static void
report_images(const struct snap *s)
{
	if (s->nr_live > 0)
		report_warning(tool.name, s->first_live,
		    "%u image%s read from the live filesystem, not from the "
		    "snapshot's archive", s->nr_live, s->nr_live == 1 ? "" : "s");
	if (s->nr_missing > 0)
		report_warning(tool.name, s->first_missing,
		    "%u image%s missing: their code shows as unknown_image gaps",
		    s->nr_missing, s->nr_missing == 1 ? "" : "s");
}

static void
report_summary(const char *snap, const struct snap *s,
    const struct output *out, size_t procs)
{
	const uint64_t *c = out->total;
	uint64_t untraced = manifest_untraced(&s->man);
	uint64_t untraced_procs = manifest_untraced_processes(&s->man);
	char lost[48] = "", lost_procs[48] = "";

	/* processes and threads the recorder said it has no trace of: the
	 * warnings say why */
	if (untraced > 0)
		snprintf(lost, sizeof(lost), " (untraced %llu)",
		    (unsigned long long)untraced);
	if (untraced_procs > 0)
		snprintf(lost_procs, sizeof(lost_procs), " (untraced %llu)",
		    (unsigned long long)untraced_procs);
	report(tool.name, snap, NULL, "%zu process%s%s, %llu thread%s%s, "
	    "%llu blocks, %llu "
	    "instructions, %llu gaps (%llu decode errors, %llu unknown image, "
	    "%llu overflows), %llu of %llu trace bytes skipped",
	    procs, procs == 1 ? "" : "es", lost_procs,
	    (unsigned long long)out->threads, out->threads == 1 ? "" : "s",
	    lost,
	    (unsigned long long)c[BLKS_C_BLOCKS],
	    (unsigned long long)c[BLKS_C_INSNS],
	    (unsigned long long)c[BLKS_C_GAPS],
	    (unsigned long long)c[BLKS_C_DECODE_ERRORS],
	    (unsigned long long)c[BLKS_C_UNKNOWN_IMAGE],
	    (unsigned long long)c[BLKS_C_OVERFLOWS],
	    (unsigned long long)c[BLKS_C_BYTES_SKIPPED],
	    (unsigned long long)c[BLKS_C_TRACE_BYTES]);
	if (out->backend == &ptdec_backend_fast)
		report(tool.name, snap, NULL, "fast decoder: %llu of %llu PSB "
		    "intervals handed to libipt",
		    (unsigned long long)c[BLKS_C_FALLBACKS],
		    (unsigned long long)c[BLKS_C_PSBS]);
}

static int
wanted(const struct decode_options *o, const struct snap_thread *t)
{
	return (!o->has_tid || t->tid == o->tid) &&
	    (!o->has_pid || t->pid == o->pid);
}

/*
 * Decodes every thread (or those of --tid and --pid) of the loaded
 * snapshot into out; *procs: the processes they belong to.
 */
static int
decode_snapshot(struct snap *s, const struct decode_options *o,
    struct output *out, size_t *procs, struct error *e)
{
	int rc, found = 0;
	size_t j;

	*procs = 0;
	for (size_t i = 0; i < s->nr_threads; i++) {
		if (!wanted(o, &s->threads[i]))
			continue;
		found = 1;
		for (j = 0; j < i; j++)
			if (wanted(o, &s->threads[j]) &&
			    s->threads[j].pid == s->threads[i].pid)
				break;
		*procs += j == i;
		if ((rc = output_thread(out, s, &s->threads[i], e)) < 0)
			return rc;
	}
	if (o->has_tid && !found)
		return error_set(e, ERR_NOTFOUND, "no thread %llu%s in the "
		    "snapshot", (unsigned long long)o->tid, o->has_pid ?
		    " in that process" : "");
	if (o->has_pid && !found)
		return error_set(e, ERR_NOTFOUND, "no process %llu in the "
		    "snapshot", (unsigned long long)o->pid);
	return 0;
}

/*
 * The thread whose process's maps the output lists: --tid's, else the
 * first of --pid's (output_open keeps the maps of that thread's process).
 */
static int
map_thread(const struct snap *s, const struct decode_options *o,
    uint32_t *tid)
{
	if (o->has_tid) {
		*tid = (uint32_t)o->tid;
		return 1;
	}
	for (size_t i = 0; o->has_pid && i < s->nr_threads; i++)
		if (s->threads[i].pid == o->pid) {
			*tid = s->threads[i].tid;
			return 1;
		}
	*tid = UINT32_MAX;
	return 0;
}

/* Decodes with lib/ptdec; returns 0, or -1 after reporting. */
static int
run_native(const char *path, const struct decode_options *o)
{
	struct output out;
	struct error e;
	struct snap s;
	size_t procs = 0;
	uint32_t tid;
	int rc, one;

	error_clear(&e);
	if ((rc = snap_load(&s, path, &e)) < 0) {
		report_error(tool.name, path, &e, NULL);
		snap_free(&s);
		return -1;
	}
	report_images(&s);
	s.cfg.jobs = (unsigned)o->jobs;
	s.cfg.chunk_bytes = (size_t)o->chunk_bytes;
	s.cfg.window = o->from_ns > 0 || o->to_ns < INT64_MAX;
	s.cfg.from_ns = o->from_ns;
	s.cfg.to_ns = o->to_ns;
	s.hdr.decoder = o->decoder == DECODER_FAST ? BLKS_DECODER_FAST :
	    BLKS_DECODER_NATIVE;
	one = map_thread(&s, o, &tid);
	rc = output_open(&out, o->format, &s, tid, one, &e);
	out.backend = o->decoder == DECODER_FAST ? &ptdec_backend_fast :
	    &ptdec_backend_libipt;
	if (rc == 0)
		rc = decode_snapshot(&s, o, &out, &procs, &e);
	rc = output_close(&out, rc, &e);
	if (rc < 0)
		report_error(tool.name, output_write_failed(&out) ? "stdout" :
		    path, &e, NULL);
	else
		report_summary(path, &s, &out, procs);
	snap_free(&s);
	return rc < 0 ? -1 : 0;
}

/*
 * Feeding a pipe, ptdecode runs ahead of its reader (ptspans takes about
 * twice its time on the same blocks), and on a machine with few cores its
 * threads, woken as the pipe drains, would preempt the reader's.  Under
 * SCHED_BATCH (inherited by the decoder threads) a wakeup preempts no
 * one, while the share of the CPU stays what it was: nice 10 did as well
 * on the bench pipeline, but would also yield to every other program.
 * Alone, or writing a file, it keeps the normal policy.
 */
static void
yield_to_reader(void)
{
	const struct sched_param param = { .sched_priority = 0 };
	struct stat sb;

	if (fstat(STDOUT_FILENO, &sb) == 0 && S_ISFIFO(sb.st_mode))
		(void)sched_setscheduler(0, SCHED_BATCH, &param);
}

int
main(int argc, char *argv[])
{
	struct decode_options o = { .jobs = 0, .decoder = -1,
	    .to_ns = INT64_MAX };
	char *from_stdin = NULL;
	enum cli_parse p;
	int rc;

	/* Started by ptmcp or ptquery: ends when it does (its cleanup
	 * removes its scratch and partial output). */
	if (spawn_die_with_parent(SIGTERM))
		return EXIT_FAIL;
	if ((p = parse_options(argc, argv, &o)) == CLI_RUN)
		p = decoder_from_env(&o);
	if (p != CLI_RUN)
		return report_close_stdout(tool.name, p == CLI_DONE ? EXIT_OK :
		    EXIT_USAGE);
	if (o.format == 0 && isatty(STDOUT_FILENO)) {
		report(tool.name, "stdout", "use --format jsonl, or redirect "
		    "to a file or a pipe", "refusing to write the binary block "
		    "stream to a terminal");
		return EXIT_USAGE;
	}
	if (o.snapshot == NULL) {
		if (cli_finish_pipe_on_sigint(&tool, "ptdecode: interrupt: "
		    "decoding the snapshot the pipe brings; interrupt again "
		    "to stop now\n") < 0)
			return EXIT_FAIL;
		if ((from_stdin = snapshot_from_stdin(&rc)) == NULL)
			return rc;
		o.snapshot = from_stdin;
	}
	if (o.jobs == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		o.jobs = n > 0 ? (uint64_t)n : 1;
	}
	if (o.decoder == DECODER_PERF && o.has_pid) {
		report(tool.name, "--pid", "use --tid with --decoder perf",
		    "not with --decoder perf");
		return report_close_stdout(tool.name, EXIT_USAGE);
	}
	yield_to_reader();
	if (o.decoder == DECODER_PERF)
		rc = run_perf(o.snapshot, o.format, o.has_tid ?
		    (uint32_t)o.tid : UINT32_MAX);
	else
		rc = run_native(o.snapshot, &o);
	free(from_stdin);
	return report_close_stdout(tool.name, rc < 0 ? EXIT_FAIL : EXIT_OK);
}

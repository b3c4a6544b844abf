/*
 * cli: what every tool's command line has in common, and the return
 * conventions of all tool-side code (cmd/ and lib/tool).
 *
 * Owns --help (the SYNOPSIS, exactly as the tool's man page has it, on
 * stdout), --version, the shape of usage errors (message, then the
 * synopsis after "usage:", on stderr) and turning getopt_long's '?' and
 * ':' into a message naming the option.  Functions never exit.
 *
 * Return conventions, one for every tool:
 *
 *   - A helper that can fail returns 0 (or a count or index >= 0) on
 *     success and -1 after it has reported the failure itself; or, when
 *     its caller is the one to report, it fills a struct error and returns
 *     the negative error code, as lib/ does.  Never an exit status.
 *     lib/ marks such functions PTKIT_MUST_CHECK (base/error.h), so a
 *     dropped result is a build error; PTKIT_DROP says where dropping
 *     one is meant.
 *
 *   - Reading the command line (each tool's parse_options, the value
 *     parsers below) returns enum cli_parse: CLI_RUN to go on, CLI_DONE
 *     after --help or --version printed what was asked, CLI_USAGE after a
 *     usage error was reported.
 *
 *   - Exit statuses (EXIT_OK, EXIT_FAIL, EXIT_USAGE in tool/report.h, and
 *     a tool's own, such as ptdiff's) are decided in main(), and in the
 *     one function main hands a whole command to (a ptmcp verb, a ptquery
 *     kind, a ptrec recorder's run, spans_run), which returns main's
 *     status.  Nothing below those returns an exit status, except, for
 *     now, ptquery's table_sort, table_print and query_cursor, whose
 *     statuses its kinds pass on.
 */
#ifndef PTKIT_CLI_H
#define PTKIT_CLI_H

#include <getopt.h>
#include <stdint.h>

#include "base/error.h"

#ifndef PTKIT_VERSION
#define PTKIT_VERSION "0.0.0-unknown"
#endif

struct tool_info {
	const char *name;	/* "ptdecode" */
	const char *synopsis;	/* lines as in the man page, '\n'-separated */
};

/* What reading a command line decided. */
enum cli_parse {
	CLI_RUN,		/* options read: do the work */
	CLI_DONE,		/* --help or --version answered: exit 0 */
	CLI_USAGE,		/* a usage error was reported: exit 2 */
};

/* Prints the synopsis to stdout; returns CLI_DONE. */
enum cli_parse cli_help(const struct tool_info *t);

/* Prints "name (ptkit) VERSION"; returns CLI_DONE. */
enum cli_parse cli_version(const struct tool_info *t);

/*
 * Prints "name: <message>" and the synopsis after "usage:" to stderr;
 * returns CLI_USAGE.
 */
/*
 * For a tool that reads its input from stdin: when stdin is a pipe, the
 * first SIGINT only writes note (static, one line) to stderr and the
 * tool goes on to finish what the pipe delivers; a second ends it as
 * SIGINT does.  A terminal's ^C reaches every stage of a pipeline, and
 * the stage before (ptrec) answers it with the snapshot the rest is to
 * read.  Returns 0, or -1 after reporting.
 */
int cli_finish_pipe_on_sigint(const struct tool_info *t, const char *note);

enum cli_parse cli_usage_error(const struct tool_info *t, const char *fmt,
    ...) __attribute__((format(printf, 2, 3)));

/*
 * For getopt_long's '?' or ':' result (call with opterr = 0 and an
 * optstring starting with ':'): says which option was unknown or lacks
 * its argument.  Returns CLI_USAGE.
 */
enum cli_parse cli_bad_option(const struct tool_info *t, int c,
    char *const argv[]);

/*
 * Parses an option's numeric argument into *out; on failure prints the
 * usage error "option '--name': <why>" and returns -1, else 0.
 */
int cli_opt_u64(const struct tool_info *t, const char *opt, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out) PTKIT_MUST_CHECK;
int cli_opt_size(const struct tool_info *t, const char *opt, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out) PTKIT_MUST_CHECK;

/*
 * Checks that arg is one of the '|'-separated words in choices ("a|b|c");
 * returns its index, or prints a usage error and returns -1.
 */
int cli_opt_choice(const struct tool_info *t, const char *opt,
    const char *arg, const char *choices) PTKIT_MUST_CHECK;

#endif

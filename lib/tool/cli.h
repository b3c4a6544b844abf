/*
 * cli: what every tool's command line has in common.
 *
 * Owns --help (the SYNOPSIS, exactly as the tool's man page has it, on
 * stdout), --version, the shape of usage errors (message, then the
 * synopsis after "usage:", on stderr, exit 2), turning getopt_long's '?'
 * and ':' into a message naming the option, and the one line a tool prints
 * when the work asked for is not built yet.  Functions return exit
 * statuses; they never exit.
 */
#ifndef PTKIT_CLI_H
#define PTKIT_CLI_H

#include <getopt.h>
#include <stdint.h>

#ifndef PTKIT_VERSION
#define PTKIT_VERSION "0.0.0-unknown"
#endif

struct tool_info {
	const char *name;	/* "ptdecode" */
	const char *synopsis;	/* lines as in the man page, '\n'-separated */
};

/* Prints the synopsis to stdout; returns EXIT_OK. */
int cli_help(const struct tool_info *t);

/* Prints "name (ptkit) VERSION"; returns EXIT_OK. */
int cli_version(const struct tool_info *t);

/*
 * Prints "name: <message>" and the synopsis after "usage:" to stderr;
 * returns EXIT_USAGE.
 */
int cli_usage_error(const struct tool_info *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * For getopt_long's '?' or ':' result (call with opterr = 0 and an
 * optstring starting with ':'): says which option was unknown or lacks
 * its argument.  Returns EXIT_USAGE.
 */
int cli_bad_option(const struct tool_info *t, int c, char *const argv[]);

/*
 * Parses an option's numeric argument; on failure prints the usage error
 * "option '--name': <why>" and returns EXIT_USAGE, else 0.
 */
int cli_opt_u64(const struct tool_info *t, const char *opt, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out);
int cli_opt_size(const struct tool_info *t, const char *opt, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out);

/*
 * Checks that arg is one of the '|'-separated words in choices ("a|b|c");
 * returns its index, or prints a usage error and returns -EXIT_USAGE.
 */
int cli_opt_choice(const struct tool_info *t, const char *opt,
    const char *arg, const char *choices);

/*
 * Prints "name: <what> is not built yet (issue #N)" and returns EXIT_FAIL:
 * the honest answer of a tool whose work arrives later.
 */
int cli_not_built(const struct tool_info *t, const char *what, int issue);

#endif

/* cli: see cli.h. */
#include "tool/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/numparse.h"

enum cli_parse
cli_help(const struct tool_info *t)
{
	fputs(t->synopsis, stdout);
	fputc('\n', stdout);
	return CLI_DONE;
}

enum cli_parse
cli_version(const struct tool_info *t)
{
	printf("%s (ptkit) %s\n", t->name, PTKIT_VERSION);
	return CLI_DONE;
}

/* The synopsis with "usage: " before the first line, aligned after. */
static void
cli_print_usage(const struct tool_info *t)
{
	const char *s = t->synopsis, *nl;

	fputs("usage: ", stderr);
	while ((nl = strchr(s, '\n')) != NULL) {
		fwrite(s, 1, (size_t)(nl - s) + 1, stderr);
		fputs("       ", stderr);
		s = nl + 1;
	}
	fprintf(stderr, "%s\n", s);
}

int
cli_finish_pipe_on_sigint(const struct tool_info *t, const char *note)
{
	struct stat st;

	if (fstat(STDIN_FILENO, &st) < 0 || !S_ISFIFO(st.st_mode))
		return 0;
	if (cleanup_note_first_sigint(note) < 0) {
		fprintf(stderr, "%s: cannot catch SIGINT\n", t->name);
		return -1;
	}
	return 0;
}

enum cli_parse
cli_usage_error(const struct tool_info *t, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", t->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_print_usage(t);
	return CLI_USAGE;
}

enum cli_parse
cli_bad_option(const struct tool_info *t, int c, char *const argv[])
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		return cli_usage_error(t, "option '%s' needs an argument", arg);
	if (optopt != 0)
		return cli_usage_error(t, "unknown option '-%c'", optopt);
	return cli_usage_error(t, "unknown option '%s'", arg);
}

int
cli_opt_u64(const struct tool_info *t, const char *opt, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out)
{
	struct error e;

	if (parse_u64(arg, min, max, out, &e) < 0) {
		cli_usage_error(t, "option '%s': %s", opt, e.msg);
		return -1;
	}
	return 0;
}

int
cli_opt_size(const struct tool_info *t, const char *opt, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out)
{
	struct error e;

	if (parse_size(arg, min, max, out, &e) < 0) {
		cli_usage_error(t, "option '%s': %s", opt, e.msg);
		return -1;
	}
	return 0;
}

int
cli_opt_choice(const struct tool_info *t, const char *opt, const char *arg,
    const char *choices)
{
	const char *p = choices;
	size_t len = strlen(arg);
	int i = 0;

	for (;;) {
		const char *bar = strchr(p, '|');
		size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);

		if (n == len && strncmp(p, arg, n) == 0)
			return i;
		if (bar == NULL)
			break;
		p = bar + 1;
		i++;
	}
	cli_usage_error(t, "option '%s': '%s' is not one of %s", opt, arg,
	    choices);
	return -1;
}

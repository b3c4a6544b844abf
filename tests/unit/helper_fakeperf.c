/*
 * helper_fakeperf: stands in for perf in t_rec_pt, on a machine where
 * `perf record -e intel_pt//` cannot run.  It records nothing: it shows
 * what the perf recorder asks of perf and gives back a real perf.data.
 *
 *   helper_fakeperf record ARGS... -o OUT ... -- PROGRAM [ARG...]
 *
 * writes its arguments, one per line, to $FAKEPERF_ARGV, copies
 * $FAKEPERF_DATA (a perf.data perf wrote) to OUT, runs PROGRAM with its
 * own stdout and stderr, and on SIGINT sends PROGRAM SIGTERM, as perf
 * record does with its workload; it exits 0 once PROGRAM is gone.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void
on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int
copy(const char *from, const char *to)
{
	char buf[65536];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t n;
	int rc = in != NULL && out != NULL ? 0 : -1;

	while (rc == 0 && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -1;
	if (in != NULL)
		fclose(in);
	if (out != NULL && fclose(out) != 0)
		rc = -1;
	return rc;
}

int
main(int argc, char *argv[])
{
	const char *log = getenv("FAKEPERF_ARGV"), *data = getenv(
	    "FAKEPERF_DATA"), *out = NULL;
	struct sigaction sa;
	FILE *f;
	pid_t pid;
	int i, prog = 0, st;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[i + 1];
		if (strcmp(argv[i], "--") == 0 && prog == 0)
			prog = i + 1;
	}
	if (log != NULL && (f = fopen(log, "w")) != NULL) {
		for (i = 1; i < argc; i++)
			fprintf(f, "%s\n", argv[i]);
		fclose(f);
	}
	if (out == NULL || data == NULL || prog == 0 || prog >= argc ||
	    copy(data, out) < 0) {
		fprintf(stderr, "helper_fakeperf: bad arguments\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	if ((pid = fork()) == 0) {
		execvp(argv[prog], argv + prog);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (interrupted)
			kill(pid, SIGTERM);
	return 0;
}

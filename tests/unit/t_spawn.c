/* Tests for lib/spawn: exit codes, signals, pipes, missing programs. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/spawn.h"
#include "tap.h"

static int
run_sh(const char *script, struct spawn *sp, struct error *e)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	int rc;

	spawn_init(sp, argv);
	sp->in = SPAWN_NULL;
	if ((rc = spawn_start(sp, e)) < 0)
		return rc;
	return spawn_finish(sp, e);
}

static void
test_exit_codes(void)
{
	struct spawn sp;
	struct error e;

	IS_INT(run_sh("exit 0", &sp, &e), 0, "exit 0 is success");
	IS_INT(sp.exit_code, 0, "exit code 0 recorded");
	IS_INT(run_sh("exit 3", &sp, &e), -ERR_CHILD, "exit 3 is a failure");
	IS_INT(sp.exit_code, 3, "exit code 3 recorded");
	IS_STR(e.msg, "sh: exited with status 3", "exit status message");
	IS_INT(run_sh("exit 255", &sp, &e), -ERR_CHILD, "exit 255");
	IS_INT(sp.exit_code, 255, "exit code 255 recorded");
	IS_INT(run_sh("kill -TERM $$", &sp, &e), -ERR_CHILD,
	    "death by signal is a failure");
	IS_INT(sp.term_signal, SIGTERM, "the signal is recorded");
	IS_INT(sp.exit_code, -1, "no exit code after a signal");
	IS_STR(e.msg, "sh: killed by signal 15 (Terminated)",
	    "signal message");
}

static void
test_not_found(void)
{
	char *argv[] = { "ptkit-no-such-program", NULL };
	struct spawn sp;
	struct error e;

	spawn_init(&sp, argv);
	sp.out = SPAWN_PIPE;
	IS_INT(spawn_start(&sp, &e), -ERR_NOTFOUND, "missing program");
	IS_STR(e.msg, "ptkit-no-such-program: program not found",
	    "missing program message");
	IS_INT(sp.pid, 0, "no child after a failed start");
	IS_INT(sp.out, -1, "no pipe end left open after a failed start");
}

static void
test_pipes(void)
{
	char *argv[] = { "tr", "a-z", "A-Z", NULL };
	char buf[64];
	struct spawn sp;
	struct error e;
	ssize_t n;

	spawn_init(&sp, argv);
	sp.in = SPAWN_PIPE;
	sp.out = SPAWN_PIPE;
	IS_INT(spawn_start(&sp, &e), 0, "tr starts with two pipes");
	OK(write(sp.in, "hello\n", 6) == 6, "write to the child's stdin");
	close(sp.in);
	sp.in = -1;
	n = read(sp.out, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	IS_STR(buf, "HELLO\n", "read the child's stdout");
	IS_INT(spawn_finish(&sp, &e), 0, "tr exits 0 after EOF");
}

static void
test_capture(void)
{
	char *argv[] = { "sh", "-c", "printf 'a\\0b'; exit 4", NULL };
	struct error e;
	size_t len;
	char *out;

	IS_INT(spawn_capture(argv, &out, &len, &e), -ERR_CHILD,
	    "capture reports the exit status");
	IS_U64(len, 3, "captured length counts a NUL byte");
	IS_MEM(out, "a\0b", 3, "captured bytes");
	free(out);
}

static void
test_fd_passthrough(void)
{
	char path[] = "/tmp/ptkit-t-spawn.XXXXXX";
	char *argv[] = { "echo", "to-file", NULL };
	char buf[32];
	struct spawn sp;
	struct error e;
	int fd = mkstemp(path);
	ssize_t n;

	spawn_init(&sp, argv);
	sp.out = spawn_fd(fd);
	IS_INT(spawn_start(&sp, &e), 0, "start with stdout to a file");
	IS_INT(spawn_finish(&sp, &e), 0, "echo exits 0");
	OK(fcntl(fd, F_GETFD) >= 0, "the caller's descriptor stays open");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	IS_STR(buf, "to-file\n", "the child wrote to our file");
	close(fd);
	unlink(path);
}

int
main(void)
{
	/* A parent that ignores SIGPIPE must not pass that on. */
	signal(SIGPIPE, SIG_IGN);
	test_exit_codes();
	test_not_found();
	test_pipes();
	test_capture();
	test_fd_passthrough();
	return tap_done();
}

/*
 * Tests for lib/progress: drawn on a terminal, silent on a pipe, erased
 * when done.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/progress.h"
#include "tap.h"

/* Reads what is waiting on fd without blocking. */
static size_t
drain(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

static void
test_pipe_is_silent(void)
{
	struct progress p;
	char buf[256];
	int fds[2];
	FILE *f;

	if (pipe(fds) < 0)
		return;
	f = fdopen(fds[1], "w");
	progress_init(&p, f, -1);
	IS_INT(p.enabled, 0, "not enabled on a pipe");
	progress_update(&p, "decode", 1, 2);
	progress_done(&p);
	fflush(f);
	IS_U64(drain(fds[0], buf, sizeof(buf)), 0, "nothing written to a pipe");
	fclose(f);
	close(fds[0]);
}

/* PTKIT_PROGRESS=lines: a program reading the pipe gets whole lines. */
static void
test_pipe_lines(void)
{
	struct progress p;
	char buf[256];
	int fds[2];
	FILE *f;

	if (pipe(fds) < 0)
		return;
	f = fdopen(fds[1], "w");
	setenv("PTKIT_PROGRESS", "lines", 1);
	progress_init(&p, f, -1);
	unsetenv("PTKIT_PROGRESS");
	IS_INT(p.enabled && p.lines, 1, "lines on a pipe when asked");
	progress_update(&p, "decoding", 1024, 4096);
	progress_update(&p, "decoding", 2048, 4096);	/* within 250 ms */
	progress_line(&p, "free text");
	fflush(f);
	drain(fds[0], buf, sizeof(buf));
	IS_STR(buf, "progress: decoding 1024 4096\n", "one line, numbers only");
	progress_update_now(&p, "decoding", 4096, 4096);
	progress_update_now(&p, "indexing", 0, 7);
	progress_update(&p, "indexing", 7, 7);		/* within 250 ms */
	progress_done(&p);
	fflush(f);
	drain(fds[0], buf, sizeof(buf));
	IS_STR(buf, "progress: decoding 4096 4096\nprogress: indexing 0 7\n",
	    "a stage's last and first words are not held back");
	fclose(f);
	close(fds[0]);
}

static void
test_terminal_draws(void)
{
	struct progress p;
	char buf[256];
	int master, slave;
	FILE *f;

	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0) {
		OK(1, "no pseudo-terminal here # SKIP");
		return;
	}
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	f = fdopen(slave, "w");
	progress_init(&p, f, -1);
	IS_INT(p.enabled, 1, "enabled on a terminal");
	progress_update(&p, "decode", 25, 100);
	fflush(f);
	usleep(20000);
	drain(master, buf, sizeof(buf));
	IS_STR(buf, "\r\033[Kdecode: 25/100 (25%)",
	    "the line is drawn with its percentage");
	progress_done(&p);
	fflush(f);
	usleep(20000);
	drain(master, buf, sizeof(buf));
	IS_STR(buf, "\r\033[K", "done erases the line");
	fclose(f);
	close(master);
}

int
main(void)
{
	test_pipe_is_silent();
	test_pipe_lines();
	test_terminal_draws();
	return tap_done();
}

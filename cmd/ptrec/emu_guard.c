/* emu_guard: see emu_guard.h. */
#include "emu_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What a pass over /proc may take before the guardian gives up: a
 * program that forks faster than it is killed cannot keep it forever. */
#define GUARD_PASSES 200

struct dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Whether the NUL-separated arguments in buf[0..n) hold ",NEEDLE"
 * followed by ',' or the argument's end. */
static int
holds(const char *buf, size_t n, const char *needle, size_t len)
{
	for (size_t i = 1; i + len <= n; i++) {
		if (buf[i - 1] != ',' || memcmp(buf + i, needle, len) != 0)
			continue;
		if (i + len == n || buf[i + len] == ',' || buf[i + len] == '\0')
			return 1;
	}
	return 0;
}

/* "/proc/PID/cmdline" into path, by hand (no stdio after a fork). */
static void
cmdline_path(char *path, const char *pid)
{
	size_t k = 0;

	memcpy(path, "/proc/", 6);
	k = 6;
	while (*pid != '\0' && k < 32)
		path[k++] = *pid++;
	memcpy(path + k, "/cmdline", 9);
}

/* One pass: SIGKILL to every process of the recording; how many. */
static int
sweep(const char *needle, size_t len)
{
	char dents[4096] __attribute__((aligned(8)));
	char cmd[8192], path[64];
	pid_t self = getpid();
	long n;
	int dir, fd, killed = 0;

	if ((dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	while ((n = syscall(SYS_getdents64, dir, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);
			ssize_t got;
			pid_t pid = 0;
			const char *c;

			off += d->d_reclen;
			for (c = d->d_name; *c >= '0' && *c <= '9'; c++)
				pid = pid * 10 + (*c - '0');
			if (*c != '\0' || c == d->d_name || pid == self)
				continue;
			cmdline_path(path, d->d_name);
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				continue;
			got = read(fd, cmd, sizeof(cmd));
			close(fd);
			/* a zombie has no command line: it is dead already */
			if (got > 0 && holds(cmd, (size_t)got, needle, len) &&
			    kill(pid, SIGKILL) == 0)
				killed++;
		}
	}
	close(dir);
	return killed;
}

static void __attribute__((noreturn))
guard_main(int rfd, const char *needle, size_t len)
{
	static const int quiet[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
	    SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	struct sigaction sa;
	char c;
	ssize_t n;

	/* Out of ptrec's process group: what is sent to it (a terminal's
	 * ^C, ptmcp ending ptrec's group) is not meant for the guardian. */
	(void)setpgid(0, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		(void)sigaction(quiet[i], &sa, NULL);
	/* Nothing of ptrec's kept open: its output pipes, its stdout, the
	 * scratch directory's owner lock would all wait for us. */
	for (int fd = 0; fd < 4096; fd++)
		if (fd != rfd)
			(void)close(fd);
	do
		n = read(rfd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);	/* released: ptrec ended normally */
	for (int pass = 0; pass < GUARD_PASSES && sweep(needle, len) > 0;
	    pass++)
		(void)nanosleep(&pause, NULL);
	_exit(0);
}

int
emu_guard_start(struct emu_guard *g, const char *scratch, struct error *e)
{
	char needle[PATH_MAX + 8];
	size_t len = strlen(scratch);
	int fds[2], saved;
	pid_t pid;

	g->pid = 0;
	g->fd = -1;
	if (len + 5 > sizeof(needle))
		return error_set(e, ERR_RANGE, "%s: the path is too long",
		    scratch);
	memcpy(needle, "dir=", 4);
	memcpy(needle + 4, scratch, len + 1);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return error_set_errno(e, errno, "guardian: pipe");
	if ((pid = fork()) < 0) {
		saved = errno;
		close(fds[0]);
		close(fds[1]);
		return error_set_errno(e, saved, "guardian: fork");
	}
	if (pid == 0)
		guard_main(fds[0], needle, len + 4);
	close(fds[0]);
	g->pid = pid;
	g->fd = fds[1];		/* O_CLOEXEC: qemu must not hold it */
	return 0;
}

void
emu_guard_release(struct emu_guard *g)
{
	ssize_t n;

	if (g->fd >= 0) {
		do
			n = write(g->fd, "x", 1);
		while (n < 0 && errno == EINTR);
		(void)n;	/* a guardian gone already has nothing to do */
		close(g->fd);
		g->fd = -1;
	}
	if (g->pid > 0) {
		while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
			;
		g->pid = 0;
	}
}

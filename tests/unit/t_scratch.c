/*
 * Tests for lib/scratch and lib/cleanup: the scratch directory is gone
 * after a normal exit, after scratch_close, and after SIGTERM and SIGINT,
 * and PTKIT_KEEP_WASTE=1 keeps it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/scratch.h"
#include "tap.h"

enum child_end { END_EXIT, END_WAIT_FOR_SIGNAL };

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Fills a scratch dir with a small tree so removal has work to do. */
static void
fill_tree(const struct scratch *s)
{
	char path[4200];
	FILE *f;

	STEP(scratch_path(s, "sub", path, sizeof(path)));
	mkdir(path, 0700);
	STEP(scratch_path(s, "sub/deeper", path, sizeof(path)));
	mkdir(path, 0700);
	STEP(scratch_path(s, "sub/deeper/file", path, sizeof(path)));
	if ((f = fopen(path, "w")) != NULL)
		fclose(f);
	STEP(scratch_path(s, "fifo", path, sizeof(path)));
	mkfifo(path, 0600);
	STEP(scratch_path(s, "link", path, sizeof(path)));
	if (symlink("/", path) < 0)
		perror("symlink");
}

/*
 * Forks a child that opens a scratch dir, fills it, sends its path up a
 * pipe and then exits or waits to be killed.  Returns the child's pid.
 */
static pid_t
start_child(enum child_end end, char *path, size_t size)
{
	struct scratch s;
	struct error e;
	int fds[2];
	ssize_t n;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		close(fds[0]);
		if (scratch_open(&s, "t_scratch", &e) < 0)
			_exit(99);
		fill_tree(&s);
		if (write(fds[1], s.path, strlen(s.path) + 1) < 0)
			_exit(98);
		close(fds[1]);
		if (end == END_WAIT_FOR_SIGNAL)
			for (;;)
				pause();
		exit(0);	/* exit, not _exit: atexit hooks run */
	}
	close(fds[1]);
	n = read(fds[0], path, size - 1);
	path[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	return pid;
}

static void
test_signal(int sig, const char *name)
{
	char path[4096];
	int status = 0;
	pid_t pid = start_child(END_WAIT_FOR_SIGNAL, path, sizeof(path));

	OK(path[0] == '/' && exists(path), "%s: child made %s", name, path);
	kill(pid, sig);
	waitpid(pid, &status, 0);
	OK(WIFSIGNALED(status) && WTERMSIG(status) == sig,
	    "%s: child still dies of the signal", name);
	OK(!exists(path), "%s: scratch dir removed", name);
}

static void
test_normal_exit(void)
{
	char path[4096];
	int status = 0;
	pid_t pid = start_child(END_EXIT, path, sizeof(path));

	waitpid(pid, &status, 0);
	OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exits 0");
	OK(path[0] == '/' && !exists(path), "scratch removed at exit");
}

static void
test_keep_waste(void)
{
	char path[4096];
	int status = 0;
	pid_t pid;

	setenv("PTKIT_KEEP_WASTE", "1", 1);
	pid = start_child(END_WAIT_FOR_SIGNAL, path, sizeof(path));
	unsetenv("PTKIT_KEEP_WASTE");
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	OK(path[0] == '/' && exists(path),
	    "PTKIT_KEEP_WASTE=1 keeps the dir after SIGTERM");
	IS_INT(cleanup_remove_tree(path), 0, "cleanup_remove_tree removes it");
	OK(!exists(path), "and it is gone");
}

static void
test_close(void)
{
	struct scratch s;
	struct error e;
	char base[4096], own[4096];
	struct stat st;

	IS_INT(scratch_open(&s, "t_scratch", &e), 0, "scratch_open");
	snprintf(own, sizeof(own), "%s", s.path);
	snprintf(base, sizeof(base), "%s", s.path);
	*strrchr(base, '/') = '\0';
	OK(stat(base, &st) == 0 && (st.st_mode & 0777) == 0700,
	    "base dir is 0700");
	fill_tree(&s);
	IS_INT(scratch_close(&s), 0, "scratch_close");
	OK(exists(base) && !exists(own), "closed dir is gone, base stays");
	IS_STR(s.path, "", "path cleared after close");
}

static void
test_hostile_base(void)
{
	char dir[] = "/tmp/ptkit-t-host.XXXXXX", base[4200];
	struct scratch s;
	struct error e;

	if (mkdtemp(dir) == NULL)
		return;
	snprintf(base, sizeof(base), "%s/ptkit-%u", dir, (unsigned)getuid());
	if (symlink("/", base) < 0)
		perror("symlink");
	setenv("TMPDIR", dir, 1);
	IS_INT(scratch_open(&s, "t_scratch", &e), -ERR_PERM,
	    "a symlink in place of the base dir is refused");
	unsetenv("TMPDIR");
	unlink(base);
	rmdir(dir);
}

int
main(void)
{
	/*
	 * scratch keeps a signal its caller ignores ignored, and a shell
	 * runs a background job with SIGINT and SIGQUIT ignored: make the
	 * signals these tests send mean what they mean to a user.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	test_signal(SIGTERM, "SIGTERM");
	test_signal(SIGINT, "SIGINT");
	test_normal_exit();
	test_keep_waste();
	test_close();
	test_hostile_base();
	return tap_done();
}

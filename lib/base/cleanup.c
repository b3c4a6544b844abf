/* cleanup: see cleanup.h.  The only global mutable state in lib/. */
#include "base/cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/signals.h"

static struct {
	volatile sig_atomic_t used[CLEANUP_MAX_DIRS];
	char path[CLEANUP_MAX_DIRS][CLEANUP_PATH_MAX];
	int installed;
	int keep;		/* PTKIT_KEEP_WASTE=1, read once at install */
	const char *sigint_note;	/* cleanup_note_first_sigint */
	size_t sigint_note_len;
	volatile sig_atomic_t sigints;
} cleanup_list;

static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

int
cleanup_keep_waste(void)
{
	const char *v = getenv("PTKIT_KEEP_WASTE");

	return v != NULL && strcmp(v, "1") == 0;
}

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int
is_dot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' ||
	    (name[1] == '.' && name[2] == '\0'));
}

/*
 * Removes one entry of dirfd, descending into directories.  Depth is
 * bounded so that a hostile tree cannot exhaust the stack.
 */
static int remove_contents(int dirfd, int depth);

static int
remove_entry(int dirfd, const char *name, int depth)
{
	int sub, rc;

	if (unlinkat(dirfd, name, 0) == 0)
		return 0;
	sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (sub < 0)
		return -1;
	rc = remove_contents(sub, depth + 1);
	close(sub);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		rc = -1;
	return rc;
}

/*
 * Empties the directory open at dirfd.  Removing entries while reading
 * the directory may make getdents skip some, so it reads again from the
 * start until a pass removes nothing.
 */
static int
remove_contents(int dirfd, int depth)
{
	char buf[2048];
	long n, off;
	int removed, failed;

	if (depth > 32)
		return -1;
	do {
		removed = failed = 0;
		lseek(dirfd, 0, SEEK_SET);
		while ((n = syscall(SYS_getdents64, dirfd, buf,
		    sizeof(buf))) > 0) {
			for (off = 0; off < n;) {
				struct linux_dirent64 *d = (void *)(buf + off);

				off += d->d_reclen;
				if (is_dot(d->d_name))
					continue;
				if (remove_entry(dirfd, d->d_name, depth) == 0)
					removed++;
				else
					failed++;
			}
		}
		if (n < 0)
			return -1;
	} while (removed > 0);
	return failed > 0 ? -1 : 0;
}

int
cleanup_remove_tree(const char *path)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return unlink(path) == 0 ? 0 : -ERR_IO;
	rc = remove_contents(fd, 0);
	close(fd);
	if (rmdir(path) < 0 || rc < 0)
		return -ERR_IO;
	return 0;
}

static void
cleanup_run(void)
{
	int i;

	if (cleanup_list.keep)
		return;
	for (i = 0; i < CLEANUP_MAX_DIRS; i++) {
		if (cleanup_list.used[i]) {
			cleanup_list.used[i] = 0;
			/* at exit or in a handler: no one to tell */
			PTKIT_DROP(cleanup_remove_tree(cleanup_list.path[i]));
		}
	}
}

static void
cleanup_on_signal(int sig)
{
	if (sig == SIGINT && cleanup_list.sigint_note != NULL &&
	    cleanup_list.sigints++ == 0) {
		/* nothing to do if stderr is gone */
		PTKIT_DROP(write(STDERR_FILENO, cleanup_list.sigint_note,
		    cleanup_list.sigint_note_len));
		return;
	}
	cleanup_run();
	signals_reraise(sig);
}

static void
cleanup_at_exit(void)
{
	cleanup_run();
}

int
cleanup_note_first_sigint(const char *note)
{
	int rc;

	cleanup_list.sigint_note_len = strlen(note);
	cleanup_list.sigint_note = note;
	if ((rc = cleanup_install()) < 0)
		cleanup_list.sigint_note = NULL;
	return rc;
}

int
cleanup_install(void)
{
	if (cleanup_list.installed)
		return 0;
	cleanup_list.keep = cleanup_keep_waste();
	/* A signal the caller chose to ignore stays ignored. */
	if (signals_catch_unless_ignored(cleanup_signals,
	    sizeof(cleanup_signals) / sizeof(cleanup_signals[0]),
	    cleanup_on_signal, NULL) < 0)
		return -ERR_IO;
	if (atexit(cleanup_at_exit) != 0)
		return -ERR_IO;
	cleanup_list.installed = 1;
	return 0;
}

int
cleanup_register(const char *path)
{
	size_t len = strlen(path);
	int i;

	if (len >= CLEANUP_PATH_MAX)
		return -ERR_INVALID;
	for (i = 0; i < CLEANUP_MAX_DIRS; i++) {
		if (!cleanup_list.used[i]) {
			memcpy(cleanup_list.path[i], path, len + 1);
			cleanup_list.used[i] = 1;
			return i;
		}
	}
	return -ERR_RANGE;
}

void
cleanup_unregister(int slot)
{
	if (slot >= 0 && slot < CLEANUP_MAX_DIRS)
		cleanup_list.used[slot] = 0;
}

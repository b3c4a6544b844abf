/* scratch: see scratch.h. */
#include "base/scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"

static const char *
scratch_tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t != NULL && t[0] == '/' ? t : "/tmp";
}

/* Makes or checks $TMPDIR/ptkit-<uid>; a shared /tmp is hostile ground. */
static int
scratch_base(char *base, size_t size, struct error *e)
{
	struct stat st;
	int n;

	n = snprintf(base, size, "%s/ptkit-%u", scratch_tmpdir(),
	    (unsigned)getuid());
	if (n < 0 || (size_t)n >= size)
		return error_set(e, ERR_RANGE, "TMPDIR is too long");
	if (mkdir(base, 0700) < 0 && errno != EEXIST)
		return error_set_errno(e, errno, "%s", base);
	if (lstat(base, &st) < 0)
		return error_set_errno(e, errno, "%s", base);
	if (!S_ISDIR(st.st_mode))
		return error_set(e, ERR_PERM, "%s: not a directory", base);
	if (st.st_uid != getuid())
		return error_set(e, ERR_PERM,
		    "%s: owned by uid %u, not by us", base, (unsigned)st.st_uid);
	if ((st.st_mode & 077) != 0 && chmod(base, 0700) < 0)
		return error_set_errno(e, errno, "%s: chmod 0700", base);
	return 0;
}

/*
 * The owner of a directory holds an exclusive flock on its SCRATCH_OWNER
 * file for as long as it lives (the kernel lets go of it however the
 * process ends, SIGKILL included).  A directory whose owner file nobody
 * holds is a dead process's: it is removed.  One without an owner file
 * (being made, or kept by PTKIT_KEEP_WASTE=1) is left alone.
 */
#define SCRATCH_OWNER ".owner"

unsigned
scratch_sweep_dead(const char *parent, const char *infix)
{
	char dir[4400], owner[4500];
	struct dirent *d;
	unsigned swept = 0;
	DIR *dp;
	int fd;

	if ((dp = opendir(parent)) == NULL)
		return 0;
	while ((d = readdir(dp)) != NULL) {
		if ((infix == NULL ? d->d_name[0] == '.' :
		    d->d_name[0] != '.' || strstr(d->d_name, infix) == NULL) ||
		    (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", parent, d->d_name);
		snprintf(owner, sizeof(owner), "%s/%s", dir, SCRATCH_OWNER);
		if ((fd = open(owner, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    cleanup_remove_tree(dir) == 0)
			swept++;
		close(fd);
	}
	closedir(dp);
	return swept;
}

/*
 * The owner file is made and locked under another name, then renamed, so
 * that no sweeper ever sees it unlocked.
 */
int
scratch_own(const char *dir, int *lock_fd, struct error *e)
{
	char tmp[4200], owner[4200], pid[32];
	int fd, n;

	*lock_fd = -1;
	snprintf(tmp, sizeof(tmp), "%s/%s.new", dir, SCRATCH_OWNER);
	snprintf(owner, sizeof(owner), "%s/%s", dir, SCRATCH_OWNER);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_set_errno(e, errno, "%s", tmp);
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (flock(fd, LOCK_EX) < 0 || write(fd, pid, (size_t)n) != n ||
	    rename(tmp, owner) < 0) {
		n = error_set_errno(e, errno, "%s", owner);
		close(fd);
		return n;
	}
	*lock_fd = fd;
	return 0;
}

int
scratch_disown(const char *dir, int lock_fd, struct error *e)
{
	char owner[4200];
	int rc = 0;

	snprintf(owner, sizeof(owner), "%s/%s", dir, SCRATCH_OWNER);
	if (unlink(owner) < 0)
		rc = error_set_errno(e, errno, "%s", owner);
	if (lock_fd >= 0)
		close(lock_fd);
	return rc;
}

int
scratch_open(struct scratch *s, const char *tool, struct error *e)
{
	char base[4000];
	int rc, n;

	s->path[0] = '\0';
	s->slot = -1;
	s->lock_fd = -1;
	s->swept = 0;
	if (cleanup_install() < 0)
		return error_set_errno(e, errno, "installing signal handlers");
	if ((rc = scratch_base(base, sizeof(base), e)) < 0)
		return rc;
	s->swept = scratch_sweep_dead(base, NULL);
	n = snprintf(s->path, sizeof(s->path), "%s/%s.XXXXXX", base, tool);
	if (n < 0 || (size_t)n >= sizeof(s->path))
		return error_set(e, ERR_RANGE, "scratch path too long");
	if (mkdtemp(s->path) == NULL) {
		rc = error_set_errno(e, errno, "%s", s->path);
		s->path[0] = '\0';
		return rc;
	}
	s->slot = cleanup_register(s->path);
	if (s->slot < 0) {
		rmdir(s->path);
		s->path[0] = '\0';
		return error_set(e, ERR_RANGE, "too many scratch directories");
	}
	/* what PTKIT_KEEP_WASTE keeps, no sweeper takes */
	if (!cleanup_keep_waste() && (rc = scratch_own(s->path, &s->lock_fd,
	    e)) < 0) {
		PTKIT_DROP(scratch_close(s));	/* rc says what failed */
		return rc;
	}
	return 0;
}

int
scratch_path(const struct scratch *s, const char *name, char *buf,
    size_t size)
{
	int n = snprintf(buf, size, "%s/%s", s->path, name);

	return n < 0 || (size_t)n >= size ? -ERR_RANGE : 0;
}

int
scratch_close(struct scratch *s)
{
	int rc = 0;

	if (s->path[0] == '\0')
		return 0;
	cleanup_unregister(s->slot);
	s->slot = -1;
	if (!cleanup_keep_waste())
		rc = cleanup_remove_tree(s->path);
	if (s->lock_fd >= 0)
		close(s->lock_fd);	/* after: no sweeper races the removal */
	s->lock_fd = -1;
	s->path[0] = '\0';
	return rc;
}

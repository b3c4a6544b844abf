/* beneath: see beneath.h. */
#include "base/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Lexically inside: relative, no "..", not empty. */
static int
lexically_beneath(const char *rel)
{
	const char *p = rel;
	size_t n;

	if (rel[0] == '\0' || rel[0] == '/')
		return 0;
	while (*p != '\0') {
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		while (*p == '/')
			p++;
	}
	return 1;
}

static int
open_flags(enum beneath_kind kind)
{
	switch (kind) {
	case BENEATH_DIR:
		return O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
	case BENEATH_CREATE:
		return O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
	case BENEATH_FILE:
	default:
		/* O_NONBLOCK: a FIFO's open would wait for a writer */
		return O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
		    O_NOFOLLOW;
	}
}

/* The same rule one component at a time, where openat2 is missing. */
static int
walk_open(int rootfd, const char *rel, int flags, mode_t mode)
{
	char comp[NAME_MAX + 1];
	const char *p = rel;
	size_t n;
	int cur = rootfd, next, saved;

	for (;;) {
		n = strcspn(p, "/");
		if (n > NAME_MAX) {
			errno = ENAMETOOLONG;
			next = -1;
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		while (*p == '/')
			p++;
		if (*p == '\0') {
			next = openat(cur, n > 0 ? comp : ".", flags, mode);
			break;
		}
		if (n == 0 || strcmp(comp, ".") == 0)
			continue;
		/* A link here fails with ENOTDIR; its kind is told below. */
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next < 0) {
			struct stat st;

			saved = errno;
			if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				saved = ELOOP;
			errno = saved;
			break;
		}
		if (cur != rootfd)
			close(cur);
		cur = next;
	}
	saved = errno;
	if (cur != rootfd)
		close(cur);
	errno = saved;
	return next;
}

static int
raw_open(int rootfd, const char *rel, int flags, mode_t mode, int walk)
{
	struct open_how how;
	long fd;

	if (walk)
		return walk_open(rootfd, rel, flags, mode);
	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)flags;
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	do
		fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
	while (fd < 0 && (errno == EINTR || errno == EAGAIN));
	if (fd < 0 && errno == ENOSYS)
		return walk_open(rootfd, rel, flags, mode);
	if (fd < 0 && errno == ELOOP) {
		/* Say which: a link out (EXDEV), or one that stays inside. */
		how.flags = O_PATH | O_CLOEXEC;
		how.mode = 0;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		if (fd >= 0)
			close((int)fd);
		errno = fd < 0 && errno == EXDEV ? EXDEV : ELOOP;
		return -1;
	}
	return (int)fd;
}

static int
open_beneath(int rootfd, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, int walk, struct error *e)
{
	struct stat st;
	int fd, saved;

	if (rel == NULL || !lexically_beneath(rel))
		return error_set(e, ERR_PERM, "%.200s: leads outside %s",
		    rel != NULL ? rel : "(null)", what);
	if (strlen(rel) >= PATH_MAX)
		return error_set(e, ERR_RANGE, "%.200s...: path too long", rel);
	fd = raw_open(rootfd, rel, open_flags(kind), mode, walk);
	if (fd < 0) {
		saved = errno;
		if (saved == ENOENT)
			return error_set(e, ERR_NOTFOUND, "%s: no such file",
			    rel);
		if (saved == ELOOP)
			return error_set(e, ERR_PERM, "%s: a symbolic link on "
			    "the way; links are not followed inside %s", rel,
			    what);
		if (saved == EXDEV)
			return error_set(e, ERR_PERM, "%s: leads outside %s",
			    rel, what);
		if (saved == EEXIST && kind == BENEATH_CREATE)
			return error_set(e, ERR_EXISTS, "%s: exists already",
			    rel);
		return error_set_errno(e, saved, "%s", rel);
	}
	if (kind != BENEATH_FILE)
		return fd;
	if (fstat(fd, &st) < 0) {
		saved = errno;
		close(fd);
		return error_set_errno(e, saved, "%s", rel);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return error_set(e, ERR_PERM, "%s: not a regular file (a FIFO, "
		    "a device?); refused", rel);
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		saved = errno;
		close(fd);
		return error_set_errno(e, saved, "%s", rel);
	}
	return fd;
}

int
beneath_open(int rootfd, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, struct error *e)
{
	return open_beneath(rootfd, rel, kind, mode, what, 0, e);
}

int
beneath_open_walk(int rootfd, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, struct error *e)
{
	return open_beneath(rootfd, rel, kind, mode, what, 1, e);
}

int
beneath_open_at(const char *root, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, struct error *e)
{
	int rootfd, fd, saved;

	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		saved = errno;
		return saved == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "%s: no such directory", root) :
		    error_set_errno(e, saved, "%s", root);
	}
	fd = beneath_open(rootfd, rel, kind, mode, what, e);
	close(rootfd);
	return fd;
}

int
beneath_open_input(const char *path, struct error *e)
{
	struct stat st;
	int fd, saved;

	memset(&st, 0, sizeof(st));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		return saved == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "%s: no such file", path) :
		    error_set_errno(e, saved, "%s", path);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		saved = errno;
		close(fd);
		if (!S_ISREG(st.st_mode))
			return error_set(e, ERR_PERM, "%s: not a regular file "
			    "(a FIFO, a device?); refused", path);
		return error_set_errno(e, saved, "%s", path);
	}
	return fd;
}

const char *
beneath_inside(const char *root, const char *path)
{
	size_t n = root != NULL ? strlen(root) : 0;

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(path, root, n) != 0 || path[n] != '/')
		return NULL;
	path += n;
	while (*path == '/')
		path++;
	return path;
}

int
beneath_open_under(const char *root, const char *path, const char *what,
    struct error *e)
{
	const char *rel = beneath_inside(root, path);

	if (rel != NULL)
		return beneath_open_at(root, rel, BENEATH_FILE, 0, what, e);
	return beneath_open_input(path, e);
}

int
beneath_check(const char *root, const char *rel, const char *what,
    struct error *e)
{
	int fd = beneath_open_at(root, rel, BENEATH_FILE, 0, what, e);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* scratch: see scratch.h. */
#include "base/scratch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int
scratch_open(struct scratch *s, const char *tool, struct error *e)
{
	char base[4000];
	int rc, n;

	s->path[0] = '\0';
	s->slot = -1;
	if (cleanup_install() < 0)
		return error_set_errno(e, errno, "installing signal handlers");
	if ((rc = scratch_base(base, sizeof(base), e)) < 0)
		return rc;
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
	s->path[0] = '\0';
	return rc;
}

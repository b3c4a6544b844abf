/* mkpath: see mkpath.h. */
#include "base/mkpath.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

static int
mkpath_one(const char *dir, mode_t mode, struct error *e)
{
	struct stat st;

	if (mkdir(dir, mode) == 0)
		return 0;
	if (errno != EEXIST)
		return error_set_errno(e, errno, "%s: cannot create directory",
		    dir);
	if (stat(dir, &st) < 0)
		return error_set_errno(e, errno, "%s", dir);
	if (!S_ISDIR(st.st_mode))
		return error_set(e, ERR_FORMAT, "%s: not a directory", dir);
	return 0;
}

int
mkpath_parents(const char *path, mode_t mode, struct error *e)
{
	char buf[PATH_MAX];
	size_t len = strlen(path), i;
	int rc;

	if (len >= sizeof(buf))
		return error_set(e, ERR_RANGE, "%s: path too long", path);
	memcpy(buf, path, len + 1);
	/* The last component is the caller's to create: cut it off. */
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	while (len > 0 && buf[len - 1] != '/')
		len--;
	while (len > 1 && buf[len - 1] == '/')
		len--;
	buf[len] = '\0';
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		if (i > 0 && buf[i - 1] == '/')
			continue;	/* "a//b" */
		buf[i] = '\0';
		rc = mkpath_one(buf, mode, e);
		if (i < len)
			buf[i] = '/';
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* progpath: see progpath.h. */
#include "base/progpath.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PATH "/usr/bin:/bin"

enum candidate { CAND_NONE, CAND_NOT_EXEC, CAND_OK };

/* What execve would make of path: nothing there, refused, or runnable. */
static enum candidate
candidate(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return CAND_NONE;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return CAND_NOT_EXEC;
	return CAND_OK;
}

int
progpath_search(const char *name, const char *root, char *out, size_t size,
    struct error *e)
{
	const char *path = getenv("PATH"), *s, *colon;
	char cand[PATH_MAX], refused[PATH_MAX] = "";
	size_t room = size < sizeof(cand) ? size : sizeof(cand), len;
	enum candidate c;
	int n;

	if (size > 0)
		out[0] = '\0';
	if (strchr(name, '/') != NULL) {
		n = snprintf(cand, room, "%s", name);
		c = n >= 0 && (size_t)n < room ? candidate(cand) : CAND_NONE;
		if (c == CAND_OK) {
			memcpy(out, cand, (size_t)n + 1);
			return 0;
		}
		return error_set(e, ERR_NOTFOUND, c == CAND_NOT_EXEC ?
		    "%s: not executable" : "%s: not found", name);
	}
	for (s = path != NULL ? path : DEFAULT_PATH; *s != '\0';
	    s = colon + (*colon != '\0')) {
		colon = strchr(s, ':');
		if (colon == NULL)
			colon = s + strlen(s);
		len = (size_t)(colon - s);
		if (root != NULL && (len == 0 || s[0] != '/'))
			continue;	/* relative: ours, not one under root */
		n = snprintf(cand, room, "%s%.*s/%s", root != NULL ? root : "",
		    (int)(len ? len : 1), len ? s : ".", name);
		if (n < 0 || (size_t)n >= room)
			continue;
		if ((c = candidate(cand)) == CAND_OK) {
			memcpy(out, cand, (size_t)n + 1);
			return 0;
		}
		if (c == CAND_NOT_EXEC && refused[0] == '\0')
			memcpy(refused, cand, (size_t)n + 1);
	}
	if (refused[0] != '\0')
		return error_set(e, ERR_NOTFOUND, "%s: not executable",
		    refused);
	return error_set(e, ERR_NOTFOUND, "%s: not found in $PATH", name);
}

int
progpath_self_dir(char *out, size_t size, struct error *e)
{
	char *slash;
	ssize_t n;

	if (size < 2)
		return error_set(e, ERR_RANGE, "/proc/self/exe: buffer too "
		    "small");
	if ((n = readlink("/proc/self/exe", out, size - 1)) < 0)
		return error_set_errno(e, errno, "/proc/self/exe");
	if ((size_t)n >= size - 1)
		return error_set(e, ERR_RANGE, "/proc/self/exe: path too long");
	out[n] = '\0';
	if ((slash = strrchr(out, '/')) == NULL)
		return error_set(e, ERR_FORMAT, "/proc/self/exe: %s: not a path",
		    out);
	*slash = '\0';
	return 0;
}

int
progpath_beside_self(const char *rel, int mode, char *out, size_t size,
    struct error *e)
{
	char dir[PATH_MAX];
	int rc, n;

	if ((rc = progpath_self_dir(dir, sizeof(dir), e)) < 0)
		return rc;
	n = snprintf(out, size, "%s/%s", dir, rel);
	if (n < 0 || (size_t)n >= size)
		return error_set(e, ERR_RANGE, "%s/%s: path too long", dir, rel);
	if (access(out, mode) < 0)
		return error_set_errno(e, errno, "%s", out);
	return 0;
}

void
progpath_sibling_tool(const char *name, char *out, size_t size)
{
	if (progpath_beside_self(name, X_OK, out, size, NULL) < 0)
		snprintf(out, size, "%s", name);
}

/* Tests for lib/mkpath: the parents of a path, never the path itself. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/mkpath.h"
#include "tap.h"

static int
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int
main(void)
{
	char root[] = "/tmp/ptkit-t-mkpath.XXXXXX", p[512], q[512];
	struct error e;
	FILE *f;

	if (mkdtemp(root) == NULL)
		return 1;
	snprintf(p, sizeof(p), "%s/a/b/c/snap", root);
	IS_INT(mkpath_parents(p, 0755, &e), 0, "three missing parents");
	snprintf(q, sizeof(q), "%s/a/b/c", root);
	OK(is_dir(q), "the parents exist");
	OK(!is_dir(p), "the last component is not created");
	IS_INT(mkpath_parents(p, 0755, &e), 0, "existing parents are fine");
	snprintf(p, sizeof(p), "%s/a//b/c/x/", root);
	IS_INT(mkpath_parents(p, 0755, &e), 0, "doubled and trailing slashes");
	IS_INT(mkpath_parents("relative-leaf", 0755, &e), 0,
	    "a bare name has no parents to make");
	snprintf(q, sizeof(q), "%s/file", root);
	if ((f = fopen(q, "w")) != NULL)
		fclose(f);
	snprintf(p, sizeof(p), "%s/file/sub/snap", root);
	IS_INT(mkpath_parents(p, 0755, &e), -ERR_FORMAT,
	    "a file in the way is an error");
	snprintf(q, sizeof(q), "%s/file: not a directory", root);
	IS_STR(e.msg, q, "the message names it");
	IS_INT(mkpath_parents("/proc/ptkit-no/x/y", 0755, &e), -ERR_IO,
	    "a directory that cannot be made is an error");
	snprintf(q, sizeof(q), "rm -rf %s", root);
	if (system(q) != 0)
		DIAG("could not remove %s", root);
	return tap_done();
}

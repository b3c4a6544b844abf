/* Tests for lib/base/progpath: $PATH search as execvp does it, and the
 * files beside the running executable. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/progpath.h"
#include "tap.h"

static char dir[] = "/tmp/t_progpath.XXXXXX";

static void
make_file(const char *rel, int mode)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if ((f = fopen(path, "w")) != NULL) {
		fputs("#!/bin/sh\n", f);
		fclose(f);
	}
	chmod(path, (mode_t)mode);
}

static void
set_path(const char *fmt)
{
	char path[3 * PATH_MAX];

	snprintf(path, sizeof(path), fmt, dir, dir, dir);
	setenv("PATH", path, 1);
}

static void
test_search(void)
{
	char out[PATH_MAX], want[PATH_MAX], small[16];
	struct error e;

	snprintf(want, sizeof(want), "%s/b/prog", dir);
	set_path("%s/a:%s/b");
	IS_INT(progpath_search("prog", NULL, out, sizeof(out), &e), 0,
	    "found in the second directory");
	IS_STR(out, want, "that one");
	set_path("%s/c:%s/b");
	IS_INT(progpath_search("prog", NULL, out, sizeof(out), &e), 0,
	    "a directory named like the program is passed over");
	IS_STR(out, want, "as execvp passes it over");
	set_path("%s/n:%s/a");
	IS_INT(progpath_search("prog", NULL, out, sizeof(out), &e),
	    -ERR_NOTFOUND, "not executable anywhere");
	snprintf(want, sizeof(want), "%s/n/prog: not executable", dir);
	IS_STR(e.msg, want, "says which one we may not run");
	IS_STR(out, "", "and leaves out empty");
	IS_INT(progpath_search("nothing", NULL, out, sizeof(out), &e),
	    -ERR_NOTFOUND, "nowhere");
	IS_STR(e.msg, "nothing: not found in $PATH", "says so");
	set_path("%s/b");
	IS_INT(progpath_search("prog", NULL, small, sizeof(small), &e),
	    -ERR_NOTFOUND, "a candidate too long for out is passed over");
	IS_STR(small, "", "out stays empty");
	snprintf(want, sizeof(want), "%s/b/prog", dir);
	IS_INT(progpath_search(want, NULL, out, sizeof(out), &e), 0,
	    "a name with a slash is itself");
	IS_STR(out, want, "unchanged");
	snprintf(want, sizeof(want), "%s/n/prog", dir);
	IS_INT(progpath_search(want, NULL, out, sizeof(out), &e),
	    -ERR_NOTFOUND, "a name with a slash we may not run");
	set_path("/b:b:%s/a");
	IS_INT(progpath_search("prog", dir, out, sizeof(out), &e), 0,
	    "under a root");
	snprintf(want, sizeof(want), "%s/b/prog", dir);
	IS_STR(out, want, "the path under the root");
	set_path("b:/a");
	IS_INT(progpath_search("prog", dir, out, sizeof(out), &e),
	    -ERR_NOTFOUND, "relative entries mean nothing under a root");
	if (chdir(dir) == 0) {
		set_path("/nonexistent::/nonexistent");
		IS_INT(progpath_search("top", NULL, out, sizeof(out), &e), 0,
		    "an empty entry is the current directory");
		IS_STR(out, "./top", "named from there");
	}
}

static void
test_self(void)
{
	char self[PATH_MAX], d[PATH_MAX], out[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct error e;

	self[n > 0 ? n : 0] = '\0';
	IS_INT(progpath_self_dir(d, sizeof(d), &e), 0, "our directory");
	OK(strncmp(self, d, strlen(d)) == 0 && self[strlen(d)] == '/' &&
	    strchr(self + strlen(d) + 1, '/') == NULL, "is /proc/self/exe's");
	IS_INT(progpath_beside_self("t_progpath", X_OK, out, sizeof(out), &e),
	    0, "we are beside ourselves");
	IS_STR(out, self, "by our own path");
	OK(progpath_beside_self("no-such-file", R_OK, out, sizeof(out),
	    &e) < 0, "a missing file beside us is an error");
	progpath_sibling_tool("t_progpath", out, sizeof(out));
	IS_STR(out, self, "a sibling tool that is there: its path");
	progpath_sibling_tool("no-such-tool", out, sizeof(out));
	IS_STR(out, "no-such-tool", "one that is not: its name, for $PATH");
}

static void
remove_tree(void)
{
	static const char *const rel[] = { "b/prog", "n/prog", "top",
		"c/prog", "a", "b", "c", "n", "" };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, rel[i]);
		if (unlink(path) < 0)
			rmdir(path);
	}
}

int
main(void)
{
	char cmd[PATH_MAX];

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cmd, sizeof(cmd), "%s/a", dir);
	mkdir(cmd, 0755);
	snprintf(cmd, sizeof(cmd), "%s/b", dir);
	mkdir(cmd, 0755);
	snprintf(cmd, sizeof(cmd), "%s/n", dir);
	mkdir(cmd, 0755);
	snprintf(cmd, sizeof(cmd), "%s/c", dir);
	mkdir(cmd, 0755);
	snprintf(cmd, sizeof(cmd), "%s/c/prog", dir);
	mkdir(cmd, 0755);
	make_file("b/prog", 0755);
	make_file("n/prog", 0644);
	make_file("top", 0755);
	test_search();
	test_self();
	remove_tree();
	return tap_done();
}

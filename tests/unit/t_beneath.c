/*
 * Tests for lib/base/beneath: paths from files opened beneath their root,
 * by openat2 and by the component walk it falls back to, and inputs that
 * are not regular files refused before an open could block.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/error.h"
#include "tap.h"

typedef int (*open_fn)(int, const char *, enum beneath_kind, mode_t,
    const char *, struct error *);

static void
put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* Opens rel with fn; returns the code, or the first byte it reads. */
static int
try_open(open_fn fn, int root, const char *rel, struct error *e)
{
	char c = 0;
	int fd = fn(root, rel, BENEATH_FILE, 0, "the root", e);

	if (fd < 0)
		return fd;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c;
}

static void
cases(open_fn fn, const char *how, int root)
{
	struct error e;

	IS_INT(try_open(fn, root, "a/f", &e), 'F', "%s: a file beneath", how);
	IS_INT(try_open(fn, root, "./a//f", &e), 'F', "%s: . and // are fine",
	    how);
	IS_INT(try_open(fn, root, "a/none", &e), -ERR_NOTFOUND,
	    "%s: a missing file", how);
	IS_STR(e.msg, "a/none: no such file", "%s: says which", how);
	IS_INT(try_open(fn, root, "../outside", &e), -ERR_PERM,
	    "%s: .. is refused", how);
	IS_STR(e.msg, "../outside: leads outside the root", "%s: says why",
	    how);
	IS_INT(try_open(fn, root, "a/../a/f", &e), -ERR_PERM,
	    "%s: .. anywhere is refused", how);
	IS_INT(try_open(fn, root, "/etc/passwd", &e), -ERR_PERM,
	    "%s: an absolute path is refused", how);
	IS_INT(try_open(fn, root, "out", &e), -ERR_PERM,
	    "%s: a link to a file outside", how);
	IS_INT(try_open(fn, root, "outdir/x", &e), -ERR_PERM,
	    "%s: a link to a directory outside, on the way", how);
	IS_INT(try_open(fn, root, "alias", &e), -ERR_PERM,
	    "%s: a link that stays inside is not followed either", how);
	OK(strstr(e.msg, "alias: ") == e.msg && strstr(e.msg, "link") != NULL,
	    "%s: the message names the link: %s", how, e.msg);
	IS_INT(try_open(fn, root, "fifo", &e), -ERR_PERM,
	    "%s: a FIFO is refused without blocking", how);
	IS_STR(e.msg, "fifo: not a regular file (a FIFO, a device?); refused",
	    "%s: says what it is", how);
	IS_INT(try_open(fn, root, "a", &e), -ERR_PERM,
	    "%s: a directory is not a file to read", how);
}

int
main(void)
{
	char top[] = "/tmp/ptkit-t-beneath.XXXXXX", p[512], q[1024];
	struct error e;
	int root, fd;

	if (mkdtemp(top) == NULL)
		return 1;
	snprintf(p, sizeof(p), "%s/outside", top);
	put(p, "S");			/* the secret */
	snprintf(p, sizeof(p), "%s/root", top);
	STEP(mkdir(p, 0700));
	snprintf(p, sizeof(p), "%s/root/a", top);
	STEP(mkdir(p, 0700));
	snprintf(p, sizeof(p), "%s/root/a/f", top);
	put(p, "F");
	snprintf(p, sizeof(p), "%s/root/out", top);
	snprintf(q, sizeof(q), "%s/outside", top);
	STEP(symlink(q, p));
	snprintf(p, sizeof(p), "%s/root/outdir", top);
	STEP(symlink(top, p));
	snprintf(p, sizeof(p), "%s/root/alias", top);
	STEP(symlink("a/f", p));
	snprintf(p, sizeof(p), "%s/root/fifo", top);
	STEP(mkfifo(p, 0600));
	snprintf(p, sizeof(p), "%s/root", top);
	root = open(p, O_RDONLY | O_DIRECTORY);
	OK(root >= 0, "the root opens");

	cases(beneath_open, "openat2", root);
	cases(beneath_open_walk, "walk", root);

	fd = beneath_open(root, "a/new", BENEATH_CREATE, 0600, "the root", &e);
	OK(fd >= 0, "a new file is made beneath");
	if (fd >= 0)
		close(fd);
	IS_INT(beneath_open(root, "a/new", BENEATH_CREATE, 0600, "the root",
	    &e), -ERR_EXISTS, "but never over one that is there");
	IS_INT(beneath_open(root, "outdir/new", BENEATH_CREATE, 0600,
	    "the root", &e), -ERR_PERM, "nor through a link");
	snprintf(p, sizeof(p), "%s/new", top);
	OK(access(p, F_OK) != 0, "nothing was written outside");
	fd = beneath_open(root, "a", BENEATH_DIR, 0, "the root", &e);
	OK(fd >= 0, "a directory beneath");
	if (fd >= 0)
		close(fd);

	snprintf(p, sizeof(p), "%s/root", top);
	IS_INT(beneath_check(p, "a/f", "the root", &e), 0, "check: a file");
	IS_INT(beneath_check(p, "fifo", "the root", &e), -ERR_PERM,
	    "check: a FIFO");

	snprintf(p, sizeof(p), "%s/root/fifo", top);
	IS_INT(beneath_open_input(p, &e), -ERR_PERM,
	    "a FIFO a user named is refused without blocking");
	snprintf(q, sizeof(q), "%s: not a regular file (a FIFO, a device?); "
	    "refused", p);
	IS_STR(e.msg, q, "and named");
	IS_INT(beneath_open_input("/dev/null", &e), -ERR_PERM,
	    "so is a device");
	snprintf(p, sizeof(p), "%s/root/alias", top);
	fd = beneath_open_input(p, &e);
	OK(fd >= 0, "a user's own link is followed");
	if (fd >= 0)
		close(fd);

	/* Whole paths: inside the root beneath it, elsewhere as named. */
	snprintf(p, sizeof(p), "%s/root", top);
	IS_STR(beneath_inside(p, "/elsewhere/a/f") ? "inside" : "outside",
	    "outside", "inside: another directory is not");
	snprintf(q, sizeof(q), "%s/root2/a/f", top);
	IS_STR(beneath_inside(p, q) ? "inside" : "outside", "outside",
	    "inside: nor a directory whose name starts the same");
	snprintf(q, sizeof(q), "%s/root//a/f", top);
	IS_STR(beneath_inside(p, q), "a/f", "inside: the rest, past the /s");
	IS_STR(beneath_inside(NULL, q) ? "inside" : "outside", "outside",
	    "inside: no root, nothing is");
	snprintf(q, sizeof(q), "%s/root/alias", top);
	IS_INT(beneath_open_under(p, q, "the root", &e), -ERR_PERM,
	    "under: a link inside the root is not followed");
	IS_STR(e.msg, "alias: a symbolic link on the way; links are not "
	    "followed inside the root", "under: the message names it");
	snprintf(q, sizeof(q), "%s/root/a/../out", top);
	IS_INT(beneath_open_under(p, q, "the root", &e), -ERR_PERM,
	    "under: a .. inside the root is refused");
	snprintf(q, sizeof(q), "%s/root/a/f", top);
	fd = beneath_open_under(p, q, "the root", &e);
	OK(fd >= 0, "under: a file of the root opens");
	if (fd >= 0)
		close(fd);
	snprintf(q, sizeof(q), "%s/root/alias", top);
	snprintf(p, sizeof(p), "%s/other", top);
	fd = beneath_open_under(p, q, "the root", &e);
	OK(fd >= 0, "under: outside the root a link is followed, as named");
	if (fd >= 0)
		close(fd);
	snprintf(q, sizeof(q), "%s/root/fifo", top);
	IS_INT(beneath_open_under(p, q, "the root", &e), -ERR_PERM,
	    "under: and a FIFO there refused without blocking");

	close(root);
	snprintf(q, sizeof(q), "rm -rf %s", top);
	if (system(q) != 0)
		DIAG("could not remove %s", top);
	return tap_done();
}

/*
 * Tests for lib/store: ids, paths that stay inside, sessions, prune, and
 * a guard racing a pruner in another process.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fmt/store.h"
#include "tap.h"

static const char ID1[] = "20260101T000000Z-00000001";
static const char ID2[] = "20260102T000000Z-00000002";
static const char ID3[] = "20260103T000000Z-00000003";

static void
put_file(const char *path, size_t size)
{
	FILE *f = fopen(path, "w");
	size_t i;

	for (i = 0; f != NULL && i < size; i++)
		fputc('x', f);
	if (f != NULL)
		fclose(f);
}

static void
put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* A snapshot directory with one file of size bytes. */
static void
put_snapshot(const struct store *s, const char *id, size_t size,
    time_t mtime)
{
	char dir[PATH_MAX + 64], file[PATH_MAX + 128];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

	snprintf(dir, sizeof(dir), "%s/snapshots/%s", s->root, id);
	mkdir(dir, 0700);
	snprintf(file, sizeof(file), "%s/manifest.json", dir);
	put_file(file, size);
	utimensat(AT_FDCWD, dir, ts, 0);
}

static void
test_ids(void)
{
	char id[STORE_ID_SIZE];

	char id2[STORE_ID_SIZE];
	struct error e;

	IS_INT(store_id_make(id, sizeof(id), 1795941722, &e), 0, "make id");
	OK(strncmp(id, "20261129T084202Z-", 17) == 0, "id starts with UTC time");
	OK(store_id_valid(id), "a made id is valid: %s", id);
	STEP(store_id_make(id2, sizeof(id2), 1795941722, &e));
	OK(strcmp(id, id2) != 0, "two ids of the same second differ");
	IS_INT(store_id_make(id, 10, 0, &e), -ERR_RANGE, "small buffer");
	OK(!store_id_valid("20261129T084202Z-0123456"), "short id invalid");
	OK(!store_id_valid("2026112XT084202Z-01234567"), "bad digit invalid");
	OK(store_id_valid("20261129T084202Z-0123abcd"), "hand-made id valid");
	IS_INT(store_id_new(id, NULL), 0, "new id");
	OK(store_id_valid(id), "a new id is valid (%s)", id);
	IS_INT(strlen(id), 25, "ids are 25 characters");
	OK(store_id_valid(ID1), "a fixed id is valid");
	OK(!store_id_valid("../../etc"), "../../etc is not an id");
	OK(!store_id_valid("20260101T000000Z-0000000G"), "non-hex tail");
	OK(!store_id_valid("20260101T000000Z-0000000A"), "upper-case hex");
	OK(!store_id_valid("20260101T000000Z-000000011"), "too long");
	OK(!store_id_valid(""), "empty");
	OK(!store_id_valid("2026010/T000000Z-00000001"), "a slash");
	OK(store_analysis_id_valid("default"), "default analysis");
	OK(!store_analysis_id_valid("../x"), "analysis ../x refused");
	OK(!store_analysis_id_valid(""), "empty analysis refused");
	OK(store_name_valid("start-abc_1.2"), "a job name");
	OK(!store_name_valid(".hidden"), "a dot name refused");
	OK(!store_name_valid("a/b"), "a slash in a name refused");
}

static void
test_default_path(void)
{
	char buf[PATH_MAX];

	setenv("PTKIT_STORE", "/s/one", 1);
	setenv("XDG_DATA_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	STEP(store_default_path(buf, sizeof(buf), NULL));
	IS_STR(buf, "/s/one", "PTKIT_STORE first");
	unsetenv("PTKIT_STORE");
	STEP(store_default_path(buf, sizeof(buf), NULL));
	IS_STR(buf, "/xdg/ptkit", "then XDG_DATA_HOME/ptkit");
	setenv("XDG_DATA_HOME", "relative", 1);
	STEP(store_default_path(buf, sizeof(buf), NULL));
	IS_STR(buf, "/home/u/.local/share/ptkit",
	    "a relative XDG_DATA_HOME is ignored: ~/.local/share/ptkit");
}

/* The analyses of snapshot ID1, whose directory is snap. */
static void
test_derived(const struct store *s, const char *snap)
{
	char buf[PATH_MAX], want[PATH_MAX + 96], out[PATH_MAX];
	struct error e;

	IS_INT(store_snapshots_dir("/x/store", buf, sizeof(buf), &e), 0,
	    "snapshots dir of a root");
	IS_STR(buf, "/x/store/snapshots", "is root/snapshots");
	IS_INT(store_snapshots_dir("/x/store", buf, 10, &e), -ERR_RANGE,
	    "snapshots dir too long");
	IS_INT(store_analysis_snapshot("/s/derived/default", buf, sizeof(buf),
	    &e), 0, "the snapshot of an analysis");
	IS_STR(buf, "/s/derived/default/../..", "is two levels up");
	OK(store_beneath("/a/b/c", "/a/b"), "/a/b/c is beneath /a/b");
	OK(!store_beneath("/a/bc", "/a/b"), "/a/bc is not");
	OK(!store_beneath("/a/b", "/a/b"), "nor /a/b itself");
	OK(!store_beneath("/a/b/", "/a/b"), "nor /a/b/");
	IS_INT(store_derived_path(s, ID1, buf, sizeof(buf), &e), 0,
	    "derived path");
	snprintf(want, sizeof(want), "%s/derived", snap);
	IS_STR(buf, want, "is snapshots/ID/derived");
	IS_INT(store_snapshot_derived(snap, buf, sizeof(buf), &e), 0,
	    "derived of a snapshot directory");
	IS_STR(buf, want, "the same");
	IS_INT(store_derived_path(s, "../x", buf, sizeof(buf), &e),
	    -ERR_INVALID, "derived path of a bad id refused");
	IS_INT(store_analysis_tmp(snap, buf, sizeof(buf), &e), 0,
	    "analysis template");
	snprintf(want, sizeof(want), "%s/derived/.tmp-XXXXXX", snap);
	IS_STR(buf, want, "is derived/.tmp-XXXXXX");
	IS_INT(store_snapshot_analysis(snap, "../x", buf, sizeof(buf), &e),
	    -ERR_INVALID, "snapshot analysis of a bad id refused");
	IS_INT(store_resolve_analysis(s, ID1, "default", out, sizeof(out),
	    &e), -ERR_NOTFOUND, "no analysis yet");
	snprintf(want, sizeof(want), "%s/derived", snap);
	mkdir(want, 0700);
	IS_INT(store_snapshot_analysis(snap, "default", buf, sizeof(buf), &e),
	    0, "snapshot analysis path");
	symlink("/etc", buf);
	IS_INT(store_resolve_analysis(s, ID1, "default", out, sizeof(out),
	    &e), -ERR_PERM, "an analysis linking outside is refused");
	unlink(buf);
	mkdir(buf, 0700);
	IS_INT(store_resolve_analysis(s, ID1, "default", out, sizeof(out),
	    &e), 0, "an analysis resolves");
	IS_STR(out, buf, "to its directory");
	IS_INT(store_resolve_analysis(s, ID1, "BAD", out, sizeof(out), &e),
	    -ERR_INVALID, "a bad analysis id is refused");
	rmdir(buf);
	rmdir(want);
}

static void
test_open_and_paths(struct store *s, const char *root)
{
	char path[PATH_MAX / 2], buf[PATH_MAX], link[PATH_MAX + 64];
	struct error e;
	struct stat st;

	snprintf(path, sizeof(path), "%s/a/b/store", root);
	IS_INT(store_open(s, path, 0, &e), -ERR_NOTFOUND,
	    "no store without create");
	IS_INT(store_open(s, path, 1, &e), 0, "created with its parents");
	stat(path, &st);
	IS_INT(st.st_mode & 0777, 0700, "the store is 0700");
	snprintf(buf, sizeof(buf), "%s/snapshots", path);
	stat(buf, &st);
	IS_INT(st.st_mode & 0777, 0700, "snapshots/ is 0700");
	chmod(path, 0755);
	IS_INT(store_open(s, path, 1, &e), 0, "reopened");
	stat(path, &st);
	IS_INT(st.st_mode & 0777, 0700, "a loose store is tightened to 0700");

	IS_INT(store_path(s, STORE_SNAPSHOTS, "../../etc", buf, sizeof(buf),
	    &e), -ERR_INVALID, "store_path refuses ../../etc");
	IS_STR(e.msg, "'../../etc' is not a valid id (ids look like "
	    "20261129T101500Z-0123abcd)", "and says what an id looks like");
	IS_INT(store_resolve(s, STORE_SNAPSHOTS, ID1, buf, sizeof(buf), &e),
	    -ERR_NOTFOUND, "absent snapshot");
	snprintf(link, sizeof(link), "%s/snapshots/%s", s->root, ID1);
	symlink("/etc", link);
	IS_INT(store_resolve(s, STORE_SNAPSHOTS, ID1, buf, sizeof(buf), &e),
	    -ERR_PERM, "a valid id linking outside the store is refused");
	unlink(link);
	put_snapshot(s, ID1, 10, 1000);
	IS_INT(store_resolve(s, STORE_SNAPSHOTS, ID1, buf, sizeof(buf), &e),
	    0, "a snapshot resolves");
	IS_STR(buf, link, "to its directory");
	IS_INT(store_analysis_path(s, ID1, "../../x", buf, sizeof(buf), &e),
	    -ERR_INVALID, "analysis path escape refused");
	test_derived(s, link);
}

static void
test_json_files(const struct store *s)
{
	char *text = NULL;
	struct error e;

	IS_INT(store_write_json(s, STORE_JOBS, "start-r1", "{\"a\":1}", 7,
	    &e), 0, "atomic write");
	IS_INT(store_read_json(s, STORE_JOBS, "start-r1", &text, &e), 0,
	    "read back");
	IS_STR(text, "{\"a\":1}", "same bytes");
	free(text);
	IS_INT(store_read_json(s, STORE_JOBS, "../x", &text, &e),
	    -ERR_INVALID, "a name with a slash refused");
	IS_INT(store_read_json(s, STORE_JOBS, "nope", &text, &e),
	    -ERR_NOTFOUND, "absent job");
}

static void
collect(const struct store_entry *ent, enum store_pruned what, void *arg)
{
	char *out = arg;

	strcat(out, ent->id + 23);	/* the last two hex digits */
	strcat(out, what == STORE_PRUNE_IN_USE ? "(in use) " : " ");
}

static void
test_sessions_and_prune(const struct store *s)
{
	struct store_prune p = { .max_age_s = -1, .max_count = -1,
		.max_bytes = -1, .keep_newest = -1, .now = 100000 };
	struct store_entry *v;
	char removed[128] = "", sid[STORE_ID_SIZE], rec[128];
	struct error e;
	size_t n;
	int fd;

	put_snapshot(s, ID2, 20, 2000);
	put_snapshot(s, ID3, 30, 3000);
	IS_INT(store_list(s, STORE_SNAPSHOTS, &v, &n, &e), 0, "list");
	IS_INT(n, 3, "three snapshots");
	IS_STR(v[0].id, ID1, "oldest first");
	IS_INT(v[2].bytes, 30, "sizes measured");
	IS_INT(v[1].in_use, 0, "nothing in use");
	free(v);

	STEP(store_id_new(sid, NULL));
	fd = store_session_begin(s, sid, &e);
	OK(fd >= 0, "session begun");
	OK(store_session_live(s, sid), "and live");
	IS_INT(store_session_begin(s, sid, &e), -ERR_EXISTS,
	    "a live session cannot begin twice");
	snprintf(rec, sizeof(rec), "{\"snapshots\":[\"%s\"]}", ID2);
	STEP(store_write_json(s, STORE_SESSIONS, sid, rec, strlen(rec), NULL));
	IS_INT(store_remove(s, STORE_SNAPSHOTS, ID2, &e), -ERR_PERM,
	    "a snapshot in use is not removed");

	p.max_count = 0;
	p.dry_run = 1;
	IS_INT(store_prune(s, &p, collect, removed, &e), 2, "dry run: two");
	IS_STR(removed, "01 02(in use) 03 ", "the ones not in use, and the "
	    "one kept said");
	IS_INT(store_list(s, STORE_SNAPSHOTS, &v, &n, &e), 0, "list");
	IS_INT(n, 3, "dry run removed nothing");
	free(v);

	removed[0] = '\0';
	p.dry_run = 0;
	p.max_count = -1;
	p.max_bytes = 50;
	IS_INT(store_prune(s, &p, collect, removed, &e), 1, "by size: one");
	IS_STR(removed, "01 ", "the oldest goes first");

	store_session_end(s, sid, fd);
	OK(!store_session_live(s, sid), "session ended");
	removed[0] = '\0';
	p.max_bytes = -1;
	/* Age is by creation time: these manifests name none, so the
	 * second each id names (ID2 2026-01-02, ID3 2026-01-03). */
	p.now = 1767398400;		/* 2026-01-03T00:00:00Z */
	p.max_age_s = 43200;		/* half a day */
	IS_INT(store_prune(s, &p, collect, removed, &e), 1, "by age: one");
	IS_STR(removed, "02 ", "the snapshot of 2026-01-02, free again");
	IS_INT(store_list(s, STORE_SNAPSHOTS, &v, &n, &e), 0, "list");
	IS_INT(n, 1, "one left");
	free(v);
}

/*
 * The pruner of test_guard_race, in its own process: prunes everything
 * not in use over and over, and on each byte from cmd does one more whole
 * pass and answers on done, so the parent knows a prune ran after its
 * guard was up.  Ends at cmd's end of file.
 */
static void
pruner(const struct store *s, int cmd, int done)
{
	struct store_prune p = { .max_age_s = -1, .max_count = 0,
		.max_bytes = -1, .keep_newest = -1 };
	struct pollfd pf = { .fd = cmd, .events = POLLIN };
	char c;

	for (;;) {
		if (store_prune(s, &p, NULL, NULL, NULL) < 0)
			_exit(2);
		if (poll(&pf, 1, 0) <= 0)
			continue;
		if (read(cmd, &c, 1) != 1)
			_exit(0);
		if (store_prune(s, &p, NULL, NULL, NULL) < 0 ||
		    write(done, &c, 1) != 1)
			_exit(2);
	}
}

/*
 * A decode's guard against a prune from another process: a guard either
 * comes up with its snapshot there, which then outlives every prune until
 * the guard ends, or says the snapshot is gone.  Never a guard over
 * nothing.
 */
static void
test_guard_race(const char *root)
{
	struct store race, *s = &race;
	enum { ROUNDS = 300 };
	int cmd[2], done[2], status, fd, failed = 0, guarded = 0, gone = 0;
	char sid[STORE_ID_SIZE], gid[STORE_ID_SIZE], dir[PATH_MAX + 64], c;
	struct error e;
	struct stat st;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/race", root);
	if (store_open(s, dir, 1, &e) < 0) {
		OK(0, "a store of its own: %s", e.msg);
		return;
	}
	fd = store_guard_begin(s, "20260201T000000Z-0000ffff",
	    "20260201T000000Z-0000ffff", "decode", &e);
	IS_INT(fd, -ERR_NOTFOUND, "a guard over a snapshot not there fails");
	IS_STR(e.msg, "20260201T000000Z-0000ffff: not in the store",
	    "and says which");
	snprintf(dir, sizeof(dir), "%s/sessions/20260201T000000Z-0000ffff"
	    ".json", s->root);
	OK(stat(dir, &st) < 0, "leaving no record");
	if (pipe(cmd) < 0 || pipe(done) < 0 || (pid = fork()) < 0) {
		OK(0, "setup");
		return;
	}
	if (pid == 0) {
		close(cmd[1]);
		close(done[0]);
		pruner(s, cmd[0], done[1]);
	}
	close(cmd[0]);
	close(done[1]);
	for (int i = 0; i < ROUNDS; i++) {
		snprintf(sid, sizeof(sid), "20260201T000000Z-%08x", i);
		put_snapshot(s, sid, 10, 1000);
		STEP(store_id_new(gid, NULL));
		fd = store_guard_begin(s, gid, sid, "decode", &e);
		if (fd == -ERR_NOTFOUND) {
			gone++;	/* pruned before the guard: told, not lost */
			continue;
		}
		if (fd < 0) {
			failed++;
			continue;
		}
		guarded++;
		c = 'p';
		if (write(cmd[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
			failed++;
		snprintf(dir, sizeof(dir), "%s/snapshots/%s", s->root, sid);
		if (stat(dir, &st) < 0)
			failed++;	/* removed under its guard */
		store_guard_end(s, gid, fd);
	}
	close(cmd[1]);
	close(done[0]);
	waitpid(pid, &status, 0);
	OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the pruner ran "
	    "without an error");
	IS_INT(failed, 0, "no snapshot removed under its guard (%d guarded, "
	    "%d pruned first)", guarded, gone);
	IS_INT(guarded + gone, ROUNDS, "every round counted");
	OK(guarded > 0, "guards came up while the pruner ran");
}

/* A manifest whose member names a file outside: refused, exactly. */
static void
import_refused(const struct store *s, const char *root, const char *text,
    const char *member, const char *what)
{
	char src[PATH_MAX], f[PATH_MAX + 64], want[2 * PATH_MAX];
	char id[STORE_ID_SIZE];
	struct store_entry *v;
	struct error e;
	size_t n = 0;

	snprintf(src, sizeof(src), "%s/planted", root);
	mkdir(src, 0700);
	snprintf(f, sizeof(f), "%s/manifest.json", src);
	put_text(f, text);
	IS_INT(store_import(s, src, 0, id, &e), -ERR_FORMAT, "%s: refused", what);
	snprintf(want, sizeof(want), "%s: %s: not a path inside the snapshot "
	    "directory (absolute, empty or through ..)", f, member);
	IS_STR(e.msg, want, "%s: the message names the manifest and the "
	    "member", what);
	if (store_list(s, STORE_SNAPSHOTS, &v, &n, &e) == 0)
		free(v);
	IS_INT(n, 2, "%s: nothing was imported", what);
}

static void
test_import_planted(const struct store *s, const char *root)
{
	import_refused(s, root, "{\"images\":[{\"archived\":"
	    "\"../../progs/fib\"}]}", "images[0].archived", "../ in an image");
	import_refused(s, root, "{\"images\":[{\"archived\":\"images/a\","
	    "\"debug\":\"/etc/passwd\"}]}", "images[0].debug",
	    "an absolute debug file");
	import_refused(s, root, "{\"jit_maps\":[{\"archived\":\"jit/a\"},"
	    "{\"archived\":\"jit/../../x\"}]}", "jit_maps[1].archived",
	    "../ in a JIT map");
}

static void
test_import(const struct store *s, const char *root)
{
	char src[PATH_MAX], f[PATH_MAX + 64], id[STORE_ID_SIZE];
	struct error e;

	snprintf(src, sizeof(src), "%s/src-%s", root, "x");
	mkdir(src, 0700);
	IS_INT(store_import(s, src, 0, id, &e), -ERR_FORMAT, "no manifest");
	snprintf(f, sizeof(f), "%s/manifest.json", src);
	put_text(f, "{   }");	/* 5 bytes of JSON, members checked below */
	snprintf(f, sizeof(f), "%s/images", src);
	mkdir(f, 0700);
	snprintf(f, sizeof(f), "%s/images/elf", src);
	put_file(f, 7);
	snprintf(f, sizeof(f), "%s/images/alias", src);
	symlink("elf", f);
	IS_INT(store_import(s, src, 0, id, &e), 0, "imported");
	OK(store_id_valid(id), "under a new id");
	snprintf(f, sizeof(f), "%s/images/escape", src);
	symlink("/etc/passwd", f);
	IS_INT(store_import(s, src, 0, id, &e), -ERR_PERM,
	    "a link leaving the snapshot is refused");
	snprintf(f, sizeof(f), "%s/snapshots", s->root);
	{
		struct store_entry *v;
		size_t n;

		STEP(store_list(s, STORE_SNAPSHOTS, &v, &n, &e));
		IS_INT(n, 2, "the refused import left nothing behind");
		IS_INT(n > 1 ? v[1].bytes : 0, 19,
		    "12 bytes plus the followed inner link's 7");
		free(v);
	}
	test_import_planted(s, root);
}

/* A snapshot with a manifest saying when it was made and what ran. */
static void
put_made(const struct store *s, const char *id, const char *prog,
    unsigned long long created_ns)
{
	char dir[PATH_MAX + 64], file[PATH_MAX + 128], text[512];

	snprintf(dir, sizeof(dir), "%s/snapshots/%s", s->root, id);
	mkdir(dir, 0700);
	snprintf(file, sizeof(file), "%s/manifest.json", dir);
	snprintf(text, sizeof(text), "{\"created_wall_ns\":%llu,\"target\":"
	    "{\"argv\":[\"%s\",\"-x\"]},\"trigger\":{\"kind\":\"exit\"}}",
	    created_ns, prog);
	put_text(file, text);
}

/*
 * Creation time, not the id, orders a listing and a prune (ids have a
 * second's resolution; these three were made in one second, the one
 * whose id sorts last first); keep_newest counts per program; ids are
 * all checked before anything goes.
 */
static void
test_prune_by_creation(const char *root)
{
	static const char A[] = "20260105T000000Z-000000aa";
	static const char B[] = "20260105T000000Z-000000bb";
	static const char C[] = "20260105T000000Z-000000cc";
	static const char D[] = "20260105T000000Z-000000dd";
	struct store_prune p = { .max_age_s = -1, .max_count = -1,
		.max_bytes = -1, .keep_newest = -1, .now = 0 };
	const char *ids[2];
	char path[PATH_MAX], removed[128] = "";
	struct store_entry *v;
	struct store st;
	struct error e;
	size_t n;

	snprintf(path, sizeof(path), "%s/bytime", root);
	STEP(store_open(&st, path, 1, NULL));
	put_made(&st, C, "./app", 1767571200000000100ull);
	put_made(&st, A, "./app", 1767571200000000300ull);
	put_made(&st, B, "./other", 1767571200000000200ull);
	put_made(&st, D, "./app", 1767571200000000400ull);
	STEP(store_list(&st, STORE_SNAPSHOTS, &v, &n, &e));
	IS_INT(n, 4, "four listed");
	IS_STR(n == 4 ? v[0].id : "", C, "made first, listed first");
	IS_STR(n == 4 ? v[1].id : "", B, "then by creation time");
	IS_STR(n == 4 ? v[2].brief.program : "", "./app", "program read");
	IS_STR(n == 4 ? v[2].brief.trigger : "", "exit", "trigger read");
	IS_INT(n == 4 ? v[3].created_ns : 0, 1767571200000000400ll,
	    "creation in ns");
	free(v);
	p.keep_newest = 1;
	p.dry_run = 1;
	IS_INT(store_prune(&st, &p, collect, removed, &e), 2,
	    "keep_newest 1: two of ./app would go");
	IS_STR(removed, "cc aa ", "the oldest of ./app, oldest first");
	ids[0] = B;
	ids[1] = "20260105T000000Z-000000ee";
	p.ids = ids;
	p.nr_ids = 2;
	p.keep_newest = -1;
	p.dry_run = 0;
	removed[0] = '\0';
	IS_INT(store_prune(&st, &p, collect, removed, &e), -ERR_NOTFOUND,
	    "an id not in the store");
	IS_STR(e.msg, "20260105T000000Z-000000ee: not in the store",
	    "names it");
	IS_STR(removed, "", "and nothing went");
	p.nr_ids = 1;
	IS_INT(store_prune(&st, &p, collect, removed, &e), 1, "by id: one");
	IS_STR(removed, "bb ", "that one");
	STEP(store_list(&st, STORE_SNAPSHOTS, &v, &n, &e));
	IS_INT(n, 3, "three left");
	free(v);
}

/* Export, then import into another store: the same id, analyses too. */
static void
test_export(const char *root)
{
	static const char X[] = "20260106T000000Z-0000000e";
	char a_path[PATH_MAX], b_path[PATH_MAX], out[PATH_MAX];
	char f[PATH_MAX + 64], id[STORE_ID_SIZE], gid[STORE_ID_SIZE];
	struct store a, b;
	struct error e;
	struct stat sb;

	snprintf(a_path, sizeof(a_path), "%s/exp-a", root);
	snprintf(b_path, sizeof(b_path), "%s/exp-b", root);
	STEP(store_open(&a, a_path, 1, NULL));
	STEP(store_open(&b, b_path, 1, NULL));
	put_made(&a, X, "./app", 1767657600000000000ull);
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived", a.root, X);
	mkdir(f, 0700);
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived/default", a.root, X);
	mkdir(f, 0700);
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived/default/spans.jsonl",
	    a.root, X);
	put_file(f, 5);
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived/.tmp-abc", a.root, X);
	mkdir(f, 0700);
	STEP(store_id_new(gid, NULL));
	snprintf(f, sizeof(f), "%s/out/dir", root);
	IS_INT(store_export(&a, X, gid, f, out, sizeof(out), &e), 0,
	    "exported");
	snprintf(f, sizeof(f), "%s/out/dir/%s", root, X);
	IS_STR(out, f, "to DIR/ID");
	snprintf(f, sizeof(f), "%s/out/dir/%s/derived/.tmp-abc", root, X);
	OK(lstat(f, &sb) < 0, "work in progress left out");
	snprintf(f, sizeof(f), "%s/sessions/%s.json", a.root, gid);
	OK(lstat(f, &sb) < 0, "its guard ended");
	snprintf(f, sizeof(f), "%s/out/dir", root);
	IS_INT(store_export(&a, X, gid, f, b_path, sizeof(b_path), &e),
	    -ERR_EXISTS, "not over an earlier export");
	IS_INT(store_export(&a, "20260106T000000Z-0000000f", gid, f, b_path,
	    sizeof(b_path), &e), -ERR_NOTFOUND, "an id not in the store");
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived/new/deeper", a.root, X);
	IS_INT(store_export(&a, X, gid, f, b_path, sizeof(b_path), &e),
	    -ERR_INVALID, "not into the snapshot itself");
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived/new", a.root, X);
	OK(lstat(f, &sb) < 0, "and nothing made in it");
	IS_INT(store_import(&b, out, 0, id, &e), 0, "imported elsewhere");
	IS_STR(id, X, "under the same id");
	snprintf(f, sizeof(f), "%s/snapshots/%s/derived/default/spans.jsonl",
	    b.root, X);
	OK(stat(f, &sb) == 0 && sb.st_size == 5, "with its analysis");
	IS_INT(store_import(&b, out, 0, id, &e), -ERR_EXISTS,
	    "a second import is refused");
	IS_STR(e.msg, "snapshot 20260106T000000Z-0000000e is already in the "
	    "store", "naming the duplicate");
	IS_INT(store_import(&b, out, 1, id, &e), 0, "unless asked for a new "
	    "id");
	OK(strcmp(id, X) != 0 && store_id_valid(id), "which it gets");
}

/* How many snapshots st lists. */
static size_t
listed(const struct store *st)
{
	struct store_entry *v;
	struct error e;
	size_t n = 0;

	if (store_list(st, STORE_SNAPSHOTS, &v, &n, &e) == 0)
		free(v);
	return n;
}

/*
 * A snapshot's manifest.json that is a link (to a file outside with a
 * program of its own, to one inside) or a FIFO: the listing shows no
 * program and does not wait on the FIFO, no analysis takes the directory
 * for its snapshot, and neither an import nor an export takes it for a
 * snapshot directory.  An alarm ends the test should a FIFO be waited on.
 */
static void
test_manifest_not_regular(const char *root)
{
	static const char OWN[] = "20260107T000000Z-00000001";
	static const char LNK[] = "20260107T000000Z-00000002";
	static const char FIF[] = "20260107T000000Z-00000003";
	char path[PATH_MAX], f[PATH_MAX + 64], out[PATH_MAX];
	char want[2 * PATH_MAX], src[PATH_MAX];
	char id[STORE_ID_SIZE], gid[STORE_ID_SIZE];
	struct store_entry *v;
	struct store st, in;
	struct error e;
	size_t n, i;

	alarm(60);
	snprintf(path, sizeof(path), "%s/notreg", root);
	STEP(store_open(&st, path, 1, NULL));
	snprintf(f, sizeof(f), "%s/planted.json", root);
	put_text(f, "{\"target\":{\"argv\":[\"planted\"]},\"trigger\":"
	    "{\"kind\":\"planted\"},\"created_wall_ns\":1}");
	put_made(&st, OWN, "./app", 1767744000000000000ull);
	put_made(&st, LNK, "./app", 1767744000000000000ull);
	snprintf(f, sizeof(f), "%s/snapshots/%s/manifest.json", st.root, LNK);
	unlink(f);
	snprintf(out, sizeof(out), "%s/planted.json", root);
	STEP(symlink(out, f));
	put_made(&st, FIF, "./app", 1767744000000000000ull);
	snprintf(f, sizeof(f), "%s/snapshots/%s/manifest.json", st.root, FIF);
	unlink(f);
	STEP(mkfifo(f, 0600));

	STEP(store_list(&st, STORE_SNAPSHOTS, &v, &n, &e));
	IS_INT(n, 3, "all three listed");
	for (i = 0; i < n; i++) {
		const char *want_prog = strcmp(v[i].id, OWN) == 0 ? "./app" :
		    "";

		IS_STR(v[i].brief.program, want_prog, "%s: program %s", v[i].id,
		    want_prog[0] ? "read" : "not read through a link or FIFO");
		IS_STR(v[i].brief.trigger, want_prog[0] ? "exit" : "",
		    "%s: and its trigger", v[i].id);
	}
	free(v);

	/* An analysis inside each: only the regular manifest makes SNAP
	 * its source; the others fall back to what the analysis names. */
	for (i = 0; i < 3; i++) {
		const char *sid = i == 0 ? OWN : i == 1 ? LNK : FIF;

		snprintf(f, sizeof(f), "%s/snapshots/%s/derived", st.root, sid);
		mkdir(f, 0700);
		snprintf(f, sizeof(f), "%s/snapshots/%s/derived/default",
		    st.root, sid);
		mkdir(f, 0700);
		IS_INT(store_analysis_source(f, "member", out, sizeof(out),
		    &e), 0, "%s: the source of its analysis", sid);
		snprintf(want, sizeof(want), "%s/snapshots/%s", st.root, sid);
		IS_STR(out, i == 0 ? want : "member", "%s: %s", sid, i == 0 ?
		    "the snapshot it lives in" : "not a snapshot: the member");
	}

	/* Imports: a manifest.json linked inside, outside, or a FIFO. */
	snprintf(path, sizeof(path), "%s/notreg-in", root);
	STEP(store_open(&in, path, 1, NULL));
	snprintf(src, sizeof(src), "%s/src-link", root);
	mkdir(src, 0700);
	snprintf(f, sizeof(f), "%s/real.json", src);
	put_text(f, "{}");
	snprintf(f, sizeof(f), "%s/manifest.json", src);
	STEP(symlink("real.json", f));
	IS_INT(store_import(&in, src, 0, id, &e), -ERR_PERM,
	    "a manifest linked inside: no snapshot");
	snprintf(want, sizeof(want), "%s: manifest.json: a symbolic link on "
	    "the way; links are not followed inside the snapshot directory",
	    src);
	IS_STR(e.msg, want, "said so");
	unlink(f);
	STEP(symlink("/etc/passwd", f));
	IS_INT(store_import(&in, src, 0, id, &e), -ERR_PERM,
	    "a manifest linked outside: no snapshot");
	snprintf(want, sizeof(want), "%s: manifest.json: leads outside the "
	    "snapshot directory", src);
	IS_STR(e.msg, want, "said so, nothing of the file quoted");
	unlink(f);
	STEP(mkfifo(f, 0600));
	IS_INT(store_import(&in, src, 0, id, &e), -ERR_PERM,
	    "a manifest that is a FIFO: no snapshot");
	snprintf(want, sizeof(want), "%s: manifest.json: not a regular file "
	    "(a FIFO, a device?); refused", src);
	IS_STR(e.msg, want, "said so");
	IS_INT(listed(&in), 0, "nothing was imported");

	/* Export reads the snapshot by the same rule. */
	STEP(store_id_new(gid, NULL));
	snprintf(f, sizeof(f), "%s/notreg-out", root);
	IS_INT(store_export(&st, LNK, gid, f, out, sizeof(out), &e),
	    -ERR_PERM, "a snapshot whose manifest is a link is not exported");
	IS_INT(store_export(&st, OWN, gid, f, out, sizeof(out), &e), 0,
	    "its neighbour is");
	IS_INT(store_import(&in, out, 0, id, &e), 0, "and imported");
	IS_INT(listed(&in), 1, "once");
	alarm(0);
}

int
main(void)
{
	char root[] = "/tmp/t_store.XXXXXX";
	struct store s;

	if (mkdtemp(root) == NULL)
		return 1;
	test_ids();
	test_default_path();
	test_open_and_paths(&s, root);
	test_json_files(&s);
	test_sessions_and_prune(&s);
	test_guard_race(root);
	test_import(&s, root);
	test_prune_by_creation(root);
	test_export(root);
	test_manifest_not_regular(root);
	STEP(cleanup_remove_tree(root));
	return tap_done();
}

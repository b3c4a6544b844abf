/* store: see store.h. */
#include "fmt/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/cleanup.h"
#include "base/scratch.h"
#include "base/fdio.h"
#include "base/mkpath.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"

static const char *const area_names[STORE_AREA_COUNT] = {
	"snapshots", "reports", "sessions", "jobs",
};

const char *
store_area_name(enum store_area a)
{
	return (unsigned)a < STORE_AREA_COUNT ? area_names[a] : "?";
}

int
store_default_path(char *buf, size_t size, struct error *e)
{
	const char *v = getenv("PTKIT_STORE"), *home;
	struct passwd *pw;
	int n;

	if (v != NULL && v[0] != '\0')
		n = snprintf(buf, size, "%s", v);
	else if ((v = getenv("XDG_DATA_HOME")) != NULL && v[0] == '/')
		n = snprintf(buf, size, "%s/ptkit", v);
	else {
		home = getenv("HOME");
		if ((home == NULL || home[0] != '/') &&
		    (pw = getpwuid(getuid())) != NULL)
			home = pw->pw_dir;
		if (home == NULL || home[0] != '/')
			return error_set(e, ERR_NOTFOUND, "no home directory; "
			    "set PTKIT_STORE or use --store");
		n = snprintf(buf, size, "%s/.local/share/ptkit", home);
	}
	if (n < 0 || (size_t)n >= size)
		return error_set(e, ERR_RANGE, "store path too long");
	return 0;
}

/* mkdir -p with mode 0700 for every directory it creates. */
static int
make_dirs(const char *path, struct error *e)
{
	char tmp[PATH_MAX];
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return error_set(e, ERR_RANGE, "%s: path too long", path);
	memcpy(tmp, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return error_set_errno(e, errno, "%s", tmp);
		tmp[i] = path[i];
	}
	return 0;
}

static int
check_owned_dir(const char *path, struct error *e)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "%s: no store here", path) :
		    error_set_errno(e, errno, "%s", path);
	if (!S_ISDIR(st.st_mode))
		return error_set(e, ERR_PERM, "%s: not a directory", path);
	if (st.st_uid != getuid())
		return error_set(e, ERR_PERM, "%s: owned by uid %u, not by us: "
		    "a store is its user's alone", path, (unsigned)st.st_uid);
	/* Snapshots hold program memory images: nobody else reads them. */
	if ((st.st_mode & 077) != 0 && chmod(path, 0700) < 0)
		return error_set_errno(e, errno, "%s: chmod 0700", path);
	return 0;
}

int
store_open(struct store *s, const char *path, int create, struct error *e)
{
	char def[PATH_MAX], sub[PATH_MAX];
	struct stat st;
	int rc, i, n;

	if (path == NULL) {
		if ((rc = store_default_path(def, sizeof(def), e)) < 0)
			return rc;
		path = def;
	}
	if (create && (rc = make_dirs(path, e)) < 0)
		return rc;
	if ((rc = check_owned_dir(path, e)) < 0)
		return rc;
	if (realpath(path, s->root) == NULL)
		return error_set_errno(e, errno, "%s", path);
	for (i = 0; i < STORE_AREA_COUNT; i++) {
		n = snprintf(sub, sizeof(sub), "%s/%s", s->root, area_names[i]);
		if (n < 0 || (size_t)n >= sizeof(sub))
			return error_set(e, ERR_RANGE, "%s: path too long",
			    s->root);
		if (create && mkdir(sub, 0700) < 0 && errno != EEXIST)
			return error_set_errno(e, errno, "%s", sub);
		/* each area is the user's alone too, whoever made it */
		if (lstat(sub, &st) == 0 && !S_ISDIR(st.st_mode))
			return error_set(e, ERR_PERM, "%s: not a directory of "
			    "the store (a link?); refused", sub);
		if ((rc = check_owned_dir(sub, e)) < 0 &&
		    (create || rc != -ERR_NOTFOUND))
			return rc;
	}
	return 0;
}

int
store_id_make(char *buf, size_t size, time_t t, struct error *e)
{
	char tmp[64];
	uint32_t r;
	struct tm tm;

	if (size < STORE_ID_SIZE)
		return error_set(e, ERR_RANGE, "id buffer too small");
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return error_set_errno(e, errno, "getrandom");
	if (gmtime_r(&t, &tm) == NULL)
		return error_set(e, ERR_RANGE, "the clock is out of range");
	if (tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0 ||
	    strftime(tmp, sizeof(tmp), "%Y%m%dT%H%M%SZ", &tm) != 16)
		return error_set(e, ERR_RANGE, "the clock is out of range");
	snprintf(tmp + 16, sizeof(tmp) - 16, "-%08x", (unsigned)r);
	memcpy(buf, tmp, STORE_ID_SIZE);
	return 0;
}

int
store_id_new(char id[STORE_ID_SIZE], struct error *e)
{
	return store_id_make(id, STORE_ID_SIZE, time(NULL), e);
}

static int
all_in(const char *s, size_t n, const char *set)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '\0' || strchr(set, s[i]) == NULL)
			return 0;
	return 1;
}

int
store_id_valid(const char *id)
{
	static const char digits[] = "0123456789";

	if (id == NULL || strlen(id) != STORE_ID_SIZE - 1)
		return 0;
	return all_in(id, 8, digits) && id[8] == 'T' &&
	    all_in(id + 9, 6, digits) && id[15] == 'Z' && id[16] == '-' &&
	    all_in(id + 17, 8, "0123456789abcdef");
}

int
store_analysis_id_valid(const char *id)
{
	size_t n;

	if (id == NULL)
		return 0;
	n = strlen(id);
	return n >= 1 && n <= 64 && all_in(id, n,
	    "abcdefghijklmnopqrstuvwxyz0123456789");
}

int
store_name_valid(const char *name)
{
	size_t n;

	if (name == NULL)
		return 0;
	n = strlen(name);
	return n >= 1 && n <= STORE_NAME_MAX && name[0] != '.' &&
	    all_in(name, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._-");
}

static int
fmt_path(char *buf, size_t size, struct error *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
fmt_path(char *buf, size_t size, struct error *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		return error_set(e, ERR_RANGE, "path too long");
	return 0;
}

int
store_path(const struct store *s, enum store_area a, const char *id,
    char *buf, size_t size, struct error *e)
{
	if ((unsigned)a >= STORE_AREA_COUNT)
		return error_set(e, ERR_INVALID, "no such store area");
	if (a == STORE_JOBS ? !store_name_valid(id) : !store_id_valid(id))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid id "
		    "(ids look like 20261129T101500Z-0123abcd)", id);
	if (a == STORE_SNAPSHOTS)
		return fmt_path(buf, size, e, "%s/%s/%s", s->root,
		    area_names[a], id);
	return fmt_path(buf, size, e, "%s/%s/%s.json", s->root,
	    area_names[a], id);
}

int
store_snapshots_dir(const char *root, char *buf, size_t size,
    struct error *e)
{
	int n = snprintf(buf, size, "%s/%s", root, area_names[STORE_SNAPSHOTS]);

	if (n < 0 || (size_t)n >= size)
		return error_set(e, ERR_RANGE, "%s: path too long", root);
	return 0;
}

int
store_beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return n > 0 && strncmp(path, dir, n) == 0 && path[n] == '/' &&
	    path[n + 1] != '\0';
}

int
store_resolve(const struct store *s, enum store_area a, const char *id,
    char *buf, size_t size, struct error *e)
{
	char path[PATH_MAX], real[PATH_MAX], area[PATH_MAX];
	size_t n;
	int rc;

	if ((rc = store_path(s, a, id, path, sizeof(path), e)) < 0)
		return rc;
	if (realpath(path, real) == NULL)
		return errno == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "%s: not in the store", id) :
		    error_set_errno(e, errno, "%s", path);
	if ((rc = fmt_path(area, sizeof(area), e, "%s/%s", s->root,
	    area_names[a])) < 0)
		return rc;
	n = strlen(area);
	/* An entry is a name directly in its area, never deeper. */
	if (!store_beneath(real, area) || strchr(real + n + 1, '/') != NULL)
		return error_set(e, ERR_PERM, "%s: resolves outside the store",
		    id);
	return fmt_path(buf, size, e, "%s", real);
}

static int
check_ids(const char *sid, const char *aid, struct error *e)
{
	if (!store_id_valid(sid))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid "
		    "snapshot id", sid);
	if (aid != NULL && !store_analysis_id_valid(aid))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid "
		    "analysis id", aid);
	return 0;
}

int
store_analysis_path(const struct store *s, const char *sid, const char *aid,
    char *buf, size_t size, struct error *e)
{
	int rc;

	if ((rc = check_ids(sid, aid, e)) < 0)
		return rc;
	return fmt_path(buf, size, e, "%s/snapshots/%s/derived/%s", s->root,
	    sid, aid);
}

int
store_derived_path(const struct store *s, const char *sid, char *buf,
    size_t size, struct error *e)
{
	int rc;

	if ((rc = check_ids(sid, NULL, e)) < 0)
		return rc;
	return fmt_path(buf, size, e, "%s/snapshots/%s/derived", s->root,
	    sid);
}

int
store_resolve_analysis(const struct store *s, const char *sid,
    const char *aid, char *buf, size_t size, struct error *e)
{
	char snap[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
	int rc;

	if ((rc = store_resolve(s, STORE_SNAPSHOTS, sid, snap, sizeof(snap),
	    e)) < 0 ||
	    (rc = store_analysis_path(s, sid, aid, path, sizeof(path), e)) < 0)
		return rc;
	if (realpath(path, real) == NULL)
		return error_set(e, ERR_NOTFOUND, "snapshot %s has no analysis "
		    "'%s'", sid, aid);
	if (!store_beneath(real, snap))
		return error_set(e, ERR_PERM, "analysis %s of %s resolves "
		    "outside the store", aid, sid);
	return fmt_path(buf, size, e, "%s", real);
}

int
store_snapshot_derived(const char *snap, char *buf, size_t size,
    struct error *e)
{
	return fmt_path(buf, size, e, "%s/derived", snap);
}

int
store_derived_make(const char *snap, char *buf, size_t size,
    struct error *e)
{
	struct stat st;
	int rc;

	if ((rc = store_snapshot_derived(snap, buf, size, e)) < 0)
		return rc;
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return error_set_errno(e, errno, "%s", buf);
	if (lstat(buf, &st) < 0)
		return error_set_errno(e, errno, "%s", buf);
	if (!S_ISDIR(st.st_mode))
		return error_set(e, ERR_PERM, "%s: not a directory of the "
		    "snapshot (a link?); refused", buf);
	return 0;
}

int
store_analysis_tmp(const char *snap, char *buf, size_t size,
    struct error *e)
{
	return fmt_path(buf, size, e, "%s/derived/.tmp-XXXXXX", snap);
}

int
store_analysis_snapshot(const char *adir, char *buf, size_t size,
    struct error *e)
{
	return fmt_path(buf, size, e, "%s/../..", adir);
}

int
store_analysis_source(const char *adir, const char *member, char *buf,
    size_t size, struct error *e)
{
	char real[PATH_MAX], *slash;
	const char *snap;
	int fd;

	if (realpath(adir, real) != NULL &&
	    (slash = strrchr(real, '/')) != NULL && slash > real) {
		*slash = '\0';		/* SNAP/derived */
		slash = strrchr(real, '/');
		if (slash != NULL && strcmp(slash + 1, "derived") == 0) {
			*slash = '\0';	/* SNAP */
			snap = real[0] != '\0' ? real : "/";
			/* Its manifest as every reader opens it: a link or
			 * a FIFO planted there makes no snapshot of SNAP. */
			fd = snapshot_member_open(snap, SNAPSHOT_MANIFEST, NULL);
			if (fd >= 0) {
				close(fd);
				return fmt_path(buf, size, e, "%s", snap);
			}
		}
	}
	return fmt_path(buf, size, e, "%s", member);
}

int
store_snapshot_analysis(const char *snap, const char *aid, char *buf,
    size_t size, struct error *e)
{
	if (!store_analysis_id_valid(aid))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid "
		    "analysis id", aid);
	return fmt_path(buf, size, e, "%s/derived/%s", snap, aid);
}

int
store_lock(const struct store *s, int exclusive, struct error *e)
{
	char path[PATH_MAX];
	int fd, rc;

	if ((rc = fmt_path(path, sizeof(path), e, "%s/.lock", s->root)) < 0)
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(e, errno, "%s", path);
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		if (errno != EINTR) {
			rc = error_set_errno(e, errno, "%s: lock", path);
			close(fd);
			return rc;
		}
	}
	return fd;
}

void
store_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}


int
store_write_json(const struct store *s, enum store_area a, const char *name,
    const char *data, size_t len, struct error *e)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, rc;

	if (!store_name_valid(name) || a == STORE_SNAPSHOTS ||
	    (unsigned)a >= STORE_AREA_COUNT)
		return error_set(e, ERR_INVALID, "'%.80s': not a valid name",
		    name);
	if ((rc = fmt_path(path, sizeof(path), e, "%s/%s/%s.json", s->root,
	    area_names[a], name)) < 0 ||
	    (rc = fmt_path(tmp, sizeof(tmp), e, "%s/%s/.%s.XXXXXX", s->root,
	    area_names[a], name)) < 0)
		return rc;
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", tmp);
	if (fdio_write_full(fd, data, len) < 0 || fsync(fd) < 0) {
		rc = error_set_errno(e, errno, "%s", tmp);
		close(fd);
		unlink(tmp);
		return rc;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		rc = error_set_errno(e, errno, "%s", path);
		unlink(tmp);
		return rc;
	}
	return 0;
}

int
store_read_json(const struct store *s, enum store_area a, const char *name,
    char **out, struct error *e)
{
	char path[PATH_MAX], *buf;
	struct stat st;
	ssize_t n;
	int fd, rc;

	*out = NULL;
	if (!store_name_valid(name) || (unsigned)a >= STORE_AREA_COUNT)
		return error_set(e, ERR_INVALID, "'%.80s': not a valid name",
		    name);
	if ((rc = fmt_path(path, sizeof(path), e, "%s/%s/%s.json", s->root,
	    area_names[a], name)) < 0)
		return rc;
	/* O_NONBLOCK: a FIFO planted here must not hang the open */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "%s: not in the store", name) :
		    error_set_errno(e, errno, "%s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > (1 << 20)) {
		close(fd);
		return error_set(e, ERR_RANGE, "%s: not a file of at most "
		    "1 MiB", path);
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return error_set(e, ERR_NOMEM, "out of memory");
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n < 0) {
		free(buf);
		return error_set_errno(e, errno, "%s", path);
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

static int
session_lock_path(const struct store *s, const char *id, char *buf,
    size_t size, struct error *e)
{
	if (!store_id_valid(id))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid "
		    "session id", id);
	return fmt_path(buf, size, e, "%s/sessions/%s.lock", s->root, id);
}

int
store_session_begin(const struct store *s, const char *id, struct error *e)
{
	char path[PATH_MAX];
	int fd, rc;

	if ((rc = session_lock_path(s, id, path, sizeof(path), e)) < 0)
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_set_errno(e, errno, "%s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? error_set(e, ERR_EXISTS,
		    "session %s is already live", id) :
		    error_set_errno(e, errno, "%s", path);
		close(fd);
		return rc;
	}
	return fd;
}

void
store_session_end(const struct store *s, const char *id, int fd)
{
	char path[PATH_MAX];

	if (session_lock_path(s, id, path, sizeof(path), NULL) == 0)
		unlink(path);
	if (fd >= 0)
		close(fd);
}

int
store_session_live(const struct store *s, const char *id)
{
	char path[PATH_MAX];
	int fd, live;

	if (session_lock_path(s, id, path, sizeof(path), NULL) < 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	live = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return live;
}

int
store_guard_begin(const struct store *s, const char *gid, const char *sid,
    const char *kind, struct error *e)
{
	char snap[PATH_MAX], *text;
	json_t *rec;
	int lock, fd, rc;

	if (!store_id_valid(sid))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid id",
		    sid);
	rec = json_pack("{s:[s],s:s,s:s,s:I}", "snapshots", sid, "state",
	    "running", "kind", kind, "pid", (json_int_t)getpid());
	text = rec != NULL ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	if (text == NULL)
		return error_set(e, ERR_NOMEM, "session record");
	/*
	 * Under the shared store lock, so no prune (which holds it
	 * exclusive from reading the sessions to the last removal) sees
	 * the lock without its record, or the snapshot unguarded after
	 * the check below.
	 */
	/* A store made before sessions/ was one of its areas gets it now. */
	if ((rc = fmt_path(snap, sizeof(snap), e, "%s/sessions", s->root)) < 0 ||
	    (mkdir(snap, 0700) < 0 && errno != EEXIST &&
	    (rc = error_set_errno(e, errno, "%s", snap)) < 0)) {
		free(text);
		return rc;
	}
	if ((lock = store_lock(s, 0, e)) < 0) {
		free(text);
		return lock;
	}
	if ((fd = store_session_begin(s, gid, e)) >= 0 &&
	    ((rc = store_write_json(s, STORE_SESSIONS, gid, text,
	    strlen(text), e)) < 0 ||
	    (rc = store_resolve(s, STORE_SNAPSHOTS, sid, snap, sizeof(snap),
	    e)) < 0)) {
		store_guard_end(s, gid, fd);
		fd = rc;
	}
	store_unlock(lock);
	free(text);
	return fd;
}

void
store_guard_end(const struct store *s, const char *gid, int fd)
{
	char rec[PATH_MAX];

	if (fd < 0)
		return;
	store_session_end(s, gid, fd);
	if (fmt_path(rec, sizeof(rec), NULL, "%s/sessions/%s.json", s->root,
	    gid) == 0)
		unlink(rec);
}

/* 1 when pid names no process (a pid that is not a number: gone too). */
static int
pid_gone(const json_t *pid)
{
	json_int_t v = json_is_integer(pid) ? json_integer_value(pid) : 0;

	return v <= 1 || v > INT_MAX || (kill((pid_t)v, 0) < 0 &&
	    errno == ESRCH);
}

/* A record of sessions/ whose process is gone: removed or marked. */
static void
sweep_record(const struct store *s, const char *sid,
    struct store_swept *out)
{
	char *text, path[PATH_MAX], msg[96];
	json_t *rec;
	const char *state;

	if (store_session_live(s, sid) ||
	    store_read_json(s, STORE_SESSIONS, sid, &text, NULL) < 0)
		return;
	rec = json_loads(text, 0, NULL);
	free(text);
	state = json_string_value(json_object_get(rec, "state"));
	if (rec == NULL || state == NULL || strcmp(state, "running") != 0 ||
	    !pid_gone(json_object_get(rec, "pid"))) {
		json_decref(rec);
		return;
	}
	if (json_object_get(rec, "kind") != NULL) {
		/* a guard: its job is over */
		if (fmt_path(path, sizeof(path), NULL, "%s/sessions/%s.json",
		    s->root, sid) == 0 && unlink(path) == 0)
			out->records++;
	} else {
		snprintf(msg, sizeof(msg), "the ptmcp that ran it, pid %lld, "
		    "died", (long long)json_integer_value(json_object_get(rec,
		    "pid")));
		json_object_set_new(rec, "state", json_string("failed"));
		json_object_set_new(rec, "error", json_string(msg));
		text = json_dumps(rec, JSON_COMPACT);
		if (text != NULL && store_write_json(s, STORE_SESSIONS, sid,
		    text, strlen(text), NULL) == 0)
			out->sessions++;
		free(text);
	}
	json_decref(rec);
}

/* A lock file nobody holds, made more than a minute ago. */
static void
sweep_lock(const struct store *s, const char *name, struct store_swept *out)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (fmt_path(path, sizeof(path), NULL, "%s/sessions/%s", s->root,
	    name) < 0 || lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    time(NULL) - st.st_mtime < 60)
		return;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(path) == 0)
		out->locks++;
	close(fd);
}

static void
sweep_sessions(const struct store *s, struct store_swept *out)
{
	char dir[PATH_MAX], sid[STORE_ID_SIZE];
	struct dirent *d;
	size_t len;
	DIR *dp;

	if (fmt_path(dir, sizeof(dir), NULL, "%s/sessions", s->root) < 0 ||
	    (dp = opendir(dir)) == NULL)
		return;
	while ((d = readdir(dp)) != NULL) {
		len = strlen(d->d_name);
		if (len != STORE_ID_SIZE - 1 + 5)
			continue;
		memcpy(sid, d->d_name, STORE_ID_SIZE - 1);
		sid[STORE_ID_SIZE - 1] = '\0';
		if (!store_id_valid(sid))
			continue;
		if (strcmp(d->d_name + STORE_ID_SIZE - 1, ".json") == 0)
			sweep_record(s, sid, out);
		else if (strcmp(d->d_name + STORE_ID_SIZE - 1, ".lock") == 0)
			sweep_lock(s, d->d_name, out);
	}
	closedir(dp);
}

int
store_sweep(const struct store *s, struct store_swept *out, struct error *e)
{
	char dir[PATH_MAX], derived[PATH_MAX];
	struct dirent *d;
	DIR *dp;
	int lock;

	memset(out, 0, sizeof(*out));
	if ((lock = store_lock(s, 1, e)) < 0)
		return lock;
	if (fmt_path(dir, sizeof(dir), e, "%s/snapshots", s->root) == 0 &&
	    (dp = opendir(dir)) != NULL) {
		out->tmp_dirs += scratch_sweep_dead(dir, ".import-");
		while ((d = readdir(dp)) != NULL)
			if (store_id_valid(d->d_name) &&
			    fmt_path(derived, sizeof(derived), NULL,
			    "%s/%s/derived", dir, d->d_name) == 0)
				out->tmp_dirs += scratch_sweep_dead(derived,
				    ".tmp-");
		closedir(dp);
	}
	sweep_sessions(s, out);
	store_unlock(lock);
	return 0;
}

/* What live sessions protect: named snapshots, and all from `since` on. */
struct protection {
	char (*ids)[STORE_ID_SIZE];
	size_t n, cap;
	char since[STORE_ID_SIZE];	/* "" when none */
};

static int
protect_id(struct protection *p, const char *id)
{
	void *grown;

	if (!store_id_valid(id))
		return 0;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		if ((grown = realloc(p->ids, p->cap * sizeof(*p->ids))) == NULL)
			return -ERR_NOMEM;
		p->ids = grown;
	}
	memcpy(p->ids[p->n++], id, STORE_ID_SIZE);
	return 0;
}

static int
protect_session(const struct store *s, const char *sid,
    struct protection *p)
{
	char *text;
	json_t *root, *snaps, *since, *v;
	size_t i;
	int rc = 0;

	if (!store_session_live(s, sid))
		return 0;
	if (store_read_json(s, STORE_SESSIONS, sid, &text, NULL) < 0)
		return 0;
	root = json_loads(text, 0, NULL);
	free(text);
	if (root == NULL)
		return 0;
	snaps = json_object_get(root, "snapshots");
	json_array_foreach(snaps, i, v)
		if (rc == 0 && json_is_string(v))
			rc = protect_id(p, json_string_value(v));
	since = json_object_get(root, "since");
	if (json_is_string(since) && store_id_valid(json_string_value(since)) &&
	    (p->since[0] == '\0' ||
	    strcmp(json_string_value(since), p->since) < 0))
		memcpy(p->since, json_string_value(since), STORE_ID_SIZE);
	json_decref(root);
	return rc;
}

/* Reads every live session's protection. */
static int
protection_load(const struct store *s, struct protection *p,
    struct error *e)
{
	char dir[PATH_MAX], sid[STORE_ID_SIZE];
	struct dirent *d;
	size_t len;
	DIR *dp;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	if ((rc = fmt_path(dir, sizeof(dir), e, "%s/sessions", s->root)) < 0)
		return rc;
	if ((dp = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : error_set_errno(e, errno, "%s", dir);
	while (rc == 0 && (d = readdir(dp)) != NULL) {
		len = strlen(d->d_name);
		if (len != STORE_ID_SIZE - 1 + 5 ||
		    strcmp(d->d_name + STORE_ID_SIZE - 1, ".json") != 0)
			continue;
		memcpy(sid, d->d_name, STORE_ID_SIZE - 1);
		sid[STORE_ID_SIZE - 1] = '\0';
		if (store_id_valid(sid))
			rc = protect_session(s, sid, p);
	}
	closedir(dp);
	if (rc < 0)
		return error_set(e, ERR_NOMEM, "out of memory");
	return 0;
}

static int
protected(const struct protection *p, const char *id)
{
	size_t i;

	if (p->since[0] != '\0' && strcmp(id, p->since) >= 0)
		return 1;
	for (i = 0; i < p->n; i++)
		if (strcmp(p->ids[i], id) == 0)
			return 1;
	return 0;
}

static int
du_fd(int dirfd, uint64_t *bytes, int depth)
{
	struct dirent *d;
	struct stat st;
	DIR *dp;
	int fd, rc = 0;

	if (depth > 64 || (dp = fdopendir(dirfd)) == NULL) {
		close(dirfd);
		return -1;
	}
	while (rc == 0 && (d = readdir(dp)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* removed meanwhile */
		if (S_ISREG(st.st_mode))
			*bytes += (uint64_t)st.st_size;
		else if (S_ISDIR(st.st_mode)) {
			fd = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				rc = du_fd(fd, bytes, depth + 1);
		}
	}
	closedir(dp);
	return rc;
}

int
store_du(const char *path, uint64_t *bytes, struct error *e)
{
	struct stat st;
	int fd;

	*bytes = 0;
	if (lstat(path, &st) < 0)
		return error_set_errno(e, errno, "%s", path);
	if (S_ISREG(st.st_mode)) {
		*bytes = (uint64_t)st.st_size;
		return 0;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return error_set_errno(e, errno, "%s", path);
	if (du_fd(fd, bytes, 0) < 0)
		return error_set(e, ERR_IO, "%s: cannot measure", path);
	return 0;
}

/* Oldest first: by creation time, then by id (the same second). */
static int
entry_cmp(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;

	if (x->created_ns != y->created_ns)
		return x->created_ns < y->created_ns ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* The second id was made in (its YYYYmmddTHHMMSSZ), as ns. */
static int64_t
id_created_ns(const char *id)
{
	struct tm tm;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(id, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if ((t = timegm(&tm)) == (time_t)-1 || t < 0)
		return 0;
	return (int64_t)t * 1000000000;
}

/* What the manifest of snapshot directory path says of it, for a list. */
static void
entry_describe(const char *path, struct store_entry *ent)
{
	struct error e;

	ent->created_ns = id_created_ns(ent->id);
	/* Beneath the snapshot: a manifest.json that is a link or a FIFO
	 * is neither followed nor waited on, and the entry shows none. */
	if (snapshot_read_manifest_brief(path, &ent->brief, &e) < 0) {
		memset(&ent->brief, 0, sizeof(ent->brief));
		return;
	}
	if (ent->brief.created_wall_ns > 0 &&
	    ent->brief.created_wall_ns <= INT64_MAX)
		ent->created_ns = (int64_t)ent->brief.created_wall_ns;
}

/* The id of a directory entry of area a, or 0 when it is not one. */
static int
entry_id(enum store_area a, const char *name, char id[STORE_ID_SIZE])
{
	size_t len = strlen(name);

	if (a == STORE_SNAPSHOTS) {
		if (len != STORE_ID_SIZE - 1)
			return 0;
	} else if (len != STORE_ID_SIZE - 1 + 5 ||
	    strcmp(name + STORE_ID_SIZE - 1, ".json") != 0)
		return 0;
	memcpy(id, name, STORE_ID_SIZE - 1);
	id[STORE_ID_SIZE - 1] = '\0';
	return store_id_valid(id);
}

static int
list_add(struct store_entry **v, size_t *n, size_t *cap,
    const struct store_entry *ent)
{
	void *grown;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		if ((grown = realloc(*v, *cap * sizeof(**v))) == NULL)
			return -ERR_NOMEM;
		*v = grown;
	}
	(*v)[(*n)++] = *ent;
	return 0;
}

static int
list_read(const struct store *s, enum store_area a,
    const struct protection *prot, struct store_entry **out, size_t *n,
    struct error *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct store_entry ent;
	struct dirent *d;
	struct stat st;
	size_t cap = 0;
	DIR *dp;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = fmt_path(dir, sizeof(dir), e, "%s/%s", s->root,
	    area_names[a])) < 0)
		return rc;
	if ((dp = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : error_set_errno(e, errno, "%s", dir);
	while ((d = readdir(dp)) != NULL) {
		memset(&ent, 0, sizeof(ent));
		if (!entry_id(a, d->d_name, ent.id) ||
		    fmt_path(path, sizeof(path), NULL, "%s/%s", dir,
		    d->d_name) < 0 || lstat(path, &st) < 0)
			continue;
		if (a == STORE_SNAPSHOTS ? !S_ISDIR(st.st_mode) :
		    !S_ISREG(st.st_mode))
			continue;	/* a link or a stray: never listed */
		ent.mtime = st.st_mtime;
		if (store_du(path, &ent.bytes, NULL) < 0)
			continue;
		if (a == STORE_SNAPSHOTS)
			entry_describe(path, &ent);
		else
			ent.created_ns = id_created_ns(ent.id);
		ent.in_use = a == STORE_SNAPSHOTS && protected(prot, ent.id);
		if (list_add(out, n, &cap, &ent) < 0) {
			closedir(dp);
			free(*out);
			*out = NULL;
			*n = 0;
			return error_set(e, ERR_NOMEM, "out of memory");
		}
	}
	closedir(dp);
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), entry_cmp);
	return 0;
}

int
store_list(const struct store *s, enum store_area a,
    struct store_entry **out, size_t *n, struct error *e)
{
	struct protection prot;
	int rc;

	if ((unsigned)a >= STORE_AREA_COUNT)
		return error_set(e, ERR_INVALID, "no such store area");
	if ((rc = protection_load(s, &prot, e)) < 0)
		return rc;
	rc = list_read(s, a, &prot, out, n, e);
	free(prot.ids);
	return rc;
}

void
store_time_iso(int64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char day[24];

	if (ns < 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, size, "%s", "");
		return;
	}
	snprintf(buf, size, "%s.%03dZ", day, (int)(ns / 1000000 % 1000));
}

static int
analysis_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_analysis *)a)->id,
	    ((const struct store_analysis *)b)->id);
}

int
store_list_analyses(const struct store *s, const char *sid,
    struct store_analysis **out, size_t *n, struct error *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct store_analysis *v = NULL;
	struct dirent *d;
	struct stat st;
	size_t cap = 0;
	void *grown;
	DIR *dp;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = store_derived_path(s, sid, dir, sizeof(dir), e)) < 0)
		return rc;
	if ((dp = opendir(dir)) == NULL)
		return errno == ENOENT || errno == ENOTDIR ? 0 :
		    error_set_errno(e, errno, "%s", sid);
	while ((d = readdir(dp)) != NULL) {
		size_t len = strlen(d->d_name);

		if (len >= sizeof(v[0].id) ||
		    !store_analysis_id_valid(d->d_name) ||
		    fmt_path(path, sizeof(path), NULL, "%s/%s", dir,
		    d->d_name) < 0 || lstat(path, &st) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 4;
			if ((grown = realloc(v, cap * sizeof(*v))) == NULL) {
				closedir(dp);
				free(v);
				*n = 0;
				return error_set(e, ERR_NOMEM, "out of memory");
			}
			v = grown;
		}
		memcpy(v[*n].id, d->d_name, len + 1);	/* fits: checked */
		if (store_du(path, &v[*n].bytes, NULL) < 0)
			v[*n].bytes = 0;
		(*n)++;
	}
	closedir(dp);
	if (*n > 1)
		qsort(v, *n, sizeof(*v), analysis_cmp);
	*out = v;
	return 0;
}

/* Renames the entry out of sight, then deletes it.  Lock held. */
static int
remove_locked(const struct store *s, enum store_area a, const char *id,
    struct error *e)
{
	char path[PATH_MAX], trash[PATH_MAX];
	int rc;

	if ((rc = store_path(s, a, id, path, sizeof(path), e)) < 0)
		return rc;
	if ((rc = fmt_path(trash, sizeof(trash), e, "%s/%s/.trash-%s-%ld",
	    s->root, area_names[a], id, (long)getpid())) < 0)
		return rc;
	if (rename(path, trash) < 0)
		return errno == ENOENT ? error_set(e, ERR_NOTFOUND,
		    "%s: not in the store", id) :
		    error_set_errno(e, errno, "%s", path);
	if (cleanup_remove_tree(trash) < 0)
		return error_set(e, ERR_IO, "%s: could not remove all of it",
		    trash);
	return 0;
}

int
store_remove(const struct store *s, enum store_area a, const char *id,
    struct error *e)
{
	struct protection prot;
	int lock, rc;

	if (a != STORE_SNAPSHOTS && a != STORE_REPORTS)
		return error_set(e, ERR_INVALID, "only snapshots and reports "
		    "are removed");
	if (!store_id_valid(id))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid id",
		    id);
	if ((lock = store_lock(s, 1, e)) < 0)
		return lock;
	rc = protection_load(s, &prot, e);
	if (rc == 0 && a == STORE_SNAPSHOTS && protected(&prot, id))
		rc = error_set(e, ERR_PERM, "%s: in use by a live session", id);
	if (rc == 0)
		rc = remove_locked(s, a, id, e);
	free(prot.ids);
	store_unlock(lock);
	return rc;
}

/* Whether ent, of the entries kept_after newer ones, breaks a limit. */
static int
over_limit(const struct store_prune *p, const struct store_entry *ent,
    size_t kept_after, uint64_t bytes_total, size_t kept_after_program)
{
	if (p->max_age_s >= 0 &&
	    p->now - ent->created_ns / 1000000000 > p->max_age_s)
		return 1;
	if (p->max_count >= 0 && kept_after >= (uint64_t)p->max_count)
		return 1;
	if (p->max_bytes >= 0 && bytes_total > (uint64_t)p->max_bytes)
		return 1;
	if (p->keep_newest >= 0 &&
	    kept_after_program >= (uint64_t)p->keep_newest)
		return 1;
	return 0;
}

/* Entries i+1.. still kept that record the same program as v[i]. */
static size_t
newer_of_program(const struct store_entry *v, const char *gone, size_t n,
    size_t i)
{
	size_t k, count = 0;

	for (k = i + 1; k < n; k++)
		if (gone[k] != 1 && strcmp(v[k].brief.program,
		    v[i].brief.program) == 0)
			count++;
	return count;
}

/* The index of id in v, or n. */
static size_t
entry_find(const struct store_entry *v, size_t n, const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].id, id) == 0)
			return i;
	return n;
}

/* Removes v[i] (unless dry_run) and tells cb. */
static int
prune_one(const struct store *s, const struct store_prune *p,
    const struct store_entry *ent,
    void (*cb)(const struct store_entry *, enum store_pruned, void *),
    void *arg, struct error *e)
{
	int rc;

	if (ent->in_use) {
		if (cb != NULL)
			cb(ent, STORE_PRUNE_IN_USE, arg);
		return 0;
	}
	if (!p->dry_run && (rc = remove_locked(s, STORE_SNAPSHOTS, ent->id,
	    e)) < 0)
		return rc;
	if (cb != NULL)
		cb(ent, STORE_PRUNE_REMOVED, arg);
	return 1;
}

int
store_prune(const struct store *s, const struct store_prune *p,
    void (*cb)(const struct store_entry *ent, enum store_pruned what,
    void *arg), void *arg, struct error *e)
{
	struct protection prot;
	struct store_entry *v = NULL;
	uint64_t total = 0;
	size_t n = 0, i, k, live = 0;
	char *gone = NULL;
	int lock, rc, count = 0;

	for (k = 0; k < p->nr_ids; k++)
		if (!store_id_valid(p->ids[k]))
			return error_set(e, ERR_INVALID, "'%.80s' is not a "
			    "valid id", p->ids[k]);
	if ((lock = store_lock(s, 1, e)) < 0)
		return lock;
	if ((rc = protection_load(s, &prot, e)) < 0 ||
	    (rc = list_read(s, STORE_SNAPSHOTS, &prot, &v, &n, e)) < 0)
		goto out;
	/* Every id is checked before anything goes. */
	for (k = 0; k < p->nr_ids && rc == 0; k++)
		if (entry_find(v, n, p->ids[k]) == n)
			rc = error_set(e, ERR_NOTFOUND, "%s: not in the store",
			    p->ids[k]);
	if (rc < 0 || (n > 0 && (gone = calloc(n, 1)) == NULL)) {
		rc = rc < 0 ? rc : error_set(e, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		total += v[i].bytes;
	live = n;
	for (k = 0; k < p->nr_ids && rc >= 0; k++) {
		i = entry_find(v, n, p->ids[k]);
		if (gone[i] || (rc = prune_one(s, p, &v[i], cb, arg, e)) < 0)
			continue;
		gone[i] = rc == 1 ? 1 : 2;	/* 2: kept, said in use */
		if (rc == 0)
			continue;
		live--;
		total -= v[i].bytes;
		count++;
	}
	/* Oldest first: count limits keep the newest. */
	for (i = 0; i < n && rc >= 0; i++) {
		if (gone[i] || !over_limit(p, &v[i], live - 1, total,
		    newer_of_program(v, gone, n, i)) ||
		    (rc = prune_one(s, p, &v[i], cb, arg, e)) < 0)
			continue;
		gone[i] = rc == 1 ? 1 : 2;
		if (rc == 0)
			continue;
		live--;
		total -= v[i].bytes;
		count++;
	}
out:
	free(gone);
	free(v);
	free(prot.ids);
	store_unlock(lock);
	return rc < 0 ? rc : count;
}

/* Copying a snapshot directory in, for store_import. */
struct copy_ctx {
	char top[PATH_MAX];		/* realpath of the source */
	int manifest;			/* its manifest.json, as checked */
	struct error *e;
};

/* An analysis being written (store_analysis_tmp's name): never copied. */
static int
work_in_progress(const char *name)
{
	return strncmp(name, ".tmp-", 5) == 0;
}

static int copy_tree(struct copy_ctx *c, const char *src, const char *dst,
    int depth);

/* Copies the open file in (named src) to the new file dst. */
static int
copy_fd(struct copy_ctx *c, int in, const char *src, const char *dst)
{
	char buf[65536];
	ssize_t n;
	int out, rc = 0;

	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return error_set_errno(c->e, errno, "%s", dst);
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || fdio_write_full(out, buf, (size_t)n) < 0) {
			rc = error_set_errno(c->e, errno, "copying %s", src);
			break;
		}
	}
	if (close(out) < 0 && rc == 0)
		rc = error_set_errno(c->e, errno, "%s", dst);
	return rc;
}

/*
 * src, found a regular file by lstat: opened without following a link
 * and without waiting on a FIFO, so one swapped in since is refused.
 */
static int
copy_file(struct copy_ctx *c, const char *src, const char *dst)
{
	struct stat st;
	int in, rc;

	in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC);
	if (in < 0)
		return error_set_errno(c->e, errno, "%s", src);
	if (fstat(in, &st) < 0) {
		rc = error_set_errno(c->e, errno, "%s", src);
		close(in);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(in);
		return error_set(c->e, ERR_PERM, "%s: not a file or "
		    "directory; not imported", src);
	}
	rc = copy_fd(c, in, src, dst);
	close(in);
	return rc;
}

/* A link is followed only when what it names lies inside the source. */
static int
copy_entry(struct copy_ctx *c, const char *src, const char *dst, int depth)
{
	char real[PATH_MAX];
	struct stat st;

	if (lstat(src, &st) < 0)
		return error_set_errno(c->e, errno, "%s", src);
	if (S_ISLNK(st.st_mode)) {
		if (realpath(src, real) == NULL || !store_beneath(real, c->top))
			return error_set(c->e, ERR_PERM, "%s: a symbolic link "
			    "that leaves the snapshot; not imported", src);
		if (stat(real, &st) < 0)
			return error_set_errno(c->e, errno, "%s", real);
		src = real;
	}
	if (S_ISDIR(st.st_mode))
		return copy_tree(c, src, dst, depth + 1);
	if (S_ISREG(st.st_mode))
		return copy_file(c, src, dst);
	return error_set(c->e, ERR_PERM, "%s: not a file or directory; "
	    "not imported", src);
}

static int
copy_tree(struct copy_ctx *c, const char *src, const char *dst, int depth)
{
	char s2[PATH_MAX], d2[PATH_MAX];
	struct dirent *d;
	DIR *dp;
	int rc = 0;

	if (depth > 32)
		return error_set(c->e, ERR_RANGE, "%s: nested too deep", src);
	if (mkdir(dst, 0700) < 0 && !(depth == 0 && errno == EEXIST))
		return error_set_errno(c->e, errno, "%s", dst);
	if ((dp = opendir(src)) == NULL)
		return error_set_errno(c->e, errno, "%s", src);
	while (rc == 0 && (d = readdir(dp)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0 ||
		    work_in_progress(d->d_name))
			continue;
		if ((rc = fmt_path(s2, sizeof(s2), c->e, "%s/%s", src,
		    d->d_name)) < 0 || (rc = fmt_path(d2, sizeof(d2), c->e,
		    "%s/%s", dst, d->d_name)) < 0)
			break;
		/* The manifest that was checked, not what has its name now. */
		if (depth == 0 && strcmp(d->d_name, SNAPSHOT_MANIFEST) == 0)
			rc = lseek(c->manifest, 0, SEEK_SET) < 0 ?
			    error_set_errno(c->e, errno, "%s", s2) :
			    copy_fd(c, c->manifest, s2, d2);
		else
			rc = copy_entry(c, s2, d2, depth);
	}
	closedir(dp);
	return rc;
}

/*
 * Renames tmp to snapshots/<id>; when id is taken, refuses, or with
 * new_id picks a new one.
 */
static int
import_rename(const struct store *s, const char *tmp, int new_id,
    char id[STORE_ID_SIZE], struct error *e)
{
	char path[PATH_MAX];
	int tries, rc;

	for (tries = 0; tries < 8; tries++) {
		if ((rc = store_path(s, STORE_SNAPSHOTS, id, path, sizeof(path),
		    e)) < 0)
			return rc;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
		    RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST)
			return error_set_errno(e, errno, "%s", path);
		if (!new_id)
			return error_set(e, ERR_EXISTS, "snapshot %s is already "
			    "in the store", id);
		if ((rc = store_id_new(id, e)) < 0)
			return rc;
	}
	return error_set(e, ERR_EXISTS, "no free snapshot id");
}

/*
 * Copies the snapshot directory dir (checked) to tmp, made by mkdtemp.
 * Its manifest.json is opened once, beneath dir (a link or a FIFO there
 * is no snapshot's), checked and copied from that one descriptor.
 */
static int
copy_snapshot(const char *dir, char *tmp, struct error *e)
{
	struct copy_ctx c = { .manifest = -1, .e = e };
	char manifest[PATH_MAX];
	int rc, owner;

	if (realpath(dir, c.top) == NULL)
		return error_set_errno(e, errno, "%s", dir);
	if ((rc = fmt_path(manifest, sizeof(manifest), e, "%s/manifest.json",
	    c.top)) < 0)
		return rc;
	if ((c.manifest = snapshot_member_open(c.top, SNAPSHOT_MANIFEST,
	    e)) < 0)
		return c.manifest == -ERR_NOTFOUND ? error_set(e, ERR_FORMAT,
		    "%s: no manifest.json; not a snapshot directory", dir) :
		    error_prefix(e, "%s", dir);
	/* Its files stay its own: no member may name one outside it. */
	if ((rc = manifest_check_paths_fd(c.manifest, manifest, e)) < 0)
		goto out;
	if (mkdtemp(tmp) == NULL) {
		rc = error_set_errno(e, errno, "%s", tmp);
		goto out;
	}
	/* Owned while it is copied: a killed copy is swept (store_sweep). */
	if ((rc = scratch_own(tmp, &owner, e)) < 0) {
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* rc says why */
		goto out;
	}
	rc = copy_tree(&c, c.top, tmp, 0);
	if (rc == 0)
		rc = scratch_disown(tmp, owner, e);
	else
		close(owner);
	if (rc < 0)
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* e says what failed */
out:
	close(c.manifest);
	return rc;
}

int
store_import(const struct store *s, const char *dir, int new_id,
    char id[STORE_ID_SIZE], struct error *e)
{
	char tmp[PATH_MAX], real[PATH_MAX], probe[PATH_MAX];
	const char *base;
	struct stat st;
	int rc, lock;

	if (realpath(dir, real) == NULL)
		return error_set_errno(e, errno, "%s", dir);
	base = strrchr(real, '/') + 1;
	if (store_id_valid(base))
		memcpy(id, base, STORE_ID_SIZE);
	else if ((rc = store_id_new(id, e)) < 0)
		return rc;
	/* Said before the copy; the rename below is what decides. */
	if (!new_id && store_path(s, STORE_SNAPSHOTS, id, probe,
	    sizeof(probe), NULL) == 0 && lstat(probe, &st) == 0)
		return error_set(e, ERR_EXISTS, "snapshot %s is already in the "
		    "store", id);
	if ((rc = fmt_path(tmp, sizeof(tmp), e, "%s/snapshots/.import-XXXXXX",
	    s->root)) < 0)
		return rc;
	if ((rc = copy_snapshot(dir, tmp, e)) < 0)
		return rc;
	if ((lock = store_lock(s, 1, e)) >= 0) {
		rc = import_rename(s, tmp, new_id, id, e);
		store_unlock(lock);
	} else {
		rc = lock;
	}
	if (rc < 0)	/* e says what failed first */
		PTKIT_DROP(cleanup_remove_tree(tmp));
	return rc;
}

/* Whether dir, or the nearest part of it that exists, lies in snap. */
static int
inside_snapshot(const char *dir, const char *snap)
{
	char probe[PATH_MAX], real[PATH_MAX], *slash;

	if (snprintf(probe, sizeof(probe), "%s", dir) >= (int)sizeof(probe))
		return 0;
	while (realpath(probe, real) == NULL) {
		if ((slash = strrchr(probe, '/')) == NULL)
			strcpy(probe, ".");	/* the working directory's */
		else if (slash == probe)
			strcpy(probe, "/");
		else
			*slash = '\0';
	}
	return strcmp(real, snap) == 0 || store_beneath(real, snap);
}

int
store_export(const struct store *s, const char *id, const char *gid,
    const char *dir, char *out, size_t size, struct error *e)
{
	char snap[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	int guard, rc;

	if (!store_id_valid(id))
		return error_set(e, ERR_INVALID, "'%.80s' is not a valid id",
		    id);
	if ((rc = fmt_path(out, size, e, "%s/%s", dir, id)) < 0 ||
	    (rc = fmt_path(tmp, sizeof(tmp), e, "%s/.%s.tmp-XXXXXX", dir,
	    id)) < 0)
		return rc;
	if ((guard = store_guard_begin(s, gid, id, "export", e)) < 0)
		return guard;
	/* Nothing is made before the destination is known to be outside. */
	if ((rc = store_resolve(s, STORE_SNAPSHOTS, id, snap, sizeof(snap),
	    e)) == 0 && inside_snapshot(dir, snap))
		rc = error_set(e, ERR_INVALID, "%s is inside the snapshot it "
		    "would hold", dir);
	if (rc == 0 && lstat(out, &st) == 0)
		rc = error_set(e, ERR_EXISTS, "%s exists already; export "
		    "writes a new directory", out);
	if (rc == 0)
		rc = mkpath_parents(out, 0700, e);
	if (rc == 0 && (rc = copy_snapshot(snap, tmp, e)) == 0 &&
	    renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) < 0) {
		rc = errno == EEXIST ? error_set(e, ERR_EXISTS, "%s exists "
		    "already; export writes a new directory", out) :
		    error_set_errno(e, errno, "%s", out);
		PTKIT_DROP(cleanup_remove_tree(tmp));	/* e says why */
	}
	store_guard_end(s, gid, guard);
	return rc;
}

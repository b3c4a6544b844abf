/*
 * store: the snapshot store that ptmcp manages (man ptkit-store.5).
 *
 *   STORE/                       0700, owned by the user
 *     .lock                      flock(2): exclusive while renaming in or out
 *     snapshots/<id>/            snapshot directories (ptrec --store)
 *       derived/<analysis>/      analyses of that snapshot ("default", ...)
 *     reports/<id>.json          comparison reports
 *     sessions/<id>.json         a recording or decode in progress ...
 *     sessions/<id>.lock         ... held (flock) by the process running it
 *     jobs/<name>.json           request_id bookkeeping (idempotent calls)
 *
 * Owns: where the store is, creating it 0700, ids (made and checked here
 * only: snapshot ids too, whoever writes the snapshot), every path inside
 * the store, one function per kind (ids are never paths: anything outside
 * the id grammar is refused, and a resolved path that leaves its area,
 * through a symbolic link say, is refused too: store_beneath is that one
 * check), writing files atomically (temporary name, then rename),
 * listing (with what each snapshot's manifest says of it), importing,
 * exporting, removing and pruning snapshots.  Removal renames a
 * snapshot out of sight before deleting it, under the store lock, so a
 * concurrent ptmcp never sees half a snapshot.  A snapshot that a live
 * session protects (see store_session_*) is never removed.
 *
 * Snapshot, report, session and job ids are YYYYmmddTHHMMSSZ-<8 hex>
 * (UTC; they sort by time); analysis ids are "default" or 1-64 characters
 * of [a-z0-9].
 */
#ifndef PTKIT_STORE_H
#define PTKIT_STORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"
#include "fmt/manifest.h"

#define STORE_ID_SIZE 26		/* 25 characters and the NUL */
#define STORE_DEFAULT_ANALYSIS "default"	/* the one ptquery uses */
#define STORE_NAME_MAX 96		/* longest jobs/ name */

enum store_area {
	STORE_SNAPSHOTS,
	STORE_REPORTS,
	STORE_SESSIONS,
	STORE_JOBS,
	STORE_AREA_COUNT
};

struct store {
	char root[PATH_MAX];		/* canonical (realpath) */
};

/*
 * Writes the default store path: $PTKIT_STORE, else $XDG_DATA_HOME/ptkit
 * (when absolute), else $HOME/.local/share/ptkit.  Returns 0, or
 * -ERR_RANGE (too long), -ERR_NOTFOUND (no home directory).
 */
int store_default_path(char *buf, size_t size, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Opens the store at path (NULL: the default).  With create, makes it and
 * its areas (missing parents too), all 0700.  Refuses a store that is not
 * a directory or not owned by the user (-ERR_PERM); tightens a store
 * readable by others to 0700.  Returns 0, -ERR_NOTFOUND (absent, without
 * create), -ERR_PERM, -ERR_IO, -ERR_RANGE.
 */
int store_open(struct store *s, const char *path, int create,
    struct error *e) PTKIT_MUST_CHECK;

/* The directory name of an area ("snapshots", ...). */
const char *store_area_name(enum store_area a);

/*
 * Writes the id for time t (UTC) and 32 random bits into buf (at least
 * STORE_ID_SIZE bytes).  Returns 0, -ERR_RANGE (buf too small, t out of
 * range), -ERR_IO (no randomness).
 */
int store_id_make(char *buf, size_t size, time_t t, struct error *e)
    PTKIT_MUST_CHECK;

/* store_id_make for the current time. */
int store_id_new(char id[STORE_ID_SIZE], struct error *e)
    PTKIT_MUST_CHECK;

/* 1 if id follows the id grammar, else 0. */
int store_id_valid(const char *id);

/* 1 if id is "default" or 1-64 characters of [a-z0-9], else 0. */
int store_analysis_id_valid(const char *id);

/* 1 if name is 1-STORE_NAME_MAX characters of [A-Za-z0-9._-], no leading '.'. */
int store_name_valid(const char *name);

/*
 * Writes the path of an area's entry for id (snapshots: the directory;
 * reports, sessions, jobs: "<id>.json"), whether or not it exists.
 * Returns 0, -ERR_INVALID (id outside the grammar), -ERR_RANGE.
 */
int store_path(const struct store *s, enum store_area a, const char *id,
    char *buf, size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * The snapshots directory of the store at root (root/snapshots), for a
 * recorder that writes into a store it has not opened.  Returns 0 or
 * -ERR_RANGE ("ROOT: path too long").
 */
int store_snapshots_dir(const char *root, char *buf, size_t size,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * 1 if the resolved path path lies strictly beneath the resolved
 * directory dir (dir/...), else 0: the test that keeps a path made from
 * an id, once symbolic links are followed, inside the store.
 */
int store_beneath(const char *path, const char *dir);

/*
 * Like store_path, for an entry that must exist, resolved with realpath:
 * -ERR_NOTFOUND when it does not exist, -ERR_PERM when it resolves outside
 * its area.  buf receives the resolved path.
 */
int store_resolve(const struct store *s, enum store_area a, const char *id,
    char *buf, size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * The directory of analysis aid of snapshot sid
 * (snapshots/<sid>/derived/<aid>), whether or not it exists.  Returns as
 * store_path.
 */
int store_analysis_path(const struct store *s, const char *sid,
    const char *aid, char *buf, size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * The analyses directory of snapshot sid (snapshots/<sid>/derived),
 * whether or not it exists.  Returns as store_path.
 */
int store_derived_path(const struct store *s, const char *sid, char *buf,
    size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * Like store_analysis_path, for an analysis that must exist, resolved
 * with realpath: -ERR_NOTFOUND when it cannot be resolved (not decoded
 * yet), -ERR_PERM when it resolves outside its snapshot (resolved as
 * store_resolve does).  buf receives the resolved path.
 */
int store_resolve_analysis(const struct store *s, const char *sid,
    const char *aid, char *buf, size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * For a snapshot directory snap (in a store or not): its analyses
 * directory snap/derived, and the mkdtemp(3) template an analysis is
 * written to before it is renamed to its id, snap/derived/.tmp-XXXXXX.
 * Return 0 or -ERR_RANGE.
 */
int store_snapshot_derived(const char *snap, char *buf, size_t size,
    struct error *e) PTKIT_MUST_CHECK;
/*
 * Makes snap/derived (store_snapshot_derived) when missing, and checks it
 * is a directory itself, not a link that would take analyses written
 * there out of the store.  Returns 0, -ERR_PERM, -ERR_IO, -ERR_RANGE.
 */
int store_derived_make(const char *snap, char *buf, size_t size,
    struct error *e) PTKIT_MUST_CHECK;

int store_analysis_tmp(const char *snap, char *buf, size_t size,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The snapshot directory an analysis directory adir of derived/ belongs
 * to (adir/../..), for a reader given only the analysis.  Returns 0 or
 * -ERR_RANGE.
 */
int store_analysis_snapshot(const char *adir, char *buf, size_t size,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The snapshot an analysis adir is decoded from again (ptquery's branches
 * and insns): the snapshot it lives in when adir is SNAP/derived/AID and
 * SNAP holds a manifest.json that snapshot_member_open opens (a regular
 * file, not a link or a FIFO: an analysis in a store, or beside its
 * snapshot), whatever its manifest's snapshot member says, so a planted
 * member cannot send the decoder elsewhere; else member (an analysis of
 * its own, "" when it names none).  Returns 0, or -ERR_RANGE.
 */
int store_analysis_source(const char *adir, const char *member, char *buf,
    size_t size, struct error *e) PTKIT_MUST_CHECK;

/* snap/derived/<aid>, for a snapshot directory snap.  Returns 0,
 * -ERR_INVALID (aid outside the grammar), -ERR_RANGE. */
int store_snapshot_analysis(const char *snap, const char *aid, char *buf,
    size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * Takes the store lock (blocking).  Returns a descriptor >= 0 to pass to
 * store_unlock, or -ERR_IO.
 */
int store_lock(const struct store *s, int exclusive, struct error *e)
    PTKIT_MUST_CHECK;
void store_unlock(int fd);

/*
 * Writes len bytes as the area's file "<name>.json" atomically: a
 * temporary file in the same directory, fsync, rename.  name follows
 * store_name_valid.  Returns 0, -ERR_INVALID, -ERR_IO.
 */
int store_write_json(const struct store *s, enum store_area a,
    const char *name, const char *data, size_t len, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Reads the area's "<name>.json" into a malloc'd NUL-terminated buffer
 * (at most 1 MiB).  Returns 0, -ERR_INVALID, -ERR_NOTFOUND, -ERR_RANGE,
 * -ERR_IO, -ERR_NOMEM.
 */
int store_read_json(const struct store *s, enum store_area a,
    const char *name, char **out, struct error *e) PTKIT_MUST_CHECK;

/*
 * Sessions: work in progress that protects snapshots from removal.
 * store_session_begin creates sessions/<id>.lock and holds it (flock) for
 * as long as the returned descriptor is open: the session is live exactly
 * as long as its process runs.  The session's record, sessions/<id>.json
 * (written with store_write_json), protects every snapshot named in its
 * "snapshots" array and, when it has a "since" id, every snapshot whose id
 * sorts at or after it (snapshots a running recording is about to write).
 */
int store_session_begin(const struct store *s, const char *id,
    struct error *e) PTKIT_MUST_CHECK;

/* Releases the lock and removes the lock file (the record stays). */
void store_session_end(const struct store *s, const char *id, int fd);

/* 1 if a process holds the session's lock, 0 if not (or no such lock). */
int store_session_live(const struct store *s, const char *id);

/*
 * A guard: session gid that protects snapshot sid while one job (kind:
 * "decode", "job") works on it.  Its lock and its record,
 * {"snapshots":[sid],"state":"running","kind":kind,"pid":PID}, appear
 * together under the store lock and the snapshot is checked to be there
 * after both, so no prune removes it from then until store_guard_end.
 * Returns the lock's descriptor, or -ERR_NOTFOUND (the snapshot is gone:
 * "<sid>: not in the store"), -ERR_INVALID, -ERR_EXISTS, -ERR_IO,
 * -ERR_NOMEM.
 */
int store_guard_begin(const struct store *s, const char *gid,
    const char *sid, const char *kind, struct error *e) PTKIT_MUST_CHECK;

/* Ends a guard: its lock, then its record.  fd < 0 does nothing. */
void store_guard_end(const struct store *s, const char *gid, int fd);

/* What store_sweep removed: a killed process's leftovers. */
struct store_swept {
	unsigned tmp_dirs;		/* derived/.tmp-XXXXXX, import temps */
	unsigned records;		/* guards of dead processes */
	unsigned sessions;		/* sessions left "running": now failed */
	unsigned locks;			/* lock files nobody holds */
};

/*
 * Sweeps what killed processes left in the store, under the exclusive
 * store lock: temporary analysis and import directories whose owner
 * (base/scratch) is dead; guard records whose lock nobody holds and whose
 * pid is gone; session records still "running" whose process is gone,
 * marked failed ("the ptmcp that ran it, pid N, died"); lock files
 * nobody holds, older than a minute (a new one is locked at once).
 * Counts go to *out.  Returns 0, or -ERR_IO.
 */
int store_sweep(const struct store *s, struct store_swept *out,
    struct error *e) PTKIT_MUST_CHECK;

struct store_entry {
	char id[STORE_ID_SIZE];
	uint64_t bytes;			/* regular files, apparent size */
	int64_t mtime;			/* seconds since the epoch */
	int in_use;			/* protected by a live session */
	/*
	 * When it was made, ns since the epoch: its manifest's
	 * created_wall_ns, else the second its id names (ids are made at
	 * creation, to the second).  Reports and the like: the id's second.
	 */
	int64_t created_ns;
	struct manifest_brief brief;	/* snapshots: what its manifest says */
};

/*
 * Lists an area's entries with valid ids (anything else, temporary names
 * included, is not listed), oldest first: by created_ns, then by id.
 * *out is malloc'd (the caller frees it); *n may be 0.  Returns 0,
 * -ERR_IO, -ERR_NOMEM.
 */
int store_list(const struct store *s, enum store_area a,
    struct store_entry **out, size_t *n, struct error *e) PTKIT_MUST_CHECK;

/*
 * created_ns as a listing shows it, ISO 8601 UTC to the millisecond
 * ("2026-11-29T08:42:02.125Z"), into buf (at least STORE_TIME_SIZE).
 */
#define STORE_TIME_SIZE 32
void store_time_iso(int64_t ns, char *buf, size_t size);

/* An analysis of a snapshot, as store_list_analyses finds it. */
struct store_analysis {
	char id[65];
	uint64_t bytes;
};

/*
 * The analyses of snapshot sid (its derived/ entries with analysis ids
 * that are directories, not links; work in progress is not listed),
 * sorted by id.  *out is malloc'd; *n may be 0 (none, or no derived/).
 * Returns 0, -ERR_INVALID, -ERR_IO, -ERR_NOMEM.
 */
int store_list_analyses(const struct store *s, const char *sid,
    struct store_analysis **out, size_t *n, struct error *e)
    PTKIT_MUST_CHECK;

/* Total size of regular files under path (not following links). */
int store_du(const char *path, uint64_t *bytes, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Removes snapshot or report id: renamed out of sight under the exclusive
 * store lock, then deleted.  Refuses a snapshot in use (-ERR_PERM).
 * Returns 0, -ERR_INVALID, -ERR_NOTFOUND, -ERR_PERM, -ERR_IO.
 */
int store_remove(const struct store *s, enum store_area a, const char *id,
    struct error *e) PTKIT_MUST_CHECK;

struct store_prune {
	int64_t max_age_s;		/* remove older; -1: no limit */
	int64_t max_count;		/* keep the newest N; -1: no limit */
	int64_t max_bytes;		/* keep under N bytes; -1: no limit */
	int dry_run;			/* say what, remove nothing */
	int64_t now;			/* seconds since the epoch */
	int64_t keep_newest;		/* of each program; -1: no limit */
	const char *const *ids;		/* remove these; NULL: none */
	size_t nr_ids;
};

/* What store_prune did with one snapshot. */
enum store_pruned {
	STORE_PRUNE_REMOVED,		/* removed (dry_run: would be) */
	STORE_PRUNE_IN_USE,		/* a limit or ids chose it; kept: a
					   live session uses it */
};

/*
 * Removes the snapshots named in ids, then, oldest first by creation
 * time (store_list's order), those a limit chooses until every limit
 * holds: max_age_s by creation time, max_count and max_bytes over the
 * whole store, keep_newest over the snapshots of each program (the
 * manifest's target.argv[0] as recorded; snapshots that name none are
 * one program).  Snapshots in use are kept (and still count).  Every id
 * of ids must be a snapshot in the store, else nothing is removed
 * (-ERR_NOTFOUND, "ID: not in the store"; -ERR_INVALID for a string
 * outside the grammar).  Calls cb(entry, what, arg) for each snapshot
 * removed or kept in use.  Returns the number removed, or a negative
 * error code.
 */
int store_prune(const struct store *s, const struct store_prune *p,
    void (*cb)(const struct store_entry *ent, enum store_pruned what,
    void *arg), void *arg, struct error *e) PTKIT_MUST_CHECK;

/*
 * Copies the snapshot directory dir (it must hold manifest.json, a regular
 * file as snapshot_member_open opens it, read and copied through that one
 * descriptor) into the store and renames it into place.  The id is dir's
 * own name when that is a valid id, else a new one; it is written to id.
 * When that id is already in the store, the import is refused
 * (-ERR_EXISTS, "snapshot ID is already in the store") unless new_id,
 * which imports it under a new id.  Analyses come with it (derived/),
 * work in progress left out.  Symbolic links are followed only when they
 * stay inside dir (others are refused, -ERR_PERM), and a file is copied
 * only while it is the regular file lstat found.  Returns 0, -ERR_FORMAT
 * (no manifest), -ERR_EXISTS, -ERR_PERM ("DIR: manifest.json: a symbolic
 * link on the way; ...", a FIFO, a link out), -ERR_IO, -ERR_NOMEM.
 */
int store_import(const struct store *s, const char *dir, int new_id,
    char id[STORE_ID_SIZE], struct error *e) PTKIT_MUST_CHECK;

/*
 * Writes snapshot id with its analyses to dir/<id> (dir is made when
 * missing), a copy store_import takes back under the same id: copied to
 * a temporary name beside it and renamed into place, so that dir/<id> is
 * whole or absent.  Guarded while it copies (store_guard_begin, with
 * guard id gid), so no prune removes it meanwhile.  Work in progress in
 * derived/ is left out.  A dir inside the snapshot itself is refused
 * before anything is made (-ERR_INVALID).  out receives dir/<id>.
 * Returns 0, -ERR_INVALID, -ERR_NOTFOUND ("ID: not in the store"),
 * -ERR_EXISTS (dir/<id> exists), -ERR_PERM, -ERR_IO, -ERR_NOMEM.
 */
int store_export(const struct store *s, const char *id, const char *gid,
    const char *dir, char *out, size_t size, struct error *e)
    PTKIT_MUST_CHECK;

#endif

/*
 * snapshot: creating a snapshot directory atomically and archiving the
 * images it needs.
 *
 * Owns the snapshot layout (man/ptkit-snapshot.5):
 *
 *   <snapshot>/manifest.json  (lib/manifest)
 *   <snapshot>/perf.data      (lib/perfdata; the recorder writes it at
 *                              snapshot_path(s, SNAPSHOT_PERF_DATA))
 *   <snapshot>/images/.build-id/<2 hex>/<38 hex>/elf   (and /debug)
 *   <snapshot>/images/sha256/<64 hex>/<basename>       (no build-id)
 *   <snapshot>/jit/perf-<pid>.map  (JIT maps; manifest.jit_maps)
 *   <snapshot>/output.log
 *
 * A snapshot is built in a temporary directory beside its destination
 * (<parent>/.<name>.tmp-XXXXXX) and renamed into place by
 * snapshot_commit() once manifest.json is written, so a reader never sees
 * half a snapshot.  snapshot_abort() removes the temporary directory.
 *
 * Typical use by a recorder:
 *
 *   store_id_make(id, sizeof(id), time(NULL), &e);   (fmt/store owns ids)
 *   snapshot_begin(&s, dest, &e);
 *   s->manifest.host... = ...;             (fill the manifest)
 *   snapshot_archive_file(s, "/usr/bin/prog", &img, &e);  (each image)
 *   ... perfdata_writer_open(&w, snapshot_path(s, SNAPSHOT_PERF_DATA)) ...
 *       MMAP2 with img.build_id, perfdata_writer_add_build_id ...
 *   snapshot_commit(s, &e);                (frees s)
 */
#ifndef PTKIT_SNAPSHOT_H
#define PTKIT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"
#include "fmt/manifest.h"

#define SNAPSHOT_PERF_DATA "perf.data"
#define SNAPSHOT_MANIFEST "manifest.json"
#define SNAPSHOT_OUTPUT_LOG "output.log"
#define SNAPSHOT_IMAGES "images"
#define SNAPSHOT_BUILD_ID_MAX 20

/*
 * JIT code (cmd/ptrec/jit_archive.h writes it): the archived JIT maps'
 * directory, and the name an image of dumped JIT code has in perf.data
 * and the manifest: SNAPSHOT_JIT_IMAGE_PREFIX "PID/START" (START in hex).
 * "//anon" is how an anonymous mapping is named when its bytes were not
 * dumped.
 */
#define SNAPSHOT_JIT_DIR "jit"
#define SNAPSHOT_JIT_IMAGE_PREFIX "//anon-jit/"
#define SNAPSHOT_ANON "//anon"

/* Where separate debuginfo is looked up by build-id. */
#define SNAPSHOT_DEBUG_ROOT "/usr/lib/debug"

struct snapshot {
	char *dest;			/* final directory */
	char *tmp;			/* directory being built */
	char *debug_root;		/* SNAPSHOT_DEBUG_ROOT unless changed */
	struct manifest manifest;	/* written at commit */
	char pathbuf[4096];		/* snapshot_path's result */
	/*
	 * errno of the first write into the snapshot that failed (a full
	 * disk, a quota), 0 until then: an image that could not be read
	 * is a loss to tell, one that could not be written means the
	 * snapshot cannot be whole.
	 */
	int write_errno;
};

/* What snapshot_archive_* found and did for one image. */
struct snapshot_image {
	uint8_t build_id[SNAPSHOT_BUILD_ID_MAX];
	size_t build_id_size;		/* 0: none, archived by sha256 */
	char build_id_hex[2 * SNAPSHOT_BUILD_ID_MAX + 1];
	char sha256_hex[65];
	int has_debug;			/* separate debuginfo archived too */
	int deduplicated;		/* already in this snapshot */
	size_t manifest_index;		/* its row in manifest.images */
};

/*
 * Starts a snapshot whose final path is dest (which must not exist; its
 * parent must).  Creates the temporary directory and images/, and
 * initialises s->manifest (format version, creation time; id from dest's
 * basename when it is an id, else a new one).  Returns 0 and *out, or
 * -ERR_EXISTS (dest exists), -ERR_NOTFOUND (no parent), -ERR_IO, -ERR_NOMEM.
 */
int snapshot_begin(struct snapshot **out, const char *dest, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * The path of name inside the directory being built (valid until the
 * next call; NULL if it does not fit).
 */
const char *snapshot_path(struct snapshot *s, const char *name);

/*
 * Copies the file from into the snapshot as name (SNAPSHOT_OUTPUT_LOG,
 * SNAPSHOT_PERF_DATA, ...), which must not exist yet.  Returns 0, or
 * -ERR_IO with e naming the file that failed (nothing is left behind).
 */
int snapshot_copy_in(struct snapshot *s, const char *name, const char *from,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * As snapshot_copy_in, of the first max bytes of from only (all of a
 * shorter file): the program's output up to a place in it.
 */
int snapshot_copy_in_prefix(struct snapshot *s, const char *name,
    const char *from, uint64_t max, struct error *e) PTKIT_MUST_CHECK;

/*
 * As snapshot_copy_in, from the open file in (read to its end, left
 * open), named from in messages: for a file that had to be checked
 * before it was read.
 */
int snapshot_copy_in_fd(struct snapshot *s, const char *name, int in,
    const char *from, struct error *e) PTKIT_MUST_CHECK;

/*
 * Archives the file at path (as mapped by the program; read from
 * read_path when not NULL, e.g. /proc/PID/root/...): by build-id when it
 * has one (with separate debuginfo from <debug_root>/.build-id/ when that
 * exists, else the file its .gnu_debuglink names as lib/debugfind finds
 * it: beside the image, in .debug/ beside it, or under <debug_root>/ with
 * the image's directory; CRC or build-id checked), else by SHA-256.  Deduplicates by content and records the
 * mapping path -> archived file in the manifest (once per path).  Fills
 * *img.  Returns 0, -ERR_NOTFOUND/-ERR_IO (cannot read, or cannot write:
 * then s->write_errno says why), -ERR_NOMEM.  Nothing of a failed image
 * is left in the snapshot.
 */
int snapshot_archive_file(struct snapshot *s, const char *path,
    const char *read_path, struct snapshot_image *img, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * As snapshot_archive_file for an image held in memory (the vDSO, read
 * from the process): name is what the manifest calls it ("[vdso]").
 */
int snapshot_archive_memory(struct snapshot *s, const char *name,
    const void *data, size_t len, struct snapshot_image *img,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Writes manifest.json, syncs every file and directory of the snapshot
 * (its own, not the file system: "PATH: fsync: reason" when one fails),
 * and renames the directory into place.  Frees s whatever happens; on
 * failure the temporary directory is removed.  Returns 0, -ERR_EXISTS
 * (dest appeared meanwhile), -ERR_IO.
 */
int snapshot_commit(struct snapshot *s, struct error *e) PTKIT_MUST_CHECK;

/* Removes the temporary directory and frees s.  NULL is fine. */
void snapshot_abort(struct snapshot *s);

/*
 * Reads the ELF build-id (NT_GNU_BUILD_ID) of the file at path, via
 * libelf.  Returns its size (1..20), 0 when the file has none or is not
 * ELF, or -ERR_IO/-ERR_NOTFOUND.
 */
int snapshot_elf_build_id(const char *path, uint8_t id[SNAPSHOT_BUILD_ID_MAX],
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The file rel of the snapshot directory dir for a reader, opened
 * beneath dir (lib/base/beneath): no "..", absolute path or symbolic
 * link on the way, and only a regular file (a FIFO is refused before it
 * could block), so neither a manifest's member nor a link planted in the
 * snapshot or the store sends a reader elsewhere.  Returns the
 * descriptor, or -ERR_NOTFOUND (nothing there), -ERR_PERM ("REL: leads
 * outside the snapshot directory; refused", "REL: a symbolic link on the
 * way; ...", "REL: not a regular file ..."), -ERR_IO.
 */
int snapshot_member_open(const char *dir, const char *rel, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * snapshot_member_open's check for a reader that opens by path (libelf,
 * the symbol tables): 0 and "DIR/REL" in *out (malloc'd), or as
 * snapshot_member_open fails.  Between the check and its open a link
 * could be swapped in by someone who can write the snapshot; readers of
 * the snapshot's own files (manifest.json, perf.data) use the
 * descriptor instead.
 */
int snapshot_member(const char *dir, const char *rel, char **out,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The manifest of the snapshot directory dir, read as manifest_read does
 * from the file snapshot_member_open opens: a manifest.json that is a
 * link, a FIFO or not there is refused before a byte of it is read
 * ("manifest.json: a symbolic link on the way; ..."); what is wrong
 * inside it is named "DIR/manifest.json: ...".  Returns as
 * snapshot_member_open and manifest_read do.
 */
int snapshot_read_manifest(const char *dir, struct manifest *m,
    struct error *e) PTKIT_MUST_CHECK;

/* As snapshot_read_manifest, for manifest_read_brief's members. */
int snapshot_read_manifest_brief(const char *dir, struct manifest_brief *b,
    struct error *e) PTKIT_MUST_CHECK;

/* Lower-case hex of n bytes into out (2n + 1 bytes). */
void snapshot_hex(const uint8_t *p, size_t n, char *out);

#endif

/*
 * snapshot: see snapshot.h.  Images are copied into a temporary file in
 * images/ while being hashed, then renamed to their content address (or
 * dropped when that address already exists: deduplication).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/cleanup.h"
#include "sym/debugfind.h"
#include "base/mkpath.h"
#include "base/scratch.h"
#include "fmt/snapshot.h"
#include "base/fdio.h"
#include "fmt/store.h"

struct snapshot_priv {
	struct snapshot pub;
	int cleanup_slot;
	int owner_fd;		/* the tmp directory's owner lock, or -1 */
};

void
snapshot_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static void
snapshot_free(struct snapshot *s)
{
	struct snapshot_priv *p = (struct snapshot_priv *)s;

	if (s == NULL)
		return;
	if (p->cleanup_slot >= 0)
		cleanup_unregister(p->cleanup_slot);
	if (p->owner_fd >= 0)
		close(p->owner_fd);
	manifest_free(&s->manifest);
	free(s->dest);
	free(s->tmp);
	free(s->debug_root);
	free(p);
}

void
snapshot_abort(struct snapshot *s)
{
	if (s == NULL)
		return;
	if (s->tmp != NULL)	/* abandoned: what stays is only waste */
		PTKIT_DROP(cleanup_remove_tree(s->tmp));
	snapshot_free(s);
}

static int
init_manifest(struct snapshot *s, const char *base, struct error *e)
{
	struct manifest *m = &s->manifest;
	struct timespec now;
	char created[32];
	struct tm tm;
	int rc;

	manifest_init(m);
	clock_gettime(CLOCK_REALTIME, &now);
	m->created_wall_ns = (uint64_t)now.tv_sec * 1000000000ULL +
	    (uint64_t)now.tv_nsec;
	gmtime_r(&now.tv_sec, &tm);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if ((rc = manifest_set_string(&m->created, created, e)) < 0)
		return rc;
	if (store_id_valid(base)) {
		strcpy(m->id, base);
		return 0;
	}
	return store_id_make(m->id, sizeof(m->id), now.tv_sec, e);
}

/* Splits dest into a malloc'ed parent directory and a basename pointer. */
static int
split_dest(const char *dest, char **parent, const char **base,
    struct error *e)
{
	const char *slash = strrchr(dest, '/');

	if (*dest == '\0' || (slash != NULL && slash[1] == '\0'))
		return error_set(e, ERR_INVALID,
		    "%s: snapshot path must name a directory to create", dest);
	*base = slash ? slash + 1 : dest;
	*parent = slash ? strndup(dest, (size_t)(slash - dest)) : strdup(".");
	if (*parent != NULL && **parent == '\0') {
		free(*parent);
		*parent = strdup("/");
	}
	return *parent == NULL ? error_set(e, ERR_NOMEM, "snapshot") : 0;
}

int
snapshot_begin(struct snapshot **out, const char *dest, struct error *e)
{
	struct snapshot_priv *p;
	struct snapshot *s;
	const char *base = NULL;
	char *parent = NULL;
	struct stat st;
	int rc;

	*out = NULL;
	if ((rc = split_dest(dest, &parent, &base, e)) < 0)
		return rc;
	if (lstat(dest, &st) == 0) {
		free(parent);
		return error_set(e, ERR_EXISTS, "%s: already exists", dest);
	}
	/* A recording is done by now: make the way to it, as mkdir -p. */
	if ((rc = mkpath_parents(dest, 0755, e)) < 0) {
		free(parent);
		return rc;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		free(parent);
		return error_set(e, ERR_NOMEM, "snapshot");
	}
	s = &p->pub;
	p->cleanup_slot = -1;
	p->owner_fd = -1;
	s->dest = strdup(dest);
	s->debug_root = strdup(SNAPSHOT_DEBUG_ROOT);
	if (asprintf(&s->tmp, "%s/.%s.tmp-XXXXXX", parent, base) < 0)
		s->tmp = NULL;
	/* what writers killed before their rename left here */
	scratch_sweep_dead(parent, ".tmp-");
	free(parent);
	if (s->dest == NULL || s->tmp == NULL || s->debug_root == NULL) {
		snapshot_free(s);
		return error_set(e, ERR_NOMEM, "snapshot");
	}
	if (mkdtemp(s->tmp) == NULL) {
		rc = error_set_errno(e, errno, "%s: create", s->tmp);
		free(s->tmp);
		s->tmp = NULL;
		snapshot_free(s);
		return rc;
	}
	p->cleanup_slot = cleanup_register(s->tmp);
	if (!cleanup_keep_waste() &&
	    (rc = scratch_own(s->tmp, &p->owner_fd, e)) < 0) {
		snapshot_abort(s);
		return rc;
	}
	if (mkdir(snapshot_path(s, SNAPSHOT_IMAGES), 0755) < 0) {
		rc = error_set_errno(e, errno, "%s: create", s->pathbuf);
		snapshot_abort(s);
		return rc;
	}
	if ((rc = init_manifest(s, base, e)) < 0) {
		snapshot_abort(s);
		return rc;
	}
	*out = s;
	return 0;
}

const char *
snapshot_path(struct snapshot *s, const char *name)
{
	int n = snprintf(s->pathbuf, sizeof(s->pathbuf), "%s/%s", s->tmp, name);

	return n < 0 || (size_t)n >= sizeof(s->pathbuf) ? NULL : s->pathbuf;
}

/* ---- ELF build-ids ----------------------------------------------- */

static int
note_build_id(Elf_Data *d, uint8_t id[SNAPSHOT_BUILD_ID_MAX])
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= SNAPSHOT_BUILD_ID_MAX) {
			memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
			return (int)nh.n_descsz;
		}
	}
	return 0;
}

static int
elf_build_id(Elf *elf, uint8_t id[SNAPSHOT_BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	size_t nph;
	int n;

	if (elf_kind(elf) != ELF_K_ELF)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_NOTE)
			continue;
		if ((d = elf_getdata(scn, NULL)) != NULL &&
		    (n = note_build_id(d, id)) > 0)
			return n;
	}
	if (elf_getphdrnum(elf, &nph) != 0)
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (gelf_getphdr(elf, (int)i, &ph) == NULL ||
		    ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
		    ph.p_filesz, ELF_T_NHDR);
		if (d != NULL && (n = note_build_id(d, id)) > 0)
			return n;
	}
	return 0;
}

static int
fd_build_id(int fd, uint8_t id[SNAPSHOT_BUILD_ID_MAX])
{
	Elf *elf;
	int n;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf == NULL)
		return 0;
	n = elf_build_id(elf, id);
	elf_end(elf);
	return n;
}

int
snapshot_elf_build_id(const char *path, uint8_t id[SNAPSHOT_BUILD_ID_MAX],
    struct error *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0) {
		int saved = errno;

		n = error_set_errno(e, saved, "%s: open", path);
		if (saved == ENOENT)
			e->code = ERR_NOTFOUND, n = -ERR_NOTFOUND;
		return n;
	}
	n = fd_build_id(fd, id);
	close(fd);
	return n;
}

/* ---- archiving --------------------------------------------------- */

/* Keeps the first write failure into the snapshot; returns the errno. */
static int
write_failed(struct snapshot *s, int errnum)
{
	if (s->write_errno == 0)
		s->write_errno = errnum;
	return errnum;
}


static int copy_in_fd(struct snapshot *s, const char *name, int in,
    const char *from, uint64_t max, struct error *e);

int
snapshot_copy_in(struct snapshot *s, const char *name, const char *from,
    struct error *e)
{
	return snapshot_copy_in_prefix(s, name, from, UINT64_MAX, e);
}

int
snapshot_copy_in_prefix(struct snapshot *s, const char *name,
    const char *from, uint64_t max, struct error *e)
{
	int in, rc;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) < 0)
		return error_set_errno(e, errno, "%s", from);
	rc = copy_in_fd(s, name, in, from, max, e);
	close(in);
	return rc;
}

int
snapshot_copy_in_fd(struct snapshot *s, const char *name, int in,
    const char *from, struct error *e)
{
	return copy_in_fd(s, name, in, from, UINT64_MAX, e);
}

static int
copy_in_fd(struct snapshot *s, const char *name, int in, const char *from,
    uint64_t max, struct error *e)
{
	const char *to = snapshot_path(s, name);
	char buf[65536];
	ssize_t n;
	int out, rc = 0;

	if (to == NULL)
		return error_set(e, ERR_RANGE, "%s: path too long", name);
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) < 0)
		return error_set_errno(e, write_failed(s, errno), "%s", to);
	while (max > 0 && (n = read(in, buf, max < sizeof(buf) ?
	    (size_t)max : sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = error_set_errno(e, errno, "%s", from);
			break;
		}
		if (fdio_write_full(out, buf, (size_t)n) < 0) {
			rc = error_set_errno(e, write_failed(s, errno), "%s",
			    to);
			break;
		}
		max -= (uint64_t)n;
	}
	if (close(out) < 0 && rc == 0)
		rc = error_set_errno(e, write_failed(s, errno), "%s", to);
	if (rc < 0)
		unlink(to);
	return rc;
}

/* mkdir -p of rel (relative to the snapshot) */
static int
make_dirs(struct snapshot *s, const char *rel, struct error *e)
{
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "%s/%s", s->tmp, rel);

	if (n < 0 || (size_t)n >= sizeof(buf))
		return error_set(e, ERR_RANGE, "%s: path too long", rel);
	for (char *p = buf + strlen(s->tmp) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return error_set_errno(e, write_failed(s, errno),
			    "%s: create", buf);
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return error_set_errno(e, write_failed(s, errno),
		    "%s: create", buf);
	return 0;
}

/*
 * Copies src (an open fd, read from the file named from, or len bytes at
 * mem) into a new temporary file under images/, hashing it.  *tmp_out is
 * the temporary file's path.
 */
static int
copy_hashed(struct snapshot *s, int src, const char *from, const void *mem,
    size_t len,
    char **tmp_out, uint8_t digest[SHA256_DIGEST_SIZE], uint64_t *size,
    struct error *e)
{
	struct sha256_ctx h;
	char *tmp;
	int fd, rc = 0;

	if (asprintf(&tmp, "%s/%s/.tmp-XXXXXX", s->tmp, SNAPSHOT_IMAGES) < 0)
		return error_set(e, ERR_NOMEM, "snapshot image");
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = error_set_errno(e, write_failed(s, errno), "%s: create",
		    tmp);
		free(tmp);
		return rc;
	}
	sha256_init(&h);
	*size = 0;
	if (mem != NULL) {
		sha256_update(&h, len, mem);
		if (fdio_write_full(fd, mem, len) < 0)
			rc = error_set_errno(e, write_failed(s, errno),
			    "%s: write", tmp);
		*size = len;
	} else {
		size_t bsize = 1 << 16;
		uint8_t *buf = malloc(bsize);
		ssize_t n;

		if (buf == NULL)
			rc = error_set(e, ERR_NOMEM, "%s: copy buffer", tmp);
		while (buf != NULL && (n = read(src, buf, bsize)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = error_set_errno(e, errno, "%s: read", from);
				break;
			}
			if (fdio_write_full(fd, buf, (size_t)n) < 0) {
				rc = error_set_errno(e, write_failed(s, errno),
				    "%s: write", tmp);
				break;
			}
			sha256_update(&h, (size_t)n, buf);
			*size += (uint64_t)n;
		}
		free(buf);
	}
	if (close(fd) < 0 && rc == 0)
		rc = error_set_errno(e, write_failed(s, errno), "%s: close",
		    tmp);
	if (rc < 0) {
		unlink(tmp);
		free(tmp);
		return rc;
	}
	sha256_digest(&h, SHA256_DIGEST_SIZE, digest);
	*tmp_out = tmp;
	return 0;
}

/*
 * Moves tmp to rel (relative to the snapshot), or drops it when rel
 * exists already.  Returns 1 when deduplicated, 0 when moved.
 */
static int
place(struct snapshot *s, char *tmp, const char *rel, struct error *e)
{
	char dst[4096];
	int n = snprintf(dst, sizeof(dst), "%s/%s", s->tmp, rel);
	struct stat st;

	if (n < 0 || (size_t)n >= sizeof(dst)) {
		unlink(tmp);
		return error_set(e, ERR_RANGE, "%s: path too long", rel);
	}
	if (stat(dst, &st) == 0) {
		unlink(tmp);
		return 1;
	}
	chmod(tmp, 0644);
	if (rename(tmp, dst) < 0) {
		n = error_set_errno(e, write_failed(s, errno), "%s: rename",
		    dst);
		unlink(tmp);
		return n;
	}
	return 0;
}

/* Removes a file place() moved to rel, which no manifest row names. */
static void
unplace(struct snapshot *s, const char *rel)
{
	char dst[4096];
	int n = snprintf(dst, sizeof(dst), "%s/%s", s->tmp, rel);

	if (n > 0 && (size_t)n < sizeof(dst))
		unlink(dst);
}

/*
 * The separate debuginfo of the image read from image (NULL: none on
 * disk): by build-id under the debug root, else through the image's
 * .gnu_debuglink as debugfind looks (DIR/NAME, DIR/.debug/NAME,
 * <debug root>/DIR/NAME), the CRC or build-id checked.  Returns an open
 * fd, or -1 when there is none.
 */
static int
open_debug(struct snapshot *s, const char *hex, const char *image)
{
	const char *roots[1] = { s->debug_root };
	char src[4096], *found = NULL;
	struct error ie;
	Elf *elf;
	int fd, ifd;

	snprintf(src, sizeof(src), "%s/.build-id/%.2s/%s.debug", s->debug_root,
	    hex, hex + 2);
	if ((fd = open(src, O_RDONLY | O_CLOEXEC)) >= 0 || image == NULL)
		return fd;
	if ((ifd = open(image, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (elf_version(EV_CURRENT) != EV_NONE &&
	    (elf = elf_begin(ifd, ELF_C_READ_MMAP, NULL)) != NULL) {
		if (debugfind(elf, image, NULL, roots, 1, DEBUGFIND_NO_SYSTEM,
		    NULL, &found, &ie) == 1)
			fd = open(found, O_RDONLY | O_CLOEXEC);
		elf_end(elf);
	}
	close(ifd);
	free(found);
	return fd;
}

/* Archives separate debuginfo for a build-id, if there is some. */
static int
archive_debug(struct snapshot *s, const char *hex, const char *image,
    const char *dir, char **debug_rel, struct error *e)
{
	char *tmp = NULL, rel[4096];
	uint8_t digest[SHA256_DIGEST_SIZE];
	uint64_t size;
	int fd, rc;

	*debug_rel = NULL;
	if ((fd = open_debug(s, hex, image)) < 0)
		return 0;
	rc = copy_hashed(s, fd, "separate debuginfo", NULL, 0, &tmp, digest,
	    &size, e);
	close(fd);
	if (rc < 0)
		return rc;
	snprintf(rel, sizeof(rel), "%s/debug", dir);
	rc = place(s, tmp, rel, e);
	free(tmp);
	if (rc < 0)
		return rc;
	*debug_rel = strdup(rel);
	return *debug_rel == NULL ? error_set(e, ERR_NOMEM, "snapshot") : 1;
}

static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *b = slash ? slash + 1 : path;

	return *b != '\0' && strcmp(b, ".") != 0 && strcmp(b, "..") != 0 ?
	    b : "image";
}

/*
 * Common tail of the two archive functions: the file is in tmp with its
 * digest; id/idlen its build-id; src the file it was read from (its
 * .gnu_debuglink is looked up from there), NULL when it came from memory.
 */
static int
archive_placed(struct snapshot *s, const char *path, const char *src,
    char *tmp,
    const uint8_t *digest, uint64_t size, const uint8_t *id, size_t idlen,
    int is_vdso, struct snapshot_image *img, struct error *e)
{
	struct manifest_image im = { 0 };
	char dir[256], rel[4096], *debug = NULL;
	int rc, dedup;

	memcpy(img->build_id, id, idlen);
	img->build_id_size = idlen;
	snapshot_hex(id, idlen, img->build_id_hex);
	snapshot_hex(digest, SHA256_DIGEST_SIZE, img->sha256_hex);
	if (idlen > 0) {
		snprintf(dir, sizeof(dir), "%s/.build-id/%.2s/%s",
		    SNAPSHOT_IMAGES, img->build_id_hex, img->build_id_hex + 2);
		snprintf(rel, sizeof(rel), "%s/%s", dir,
		    is_vdso ? "vdso" : "elf");
	} else {
		snprintf(dir, sizeof(dir), "%s/sha256/%s", SNAPSHOT_IMAGES,
		    img->sha256_hex);
		snprintf(rel, sizeof(rel), "%s/%s", dir, base_name(path));
	}
	if ((rc = make_dirs(s, dir, e)) < 0) {
		unlink(tmp);
		return rc;
	}
	if ((dedup = place(s, tmp, rel, e)) < 0)
		return dedup;
	img->deduplicated = dedup;
	if (idlen > 0 && !is_vdso &&
	    (rc = archive_debug(s, img->build_id_hex, src, dir, &debug,
	    e)) < 0) {
		/* No row will name it: it must not stay as if archived. */
		if (!dedup)
			unplace(s, rel);
		return rc;
	}
	img->has_debug = debug != NULL;
	im.path = (char *)path;
	im.build_id = idlen > 0 ? img->build_id_hex : NULL;
	im.sha256 = img->sha256_hex;
	im.archived = rel;
	im.debug = debug;
	im.size = size;
	im.is_vdso = is_vdso;
	rc = manifest_add_image(&s->manifest, &im, e);
	if (rc < 0 && !dedup) {
		unplace(s, rel);
		if (debug != NULL)
			unplace(s, debug);
	}
	free(debug);
	if (rc < 0)
		return rc;
	img->manifest_index = (size_t)rc;
	return 0;
}

/* Fills img from an image already in the manifest under path. */
static int
already_archived(struct snapshot *s, const char *path,
    struct snapshot_image *img)
{
	const struct manifest_image *im = manifest_find_image(&s->manifest,
	    path);
	size_t n;

	if (im == NULL)
		return 0;
	memset(img, 0, sizeof(*img));
	img->deduplicated = 1;
	img->manifest_index = (size_t)(im - s->manifest.images);
	img->has_debug = im->debug != NULL;
	snprintf(img->sha256_hex, sizeof(img->sha256_hex), "%s",
	    im->sha256 ? im->sha256 : "");
	if (im->build_id != NULL) {
		n = strlen(im->build_id) / 2;
		if (n > SNAPSHOT_BUILD_ID_MAX)
			n = SNAPSHOT_BUILD_ID_MAX;
		for (size_t i = 0; i < n; i++)
			sscanf(im->build_id + 2 * i, "%2hhx", &img->build_id[i]);
		img->build_id_size = n;
		snapshot_hex(img->build_id, n, img->build_id_hex);
	}
	return 1;
}

int
snapshot_archive_file(struct snapshot *s, const char *path,
    const char *read_path, struct snapshot_image *img, struct error *e)
{
	uint8_t id[SNAPSHOT_BUILD_ID_MAX], digest[SHA256_DIGEST_SIZE];
	const char *src = read_path != NULL ? read_path : path;
	char *tmp = NULL;
	uint64_t size;
	int fd, n, rc;

	if (already_archived(s, path, img))
		return 0;
	memset(img, 0, sizeof(*img));
	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int saved = errno;

		rc = error_set_errno(e, saved, "%s: open", src);
		if (saved == ENOENT)
			e->code = ERR_NOTFOUND, rc = -ERR_NOTFOUND;
		return rc;
	}
	n = fd_build_id(fd, id);
	if (lseek(fd, 0, SEEK_SET) < 0) {
		rc = error_set_errno(e, errno, "%s: seek", src);
		close(fd);
		return rc;
	}
	rc = copy_hashed(s, fd, src, NULL, 0, &tmp, digest, &size, e);
	close(fd);
	if (rc < 0)
		return rc;
	rc = archive_placed(s, path, src, tmp, digest, size, id, (size_t)n, 0,
	    img,
	    e);
	free(tmp);
	return rc;
}

int
snapshot_archive_memory(struct snapshot *s, const char *name,
    const void *data, size_t len, struct snapshot_image *img,
    struct error *e)
{
	uint8_t id[SNAPSHOT_BUILD_ID_MAX], digest[SHA256_DIGEST_SIZE];
	char *tmp = NULL;
	uint64_t size;
	Elf *elf;
	int n = 0, rc;

	if (already_archived(s, name, img))
		return 0;
	memset(img, 0, sizeof(*img));
	if (elf_version(EV_CURRENT) != EV_NONE &&
	    (elf = elf_memory((char *)data, len)) != NULL) {
		n = elf_build_id(elf, id);
		elf_end(elf);
	}
	rc = copy_hashed(s, -1, name, data, len, &tmp, digest, &size, e);
	if (rc < 0)
		return rc;
	rc = archive_placed(s, name, NULL, tmp, digest, size, id, (size_t)n,
	    strcmp(name, "[vdso]") == 0, img, e);
	free(tmp);
	return rc;
}

/* ---- reading ----------------------------------------------------- */

int
snapshot_member_open(const char *dir, const char *rel, struct error *e)
{
	return beneath_open_at(dir, rel, BENEATH_FILE, 0,
	    "the snapshot directory", e);
}

int
snapshot_member(const char *dir, const char *rel, char **out,
    struct error *e)
{
	int fd;

	*out = NULL;
	if ((fd = snapshot_member_open(dir, rel, e)) < 0)
		return fd;
	close(fd);
	if (asprintf(out, "%s/%s", dir, rel) < 0) {
		*out = NULL;
		return error_set(e, ERR_NOMEM, "%s", rel);
	}
	return 0;
}

/* The manifest's descriptor and its name in messages ("DIR/manifest.json"). */
static int
manifest_open(const char *dir, char **path, struct error *e)
{
	int fd;

	*path = NULL;
	if ((fd = snapshot_member_open(dir, SNAPSHOT_MANIFEST, e)) < 0)
		return fd;
	if (asprintf(path, "%s/%s", dir, SNAPSHOT_MANIFEST) < 0) {
		*path = NULL;
		close(fd);
		return error_set(e, ERR_NOMEM, "%s", SNAPSHOT_MANIFEST);
	}
	return fd;
}

int
snapshot_read_manifest(const char *dir, struct manifest *m, struct error *e)
{
	char *path;
	int fd, rc;

	manifest_init(m);
	if ((fd = manifest_open(dir, &path, e)) < 0)
		return fd;
	rc = manifest_read_fd(fd, path, m, e);
	close(fd);
	free(path);
	return rc;
}

int
snapshot_read_manifest_brief(const char *dir, struct manifest_brief *b,
    struct error *e)
{
	char *path;
	int fd, rc;

	memset(b, 0, sizeof(*b));
	if ((fd = manifest_open(dir, &path, e)) < 0)
		return fd;
	rc = manifest_read_brief_fd(fd, path, b, e);
	close(fd);
	free(path);
	return rc;
}

/* ---- commit ------------------------------------------------------ */

static int
write_manifest(struct snapshot *s, struct error *e)
{
	const char *path = snapshot_path(s, SNAPSHOT_MANIFEST);
	FILE *f;
	int rc;

	if (path == NULL)
		return error_set(e, ERR_RANGE, "%s: path too long", s->tmp);
	f = fopen(path, "wx");
	if (f == NULL)
		return error_set_errno(e, errno, "%s: create", path);
	/* jsonw keeps no errno: the failed write's is still here. */
	errno = 0;
	if ((rc = manifest_write(f, &s->manifest, e)) == -ERR_IO)
		rc = error_set_errno(e, errno != 0 ? errno : EIO,
		    "%s: write", path);
	if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) < 0))
		rc = error_set_errno(e, errno, "%s: write", path);
	if (fclose(f) != 0 && rc == 0)
		rc = error_set_errno(e, errno, "%s: close", path);
	return rc;
}

/*
 * rename(2) that never replaces an existing destination (an empty
 * directory would be replaced silently).  Filesystems without
 * RENAME_NOREPLACE get a check first, which leaves a tiny race.
 */
static int
rename_noreplace(const char *from, const char *to)
{
	struct stat st;

	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

/*
 * fsync of every file and directory in the directory open on fd (path,
 * for messages), so that the rename never shows a snapshot whose bytes
 * are not on disk.  Only the snapshot's own: syncfs would write back the
 * whole file system, a recorder's scratch rings and every other
 * process's dirty pages with it (seconds on a busy disk), for nothing.
 */
static int
sync_dir(int fd, const char *path, struct error *e)
{
	char child[4096];
	struct dirent *de;
	struct stat st;
	int rc = 0, sub, dfd;
	DIR *d;

	if ((dfd = dup(fd)) < 0)
		return error_set_errno(e, errno, "%s", path);
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return error_set_errno(e, errno, "%s", path);
	}
	while (rc == 0) {
		errno = 0;
		if ((de = readdir(d)) == NULL) {
			if (errno != 0)
				rc = error_set_errno(e, errno, "%s", path);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		sub = openat(fd, de->d_name, O_RDONLY | O_CLOEXEC |
		    O_NOFOLLOW | O_NONBLOCK);
		if (sub < 0 && errno == ELOOP)
			continue;	/* a link: its directory's fsync keeps it */
		if (sub < 0) {
			rc = error_set_errno(e, errno, "%s", child);
			break;
		}
		if (fstat(sub, &st) < 0)
			rc = error_set_errno(e, errno, "%s", child);
		else if (S_ISDIR(st.st_mode))
			rc = sync_dir(sub, child, e);
		else if (S_ISREG(st.st_mode) && fsync(sub) < 0)
			rc = error_set_errno(e, errno, "%s: fsync", child);
		close(sub);
	}
	closedir(d);
	if (rc == 0 && fsync(fd) < 0)
		rc = error_set_errno(e, errno, "%s: fsync", path);
	return rc;
}

static int
sync_tree(const char *path, struct error *e)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return error_set_errno(e, errno, "%s", path);
	rc = sync_dir(fd, path, e);
	close(fd);
	return rc;
}

int
snapshot_commit(struct snapshot *s, struct error *e)
{
	struct snapshot_priv *p = (struct snapshot_priv *)s;
	int rc;

	if ((rc = write_manifest(s, e)) < 0) {
		snapshot_abort(s);
		return rc;
	}
	/* a snapshot holds no owner file; the window until the rename is
	 * too short to matter */
	if (p->owner_fd >= 0) {
		rc = scratch_disown(s->tmp, p->owner_fd, e);
		p->owner_fd = -1;
		if (rc < 0) {
			snapshot_abort(s);
			return rc;
		}
	}
	if ((rc = sync_tree(s->tmp, e)) < 0) {
		snapshot_abort(s);
		return rc;
	}
	if (rename_noreplace(s->tmp, s->dest) < 0) {
		int saved = errno;

		rc = error_set_errno(e, saved, "%s: rename into place", s->dest);
		if (saved == EEXIST)
			e->code = ERR_EXISTS, rc = -ERR_EXISTS;
		snapshot_abort(s);
		return rc;
	}
	free(s->tmp);
	s->tmp = NULL;
	snapshot_free(s);
	return 0;
}

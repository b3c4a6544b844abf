/* debugfind: see debugfind.h. */
#include "sym/debugfind.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "sym/symtab_int.h"

/* What a candidate must match. */
struct want {
	const unsigned char *id;
	size_t id_len;
	int check_crc;
	uint32_t crc;
	struct stat image;		/* to refuse the image itself */
	const char *root;		/* files inside it open beneath it */
	struct symtab_refused *refused;	/* candidates refused there */
};

uint32_t
debugfind_crc32(uint32_t crc, const unsigned char *buf, size_t len)
{
	size_t i;
	int k;

	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

size_t
debugfind_build_id(Elf *elf, const unsigned char **id)
{
	const void *p;
	ssize_t n;

	n = dwelf_elf_gnu_build_id(elf, &p);
	if (n <= 0)
		return 0;
	*id = p;
	return (size_t)n;
}

static int
file_crc32(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	ssize_t n;
	uint32_t c = 0;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c = debugfind_crc32(c, buf, (size_t)n);
	}
	*crc = c;
	return 0;
}

/* 1 when the file at path is the debuginfo w describes. */
static int
candidate_matches(const char *path, const struct want *w)
{
	struct stat st;
	const unsigned char *id;
	size_t len;
	uint32_t crc;
	Elf *elf;
	struct error why;
	int fd, ok = 0;

	/* A candidate that cannot be opened is none; one refused is
	 * counted, for the tool to say. */
	error_clear(&why);
	if ((fd = symfile_open(w->root, path, &why)) < 0) {
		symtab_note_refused(w->refused, fd, &why);
		return 0;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_dev == w->image.st_dev && st.st_ino == w->image.st_ino)) {
		close(fd);
		return 0;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf != NULL && elf_kind(elf) == ELF_K_ELF) {
		len = debugfind_build_id(elf, &id);
		if (w->id_len > 0 && len > 0)
			ok = len == w->id_len && memcmp(id, w->id, len) == 0;
		else if (w->check_crc)
			ok = lseek(fd, 0, SEEK_SET) == 0 &&
			    file_crc32(fd, &crc) == 0 && crc == w->crc;
	}
	elf_end(elf);
	close(fd);
	return ok;
}

/* Tries path; returns 1 and hands it over in *out, 0, or -ERR_NOMEM. */
static int
try_path(char *path, const struct want *w, char **out, struct error *e)
{
	if (path == NULL)
		return error_set(e, ERR_NOMEM, "debuginfo path");
	if (candidate_matches(path, w)) {
		*out = path;
		return 1;
	}
	free(path);
	return 0;
}

static char *
build_id_path(const char *root, const unsigned char *id, size_t len,
    int perf_layout)
{
	char hex[2 * 64 + 1];
	char *p;
	size_t i;

	if (len > 64 || len < 2)
		return NULL;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (asprintf(&p, "%s/.build-id/%.2s/%s%s", root, hex, hex + 2,
	    perf_layout ? "/debug" : ".debug") < 0)
		return NULL;
	return p;
}

static int
find_by_build_id(const char *root, const struct want *w, char **out,
    struct error *e)
{
	int layout, rc;

	for (layout = 0; layout < 2; layout++) {
		rc = try_path(build_id_path(root, w->id, w->id_len, layout), w,
		    out, e);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Tries fmt-built paths under root (may be "") for the debuglink name. */
static int
try_link(const char *root, const char *dir, const char *sub,
    const char *name, const struct want *w, char **out, struct error *e)
{
	char *p;

	if (asprintf(&p, "%s%s/%s%s", root, dir, sub, name) < 0)
		p = NULL;
	return try_path(p, w, out, e);
}

static int
find_by_debuglink(Elf *elf, const char *image_path, const char *const *roots,
    size_t n_roots, unsigned flags, struct want *w, char **out,
    struct error *e)
{
	const char *name, *slash;
	GElf_Word crc;
	char *dir, *real;
	size_t i;
	int rc;

	name = dwelf_elf_gnu_debuglink(elf, &crc);
	if (name == NULL || *name == '\0' || strchr(name, '/') != NULL)
		return 0;
	w->check_crc = 1;
	w->crc = crc;
	/*
	 * The directory of the file itself, not of a symbolic link to it;
	 * inside root no link was followed to the image, and resolving one
	 * swapped in since would lead the search out.
	 */
	real = beneath_inside(w->root, image_path) != NULL ? NULL :
	    realpath(image_path, NULL);
	if (real != NULL)
		image_path = real;
	slash = strrchr(image_path, '/');
	if (slash == NULL)
		dir = strdup(".");
	else if (slash == image_path)
		dir = strdup("");
	else
		dir = strndup(image_path, (size_t)(slash - image_path));
	free(real);
	if (dir == NULL)
		return error_set(e, ERR_NOMEM, "debuginfo path");
	rc = try_link("", dir, "", name, w, out, e);
	if (rc == 0)
		rc = try_link("", dir, ".debug/", name, w, out, e);
	/* ROOT/DIR/NAME only makes sense for an absolute DIR. */
	for (i = 0; rc == 0 && dir[0] == '/' && i < n_roots; i++)
		rc = try_link(roots[i], dir, "", name, w, out, e);
	if (rc == 0 && dir[0] == '/' && !(flags & DEBUGFIND_NO_SYSTEM))
		rc = try_link(DEBUGFIND_SYSTEM_DIR, dir, "", name, w, out, e);
	free(dir);
	return rc;
}

int
debugfind(Elf *elf, const char *image_path, const char *root,
    const char *const *roots, size_t n_roots, unsigned flags,
    struct symtab_refused *refused, char **out, struct error *e)
{
	struct want w;
	size_t i;
	int rc = 0;

	*out = NULL;
	memset(&w, 0, sizeof(w));
	w.root = root;
	w.refused = refused;
	if (stat(image_path, &w.image) != 0)
		memset(&w.image, 0, sizeof(w.image));
	w.id_len = debugfind_build_id(elf, &w.id);
	if (w.id_len > 0) {
		for (i = 0; rc == 0 && i < n_roots; i++)
			rc = find_by_build_id(roots[i], &w, out, e);
		if (rc == 0 && !(flags & DEBUGFIND_NO_SYSTEM))
			rc = find_by_build_id(DEBUGFIND_SYSTEM_DIR, &w, out, e);
	}
	if (rc == 0 && !(flags & DEBUGFIND_NO_DEBUGLINK))
		rc = find_by_debuglink(elf, image_path, roots, n_roots, flags,
		    &w, out, e);
	return rc;
}

int
debugfind_alt(const char *name, const unsigned char *id, size_t id_len,
    const char *debug_path, const char *root, const char *const *roots,
    size_t n_roots, unsigned flags, struct symtab_refused *refused,
    char **out, struct error *e)
{
	struct want w;
	const char *slash;
	char *p;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (id_len == 0)
		return 0;
	memset(&w, 0, sizeof(w));
	w.id = id;
	w.id_len = id_len;
	w.image.st_ino = (ino_t)-1;
	w.root = root;
	w.refused = refused;
	for (i = 0; rc == 0 && i < n_roots; i++)
		rc = find_by_build_id(roots[i], &w, out, e);
	if (rc == 0 && !(flags & DEBUGFIND_NO_SYSTEM))
		rc = find_by_build_id(DEBUGFIND_SYSTEM_DIR, &w, out, e);
	if (rc != 0 || name == NULL || *name == '\0')
		return rc;
	if (name[0] == '/') {
		p = strdup(name);
	} else {
		slash = strrchr(debug_path, '/');
		if (slash == NULL)
			p = strdup(name);
		else if (asprintf(&p, "%.*s/%s", (int)(slash - debug_path),
		    debug_path, name) < 0)
			p = NULL;
	}
	return try_path(p, &w, out, e);
}

/*
 * t_jit_archive: the recorders' JIT archive (cmd/ptrec/jit_archive): the
 * JIT map copied into the snapshot with its manifest row, and code bytes
 * turned into an ELF image that symtab (as ptspans) and perf's way of
 * reading (file offset = ip - start + pgoff) both understand.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "jit_archive.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "sym/symtab.h"
#include "tap.h"

#define PID 424242
#define START 0x7f1234560000ull

static char tmp[] = "/tmp/t_jit_archive.XXXXXX";

static void
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static void
test_map(struct snapshot *s, const char *copy)
{
	struct error e;
	char path[PATH_MAX];

	IS_INT(rec_jit_archive_map(s, PID + 1, "/nonexistent/copy", &e), 0,
	    "no copy and no live map: nothing archived");
	IS_INT((int)s->manifest.nr_jit_maps, 0, "no row for it");
	IS_INT(rec_jit_archive_map(s, PID + 2, tmp, &e), 0,
	    "a map that cannot be copied (a directory) is not archived");
	OK(s->manifest.nr_warnings == 1 && strstr(s->manifest.warnings[0],
	    "JIT map") != NULL, "a warning says so");
	IS_INT((int)s->manifest.nr_jit_maps, 0, "and no row");
	IS_INT(rec_jit_archive_map(s, PID, copy, &e), 1, "copy archived");
	IS_INT((int)s->manifest.nr_jit_maps, 1, "one row");
	IS_INT((int)s->manifest.jit_maps[0].pid, PID, "row pid");
	IS_STR(s->manifest.jit_maps[0].path, "/tmp/perf-424242.map",
	    "row path: where the program wrote it");
	IS_STR(s->manifest.jit_maps[0].archived, "jit/perf-424242.map",
	    "row archived");
	snprintf(path, sizeof(path), "%s",
	    snapshot_path(s, "jit/perf-424242.map"));
	OK(access(path, R_OK) == 0, "jit/perf-424242.map written");
	IS_INT(rec_jit_archive_map(s, PID, copy, &e), 1, "again: no-op");
	IS_INT((int)s->manifest.nr_jit_maps, 1, "still one row");
}

/*
 * A live map that is not a plain file of ours is refused before it is
 * read (the open never blocks on a FIFO), said on stderr and in the
 * manifest's warnings, and gets no row.  live is /tmp/perf-PID.map,
 * which this test makes (PIDs no process here has: left alone when
 * something is there already).
 */
static void
refused_live(struct snapshot *s, int pid, const char *how, const char *copy,
    const char *why)
{
	char live[64], want[256];
	size_t warned = s->manifest.nr_warnings;
	struct stat st;
	struct error e;
	int made = -1;

	rec_jit_map_path(pid, live, sizeof(live));
	if (lstat(live, &st) == 0) {
		OK(1, "%s: %s exists already # SKIP", how, live);
		return;
	}
	if (strcmp(how, "link") == 0)
		made = symlink(copy, live);
	else if (strcmp(how, "fifo") == 0)
		made = mkfifo(live, 0600);
	else if ((made = open(live, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0)
		made = (close(made) == 0 && chown(live, 4242, 4242) == 0) ?
		    0 : -1;
	OK(made == 0, "%s: %s made", how, live);
	IS_INT(rec_jit_archive_map(s, pid, NULL, &e), 0,
	    "%s: not archived", how);
	snprintf(want, sizeof(want), "JIT map %s not archived: %s", live, why);
	IS_STR(s->manifest.nr_warnings == warned + 1 ?
	    s->manifest.warnings[warned] : NULL, want, "%s: the warning", how);
	OK(manifest_find_jit_map(&s->manifest, (uint32_t)pid) == NULL,
	    "%s: no row", how);
	unlink(live);
}

static void
test_refused(struct snapshot *s, const char *copy)
{
	refused_live(s, PID + 3, "link", copy, "a symbolic link; refused");
	refused_live(s, PID + 4, "fifo", copy,
	    "not a regular file (a FIFO, a device?); refused");
	if (geteuid() != 0)
		OK(1, "another user's map: needs root to make one # SKIP");
	else
		refused_live(s, PID + 5, "owner", copy, "owned by uid 4242, "
		    "neither the recording user (uid 0) nor root; refused");
}

/* The bytes at file offset off of path. */
static int
read_at(const char *path, uint64_t off, uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static void
test_image(struct snapshot *s)
{
	struct rec_jit_image im;
	struct sym_mapping sm;
	const struct sym *sym;
	struct symtab *st = NULL;
	struct error e;
	uint8_t code[0x100], back[0x100];
	char path[PATH_MAX];
	uint64_t addr = 0;

	for (size_t i = 0; i < sizeof(code); i++)
		code[i] = (uint8_t)(i * 7 + 1);
	IS_INT(rec_jit_image(s, PID, START, code, 0, &im, &e), -ERR_RANGE,
	    "empty code refused");
	IS_INT(rec_jit_image(s, PID, START, code, sizeof(code), &im, &e), 0,
	    "image archived");
	IS_STR(im.name, "//anon-jit/424242/7f1234560000", "image name");
	OK(rec_jit_is_image_name(im.name), "its name is a JIT image name");
	OK(!rec_jit_is_image_name("//anon"), "//anon is not");
	IS_U64(im.pgoff, 0x1000, "pgoff: page-aligned start at 0x1000");
	IS_INT((int)im.n_syms, 2, "two of the map's three functions inside");
	IS_INT((int)im.img.build_id_size, 20, "20-byte build-id");
	IS_INT((int)s->manifest.nr_images, 1, "manifest image row");
	IS_STR(s->manifest.images[0].path, im.name, "row named as MMAP2");
	snprintf(path, sizeof(path), "%s/%s", s->tmp,
	    s->manifest.images[0].archived);
	OK(strncmp(s->manifest.images[0].archived, "images/.build-id/", 17) ==
	    0, "archived by build-id");
	OK(read_at(path, im.pgoff + 0x10, back, 0x20) == 0 &&
	    memcmp(back, code + 0x10, 0x20) == 0,
	    "bytes at ip - start + pgoff are the code's");
	IS_INT(symtab_open(path, NULL, &st, &e), 0, "symtab opens the image");
	if (st == NULL)
		return;
	sm.start = START;
	sm.end = START + sizeof(code);
	sm.pgoff = im.pgoff;
	IS_INT(symtab_addr_from_map(st, &sm, START + 0x24, &addr), 0,
	    "address from mapping");
	IS_U64(addr, START + 0x24, "ELF address is the run-time address");
	sym = symtab_lookup(st, addr);
	IS_STR(sym != NULL ? sym->name : "(none)", "second fn",
	    "named from the map (spaces kept)");
	sym = symtab_lookup(st, START + 3);
	IS_STR(sym != NULL ? sym->name : "(none)", "first",
	    "first function");
	OK(symtab_lookup(st, START + 0x80) == NULL, "a gap has no name");
	symtab_free(st);
	/* Unaligned start: the offset keeps the page offset. */
	IS_INT(rec_jit_image(s, PID, START + 0x2010, code, 16, &im, &e), 0,
	    "unaligned code archived");
	IS_U64(im.pgoff, 0x1010, "pgoff keeps the page offset");
	IS_INT((int)im.n_syms, 0, "no function inside");
}

static void
test_round_trip(struct snapshot *s, const char *dest)
{
	struct manifest m;
	struct error e;
	char path[PATH_MAX + 32];

	IS_INT(snapshot_commit(s, &e), 0, "snapshot committed");
	snprintf(path, sizeof(path), "%s/manifest.json", dest);
	IS_INT(manifest_read(path, &m, &e), 0, "manifest reads back");
	IS_INT((int)m.nr_jit_maps, 1, "jit_maps row read");
	OK(m.nr_jit_maps == 1 && m.jit_maps[0].pid == PID &&
	    strcmp(m.jit_maps[0].archived, "jit/perf-424242.map") == 0,
	    "row as written");
	OK(manifest_find_jit_map(&m, PID) != NULL, "found by pid");
	OK(manifest_find_jit_map(&m, PID + 1) == NULL, "not for another");
	manifest_free(&m);
}

int
main(void)
{
	struct snapshot *s = NULL;
	struct error e;
	char copy[PATH_MAX], dest[PATH_MAX];

	if (mkdtemp(tmp) == NULL) {
		perror(tmp);
		return 1;
	}
	snprintf(copy, sizeof(copy), "%s/map.copy", tmp);
	write_text(copy, "7f1234560000 10 first\n"
	    "7f1234560020 0x20 second fn\n"
	    "7f12345f0000 8 elsewhere\n");
	snprintf(dest, sizeof(dest), "%s/snap", tmp);
	IS_INT(snapshot_begin(&s, dest, &e), 0, "snapshot begins");
	if (s == NULL)
		return tap_done();
	test_map(s, copy);
	test_refused(s, copy);
	test_image(s);
	test_round_trip(s, dest);
	STEP(cleanup_remove_tree(tmp));
	return tap_done();
}

/*
 * t_perfdata_pieces: AUXTRACE data written from pieces (memory, and
 * ranges of files the kernel copies) gives the same perf.data, byte for
 * byte, as the same trace written from one buffer; a source file that is
 * too short or unreadable is an error naming it, and the writer is
 * unusable after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt/perfdata.h"
#include "tap.h"

static char tmpdir[] = "/tmp/t_perfdata_pieces.XXXXXX";

/* More than the writer's copy buffer (1 MiB), not a multiple of 8. */
#define BIG ((3u << 20) + 5)

static char *
tmp_path(const char *name)
{
	static char path[4][256];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", tmpdir, name);
	return p;
}

static struct perfdata_writer *
open_writer(const char *path)
{
	struct perfdata_writer_config cfg;
	struct perfdata_writer *w = NULL;
	struct error e;

	perfdata_writer_config_default(&cfg, 0);
	unlink(path);
	if (perfdata_writer_open(&w, path, &cfg, &e) < 0 ||
	    perfdata_write_auxtrace_info(w, &e) < 0) {
		DIAG("%s", e.msg);
		perfdata_writer_abort(w);
		return NULL;
	}
	return w;
}

static const struct perfdata_auxtrace queue = { .offset = 4096,
	.reference = 77, .idx = 0, .tid = 42, .cpu = PERFDATA_NO_CPU };

/* The file one buffer gives, to compare with. */
static int
write_whole(const char *path, const uint8_t *data, size_t len)
{
	struct perfdata_writer *w = open_writer(path);
	struct error e;

	if (w == NULL)
		return -1;
	if (perfdata_write_auxtrace(w, &queue, data, len, &e) < 0 ||
	    perfdata_write_finished_round(w, &e) < 0) {
		DIAG("%s", e.msg);
		perfdata_writer_abort(w);
		return -1;
	}
	return perfdata_writer_close(w, &e);
}

static int
write_pieces(const char *path, const struct perfdata_piece *p, size_t n,
    struct error *e)
{
	struct perfdata_writer *w = open_writer(path);
	int rc;

	if (w == NULL)
		return -1;
	if ((rc = perfdata_write_auxtrace_pieces(w, &queue, p, n, e)) < 0 ||
	    (rc = perfdata_write_finished_round(w, e)) < 0) {
		perfdata_writer_abort(w);
		return rc;
	}
	return perfdata_writer_close(w, e);
}

static uint8_t *
slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0 ||
	    (p = malloc((size_t)st.st_size + 1)) == NULL) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (read(fd, p, (size_t)st.st_size) != st.st_size) {
		free(p);
		p = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

static void
same_file(const char *got, const char *want, const char *what)
{
	size_t ng = 0, nw = 0;
	uint8_t *g = slurp(got, &ng), *w = slurp(want, &nw);

	OK(g != NULL && w != NULL && ng == nw && memcmp(g, w, nw) == 0,
	    "%s: perf.data byte for byte as from one buffer (%zu bytes)",
	    what, nw);
	free(g);
	free(w);
}

/* A file holding junk, then data[0..len), then junk: at offset 100. */
static int
source_file(const char *path, const uint8_t *data, size_t len)
{
	static const uint8_t junk[100] = { 0xee };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, junk, sizeof(junk)) != sizeof(junk) ||
	    write(fd, data, len) != (ssize_t)len ||
	    write(fd, junk, sizeof(junk)) != sizeof(junk)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int
main(void)
{
	struct perfdata_piece p[3];
	const char *name = "ring.7";
	struct perfdata *pd = NULL;
	struct error e;
	uint8_t *data;
	size_t i;
	int fd, mfd, rc;

	if (mkdtemp(tmpdir) == NULL || (data = malloc(BIG)) == NULL)
		return 1;
	for (i = 0; i < BIG; i++)
		data[i] = (uint8_t)(i * 7 + i / 4099);
	STEP(write_whole(tmp_path("whole.data"), data, BIG));
	STEP(fd = source_file(tmp_path("src"), data, BIG));

	/* memory, a file range, memory: the wrapped ring and its tail */
	p[0] = (struct perfdata_piece){ .mem = data, .fd = -1, .len = 1000 };
	p[1] = (struct perfdata_piece){ .fd = fd, .off = 100 + 1000,
	    .len = BIG - 1003, .name = name };
	p[2] = (struct perfdata_piece){ .mem = data + BIG - 3, .fd = -1,
	    .len = 3 };
	rc = write_pieces(tmp_path("mixed.data"), p, 3, &e);
	IS_INT(rc, 0, "memory and a file range written together");
	same_file(tmp_path("mixed.data"), tmp_path("whole.data"),
	    "memory, file, memory");

	/* two ranges of one file, in the order given, not the file's */
	p[0] = (struct perfdata_piece){ .fd = fd, .off = 100, .len = 4096,
	    .name = name };
	p[1] = (struct perfdata_piece){ .fd = fd, .off = 100 + 4096,
	    .len = BIG - 4096, .name = name };
	rc = write_pieces(tmp_path("two.data"), p, 2, &e);
	IS_INT(rc, 0, "two ranges of one file");
	same_file(tmp_path("two.data"), tmp_path("whole.data"),
	    "two file ranges");
	error_clear(&e);
	if (OK(perfdata_read(&pd, tmp_path("two.data"), &e) == 0,
	    "the reader takes it")) {
		IS_INT(pd->nr_auxtrace, 1, "one AUXTRACE record");
		IS_U64(pd->auxtrace[0].size, (BIG + 7) / 8 * 8,
		    "its size, padded to 8");
		OK(memcmp(pd->auxtrace[0].data, data, BIG) == 0,
		    "its bytes are the trace");
		perfdata_free(pd);
	} else {
		DIAG("%s", e.msg);
	}

	/* an empty range is nothing; a source on another file system (a
	 * memfd: tmpfs) takes the copy through memory where the kernel
	 * refuses the copy across */
	mfd = memfd_create("trace", MFD_CLOEXEC);
	OK(mfd >= 0 && write(mfd, data, BIG) == (ssize_t)BIG,
	    "a memfd holds the trace");
	p[0] = (struct perfdata_piece){ .fd = mfd, .off = 0, .len = 0,
	    .name = name };
	p[1] = (struct perfdata_piece){ .fd = mfd, .off = 0, .len = BIG,
	    .name = name };
	rc = write_pieces(tmp_path("memfd.data"), p, 2, &e);
	IS_INT(rc, 0, "a range of a memfd");
	same_file(tmp_path("memfd.data"), tmp_path("whole.data"),
	    "memfd range");

	/* a file that ends inside its range */
	p[0] = (struct perfdata_piece){ .fd = fd, .off = 100 + 8,
	    .len = BIG + 300, .name = name };
	error_clear(&e);
	rc = write_pieces(tmp_path("short.data"), p, 1, &e);
	IS_INT(rc, -ERR_TRUNCATED, "a file too short: ERR_TRUNCATED");
	IS_STR(e.msg, "ring.7: ends at byte 3145933, inside the 3146033 bytes "
	    "of trace at 108", "says where the file ends");
	OK(access(tmp_path("short.data"), F_OK) < 0 && errno == ENOENT,
	    "and no perf.data is left");

	/* a descriptor that cannot be read */
	close(mfd);
	mfd = open(tmp_path("src"), O_WRONLY);
	p[0] = (struct perfdata_piece){ .fd = mfd, .off = 100, .len = 10,
	    .name = name };
	error_clear(&e);
	rc = write_pieces(tmp_path("unread.data"), p, 1, &e);
	IS_INT(rc, -ERR_IO, "an unreadable source: ERR_IO");
	IS_STR(e.msg, "ring.7: read at offset 100: Bad file descriptor",
	    "names the source, not perf.data");

	/* no memory and no file */
	p[0] = (struct perfdata_piece){ .fd = -1, .len = 10 };
	error_clear(&e);
	rc = write_pieces(tmp_path("null.data"), p, 1, &e);
	IS_INT(rc, -ERR_INVALID, "a piece with neither: ERR_INVALID");

	close(mfd);
	close(fd);
	free(data);
	unlink(tmp_path("whole.data"));
	unlink(tmp_path("mixed.data"));
	unlink(tmp_path("two.data"));
	unlink(tmp_path("memfd.data"));
	unlink(tmp_path("null.data"));
	unlink(tmp_path("src"));
	rmdir(tmpdir);
	return tap_done();
}

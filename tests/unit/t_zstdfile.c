/*
 * Unit tests of lib/fmt/zstdfile: lines written compressed read back the
 * same through getline, a plain file reads through the same call, and a
 * compressed file cut short or damaged is a stream error, never a short
 * read that looks whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/zstdfile.h"
#include "tap.h"

static char path[256];

/* Lines read from path: their count, their bytes summed, and whether the
 * stream ended in an error. */
static void
read_back(size_t *lines, size_t *bytes, int *failed)
{
	struct error e;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = zstdfile_open_read(path, &e);

	*lines = *bytes = 0;
	*failed = f == NULL;
	if (f == NULL)
		return;
	while ((n = getline(&line, &cap, f)) > 0) {
		(*lines)++;
		*bytes += (size_t)n;
	}
	*failed = ferror(f) != 0;
	free(line);
	fclose(f);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	size_t lines, bytes, want = 0;
	struct error e;
	int failed;
	FILE *f;
	long size;

	snprintf(path, sizeof(path), "%s/t_zstdfile.%d", tmp ? tmp : "/tmp",
	    (int)getpid());
	f = zstdfile_open_write(path, ZSTDFILE_LEVEL, &e);
	OK(f != NULL, "opened for writing");
	for (int i = 0; f != NULL && i < 200000; i++)
		want += (size_t)fprintf(f, "{\"v\":1,\"id\":%d,\"fn\":\"f%d\"}\n",
		    i, i % 97);
	IS_INT(f != NULL ? fclose(f) : -1, 0, "closed: the frame ended");
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	OK(size > 0 && (size_t)size * 10 < want, "%ld bytes for %zu", size,
	    want);
	read_back(&lines, &bytes, &failed);
	IS_INT(failed, 0, "read back without an error");
	IS_U64(lines, 200000, "every line");
	IS_U64(bytes, want, "every byte");
	if (truncate(path, size - 100) == 0) {
		read_back(&lines, &bytes, &failed);
		IS_INT(failed, 1, "a frame cut short is a stream error");
		OK(lines < 200000, "after %zu lines", lines);
	}
	if (truncate(path, 4) == 0) {
		read_back(&lines, &bytes, &failed);
		IS_INT(failed, 1, "the magic alone is a stream error");
	}
	f = fopen(path, "w");
	fputs("plain\nlines\n", f);
	fclose(f);
	read_back(&lines, &bytes, &failed);
	IS_INT(failed, 0, "a plain file reads");
	IS_U64(lines, 2, "as it is");
	unlink(path);
	OK(zstdfile_open_read(path, &e) == NULL && e.code == ERR_NOTFOUND,
	    "a missing file: %s", e.msg);
	return tap_done();
}

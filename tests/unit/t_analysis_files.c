/*
 * lib/span/analysis and lib/span/spandir: gaps.jsonl, threads.jsonl and
 * events.jsonl are checked against the XXH64 the manifest holds of each
 * (gaps_xxh64, threads_xxh64, events_xxh64) whenever they are opened: a
 * whole file reads from its first byte, one with a digit changed is
 * refused naming the file and the checksum, a damaged member is refused
 * as a damaged manifest, and a manifest written before the members (none
 * of them) leaves the files unchecked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xxh64.h"
#include "span/analysis.h"
#include "span/spandir.h"
#include "tap.h"

static const char *const text[SPANDIR_JSONL_NR] = {
	[SPANDIR_GAPS] = "{\"v\":1,\"tid\":1,\"cause\":\"syscall\",\"start_ns\":50,"
	    "\"end_ns\":60}\n",
	[SPANDIR_THREADS] = "{\"v\":1,\"tid\":1,\"pid\":1,\"name\":\"a\","
	    "\"first_ns\":0,\"last_ns\":100}\n",
	[SPANDIR_EVENTS] = "{\"v\":1,\"kind\":\"thread_start\",\"tid\":1,"
	    "\"time_ns\":7,\"ip\":null}\n",
};

static const enum spandir_file files[] = { SPANDIR_GAPS, SPANDIR_THREADS,
    SPANDIR_EVENTS };

static int
put(const char *dir, const char *name, const char *s, size_t n)
{
	char path[512];
	FILE *f;
	int bad;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	bad = fwrite(s, 1, n, f) != n;
	return fclose(f) != 0 || bad ? -1 : 0;
}

/* manifest.json of one span, sealed, with the checksum members when
 * sums is set (extra: one more member's text, or NULL). */
static int
put_manifest(const char *dir, int sums, const char *extra)
{
	char body[1024];
	size_t len;

	len = (size_t)snprintf(body, sizeof(body), "{\"v\":%d,\"quality\":"
	    "{\"spans\":1},", SPANDIR_MANIFEST_VERSION);
	for (size_t i = 0; sums && i < sizeof(files) / sizeof(files[0]); i++)
		len += (size_t)snprintf(body + len, sizeof(body) - len,
		    "\"%s\":\"0x%016" PRIx64 "\",",
		    spandir_xxh64_member(files[i]), xxh64(text[files[i]],
		    strlen(text[files[i]]), 0));
	if (extra != NULL)
		len += (size_t)snprintf(body + len, sizeof(body) - len, "%s,",
		    extra);
	spandir_manifest_tail(body, len, body + len);
	return put(dir, "manifest.json", body, len + SPANDIR_MANIFEST_TAIL);
}

static int
fixture(const char *dir)
{
	struct spanidx_row r = { .id = 1, .tid = 1, .pid = 1, .fn = "main",
	    .start_ns = 0, .end_ns = 100, .self_ns = 100 };
	struct spanidx_writer *w;
	struct error e;
	char path[512];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (put(dir, spandir_file_name(files[i]), text[files[i]],
		    strlen(text[files[i]])) < 0)
			return -1;
	snprintf(path, sizeof(path), "%s/index.bin", dir);
	if (spanidx_writer_new(&w, &e) < 0)
		return -1;
	if (spanidx_add(w, &r, &e) < 0) {
		spanidx_writer_free(w);
		return -1;
	}
	if (spanidx_writer_finish(w, path, &e) < 0)
		return -1;
	return put_manifest(dir, 1, NULL);
}

/* What analysis_open_jsonl reads of f, or NULL with e. */
static char *
slurp(const struct analysis *a, enum spandir_file f, struct error *e)
{
	const char *name;
	char *buf = NULL;
	size_t len = 0;
	FILE *in = analysis_open_jsonl(a, f, &name, e), *out;
	int c;

	if (in == NULL)
		return NULL;
	if ((out = open_memstream(&buf, &len)) == NULL) {
		fclose(in);
		return NULL;
	}
	while ((c = getc(in)) != EOF)
		putc(c, out);
	fclose(in);
	fclose(out);
	return buf;
}

/* The first digit of dir's file f made another. */
static void
change_digit(const char *dir, enum spandir_file f)
{
	char *s = strdup(text[f]), *d;

	if (s == NULL)
		return;
	d = strpbrk(s + 6, "0123456789");	/* past "v":1 */
	*d = *d == '9' ? '8' : (char)(*d + 1);
	OK(put(dir, spandir_file_name(f), s, strlen(s)) == 0,
	    "%s: a digit changed", spandir_file_name(f));
	free(s);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[200], cmd[300], want[300];
	struct analysis a;
	struct error e;
	const char *m;
	uint64_t sum;
	char *got;
	int fd;

	snprintf(dir, sizeof(dir), "%s/t_analysis_files.XXXXXX", tmp && *tmp &&
	    strlen(tmp) < 150 ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL || fixture(dir) < 0) {
		OK(0, "fixture");
		return tap_done();
	}

	/* The members: which files have one, and how they are read. */
	OK(spandir_xxh64_member(SPANDIR_SPANS) == NULL &&
	    spandir_xxh64_member(SPANDIR_INLINE) == NULL &&
	    spandir_xxh64_member(SPANDIR_INDEX) == NULL &&
	    spandir_xxh64_member(SPANDIR_AGGREGATES) == NULL,
	    "spans, inline, index and aggregates have checksums of their own");
	{
		json_t *doc = json_pack("{s:s, s:s, s:s, s:i}", "a",
		    "0x00000000000000ff", "b", "0x00000000000000FF", "c", "0xff",
		    "d", 255);

		IS_INT(spandir_manifest_xxh64(doc, "a", &sum), 1, "a checksum");
		IS_U64(sum, 255, "its value");
		IS_INT(spandir_manifest_xxh64(doc, "b", &sum), -1,
		    "upper case: not as written");
		IS_INT(spandir_manifest_xxh64(doc, "c", &sum), -1,
		    "too short");
		IS_INT(spandir_manifest_xxh64(doc, "d", &sum), -1,
		    "a number");
		IS_INT(spandir_manifest_xxh64(doc, "e", &sum), 0, "absent");
		json_decref(doc);
	}
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/events.jsonl", dir);
		fd = open(path, O_RDONLY);
		OK(fd >= 0 && lseek(fd, 5, SEEK_SET) == 5 &&
		    spandir_fd_xxh64(fd, &sum) == 0 && sum ==
		    xxh64(text[SPANDIR_EVENTS] + 5, strlen(text[SPANDIR_EVENTS]) -
		    5, 0), "spandir_fd_xxh64: from the offset to the end");
		if (fd >= 0)
			close(fd);
	}

	/* Whole: read from their first byte. */
	STEP(analysis_open(&a, dir, &e));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		got = slurp(&a, files[i], &e);
		IS_STR(got ? got : e.msg, text[files[i]], "%s read whole",
		    spandir_file_name(files[i]));
		free(got);
	}
	analysis_close(&a);

	/* A digit changed in each: refused, naming the file. */
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *name = spandir_file_name(files[i]);

		change_digit(dir, files[i]);
		STEP(analysis_open(&a, dir, &e));
		got = slurp(&a, files[i], &e);
		OK(got == NULL && e.code == ERR_FORMAT, "%s refused", name);
		snprintf(want, sizeof(want), "%s does not match the checksum the "
		    "manifest holds (%s 0x%016" PRIx64 "): it was changed or "
		    "damaged (run ptspans again)", name,
		    spandir_xxh64_member(files[i]), xxh64(text[files[i]],
		    strlen(text[files[i]]), 0));
		IS_STR(e.msg, want, "%s: the message", name);
		free(got);
		analysis_close(&a);
	}

	/* Written before the members: read unchecked, as they are. */
	STEP(put_manifest(dir, 0, NULL));
	STEP(analysis_open(&a, dir, &e));
	got = slurp(&a, SPANDIR_GAPS, &e);
	OK(got != NULL && strcmp(got, text[SPANDIR_GAPS]) != 0,
	    "no members: the changed gaps.jsonl read");
	free(got);
	analysis_close(&a);

	/* A member that is no checksum: a damaged manifest. */
	m = "\"threads_xxh64\":\"0x12\"";
	STEP(put_manifest(dir, 0, m));
	STEP(analysis_open(&a, dir, &e));
	got = slurp(&a, SPANDIR_THREADS, &e);
	OK(got == NULL && e.code == ERR_FORMAT, "a damaged member refused");
	IS_STR(e.msg, "manifest.json: threads_xxh64 is not a checksum: the "
	    "manifest is damaged (run ptspans again)", "saying so");
	free(got);
	got = slurp(&a, SPANDIR_GAPS, &e);
	OK(got != NULL, "the other files read");
	free(got);
	analysis_close(&a);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	PTKIT_DROP(system(cmd));
	return tap_done();
}

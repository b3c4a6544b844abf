/*
 * t_blks_jit: the trailing fields of the block stream's MAP record (flag
 * BLKS_MAP_JIT and the symbols string; the exec number after it): round
 * trip, absent when empty (so streams without JIT code or execs keep
 * their bytes), read as "" and 0 when a record ends after image, refused
 * when it is cut inside the string, and shown in JSON Lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/blkstream.h"
#include "base/jsonw.h"
#include "tap.h"

static const struct blks_header hdr = { .version = BLKS_VERSION,
    .snapshot = "/snap" };

/* A stream of one MAP (with symbols when given) and EOS, in memory. */
static char *
stream_exec(const char *symbols, uint32_t flags, uint32_t exec, size_t *len)
{
	struct blks_writer *w = NULL;
	struct blks_record r;
	struct error e;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (f == NULL || blks_writer_open_file(&w, f, &hdr, &e) < 0)
		return NULL;
	memset(&r, 0, sizeof(r));
	r.type = BLKS_MAP;
	r.u.map = (struct blks_map){ .pid = 7, .flags = flags,
	    .start = 0x7f0000000000, .size = 0x1000, .pgoff = 0x1000,
	    .name = "//anon-jit/7/7f0000000000",
	    .image = "images/.build-id/ab/cd/elf", .symbols = symbols,
	    .exec = exec };
	STEP(blks_write(w, &r, &e));
	memset(&r, 0, sizeof(r));
	r.type = BLKS_EOS;
	STEP(blks_write(w, &r, &e));
	STEP(blks_writer_close(w, &e));
	fclose(f);
	return buf;
}

static char *
stream(const char *symbols, uint32_t flags, size_t *len)
{
	return stream_exec(symbols, flags, 0, len);
}

/*
 * Reads the MAP of buf; its symbols copied into out (m's strings are gone
 * with the reader: only its numbers stay).  1, or <= 0.
 */
static int
read_map(const char *buf, size_t len, struct blks_map *m, char *out,
    size_t size, struct error *e)
{
	struct blks_reader *r = NULL;
	struct blks_record rec;
	int rc;

	if ((rc = blks_reader_open_mem(&r, buf, len, "s", e)) < 0)
		return rc;
	rc = blks_read(r, &rec, e);
	if (rc == 1) {
		*m = rec.u.map;
		snprintf(out, size, "%s|%s", rec.u.map.symbols ?
		    rec.u.map.symbols : "(null)", rec.u.map.image);
		m->name = m->image = m->symbols = NULL;
	}
	blks_reader_free(r);
	return rc;
}

int
main(void)
{
	const char *sym = "jit/perf-7.map";
	char *with, *without, got[64];
	size_t lw = 0, lo = 0;
	struct blks_map m;
	struct error e;

	with = stream(sym, BLKS_MAP_JIT, &lw);
	without = stream(NULL, BLKS_MAP_JIT, &lo);
	OK(with != NULL && without != NULL, "streams written");
	if (with == NULL || without == NULL)
		return tap_done();
	IS_U64(lw - lo, 1 + strlen(sym), "symbols cost their bytes only");
	free(without);
	without = stream("", 0, &lo);
	IS_U64(lw - lo, 1 + strlen(sym), "an empty symbols is not written");

	IS_INT(read_map(with, lw, &m, got, sizeof(got), &e), 1, "MAP read");
	IS_STR(got, "jit/perf-7.map|images/.build-id/ab/cd/elf",
	    "symbols round trip, image still read");
	OK(m.flags & BLKS_MAP_JIT, "JIT flag round trip");
	IS_INT(read_map(without, lo, &m, got, sizeof(got), &e), 1,
	    "MAP without symbols read");
	IS_STR(got, "|images/.build-id/ab/cd/elf", "symbols read as empty");

	/* Cut the symbols string short inside its record. */
	{
		char *cut = malloc(lw);
		const char *hit = memmem(with, lw, sym, strlen(sym));
		size_t at = hit != NULL ? (size_t)(hit - with) : 1;

		OK(hit != NULL && cut != NULL, "symbols found in the stream");
		if (cut == NULL)
			return tap_done();
		memcpy(cut, with, lw);
		cut[at - 1] = (char)(strlen(sym) + 5);	/* longer than left */
		OK(read_map(cut, lw, &m, got, sizeof(got), &e) < 0,
		    "a symbols length past the record is refused");
		OK(strstr(e.msg, "byte") != NULL, "message names the offset: %s",
		    e.msg);
		free(cut);
	}

	/* exec: after an empty symbols, read back; 0 when absent. */
	{
		char *x = stream_exec(NULL, 0, 3, &lw);

		OK(x != NULL, "stream with exec written");
		if (x == NULL)
			return tap_done();
		IS_U64(lw - lo, 2, "exec costs an empty symbols and a byte");
		IS_INT(read_map(x, lw, &m, got, sizeof(got), &e), 1,
		    "MAP with exec read");
		IS_U64(m.exec, 3, "exec round trip");
		IS_STR(got, "|images/.build-id/ab/cd/elf", "symbols still empty");
		IS_INT(read_map(without, lo, &m, got, sizeof(got), &e), 1,
		    "MAP without exec read");
		IS_U64(m.exec, 0, "exec read as 0");
		IS_U64(blks_space(7, 3), 7 | 3u << 22, "space of pid 7, exec 3");
		IS_U64(blks_space(7, 0), 7, "the first program's space is pid");
		free(x);
	}

	/* JSON Lines: jit and symbols on JIT maps only. */
	{
		struct blks_record rec;
		struct jsonw w;
		char *out = NULL;
		size_t olen = 0;
		FILE *f = open_memstream(&out, &olen);

		memset(&rec, 0, sizeof(rec));
		rec.type = BLKS_MAP;
		rec.u.map = (struct blks_map){ .flags = BLKS_MAP_JIT,
		    .name = "//anon", .image = "", .symbols = sym };
		jsonw_init(&w, f);
		blks_jsonl_record(&w, &rec, 0);
		rec.u.map.flags = 0;
		blks_jsonl_record(&w, &rec, 0);
		STEP(jsonw_finish(&w));
		fclose(f);
		OK(out != NULL && strstr(out, "\"jit\":true,\"symbols\":"
		    "\"jit/perf-7.map\"}\n") != NULL, "JIT map line");
		OK(out != NULL && strstr(strchr(out, '\n') + 1, "jit") == NULL,
		    "no jit member on other maps");
		free(out);
	}
	free(with);
	free(without);
	return tap_done();
}

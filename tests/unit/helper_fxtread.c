/*
 * helper_fxtread FILE [-e]: the test side's reader of the Fuchsia trace
 * format ptquery writes.  Parses every record, checks its size, that
 * every string and thread reference is defined when it is used (so the
 * writer's reuse of its 32767-string and 255-thread tables is checked),
 * that the ticks are nanoseconds and that durations do not end before
 * they start.  Prints "records=N strings=S threads=T kobjs=K events=E";
 * with -e also one line per event: "tid start end category name".
 * Exit 1 with "fxtread: word W: what" on the first fault.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reader {
	const uint64_t *w;
	size_t n;
	char *str[0x8000];
	uint64_t thr_tid[256];
	int thr_set[256];
	uint64_t records, strings, threads, kobjs, events;
	int dump;
};

static int
fault(size_t at, const char *what)
{
	fprintf(stderr, "fxtread: word %zu: %s\n", at, what);
	return -1;
}

/* A string reference at word *at (inline ones consume words). */
static int
string_ref(struct reader *r, unsigned ref, size_t *at, size_t end,
    const char **out)
{
	static char inl[0x8000];
	size_t len, words;

	if (ref == 0) {
		*out = "";
		return 0;
	}
	if (ref & 0x8000) {
		len = ref & 0x7fff;
		words = (len + 7) / 8;
		if (*at + words > end)
			return fault(*at, "inline string past its record");
		memcpy(inl, r->w + *at, len);
		inl[len] = '\0';
		*at += words;
		*out = inl;
		return 0;
	}
	if (r->str[ref] == NULL)
		return fault(*at, "reference to an undefined string");
	*out = r->str[ref];
	return 0;
}

static int
args(struct reader *r, unsigned nargs, size_t *at, size_t end)
{
	const char *name;

	for (unsigned i = 0; i < nargs; i++) {
		uint64_t h;
		size_t size, start = *at;

		if (*at >= end)
			return fault(*at, "argument past its record");
		h = r->w[(*at)++];
		size = (h >> 4) & 0xfff;
		if (size == 0 || start + size > end)
			return fault(start, "argument size");
		if (string_ref(r, (h >> 16) & 0xffff, at, end, &name) < 0)
			return -1;
		*at = start + size;
	}
	return 0;
}

static int
string_record(struct reader *r, uint64_t h, size_t at, size_t size)
{
	unsigned idx = (h >> 16) & 0x7fff;
	size_t len = (h >> 32) & 0x7fff;

	if (idx == 0 || size != 1 + (len + 7) / 8)
		return fault(at, "bad string record");
	free(r->str[idx]);
	if ((r->str[idx] = malloc(len + 1)) == NULL)
		return fault(at, "out of memory");
	memcpy(r->str[idx], r->w + at + 1, len);
	r->str[idx][len] = '\0';
	r->strings++;
	return 0;
}

static int
event_record(struct reader *r, uint64_t h, size_t at, size_t size)
{
	unsigned type = (h >> 16) & 0xf, nargs = (h >> 20) & 0xf;
	unsigned thr = (h >> 24) & 0xff;
	size_t p = at + 1, end = at + size;
	const char *cat, *name;
	char catbuf[0x8000];
	uint64_t ts, tid, te;

	if (type != 4)
		return fault(at, "not a duration-complete event");
	if (p >= end)
		return fault(at, "event without a timestamp");
	ts = r->w[p++];
	if (thr == 0) {
		if (p + 2 > end)
			return fault(at, "inline thread past the record");
		tid = r->w[p + 1];
		p += 2;
	} else if (!r->thr_set[thr]) {
		return fault(at, "reference to an undefined thread");
	} else {
		tid = r->thr_tid[thr];
	}
	if (string_ref(r, (h >> 32) & 0xffff, &p, end, &cat) < 0)
		return -1;
	snprintf(catbuf, sizeof(catbuf), "%s", cat);
	if (string_ref(r, (h >> 48) & 0xffff, &p, end, &name) < 0 ||
	    args(r, nargs, &p, end) < 0)
		return -1;
	if (p + 1 != end)
		return fault(at, "event size does not match its contents");
	te = r->w[p];
	if (te < ts)
		return fault(at, "duration ends before it starts");
	r->events++;
	if (r->dump)
		printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %s %s\n", tid, ts,
		    te, catbuf, name);
	return 0;
}

static int
record(struct reader *r, size_t at, size_t *size)
{
	uint64_t h = r->w[at];
	const char *name;
	size_t p;

	*size = (h >> 4) & 0xfff;
	if (*size == 0 || at + *size > r->n)
		return fault(at, "record size");
	r->records++;
	switch (h & 0xf) {
	case 0:
		return 0;
	case 1:
		if (*size != 2 || r->w[at + 1] != 1000000000ull)
			return fault(at, "ticks are not nanoseconds");
		return 0;
	case 2:
		return string_record(r, h, at, *size);
	case 3:
		if (*size != 3 || ((h >> 16) & 0xff) == 0)
			return fault(at, "bad thread record");
		r->thr_set[(h >> 16) & 0xff] = 1;
		r->thr_tid[(h >> 16) & 0xff] = r->w[at + 2];
		r->threads++;
		return 0;
	case 4:
		return event_record(r, h, at, *size);
	case 7:
		p = at + 2;
		if (string_ref(r, (h >> 24) & 0xffff, &p, at + *size,
		    &name) < 0 || args(r, (h >> 40) & 0xf, &p, at + *size) < 0)
			return -1;
		if (p != at + *size)
			return fault(at, "kernel object size");
		r->kobjs++;
		return 0;
	default:
		return fault(at, "record type we never write");
	}
}

int
main(int argc, char *argv[])
{
	static struct reader r;
	FILE *f;
	long len;
	uint64_t *buf;
	size_t at, size;
	int rc = 0;

	if (argc < 2 || (f = fopen(argv[1], "rb")) == NULL) {
		fprintf(stderr, "usage: helper_fxtread FILE [-e]\n");
		return 2;
	}
	r.dump = argc > 2 && strcmp(argv[2], "-e") == 0;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	if (len < 8 || len % 8 != 0 || (buf = malloc((size_t)len)) == NULL ||
	    fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "fxtread: %s: not whole 64-bit words\n",
		    argv[1]);
		fclose(f);
		return 1;
	}
	fclose(f);
	r.w = buf;
	r.n = (size_t)len / 8;
	if (buf[0] != 0x0016547846040010ull)
		rc = fault(0, "no magic number record");
	for (at = 0; rc == 0 && at < r.n; at += size)
		rc = record(&r, at, &size);
	if (rc == 0)
		printf("records=%" PRIu64 " strings=%" PRIu64 " threads=%"
		    PRIu64 " kobjs=%" PRIu64 " events=%" PRIu64 "\n", r.records,
		    r.strings, r.threads, r.kobjs, r.events);
	for (size_t i = 0; i < 0x8000; i++)
		free(r.str[i]);
	free(buf);
	return rc == 0 ? 0 : 1;
}

/*
 * jitmap: symtab_open_jitmap(), the /tmp/perf-PID.map reader (see
 * symtab.h).  The format is perf's: "START SIZE name\n", hexadecimal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/symtab_int.h"

/* Parses one hex field at *p (optional 0x), moving *p past it. */
static int
parse_hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0, d;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, digits++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (x >> 60)
			return -1;
		x = x << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return -1;
	*p = s;
	*v = x;
	return 0;
}

static int
parse_line(struct symtab *st, struct symbuild *b, const char *line,
    size_t len, unsigned long lineno, const char *path, struct error *e)
{
	const char *p = line, *end = line + len;
	struct rawsym r;

	memset(&r, 0, sizeof(r));
	while (len > 0 && (end[-1] == '\n' || end[-1] == '\r'))
		end--, len--;
	if (len == 0)
		return 0;
	if (memchr(line, '\0', len) != NULL)
		return error_set(e, ERR_FORMAT, "%s: line %lu: NUL byte", path,
		    lineno);
	if (parse_hex(&p, &r.addr) != 0 || *p != ' ')
		return error_set(e, ERR_FORMAT,
		    "%s: line %lu: expected a hexadecimal start address", path,
		    lineno);
	p++;
	if (parse_hex(&p, &r.size) != 0 || *p != ' ' || p + 1 >= end)
		return error_set(e, ERR_FORMAT,
		    "%s: line %lu: expected \"START SIZE name\"", path, lineno);
	p++;
	if (r.addr + r.size < r.addr)
		return error_set(e, ERR_FORMAT,
		    "%s: line %lu: range wraps around", path, lineno);
	r.flags = SYM_JIT;
	r.seq_rank = UINT32_MAX - (uint32_t)(lineno & UINT32_MAX);
	return symbuild_add(st, b, &r, p, (size_t)(end - p), e);
}

static int
read_map(struct symtab *st, FILE *f, const char *path, struct error *e)
{
	struct symbuild b = { NULL, 0, 0 };
	struct error first;
	unsigned long lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;

	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		rc = parse_line(st, &b, line, (size_t)n, lineno, path, &first);
		if (rc == -ERR_FORMAT) {
			/* Skipped and counted: perf skips such lines too. */
			if (st->stats.n_bad_lines++ == 0) {
				st->stats.first_bad_line = lineno;
				if (e != NULL)
					*e = first;
			}
			rc = 0;
		} else if (rc != 0 && e != NULL) {
			*e = first;
		}
	}
	if (rc == 0 && ferror(f))
		rc = error_set_errno(e, errno, "%s", path);
	free(line);
	if (rc == 0 && b.n == 0 && st->stats.n_bad_lines > 0)
		rc = -ERR_FORMAT;	/* e holds the first bad line */
	if (rc == 0)
		rc = symtab_finish_syms(st, &b, e);
	symbuild_free(&b);
	return rc;
}

int
symtab_open_jitmap(const char *path, struct symtab **out, struct error *e)
{
	int fd;

	*out = NULL;
	if ((fd = symfile_open(NULL, path, e)) < 0)
		return fd;
	return symtab_open_jitmap_fd(fd, path, out, e);
}

int
symtab_open_jitmap_fd(int fd, const char *path, struct symtab **out,
    struct error *e)
{
	struct symtab *st;
	FILE *f;
	int rc, saved;

	*out = NULL;
	if ((f = fdopen(fd, "r")) == NULL) {
		saved = errno;
		close(fd);
		return error_set_errno(e, saved, "%s", path);
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL || (st->path = strdup(path)) == NULL) {
		free(st);
		fclose(f);
		return error_set(e, ERR_NOMEM, "%s: JIT map", path);
	}
	st->is_jit = 1;
	st->stats.symbol_source = "jitmap";
	rc = read_map(st, f, path, e);
	fclose(f);
	if (rc != 0) {
		symtab_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

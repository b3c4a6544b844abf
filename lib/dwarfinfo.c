/*
 * dwarfinfo: the DWARF half of symtab (see symtab_int.h).  One pass over
 * every compile unit with libdw collects the functions the symbol table
 * lacks, every inlined call with its ranges and call site, and the line
 * table; the libdw handle is closed before symtab_open() returns, so the
 * table never touches libdw (which is not thread-safe) after loading.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debugfind.h"
#include "demangle.h"
#include "symtab_int.h"

/* File names interned to indices (open addressing on the string). */
struct file_set {
	const char **names;	/* in the arena, by index */
	size_t n, cap_names;
	uint32_t *slots;	/* index + 1; 0 is empty */
	size_t n_slots;
};

/* An inlined call while collecting: parent is an index or -1. */
struct inl_tmp {
	uint64_t lo, hi;
	const char *name, *raw, *call_file;
	uint32_t call_line, call_column, depth, call_id;
	int32_t parent;
};

/* One line-table sequence: rows[first .. first + n), in address order. */
struct line_seq {
	uint64_t lo;
	size_t first, n;
};

struct dw_ctx {
	struct symtab *st;
	const char *comp_dir;	/* of the current unit, or NULL */
	struct symbuild *b;
	struct error *e;
	Dwarf_Files *cu_files;
	size_t cu_n_files;
	struct file_set files;
	struct inl_tmp *inl;
	size_t n_inl, cap_inl;
	uint32_t n_calls;	/* inlined calls with code, for call_id */
	struct line_row *rows;
	size_t n_rows, cap_rows;
	struct line_seq *seqs;	/* the sorted runs rows[] is made of */
	size_t n_seqs, cap_seqs;
};

static uint64_t
str_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int
file_set_grow(struct file_set *fs)
{
	size_t n = fs->n_slots ? 2 * fs->n_slots : 256, i, j;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (slots == NULL)
		return -1;
	for (i = 0; i < fs->n; i++) {
		j = str_hash(fs->names[i]) & (n - 1);
		while (slots[j] != 0)
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(fs->slots);
	fs->slots = slots;
	fs->n_slots = n;
	return 0;
}

/* Index of name, added when new; -1 when memory ran out. */
static long
file_set_intern(struct symtab *st, struct file_set *fs, const char *name)
{
	const char **names;
	size_t j;

	if (2 * (fs->n + 1) > fs->n_slots && file_set_grow(fs) != 0)
		return -1;
	j = str_hash(name) & (fs->n_slots - 1);
	while (fs->slots[j] != 0) {
		if (strcmp(fs->names[fs->slots[j] - 1], name) == 0)
			return (long)fs->slots[j] - 1;
		j = (j + 1) & (fs->n_slots - 1);
	}
	if (fs->n == fs->cap_names) {
		size_t cap = fs->cap_names ? 2 * fs->cap_names : 64;

		names = realloc(fs->names, cap * sizeof(*names));
		if (names == NULL)
			return -1;
		fs->names = names;
		fs->cap_names = cap;
	}
	fs->names[fs->n] = arena_strdup(&st->arena, name);
	if (fs->names[fs->n] == NULL)
		return -1;
	fs->slots[j] = (uint32_t)fs->n + 1;
	return (long)fs->n++;
}

/*
 * Interns a source path, joined to the unit's directory when relative
 * (libdw leaves DWARF 5 paths relative to it), as addr2line prints them.
 */
static long
intern_path(struct dw_ctx *c, const char *f)
{
	char *joined;
	long i;

	if (f[0] == '/' || c->comp_dir == NULL)
		return file_set_intern(c->st, &c->files, f);
	if (asprintf(&joined, "%s/%s", c->comp_dir, f) < 0)
		return -1;
	i = file_set_intern(c->st, &c->files, joined);
	free(joined);
	return i;
}

/* DW_AT_linkage_name (following abstract_origin/specification), else name. */
static const char *
die_raw_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (n == NULL)
		n = dwarf_formstring(dwarf_attr_integrate(die,
		    DW_AT_MIPS_linkage_name, &a));
	if (n == NULL)
		n = dwarf_diename(die);
	return n;
}

/* The display name of raw in the arena. */
static const char *
name_in_arena(struct symtab *st, const char *raw)
{
	char *dm = demangle(raw);
	const char *s;

	if (dm == NULL)
		return arena_strdup(&st->arena, raw);
	s = arena_strdup(&st->arena, dm);
	free(dm);
	return s;
}

static int
nomem(struct dw_ctx *c)
{
	return error_set(c->e, ERR_NOMEM, "%s: DWARF", c->st->path);
}

/*
 * 1 when a symbol's own range covers addr; a guessed size (a symbol of
 * size 0 run up to the next one) yields to what DWARF knows.
 */
static int
covered(const struct symtab *st, uint64_t addr)
{
	long i = segs_find(st->segs, st->n_segs, addr);

	return i >= 0 && !(st->syms[st->segs[i].idx].flags & SYM_SIZE_GUESSED);
}

/* A subprogram range no symbol covers becomes a function. */
static int
add_subprogram(struct dw_ctx *c, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	struct rawsym r;
	const char *raw = NULL;
	int rc;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo || !symtab_addr_is_code(c->st, lo) ||
		    covered(c->st, lo))
			continue;
		if (raw == NULL)
			raw = die_raw_name(die);
		if (raw == NULL || *raw == '\0')
			return 0;
		memset(&r, 0, sizeof(r));
		r.addr = lo;
		r.size = hi - lo;
		r.bind_rank = 3;
		r.flags = SYM_FROM_DWARF;
		rc = symbuild_add(c->st, c->b, &r, raw, strlen(raw), c->e);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static const char *
call_file(struct dw_ctx *c, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	const char *f;
	long i;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) != 0 ||
	    c->cu_files == NULL || idx >= c->cu_n_files)
		return NULL;
	f = dwarf_filesrc(c->cu_files, idx, NULL, NULL);
	if (f == NULL)
		return NULL;
	i = intern_path(c, f);
	return i < 0 ? NULL : c->files.names[i];
}

static uint32_t
attr_u32(Dwarf_Die *die, int name)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(die, name, &a), &v) != 0 ||
	    v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

/* The entry among [first, end) whose range holds addr, else first. */
static int32_t
pick_parent(struct dw_ctx *c, int32_t first, int32_t end, uint64_t addr)
{
	int32_t i;

	for (i = first; i < end; i++)
		if (addr >= c->inl[i].lo && addr < c->inl[i].hi)
			return i;
	return first;
}

/*
 * Adds the ranges of an inlined call; [*first, *end) receive the indices
 * of its entries (empty when it has no code).
 */
static int
add_inline(struct dw_ctx *c, Dwarf_Die *die, int32_t pfirst, int32_t pend,
    uint32_t depth, int32_t *first, int32_t *end)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	struct inl_tmp t;
	const char *raw;

	*first = *end = (int32_t)c->n_inl;
	memset(&t, 0, sizeof(t));
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo || !symtab_addr_is_code(c->st, lo))
			continue;
		if (t.name == NULL) {
			raw = die_raw_name(die);
			if (raw == NULL)
				raw = "";
			t.raw = arena_strdup(&c->st->arena, raw);
			t.name = name_in_arena(c->st, raw);
			if (t.raw == NULL || t.name == NULL)
				return nomem(c);
			t.call_file = call_file(c, die);
			t.call_line = attr_u32(die, DW_AT_call_line);
			t.call_column = attr_u32(die, DW_AT_call_column);
			t.depth = depth;
			t.call_id = c->n_calls++;
		}
		if (c->n_inl == c->cap_inl) {
			size_t cap = c->cap_inl ? 2 * c->cap_inl : 256;
			struct inl_tmp *v = NULL;

			if (cap <= INT32_MAX)
				v = realloc(c->inl, cap * sizeof(*v));
			if (v == NULL)
				return nomem(c);
			c->inl = v;
			c->cap_inl = cap;
		}
		t.lo = lo;
		t.hi = hi;
		t.parent = pfirst < pend ? pick_parent(c, pfirst, pend, lo) : -1;
		c->inl[c->n_inl++] = t;
	}
	*end = (int32_t)c->n_inl;
	return 0;
}

/*
 * Walks the children of die.  [pfirst, pend) are the entries of the
 * inlined call we are inside (empty at function level), depth its depth.
 */
static int
walk(struct dw_ctx *c, Dwarf_Die *die, int32_t pfirst, int32_t pend,
    uint32_t depth)
{
	Dwarf_Die child;
	int32_t first, end;
	int rc = 0;

	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			rc = add_subprogram(c, &child);
			if (rc == 0)
				rc = walk(c, &child, 0, 0, 0);
			break;
		case DW_TAG_inlined_subroutine:
			rc = add_inline(c, &child, pfirst, pend, depth + 1,
			    &first, &end);
			if (rc == 0 && first == end)	/* no code of its own */
				rc = walk(c, &child, pfirst, pend, depth);
			else if (rc == 0)
				rc = walk(c, &child, first, end, depth + 1);
			break;
		case DW_TAG_variable:
		case DW_TAG_formal_parameter:
		case DW_TAG_base_type:
		case DW_TAG_member:
		case DW_TAG_call_site:
		case DW_TAG_GNU_call_site:
		case DW_TAG_enumeration_type:
		case DW_TAG_subroutine_type:
		case DW_TAG_array_type:
			break;	/* nothing below them holds code */
		default:
			rc = walk(c, &child, pfirst, pend, depth);
			break;
		}
	} while (rc == 0 && dwarf_siblingof(&child, &child) == 0);
	return rc;
}

static int
add_row(struct dw_ctx *c, const struct line_row *r)
{
	if (c->n_rows == c->cap_rows) {
		size_t cap = c->cap_rows ? 2 * c->cap_rows : 4096;
		struct line_row *v = realloc(c->rows, cap * sizeof(*v));

		if (v == NULL)
			return nomem(c);
		c->rows = v;
		c->cap_rows = cap;
	}
	c->rows[c->n_rows++] = *r;
	return 0;
}

static int
seq_open(struct dw_ctx *c, uint64_t lo)
{
	if (c->n_seqs == c->cap_seqs) {
		size_t cap = c->cap_seqs ? 2 * c->cap_seqs : 256;
		struct line_seq *v = realloc(c->seqs, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		c->seqs = v;
		c->cap_seqs = cap;
	}
	c->seqs[c->n_seqs].lo = lo;
	c->seqs[c->n_seqs].first = c->n_rows;
	c->seqs[c->n_seqs].n = 0;
	c->n_seqs++;
	return 0;
}

/* The last file a unit's rows named: libdw hands out one pointer a file. */
struct file_memo {
	const char *f;
	long idx;
};

/*
 * Fills r from line l (not an end of sequence).  Returns 1, 0 when the
 * row has no file or line (skipped), -1 when memory ran out.
 */
static int
fill_row(struct dw_ctx *c, Dwarf_Line *l, struct line_row *r,
    struct file_memo *memo)
{
	const char *f = dwarf_linesrc(l, NULL, NULL);
	int lineno, col;

	if (f == NULL || dwarf_lineno(l, &lineno) != 0)
		return 0;
	if (dwarf_linecol(l, &col) != 0 || col < 0)
		col = 0;
	if (f != memo->f) {
		memo->idx = intern_path(c, f);
		memo->f = f;
	}
	if (memo->idx < 0)
		return -1;
	r->file = (uint32_t)memo->idx;
	r->line = lineno < 0 ? 0 : (uint32_t)lineno;
	r->column = (uint32_t)col;
	return 1;
}

/* The rows of one unit; sequences that do not start in code are skipped. */
static int
read_lines(struct dw_ctx *c, Dwarf_Die *cudie)
{
	struct file_memo memo = { NULL, -1 };
	Dwarf_Lines *lines;
	Dwarf_Line *l;
	Dwarf_Addr addr;
	struct line_row r;
	size_t i, n;
	int seq_start = 1, keep = 0, rc;
	bool endseq;

	if (dwarf_getsrclines(cudie, &lines, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		l = dwarf_onesrcline(lines, i);
		if (l == NULL || dwarf_lineaddr(l, &addr) != 0 ||
		    dwarf_lineendsequence(l, &endseq) != 0)
			continue;
		if (seq_start) {
			keep = symtab_addr_is_code(c->st, addr);
			if (keep && seq_open(c, addr) != 0)
				return nomem(c);
		}
		seq_start = endseq;
		if (!keep)
			continue;
		memset(&r, 0, sizeof(r));
		r.addr = addr;
		r.order = (uint32_t)c->n_rows;
		r.file = LINE_END;
		if (!endseq && (rc = fill_row(c, l, &r, &memo)) <= 0) {
			if (rc < 0)
				return nomem(c);
			continue;
		}
		rc = add_row(c, &r);
		if (rc != 0)
			return rc;
		c->seqs[c->n_seqs - 1].n++;
	}
	return 0;
}

/* Address order; at one address an end of sequence sorts first. */
static int
row_cmp(const void *pa, const void *pb)
{
	const struct line_row *a = pa, *b = pb;
	int ea = a->file == LINE_END, eb = b->file == LINE_END;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (ea != eb)
		return ea ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int rows_sorted(const struct line_row *r, size_t n);

static int
seq_cmp(const void *pa, const void *pb)
{
	const struct line_seq *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/*
 * Sorts the rows: sequences are sorted runs that rarely overlap, so
 * ordering the runs is usually enough; a full sort is the fallback.
 * Returns 0 or -1 (out of memory).
 */
static int
sort_rows(struct dw_ctx *c)
{
	struct line_row *out;
	size_t i, o = 0;

	if (c->n_rows == 0)
		return 0;
	qsort(c->seqs, c->n_seqs, sizeof(*c->seqs), seq_cmp);
	out = malloc(c->n_rows * sizeof(*out));
	if (out == NULL)
		return -1;
	for (i = 0; i < c->n_seqs; i++) {
		memcpy(out + o, c->rows + c->seqs[i].first,
		    c->seqs[i].n * sizeof(*out));
		o += c->seqs[i].n;
	}
	free(c->rows);
	c->rows = out;
	for (i = 0; i < c->n_rows; i++)
		c->rows[i].order = (uint32_t)i;
	if (!rows_sorted(c->rows, c->n_rows))
		qsort(c->rows, c->n_rows, sizeof(*c->rows), row_cmp);
	return 0;
}

/* Samples every LINE_STRIDE-th row's address for symtab_line. */
static int
index_rows(struct symtab *st, const struct dw_ctx *c)
{
	size_t i, n = (c->n_rows + LINE_STRIDE - 1) / LINE_STRIDE;

	st->line_index = malloc((n + 1) * sizeof(*st->line_index));
	if (st->line_index == NULL)
		return -1;
	for (i = 0; i < n; i++)
		st->line_index[i] = c->rows[i * LINE_STRIDE].addr;
	st->n_line_index = n;
	return 0;
}

static int
rows_sorted(const struct line_row *r, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (row_cmp(&r[i - 1], &r[i]) > 0)
			return 0;
	return 1;
}

/* Moves the collected inlined calls into st and builds their segments. */
static int
finish_inlines(struct dw_ctx *c)
{
	struct symtab *st = c->st;
	struct range_in *in;
	size_t i;
	int rc;

	st->inl = calloc(c->n_inl + 1, sizeof(*st->inl));
	in = malloc((c->n_inl + 1) * sizeof(*in));
	if (st->inl == NULL || in == NULL) {
		free(in);
		return nomem(c);
	}
	for (i = 0; i < c->n_inl; i++) {
		const struct inl_tmp *t = &c->inl[i];
		struct sym_inline *s = &st->inl[i];

		s->lo = t->lo;
		s->hi = t->hi;
		s->name = t->name;
		s->raw = t->raw;
		s->call_file = t->call_file;
		s->call_line = t->call_line;
		s->call_column = t->call_column;
		s->depth = t->depth;
		s->call_id = t->call_id;
		s->parent = t->parent >= 0 ? &st->inl[t->parent] : NULL;
		in[i].lo = t->lo;
		in[i].hi = t->hi;
		in[i].idx = (uint32_t)i;
		in[i].order = t->depth;
	}
	st->n_inl = c->n_inl;
	rc = segs_build(in, c->n_inl, &st->isegs, &st->n_isegs);
	free(in);
	return rc != 0 ? nomem(c) : 0;
}

static int
read_units(struct dw_ctx *c, Dwarf *dw)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	Dwarf_Attribute a;
	uint8_t unit_type;
	int rc = 0;

	while (rc == 0 && dwarf_get_units(dw, cu, &cu, NULL, &unit_type,
	    &cudie, &subdie) == 0) {
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		if (dwarf_getsrcfiles(&cudie, &c->cu_files, &c->cu_n_files) != 0) {
			c->cu_files = NULL;
			c->cu_n_files = 0;
		}
		c->comp_dir = dwarf_formstring(dwarf_attr(&cudie,
		    DW_AT_comp_dir, &a));
		rc = walk(c, &cudie, 0, 0, 0);
		if (rc == 0)
			rc = read_lines(c, &cudie);
	}
	return rc;
}

/* A dwz supplementary file, open while its main DWARF is read. */
struct alt_file {
	int fd;
	Elf *elf;
	Dwarf *dw;
};

static void
alt_close(struct alt_file *a)
{
	if (a->dw != NULL)
		dwarf_end(a->dw);
	if (a->elf != NULL)
		elf_end(a->elf);
	if (a->fd >= 0)
		close(a->fd);
}

/*
 * Attaches the supplementary file dw names, when it has one and it is
 * found; without it, names and call sites that live there are missing,
 * which is not an error.  Returns 0 or -ERR_NOMEM.
 */
static int
alt_attach(Dwarf *dw, const char *dw_path, const struct symtab_options *opt,
    struct alt_file *a, struct error *e)
{
	const char *name;
	const void *id;
	char *path = NULL;
	unsigned flags = 0;
	ssize_t n;
	int rc;

	n = dwelf_dwarf_gnu_debugaltlink(dw, &name, &id);
	if (n <= 0)
		return 0;
	if (opt->flags & SYMTAB_NO_SYSTEM_DEBUG)
		flags |= DEBUGFIND_NO_SYSTEM;
	rc = debugfind_alt(name, id, (size_t)n, dw_path, opt->debug_dirs,
	    opt->n_debug_dirs, flags, &path, e);
	if (rc <= 0)
		return rc;
	a->fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (a->fd < 0)
		return 0;
	a->elf = elf_begin(a->fd, ELF_C_READ_MMAP, NULL);
	if (a->elf != NULL)
		a->dw = dwarf_begin_elf(a->elf, DWARF_C_READ, NULL);
	if (a->dw != NULL)
		dwarf_setalt(dw, a->dw);
	return 0;
}

int
dwarfinfo_read(struct symtab *st, Elf *elf, const char *elf_path,
    const struct symtab_options *opt, struct symbuild *b, struct error *e)
{
	struct alt_file alt = { -1, NULL, NULL };
	struct dw_ctx c;
	Dwarf *dw;
	int rc;

	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (dw == NULL)
		return 0;
	rc = alt_attach(dw, elf_path, opt, &alt, e);
	if (rc != 0) {
		dwarf_end(dw);
		return rc;
	}
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.b = b;
	c.e = e;
	rc = read_units(&c, dw);
	if (rc == 0)
		rc = finish_inlines(&c);
	if (rc == 0 && (sort_rows(&c) != 0 || index_rows(st, &c) != 0))
		rc = nomem(&c);
	if (rc == 0) {
		st->lines = c.rows;
		st->n_lines = c.n_rows;
		c.rows = NULL;
		st->files = c.files.names;
		st->n_files = c.files.n;
		c.files.names = NULL;
		st->stats.has_dwarf = 1;
		st->stats.n_inlines = st->n_inl;
		st->stats.n_lines = st->n_lines;
	}
	free(c.rows);
	free(c.seqs);
	free(c.inl);
	free(c.files.names);
	free(c.files.slots);
	dwarf_end(dw);
	alt_close(&alt);
	return rc;
}

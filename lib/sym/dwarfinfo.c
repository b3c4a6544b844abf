/*
 * dwarfinfo: the DWARF half of symtab (see symtab_int.h): the functions
 * the symbol table lacks, every inlined call with its ranges and call
 * site, and the line table.
 *
 * Eagerly (SYMTAB_EAGER_DWARF) one pass over every compile unit collects
 * everything and libdw is closed before symtab_open() returns.
 *
 * Lazily (the default) symtab_open() only reads the units' address ranges
 * (.debug_aranges, else each unit's DW_AT_ranges or low_pc/high_pc) into
 * disjoint regions.  Units whose ranges overlap form one group, read
 * together: two units' inlined calls or functions can then only meet
 * inside a group, and a group's tables answer for its regions exactly as
 * the whole image's would.  Around an address the lookups read the group
 * of the region holding it, and for the bounds of a gap (no inlined call,
 * no function) the groups of the neighbouring regions until one of them
 * bounds it: the spans are the eager ones too.  The groups whose
 * functions would change what the symbol table says (a symbol of guessed
 * size, or of size 0, ends where the next function starts) are read at
 * open, into the symbol table, as the eager pass does.  A group's line
 * rows are read apart from its DIEs, on the first symtab_line() that
 * needs them (ptspans never asks for lines).
 *
 * A lazy table opens compressed DWARF through dwarfimg.h (only the
 * sections read here, inflated with libdeflate): inflating is most of
 * what is left of opening libc6-dbg's libc.  The eager pass lets libdw
 * inflate the file itself, so the tests compare the two routes too.
 *
 * libdw is not thread-safe: the Dwarf handle belongs to the table and is
 * used under its mutex only; what a read produces is published with a
 * release store and found with an acquire load, so a unit already read
 * costs a lookup no lock.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/debugfind.h"
#include "sym/demangle.h"
#include "sym/dwarfimg.h"
#include "sym/symtab_int.h"

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
	const struct range_seg *solid;	/* see covered() */
	size_t n_solid;
	Dwarf_Files *cu_files;
	size_t cu_n_files;
	struct file_set *files;
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
		return file_set_intern(c->st, c->files, f);
	if (asprintf(&joined, "%s/%s", c->comp_dir, f) < 0)
		return -1;
	i = file_set_intern(c->st, c->files, joined);
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
 * 1 when a symbol's own range covers addr: c->solid holds the segments of
 * the symbol table (before DWARF added to it) whose symbol's size is not
 * guessed, since a guessed size (a symbol of size 0 run up to the next
 * one) yields to what DWARF knows.
 */
static int
covered(const struct dw_ctx *c, uint64_t addr)
{
	return segs_find(c->solid, c->n_solid, addr) >= 0;
}

/* The segments of st->segs whose symbol's size is not guessed. */
static int
solid_segs(const struct symtab *st, struct range_seg **out, size_t *n)
{
	size_t i;

	*n = 0;
	*out = malloc((st->n_segs + 1) * sizeof(**out));
	if (*out == NULL)
		return -1;
	for (i = 0; i < st->n_segs; i++)
		if (!(st->syms[st->segs[i].idx].flags & SYM_SIZE_GUESSED))
			(*out)[(*n)++] = st->segs[i];
	return 0;
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
		    covered(c, lo))
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
	return i < 0 ? NULL : c->files->names[i];
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

/*
 * Moves the sorted rows and the file names into lt and samples every
 * LINE_STRIDE-th row's address for symtab_line.  Returns 0 or -1.
 */
static int
lines_finish(struct dw_ctx *c, struct line_table *lt)
{
	size_t i, n = (c->n_rows + LINE_STRIDE - 1) / LINE_STRIDE;

	lt->index = malloc((n + 1) * sizeof(*lt->index));
	if (lt->index == NULL)
		return -1;
	for (i = 0; i < n; i++)
		lt->index[i] = c->rows[i * LINE_STRIDE].addr;
	lt->n_index = n;
	lt->rows = c->rows;
	lt->n_rows = c->n_rows;
	c->rows = NULL;
	lt->files = c->files->names;
	lt->n_files = c->files->n;
	c->files->names = NULL;
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

/* The inlined calls collected, made into a table with its segments. */
struct inl_table {
	struct sym_inline *inl;
	size_t n_inl;
	struct range_seg *isegs;
	size_t n_isegs;
};

/* Moves the collected inlined calls into t and builds their segments. */
static int
finish_inlines(struct dw_ctx *c, struct inl_table *t)
{
	struct range_in *in;
	size_t i;
	int rc;

	t->inl = calloc(c->n_inl + 1, sizeof(*t->inl));
	in = malloc((c->n_inl + 1) * sizeof(*in));
	if (t->inl == NULL || in == NULL) {
		free(in);
		return nomem(c);
	}
	for (i = 0; i < c->n_inl; i++) {
		const struct inl_tmp *tmp = &c->inl[i];
		struct sym_inline *s = &t->inl[i];

		s->lo = tmp->lo;
		s->hi = tmp->hi;
		s->name = tmp->name;
		s->raw = tmp->raw;
		s->call_file = tmp->call_file;
		s->call_line = tmp->call_line;
		s->call_column = tmp->call_column;
		s->depth = tmp->depth;
		s->call_id = tmp->call_id;
		s->parent = tmp->parent >= 0 ? &t->inl[tmp->parent] : NULL;
		in[i].lo = tmp->lo;
		in[i].hi = tmp->hi;
		in[i].idx = (uint32_t)i;
		in[i].order = tmp->depth;
	}
	t->n_inl = c->n_inl;
	rc = segs_build(in, c->n_inl, &t->isegs, &t->n_isegs);
	free(in);
	return rc != 0 ? nomem(c) : 0;
}

/* What one unit's DIEs need: its file table and directory. */
static void
unit_begin(struct dw_ctx *c, Dwarf_Die *cudie)
{
	Dwarf_Attribute a;

	if (dwarf_getsrcfiles(cudie, &c->cu_files, &c->cu_n_files) != 0) {
		c->cu_files = NULL;
		c->cu_n_files = 0;
	}
	c->comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a));
}

/* Every unit's DIEs and line rows. */
static int
read_units(struct dw_ctx *c, Dwarf *dw)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t unit_type;
	int rc = 0;

	while (rc == 0 && dwarf_get_units(dw, cu, &cu, NULL, &unit_type,
	    &cudie, &subdie) == 0) {
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		unit_begin(c, &cudie);
		rc = walk(c, &cudie, 0, 0, 0);
		if (rc == 0)
			rc = read_lines(c, &cudie);
	}
	return rc;
}

static void
ctx_free(struct dw_ctx *c)
{
	free(c->rows);
	free(c->seqs);
	free(c->inl);
}

static void
file_set_free(struct file_set *fs)
{
	free(fs->names);
	free(fs->slots);
	fs->names = NULL;
	fs->slots = NULL;
	fs->n = fs->cap_names = fs->n_slots = 0;
}

/* Sorts the collected rows into lt.  Returns 0 or -ERR_NOMEM. */
static int
lines_build(struct dw_ctx *c, struct line_table *lt)
{
	if (sort_rows(c) != 0 || lines_finish(c, lt) != 0)
		return nomem(c);
	return 0;
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
	/* A lazy table keeps it for its life: not its descriptor. */
	if (a->elf != NULL && elf_cntl(a->elf, ELF_C_FDREAD) == 0) {
		close(a->fd);
		a->fd = -1;
	}
	if (a->elf != NULL)
		a->dw = dwarf_begin_elf(a->elf, DWARF_C_READ, NULL);
	if (a->dw != NULL)
		dwarf_setalt(dw, a->dw);
	return 0;
}

/* Every unit now, into st (SYMTAB_EAGER_DWARF). */
static int
read_eager(struct symtab *st, Dwarf *dw, struct symbuild *b,
    struct error *e)
{
	struct file_set files;
	struct inl_table t = { NULL, 0, NULL, 0 };
	struct range_seg *solid;
	struct dw_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(&files, 0, sizeof(files));
	c.st = st;
	c.b = b;
	c.e = e;
	c.files = &files;
	if (solid_segs(st, &solid, &c.n_solid) != 0)
		return nomem(&c);
	c.solid = solid;
	rc = read_units(&c, dw);
	if (rc == 0)
		rc = finish_inlines(&c, &t);
	if (rc == 0)
		rc = lines_build(&c, &st->lines);
	if (rc == 0) {
		st->inl = t.inl;
		st->n_inl = t.n_inl;
		st->isegs = t.isegs;
		st->n_isegs = t.n_isegs;
		st->stats.has_dwarf = 1;
		st->stats.n_inlines = st->n_inl;
		st->stats.n_lines = st->lines.n_rows;
	} else {
		free(t.inl);
		free(t.isegs);
	}
	free(solid);
	ctx_free(&c);
	file_set_free(&files);
	return rc;
}

/* ---- lazy reading ---------------------------------------------------- */

/* What one group of units holds, once read. */
struct dw_part {
	struct sym *syms;	/* functions only DWARF knows, and their */
	size_t n_syms;		/* segments (none for a group read at open: */
	struct range_seg *segs;	/* its functions went into st->syms) */
	size_t n_segs;
	struct inl_table inl;
};

/* Units whose address ranges overlap, transitively: read together. */
struct dw_group {
	_Atomic(struct dw_part *) part;	/* NULL until read */
	_Atomic(struct line_table *) lines;	/* NULL until read */
	uint32_t first, n;		/* their units: unit_off[first ..] */
};

/* Addresses of one group: regions are disjoint and sorted. */
struct dw_region {
	uint64_t lo, hi;
	uint32_t group;
};

/* Every function in address order, for symtab_sym(). */
struct sym_list {
	const struct sym **v;
	size_t n;
};

struct dwarf_lazy {
	pthread_mutex_t lock;	/* held while libdw is used */
	struct elf_file f;	/* the file the DWARF is in, or: */
	char *image;		/* its sections decompressed (dwarfimg.h) */
	size_t image_size;
	Elf *image_elf;
	Dwarf *dw;
	struct alt_file alt;
	Dwarf_Off *unit_off;	/* unit DIE offsets, by group */
	struct dw_group *groups;
	size_t n_groups;
	struct dw_region *regions;
	size_t n_regions;
	struct range_seg *solid;	/* see covered() */
	size_t n_solid;
	struct file_set files;	/* call sites' files, shared by groups */
	uint32_t n_calls;	/* call_ids handed out */
	struct dw_part empty;	/* a group that could not be read */
	struct line_table no_lines;	/* ... nor its line rows */
	_Atomic(struct sym_list *) all;
};

/* One unit while the index is built. */
struct unit_ent {
	Dwarf_Off off, die_off;
	uint32_t parent;	/* union-find over overlapping units */
	uint32_t group;
	int has_range;
};

/* An address range of one unit. */
struct piece {
	uint64_t lo, hi;
	uint32_t unit;
};

struct lazy_build {
	struct unit_ent *u;
	size_t n_u;
	struct piece *p;
	size_t n_p, cap_p;
};

static int
add_piece(struct lazy_build *lb, uint64_t lo, uint64_t hi, uint32_t unit)
{
	if (lb->n_p == lb->cap_p) {
		size_t cap = lb->cap_p ? 2 * lb->cap_p : 1024;
		struct piece *v = realloc(lb->p, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		lb->p = v;
		lb->cap_p = cap;
	}
	lb->p[lb->n_p].lo = lo;
	lb->p[lb->n_p].hi = hi;
	lb->p[lb->n_p].unit = unit;
	lb->n_p++;
	lb->u[unit].has_range = 1;
	return 0;
}

/* 1 when [lo, hi) meets an executable segment: nothing else has code. */
static int
range_has_code(const struct symtab *st, uint64_t lo, uint64_t hi)
{
	size_t i;

	for (i = 0; i < st->n_loads; i++) {
		const struct load_seg *l = &st->loads[i];

		if ((l->flags & PF_X) && lo < l->vaddr + l->memsz &&
		    hi > l->vaddr)
			return 1;
	}
	return 0;
}

/* The units of .debug_info, in offset order (the eager pass's order). */
static int
list_units(Dwarf *dw, struct lazy_build *lb)
{
	Dwarf_Off off = 0, next, abbrev;
	size_t hsize, cap = 0;
	uint8_t asize, osize;
	Dwarf_Half version;
	struct unit_ent *v;

	/* No type signature pointer: that would walk .debug_types. */
	while (dwarf_next_unit(dw, off, &next, &hsize, &version, &abbrev,
	    &asize, &osize, NULL, NULL) == 0) {
		if (lb->n_u == cap) {
			cap = cap ? 2 * cap : 256;
			if (cap > UINT32_MAX ||
			    (v = realloc(lb->u, cap * sizeof(*v))) == NULL)
				return -1;
			lb->u = v;
		}
		memset(&lb->u[lb->n_u], 0, sizeof(*lb->u));
		lb->u[lb->n_u].off = off;
		lb->u[lb->n_u].die_off = off + hsize;
		lb->u[lb->n_u].parent = (uint32_t)lb->n_u;
		lb->n_u++;
		off = next;
	}
	return 0;
}

/* The unit holding .debug_info offset off, or -1. */
static long
unit_of(const struct lazy_build *lb, Dwarf_Off off)
{
	size_t lo = 0, hi = lb->n_u, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (lb->u[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? -1 : (long)lo - 1;
}

/*
 * The units' address ranges: .debug_aranges where it lists a unit (one
 * small table instead of every unit's DIE), the unit DIE's own ranges for
 * the others.  A unit with neither has no code.
 */
static int
find_pieces(const struct symtab *st, Dwarf *dw, struct lazy_build *lb)
{
	Dwarf_Aranges *ar;
	Dwarf_Addr addr, base, lo, hi;
	Dwarf_Word len;
	Dwarf_Off off;
	Dwarf_Die die;
	ptrdiff_t roff;
	size_t i, n = 0;
	long u;

	if (dwarf_getaranges(dw, &ar, &n) != 0)
		n = 0;
	for (i = 0; i < n; i++) {
		if (dwarf_getarangeinfo(dwarf_onearange(ar, i), &addr, &len,
		    &off) != 0 || (u = unit_of(lb, off)) < 0)
			continue;
		lb->u[u].has_range = 1;	/* listed, even if not code */
		if (len > 0 && addr + len > addr &&
		    range_has_code(st, addr, addr + len) &&
		    add_piece(lb, addr, addr + len, (uint32_t)u) != 0)
			return -1;
	}
	for (i = 0; i < lb->n_u; i++) {
		if (lb->u[i].has_range ||
		    dwarf_offdie(dw, lb->u[i].die_off, &die) == NULL)
			continue;
		roff = 0;
		while ((roff = dwarf_ranges(&die, roff, &base, &lo, &hi)) > 0)
			if (hi > lo && range_has_code(st, lo, hi) &&
			    add_piece(lb, lo, hi, (uint32_t)i) != 0)
				return -1;
	}
	return 0;
}

static uint32_t
uf_find(struct unit_ent *u, uint32_t i)
{
	while (u[i].parent != i) {
		u[i].parent = u[u[i].parent].parent;
		i = u[i].parent;
	}
	return i;
}

static void
uf_union(struct unit_ent *u, uint32_t a, uint32_t b)
{
	a = uf_find(u, a);
	b = uf_find(u, b);
	if (a < b)
		u[b].parent = a;
	else if (b < a)
		u[a].parent = b;
}

static int
piece_cmp(const void *pa, const void *pb)
{
	const struct piece *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/*
 * Merges overlapping pieces into regions, their units into groups, and
 * lists each group's units in offset order.  Returns 0 or -1.
 */
static int
build_groups(struct dwarf_lazy *dl, struct lazy_build *lb)
{
	size_t i, j, n_r = 0;
	uint32_t g, *fill;

	/* No pieces (a unit without ranges): no array to sort. */
	if (lb->n_p > 1)
		qsort(lb->p, lb->n_p, sizeof(*lb->p), piece_cmp);
	dl->regions = malloc((lb->n_p + 1) * sizeof(*dl->regions));
	if (dl->regions == NULL)
		return -1;
	for (i = 0; i < lb->n_p; i = j) {
		uint64_t hi = lb->p[i].hi;

		for (j = i + 1; j < lb->n_p && lb->p[j].lo < hi; j++) {
			uf_union(lb->u, lb->p[i].unit, lb->p[j].unit);
			if (lb->p[j].hi > hi)
				hi = lb->p[j].hi;
		}
		dl->regions[n_r].lo = lb->p[i].lo;
		dl->regions[n_r].hi = hi;
		dl->regions[n_r].group = lb->p[i].unit;	/* a unit, for now */
		n_r++;
	}
	dl->n_regions = n_r;
	for (i = 0; i < lb->n_u; i++)
		lb->u[i].group = UINT32_MAX;
	for (i = 0; i < lb->n_u; i++) {
		uint32_t r = uf_find(lb->u, (uint32_t)i);

		if (!lb->u[i].has_range)
			continue;
		if (lb->u[r].group == UINT32_MAX)
			lb->u[r].group = (uint32_t)dl->n_groups++;
		lb->u[i].group = lb->u[r].group;
	}
	for (i = 0; i < n_r; i++)
		dl->regions[i].group = lb->u[dl->regions[i].group].group;
	dl->groups = calloc(dl->n_groups + 1, sizeof(*dl->groups));
	dl->unit_off = malloc((lb->n_u + 1) * sizeof(*dl->unit_off));
	fill = calloc(dl->n_groups + 1, sizeof(*fill));
	if (dl->groups == NULL || dl->unit_off == NULL || fill == NULL) {
		free(fill);
		return -1;
	}
	for (i = 0; i < lb->n_u; i++)
		if (lb->u[i].group != UINT32_MAX)
			dl->groups[lb->u[i].group].n++;
	for (g = 0, j = 0; g < dl->n_groups; g++) {
		dl->groups[g].first = (uint32_t)j;
		j += dl->groups[g].n;
	}
	for (i = 0; i < lb->n_u; i++) {
		if ((g = lb->u[i].group) == UINT32_MAX)
			continue;
		dl->unit_off[dl->groups[g].first + fill[g]++] = lb->u[i].die_off;
	}
	free(fill);
	return 0;
}

/* The number of regions that start at or before addr. */
static size_t
regions_upper(const struct dwarf_lazy *dl, uint64_t addr)
{
	size_t lo = 0, hi = dl->n_regions, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (dl->regions[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
part_free(struct dw_part *p)
{
	free(p->syms);
	free(p->segs);
	free(p->inl.inl);
	free(p->inl.isegs);
	free(p);
}

/*
 * Reads group g's units.  Their functions go into into when it is not
 * NULL (a group read at open), else into the part.  Called with dl->lock
 * held or before the table is shared.  Returns the part, or NULL when
 * memory ran out (e says so).
 */
static struct dw_part *
group_read(struct symtab *st, struct dwarf_lazy *dl, uint32_t g,
    struct symbuild *into, struct error *e)
{
	const struct dw_group *gr = &dl->groups[g];
	struct symbuild own = { NULL, 0, 0 };
	struct dw_part *p;
	struct dw_ctx c;
	Dwarf_Die cudie;
	uint32_t i;
	int rc = 0, tag;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		error_set(e, ERR_NOMEM, "%s: DWARF", st->path);
		return NULL;
	}
	memset(&c, 0, sizeof(c));
	c.st = st;
	c.b = into != NULL ? into : &own;
	c.e = e;
	c.solid = dl->solid;
	c.n_solid = dl->n_solid;
	c.files = &dl->files;
	c.n_calls = dl->n_calls;
	for (i = 0; i < gr->n && rc == 0; i++) {
		if (dwarf_offdie(dl->dw, dl->unit_off[gr->first + i],
		    &cudie) == NULL)
			continue;
		tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit)
			continue;
		unit_begin(&c, &cudie);
		rc = walk(&c, &cudie, 0, 0, 0);
	}
	if (rc == 0)
		rc = finish_inlines(&c, &p->inl);
	if (rc == 0 && own.n > 0 && symtab_build_syms(st, &own, &p->syms,
	    &p->n_syms, &p->segs, &p->n_segs) != 0)
		rc = nomem(&c);
	dl->n_calls = c.n_calls;
	ctx_free(&c);
	symbuild_free(&own);
	if (rc != 0) {
		part_free(p);
		return NULL;
	}
	return p;
}

/* Group g's part, read the first time it is asked for. */
static const struct dw_part *
group_part(const struct symtab *st, uint32_t g)
{
	struct dwarf_lazy *dl = st->dw;
	struct dw_part *p;
	struct error e;

	p = atomic_load_explicit(&dl->groups[g].part, memory_order_acquire);
	if (p != NULL)
		return p;
	pthread_mutex_lock(&dl->lock);
	p = atomic_load_explicit(&dl->groups[g].part, memory_order_relaxed);
	if (p == NULL) {
		/* The arena and the file set are only written under the lock. */
		p = group_read((struct symtab *)st, dl, g, NULL, &e);
		if (p == NULL)
			p = &dl->empty;
		atomic_store_explicit(&dl->groups[g].part, p,
		    memory_order_release);
	}
	pthread_mutex_unlock(&dl->lock);
	return p;
}

/*
 * The groups whose functions would change the symbol table: a symbol of
 * guessed size ends where the next function starts, and one of size 0
 * (the last) would get a size from it, so the units with code there are
 * read now, into b, as the eager pass would.  Everything a later group
 * adds then lies where no symbol is, and changes no symbol.
 */
static int
read_sensitive(struct symtab *st, struct dwarf_lazy *dl, struct symbuild *b,
    struct error *e)
{
	struct dw_part *p;
	size_t i, k;
	uint64_t lo, hi;

	for (i = 0; i < st->n_syms; i++) {
		const struct sym *s = &st->syms[i];

		if (s->size != 0 && !(s->flags & SYM_SIZE_GUESSED))
			continue;
		lo = s->addr;
		hi = s->size != 0 ? s->addr + s->size :
		    i + 1 < st->n_syms ? st->syms[i + 1].addr : UINT64_MAX;
		k = regions_upper(dl, lo);
		if (k > 0 && dl->regions[k - 1].hi > lo)
			k--;
		for (; k < dl->n_regions && dl->regions[k].lo < hi; k++) {
			uint32_t g = dl->regions[k].group;

			if (atomic_load_explicit(&dl->groups[g].part,
			    memory_order_relaxed) != NULL)
				continue;
			if ((p = group_read(st, dl, g, b, e)) == NULL)
				return -ERR_NOMEM;
			atomic_store_explicit(&dl->groups[g].part, p,
			    memory_order_relaxed);
		}
	}
	return 0;
}

static int
lazy_index(struct symtab *st, struct dwarf_lazy *dl, struct symbuild *b,
    struct error *e)
{
	struct lazy_build lb = { NULL, 0, NULL, 0, 0 };
	int rc = -ERR_NOMEM;

	if (solid_segs(st, &dl->solid, &dl->n_solid) == 0 &&
	    list_units(dl->dw, &lb) == 0 && find_pieces(st, dl->dw, &lb) == 0 &&
	    build_groups(dl, &lb) == 0)
		rc = 0;
	free(lb.u);
	free(lb.p);
	if (rc != 0)
		return error_set(e, ERR_NOMEM, "%s: DWARF", st->path);
	return read_sensitive(st, dl, b, e);
}

void
dwarfinfo_free(struct dwarf_lazy *dl)
{
	struct line_table *lt;
	struct sym_list *all;
	struct dw_part *p;
	size_t g;

	if (dl == NULL)
		return;
	for (g = 0; dl->groups != NULL && g < dl->n_groups; g++) {
		p = atomic_load_explicit(&dl->groups[g].part,
		    memory_order_relaxed);
		if (p != NULL && p != &dl->empty)
			part_free(p);
		lt = atomic_load_explicit(&dl->groups[g].lines,
		    memory_order_relaxed);
		if (lt != NULL && lt != &dl->no_lines) {
			free(lt->rows);
			free(lt->index);
			free(lt->files);
			free(lt);
		}
	}
	all = atomic_load_explicit(&dl->all, memory_order_relaxed);
	if (all != NULL) {
		free(all->v);
		free(all);
	}
	free(dl->groups);
	free(dl->regions);
	free(dl->unit_off);
	free(dl->solid);
	file_set_free(&dl->files);
	if (dl->dw != NULL)
		dwarf_end(dl->dw);
	alt_close(&dl->alt);
	if (dl->image_elf != NULL)
		elf_end(dl->image_elf);
	dwarfimg_free(dl->image, dl->image_size);
	elf_file_close(&dl->f);
	pthread_mutex_destroy(&dl->lock);
	free(dl);
}

/* The DWARF a lazy table reads: the image, else the file itself. */
struct lazy_src {
	char *image;
	size_t image_size;
	Elf *image_elf;
	Dwarf *dw;
	struct alt_file alt;
};

static void
lazy_src_close(struct lazy_src *ls)
{
	if (ls->dw != NULL)
		dwarf_end(ls->dw);
	alt_close(&ls->alt);
	if (ls->image_elf != NULL)
		elf_end(ls->image_elf);
	dwarfimg_free(ls->image, ls->image_size);
}

/*
 * Opens f's DWARF through a decompressed image of it when it has
 * compressed sections (dwarfimg.h), else as it is.  Returns 1 with ls
 * filled, 0 when f has no DWARF, or -ERR_NOMEM.
 */
static int
lazy_src_open(struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct lazy_src *ls, struct error *e)
{
	int rc;

	memset(ls, 0, sizeof(*ls));
	ls->alt.fd = -1;
	rc = dwarfimg_build(f->elf, &ls->image, &ls->image_size);
	if (rc < 0)
		return error_set(e, ERR_NOMEM, "%s: DWARF", path);
	if (rc == 1 && (ls->image_elf = elf_memory(ls->image,
	    ls->image_size)) != NULL)
		ls->dw = dwarf_begin_elf(ls->image_elf, DWARF_C_READ, NULL);
	if (ls->dw == NULL) {
		lazy_src_close(ls);
		memset(ls, 0, sizeof(*ls));
		ls->alt.fd = -1;
		ls->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	}
	if (ls->dw == NULL)
		return 0;
	rc = alt_attach(ls->dw, path, opt, &ls->alt, e);
	if (rc != 0) {
		lazy_src_close(ls);
		return rc;
	}
	return 1;
}

/* Takes over ls, and f when ls reads f itself (also on failure). */
static int
lazy_open(struct symtab *st, struct elf_file *f, struct lazy_src *ls,
    struct symbuild *b, struct error *e)
{
	struct dwarf_lazy *dl = calloc(1, sizeof(*dl));
	int rc;

	if (dl == NULL) {
		lazy_src_close(ls);
		return error_set(e, ERR_NOMEM, "%s: DWARF", st->path);
	}
	pthread_mutex_init(&dl->lock, NULL);
	dl->f.fd = -1;
	if (ls->image == NULL) {
		dl->f = *f;
		f->fd = -1;
		f->elf = NULL;
		/*
		 * Mapped (or read in now): the descriptor need not stay
		 * open.  FDREAD also does what FDDONE does.
		 */
		if (elf_cntl(dl->f.elf, ELF_C_FDREAD) == 0) {
			close(dl->f.fd);
			dl->f.fd = -1;
		}
	}
	dl->image = ls->image;
	dl->image_size = ls->image_size;
	dl->image_elf = ls->image_elf;
	dl->dw = ls->dw;
	dl->alt = ls->alt;
	rc = lazy_index(st, dl, b, e);
	if (rc != 0) {
		dwarfinfo_free(dl);
		return rc;
	}
	st->dw = dl;
	st->stats.has_dwarf = 1;
	return 0;
}

static void
narrow(uint64_t *lo, uint64_t *hi, uint64_t glo, uint64_t ghi)
{
	if (glo > *lo)
		*lo = glo;
	if (ghi < *hi)
		*hi = ghi;
}

enum part_kind { PART_FN, PART_INL };

static long
part_span(const struct dw_part *p, enum part_kind k, uint64_t addr,
    uint64_t *lo, uint64_t *hi)
{
	if (k == PART_FN)
		return segs_span(p->segs, p->n_segs, addr, lo, hi);
	return segs_span(p->inl.isegs, p->inl.n_isegs, addr, lo, hi);
}

static const void *
part_entry(const struct dw_part *p, enum part_kind k, long i)
{
	if (k == PART_FN)
		return &p->syms[p->segs[i].idx];
	return &p->inl.inl[p->inl.isegs[i].idx];
}

/*
 * The entry at addr among the groups' functions or inlined calls.  Only
 * the group whose region holds addr can have one there.  A gap's bounds
 * come from the neighbouring regions' groups too, read outwards until a
 * region lies beyond the bound found so far ([*lo, *hi) narrows).
 */
static const void *
lazy_find(const struct symtab *st, enum part_kind kind, uint64_t addr,
    uint64_t *lo, uint64_t *hi)
{
	const struct dwarf_lazy *dl = st->dw;
	size_t k = regions_upper(dl, addr), down = k, up = k;
	const struct dw_part *p;
	uint64_t glo, ghi;
	long i;

	if (k > 0 && addr < dl->regions[k - 1].hi) {
		p = group_part(st, dl->regions[k - 1].group);
		i = part_span(p, kind, addr, &glo, &ghi);
		if (lo == NULL)
			return i < 0 ? NULL : part_entry(p, kind, i);
		narrow(lo, hi, glo, ghi);
		if (i >= 0)
			return part_entry(p, kind, i);
		down = k - 1;
	} else if (lo == NULL)
		return NULL;
	while (down > 0 && dl->regions[down - 1].hi > *lo) {
		down--;
		p = group_part(st, dl->regions[down].group);
		if (part_span(p, kind, addr, &glo, &ghi) < 0)
			narrow(lo, hi, glo, ghi);
	}
	for (; up < dl->n_regions && dl->regions[up].lo < *hi; up++) {
		p = group_part(st, dl->regions[up].group);
		if (part_span(p, kind, addr, &glo, &ghi) < 0)
			narrow(lo, hi, glo, ghi);
	}
	return NULL;
}

const struct sym *
dwarfinfo_fn(const struct symtab *st, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	return lazy_find(st, PART_FN, addr, lo, hi);
}

const struct sym_inline *
dwarfinfo_inline(const struct symtab *st, uint64_t addr, uint64_t *lo,
    uint64_t *hi)
{
	return lazy_find(st, PART_INL, addr, lo, hi);
}

/* The line rows of group g's units, as the eager pass reads them. */
static struct line_table *
group_lines_read(struct symtab *st, struct dwarf_lazy *dl, uint32_t g)
{
	const struct dw_group *gr = &dl->groups[g];
	struct file_set files;
	struct line_table *lt;
	struct dw_ctx c;
	struct error e;
	Dwarf_Attribute a;
	Dwarf_Die cudie;
	uint32_t i;
	int rc = 0, tag;

	if ((lt = calloc(1, sizeof(*lt))) == NULL)
		return NULL;
	memset(&c, 0, sizeof(c));
	memset(&files, 0, sizeof(files));
	c.st = st;
	c.e = &e;
	c.files = &files;
	for (i = 0; i < gr->n && rc == 0; i++) {
		if (dwarf_offdie(dl->dw, dl->unit_off[gr->first + i],
		    &cudie) == NULL)
			continue;
		tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit)
			continue;
		c.comp_dir = dwarf_formstring(dwarf_attr(&cudie,
		    DW_AT_comp_dir, &a));
		rc = read_lines(&c, &cudie);
	}
	if (rc == 0)
		rc = lines_build(&c, lt);
	ctx_free(&c);
	file_set_free(&files);
	if (rc != 0) {
		free(lt);
		return NULL;
	}
	return lt;
}

/* Group g's line rows, read the first time they are asked for. */
static const struct line_table *
group_lines(const struct symtab *st, uint32_t g)
{
	struct dwarf_lazy *dl = st->dw;
	struct line_table *lt;

	lt = atomic_load_explicit(&dl->groups[g].lines, memory_order_acquire);
	if (lt != NULL)
		return lt;
	pthread_mutex_lock(&dl->lock);
	lt = atomic_load_explicit(&dl->groups[g].lines, memory_order_relaxed);
	if (lt == NULL) {
		lt = group_lines_read((struct symtab *)st, dl, g);
		if (lt == NULL)
			lt = &dl->no_lines;
		atomic_store_explicit(&dl->groups[g].lines, lt,
		    memory_order_release);
	}
	pthread_mutex_unlock(&dl->lock);
	return lt;
}

/*
 * Which of two rows at or before an address the sorted table would put
 * last: the higher address; at one address an end of sequence sorts
 * first.  (Two groups' rows meet only where one group's code ends and
 * the next one's begins: an end and a row, or two ends, which answer
 * the same.)
 */
static int
row_later(const struct line_row *r, const struct line_row *best)
{
	if (best == NULL || r->addr != best->addr)
		return best == NULL || r->addr > best->addr;
	return best->file == LINE_END && r->file != LINE_END;
}

/*
 * The last row at or before addr: the group whose region holds addr has
 * it, unless its last such row lies below that region; then the regions
 * below are read downwards until one ends before the best row so far.
 */
const struct line_row *
dwarfinfo_line(const struct symtab *st, uint64_t addr,
    const struct line_table **lt_out)
{
	const struct dwarf_lazy *dl = st->dw;
	size_t down = regions_upper(dl, addr);
	const struct line_table *lt;
	const struct line_row *r, *best = NULL;

	*lt_out = &dl->no_lines;
	if (down > 0 && addr < dl->regions[down - 1].hi) {
		const struct dw_region *reg = &dl->regions[--down];

		lt = group_lines(st, reg->group);
		best = line_table_find(lt, addr);
		*lt_out = lt;
		if (best != NULL && (best->addr > reg->lo ||
		    (best->addr == reg->lo && best->file != LINE_END)))
			return best;
	}
	for (; down > 0; down--) {
		const struct dw_region *reg = &dl->regions[down - 1];

		if (best != NULL && reg->hi < best->addr)
			break;
		lt = group_lines(st, reg->group);
		r = line_table_find(lt, addr);
		if (r != NULL && row_later(r, best)) {
			best = r;
			*lt_out = lt;
		}
	}
	return best;
}

static int
sym_ptr_cmp(const void *pa, const void *pb)
{
	const struct sym *a = *(const struct sym *const *)pa;
	const struct sym *b = *(const struct sym *const *)pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return strcmp(a->raw, b->raw);
}

/* st->syms and every group's functions, in address order. */
static struct sym_list *
all_build(const struct symtab *st, const struct dwarf_lazy *dl)
{
	const struct dw_part *p;
	struct sym_list *l;
	size_t g, i, n = st->n_syms;

	for (g = 0; g < dl->n_groups; g++)
		n += group_part(st, (uint32_t)g)->n_syms;
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->v = malloc((n + 1) * sizeof(*l->v))) == NULL) {
		free(l);
		return NULL;
	}
	for (i = 0; i < st->n_syms; i++)
		l->v[l->n++] = &st->syms[i];
	for (g = 0; g < dl->n_groups; g++) {
		p = group_part(st, (uint32_t)g);
		for (i = 0; i < p->n_syms; i++)
			l->v[l->n++] = &p->syms[i];
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), sym_ptr_cmp);
	return l;
}

const struct sym *
dwarfinfo_sym(const struct symtab *st, size_t i)
{
	struct dwarf_lazy *dl = st->dw;
	struct sym_list *l;

	l = atomic_load_explicit(&dl->all, memory_order_acquire);
	if (l == NULL) {
		struct sym_list *mine = all_build(st, dl);

		pthread_mutex_lock(&dl->lock);
		l = atomic_load_explicit(&dl->all, memory_order_relaxed);
		if (l == NULL && mine != NULL) {
			atomic_store_explicit(&dl->all, mine,
			    memory_order_release);
			l = mine;
			mine = NULL;
		}
		pthread_mutex_unlock(&dl->lock);
		if (mine != NULL) {
			free(mine->v);
			free(mine);
		}
	}
	if (l == NULL)		/* out of memory: what the symbol table has */
		return i < st->n_syms ? &st->syms[i] : NULL;
	return i < l->n ? l->v[i] : NULL;
}

void
dwarfinfo_stats(const struct symtab *st, struct symtab_stats *out)
{
	const struct dwarf_lazy *dl = st->dw;
	const struct line_table *lt;
	const struct dw_part *p;
	size_t g;

	out->n_bytes += sizeof(*dl);
	for (g = 0; g < dl->n_groups; g++) {
		p = group_part(st, (uint32_t)g);
		lt = group_lines(st, (uint32_t)g);
		out->n_syms += p->n_syms;
		out->n_from_dwarf += p->n_syms;
		out->n_inlines += p->inl.n_inl;
		out->n_lines += lt->n_rows;
		out->n_bytes += p->n_syms * sizeof(*p->syms) +
		    p->n_segs * sizeof(*p->segs) +
		    p->inl.n_inl * sizeof(*p->inl.inl) +
		    p->inl.n_isegs * sizeof(*p->inl.isegs) +
		    lt->n_rows * sizeof(*lt->rows) +
		    lt->n_index * sizeof(*lt->index) +
		    lt->n_files * sizeof(*lt->files);
	}
}

int
dwarfinfo_read(struct symtab *st, struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct symbuild *b, struct error *e)
{
	struct alt_file alt = { -1, NULL, NULL };
	struct lazy_src ls;
	Dwarf *dw;
	int rc;

	if (!(opt->flags & SYMTAB_EAGER_DWARF)) {
		rc = lazy_src_open(f, path, opt, &ls, e);
		return rc <= 0 ? rc : lazy_open(st, f, &ls, b, e);
	}
	dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (dw == NULL)
		return 0;
	rc = alt_attach(dw, path, opt, &alt, e);
	if (rc == 0)
		rc = read_eager(st, dw, b, e);
	dwarf_end(dw);
	alt_close(&alt);
	return rc;
}

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
 * This file is the collector both use (the walk over a unit's DIEs and
 * its line table, dwarfinfo_int.h) and the eager pass; the lazy index is
 * dwarfinfo_lazy.c.
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
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/debugfind.h"
#include "sym/demangle.h"
#include "sym/dwarfinfo_int.h"
#include "sym/symtab_int.h"

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



/* The segments of st->segs whose symbol's size is not guessed. */
int
dwi_solid_segs(const struct symtab *st, struct range_seg **out, size_t *n)
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
int
dwi_walk(struct dw_ctx *c, Dwarf_Die *die, int32_t pfirst, int32_t pend,
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
				rc = dwi_walk(c, &child, 0, 0, 0);
			break;
		case DW_TAG_inlined_subroutine:
			rc = add_inline(c, &child, pfirst, pend, depth + 1,
			    &first, &end);
			if (rc == 0 && first == end)	/* no code of its own */
				rc = dwi_walk(c, &child, pfirst, pend, depth);
			else if (rc == 0)
				rc = dwi_walk(c, &child, first, end, depth + 1);
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
			rc = dwi_walk(c, &child, pfirst, pend, depth);
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
int
dwi_read_lines(struct dw_ctx *c, Dwarf_Die *cudie)
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


/* Moves the collected inlined calls into t and builds their segments. */
int
dwi_finish_inlines(struct dw_ctx *c, struct inl_table *t)
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
void
dwi_unit_begin(struct dw_ctx *c, Dwarf_Die *cudie)
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
		dwi_unit_begin(c, &cudie);
		rc = dwi_walk(c, &cudie, 0, 0, 0);
		if (rc == 0)
			rc = dwi_read_lines(c, &cudie);
	}
	return rc;
}

void
dwi_ctx_free(struct dw_ctx *c)
{
	free(c->rows);
	free(c->seqs);
	free(c->inl);
}

void
dwi_file_set_free(struct file_set *fs)
{
	free(fs->names);
	free(fs->slots);
	fs->names = NULL;
	fs->slots = NULL;
	fs->n = fs->cap_names = fs->n_slots = 0;
}

/* Sorts the collected rows into lt.  Returns 0 or -ERR_NOMEM. */
int
dwi_lines_build(struct dw_ctx *c, struct line_table *lt)
{
	if (sort_rows(c) != 0 || lines_finish(c, lt) != 0)
		return nomem(c);
	return 0;
}


void
dwi_alt_close(struct alt_file *a)
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
int
dwi_alt_attach(Dwarf *dw, const char *dw_path, const struct symtab_options *opt,
    struct alt_file *a, struct symtab_refused *refused, struct error *e)
{
	const char *name;
	const void *id;
	struct error why;
	char *path = NULL;
	unsigned flags = 0;
	ssize_t n;
	int rc;

	n = dwelf_dwarf_gnu_debugaltlink(dw, &name, &id);
	if (n <= 0)
		return 0;
	if (opt->flags & SYMTAB_NO_SYSTEM_DEBUG)
		flags |= DEBUGFIND_NO_SYSTEM;
	rc = debugfind_alt(name, id, (size_t)n, dw_path, opt->root,
	    opt->debug_dirs, opt->n_debug_dirs, flags, refused, &path, e);
	if (rc <= 0)
		return rc;
	/* Not found there is as good as none; refused is counted. */
	error_clear(&why);
	a->fd = symfile_open(opt->root, path, &why);
	free(path);
	if (a->fd < 0) {
		symtab_note_refused(refused, a->fd, &why);
		return 0;
	}
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
	if (dwi_solid_segs(st, &solid, &c.n_solid) != 0)
		return nomem(&c);
	c.solid = solid;
	rc = read_units(&c, dw);
	if (rc == 0)
		rc = dwi_finish_inlines(&c, &t);
	if (rc == 0)
		rc = dwi_lines_build(&c, &st->lines);
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
	dwi_ctx_free(&c);
	dwi_file_set_free(&files);
	return rc;
}

int
dwarfinfo_read(struct symtab *st, struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct symbuild *b, struct error *e)
{
	struct alt_file alt = { -1, NULL, NULL };
	Dwarf *dw;
	int rc;

	if (!(opt->flags & SYMTAB_EAGER_DWARF))
		return dwi_lazy_read(st, f, path, opt, b, e);
	dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (dw == NULL)
		return 0;
	rc = dwi_alt_attach(dw, path, opt, &alt, &st->refused, e);
	if (rc == 0)
		rc = read_eager(st, dw, b, e);
	dwarf_end(dw);
	dwi_alt_close(&alt);
	return rc;
}

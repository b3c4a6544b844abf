/*
 * dwarfinfo_int: what dwarfinfo's two readers share (dwarfinfo.c: the
 * collector and the eager pass; dwarfinfo_lazy.c: the lazy index): the
 * collector's state while it walks units (struct dw_ctx: file names,
 * inlined calls, line rows), the walk over a unit's DIEs and its line
 * table, the tables the collected calls and rows become, and the dwz
 * supplementary file.  Nothing outside lib/sym/dwarfinfo*.c includes it.
 */
#ifndef PTKIT_DWARFINFO_INT_H
#define PTKIT_DWARFINFO_INT_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

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

/* The inlined calls collected, made into a table with its segments. */
struct inl_table {
	struct sym_inline *inl;
	size_t n_inl;
	struct range_seg *isegs;
	size_t n_isegs;
};

/* A dwz supplementary file, open while its main DWARF is read. */
struct alt_file {
	int fd;
	Elf *elf;
	Dwarf *dw;
};

static inline int
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
static inline int
covered(const struct dw_ctx *c, uint64_t addr)
{
	return segs_find(c->solid, c->n_solid, addr) >= 0;
}

/*
 * Attaches the supplementary file dw names, when it has one and it is
 * found; without it, names and call sites that live there are missing,
 * which is not an error (one refused is counted in *refused).  Returns 0
 * or -ERR_NOMEM.
 */
int dwi_alt_attach(Dwarf *dw, const char *dw_path,
    const struct symtab_options *opt, struct alt_file *a,
    struct symtab_refused *refused, struct error *e);

void dwi_alt_close(struct alt_file *a);

void dwi_ctx_free(struct dw_ctx *c);

void dwi_file_set_free(struct file_set *fs);

/* Moves the collected inlined calls into t and builds their segments. */
int dwi_finish_inlines(struct dw_ctx *c, struct inl_table *t);

/* Sorts the collected rows into lt.  Returns 0 or -ERR_NOMEM. */
int dwi_lines_build(struct dw_ctx *c, struct line_table *lt);

/* The rows of one unit; sequences that do not start in code are skipped. */
int dwi_read_lines(struct dw_ctx *c, Dwarf_Die *cudie);

/* The segments of st->segs whose symbol's size is not guessed. */
int dwi_solid_segs(const struct symtab *st, struct range_seg **out,
    size_t *n);

/* What one unit's DIEs need: its file table and directory. */
void dwi_unit_begin(struct dw_ctx *c, Dwarf_Die *cudie);

/*
 * Walks the children of die.  [pfirst, pend) are the entries of the
 * inlined call we are inside (empty at function level), depth its depth.
 */
int dwi_walk(struct dw_ctx *c, Dwarf_Die *die, int32_t pfirst, int32_t pend,
    uint32_t depth);

/*
 * dwarfinfo_read without SYMTAB_EAGER_DWARF (dwarfinfo_lazy.c): builds
 * st->dw, the index of f's units, taking over f.  Returns 0 (also when f
 * has no DWARF) or -ERR_NOMEM.
 */
int dwi_lazy_read(struct symtab *st, struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct symbuild *b, struct error *e);

#endif

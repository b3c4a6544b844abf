/*
 * symtab_int: what the modules behind symtab.h share (symtab.c, symelf.c,
 * dwarfinfo*.c, jitmap.c).  Not for use outside them.
 *
 * Loading fills a struct symbuild with candidate symbols (one per symbol
 * table entry), which symtab_finish_syms() turns into the final sorted,
 * alias-grouped struct sym array and its lookup segments.  Strings live in
 * the table's arena, so everything is freed at once.
 */
#ifndef PTKIT_SYMTAB_INT_H
#define PTKIT_SYMTAB_INT_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "sym/symtab.h"

/* Bump allocator: pointers stay valid until arena_free. */
struct arena_chunk;
struct arena {
	struct arena_chunk *head;
	size_t bytes;		/* allocated from malloc, for statistics */
};

void *arena_alloc(struct arena *a, size_t size);
char *arena_strndup(struct arena *a, const char *s, size_t len);
char *arena_strdup(struct arena *a, const char *s);
void arena_free(struct arena *a);

/* A disjoint address range owned by entry idx of some array. */
struct range_seg {
	uint64_t lo, hi;
	uint32_t idx;
};

/* An interval to turn into segments: see segs_build. */
struct range_in {
	uint64_t lo, hi;
	uint32_t idx;
	uint32_t order;		/* tie-break: lower sorts first */
};

/*
 * Turns intervals (any order; sorted here) into disjoint segments where
 * each address belongs to the interval that started last among those
 * covering it (the innermost, for nested intervals).  Returns 0 and *out
 * (malloc'd), or -ERR_NOMEM.
 */
int segs_build(struct range_in *in, size_t n, struct range_seg **out,
    size_t *n_out) PTKIT_MUST_CHECK;

/* Index of the segment holding addr, or -1. */
long segs_find(const struct range_seg *s, size_t n, uint64_t addr);

/*
 * Like segs_find, and sets [*lo, *hi) to the segment, or to the gap
 * around addr when it is in none.
 */
long segs_span(const struct range_seg *s, size_t n, uint64_t addr,
    uint64_t *lo, uint64_t *hi);

/* One candidate symbol. */
struct rawsym {
	uint64_t addr, size;
	uint64_t limit;		/* end of its section, 0 if unknown */
	const char *raw;	/* in the arena */
	uint32_t flags;		/* enum sym_flag */
	uint8_t type_rank;	/* 0 function, 1 other */
	uint8_t bind_rank;	/* 0 GLOBAL, 1 LOCAL, 2 WEAK, 3 DWARF */
	uint32_t seq_rank;	/* lower wins among equals (JIT: later line) */
};

struct symbuild {
	struct rawsym *v;
	size_t n, cap;
};

/* Returns 0 or -ERR_NOMEM; raw is copied into st's arena. */
int symbuild_add(struct symtab *st, struct symbuild *b,
    const struct rawsym *r, const char *raw, size_t raw_len,
    struct error *e) PTKIT_MUST_CHECK;
void symbuild_free(struct symbuild *b);

/* A PT_LOAD segment. */
struct load_seg {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags;		/* PF_X, PF_W, PF_R */
};

struct line_row {
	uint64_t addr;
	uint32_t file;		/* index into files[]; LINE_END ends a sequence */
	uint32_t line;
	uint32_t column;
	uint32_t order;		/* position in the DWARF, for a stable sort */
};
#define LINE_END UINT32_MAX
#define LINE_STRIDE 16

/* The line rows of an image in address order, and their file names. */
struct line_table {
	struct line_row *rows;
	size_t n_rows;
	uint64_t *index;	/* rows[k * LINE_STRIDE].addr: fits a cache */
	size_t n_index;
	const char **files;
	size_t n_files;
};

/* The last row of lt at or before addr (maybe an end), or NULL. */
const struct line_row *line_table_find(const struct line_table *lt,
    uint64_t addr);

/* An open ELF file: the descriptor and libelf's handle. */
struct elf_file {
	int fd;
	Elf *elf;
	off_t size;
};

void elf_file_close(struct elf_file *f);

/*
 * Opens path for reading as every file of lib/sym is opened: beneath
 * root when it lies there (symtab_options.root; NULL: none), else as
 * named (O_NONBLOCK for the open, so that a FIFO does not hang it; the
 * caller checks what it is).  Returns the descriptor (blocking), or
 * -ERR_NOTFOUND ("PATH: no such file"), -ERR_PERM (beneath_open's
 * refusals, naming the file as it lies in root), -ERR_IO.
 */
int symfile_open(const char *root, const char *path, struct error *e)
    PTKIT_MUST_CHECK;

struct dwarf_lazy;

struct symtab {
	char *path;
	char *debug_path;
	unsigned char *build_id;
	size_t build_id_len;
	int is_jit;
	struct arena arena;

	struct sym *syms;
	size_t n_syms;
	struct range_seg *segs;
	size_t n_segs;

	struct sym_inline *inl;
	size_t n_inl;
	struct range_seg *isegs;
	size_t n_isegs;

	struct line_table lines;	/* eager DWARF; else see dw */

	struct load_seg *loads;
	size_t n_loads;

	/*
	 * DWARF read per compile unit on first use (dwarfinfo_lazy.c), or
	 * NULL: then syms, inl and lines above hold everything there is.
	 */
	struct dwarf_lazy *dw;

	struct symtab_stats stats;
	struct symtab_refused refused;	/* set while it loads */
};

/* Counts a refusal (rc -ERR_PERM, why in e) into r; NULL r, other rc: none. */
void symtab_note_refused(struct symtab_refused *r, int rc,
    const struct error *e);

/*
 * Sorts and groups b's candidates into st->syms and st->segs (replacing
 * what was there), demangles, guesses zero sizes.  Returns 0 or -ERR_NOMEM.
 */
int symtab_finish_syms(struct symtab *st, struct symbuild *b,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Like symtab_finish_syms, into *syms and *segs (malloc'd) instead of st:
 * for the functions one lazily read compile unit adds.  Returns 0 or
 * -ERR_NOMEM.
 */
int symtab_build_syms(struct symtab *st, struct symbuild *b,
    struct sym **syms, size_t *n_syms, struct range_seg **segs,
    size_t *n_segs) PTKIT_MUST_CHECK;

/* 1 when addr lies in an executable PT_LOAD segment (always 1 for JIT). */
int symtab_addr_is_code(const struct symtab *st, uint64_t addr);

/* symelf.c: PT_LOAD segments of elf into st->loads.  0 or -ERR_*. */
int symelf_read_loads(struct symtab *st, Elf *elf, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * symelf.c: candidates from the best symbol table of main (else debug,
 * else main's .dynsym), plus PLT stubs of main.  debug may be NULL.
 * Sets st->stats.symbol_source.  Returns 0 or -ERR_*.
 */
int symelf_read_syms(struct symtab *st, Elf *main_elf, Elf *debug_elf,
    struct symbuild *b, struct error *e) PTKIT_MUST_CHECK;

/* symelf.c: 1 when elf has a section called name (of any type). */
int symelf_has_section(Elf *elf, const char *name);

/*
 * dwarfinfo.c: the DWARF of f (path: its name, for a dwz supplementary
 * file's .gnu_debugaltlink): functions not covered by st->segs go into
 * b (SYM_FROM_DWARF), inlined calls and line rows into st.
 *
 * With SYMTAB_EAGER_DWARF every unit is read now, into st->inl, st->isegs
 * and st->lines, and libdw is closed.  Otherwise only an index of the
 * units' address ranges is built now (plus the units whose functions
 * would change the symbol table's guessed sizes, into b); st->dw takes
 * over f (f->fd becomes -1, f->elf NULL) and the rest is read by the
 * lookups below, one group of units at a time.
 * Returns 0 (also when f has no DWARF) or -ERR_NOMEM.
 */
int dwarfinfo_read(struct symtab *st, struct elf_file *f, const char *path,
    const struct symtab_options *opt, struct symbuild *b, struct error *e)
    PTKIT_MUST_CHECK;

/* Frees what st->dw owns (NULL is accepted). */
void dwarfinfo_free(struct dwarf_lazy *dw);

/*
 * Lookups of a lazy table, for addresses st's own tables do not answer:
 * as symtab_lookup_span (for addr outside every segment of st->segs, with
 * [*lo, *hi) the gap around it) and symtab_inline_span.  lo and hi may be
 * NULL when no span is wanted (then fewer units are read).
 */
const struct sym *dwarfinfo_fn(const struct symtab *st, uint64_t addr,
    uint64_t *lo, uint64_t *hi);
const struct sym_inline *dwarfinfo_inline(const struct symtab *st,
    uint64_t addr, uint64_t *lo, uint64_t *hi);

/*
 * The line row symtab_line() answers with at addr (maybe an end of
 * sequence) in a lazy table, and in *lt the table that holds it; NULL
 * when no row is at or before addr.
 */
const struct line_row *dwarfinfo_line(const struct symtab *st,
    uint64_t addr, const struct line_table **lt);

/*
 * Function i of a lazy table in address order (every unit read first),
 * or NULL past the end.
 */
const struct sym *dwarfinfo_sym(const struct symtab *st, size_t i);

/* Reads every unit and adds what they hold to *out (symtab_get_stats). */
void dwarfinfo_stats(const struct symtab *st, struct symtab_stats *out);

#endif

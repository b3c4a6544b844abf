/*
 * symtab: names, inlined-call chains and source lines for the code of one
 * ELF image (executable, PIE, shared object, vDSO) or one JIT map.
 *
 * Owns the parsed tables of one image: functions (from .symtab, else
 * .dynsym, completed by DWARF subprograms the symbol table lacks, and
 * PLT stubs named "target@plt" as objdump names them), inlined subroutines
 * (DWARF 4 and 5, plain or compressed, dwz supplementary files included),
 * and the line table.  symtab_open() reads the symbol tables and an index
 * of the DWARF compile units' address ranges; a unit's functions and
 * inlined calls are read the first time an address near it is looked up,
 * its line rows the first time symtab_line() needs them (see Thread
 * safety).  The answers are the same as reading everything at once would
 * give (SYMTAB_EAGER_DWARF does, for the tests).
 * Separate debuginfo is found by build-id and .gnu_debuglink (see
 * debugfind.h).  Names are demangled with libiberty (C++, Rust legacy and
 * v0; see demangle.h); the raw symbol is kept beside the demangled one.
 *
 * Typical use (ptspans): one struct symcache per run; for each MAP record,
 * symcache_get(image path); for each block, symtab_addr_from_map(), then
 * symtab_lookup_span() and symtab_inline_span() to walk the block's
 * addresses range by range rather than byte by byte.
 *
 * Addresses.  Every lookup takes an ELF virtual address: the address the
 * image was linked at (st_value, DW_AT_low_pc; 0-based for PIE and shared
 * objects).  A runtime address inside a mapping (what an MMAP2 record
 * gives: start, end, file offset) converts with symtab_addr_from_map();
 * a file offset with symtab_addr_from_offset().  A JIT map's addresses are
 * runtime addresses; its conversions are the identity.
 *
 * Aliases.  Several symbols at one address form one struct sym whose name
 * is the preferred one, chosen as perf's choose_best_symbol() chooses (so
 * names agree with perf script's): a function over a label; a nonzero
 * size; not WEAK; GLOBAL over LOCAL; then, unlike perf, a name of the
 * default version or none over a compat alias ("free" over
 * "cfree@GLIBC_2.2.5", which perf's longest-name rule picks); fewer
 * leading underscores; the longer name; then byte order of the raw name,
 * which makes the choice stable.  The others are kept in
 * aliases[] (raw names, in the same order).  Symbol versions
 * ("@GLIBC_2.14", "@@GLIBC_2.14") are part of raw but not of name, and two
 * aliases that differ only by version are kept once.
 *
 * Labels.  Symbols without a type in code sections, not hidden (assembly
 * entry points: ld.so's _start), name code as perf names it, except
 * inside a function with a size, where they are not entries.
 *
 * Sizes.  A symbol of size 0 extends to the next symbol's address or the
 * end of its section, whichever comes first (SYM_SIZE_GUESSED).  Ranges that
 * overlap resolve to the innermost (the one that started last).
 *
 * Thread safety.  Any number of threads may call the lookup functions
 * on one struct symtab at once without locking of their own.  What a
 * lookup reads is never modified once published: DWARF read on demand is
 * read under a lock inside the table (libdw is not thread-safe; the table
 * owns its handle) and then published with release/acquire ordering, so
 * the lookups of units already read take no lock.  Only symtab_free()
 * needs exclusive access.  symcache.h shares one table per image between
 * threads.  A unit whose DWARF cannot be read on demand (out of memory)
 * answers as if it had none.
 *
 * Memory.  All pointers a lookup returns (struct sym, names, aliases,
 * struct sym_inline, file names) point into the table and stay valid until
 * symtab_free(); the caller never frees them.
 */
#ifndef PTKIT_SYMTAB_H
#define PTKIT_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct symtab;

enum symtab_flag {
	SYMTAB_NO_SYSTEM_DEBUG = 1 << 0, /* do not search /usr/lib/debug */
	SYMTAB_NO_DWARF = 1 << 1,	/* symbol tables only: no inline, no lines */
	SYMTAB_NO_DEBUGLINK = 1 << 2,	/* find separate debuginfo by build-id only */
	SYMTAB_EAGER_DWARF = 1 << 3,	/* read all DWARF in symtab_open (the
					   reference the tests compare with) */
};

struct symtab_options {
	/*
	 * Extra debuginfo roots (a --debug-dir list), searched in this order
	 * before /usr/lib/debug.  Each root may hold either layout:
	 * ROOT/.build-id/xx/rest.debug (GDB, Debian) or
	 * ROOT/.build-id/xx/rest/debug (perf's build-id cache, a snapshot's
	 * images/ directory).  .gnu_debuglink names are also looked for under
	 * ROOT/<directory of the image>/.
	 */
	const char *const *debug_dirs;
	size_t n_debug_dirs;
	unsigned flags;			/* enum symtab_flag */
	/*
	 * A snapshot directory whose files are not to be trusted, or NULL:
	 * every file under it (an archived image, its debuginfo under
	 * images/.build-id, a dwz file, a JIT map) is opened beneath it
	 * (lib/base/beneath: no "..", no symbolic link on the way, a
	 * regular file only), so that a link planted or swapped in there
	 * never leads the reader elsewhere; files outside it open as named.
	 */
	const char *root;
};

enum sym_flag {
	SYM_GLOBAL = 1 << 0,		/* preferred name has GLOBAL binding */
	SYM_WEAK = 1 << 1,		/* ... WEAK binding (neither: LOCAL) */
	SYM_IFUNC = 1 << 2,		/* STT_GNU_IFUNC: this is the resolver */
	SYM_SIZE_GUESSED = 1 << 3,	/* size was 0 in the table; see above */
	SYM_FROM_DWARF = 1 << 4,	/* not in the symbol table, only in DWARF */
	SYM_FROM_DYNSYM = 1 << 5,	/* from .dynsym (no .symtab anywhere) */
	SYM_PLT = 1 << 6,		/* a PLT stub: raw "target@plt" as objdump
					   has it, name with target demangled */
	SYM_JIT = 1 << 7,		/* from a JIT map */
};

/* One function (or one range of it: DWARF may split a function). */
struct sym {
	uint64_t addr;			/* ELF virtual address of the entry */
	uint64_t size;			/* bytes; [addr, addr + size) */
	const char *name;		/* demangled, without version; never NULL */
	const char *raw;		/* as the table has it; never NULL */
	const char *const *aliases;	/* n_aliases raw names */
	uint32_t n_aliases;
	uint32_t flags;			/* enum sym_flag */
};

/*
 * One inlined call (a DW_TAG_inlined_subroutine), for one of its address
 * ranges (a call with DW_AT_ranges has one entry per range, all with the
 * same call_id: merge by call_id, not by pointer, to count per call).  parent is the inlined call it sits in (NULL when it was inlined
 * straight into the function that symtab_lookup() names), so the chain
 * innermost -> outermost is inl, inl->parent, ... ; depth counts it
 * (1 = inlined into the function itself).
 */
struct sym_inline {
	uint64_t lo, hi;		/* this range: [lo, hi) */
	const char *name;		/* callee, demangled when mangled */
	const char *raw;		/* DW_AT_linkage_name, else DW_AT_name */
	const char *call_file;		/* where it was called; NULL if unknown */
	uint32_t call_line;		/* 0 if unknown */
	uint32_t call_column;		/* 0 if unknown */
	uint32_t depth;			/* >= 1 */
	uint32_t call_id;		/* one per inlined call: its ranges
					   share it; unique in the table */
	const struct sym_inline *parent;
};

/* A source position. */
struct sym_line {
	const char *file;		/* path as DWARF gives it (comp_dir joined) */
	uint32_t line;
	uint32_t column;		/* 0 if unknown */
};

/* An address range of a mapping and the file offset at its start. */
struct sym_mapping {
	uint64_t start, end;		/* runtime addresses: [start, end) */
	uint64_t pgoff;			/* file offset mapped at start */
};

struct symtab_stats {
	size_t n_syms;			/* struct sym entries (alias groups) */
	size_t n_from_dwarf;		/* ... of which SYM_FROM_DWARF */
	size_t n_plt;			/* ... of which SYM_PLT */
	size_t n_inlines;		/* struct sym_inline entries */
	size_t n_lines;			/* line table rows */
	size_t n_bytes;			/* memory the table owns */
	size_t n_bad_lines;		/* JIT map lines skipped */
	size_t first_bad_line;		/* line number of the first, or 0 */
	int has_dwarf;			/* DWARF was found and read */
	const char *symbol_source;	/* ".symtab", ".dynsym", "jitmap", "none" */
};

/*
 * Files refused on the way to a table (a link or a path out of
 * symtab_options.root where separate debuginfo or a dwz file was looked
 * for, a FIFO): the table loads without them, with fewer names, which lib
 * does not say; n counts them and first keeps the first one's reason
 * ("REL: a symbolic link on the way; ...") for the tool that does.
 */
struct symtab_refused {
	uint64_t n;
	struct error first;
};

/*
 * Loads the image at path.  opt may be NULL (system debug dir only).
 * Returns 0 and *out (free it with symtab_free), or:
 *   -ERR_IO        path cannot be opened or read (e says the path and why)
 *   -ERR_NOTFOUND  path does not exist
 *   -ERR_FORMAT    path is not a regular file, not an ELF file, or an
 *                  ELF file whose headers libelf rejects
 *   -ERR_TRUNCATED the ELF file is cut short (sections past its end)
 *   -ERR_UNSUPPORTED an ELF file that is not 64-bit or has no sections
 *   -ERR_NOMEM
 * Debuginfo that cannot be found or read is not an error: the table then
 * has what the image itself has (symtab_stats tells, and symtab_refused
 * what was refused).
 */
int symtab_open(const char *path, const struct symtab_options *opt,
    struct symtab **out, struct error *e) PTKIT_MUST_CHECK;

/*
 * Loads a JIT map in the /tmp/perf-PID.map format: one "START SIZE name"
 * line per function, START and SIZE hexadecimal (an optional 0x is
 * accepted), name running to the end of the line (spaces allowed).  At one
 * address the later line wins.  A line that does not parse (a runtime
 * killed mid-write leaves one) is skipped and counted in n_bad_lines (with
 * the first one's number in first_bad_line), as perf skips it.  Returns 0 and *out, or
 * -ERR_NOTFOUND, -ERR_IO, -ERR_FORMAT (no line parses at all and the file
 * is not empty), -ERR_NOMEM.
 */
int symtab_open_jitmap(const char *path, struct symtab **out,
    struct error *e) PTKIT_MUST_CHECK;

/* symtab_open_jitmap of the file open on fd (taken over, closed in every
 * case), path naming it. */
int symtab_open_jitmap_fd(int fd, const char *path, struct symtab **out,
    struct error *e) PTKIT_MUST_CHECK;

/* Frees st and everything it owns.  NULL is accepted. */
void symtab_free(struct symtab *st);

/* The function containing addr, or NULL when no function covers it. */
const struct sym *symtab_lookup(const struct symtab *st, uint64_t addr);

/*
 * The innermost inlined call at addr, or NULL when addr is not inside
 * inlined code (or the image has no DWARF).  Follow ->parent outwards.
 */
const struct sym_inline *symtab_inline_at(const struct symtab *st,
    uint64_t addr);

/*
 * Range forms of the two lookups above, for walking a block of code: the
 * same answer (including NULL) holds for every address in [*lo, *hi),
 * which contains addr.  Where nothing is known, [*lo, *hi) is the gap up
 * to the neighbouring ranges (0 and UINT64_MAX at the ends).
 */
const struct sym *symtab_lookup_span(const struct symtab *st, uint64_t addr,
    uint64_t *lo, uint64_t *hi);
const struct sym_inline *symtab_inline_span(const struct symtab *st,
    uint64_t addr, uint64_t *lo, uint64_t *hi);

/*
 * The source position of addr (the line table row at or before it in its
 * sequence).  Returns 1 and fills *out, or 0 when no row covers addr.
 */
int symtab_line(const struct symtab *st, uint64_t addr, struct sym_line *out);

/*
 * ELF virtual address of a file offset, through the PT_LOAD segment that
 * holds it.  Returns 0 and *addr, or -ERR_RANGE when no segment maps it.
 */
int symtab_addr_from_offset(const struct symtab *st, uint64_t offset,
    uint64_t *addr) PTKIT_MUST_CHECK;

/*
 * ELF virtual address of runtime address ip inside mapping m:
 * offset = ip - m->start + m->pgoff, then as symtab_addr_from_offset.
 * Returns 0 and *addr, or -ERR_RANGE when ip is outside m or the offset
 * is in no segment.  For a JIT map, *addr = ip.
 */
int symtab_addr_from_map(const struct symtab *st, const struct sym_mapping *m,
    uint64_t ip, uint64_t *addr) PTKIT_MUST_CHECK;

/*
 * Functions in address order: index 0 .. n_syms - 1; NULL past the end.
 * The first call reads every compile unit's DWARF (as symtab_find and
 * symtab_get_stats do): for setup and tests, not for hot paths.
 */
const struct sym *symtab_sym(const struct symtab *st, size_t i);

/*
 * The function whose name, raw name or alias (with or without a version
 * suffix) is exactly name; the lowest address wins.  NULL if none.
 * Linear in the number of functions: for setup, not for hot paths.
 */
const struct sym *symtab_find(const struct symtab *st, const char *name);

void symtab_get_stats(const struct symtab *st, struct symtab_stats *out);

/* What symtab_open refused for st (n 0: nothing). */
const struct symtab_refused *symtab_refused(const struct symtab *st);

/* The image's path, as passed to symtab_open. */
const char *symtab_path(const struct symtab *st);

/* The separate debuginfo file that was read, or NULL. */
const char *symtab_debug_path(const struct symtab *st);

/* The image's build-id bytes (*len of them), or NULL when it has none. */
const unsigned char *symtab_build_id(const struct symtab *st, size_t *len);

#endif

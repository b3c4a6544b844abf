/*
 * codemap: the code of the traced processes, as the MAP records of a
 * block stream describe it, answering the questions of callstack.h.
 *
 * Owns: the mappings of every pid (later MAP records win where they
 * overlap), the image files' bytes (mapped read-only, once per file),
 * instruction lengths and branch kinds (decoded by lib/dec/x86class, the
 * one x86 class table, and mapped with cs_kind_of), function
 * lookups through symcache/symtab (names, PLT stubs, .cold parts; in JIT
 * regions the names of their JIT map, module CODEMAP_JIT_MODULE), inline
 * runs through symtab's inline ranges, and small caches in front of all
 * three so that a hot loop costs a table probe: per instruction, per
 * function, and per block (cs_code.block answers a block's end
 * instruction and inline runs from one probe, replaying the counters its
 * lookups would have moved, and marks reuse the answers an engine may
 * keep, those that replay nothing; every MAP record empties the caches
 * and moves cs_code.gen).
 *
 * Why decode: a call's return address is end_ip plus the call's length,
 * and libipt's struct pt_block gives the length of its last instruction
 * only when the block is truncated; x86class decodes with Zydis 4
 * (DECISIONS.md, Dependencies), as the emu recorder and ptdec do.
 *
 * Symbol tables load ahead: each new image of a MAP record (the first
 * eight) is queued for a thread of the codemap's own, which loads them
 * (symcache_get) in MAP order while the caller waits for blocks or works
 * on other code; the
 * first block that needs an image finds its table loaded, or waits for
 * the load under way, or (when the thread has not reached it) loads it
 * itself.  Answers and counters are the same as loading each image when
 * first needed: images_missing and images_no_symbols count only images a
 * block needed.  codemap_free() lets the load under way finish and
 * starts no other.  A MAP record before any question leaves the caches
 * untouched (they are still empty).
 *
 * Threads: codemap_code's answers are for one engine at a time.  More
 * engines at once (ptspans -j) each ask through a view of their own
 * (codemap_view_new): its own caches and counters over the one set of
 * mappings, images and symbol tables, which load once, whichever view
 * needs them first.  codemap_add must not run while another thread asks.
 */
#ifndef PTKIT_CODEMAP_H
#define PTKIT_CODEMAP_H

#include <stddef.h>
#include <stdint.h>

#include "fmt/blkstream.h"
#include "span/callstack.h"
#include "base/error.h"

struct codemap;

/*
 * The module a function in a JIT region (a BLKS_MAP_JIT mapping) is
 * in: one name for all of them, whatever the process and address, so
 * runs compare (man/ptkit-spans.5).
 */
#define CODEMAP_JIT_MODULE "[jit]"

struct codemap_options {
	const char *snapshot;		/* relative image paths resolve here;
					   its files open beneath it */
	const char *const *debug_dirs;	/* extra debuginfo roots */
	size_t n_debug_dirs;
	int no_inline;			/* no DWARF inline lookups */
	int no_dwarf;			/* symbol tables only */
};

/*
 * insn_lookups, inline_walks: the questions that reached the code map
 * (an engine answers the blocks it keeps, cs_code.gen, itself).
 */
struct codemap_stats {
	uint64_t images, images_missing, images_no_symbols;
	uint64_t insn_lookups, insn_misses, insn_undecodable;
	uint64_t fn_lookups, fn_misses, fn_unknown;
	uint64_t inline_walks, inline_walk_failed;
};

/* Returns 0 and *out, or -ERR_NOMEM. */
int codemap_new(struct codemap **out, const struct codemap_options *opt,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Adds one MAP record (strings are copied).  An image that cannot be
 * opened is not an error: its code stays unknown and is counted.  Returns
 * 0 or -ERR_NOMEM.
 */
int codemap_add(struct codemap *m, const struct blks_map *map,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The struct cs_code whose callbacks answer from m (inline_runs is NULL
 * when the options said no_inline).
 */
void codemap_code(struct codemap *m, struct cs_code *out);

/*
 * The counters of codemap_code's questions, and the image counters
 * (every view's images).
 */
void codemap_get_stats(const struct codemap *m, struct codemap_stats *out);

/*
 * How many files of the snapshot (images, JIT maps, debuginfo, dwz
 * files: the symbol cache's refusals too) were refused because a link or
 * a path out of it lay on the way (they count as missing or without
 * symbols too), and the first one's reason in *first ("REL: a symbolic
 * link on the way; ..."), when there was one.  For after the run: the
 * loads may still go on while views ask.
 */
uint64_t codemap_refused(const struct codemap *m, struct error *first);

/*
 * codemap_refused as the sentence every tool warns with, in buf (""
 * when none): "REL: WHY (N files of the snapshot refused; their code or
 * names count as missing)".  Returns the count.
 */
uint64_t codemap_refused_note(const struct codemap *m, char *buf,
    size_t size);

/*
 * A view: answers the same as codemap_code's, with caches and question
 * counters of its own, for one more thread (lives no longer than m).
 * codemap_view_stats gives its question counters (images are m's).
 */
struct codemap_view;
int codemap_view_new(struct codemap *m, struct codemap_view **out,
    struct error *e) PTKIT_MUST_CHECK;
void codemap_view_code(struct codemap_view *v, struct cs_code *out);
void codemap_view_stats(const struct codemap_view *v,
    struct codemap_stats *out);
void codemap_view_free(struct codemap_view *v);

void codemap_free(struct codemap *m);

/*
 * Length and kind of the x86-64 instruction in bytes[0..size).  Returns 1,
 * or 0 when the bytes do not hold a whole valid instruction.
 */
int codemap_decode(const uint8_t *bytes, size_t size, struct cs_insn *out)
    PTKIT_MUST_CHECK;

#endif

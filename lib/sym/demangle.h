/*
 * demangle: C++ and Rust symbol names made readable, with libiberty.
 *
 * Owns the choice of demangler options: cplus_demangle() with DMGL_PARAMS
 * and DMGL_ANSI in libiberty's automatic style, which tries Rust (legacy
 * "_ZN...17h<hash>E", printed without the hash, and v0 "_R...") before
 * the Itanium C++ ABI.  GCC clone suffixes (".cold", ".constprop.0") come
 * out as " [clone .cold]".  Pure functions: safe from any thread.
 */
#ifndef PTKIT_DEMANGLE_H
#define PTKIT_DEMANGLE_H

#include <stddef.h>

/*
 * The demangled form of raw (without a symbol version suffix), malloc'd
 * for the caller to free; NULL when raw is not a mangled name (or is
 * malformed, or memory ran out: the caller then keeps the raw name).
 */
char *demangle(const char *raw);

/*
 * The length of raw without its ELF symbol version ("memcpy@@GLIBC_2.14"
 * gives 6).  Mangled names never contain '@'.
 */
size_t demangle_unversioned_len(const char *raw);

#endif

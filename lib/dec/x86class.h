/*
 * x86class: the libipt instruction class (enum pt_insn_class) of one x86
 * instruction, decoded with Zydis.
 *
 * Owns the mapping from an instruction to the class that libipt's block
 * decoder reports for the last instruction of a block: the decoder leaves
 * the class out (ptic_error) when it ends a block from its block cache at
 * an indirect or far branch, and ptdec fills it back in here, so that a
 * block stream's classes never depend on what the cache held.
 */
#ifndef PTKIT_X86CLASS_H
#define PTKIT_X86CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/*
 * Classifies the instruction at the start of len bytes (64-bit mode when
 * mode64, else 32-bit) as libipt does.  Returns a non-negative enum
 * pt_insn_class value (ptic_other for anything that is not a branch), or
 * ptic_error when the bytes do not decode.  Opcodes libipt takes for far
 * transfers although 64-bit mode has none (ptr16:32 calls and jumps,
 * into) are classified as libipt does.
 */
int x86_insn_class(const uint8_t *buf, size_t len, int mode64);

/*
 * As x86_insn_class, and sets *length to the instruction's length in
 * bytes (when the result is not ptic_error).
 */
int x86_insn_class_len(const uint8_t *buf, size_t len, int mode64,
    unsigned *length);

/* One instruction as a flow walker needs it. */
struct x86_insn {
	unsigned length;
	int iclass;		/* enum pt_insn_class */
	int direct;		/* a near branch with a relative target */
	int64_t disp;		/* its displacement from the next instruction */
	int mov_cr3;		/* mov to CR3: a sync disable binds to it */
};

/*
 * Decodes the instruction at the start of len bytes into *in.  Returns 0,
 * or -1 when the bytes do not decode (*in untouched).
 */
int x86_insn_decode(const uint8_t *buf, size_t len, int mode64,
    struct x86_insn *in) PTKIT_MUST_CHECK;

#endif

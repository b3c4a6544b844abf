/*
 * x86class: the branch class of one x86 instruction, decoded with Zydis.
 *
 * Owns the one table from an instruction to its control-transfer class,
 * for every user: the block decoders (ptdec fills in the class libipt's
 * block decoder leaves out, ptic_error, when it ends a block from its
 * block cache at an indirect or far branch, so that a block stream's
 * classes never depend on what the cache held), the span engine's code
 * map (lib/span/codemap) and the emu recorder's plugin, which is built
 * from this file's source (mk/emu.mk) rather than linked to an archive.
 *
 * The classes are libipt's (enum pt_insn_class, as its instruction
 * length decoder pt_ild.c gives them), so a recorder that writes packets
 * by them writes what libipt then decodes: syscall, sysenter, int n,
 * int3, int1, into and vmcall are far calls, sysret, sysexit, iret,
 * vmlaunch, vmresume and uiret far returns, xbegin, xend and xabort no
 * branches.  struct x86_insn adds what a class alone does not say.
 */
#ifndef PTKIT_X86CLASS_H
#define PTKIT_X86CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The longest x86 instruction, in bytes. */
#define X86_MAX_INSN_LEN 15

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

/* One instruction as a flow walker, the code map and the emu need it. */
struct x86_insn {
	unsigned length;
	int iclass;		/* enum pt_insn_class */
	int direct;		/* a near branch with a relative target */
	int64_t disp;		/* its displacement from the next instruction */
	/*
	 * A far call that is no call instruction: syscall, sysenter, int n,
	 * int3, int1, into, vmcall.  It enters more privileged code, which
	 * comes back (if at all) to the next instruction.
	 */
	int trap;
	int rep;		/* a REP, REPE or REPNE prefix it accepts */
	int mov_cr3;		/* mov to CR3: a sync disable binds to it */
};

/* x86_insn_decode's failures. */
enum {
	X86_INSN_INVALID = -1,		/* no instruction, however long */
	X86_INSN_TRUNCATED = -2,	/* the bytes end inside one */
};

/*
 * Decodes the instruction at the start of len bytes into *in.  Returns 0,
 * or X86_INSN_TRUNCATED when more bytes could make an instruction, or
 * X86_INSN_INVALID when none could (*in untouched on failure).  Encodings
 * only x86_insn_class classifies (see there) are X86_INSN_INVALID.
 */
int x86_insn_decode(const uint8_t *buf, size_t len, int mode64,
    struct x86_insn *in) PTKIT_MUST_CHECK;

#endif

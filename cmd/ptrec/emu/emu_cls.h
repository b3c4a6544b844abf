/*
 * emu_cls: what kind of control transfer an x86-64 instruction is, as far
 * as Intel PT cares.
 *
 * Owns the mapping from instruction bytes to a branch class, its direct
 * target, and the two QEMU 7.2 facts the tracer needs: whether qemu listed
 * the instruction with fewer bytes than it has (a "phantom" page-crossing
 * instruction, notes/emu.md 4.5) and whether it is a REP string
 * instruction (re-run as a one-instruction TB per iteration, 4.6).
 *
 * The class itself is lib/dec/x86class's, the table every tool uses, so
 * that the packets written for an instruction are the ones libipt's
 * decoder expects of its class; this module only maps it to what the
 * tracer does.  Zydis (under x86class) says "no more data" exactly when
 * bytes are missing, which is the phantom test.  Classification runs
 * once per translated block, so its cost does not show in the recording
 * rate.
 */
#ifndef PTKIT_EMU_CLS_H
#define PTKIT_EMU_CLS_H

#include <stddef.h>
#include <stdint.h>

enum emu_kind {
	EMU_OTHER = 0,		/* not a control transfer: no packet */
	EMU_JCC,		/* jcc, loop, jrcxz: one TNT bit */
	EMU_JMP,		/* direct near jmp: no packet */
	EMU_CALL,		/* direct near call: no packet, pushes */
	EMU_JMP_IND,		/* indirect near jmp: TIP */
	EMU_CALL_IND,		/* indirect near call: TIP, pushes */
	EMU_RET,		/* near ret: compressed TNT bit or TIP */
	EMU_FAR,		/* far transfer, iret: TIP */
	EMU_SYSCALL,		/* syscall, sysenter, int n: leaves user mode */
	EMU_KIND_COUNT
};

struct emu_insn_class {
	enum emu_kind kind;
	int truncated;		/* bytes missing: qemu 7.2's phantom insn */
	int rep;		/* REP/REPE/REPNE string instruction */
	int call_next;		/* direct call to the next instruction */
	uint64_t target;	/* direct branch target, else 0 */
};

/*
 * Classifies the size bytes at ip (64-bit code).  Undecodable bytes are
 * EMU_OTHER with truncated set only when more bytes would have helped.
 */
struct emu_insn_class emu_cls_classify(const uint8_t *bytes, size_t size,
    uint64_t ip);

/* "jcc", "jmp", ... as the ground-truth log spells them. */
const char *emu_kind_name(enum emu_kind k);

#endif

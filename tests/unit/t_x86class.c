/*
 * t_x86class: the classes, lengths and direct targets lib/x86class gives
 * the instructions a flow walker meets, against libipt's classification
 * (libipt/src/pt_ild.c, v2.0): the fast decoder's blocks must end where
 * libipt's do.
 */
#include <intel-pt.h>

#include "tap.h"
#include "dec/x86class.h"

struct want {
	const char *name;
	uint8_t bytes[15];
	size_t len;
	int iclass;
	unsigned length;
	int direct;
	int64_t disp;
};

static const struct want table[] = {
	{ "nop", { 0x90 }, 1, ptic_other, 1, 0, 0 },
	{ "add rax, 1", { 0x48, 0x83, 0xc0, 0x01 }, 4, ptic_other, 4, 0, 0 },
	{ "jne rel8", { 0x75, 0xf7 }, 2, ptic_cond_jump, 2, 1, -9 },
	{ "je rel32", { 0x0f, 0x84, 0x10, 0, 0, 0 }, 6, ptic_cond_jump, 6, 1,
	    16 },
	{ "jrcxz", { 0xe3, 0x05 }, 2, ptic_cond_jump, 2, 1, 5 },
	{ "loop", { 0xe2, 0xfe }, 2, ptic_cond_jump, 2, 1, -2 },
	{ "call rel32", { 0xe8, 0x02, 0, 0, 0 }, 5, ptic_call, 5, 1, 2 },
	{ "call next (PIC)", { 0xe8, 0, 0, 0, 0 }, 5, ptic_call, 5, 1, 0 },
	{ "call rax", { 0xff, 0xd0 }, 2, ptic_call, 2, 0, 0 },
	{ "call [rip+8]", { 0xff, 0x15, 8, 0, 0, 0 }, 6, ptic_call, 6, 0, 0 },
	{ "jmp rel8", { 0xeb, 0xf0 }, 2, ptic_jump, 2, 1, -16 },
	{ "jmp rel32", { 0xe9, 0, 1, 0, 0 }, 5, ptic_jump, 5, 1, 256 },
	{ "jmp rax", { 0xff, 0xe0 }, 2, ptic_jump, 2, 0, 0 },
	{ "ret", { 0xc3 }, 1, ptic_return, 1, 0, 0 },
	{ "ret 8", { 0xc2, 8, 0 }, 3, ptic_return, 3, 0, 0 },
	{ "retf", { 0xcb }, 1, ptic_far_return, 1, 0, 0 },
	{ "iretq", { 0x48, 0xcf }, 2, ptic_far_return, 2, 0, 0 },
	{ "syscall", { 0x0f, 0x05 }, 2, ptic_far_call, 2, 0, 0 },
	{ "sysenter", { 0x0f, 0x34 }, 2, ptic_far_call, 2, 0, 0 },
	{ "sysret", { 0x48, 0x0f, 0x07 }, 3, ptic_far_return, 3, 0, 0 },
	{ "int3", { 0xcc }, 1, ptic_far_call, 1, 0, 0 },
	{ "int 0x80", { 0xcd, 0x80 }, 2, ptic_far_call, 2, 0, 0 },
	{ "int1", { 0xf1 }, 1, ptic_far_call, 1, 0, 0 },
	{ "call far [rax]", { 0xff, 0x18 }, 2, ptic_far_call, 2, 0, 0 },
	{ "jmp far [rax]", { 0xff, 0x28 }, 2, ptic_far_jump, 2, 0, 0 },
	{ "vmcall", { 0x0f, 0x01, 0xc1 }, 3, ptic_far_call, 3, 0, 0 },
	{ "vmlaunch", { 0x0f, 0x01, 0xc2 }, 3, ptic_far_return, 3, 0, 0 },
	{ "vmresume", { 0x0f, 0x01, 0xc3 }, 3, ptic_far_return, 3, 0, 0 },
	{ "xbegin", { 0xc7, 0xf8, 0x10, 0, 0, 0 }, 6, ptic_other, 6, 0, 0 },
	{ "xend", { 0x0f, 0x01, 0xd5 }, 3, ptic_other, 3, 0, 0 },
	{ "xabort 1", { 0xc6, 0xf8, 0x01 }, 3, ptic_other, 3, 0, 0 },
	{ "ptwrite rax", { 0xf3, 0x48, 0x0f, 0xae, 0xe0 }, 5, ptic_ptwrite, 5,
	    0, 0 },
};

/* Encodings libipt classifies although they are invalid (Zydis: none). */
static const struct want invalid[] = {
	{ "jmp ptr16:32 in 64-bit", { 0xea, 1, 2, 3, 4, 5, 6 }, 7,
	    ptic_far_jump, 0, 0, 0 },
	{ "call ptr16:32 in 64-bit", { 0x9a, 1, 2, 3, 4, 5, 6 }, 7,
	    ptic_far_call, 0, 0, 0 },
	{ "into in 64-bit", { 0xce }, 1, ptic_far_call, 0, 0, 0 },
	{ "jmp far rax", { 0xff, 0xe8 }, 2, ptic_far_jump, 0, 0, 0 },
	{ "call far rax, REX", { 0x48, 0xff, 0xd8 }, 3, ptic_far_call, 0, 0,
	    0 },
	{ "garbage", { 0x0f, 0xff }, 2, ptic_error, 0, 0, 0 },
};

int
main(void)
{
	struct x86_insn in;
	static const uint8_t cr3[] = { 0x0f, 0x22, 0xd8 };

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct want *w = &table[i];

		if (x86_insn_decode(w->bytes, w->len, 1, &in) < 0) {
			OK(0, "%s decodes", w->name);
			continue;
		}
		IS_INT(in.iclass, w->iclass, "%s: class", w->name);
		IS_INT(in.length, w->length, "%s: length", w->name);
		IS_INT(in.direct, w->direct, "%s: direct", w->name);
		IS_INT(in.disp, w->disp, "%s: displacement", w->name);
		IS_INT(x86_insn_class(w->bytes, w->len, 1), w->iclass,
		    "%s: x86_insn_class agrees", w->name);
	}
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		const struct want *w = &invalid[i];

		IS_INT(x86_insn_decode(w->bytes, w->len, 1, &in), -1,
		    "%s: not an instruction to walk", w->name);
		IS_INT(x86_insn_class(w->bytes, w->len, 1), w->iclass,
		    "%s: class as libipt's", w->name);
	}
	IS_INT(x86_insn_decode(cr3, sizeof(cr3), 1, &in), 0, "mov cr3, rax");
	IS_INT(in.mov_cr3, 1, "mov cr3 binds a sync disable");
	IS_INT(in.iclass, ptic_other, "mov cr3 is not a branch");
	IS_INT(x86_insn_decode(table[0].bytes, 1, 1, &in), 0, "nop again");
	IS_INT(in.mov_cr3, 0, "nop is not mov cr3");
	return tap_done();
}

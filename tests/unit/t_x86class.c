/*
 * t_x86class: the classes, lengths and direct targets lib/x86class gives
 * the instructions a flow walker meets, against libipt's classification
 * (libipt/src/pt_ild.c, v2.0): the fast decoder's blocks must end where
 * libipt's do, and the span engine and the emu recorder, which take their
 * branch kinds from the same table, must agree with both.
 */
#include <stdio.h>

#include <intel-pt.h>

#include "tap.h"
#include "dec/x86class.h"
#include "span/callstack.h"

struct want {
	const char *name;
	uint8_t bytes[15];
	size_t len;
	int iclass;
	unsigned length;
	int direct;
	int64_t disp;
	int trap;
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
	{ "retf 8", { 0xca, 8, 0 }, 3, ptic_far_return, 3, 0, 0 },
	{ "iretd", { 0xcf }, 1, ptic_far_return, 1, 0, 0 },
	{ "syscall", { 0x0f, 0x05 }, 2, ptic_far_call, 2, 0, 0, 1 },
	{ "sysenter", { 0x0f, 0x34 }, 2, ptic_far_call, 2, 0, 0, 1 },
	{ "sysret", { 0x48, 0x0f, 0x07 }, 3, ptic_far_return, 3, 0, 0 },
	{ "sysexit", { 0x0f, 0x35 }, 2, ptic_far_return, 2, 0, 0 },
	{ "int3", { 0xcc }, 1, ptic_far_call, 1, 0, 0, 1 },
	{ "int 0x80", { 0xcd, 0x80 }, 2, ptic_far_call, 2, 0, 0, 1 },
	{ "int1", { 0xf1 }, 1, ptic_far_call, 1, 0, 0, 1 },
	{ "call far [rax]", { 0xff, 0x18 }, 2, ptic_far_call, 2, 0, 0 },
	{ "jmp far [rax]", { 0xff, 0x28 }, 2, ptic_far_jump, 2, 0, 0 },
	{ "vmcall", { 0x0f, 0x01, 0xc1 }, 3, ptic_far_call, 3, 0, 0, 1 },
	{ "vmlaunch", { 0x0f, 0x01, 0xc2 }, 3, ptic_far_return, 3, 0, 0 },
	{ "vmresume", { 0x0f, 0x01, 0xc3 }, 3, ptic_far_return, 3, 0, 0 },
	{ "xbegin", { 0xc7, 0xf8, 0x10, 0, 0, 0 }, 6, ptic_other, 6, 0, 0 },
	{ "xend", { 0x0f, 0x01, 0xd5 }, 3, ptic_other, 3, 0, 0 },
	{ "xabort 1", { 0xc6, 0xf8, 0x01 }, 3, ptic_other, 3, 0, 0 },
	{ "ptwrite rax", { 0xf3, 0x48, 0x0f, 0xae, 0xe0 }, 5, ptic_ptwrite, 5,
	    0, 0 },
	{ "uiret", { 0xf3, 0x0f, 0x01, 0xec }, 4, ptic_far_return, 4, 0, 0 },
	{ "ud2", { 0x0f, 0x0b }, 2, ptic_other, 2, 0, 0 },
	{ "rep movsb", { 0xf3, 0xa4 }, 2, ptic_other, 2, 0, 0 },
	{ "jmp [rip+8] (notrack)", { 0x3e, 0xff, 0x25, 8, 0, 0, 0 }, 7,
	    ptic_jump, 7, 0, 0 },
	{ "bnd jmp rel32", { 0xf2, 0xe9, 0, 1, 0, 0 }, 6, ptic_jump, 6, 1,
	    256 },
	{ "loope", { 0xe1, 0x10 }, 2, ptic_cond_jump, 2, 1, 16 },
	{ "loopne", { 0xe0, 0x10 }, 2, ptic_cond_jump, 2, 1, 16 },
	{ "jecxz", { 0x67, 0xe3, 0x05 }, 3, ptic_cond_jump, 3, 1, 5 },
};

/* The span engine's kind of each class (callstack.h), libipt's order. */
static const struct {
	int iclass, trap;
	uint8_t kind;
	const char *name;
} kinds[] = {
	{ ptic_error, 0, CS_OTHER, "error" },
	{ ptic_other, 0, CS_OTHER, "other" },
	{ ptic_call, 0, CS_CALL, "call" },
	{ ptic_return, 0, CS_RET, "return" },
	{ ptic_jump, 0, CS_JMP, "jump" },
	{ ptic_cond_jump, 0, CS_JCC, "cond_jump" },
	{ ptic_far_call, 0, CS_FAR, "far_call" },
	{ ptic_far_call, 1, CS_SYSCALL, "far_call, a trap" },
	{ ptic_far_return, 0, CS_FAR, "far_return" },
	{ ptic_far_jump, 0, CS_FAR, "far_jump" },
	{ ptic_ptwrite, 0, CS_OTHER, "ptwrite" },
};

/* Every jcc, rel8 (7x) and rel32 (0f 8x): conditional jumps, direct. */
static void
test_every_jcc(void)
{
	struct x86_insn in;
	uint8_t b[6];

	for (unsigned cc = 0; cc < 16; cc++) {
		b[0] = (uint8_t)(0x70 + cc);
		b[1] = 0x7f;
		OK(x86_insn_decode(b, 2, 1, &in) == 0 &&
		    in.iclass == ptic_cond_jump && in.length == 2 &&
		    in.direct && in.disp == 127 && !in.trap,
		    "jcc rel8 %02x: a direct conditional jump", b[0]);
		b[0] = 0x0f;
		b[1] = (uint8_t)(0x80 + cc);
		b[2] = 0x00;
		b[3] = 0xff;
		b[4] = 0xff;
		b[5] = 0xff;
		OK(x86_insn_decode(b, 6, 1, &in) == 0 &&
		    in.iclass == ptic_cond_jump && in.length == 6 &&
		    in.direct && in.disp == -256,
		    "jcc rel32 0f %02x: a direct conditional jump", b[1]);
	}
}


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
		IS_INT(in.trap, w->trap, "%s: trap", w->name);
		IS_INT(x86_insn_class(w->bytes, w->len, 1), w->iclass,
		    "%s: x86_insn_class agrees", w->name);
	}
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		const struct want *w = &invalid[i];

		OK(x86_insn_decode(w->bytes, w->len, 1, &in) < 0,
		    "%s: not an instruction to walk", w->name);
		IS_INT(x86_insn_class(w->bytes, w->len, 1), w->iclass,
		    "%s: class as libipt's", w->name);
	}
	IS_INT(x86_insn_decode(cr3, sizeof(cr3), 1, &in), 0, "mov cr3, rax");
	IS_INT(in.mov_cr3, 1, "mov cr3 binds a sync disable");
	IS_INT(in.iclass, ptic_other, "mov cr3 is not a branch");
	IS_INT(x86_insn_decode(table[0].bytes, 1, 1, &in), 0, "nop again");
	IS_INT(in.mov_cr3, 0, "nop is not mov cr3");
	IS_INT(in.rep, 0, "nop has no rep");
	{
		static const uint8_t movsb[] = { 0xf3, 0xa4 };

		IS_INT(x86_insn_decode(movsb, sizeof(movsb), 1, &in), 0,
		    "rep movsb");
		IS_INT(in.rep, 1, "rep movsb has its rep");
	}
	{
		static const uint8_t jle[] = { 0x0f, 0x8e, 0x10 };

		IS_INT(x86_insn_decode(jle, sizeof(jle), 1, &in),
		    X86_INSN_TRUNCATED, "a jle cut short: more bytes would do");
	}
	test_every_jcc();
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		IS_INT(cs_kind_of(kinds[i].iclass, kinds[i].trap),
		    kinds[i].kind, "span kind of %s", kinds[i].name);
	return tap_done();
}

/* x86class: see x86class.h. */
#include "dec/x86class.h"

#include <intel-pt.h>
#include <Zydis/Zydis.h>

static int
far_or(const ZydisDecodedInstruction *in, int near_class, int far_class)
{
	return in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ? far_class :
	    near_class;
}

/*
 * libipt's class of a decoded instruction; *trap says whether a far call
 * is a system instruction (see x86class.h).
 */
static int
class_of(const ZydisDecodedInstruction *in, int *trap)
{
	*trap = 0;
	/* TSX begins and ends are no branches to libipt */
	if (in->mnemonic == ZYDIS_MNEMONIC_XBEGIN ||
	    in->mnemonic == ZYDIS_MNEMONIC_XEND ||
	    in->mnemonic == ZYDIS_MNEMONIC_XABORT)
		return ptic_other;
	/* Zydis files iret under returns, libipt under far returns */
	if (in->mnemonic == ZYDIS_MNEMONIC_IRET ||
	    in->mnemonic == ZYDIS_MNEMONIC_IRETD ||
	    in->mnemonic == ZYDIS_MNEMONIC_IRETQ)
		return ptic_far_return;
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_CALL:
		return far_or(in, ptic_call, ptic_far_call);
	case ZYDIS_CATEGORY_RET:
		return far_or(in, ptic_return, ptic_far_return);
	case ZYDIS_CATEGORY_UNCOND_BR:
		return far_or(in, ptic_jump, ptic_far_jump);
	case ZYDIS_CATEGORY_COND_BR:
		return ptic_cond_jump;
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_INTERRUPT:
		*trap = 1;
		return ptic_far_call;
	case ZYDIS_CATEGORY_SYSRET:
		return ptic_far_return;
	default:
		break;
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_PTWRITE)
		return ptic_ptwrite;
	/* libipt's classes for the VMX transfers and user interrupts */
	if (in->mnemonic == ZYDIS_MNEMONIC_VMCALL) {
		*trap = 1;
		return ptic_far_call;
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_VMLAUNCH ||
	    in->mnemonic == ZYDIS_MNEMONIC_VMRESUME ||
	    in->mnemonic == ZYDIS_MNEMONIC_UIRET)
		return ptic_far_return;
	return ptic_other;
}

/*
 * The far transfers libipt classifies by opcode alone although the
 * encoding is invalid, so Zydis rejects them: call and jmp ptr16:32 and
 * into (none in 64-bit mode), call and jmp far with a register operand,
 * after legacy and REX prefixes.  ptic_error if the bytes are none of
 * these.
 */
static int
class_of_invalid(const uint8_t *buf, size_t len, int mode64)
{
	size_t i = 0;

	while (i < len && (buf[i] == 0x66 || buf[i] == 0x67 ||
	    buf[i] == 0xf0 || buf[i] == 0xf2 || buf[i] == 0xf3 ||
	    buf[i] == 0x2e || buf[i] == 0x36 || buf[i] == 0x3e ||
	    buf[i] == 0x26 || buf[i] == 0x64 || buf[i] == 0x65 ||
	    (mode64 && (buf[i] & 0xf0) == 0x40)))
		i++;
	if (i == len)
		return ptic_error;
	switch (buf[i]) {
	case 0x9a:
	case 0xce:
		return ptic_far_call;
	case 0xea:
		return ptic_far_jump;
	case 0xff:
		/* call and jmp far with a register operand */
		if (i + 1 < len && (buf[i + 1] >> 3 & 7) == 3)
			return ptic_far_call;
		if (i + 1 < len && (buf[i + 1] >> 3 & 7) == 5)
			return ptic_far_jump;
		return ptic_error;
	default:
		return ptic_error;
	}
}

int
x86_insn_decode(const uint8_t *buf, size_t len, int mode64,
    struct x86_insn *out)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZyanStatus st;
	int c, trap;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, mode64 ?
	    ZYDIS_MACHINE_MODE_LONG_64 : ZYDIS_MACHINE_MODE_LONG_COMPAT_32,
	    mode64 ? ZYDIS_STACK_WIDTH_64 : ZYDIS_STACK_WIDTH_32)))
		return X86_INSN_INVALID;
	st = ZydisDecoderDecodeInstruction(&dec, ZYAN_NULL, buf, len, &in);
	if (st == ZYDIS_STATUS_NO_MORE_DATA)
		return X86_INSN_TRUNCATED;
	if (!ZYAN_SUCCESS(st))
		return X86_INSN_INVALID;
	c = class_of(&in, &trap);
	out->length = in.length;
	out->iclass = c;
	out->direct = 0;
	out->disp = 0;
	out->trap = trap;
	out->rep = (in.attributes & (ZYDIS_ATTRIB_HAS_REP |
	    ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) != 0;
	out->mov_cr3 = in.opcode_map == ZYDIS_OPCODE_MAP_0F &&
	    in.opcode == 0x22 && in.raw.modrm.reg == 3;
	if ((c == ptic_call || c == ptic_jump || c == ptic_cond_jump) &&
	    (in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) &&
	    in.raw.imm[0].is_relative) {
		out->direct = 1;
		out->disp = in.raw.imm[0].value.s;
	}
	return 0;
}

int
x86_insn_class_len(const uint8_t *buf, size_t len, int mode64,
    unsigned *length)
{
	struct x86_insn in;

	if (x86_insn_decode(buf, len, mode64, &in) < 0)
		return ptic_error;
	*length = in.length;
	return in.iclass;
}

int
x86_insn_class(const uint8_t *buf, size_t len, int mode64)
{
	unsigned length;
	int c = x86_insn_class_len(buf, len, mode64, &length);

	return c != ptic_error ? c : class_of_invalid(buf, len, mode64);
}

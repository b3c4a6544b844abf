/* x86class: see x86class.h. */
#include "x86class.h"

#include <intel-pt.h>
#include <Zydis/Zydis.h>

static int
far_or(const ZydisDecodedInstruction *in, int near_class, int far_class)
{
	return in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ? far_class :
	    near_class;
}

int
x86_insn_class(const uint8_t *buf, size_t len, int mode64)
{
	unsigned length;

	return x86_insn_class_len(buf, len, mode64, &length);
}

static int
class_of(const ZydisDecodedInstruction *in)
{
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
		return ptic_far_call;
	case ZYDIS_CATEGORY_SYSRET:
		return ptic_far_return;
	default:
		break;
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_IRET ||
	    in->mnemonic == ZYDIS_MNEMONIC_IRETD ||
	    in->mnemonic == ZYDIS_MNEMONIC_IRETQ)
		return ptic_far_return;
	if (in->mnemonic == ZYDIS_MNEMONIC_PTWRITE)
		return ptic_ptwrite;
	return ptic_other;
}

int
x86_insn_decode(const uint8_t *buf, size_t len, int mode64,
    struct x86_insn *out)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	int c;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, mode64 ?
	    ZYDIS_MACHINE_MODE_LONG_64 : ZYDIS_MACHINE_MODE_LONG_COMPAT_32,
	    mode64 ? ZYDIS_STACK_WIDTH_64 : ZYDIS_STACK_WIDTH_32)) ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, ZYAN_NULL, buf,
	    len, &in)))
		return -1;
	c = class_of(&in);
	out->length = in.length;
	out->iclass = c;
	out->direct = 0;
	out->disp = 0;
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

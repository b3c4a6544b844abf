/* emu_cls: see emu_cls.h. */
#include "emu_cls.h"

#include <Zydis/Zydis.h>
#include <string.h>

_Static_assert(sizeof(ZydisDecoder) <= sizeof(((struct emu_cls *)0)->decoder),
    "struct emu_cls too small for a ZydisDecoder");

int
emu_cls_init(struct emu_cls *c)
{
	memset(c, 0, sizeof(*c));
	return ZYAN_SUCCESS(ZydisDecoderInit((ZydisDecoder *)c->decoder,
	    ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ? 0 : -1;
}

static enum emu_kind
kind_of_jump(const ZydisDecodedInstruction *in, int is_call)
{
	if (in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
		return EMU_FAR;
	/* IS_RELATIVE also means a rip-relative memory operand: only a
	 * relative immediate makes a branch direct. */
	if (in->raw.imm[0].is_relative)
		return is_call ? EMU_CALL : EMU_JMP;
	return is_call ? EMU_CALL_IND : EMU_JMP_IND;
}

static enum emu_kind
kind_of(const ZydisDecodedInstruction *in)
{
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		return EMU_JCC;
	case ZYDIS_CATEGORY_UNCOND_BR:
		return kind_of_jump(in, 0);
	case ZYDIS_CATEGORY_CALL:
		return kind_of_jump(in, 1);
	case ZYDIS_CATEGORY_RET:
		return in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ||
		    in->mnemonic == ZYDIS_MNEMONIC_IRET ||
		    in->mnemonic == ZYDIS_MNEMONIC_IRETD ||
		    in->mnemonic == ZYDIS_MNEMONIC_IRETQ ? EMU_FAR : EMU_RET;
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_INTERRUPT:
		return EMU_SYSCALL;
	case ZYDIS_CATEGORY_SYSRET:
		return EMU_FAR;
	default:
		/* loop/jrcxz are COND_BR; iret may be filed elsewhere. */
		if (in->mnemonic == ZYDIS_MNEMONIC_IRETQ)
			return EMU_FAR;
		return EMU_OTHER;
	}
}

struct emu_insn_class
emu_cls_classify(const struct emu_cls *c, const uint8_t *bytes, size_t size,
    uint64_t ip)
{
	struct emu_insn_class r = { EMU_OTHER, 0, 0, 0, 0 };
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction in;
	ZyanStatus st;
	int64_t rel;

	st = ZydisDecoderDecodeInstruction((const ZydisDecoder *)c->decoder,
	    &ctx, bytes, size, &in);
	if (st == ZYDIS_STATUS_NO_MORE_DATA) {
		r.truncated = 1;
		return r;
	}
	if (!ZYAN_SUCCESS(st))
		return r;
	if (in.length < size) {
		/* qemu gave more bytes than one instruction: not ours to guess */
		return r;
	}
	r.kind = kind_of(&in);
	r.rep = (in.attributes & (ZYDIS_ATTRIB_HAS_REP |
	    ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) != 0 &&
	    r.kind == EMU_OTHER;
	if ((r.kind == EMU_JCC || r.kind == EMU_JMP || r.kind == EMU_CALL) &&
	    in.raw.imm[0].is_relative) {
		rel = in.raw.imm[0].value.s;
		r.target = ip + in.length + (uint64_t)rel;
		r.call_next = r.kind == EMU_CALL && rel == 0;
	}
	return r;
}

const char *
emu_kind_name(enum emu_kind k)
{
	static const char *const names[EMU_KIND_COUNT] = {
		"other", "jcc", "jmp", "call", "jmp*", "call*", "ret", "far",
		"syscall",
	};

	return (unsigned)k < EMU_KIND_COUNT ? names[k] : "?";
}

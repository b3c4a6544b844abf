/* emu_cls: see emu_cls.h. */
#include "emu_cls.h"

#include <intel-pt.h>

#include "dec/x86class.h"

static enum emu_kind
kind_of(const struct x86_insn *in)
{
	switch (in->iclass) {
	case ptic_cond_jump:
		return EMU_JCC;		/* jcc, loop, jrcxz */
	case ptic_jump:
		return in->direct ? EMU_JMP : EMU_JMP_IND;
	case ptic_call:
		return in->direct ? EMU_CALL : EMU_CALL_IND;
	case ptic_return:
		return EMU_RET;
	case ptic_far_call:
		return in->trap ? EMU_SYSCALL : EMU_FAR;
	case ptic_far_return:
	case ptic_far_jump:
		return EMU_FAR;
	default:
		return EMU_OTHER;	/* ptwrite too: no packet of ours */
	}
}

struct emu_insn_class
emu_cls_classify(const uint8_t *bytes, size_t size, uint64_t ip)
{
	struct emu_insn_class r = { EMU_OTHER, 0, 0, 0, 0 };
	struct x86_insn in;
	int rc = x86_insn_decode(bytes, size, 1, &in);

	if (rc == X86_INSN_TRUNCATED) {
		r.truncated = 1;
		return r;
	}
	if (rc < 0)
		return r;
	if (in.length < size) {
		/* qemu gave more bytes than one instruction: not ours to guess */
		return r;
	}
	r.kind = kind_of(&in);
	r.rep = in.rep && r.kind == EMU_OTHER;
	if (in.direct) {
		r.target = ip + in.length + (uint64_t)in.disp;
		r.call_next = r.kind == EMU_CALL && in.disp == 0;
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

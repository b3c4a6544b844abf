/*
 * t_x86text: instructions as lib/x86text writes them (Zydis' AT&T
 * formatter, lower-case hex, no padding, branch targets absolute from the
 * runtime address given), their mnemonics with prefixes, and bytes that
 * hold no whole instruction.
 */
#include <stdio.h>

#include "tap.h"
#include "dec/x86text.h"

struct want {
	uint8_t bytes[15];
	size_t len;
	uint64_t ip;
	const char *text, *mnemonic;
	unsigned length;
};

static const struct want table[] = {
	{ { 0x90 }, 1, 0x1000, "nop", "nop", 1 },
	{ { 0x75, 0xf7 }, 2, 0x4000001380, "jnz 0x4000001379", "jnz", 2 },
	{ { 0x0f, 0x84, 0x10, 0, 0, 0 }, 6, 0x1000, "jz 0x1016", "jz", 6 },
	{ { 0x48, 0x83, 0xc0, 0x01 }, 4, 0x1000, "add $0x1, %rax", "add", 4 },
	{ { 0x8b, 0x0a }, 2, 0x1000, "mov (%rdx), %ecx", "mov", 2 },
	{ { 0x69, 0xc0, 0x2d, 0x35, 0xeb, 0x7f }, 6, 0x1000,
	    "imul $0x7feb352d, %eax, %eax", "imul", 6 },
	{ { 0xe8, 0x00, 0x01, 0, 0 }, 5, 0x2000, "call 0x2105", "call", 5 },
	{ { 0xc3 }, 1, 0x1000, "ret", "ret", 1 },
	{ { 0xf3, 0xaa }, 2, 0x1000, "rep stosb", "rep stosb",
	    2 },
	{ { 0xf3, 0x0f, 0x1e, 0xfa }, 4, 0x1000, "endbr64", "endbr64", 4 },
};

int
main(void)
{
	char text[160], mnem[32];

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct want *w = &table[i];
		unsigned n = x86_text(w->bytes, w->len, w->ip, text,
		    sizeof(text), mnem, sizeof(mnem));

		IS_INT(n, w->length, "%s: length", w->text);
		IS_STR(text, w->text, "%s: text", w->text);
		IS_STR(mnem, w->mnemonic, "%s: mnemonic", w->text);
	}
	/* a jump cut short, and no bytes at all: 0 and "?" */
	{
		static const uint8_t cut[] = { 0x0f, 0x84, 0x10 };

		IS_INT(x86_text(cut, sizeof(cut), 0, text, sizeof(text), mnem,
		    sizeof(mnem)), 0, "a cut instruction has no length");
		IS_STR(text, "?", "a cut instruction is ?");
		IS_STR(mnem, "?", "and so is its mnemonic");
		IS_INT(x86_text(NULL, 0, 0, text, sizeof(text), NULL, 0), 0,
		    "no bytes");
		IS_STR(text, "?", "no bytes: ?");
	}
	return tap_done();
}

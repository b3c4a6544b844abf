/* x86text: see x86text.h. */
#include "dec/x86text.h"

#include <stdio.h>
#include <string.h>

#include <Zydis/Zydis.h>

static void
unknown(char *text, size_t size, char *mnemonic, size_t msize)
{
	if (text != NULL && size > 0)
		snprintf(text, size, "?");
	if (mnemonic != NULL && msize > 0)
		snprintf(mnemonic, msize, "?");
}

unsigned
x86_text(const uint8_t *buf, size_t len, uint64_t ip, char *text,
    size_t size, char *mnemonic, size_t msize)
{
	ZydisDecoder dec;	/* set up per call: a few hundred ns, and
				   a page of rows is at most thousands */
	ZydisFormatter fmt;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	char out[256];

	/* objdump's look: lower-case hex, no zero padding */
	if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
	    ZYDIS_STACK_WIDTH_64)) ||
	    ZYAN_FAILED(ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_ATT)) ||
	    ZYAN_FAILED(ZydisFormatterSetProperty(&fmt,
	    ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE)) ||
	    ZYAN_FAILED(ZydisFormatterSetProperty(&fmt,
	    ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED)) ||
	    ZYAN_FAILED(ZydisFormatterSetProperty(&fmt,
	    ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED)) ||
	    ZYAN_FAILED(ZydisFormatterSetProperty(&fmt,
	    ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE,
	    ZYDIS_PADDING_DISABLED)) ||
	    ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, buf, len, &in, ops)) ||
	    ZYAN_FAILED(ZydisFormatterFormatInstruction(&fmt, &in, ops,
	    in.operand_count_visible, out, sizeof(out), ip, NULL))) {
		unknown(text, size, mnemonic, msize);
		return 0;
	}
	if (text != NULL && size > 0)
		snprintf(text, size, "%s", out);
	/* The mnemonic as the formatter wrote it (AT&T suffixes and
	 * prefixes such as "rep" included), up to the first operand. */
	if (mnemonic != NULL && msize > 0) {
		const char *sp = out;

		/* prefixes are words of their own: keep them with the name */
		while (strncmp(sp, "rep", 3) == 0 || strncmp(sp, "lock ", 5) ==
		    0 || strncmp(sp, "bnd ", 4) == 0 || strncmp(sp, "notrack ",
		    8) == 0) {
			const char *n = strchr(sp, ' ');

			if (n == NULL)
				break;
			sp = n + 1;
		}
		snprintf(mnemonic, msize, "%.*s", (int)(strcspn(sp, " ") +
		    (size_t)(sp - out)), out);
	}
	return in.length;
}

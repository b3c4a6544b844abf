/*
 * x86text: one x86-64 instruction as text, by Zydis' formatter.
 *
 * Owns how ptkit shows an instruction: AT&T syntax, as objdump -d, gdb
 * and perf annotate show it by default ("jne 0x401136", "mov %edi,
 * %eax"), lower case, with branch targets as absolute addresses (the
 * instruction's runtime address is given).  Classifying instructions is
 * x86class's; this module only writes them.
 */
#ifndef PTKIT_X86TEXT_H
#define PTKIT_X86TEXT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Writes the instruction at the start of len bytes, at runtime address
 * ip, into text[size] and its mnemonic alone ("jne", "movl") into
 * mnemonic[msize] (either may be NULL).  Returns its length in bytes, or
 * 0 when the bytes hold no whole instruction (the texts are then "?").
 */
unsigned x86_text(const uint8_t *buf, size_t len, uint64_t ip, char *text,
    size_t size, char *mnemonic, size_t msize);

#endif

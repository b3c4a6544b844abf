/*
 * indirect: the emu recorder's worst case for bench/emu.bench.sh, an
 * indirect jump every few instructions.  A small bytecode interpreter
 * whose handlers end in a jump through a table (a switch's jump table, as
 * compilers make for an interpreter loop) and call through a table of
 * function pointers: every handler is a block of 3-6 instructions ending
 * in an indirect branch, so the recorder writes a TIP for nearly every
 * block it sees, where branchy's blocks end mostly in conditional
 * branches (TNT bits).  Deterministic; prints its result so the work
 * cannot be dropped.
 * Usage: indirect [ITERATIONS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef uint64_t (*fn_t)(uint64_t);

__attribute__((noinline)) static uint64_t f0(uint64_t x) { return x + 3; }
__attribute__((noinline)) static uint64_t f1(uint64_t x) { return x ^ 0x9e37; }
__attribute__((noinline)) static uint64_t f2(uint64_t x) { return x * 5; }
__attribute__((noinline)) static uint64_t f3(uint64_t x) { return x >> 1; }
static fn_t volatile fns[4] = { f0, f1, f2, f3 };

enum { OP_ADD, OP_XOR, OP_MUL, OP_SHR, OP_CALL, OP_ROT, OP_SUB, OP_END };

/* One pass of the program; the opcodes come from a fixed pseudo-random
 * sequence so the jump table's targets do not repeat in a short cycle. */
#define PROG_LEN 4096
static unsigned char prog[PROG_LEN + 1];

__attribute__((noinline)) static uint64_t
run(uint64_t acc)
{
	const unsigned char *pc = prog;

	for (;;) {
		switch (*pc++) {
		case OP_ADD: acc += pc[0]; break;
		case OP_XOR: acc ^= (uint64_t)pc[0] << 7; break;
		case OP_MUL: acc *= 3; break;
		case OP_SHR: acc = (acc >> 3) | (acc << 61); break;
		case OP_CALL: acc = fns[acc & 3](acc); break;
		case OP_ROT: acc = (acc << 5) | (acc >> 59); break;
		case OP_SUB: acc -= 11; break;
		default: return acc;
		}
	}
}

int
main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	uint64_t s = 0x2545f4914f6cdd1dull, acc = 1;
	long i;

	for (i = 0; i < PROG_LEN; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		prog[i] = (unsigned char)(s % OP_END);
	}
	prog[PROG_LEN] = OP_END;
	for (i = 0; i < n; i++)
		acc = run(acc + (uint64_t)i);
	printf("%llu\n", (unsigned long long)acc);
	return 0;
}

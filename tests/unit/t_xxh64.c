/*
 * Unit tests of lib/base/xxh64: the reference values of xxHash for short
 * and long inputs, and the streaming form equal to the one-shot form
 * however the input is cut.
 */
#include <stdio.h>
#include <string.h>

#include "base/xxh64.h"
#include "tap.h"

int
main(void)
{
	static const char fox[] =
	    "The quick brown fox jumps over the lazy dog";
	uint8_t big[1000];
	struct xxh64 h;
	int differ = 0;

	IS_U64(xxh64("", 0, 0), 0xEF46DB3751D8E999ull, "empty input");
	IS_U64(xxh64("a", 1, 0), 0xD24EC4F1A98C6E5Bull, "one byte");
	IS_U64(xxh64("abc", 3, 0), 0x44BC2CF5AD770999ull, "three bytes");
	IS_U64(xxh64("Nobody inspects the spammish repetition", 39, 0),
	    0xFBCEA83C8A378BF1ull, "39 bytes: stripes and a tail");
	IS_U64(xxh64(fox, strlen(fox), 0), 0x0B242D361FDA71BCull,
	    "43 bytes");
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	for (size_t cut = 0; cut < 70; cut += 3) {
		xxh64_init(&h, 42);
		xxh64_update(&h, big, cut);
		for (size_t at = cut; at < sizeof(big); at += 13)
			xxh64_update(&h, big + at, at + 13 < sizeof(big) ?
			    13 : sizeof(big) - at);
		differ += xxh64_digest(&h) != xxh64(big, sizeof(big), 42);
	}
	IS_INT(differ, 0, "streamed in pieces equals one shot, every cut");
	IS_INT(xxh64(big, sizeof(big), 1) != xxh64(big, sizeof(big), 0), 1,
	    "the seed changes the hash");
	return tap_done();
}

/*
 * xxh64: the XXH64 hash (Yann Collet's xxHash, 64-bit, seed given), for
 * checksums of the binary files ptkit writes and reads back (index.bin).
 *
 * Owns the one checksum the project's formats use.  Written here once
 * because Debian's libzstd, which carries XXH64, does not export it.
 * Streaming: xxh64_init, xxh64_update any number of times, xxh64_digest;
 * xxh64() hashes one buffer.
 */
#ifndef PTKIT_XXH64_H
#define PTKIT_XXH64_H

#include <stddef.h>
#include <stdint.h>

struct xxh64 {
	uint64_t v[4], total;
	uint8_t buf[32];
	size_t n_buf;
	uint64_t seed;
};

void xxh64_init(struct xxh64 *h, uint64_t seed);
void xxh64_update(struct xxh64 *h, const void *data, size_t len);
uint64_t xxh64_digest(const struct xxh64 *h);
uint64_t xxh64(const void *data, size_t len, uint64_t seed);

#endif

/*
 * sha256: SHA-256 (FIPS 180-4) of byte streams.
 *
 * Owns content hashing for the snapshot's image archive (files without a
 * build-id are stored under their SHA-256).  None of the libraries we link
 * offers SHA-256, and the algorithm is small.
 */
#ifndef PTKIT_SHA256_H
#define PTKIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

struct sha256 {
	uint32_t h[8];
	uint64_t total;			/* bytes hashed so far */
	uint8_t block[64];
	size_t fill;			/* bytes in block */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t digest[SHA256_DIGEST_SIZE]);

/* One-shot: digest of len bytes at data. */
void sha256_buffer(const void *data, size_t len,
    uint8_t digest[SHA256_DIGEST_SIZE]);

#endif

/* SHA-256 (FIPS 180-4), for content addresses and registry digests.
 * A small implementation of our own rather than libcrypto: the sandcell
 * binary's start is the hot path, and every linked shared library costs
 * loading time at every start (libcrypto is ~4 MB). Where the CPU has
 * SHA extensions (x86-64 SHA-NI) they are used: ~8x faster, as fast as
 * libcrypto's. Checked against the
 * FIPS test vectors in tests/unit/test_rootfs_sha256.c. Private to rootfs/. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t used;
	bool portable; /* the portable code even where the CPU has SHA extensions */
};

void rootfs_sha256_init(struct sha256 *s);
void rootfs_sha256_update(struct sha256 *s, const void *data, size_t len);
void rootfs_sha256_final(struct sha256 *s, uint8_t out[32]);
/* Finish and write the lowercase hex digest (65 bytes with the NUL). */
void rootfs_sha256_final_hex(struct sha256 *s, char out[SHA256_HEX_LEN + 1]);
/* Whether this CPU's SHA extensions are used (x86-64 SHA-NI). */
bool rootfs_sha256_accelerated(void);
/* The digest by the portable code alone, whatever the CPU has (for tests
 * that check one against the other). */
void rootfs_sha256_portable_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);
/* One-shot convenience. */
void rootfs_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

/* SHA-256 (FIPS 180-4), for content addresses and registry digests.
 * A small implementation of our own rather than libcrypto: the sandcell
 * binary's start is the hot path, and every linked shared library costs
 * loading time at every start (libcrypto is ~4 MB). Checked against the
 * FIPS test vectors in tests/unit/test_rootfs_sha256.c. Private to rootfs/. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t used;
};

void rootfs_sha256_init(struct sha256 *s);
void rootfs_sha256_update(struct sha256 *s, const void *data, size_t len);
void rootfs_sha256_final(struct sha256 *s, uint8_t out[32]);
/* Finish and write the lowercase hex digest (65 bytes with the NUL). */
void rootfs_sha256_final_hex(struct sha256 *s, char out[SHA256_HEX_LEN + 1]);
/* One-shot convenience. */
void rootfs_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

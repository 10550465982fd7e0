/* SHA-256 as specified in FIPS 180-4, section 6.2. */
#include "sha256.h"
#include "rootfs.h"

#include <stdbool.h>
#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
	s->h[5] += f;
	s->h[6] += g;
	s->h[7] += h;
}

/* ---- x86-64's SHA extensions (SHA-NI): the same function, ~8x faster
 * (a 1 GB pull hashes each byte twice: its blob and its diff_id). The
 * state is kept in the order the instructions want (ABEF, CDGH) only
 * within a run of blocks. ---- */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#define SHA256_HAVE_NI 1

__attribute__((target("sha,sse4.1,ssse3"))) static void
compress_ni(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
	__m128i st1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
	__m128i st0 = _mm_alignr_epi8(tmp, st1, 8);                                      /* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xF0);                                           /* CDGH */
	for (; nblocks; nblocks--, p += 64) {
		__m128i save0 = st0, save1 = st1, w[4];
#pragma GCC unroll 16
		for (int g = 0; g < 16; g++) {
			if (g < 4)
				w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), swap);
			__m128i msg = _mm_add_epi32(w[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));
			st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
			if (g >= 3 && g < 15) {
				__m128i t = _mm_alignr_epi8(w[g & 3], w[(g - 1) & 3], 4);
				w[(g + 1) & 3] = _mm_add_epi32(w[(g + 1) & 3], t);
				w[(g + 1) & 3] = _mm_sha256msg2_epu32(w[(g + 1) & 3], w[g & 3]);
			}
			st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(msg, 0x0E));
			if (g >= 1 && g < 13)
				w[(g - 1) & 3] = _mm_sha256msg1_epu32(w[(g - 1) & 3], w[g & 3]);
		}
		st0 = _mm_add_epi32(st0, save0);
		st1 = _mm_add_epi32(st1, save1);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1B);                        /* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xB1);                        /* DCHG */
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(tmp, st1, 0xF0)); /* DCBA */
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(st1, tmp, 8));    /* HGFE */
}

static bool have_ni(void)
{
	/* 0: not looked yet, 1: yes, 2: no (two threads may both look) */
	static _Atomic int known;
	if (!atomic_load_explicit(&known, memory_order_relaxed)) {
		/* CPUID: SSSE3 and SSE4.1 in leaf 1's ECX, SHA in leaf 7's EBX
		 * (gcc's and clang's __builtin_cpu_supports do not both know "sha") */
		unsigned a, b, c, d;
		bool base = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1);
		bool sha = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
		atomic_store_explicit(&known, base && sha ? 1 : 2, memory_order_relaxed);
	}
	return atomic_load_explicit(&known, memory_order_relaxed) == 1;
}
#endif

/* nblocks 64-byte blocks of p into s. */
static void compress_blocks(struct sha256 *s, const uint8_t *p, size_t nblocks)
{
#ifdef SHA256_HAVE_NI
	if (!s->portable && have_ni()) {
		compress_ni(s->h, p, nblocks);
		return;
	}
#endif
	for (; nblocks; nblocks--, p += 64)
		compress(s, p);
}

bool rootfs_sha256_accelerated(void)
{
#ifdef SHA256_HAVE_NI
	return have_ni();
#else
	return false;
#endif
}

void rootfs_sha256_portable_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
	struct sha256 s;
	rootfs_sha256_init(&s);
	s.portable = true;
	rootfs_sha256_update(&s, data, len);
	rootfs_sha256_final_hex(&s, out);
}

void rootfs_sha256_init(struct sha256 *s)
{
	static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, H0, sizeof(H0));
	s->len = 0;
	s->used = 0;
	s->portable = false;
}

void rootfs_sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	s->len += len;
	if (s->used) {
		size_t take = 64 - s->used < len ? 64 - s->used : len;
		memcpy(s->buf + s->used, p, take);
		s->used += take;
		p += take;
		len -= take;
		if (s->used < 64)
			return;
		compress_blocks(s, s->buf, 1);
		s->used = 0;
	}
	compress_blocks(s, p, len / 64);
	p += len / 64 * 64;
	len %= 64;
	memcpy(s->buf, p, len);
	s->used = len;
}

void rootfs_sha256_final(struct sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = {0x80};
	size_t padlen = (s->used < 56 ? 56 : 120) - s->used;
	for (int i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
	rootfs_sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

void rootfs_sha256_final_hex(struct sha256 *s, char out[SHA256_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t d[32];
	rootfs_sha256_final(s, d);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[SHA256_HEX_LEN] = '\0';
}

void rootfs_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
	struct sha256 s;
	rootfs_sha256_init(&s);
	rootfs_sha256_update(&s, data, len);
	rootfs_sha256_final_hex(&s, out);
}

void rootfs_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
			uint8_t out[32])
{
	uint8_t k[64] = {0}, pad[64], inner[32];
	struct sha256 s;
	if (key_len > sizeof(k)) {
		rootfs_sha256_init(&s);
		rootfs_sha256_update(&s, key, key_len);
		rootfs_sha256_final(&s, k);
	} else if (key_len) {
		memcpy(k, key, key_len);
	}
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x36;
	rootfs_sha256_init(&s);
	rootfs_sha256_update(&s, pad, sizeof(pad));
	rootfs_sha256_update(&s, msg, msg_len);
	rootfs_sha256_final(&s, inner);
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x5c;
	rootfs_sha256_init(&s);
	rootfs_sha256_update(&s, pad, sizeof(pad));
	rootfs_sha256_update(&s, inner, sizeof(inner));
	rootfs_sha256_final(&s, out);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
	explicit_bzero(inner, sizeof(inner));
}

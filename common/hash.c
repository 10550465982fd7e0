/* FNV-1a, 64 bits (see hash.h). */
#include "hash.h"

#define FNV1A64_PRIME 0x100000001b3ULL

uint64_t sc_fnv1a64_update(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV1A64_PRIME;
	}
	return h;
}

uint64_t sc_fnv1a64(const char *s)
{
	uint64_t h = SC_FNV1A64_INIT;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= FNV1A64_PRIME;
	}
	return h;
}

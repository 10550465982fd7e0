/* FNV-1a, 64 bits: a small, stable hash. Stable across hosts and versions
 * (batch shards and the seccomp cache's file names depend on it); not for
 * anything an adversary may choose keys for. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SC_FNV1A64_INIT 0xcbf29ce484222325ULL

/* Continue a hash h (start with SC_FNV1A64_INIT) over len bytes. */
uint64_t sc_fnv1a64_update(uint64_t h, const void *data, size_t len);
/* The hash of a NUL-terminated string (without its NUL). */
uint64_t sc_fnv1a64(const char *s);

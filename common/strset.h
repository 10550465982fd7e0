/* A set of strings (open addressing, linear probing), each with a size_t
 * value the caller may use (an index, a count) or ignore. Keys are copied.
 * Not thread-safe: one owner at a time. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct sc_strset {
	char **keys;
	size_t *vals;
	size_t n, cap; /* cap: 0 or a power of two, at most half full */
};

/* The value slot of key, or NULL when key is not in the set. */
size_t *sc_strset_find(const struct sc_strset *s, const char *key);
bool sc_strset_has(const struct sc_strset *s, const char *key);
/* Insert key with val, or find it when present (*added false, its value
 * unchanged). Returns its value slot, or NULL when out of memory. */
size_t *sc_strset_put(struct sc_strset *s, const char *key, size_t val, bool *added);
/* Insert key (value 0); 0, or -1 when out of memory. */
int sc_strset_add(struct sc_strset *s, const char *key);
/* Free every key; the set is empty again and may be reused. */
void sc_strset_free(struct sc_strset *s);

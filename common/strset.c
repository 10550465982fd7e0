/* A set of strings with a value each (see strset.h). */
#include "strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

#define STRSET_FIRST_CAP 1024

/* The slot holding key, or the empty slot where it would go. */
static size_t slot_of(char *const *keys, size_t cap, const char *key)
{
	size_t mask = cap - 1, i = (size_t)sc_fnv1a64(key) & mask;
	while (keys[i] && strcmp(keys[i], key))
		i = (i + 1) & mask;
	return i;
}

size_t *sc_strset_find(const struct sc_strset *s, const char *key)
{
	if (!s->cap)
		return NULL;
	size_t i = slot_of(s->keys, s->cap, key);
	return s->keys[i] ? &s->vals[i] : NULL;
}

bool sc_strset_has(const struct sc_strset *s, const char *key)
{
	return sc_strset_find(s, key) != NULL;
}

static int grow(struct sc_strset *s)
{
	if (s->cap > SIZE_MAX / 2 / sizeof(char *))
		return -1;
	size_t cap = s->cap ? s->cap * 2 : STRSET_FIRST_CAP;
	char **keys = calloc(cap, sizeof(*keys));
	size_t *vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->keys[i])
			continue;
		size_t j = slot_of(keys, cap, s->keys[i]);
		keys[j] = s->keys[i];
		vals[j] = s->vals[i];
	}
	free(s->keys);
	free(s->vals);
	s->keys = keys;
	s->vals = vals;
	s->cap = cap;
	return 0;
}

size_t *sc_strset_put(struct sc_strset *s, const char *key, size_t val, bool *added)
{
	*added = false;
	size_t *v = sc_strset_find(s, key);
	if (v)
		return v;
	if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
		return NULL;
	size_t i = slot_of(s->keys, s->cap, key);
	if (!(s->keys[i] = strdup(key)))
		return NULL;
	s->vals[i] = val;
	s->n++;
	*added = true;
	return &s->vals[i];
}

int sc_strset_add(struct sc_strset *s, const char *key)
{
	bool added;
	return sc_strset_put(s, key, 0, &added) ? 0 : -1;
}

void sc_strset_free(struct sc_strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->keys[i]);
	free(s->keys);
	free(s->vals);
	*s = (struct sc_strset){0};
}

/* A growable list of names (cell names: at most 63 bytes each), for a
 * helper process that removes what it made when it ends. Not
 * thread-safe: one owner at a time. */
#pragma once
#include <stddef.h>

struct sc_names {
	char (*names)[64];
	size_t n, cap;
};

/* Append name (cut at 63 bytes); -1 when out of memory (not added). */
int sc_names_add(struct sc_names *l, const char *name);
/* Drop the first entry equal to name, if any (order not kept). */
void sc_names_drop(struct sc_names *l, const char *name);
void sc_names_free(struct sc_names *l);

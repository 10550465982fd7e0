/* A growable list of names (names.h). */
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sc_names_add(struct sc_names *l, const char *name)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char(*grown)[64] = realloc(l->names, cap * sizeof(*grown));
		if (!grown)
			return -1;
		l->names = grown;
		l->cap = cap;
	}
	snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", name);
	return 0;
}

void sc_names_drop(struct sc_names *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->names[i], name)) {
			memmove(l->names[i], l->names[--l->n], sizeof(l->names[0]));
			return;
		}
}

void sc_names_free(struct sc_names *l)
{
	free(l->names);
	*l = (struct sc_names){0};
}

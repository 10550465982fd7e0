/* Sets of (id, repeat) keys: which attempts a run has, which tasks a file
 * named. One string set (common/strset.h) of "ID\x1fREPEAT". */
#include <stdio.h>

#include "batch_priv.h"

static char *make_key(const char *id, unsigned repeat)
{
	char *k = NULL;
	return asprintf(&k, "%s\x1f%u", id, repeat) < 0 ? NULL : k;
}

bool batch_keyset_has(const struct batch_keyset *s, const char *id, unsigned repeat)
{
	if (!s->set.n)
		return false;
	_cleanup_free_ char *key = make_key(id, repeat);
	return key && sc_strset_has(&s->set, key);
}

int batch_keyset_add(struct batch_keyset *s, const char *id, unsigned repeat)
{
	_cleanup_free_ char *key = make_key(id, repeat);
	return key ? sc_strset_add(&s->set, key) : -1;
}

void batch_keyset_free(struct batch_keyset *s)
{
	sc_strset_free(&s->set);
}

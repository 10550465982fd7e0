/* The seccomp part of a policy on the native architecture: one entry per
 * syscall that the policy names, with its fallback action and its rules.
 * The compiler emits this table; the verifier checks the program against
 * policy_table_eval, the reference semantics:
 *   - the first rule of the syscall whose conditions all hold decides
 *     (rules with different actions never overlap: the parser refuses it);
 *   - else the syscall's entry in allow/deny decides;
 *   - else the default action. */
#include <string.h>

#include <seccomp.h>

#include "policy_priv.h"

struct builder {
	struct pol_table *t;
	int *index; /* syscall number -> entry + 1, 0: none */
	size_t nindex;
};

static struct pol_sys *entry(struct builder *b, int nr, const char *name,
			     struct sc_err *err)
{
	if ((size_t)nr >= b->nindex) {
		size_t n = b->nindex ? b->nindex : 512;
		while (n <= (size_t)nr)
			n *= 2;
		int *idx = realloc(b->index, n * sizeof(int));
		if (!idx) {
			sc_fail(err, ENOMEM, "seccomp table");
			return NULL;
		}
		memset(idx + b->nindex, 0, (n - b->nindex) * sizeof(int));
		b->index = idx;
		b->nindex = n;
	}
	if (b->index[nr])
		return &b->t->sys[b->index[nr] - 1];
	struct pol_sys *s = realloc(b->t->sys, (b->t->nsys + 1) * sizeof(*s));
	if (!s) {
		sc_fail(err, ENOMEM, "seccomp table");
		return NULL;
	}
	b->t->sys = s;
	s = &b->t->sys[b->t->nsys];
	memset(s, 0, sizeof(*s));
	s->nr = nr;
	s->name = name;
	s->fallback = b->t->def;
	b->index[nr] = (int)++b->t->nsys;
	return s;
}

static int cmp_sys(const void *a, const void *b)
{
	const struct pol_sys *x = a, *y = b;
	return (x->nr > y->nr) - (x->nr < y->nr);
}

int policy_table_build(const struct policy_seccomp *s, struct pol_table *t,
		    struct sc_err *err)
{
	memset(t, 0, sizeof(*t));
	t->def = s->def;
	struct builder b = {.t = t};
	int rc = 0;
	/* Names without a number here (other architectures) are skipped. */
	for (size_t i = 0; rc == 0 && i < s->nallow; i++) {
		int nr = seccomp_syscall_resolve_name(s->allow[i]);
		struct pol_sys *e;
		if (nr < 0)
			continue;
		if (!(e = entry(&b, nr, s->allow[i], err)))
			rc = -1;
		else
			e->fallback = (struct pol_act){.kind = POL_ACT_ALLOW};
	}
	for (size_t i = 0; rc == 0 && i < s->ndeny; i++)
		for (size_t j = 0; rc == 0 && j < s->deny[i].nnames; j++) {
			int nr = seccomp_syscall_resolve_name(s->deny[i].names[j]);
			struct pol_sys *e;
			if (nr < 0)
				continue;
			if (!(e = entry(&b, nr, s->deny[i].names[j], err)))
				rc = -1;
			else
				e->fallback = (struct pol_act){.kind = POL_ACT_ERRNO,
							       .errnum = s->deny[i].errnum};
		}
	for (size_t i = 0; rc == 0 && i < s->nrules; i++)
		for (size_t j = 0; rc == 0 && j < s->rules[i].nnames; j++) {
			int nr = seccomp_syscall_resolve_name(s->rules[i].names[j]);
			struct pol_sys *e;
			if (nr < 0)
				continue;
			if (!(e = entry(&b, nr, s->rules[i].names[j], err))) {
				rc = -1;
				break;
			}
			size_t *r = realloc(e->rules, (e->nrules + 1) * sizeof(size_t));
			if (!r) {
				rc = sc_fail(err, ENOMEM, "seccomp table");
				break;
			}
			e->rules = r;
			e->rules[e->nrules++] = i;
		}
	free(b.index);
	if (rc < 0) {
		policy_table_free(t);
		return -1;
	}
	if (t->nsys)
		qsort(t->sys, t->nsys, sizeof(*t->sys), cmp_sys);
	return 0;
}

void policy_table_free(struct pol_table *t)
{
	for (size_t i = 0; i < t->nsys; i++)
		free(t->sys[i].rules);
	free(t->sys);
	memset(t, 0, sizeof(*t));
}

const struct pol_sys *policy_table_find(const struct pol_table *t, int nr)
{
	size_t lo = 0, hi = t->nsys;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->sys[mid].nr == nr)
			return &t->sys[mid];
		if (t->sys[mid].nr < nr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint32_t policy_table_eval(const struct policy_seccomp *s, const struct pol_table *t,
			int nr, const uint64_t args[6])
{
	const struct pol_sys *e = policy_table_find(t, nr);
	if (!e)
		return policy_act_ret(&t->def);
	for (size_t i = 0; i < e->nrules; i++) {
		const struct pol_rule *r = &s->rules[e->rules[i]];
		bool all = true;
		for (size_t j = 0; all && j < r->nargs; j++)
			all = policy_arg_matches(&r->args[j], args[r->args[j].index]);
		if (all)
			return policy_act_ret(&r->act);
	}
	return policy_act_ret(&e->fallback);
}

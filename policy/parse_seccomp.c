/* The "seccomp" member of a policy document: the default action, the
 * allowed syscalls, unconditional denials and conditional rules; refuses
 * unknown and duplicate syscalls and rules the filter could not express. */
#include <ctype.h>
#include <string.h>

#include <seccomp.h>

#include "json_in.h"

#define MAX_RULE_NAMES 16
#define MAX_TOTAL_NAMES 4096
#define MAX_CONDITIONS 1024

static bool valid_syscall_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > POL_MAX_SYSCALL_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}


/* Where each syscall first appeared in allow/deny, to refuse duplicates. */
struct seen_set {
	struct seen {
		int nr;
		int deny;      /* index in seccomp.deny, -1: seccomp.allow */
		uint16_t idx;  /* index in that list of names */
		bool used;
	} slot[2 * MAX_TOTAL_NAMES];
	size_t count;
};

static struct seen *seen_find(struct seen_set *s, int nr)
{
	size_t h = ((uint32_t)nr * 2654435761u) % SC_ARRAY_LEN(s->slot);
	while (s->slot[h].used && s->slot[h].nr != nr)
		h = (h + 1) % SC_ARRAY_LEN(s->slot);
	return &s->slot[h];
}

/* One syscall name: well-formed and known to libseccomp (on some
 * architecture). Returns its number on the native arch (negative when it
 * has none here). */
static int check_syscall(struct pj_ctx *c, const cJSON *it, const char *path, int *nr)
{
	if (!cJSON_IsString(it) || !valid_syscall_name(it->valuestring))
		return policy_json_expected(c, path, "a syscall name like \"openat\"", it);
	int n = seccomp_syscall_resolve_name(it->valuestring);
	if (n == __NR_SCMP_ERROR) {
		char q[96];
		policy_json_quote(q, sizeof(q), it->valuestring, 64);
		return policy_json_perr(c, path, "unknown syscall %s", q);
	}
	*nr = n;
	return 0;
}

/* A list of syscall names. With `seen` (allow and deny lists, `deny` is the
 * index of the deny entry or -1) duplicates across lists are refused, else
 * duplicates within this list. */
static int parse_names(struct pj_ctx *c, const cJSON *arr, const char *path, size_t max,
		       char ***names, size_t *nnames, struct seen_set *seen, int deny)
{
	size_t n = 0;
	if (policy_json_need_array(c, arr, path, max, &n) < 0)
		return -1;
	if (n == 0)
		return policy_json_perr(c, path, "expected at least one syscall name");
	*names = calloc(n, sizeof(char *));
	if (!*names)
		return sc_fail(c->err, ENOMEM, "%s: %s", c->origin, path);
	int local[MAX_RULE_NAMES];
	size_t i = 0;
	char p[PJ_PATH_MAX];
	for (const cJSON *it = arr->child; it; it = it->next, i++) {
		policy_json_path_idx(p, sizeof(p), path, i);
		int nr = 0;
		if (check_syscall(c, it, p, &nr) < 0)
			return -1;
		char q[96];
		policy_json_quote(q, sizeof(q), it->valuestring, 64);
		if (seen) {
			if (seen->count >= MAX_TOTAL_NAMES)
				return policy_json_perr(c, p, "too many syscall names (at most %d in "
						  "seccomp.allow and seccomp.deny together)",
					    MAX_TOTAL_NAMES);
			struct seen *s = seen_find(seen, nr);
			if (s->used && s->deny < 0)
				return policy_json_perr(c, p,
					       "duplicate syscall %s (already in seccomp.allow[%u])",
					       q, s->idx);
			if (s->used)
				return policy_json_perr(c, p,
					       "duplicate syscall %s (already in "
					       "seccomp.deny[%d].names[%u])",
					       q, s->deny, s->idx);
			*s = (struct seen){.nr = nr, .deny = deny, .idx = (uint16_t)i, .used = true};
			seen->count++;
		} else {
			for (size_t j = 0; j < i; j++)
				if (local[j] == nr)
					return policy_json_perr(c, p, "duplicate syscall %s (already in %s[%zu])",
						    q, path, j);
			local[i] = nr;
		}
		(*names)[i] = strdup(it->valuestring);
		*nnames = i + 1;
		if (!(*names)[i])
			return sc_fail(c->err, ENOMEM, "%s: %s", c->origin, p);
	}
	return 0;
}

static const char *const DENY_KEYS[] = {"names", "errno", "comment"};
static const char *const RULE_KEYS[] = {"names", "action", "errno", "args", "comment"};
static const char *const ARG_KEYS[] = {"arg", "op", "value", "mask"};
static const char *const SECCOMP_KEYS[] = {"default_action", "default_errno", "allow",
					   "deny", "rules"};

static int parse_action(struct pj_ctx *c, const cJSON *obj, const char *path,
			const char *act_key, const char *errno_key, bool required,
			struct pol_act *out)
{
	char p[PJ_PATH_MAX];
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, act_key);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, errno_key);
	policy_json_path_key(p, sizeof(p), path, act_key);
	if (a) {
		if (!cJSON_IsString(a) || policy_act_parse(a->valuestring, &out->kind) < 0)
			return policy_json_expected(c, p, "one of \"allow\", \"errno\", \"kill\", "
					      "\"trap\", \"log\"",
					a);
	} else if (required) {
		return policy_json_perr(c, path, "missing key \"%s\"", act_key);
	}
	policy_json_path_key(p, sizeof(p), path, errno_key);
	if (out->kind == POL_ACT_ERRNO) {
		if (e)
			return policy_json_get_errno(c, e, p, &out->errnum);
		if (required)
			return policy_json_perr(c, path, "missing key \"%s\" (the action is \"errno\")",
				    errno_key);
	} else if (e) {
		return policy_json_perr(c, p, "only allowed when the action is \"errno\"");
	}
	return 0;
}

static int get_comment(struct pj_ctx *c, const cJSON *obj, const char *path, char **out)
{
	char p[PJ_PATH_MAX];
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "comment");
	if (!it)
		return 0;
	policy_json_path_key(p, sizeof(p), path, "comment");
	return policy_json_get_string(c, it, p, POL_MAX_COMMENT, "a string", out);
}

static int parse_arg(struct pj_ctx *c, const cJSON *obj, const char *path,
		     struct pol_arg *a)
{
	char p[PJ_PATH_MAX];
	uint64_t v;
	if (policy_json_need_object(c, obj, path) < 0 ||
	    policy_json_check_keys(c, obj, path, ARG_KEYS, SC_ARRAY_LEN(ARG_KEYS)) < 0)
		return -1;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "arg");
	policy_json_path_key(p, sizeof(p), path, "arg");
	if (policy_json_get_uint(c, it, p, 0, 5, &v) < 0)
		return -1;
	a->index = (unsigned)v;
	it = cJSON_GetObjectItemCaseSensitive(obj, "op");
	policy_json_path_key(p, sizeof(p), path, "op");
	if (!cJSON_IsString(it) || policy_op_parse(it->valuestring, &a->op) < 0)
		return policy_json_expected(c, p, "one of \"eq\", \"ne\", \"lt\", \"le\", \"gt\", "
				      "\"ge\", \"masked_eq\"",
				it);
	it = cJSON_GetObjectItemCaseSensitive(obj, "value");
	policy_json_path_key(p, sizeof(p), path, "value");
	if (policy_json_get_u64(c, it, p, &a->value) < 0)
		return -1;
	it = cJSON_GetObjectItemCaseSensitive(obj, "mask");
	policy_json_path_key(p, sizeof(p), path, "mask");
	if (a->op == POL_OP_MASKED_EQ) {
		if (!it)
			return policy_json_perr(c, path, "missing key \"mask\" (the op is \"masked_eq\")");
		if (policy_json_get_u64(c, it, p, &a->mask) < 0)
			return -1;
		if (a->mask == 0)
			return policy_json_perr(c, p, "a mask of 0 matches every value; use seccomp.allow "
					  "or seccomp.deny for an unconditional action");
		if (a->value & ~a->mask) {
			policy_json_path_key(p, sizeof(p), path, "value");
			return policy_json_perr(c, p, "has bits outside the mask, so it never matches");
		}
	} else if (it) {
		return policy_json_perr(c, p, "only allowed when the op is \"masked_eq\"");
	}
	return 0;
}

static int parse_rule(struct pj_ctx *c, const cJSON *obj, const char *path,
		      struct pol_rule *r)
{
	char p[PJ_PATH_MAX];
	size_t n = 0;
	if (policy_json_need_object(c, obj, path) < 0 ||
	    policy_json_check_keys(c, obj, path, RULE_KEYS, SC_ARRAY_LEN(RULE_KEYS)) < 0)
		return -1;
	policy_json_path_key(p, sizeof(p), path, "names");
	if (parse_names(c, cJSON_GetObjectItemCaseSensitive(obj, "names"), p,
			MAX_RULE_NAMES, &r->names, &r->nnames, NULL, -1) < 0)
		return -1;
	if (parse_action(c, obj, path, "action", "errno", true, &r->act) < 0)
		return -1;
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(obj, "args");
	policy_json_path_key(p, sizeof(p), path, "args");
	if (!args)
		return policy_json_perr(c, path, "missing key \"args\" (use seccomp.allow or "
				     "seccomp.deny for an unconditional action)");
	if (policy_json_need_array(c, args, p, POL_MAX_ARGS, &n) < 0)
		return -1;
	if (n == 0)
		return policy_json_perr(c, p, "expected at least one condition (use seccomp.allow or "
				  "seccomp.deny for an unconditional action)");
	size_t i = 0;
	for (const cJSON *it = args->child; it; it = it->next, i++) {
		char q[PJ_PATH_MAX];
		policy_json_path_idx(q, sizeof(q), p, i);
		if (parse_arg(c, it, q, &r->args[i]) < 0)
			return -1;
		r->nargs = i + 1;
		for (size_t j = 0; j < i; j++)
			if (r->args[j].index == r->args[i].index)
				return policy_json_perr(c, q, "argument %u is already compared in %s[%zu]",
					    r->args[i].index, p, j);
	}
	return get_comment(c, obj, path, &r->comment);
}

/* ---- overlapping rules ---- */

struct range {
	uint64_t lo, hi;
	bool empty;
};

static bool arg_range(const struct pol_arg *a, struct range *r)
{
	r->empty = false;
	r->lo = 0;
	r->hi = UINT64_MAX;
	switch (a->op) {
	case POL_OP_EQ: r->lo = r->hi = a->value; return true;
	case POL_OP_LT:
		if (a->value == 0)
			r->empty = true;
		else
			r->hi = a->value - 1;
		return true;
	case POL_OP_LE: r->hi = a->value; return true;
	case POL_OP_GT:
		if (a->value == UINT64_MAX)
			r->empty = true;
		else
			r->lo = a->value + 1;
		return true;
	case POL_OP_GE: r->lo = a->value; return true;
	default: return false;
	}
}

/* Can no value satisfy both conditions? Conservative: false when unsure. */
static bool args_disjoint(const struct pol_arg *a, const struct pol_arg *b)
{
	struct range ra, rb;
	bool ia = arg_range(a, &ra), ib = arg_range(b, &rb);
	if ((ia && ra.empty) || (ib && rb.empty))
		return true;
	if (ia && ib)
		return ra.hi < rb.lo || rb.hi < ra.lo;
	if (a->op == POL_OP_MASKED_EQ && b->op == POL_OP_MASKED_EQ)
		return ((a->value ^ b->value) & a->mask & b->mask) != 0;
	if (ia) { /* make `a` the masked_eq or ne one, `b` the other */
		const struct pol_arg *t = a;
		a = b;
		b = t;
		rb = ra;
		ib = true;
	}
	if (a->op == POL_OP_MASKED_EQ) {
		if (b->op == POL_OP_EQ)
			return (b->value & a->mask) != a->value;
		if (b->op == POL_OP_NE)
			return a->mask == UINT64_MAX && a->value == b->value;
		return false;
	}
	/* a is ne: disjoint only from the single value it excludes. */
	if (ib)
		return rb.lo == rb.hi && rb.lo == a->value;
	if (b->op == POL_OP_MASKED_EQ)
		return b->mask == UINT64_MAX && b->value == a->value;
	return false; /* ne vs ne */
}

static bool rules_disjoint(const struct pol_rule *x, const struct pol_rule *y)
{
	for (size_t i = 0; i < x->nargs; i++)
		for (size_t j = 0; j < y->nargs; j++)
			if (x->args[i].index == y->args[j].index &&
			    args_disjoint(&x->args[i], &y->args[j]))
				return true;
	return false;
}

static const char *rules_shared_name(const struct pol_rule *x, const struct pol_rule *y)
{
	for (size_t i = 0; i < x->nnames; i++)
		for (size_t j = 0; j < y->nnames; j++)
			if (!strcmp(x->names[i], y->names[j]))
				return x->names[i];
	return NULL;
}

/* Refuse what the filter could not express faithfully: two rules that can
 * match the same call with different actions, and a rule whose action is
 * the default action on a syscall whose own fallback differs (libseccomp
 * cannot add a rule with the default action). */
static int check_rules(struct pj_ctx *c, const struct policy_seccomp *s)
{
	char p[PJ_PATH_MAX], q[96];
	for (size_t i = 0; i < s->nrules; i++) {
		const struct pol_rule *r = &s->rules[i];
		policy_json_path_idx(p, sizeof(p), "seccomp.rules", i);
		for (size_t j = 0; j < i; j++) {
			const struct pol_rule *o = &s->rules[j];
			if (policy_act_equal(&r->act, &o->act))
				continue;
			const char *name = rules_shared_name(r, o);
			if (name && !rules_disjoint(r, o)) {
				policy_json_quote(q, sizeof(q), name, 64);
				return policy_json_perr(c, p,
					    "can match the same call to %s as seccomp.rules[%zu] "
					    "with a different action (make them compare one "
					    "argument with values that exclude each other)",
					    q, j);
			}
		}
	}

	/* Fallbacks by syscall number (only native syscalls reach the filter). */
	struct pol_table t;
	if (policy_table_build(s, &t, c->err) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < s->nrules; i++) {
		const struct pol_rule *r = &s->rules[i];
		if (!policy_act_equal(&r->act, &s->def))
			continue;
		for (size_t k = 0; rc == 0 && k < r->nnames; k++) {
			const struct pol_sys *e =
				policy_table_find(&t, seccomp_syscall_resolve_name(r->names[k]));
			if (!e || policy_act_equal(&e->fallback, &s->def))
				continue;
			policy_json_path_idx(p, sizeof(p), "seccomp.rules", i);
			policy_json_quote(q, sizeof(q), r->names[k], 64);
			rc = policy_json_perr(c, p,
				     "the action is the default action, which cannot be a rule "
				     "of %s (listed in seccomp.%s); use another action or errno",
				     q, e->fallback.kind == POL_ACT_ALLOW ? "allow" : "deny");
		}
	}
	/* Bound the work libseccomp is given: its output is limited to 4096
	 * instructions anyway, and a huge rule set makes it very slow. */
	size_t conds = 0;
	for (size_t i = 0; i < t.nsys; i++)
		for (size_t k = 0; k < t.sys[i].nrules; k++)
			conds += s->rules[t.sys[i].rules[k]].nargs;
	if (rc == 0 && conds > MAX_CONDITIONS)
		rc = policy_json_perr(c, "seccomp.rules",
			     "too many conditions (%zu, counting each syscall of a rule; at "
			     "most %d): the filter would not fit in the kernel's 4096 "
			     "instructions",
			     conds, MAX_CONDITIONS);
	policy_table_free(&t);
	return rc;
}

int policy_json_parse_seccomp(struct pj_ctx *c, const cJSON *obj, struct policy_seccomp **out)
{
	if (cJSON_IsNull(obj))
		return 0; /* explicitly no filter */
	if (policy_json_need_object(c, obj, "seccomp") < 0 ||
	    policy_json_check_keys(c, obj, "seccomp", SECCOMP_KEYS, SC_ARRAY_LEN(SECCOMP_KEYS)) < 0)
		return -1;
	struct policy_seccomp *s = calloc(1, sizeof(*s));
	if (!s)
		return sc_fail(c->err, ENOMEM, "%s: seccomp", c->origin);
	*out = s;
	s->def.kind = POL_ACT_ERRNO;
	s->def.errnum = ENOSYS;
	if (parse_action(c, obj, "seccomp", "default_action", "default_errno", false,
			 &s->def) < 0)
		return -1;

	struct seen_set *seen = calloc(1, sizeof(*seen));
	if (!seen)
		return sc_fail(c->err, ENOMEM, "%s: seccomp", c->origin);
	int rc = 0;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "allow");
	if (it)
		rc = parse_names(c, it, "seccomp.allow", POL_MAX_NAMES, &s->allow,
				 &s->nallow, seen, -1);
	size_t n = 0;
	it = cJSON_GetObjectItemCaseSensitive(obj, "deny");
	if (rc == 0 && it && (rc = policy_json_need_array(c, it, "seccomp.deny", POL_MAX_DENY, &n)) == 0 &&
	    n > 0) {
		s->deny = calloc(n, sizeof(*s->deny));
		if (!s->deny)
			rc = sc_fail(c->err, ENOMEM, "%s: seccomp.deny", c->origin);
		size_t i = 0;
		for (const cJSON *d = it->child; rc == 0 && d; d = d->next, i++) {
			char p[PJ_PATH_MAX], q[PJ_PATH_MAX];
			struct pol_deny *e = &s->deny[i];
			s->ndeny = i + 1;
			policy_json_path_idx(p, sizeof(p), "seccomp.deny", i);
			policy_json_path_key(q, sizeof(q), p, "names");
			char r[PJ_PATH_MAX];
			policy_json_path_key(r, sizeof(r), p, "errno");
			if (policy_json_need_object(c, d, p) < 0 ||
			    policy_json_check_keys(c, d, p, DENY_KEYS, SC_ARRAY_LEN(DENY_KEYS)) < 0 ||
			    parse_names(c, cJSON_GetObjectItemCaseSensitive(d, "names"), q,
					POL_MAX_NAMES, &e->names, &e->nnames, seen, (int)i) < 0 ||
			    policy_json_get_errno(c, cJSON_GetObjectItemCaseSensitive(d, "errno"), r,
				      &e->errnum) < 0 ||
			    get_comment(c, d, p, &e->comment) < 0)
				rc = -1;
		}
	}
	free(seen);
	if (rc < 0)
		return -1;

	it = cJSON_GetObjectItemCaseSensitive(obj, "rules");
	if (it && policy_json_need_array(c, it, "seccomp.rules", POL_MAX_RULES, &n) < 0)
		return -1;
	if (it && n > 0) {
		s->rules = calloc(n, sizeof(*s->rules));
		if (!s->rules)
			return sc_fail(c->err, ENOMEM, "%s: seccomp.rules", c->origin);
		size_t i = 0;
		for (const cJSON *r = it->child; r; r = r->next, i++) {
			char p[PJ_PATH_MAX];
			policy_json_path_idx(p, sizeof(p), "seccomp.rules", i);
			s->nrules = i + 1;
			if (parse_rule(c, r, p, &s->rules[i]) < 0)
				return -1;
		}
	}
	return check_rules(c, s);
}

/* ---- freeing ---- */

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void policy_seccomp_free(struct policy_seccomp *s)
{
	if (!s)
		return;
	free_names(s->allow, s->nallow);
	for (size_t i = 0; i < s->ndeny; i++) {
		free_names(s->deny[i].names, s->deny[i].nnames);
		free(s->deny[i].comment);
	}
	free(s->deny);
	for (size_t i = 0; i < s->nrules; i++) {
		free_names(s->rules[i].names, s->rules[i].nnames);
		free(s->rules[i].comment);
	}
	free(s->rules);
	free(s);
}

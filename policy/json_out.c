/* struct policy -> JSON: the effective policy (`sandcell policy check`) and
 * the canonical text of the seccomp part (the filter cache's key). The output
 * is valid input for policy_parse and parses back to the same policy. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../common/sbuf.h"
#include "policy_priv.h"

#define KiB 1024ULL

/* ---- building the tree ---- */

static cJSON *add(cJSON *obj, const char *key, cJSON *item, bool *ok)
{
	if (!item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		*ok = false;
		return NULL;
	}
	return item;
}

static void add_str(cJSON *obj, const char *key, const char *s, bool *ok)
{
	if (s)
		add(obj, key, cJSON_CreateString(s), ok);
}

/* "512M" when the size is a whole number of K/M/G/T, else bytes. */
static void add_size(cJSON *obj, const char *key, uint64_t v, bool *ok)
{
	static const char units[] = "KMGT";
	char buf[32];
	int u = -1;
	uint64_t n = v;
	while (u < 3 && n >= KiB && n % KiB == 0) {
		n /= KiB;
		u++;
	}
	if (u < 0)
		snprintf(buf, sizeof(buf), "%" PRIu64, v);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64 "%c", n, units[u]);
	add(obj, key, cJSON_CreateString(buf), ok);
}

/* Small integers as numbers; masks, flags and ioctl numbers read better
 * in hex (and a double cannot hold every 64-bit value anyway). */
static cJSON *u64_item(uint64_t v, bool hex)
{
	if (!hex && v < 65536)
		return cJSON_CreateNumber((double)v);
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return cJSON_CreateString(buf);
}

static cJSON *errno_item(int e)
{
	const char *name = policy_errno_name(e);
	return name ? cJSON_CreateString(name) : cJSON_CreateNumber(e);
}

static cJSON *names_item(char **names, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; arr && i < n; i++)
		if (!cJSON_AddItemToArray(arr, cJSON_CreateString(names[i]))) {
			cJSON_Delete(arr);
			return NULL;
		}
	return arr;
}

static cJSON *seccomp_item(const struct policy_seccomp *s, bool comments)
{
	bool ok = true;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_str(o, "default_action", policy_act_name(s->def.kind), &ok);
	if (s->def.kind == POL_ACT_ERRNO)
		add(o, "default_errno", errno_item(s->def.errnum), &ok);
	if (s->nallow)
		add(o, "allow", names_item(s->allow, s->nallow), &ok);
	if (s->ndeny) {
		cJSON *arr = add(o, "deny", cJSON_CreateArray(), &ok);
		for (size_t i = 0; ok && i < s->ndeny; i++) {
			cJSON *d = cJSON_CreateObject();
			if (!d || !cJSON_AddItemToArray(arr, d)) {
				cJSON_Delete(d);
				ok = false;
				break;
			}
			if (comments)
				add_str(d, "comment", s->deny[i].comment, &ok);
			add(d, "names", names_item(s->deny[i].names, s->deny[i].nnames), &ok);
			add(d, "errno", errno_item(s->deny[i].errnum), &ok);
		}
	}
	if (s->nrules) {
		cJSON *arr = add(o, "rules", cJSON_CreateArray(), &ok);
		for (size_t i = 0; ok && i < s->nrules; i++) {
			const struct pol_rule *r = &s->rules[i];
			cJSON *ro = cJSON_CreateObject();
			if (!ro || !cJSON_AddItemToArray(arr, ro)) {
				cJSON_Delete(ro);
				ok = false;
				break;
			}
			if (comments)
				add_str(ro, "comment", r->comment, &ok);
			add(ro, "names", names_item(r->names, r->nnames), &ok);
			add_str(ro, "action", policy_act_name(r->act.kind), &ok);
			if (r->act.kind == POL_ACT_ERRNO)
				add(ro, "errno", errno_item(r->act.errnum), &ok);
			cJSON *args = add(ro, "args", cJSON_CreateArray(), &ok);
			for (size_t j = 0; ok && j < r->nargs; j++) {
				const struct pol_arg *a = &r->args[j];
				cJSON *ao = cJSON_CreateObject();
				if (!ao || !cJSON_AddItemToArray(args, ao)) {
					cJSON_Delete(ao);
					ok = false;
					break;
				}
				add(ao, "arg", cJSON_CreateNumber(a->index), &ok);
				add_str(ao, "op", policy_op_name(a->op), &ok);
				if (a->op == POL_OP_MASKED_EQ)
					add(ao, "mask", u64_item(a->mask, true), &ok);
				add(ao, "value", u64_item(a->value, false), &ok);
			}
		}
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *landlock_item(const struct policy_landlock *l)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	add(o, "filesystem", cJSON_CreateBool(!l->no_filesystem), &ok);
	add(o, "scope", cJSON_CreateBool(!l->no_scope), &ok);
	add(o, "connect", cJSON_CreateString(l->connect == POLICY_CONNECT_PROXY ? "proxy" : "any"), &ok);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void add_network(cJSON *o, const struct policy *p, bool *ok)
{
	cJSON *n = add(o, "network", cJSON_CreateObject(), ok);
	if (n)
		add_str(n, "mode", p->network, ok);
	if (n && p->nnet_allow) {
		cJSON *a = add(n, "allow", cJSON_CreateArray(), ok);
		for (size_t i = 0; a && *ok && i < p->nnet_allow; i++) {
			cJSON *e = cJSON_CreateString(p->net_allow[i]);
			if (!e || !cJSON_AddItemToArray(a, e))
				*ok = false;
		}
	}
	if (n && p->nnet_hosts) {
		cJSON *h = add(n, "hosts", cJSON_CreateObject(), ok);
		for (size_t i = 0; h && *ok && i < p->nnet_hosts; i++)
			add_str(h, p->net_hosts[i].name, p->net_hosts[i].addr, ok);
	}
}

/* "KEY=VAL" entries as {"KEY": "VAL"}. */
static void add_env(cJSON *o, const struct policy *p, bool *ok)
{
	cJSON *env = add(o, "env", cJSON_CreateObject(), ok);
	for (size_t i = 0; *ok && i < p->nenv; i++) {
		const char *eq = strchr(p->env[i], '=');
		size_t klen = eq ? (size_t)(eq - p->env[i]) : 0;
		if (!eq || klen > POL_MAX_ENV_KEY) {
			*ok = false;
			return;
		}
		char key[POL_MAX_ENV_KEY + 1];
		memcpy(key, p->env[i], klen);
		key[klen] = '\0';
		add_str(env, key, eq + 1, ok);
	}
}

static void add_limits(cJSON *o, const struct policy_limits *l, bool *ok)
{
	if (!(l->memory || l->pids || l->cpus > 0 || l->timeout_s > 0 || l->disk || l->output ||
	      l->nofile || l->fsize))
		return;
	cJSON *lo = add(o, "limits", cJSON_CreateObject(), ok);
	if (!lo)
		return;
	if (l->memory == POLICY_UNLIMITED)
		add(lo, "memory", cJSON_CreateNumber(0), ok);
	else if (l->memory)
		add_size(lo, "memory", l->memory, ok);
	if (l->pids)
		add(lo, "pids", cJSON_CreateNumber(l->pids == POLICY_UNLIMITED ? 0 : (double)l->pids),
		    ok);
	if (l->cpus > 0)
		add(lo, "cpus", cJSON_CreateNumber(l->cpus), ok);
	if (l->timeout_s > 0)
		add(lo, "timeout", cJSON_CreateNumber(l->timeout_s), ok);
	if (l->disk)
		add_size(lo, "disk", l->disk, ok);
	if (l->output)
		add_size(lo, "output", l->output, ok);
	if (l->nofile)
		add(lo, "nofile", cJSON_CreateNumber((double)l->nofile), ok);
	if (l->fsize)
		add_size(lo, "fsize", l->fsize, ok);
}

static void add_mounts(cJSON *o, const struct policy *p, bool *ok)
{
	cJSON *arr = add(o, "mounts", cJSON_CreateArray(), ok);
	for (size_t i = 0; *ok && i < p->nmounts; i++) {
		const struct policy_mount *m = &p->mounts[i];
		cJSON *mo = cJSON_CreateObject();
		if (!mo || !cJSON_AddItemToArray(arr, mo)) {
			cJSON_Delete(mo);
			*ok = false;
			return;
		}
		add_str(mo, "type", m->host ? "bind" : "tmpfs", ok);
		if (m->host) {
			add_str(mo, "host", m->host, ok);
			add_str(mo, "cell", m->cell, ok);
			add(mo, "readonly", cJSON_CreateBool(m->readonly), ok);
		} else {
			add_str(mo, "cell", m->cell, ok);
			add_size(mo, "size", m->size, ok);
		}
	}
}

static cJSON *policy_item(const struct policy *p)
{
	bool ok = true;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_str(o, "description", p->description, &ok);
	add_str(o, "image", p->image, &ok);
	add_str(o, "workdir", p->workdir, &ok);
	add_str(o, "hostname", p->hostname, &ok);
	if (p->network)
		add_network(o, p, &ok);
	if (p->nenv)
		add_env(o, p, &ok);
	add_limits(o, &p->limits, &ok);
	if (p->nmounts)
		add_mounts(o, p, &ok);
	add(o, "no_writable_binds", cJSON_CreateBool(p->no_writable_binds), &ok);
	add(o, "require_cgroups", cJSON_CreateBool(p->require_cgroups), &ok);
	add(o, "landlock", landlock_item(&p->landlock), &ok);
	if (p->seccomp)
		add(o, "seccomp", seccomp_item(p->seccomp, true), &ok);
	else
		add(o, "seccomp", cJSON_CreateNull(), &ok);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---- printing: 2-space indentation, arrays of scalars packed into lines
 * of at most 80 columns, so a 300-name allow list stays readable. ---- */

static void sb_indent(struct sc_sbuf *b, int depth)
{
	for (int i = 0; i < depth; i++)
		sc_sbuf_add(b, "  ", 2);
}

static void put_string(struct sc_sbuf *b, const char *s)
{
	sc_sbuf_add(b, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		switch (ch) {
		case '"': sc_sbuf_add(b, "\\\"", 2); break;
		case '\\': sc_sbuf_add(b, "\\\\", 2); break;
		case '\n': sc_sbuf_add(b, "\\n", 2); break;
		case '\t': sc_sbuf_add(b, "\\t", 2); break;
		case '\r': sc_sbuf_add(b, "\\r", 2); break;
		default:
			if (ch < 0x20 || ch == 0x7f)
				sc_sbuf_printf(b, "\\u%04x", ch);
			else
				sc_sbuf_add(b, s, 1);
		}
	}
	sc_sbuf_add(b, "\"", 1);
}

static void put_number(struct sc_sbuf *b, double d)
{
	if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
		sc_sbuf_printf(b, "%.0f", d);
		return;
	}
	/* Shortest of 15 or 17 significant digits that reads back exactly. */
	char buf[40];
	snprintf(buf, sizeof(buf), "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, sizeof(buf), "%.17g", d);
	sc_sbuf_adds(b, buf);
}

static bool is_scalar(const cJSON *it)
{
	return !cJSON_IsArray(it) && !cJSON_IsObject(it);
}

static void put_value(struct sc_sbuf *b, const cJSON *it, int depth, size_t col);

static void put_scalar(struct sc_sbuf *b, const cJSON *it)
{
	if (cJSON_IsString(it))
		put_string(b, it->valuestring);
	else if (cJSON_IsNumber(it))
		put_number(b, it->valuedouble);
	else if (cJSON_IsTrue(it))
		sc_sbuf_adds(b, "true");
	else if (cJSON_IsFalse(it))
		sc_sbuf_adds(b, "false");
	else
		sc_sbuf_adds(b, "null");
}

/* Length of a scalar as printed. */
static size_t scalar_len(const cJSON *it)
{
	struct sc_sbuf t = {0};
	put_scalar(&t, it);
	size_t n = t.len;
	sc_sbuf_free(&t);
	return n;
}

static void put_array(struct sc_sbuf *b, const cJSON *arr, int depth, size_t col)
{
	if (!arr->child) {
		sc_sbuf_adds(b, "[]");
		return;
	}
	bool scalars = true;
	for (const cJSON *e = arr->child; e; e = e->next)
		scalars = scalars && is_scalar(e);
	if (scalars) {
		/* Everything on one line when it fits, else packed lines. */
		size_t total = col + 2;
		for (const cJSON *e = arr->child; e; e = e->next)
			total += scalar_len(e) + 2;
		if (total <= 80) {
			sc_sbuf_adds(b, "[");
			for (const cJSON *e = arr->child; e; e = e->next) {
				put_scalar(b, e);
				if (e->next)
					sc_sbuf_adds(b, ", ");
			}
			sc_sbuf_adds(b, "]");
			return;
		}
		sc_sbuf_adds(b, "[\n");
		size_t c = 0;
		for (const cJSON *e = arr->child; e; e = e->next) {
			size_t n = scalar_len(e) + (e->next ? 1 : 0);
			if (c == 0) {
				sb_indent(b, depth + 1);
				c = (size_t)(depth + 1) * 2;
			} else if (c + 1 + n > 80) {
				sc_sbuf_adds(b, "\n");
				sb_indent(b, depth + 1);
				c = (size_t)(depth + 1) * 2;
			} else {
				sc_sbuf_adds(b, " ");
				c++;
			}
			put_scalar(b, e);
			if (e->next)
				sc_sbuf_adds(b, ",");
			c += n;
		}
		sc_sbuf_adds(b, "\n");
		sb_indent(b, depth);
		sc_sbuf_adds(b, "]");
		return;
	}
	sc_sbuf_adds(b, "[\n");
	for (const cJSON *e = arr->child; e; e = e->next) {
		sb_indent(b, depth + 1);
		put_value(b, e, depth + 1, (size_t)(depth + 1) * 2);
		sc_sbuf_adds(b, e->next ? ",\n" : "\n");
	}
	sb_indent(b, depth);
	sc_sbuf_adds(b, "]");
}

static void put_object(struct sc_sbuf *b, const cJSON *obj, int depth, size_t col)
{
	if (!obj->child) {
		sc_sbuf_adds(b, "{}");
		return;
	}
	/* A small object of scalars on one line: {"arg": 0, "op": "eq", ...}. */
	size_t total = col + 2;
	bool scalars = true;
	for (const cJSON *e = obj->child; e && scalars; e = e->next) {
		scalars = is_scalar(e);
		total += strlen(e->string) + 4 + (scalars ? scalar_len(e) : 0) + 2;
	}
	if (scalars && total <= 80) {
		sc_sbuf_adds(b, "{");
		for (const cJSON *e = obj->child; e; e = e->next) {
			put_string(b, e->string);
			sc_sbuf_adds(b, ": ");
			put_scalar(b, e);
			if (e->next)
				sc_sbuf_adds(b, ", ");
		}
		sc_sbuf_adds(b, "}");
		return;
	}
	sc_sbuf_adds(b, "{\n");
	for (const cJSON *e = obj->child; e; e = e->next) {
		sb_indent(b, depth + 1);
		size_t before = b->len;
		put_string(b, e->string);
		sc_sbuf_adds(b, ": ");
		size_t col = (size_t)(depth + 1) * 2 + (b->len - before);
		put_value(b, e, depth + 1, col);
		sc_sbuf_adds(b, e->next ? ",\n" : "\n");
	}
	sb_indent(b, depth);
	sc_sbuf_adds(b, "}");
}

static void put_value(struct sc_sbuf *b, const cJSON *it, int depth, size_t col)
{
	if (cJSON_IsObject(it))
		put_object(b, it, depth, col);
	else if (cJSON_IsArray(it))
		put_array(b, it, depth, col);
	else
		put_scalar(b, it);
}

char *policy_to_json(const struct policy *p)
{
	cJSON *root = policy_item(p);
	if (!root)
		return NULL;
	struct sc_sbuf b = {0};
	put_value(&b, root, 0, 0);
	sc_sbuf_adds(&b, "\n");
	cJSON_Delete(root);
	return sc_sbuf_take(&b);
}

char *policy_seccomp_canonical(const struct policy_seccomp *s)
{
	cJSON *o = seccomp_item(s, false);
	if (!o)
		return NULL;
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

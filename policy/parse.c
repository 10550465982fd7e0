/* Policy documents: JSON text -> struct policy, validated field by field.
 * Every error is one line naming the JSON path and the expected form. */
#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/netname.h"
#include "../common/parse.h"
#include "json_in.h"

#define STR_(x) #x
#define STR(x) STR_(x)
/* What limits.pids takes, as its error says it. */
#define PIDS_RANGE "an integer from 1 to " STR(POLICY_PIDS_MAX) " (0: no limit)"

bool policy_valid_hostname(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || s[0] == '-' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!isalnum(ch) && ch != '-' && ch != '.')
			return false;
	}
	return true;
}

static bool valid_env_key(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > POL_MAX_ENV_KEY || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

static const char *const LIMIT_KEYS[] = {"memory", "pids", "cpus", "timeout",
					 "disk", "output", "nofile", "fsize"};

/* A limit written as 0 (the number, or the string "0"): no limit. */
static bool is_zero(const cJSON *it)
{
	if (cJSON_IsNumber(it))
		return it->valuedouble == 0.0;
	return cJSON_IsString(it) && it->valuestring && !strcmp(it->valuestring, "0");
}

static int parse_limits(struct pj_ctx *c, const cJSON *obj, struct policy_limits *l)
{
	if (policy_json_need_object(c, obj, "limits") < 0 ||
	    policy_json_check_keys(c, obj, "limits", LIMIT_KEYS, SC_ARRAY_LEN(LIMIT_KEYS)) < 0)
		return -1;
	const cJSON *it;
	uint64_t v;
	/* memory and pids: 0 lifts the default (POLICY_UNLIMITED) */
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "memory"))) {
		if (is_zero(it))
			l->memory = POLICY_UNLIMITED;
		else if (policy_json_get_size(c, it, "limits.memory", POLICY_MEMORY_MIN,
					      POLICY_MEMORY_MAX, "4M to 16T (0: no limit)", &l->memory) < 0)
			return -1;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "pids"))) {
		if (cJSON_IsNumber(it) && is_zero(it))
			v = POLICY_UNLIMITED;
		else if (!policy_json_uint(it, 1, POLICY_PIDS_MAX, &v))
			return policy_json_expected(c, "limits.pids", PIDS_RANGE, it);
		l->pids = v;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "cpus")) &&
	    policy_json_get_decimal(c, it, "limits.cpus", sc_parse_cpus,
			"a number of CPUs from 0.01 to 4096, like 1.5", &l->cpus) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "timeout")) &&
	    policy_json_get_decimal(c, it, "limits.timeout", sc_parse_seconds,
			"a number of seconds above 0 and at most one year, like 60",
			&l->timeout_s) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "disk")) &&
	    policy_json_get_size(c, it, "limits.disk", POLICY_DISK_MIN, POLICY_DISK_MAX, "1M to 16T",
				 &l->disk) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "output")) &&
	    policy_json_get_size(c, it, "limits.output", 1, POLICY_OUTPUT_MAX, "1 byte to 1G",
				 &l->output) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "nofile"))) {
		if (policy_json_get_uint(c, it, "limits.nofile", 8, 1048576, &v) < 0)
			return -1;
		l->nofile = v;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(obj, "fsize")) &&
	    policy_json_get_size(c, it, "limits.fsize", 1 * KiB, 16 * TiB, "1K to 16T", &l->fsize) < 0)
		return -1;
	return 0;
}

int policy_limit_parse(const char *key, const char *v, struct policy_limits *l,
		       struct sc_err *err)
{
	uint64_t n;
	bool zero = !strcmp(v, "0");
	if (!strcmp(key, "memory")) {
		if (zero) {
			l->memory = POLICY_UNLIMITED;
			return 0;
		}
		if (sc_parse_size(v, &n) < 0 || n < POLICY_MEMORY_MIN || n > POLICY_MEMORY_MAX)
			return sc_fail(err, 0, "expected a size from 4M to 16T (0 = unlimited), got '%.64s'", v);
		l->memory = n;
	} else if (!strcmp(key, "pids")) {
		if (zero) {
			l->pids = POLICY_UNLIMITED;
			return 0;
		}
		if (sc_parse_uint(v, 1, POLICY_PIDS_MAX, &n) < 0)
			return sc_fail(err, 0, "expected a number from 1 to %d (0 = unlimited), got '%.64s'",
				       POLICY_PIDS_MAX, v);
		l->pids = n;
	} else if (!strcmp(key, "cpus")) {
		if (sc_parse_cpus(v, &l->cpus) < 0)
			return sc_fail(err, 0, "expected a number of CPUs from 0.01 to 4096, like 1.5, got '%.64s'", v);
	} else if (!strcmp(key, "timeout")) {
		if (sc_parse_seconds(v, &l->timeout_s) < 0)
			return sc_fail(err, 0, "expected seconds above 0 and at most one year (31536000), "
					       "like 30 or 0.5, got '%.64s'", v);
	} else if (!strcmp(key, "disk")) {
		if (sc_parse_size(v, &n) < 0 || n < POLICY_DISK_MIN || n > POLICY_DISK_MAX)
			return sc_fail(err, 0, "expected a size from 1M to 16T, got '%.64s'", v);
		l->disk = n;
	} else if (!strcmp(key, "output")) {
		if (sc_parse_size(v, &n) < 0 || n < 1 || n > POLICY_OUTPUT_MAX)
			return sc_fail(err, 0, "expected a size from 1 byte to 1G, got '%.64s'", v);
		l->output = n;
	} else {
		return sc_fail(err, EINVAL, "no limit named '%.32s'", key);
	}
	return 0;
}

static const char *const BIND_KEYS[] = {"type", "host", "cell", "readonly"};
static const char *const TMPFS_KEYS[] = {"type", "cell", "size"};
#define DEFAULT_TMPFS_SIZE (64 * MiB)

static int parse_mount(struct pj_ctx *c, const cJSON *obj, const char *path,
		       struct policy_mount *m)
{
	char p[PJ_PATH_MAX];
	if (policy_json_need_object(c, obj, path) < 0)
		return -1;
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");
	policy_json_path_key(p, sizeof(p), path, "type");
	bool bind;
	if (cJSON_IsString(type) && !strcmp(type->valuestring, "bind"))
		bind = true;
	else if (cJSON_IsString(type) && !strcmp(type->valuestring, "tmpfs"))
		bind = false;
	else
		return policy_json_expected(c, p, "\"bind\" or \"tmpfs\"", type);
	if (bind ? policy_json_check_keys(c, obj, path, BIND_KEYS, SC_ARRAY_LEN(BIND_KEYS))
		 : policy_json_check_keys(c, obj, path, TMPFS_KEYS, SC_ARRAY_LEN(TMPFS_KEYS)))
		return -1;

	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, "cell");
	policy_json_path_key(p, sizeof(p), path, "cell");
	if (policy_json_get_abs_path(c, it, p, &m->cell) < 0)
		return -1;
	static const char *const reserved[] = {"/proc", "/sys", "/dev"};
	if (policy_json_same_path(m->cell, "/"))
		return policy_json_perr(c, p, "cannot mount over the cell's root");
	for (size_t i = 0; i < SC_ARRAY_LEN(reserved); i++)
		if (policy_json_path_under(m->cell, reserved[i]))
			return policy_json_perr(c, p, "%s is set up by sandcell and cannot be mounted over",
				    reserved[i]);
	if (bind) {
		it = cJSON_GetObjectItemCaseSensitive(obj, "host");
		policy_json_path_key(p, sizeof(p), path, "host");
		if (policy_json_get_abs_path(c, it, p, &m->host) < 0)
			return -1;
		if ((it = cJSON_GetObjectItemCaseSensitive(obj, "readonly"))) {
			policy_json_path_key(p, sizeof(p), path, "readonly");
			if (policy_json_get_bool(c, it, p, &m->readonly) < 0)
				return -1;
		}
	} else {
		m->size = DEFAULT_TMPFS_SIZE;
		if ((it = cJSON_GetObjectItemCaseSensitive(obj, "size"))) {
			policy_json_path_key(p, sizeof(p), path, "size");
			if (policy_json_get_size(c, it, p, 4 * KiB, 16 * TiB, "4K to 16T", &m->size) < 0)
				return -1;
		}
	}
	return 0;
}

static int parse_mounts(struct pj_ctx *c, const cJSON *arr, struct policy *p)
{
	size_t n = 0;
	if (policy_json_need_array(c, arr, "mounts", POLICY_MAX_MOUNTS, &n) < 0)
		return -1;
	if (n == 0)
		return 0;
	p->mounts = calloc(n, sizeof(*p->mounts));
	if (!p->mounts)
		return sc_fail(c->err, ENOMEM, "%s: mounts", c->origin);
	size_t i = 0;
	char path[PJ_PATH_MAX];
	for (const cJSON *it = arr->child; it; it = it->next, i++) {
		policy_json_path_idx(path, sizeof(path), "mounts", i);
		p->nmounts = i + 1;
		if (parse_mount(c, it, path, &p->mounts[i]) < 0)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (policy_json_same_path(p->mounts[j].cell, p->mounts[i].cell)) {
				char q[PJ_PATH_MAX];
				policy_json_bprintf(q, sizeof(q), "%s.cell", path);
				return policy_json_perr(c, q, "%s is already mounted by mounts[%zu]",
					    p->mounts[i].cell, j);
			}
	}
	return 0;
}

static int parse_env(struct pj_ctx *c, const cJSON *obj, struct policy *p)
{
	if (policy_json_need_object(c, obj, "env") < 0)
		return -1;
	size_t n = 0;
	for (const cJSON *it = obj->child; it; it = it->next)
		if (++n > POLICY_MAX_ENV)
			return policy_json_perr(c, "env", "too many variables (at most %d)", POLICY_MAX_ENV);
	if (n == 0)
		return 0;
	p->env = calloc(n + 1, sizeof(char *));
	if (!p->env)
		return sc_fail(c->err, ENOMEM, "%s: env", c->origin);
	char path[PJ_PATH_MAX];
	for (const cJSON *it = obj->child; it; it = it->next) {
		policy_json_path_key(path, sizeof(path), "env", it->string);
		if (!valid_env_key(it->string))
			return policy_json_perr(c, path, "not a valid variable name (letters, digits "
					     "and '_', not starting with a digit)");
		for (const cJSON *prev = obj->child; prev != it; prev = prev->next)
			if (!strcmp(prev->string, it->string))
				return policy_json_perr(c, path, "duplicate key");
		if (!cJSON_IsString(it))
			return policy_json_expected(c, path, "a string", it);
		size_t vlen = strlen(it->valuestring);
		if (vlen > POL_MAX_ENV_VAL)
			return policy_json_perr(c, path, "too long (at most %d bytes)", POL_MAX_ENV_VAL);
		size_t klen = strlen(it->string);
		char *kv = malloc(klen + vlen + 2);
		if (!kv)
			return sc_fail(c->err, ENOMEM, "%s: env", c->origin);
		memcpy(kv, it->string, klen);
		kv[klen] = '=';
		memcpy(kv + klen + 1, it->valuestring, vlen + 1);
		p->env[p->nenv++] = kv;
	}
	return 0;
}

static const char *const NETWORK_KEYS[] = {"mode", "allow", "hosts"};

static int parse_net_allow(struct pj_ctx *c, const cJSON *arr, struct policy *p)
{
	size_t n = 0;
	if (policy_json_need_array(c, arr, "network.allow", POLICY_MAX_NET_ALLOW, &n) < 0)
		return -1;
	p->net_allow = calloc(n + 1, sizeof(char *));
	if (!p->net_allow)
		return sc_fail(c->err, ENOMEM, "%s: network.allow", c->origin);
	size_t i = 0;
	for (const cJSON *e = arr->child; e; e = e->next, i++) {
		char path[PJ_PATH_MAX];
		policy_json_path_idx(path, sizeof(path), "network.allow", i);
		if (!cJSON_IsString(e))
			return policy_json_expected(c, path, "a host name like \"pypi.org\", \"name:port\" or \"*.suffix\"", e);
		struct sc_net_allow a;
		const char *why = NULL;
		if (sc_net_allow_parse(e->valuestring, &a, &why) < 0)
			return policy_json_perr(c, path, "%s", why);
		if (policy_json_get_string(c, e, path, SC_NET_NAME_MAX + 8, "a string", &p->net_allow[i]) < 0)
			return -1;
		p->nnet_allow = i + 1;
	}
	return 0;
}

static int parse_net_hosts(struct pj_ctx *c, const cJSON *obj, struct policy *p)
{
	if (policy_json_need_object(c, obj, "network.hosts") < 0)
		return -1;
	size_t n = 0;
	for (const cJSON *e = obj->child; e; e = e->next)
		if (++n > POLICY_MAX_NET_HOSTS)
			return policy_json_perr(c, "network.hosts", "too many entries (at most %d)",
				       POLICY_MAX_NET_HOSTS);
	p->net_hosts = calloc(n ? n : 1, sizeof(*p->net_hosts));
	if (!p->net_hosts)
		return sc_fail(c->err, ENOMEM, "%s: network.hosts", c->origin);
	for (const cJSON *e = obj->child; e; e = e->next) {
		char path[PJ_PATH_MAX], norm[SC_NET_NAME_MAX + 1];
		policy_json_path_key(path, sizeof(path), "network.hosts", e->string);
		const char *why = NULL;
		size_t len = strnlen(e->string, SC_NET_NAME_MAX + 2);
		if (sc_net_name_norm(e->string, len, norm, &why) < 0)
			return policy_json_perr(c, path, "%s", why);
		int family;
		uint8_t addr[16];
		if (!cJSON_IsString(e) || sc_net_addr_parse(e->valuestring, &family, addr, &why) < 0)
			return policy_json_expected(c, path, "an IPv4 or IPv6 address like \"10.1.2.3\"", e);
		struct policy_net_host *h = &p->net_hosts[p->nnet_hosts];
		if (!(h->name = strdup(norm)) || !(h->addr = strdup(e->valuestring))) {
			free(h->name);
			h->name = NULL;
			return sc_fail(c->err, ENOMEM, "%s: network.hosts", c->origin);
		}
		p->nnet_hosts++;
	}
	return 0;
}

static int parse_network(struct pj_ctx *c, const cJSON *obj, struct policy *p)
{
	if (policy_json_need_object(c, obj, "network") < 0 ||
	    policy_json_check_keys(c, obj, "network", NETWORK_KEYS, SC_ARRAY_LEN(NETWORK_KEYS)) < 0)
		return -1;
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(obj, "mode");
	const cJSON *allow = cJSON_GetObjectItemCaseSensitive(obj, "allow");
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(obj, "hosts");
	bool allowlist = cJSON_IsString(mode) && !strcmp(mode->valuestring, "allowlist");
	if (!cJSON_IsString(mode) || (strcmp(mode->valuestring, "none") && !allowlist))
		return policy_json_expected(c, "network.mode",
				   "\"none\" (loopback only) or \"allowlist\"",
				   mode);
	if (!allowlist && allow)
		return policy_json_perr(c, "network.allow", "needs \"mode\": \"allowlist\"");
	if (!allowlist && hosts)
		return policy_json_perr(c, "network.hosts", "needs \"mode\": \"allowlist\"");
	if (allow && parse_net_allow(c, allow, p) < 0)
		return -1;
	if (hosts && parse_net_hosts(c, hosts, p) < 0)
		return -1;
	return policy_json_get_string(c, mode, "network.mode", 16, "a string", &p->network);
}

/* ---- landlock ---- */

static const char *const LANDLOCK_KEYS[] = {"filesystem", "scope", "connect"};

/* "landlock": false turns every rule off; an object turns parts off. */
static int parse_landlock(struct pj_ctx *c, const cJSON *it, struct policy_landlock *l)
{
	if (cJSON_IsBool(it)) {
		bool on = cJSON_IsTrue(it);
		*l = (struct policy_landlock){.no_filesystem = !on, .no_scope = !on};
		return 0;
	}
	if (!cJSON_IsObject(it))
		return policy_json_expected(c, "landlock", "true, false or an object", it);
	if (policy_json_check_keys(c, it, "landlock", LANDLOCK_KEYS, SC_ARRAY_LEN(LANDLOCK_KEYS)) < 0)
		return -1;
	const cJSON *v;
	bool on;
	if ((v = cJSON_GetObjectItemCaseSensitive(it, "filesystem"))) {
		if (policy_json_get_bool(c, v, "landlock.filesystem", &on) < 0)
			return -1;
		l->no_filesystem = !on;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(it, "scope"))) {
		if (policy_json_get_bool(c, v, "landlock.scope", &on) < 0)
			return -1;
		l->no_scope = !on;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(it, "connect"))) {
		if (cJSON_IsString(v) && !strcmp(v->valuestring, "any"))
			l->connect = POLICY_CONNECT_ANY;
		else if (cJSON_IsString(v) && !strcmp(v->valuestring, "proxy"))
			l->connect = POLICY_CONNECT_PROXY;
		else
			return policy_json_expected(c, "landlock.connect", "\"any\" or \"proxy\"", v);
	}
	return 0;
}

/* ---- the document ---- */

static const char *const TOP_KEYS[] = {
	"description", "image",  "workdir", "hostname",          "network", "env",
	"limits",      "mounts", "seccomp", "no_writable_binds", "require_cgroups",
	"landlock"};

/* JSON must be UTF-8; refuse overlong forms, surrogates and stray bytes. */
static bool valid_utf8(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t n = sc_utf8_len(s + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

/* "\u0000" would end a C string early inside cJSON: refuse it, so that no
 * string is silently cut (e.g. a path). Counts the backslashes before it. */
static bool has_escaped_nul(const char *s, size_t len)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		if (s[i] != '\\')
			continue;
		if ((s[i + 1] == 'u' || s[i + 1] == 'U') && !memcmp(s + i + 2, "0000", 4))
			return true;
		i++; /* skip the escaped character */
	}
	return false;
}

static void line_col(const char *s, size_t off, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int parse_doc(struct pj_ctx *c, const cJSON *root, struct policy *p)
{
	if (!cJSON_IsObject(root))
		return policy_json_expected(c, NULL, "a JSON object at the top level", root);
	if (policy_json_check_keys(c, root, "", TOP_KEYS, SC_ARRAY_LEN(TOP_KEYS)) < 0)
		return -1;
	const cJSON *it;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "description")) &&
	    policy_json_get_string(c, it, "description", POL_MAX_COMMENT, "a string", &p->description) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "image"))) {
		if (!cJSON_IsString(it) || !sc_valid_name(it->valuestring))
			return policy_json_expected(c, "image", "an image name like \"host\"", it);
		if (policy_json_get_string(c, it, "image", 64, "a string", &p->image) < 0)
			return -1;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "workdir")) &&
	    policy_json_get_abs_path(c, it, "workdir", &p->workdir) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "hostname"))) {
		if (!cJSON_IsString(it) || !policy_valid_hostname(it->valuestring))
			return policy_json_expected(c, "hostname",
					"a host name of 1 to 64 letters, digits, '-' and '.'",
					it);
		if (policy_json_get_string(c, it, "hostname", 64, "a string", &p->hostname) < 0)
			return -1;
	}
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "network")) &&
	    parse_network(c, it, p) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "env")) && parse_env(c, it, p) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "limits")) &&
	    parse_limits(c, it, &p->limits) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "no_writable_binds")) &&
	    policy_json_get_bool(c, it, "no_writable_binds", &p->no_writable_binds) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "require_cgroups")) &&
	    policy_json_get_bool(c, it, "require_cgroups", &p->require_cgroups) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "landlock")) &&
	    parse_landlock(c, it, &p->landlock) < 0)
		return -1;
	if ((it = cJSON_GetObjectItemCaseSensitive(root, "mounts")) && parse_mounts(c, it, p) < 0)
		return -1;
	if (p->no_writable_binds)
		for (size_t i = 0; i < p->nmounts; i++)
			if (p->mounts[i].host && !p->mounts[i].readonly) {
				char q[PJ_PATH_MAX];
				snprintf(q, sizeof(q), "mounts[%zu].readonly", i);
				return policy_json_perr(c, q, "must be true: the policy sets no_writable_binds");
			}

	it = cJSON_GetObjectItemCaseSensitive(root, "seccomp");
	if (it)
		return policy_json_parse_seccomp(c, it, &p->seccomp);
	return 0;
}

/* The seccomp part of the default profile, for documents that omit it. */
static int default_seccomp(struct policy_seccomp **out, struct sc_err *err)
{
	struct policy d;
	const char *json = policy_builtin_json("default");
	if (policy_parse(json, strlen(json), "default", &d, err) < 0)
		return -1;
	*out = steal_ptr(&d.seccomp);
	policy_free(&d);
	return 0;
}

int policy_parse(const char *json, size_t len, const char *origin,
		 struct policy *out, struct sc_err *err)
{
	return policy_parse_text(json, len, origin, true, out, err);
}

int policy_parse_text(const char *json, size_t len, const char *origin, bool default_seccomp_if_missing,
		   struct policy *out, struct sc_err *err)
{
	struct pj_ctx c = {.origin = origin ? origin : "policy", .err = err};
	memset(out, 0, sizeof(*out));
	if (len > POL_MAX_DOC)
		return policy_json_perr(&c, NULL, "too large (at most %u bytes)", POL_MAX_DOC);
	if (memchr(json, '\0', len))
		return policy_json_perr(&c, NULL, "contains a NUL byte; expected a JSON text");
	if (!valid_utf8((const unsigned char *)json, len))
		return policy_json_perr(&c, NULL, "not valid UTF-8; expected a JSON text");
	if (has_escaped_nul(json, len))
		return policy_json_perr(&c, NULL, "contains \"\\u0000\", which no field accepts");

	/* cJSON wants the terminating NUL inside the length it is given. */
	_cleanup_free_ char *text = malloc(len + 1);
	if (!text)
		return sc_fail(err, ENOMEM, "%s", c.origin);
	memcpy(text, json, len);
	text[len] = '\0';
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, true);
	if (!root) {
		size_t off = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
		size_t line, col;
		line_col(text, off, &line, &col);
		return policy_json_perr(&c, NULL, "line %zu, column %zu: invalid JSON", line, col);
	}
	int rc = parse_doc(&c, root, out);
	bool has_seccomp = cJSON_GetObjectItemCaseSensitive(root, "seccomp") != NULL;
	cJSON_Delete(root);
	if (rc == 0 && !has_seccomp && default_seccomp_if_missing)
		rc = default_seccomp(&out->seccomp, err);
	if (rc == 0 && !(out->name = strdup(c.origin)))
		rc = sc_fail(err, ENOMEM, "%s", c.origin);
	if (rc < 0)
		policy_free(out);
	return rc;
}

/* ---- loading ---- */

bool policy_is_builtin(const char *name)
{
	return policy_builtin_json(name) != NULL;
}

const char *policy_builtin_name(size_t i)
{
	return i < policy_nbuiltins ? policy_builtins[i].name : NULL;
}

const char *policy_builtin_json(const char *name)
{
	for (size_t i = 0; i < policy_nbuiltins; i++)
		if (!strcmp(policy_builtins[i].name, name))
			return policy_builtins[i].json;
	return NULL;
}

static bool looks_like_file(const char *s)
{
	size_t n = strlen(s);
	return strchr(s, '/') || (n >= 5 && !strcmp(s + n - 5, ".json"));
}

static int read_policy_file(const char *path, char **buf, size_t *len, struct sc_err *err)
{
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sc_fail(err, errno, "cannot open policy %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sc_fail(err, errno, "cannot stat policy %s", path);
	if (S_ISDIR(st.st_mode))
		return sc_fail(err, EISDIR, "cannot read policy %s", path);
	struct sc_err e;
	if (sc_read_small_alloc_fd(fd, path, 0, POL_MAX_DOC, buf, len, &e) < 0) {
		if (e.errnum == EFBIG)
			return sc_fail(err, 0, "%s: too large (at most %u bytes)", path, POL_MAX_DOC);
		return sc_fail(err, e.errnum, "cannot read policy %s", path);
	}
	return 0;
}

int policy_load(const char *name_or_file, struct policy *out, struct sc_err *err)
{
	return policy_load_with(name_or_file, policy_parse, out, err);
}

int policy_load_with(const char *name_or_file, pol_parser parse, struct policy *out,
		  struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!name_or_file || !*name_or_file)
		return sc_fail(err, 0, "empty policy name");
	if (!looks_like_file(name_or_file)) {
		const char *json = policy_builtin_json(name_or_file);
		if (!json) {
			char q[96], list[128] = "";
			size_t o = 0;
			for (size_t i = 0; i < policy_nbuiltins && o < sizeof(list); i++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
						      i ? ", " : "", policy_builtins[i].name);
			policy_json_quote(q, sizeof(q), name_or_file, 64);
			return sc_fail(err, 0,
				       "unknown policy %s (built-in: %s; or give a path to "
				       "a JSON file, e.g. ./%s.json)",
				       q, list, "policy");
		}
		return parse(json, strlen(json), name_or_file, out, err);
	}
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (read_policy_file(name_or_file, &buf, &len, err) < 0)
		return -1;
	return parse(buf, len, name_or_file, out, err);
}

/* ---- freeing ---- */



void policy_free(struct policy *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->description);
	free(p->image);
	free(p->workdir);
	free(p->hostname);
	free(p->network);
	for (size_t i = 0; i < p->nnet_allow; i++)
		free(p->net_allow[i]);
	free(p->net_allow);
	for (size_t i = 0; i < p->nnet_hosts; i++) {
		free(p->net_hosts[i].name);
		free(p->net_hosts[i].addr);
	}
	free(p->net_hosts);
	for (size_t i = 0; i < p->nenv; i++)
		free(p->env[i]);
	free(p->env);
	for (size_t i = 0; i < p->nmounts; i++) {
		free(p->mounts[i].host);
		free(p->mounts[i].cell);
	}
	free(p->mounts);
	policy_seccomp_free(p->seccomp);
	free(p->seccomp_text);
	free(p->seccomp_doc);
	memset(p, 0, sizeof(*p));
}

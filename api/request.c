/* The request layer (request.h): JSON in, checked and clamped C structs
 * out, for every protocol. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/base64.h"
#include "../common/jsonget.h"
#include "../common/parse.h"
#include "../rootfs/rootfs.h"
#include "request.h"

const struct api_exec_style API_EXEC_HTTP = {"cmd", "/bin/sh"};
const struct api_exec_style API_EXEC_MCP = {"command", "bash"};

void api_limits_of(struct api_limits *l, const struct cell_spec *spec, double max_timeout_s)
{
	memset(l, 0, sizeof(*l));
	l->max_timeout_s = max_timeout_s;
	l->memory = spec->limits.memory;
	l->output = spec->limits.output;
	l->image = spec->image_name ? spec->image_name : "host";
	l->network = spec->egress != NULL;
}

bool api_bad(struct api_bad *bad, int status, const char *field, const char *fmt, ...)
{
	if (!bad)
		return false;
	bad->status = status;
	snprintf(bad->field, sizeof(bad->field), "%s", field ? field : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(bad->msg, sizeof(bad->msg), fmt, ap);
	va_end(ap);
	/* one line, whatever the client's strings quoted in it hold */
	for (char *c = bad->msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return false;
}

/* ---- typed reads ---- */

cJSON *api_req_object(const char *body, size_t len, bool empty_ok, struct api_bad *bad)
{
	if (len == 0 && empty_ok)
		return cJSON_CreateObject();
	cJSON *j = cJSON_ParseWithLength(body, len);
	if (!j) {
		api_bad(bad, 422, "", "the body is not valid JSON (or nested too deeply)");
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		api_bad(bad, 422, "", "the body must be a JSON object");
		return NULL;
	}
	return j;
}

bool api_req_str(const cJSON *o, const char *k, const char **out, struct api_bad *bad)
{
	return sc_json_opt_str(o, k, out) || api_bad(bad, 422, k, "%s: a string", k);
}

bool api_req_num(const cJSON *o, const char *k, double dflt, double *out, struct api_bad *bad)
{
	return sc_json_opt_num(o, k, dflt, out) || api_bad(bad, 422, k, "%s: a number", k);
}

bool api_req_typed(const cJSON *o, const char *k, int type, const char *what, const cJSON **out,
		   struct api_bad *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return true;
	if (!((v->type & 0xff) & type))
		return api_bad(bad, 422, k, "%s: %s", k, what);
	*out = v;
	return true;
}

/* ---- values ---- */

bool api_cell_path(const char *p, char *out, size_t size)
{
	if (!p || !p[0] || strnlen(p, LANG_MAX_PATH) >= LANG_MAX_PATH)
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		while (*s == '/')
			s++;
	}
	int w = p[0] == '/' ? snprintf(out, size, "%s", p) : snprintf(out, size, "/testbed/%s", p);
	return w > 0 && (size_t)w < size;
}

double api_timeout(const struct api_limits *l, double t, double dflt)
{
	if (!(t > 0))
		t = dflt;
	if (l->max_timeout_s > 0 && t > l->max_timeout_s)
		t = l->max_timeout_s;
	return t;
}

uint64_t api_memory_bytes(const struct api_limits *l, double mb)
{
	if (!(mb > 0))
		return 0;
	uint64_t want = mb >= API_MEMORY_HUGE_MB ? (1ull << 63) : (uint64_t)(mb * 1048576.0);
	if (want < API_MEMORY_MIN)
		want = API_MEMORY_MIN;
	if (l->memory && want > l->memory)
		want = l->memory;
	return want;
}

bool api_image_ok(const struct api_limits *l, const char *image, struct api_bad *bad)
{
	if (!image || !strcmp(image, l->image))
		return true;
	return api_bad(bad, 422, "image", "image: this server makes cells of image '%s' only",
		       l->image);
}

bool api_req_user(const cJSON *o, bool *has, uint32_t *uid, uint32_t *gid, struct api_bad *bad)
{
	const char *s;
	*has = false;
	if (!sc_json_opt_str(o, "user", &s))
		return api_bad(bad, 422, "user", "user: a string \"UID[:GID]\"");
	if (!s)
		return true;
	struct sc_err err = {0};
	if (cell_parse_user(s, uid, gid, &err) < 0 || cell_user_check(*uid, *gid, &err) < 0)
		return api_bad(bad, 422, "user", "user: %s", err.msg);
	*has = true;
	return true;
}

bool api_req_libraries(const cJSON *o, const char *k, const char *libs[LANG_MAX_LIBRARIES],
		       size_t *n, struct api_bad *bad)
{
	const cJSON *list, *v;
	*n = 0;
	if (!api_req_typed(o, k, cJSON_Array, "a list of package names", &list, bad))
		return false;
	cJSON_ArrayForEach(v, list)
	{
		if (*n >= LANG_MAX_LIBRARIES || !cJSON_IsString(v) ||
		    !lang_library_name_ok(v->valuestring))
			return api_bad(bad, 422, k,
				       "%s: at most %d package names such as \"numpy==2.0\"", k,
				       LANG_MAX_LIBRARIES);
		libs[(*n)++] = v->valuestring;
	}
	return true;
}

bool api_file_entry(const cJSON *f, char path[API_CELL_PATH], char **data, size_t *len, char *why,
		    size_t why_size)
{
	*data = NULL;
	if (!api_cell_path(f->string, path, API_CELL_PATH)) {
		snprintf(why, why_size, "files: bad path '%.200s'", f->string ? f->string : "");
		return false;
	}
	if (!cJSON_IsString(f)) {
		snprintf(why, why_size, "files['%.200s']: expected a base64 string", f->string);
		return false;
	}
	if (sc_base64_decode(f->valuestring, strlen(f->valuestring), data, len) < 0) {
		snprintf(why, why_size, "files['%.200s']: %s", f->string,
			 errno == ENOMEM ? "out of memory" : "not base64");
		return false;
	}
	return true;
}

/* ---- requests ---- */

int api_parse_run(const cJSON *j, enum api_run_kind kind, const struct api_limits *l,
		  const struct lang_def *dflt_lang, struct api_run *out, struct api_bad *bad)
{
	memset(out, 0, sizeof(*out));
	lang_run_req_init(&out->run);
	lang_session_req_init(&out->session);
	bool sf = kind == API_RUN_SANDBOXFUSION;
	const char *code, *lang_name, *workdir = NULL;
	const cJSON *fetch = NULL, *clear = NULL, *p;
	double tdflt = sf ? API_SF_TIMEOUT_DEFAULT : API_TIMEOUT_DEFAULT, timeout = tdflt;
	double run_t, compile_t, cdflt;
	const char *libs[LANG_MAX_LIBRARIES];
	size_t nlibs = 0;
	if (!sc_json_opt_str(j, "code", &code) || !code) {
		api_bad(bad, 422, "code", "code: a string is required");
		return -1;
	}
	if (!api_req_str(j, "language", &lang_name, bad) ||
	    !api_req_str(j, "stdin", &out->stdin_s, bad) ||
	    (!sf && !api_req_num(j, "timeout", tdflt, &timeout, bad)) ||
	    !api_req_num(j, "run_timeout", timeout, &run_t, bad))
		return -1;
	run_t = api_timeout(l, run_t, tdflt);
	cdflt = sf ? API_SF_TIMEOUT_DEFAULT
		   : run_t > LANG_DEFAULT_COMPILE_TIMEOUT ? run_t : LANG_DEFAULT_COMPILE_TIMEOUT;
	if (!api_req_num(j, "compile_timeout", cdflt, &compile_t, bad))
		return -1;
	if (sf) {
		if (!api_req_num(j, "memory_limit_MB", -1, &out->memory_mb, bad) ||
		    !api_req_typed(j, "files", cJSON_Object, "an object of base64 strings",
				   &out->files, bad) ||
		    !api_req_typed(j, "fetch_files", cJSON_Array, "a list of paths", &fetch, bad))
			return -1;
	} else if (!api_req_str(j, "workdir", &workdir, bad) ||
		   !api_req_typed(j, "clear_plots", cJSON_True | cJSON_False, "a boolean", &clear,
				  bad) ||
		   !api_req_libraries(j, "libraries", libs, &nlibs, bad)) {
		return -1;
	}
	const struct lang_def *lg = lang_name ? lang_find(lang_name) : dflt_lang;
	if (!lg && !lang_name)
		lg = lang_find("python");
	if (!lg) {
		api_bad(bad, 422, "language", "language: unknown language '%.64s'", lang_name);
		return -1;
	}
	if (kind == API_RUN_SESSION && strcmp(lg->name, "python") != 0) {
		api_bad(bad, 422, "language",
			"language: sessions keep state for python only (%.32s: use /run)", lg->name);
		return -1;
	}
	size_t code_len = strlen(code);
	/* (a larger /run_code is SandboxFusion's SandboxError, from lang) */
	if (!sf && code_len > LANG_MAX_SOURCE) {
		api_bad(bad, 413, "code", "code: at most %u bytes", (unsigned)LANG_MAX_SOURCE);
		return -1;
	}
	if (workdir && !api_cell_path(workdir, out->workdir, sizeof(out->workdir))) {
		api_bad(bad, 422, "workdir", "workdir: a cell path without '..'");
		return -1;
	}
	cJSON_ArrayForEach(p, fetch)
	{
		if (!cJSON_IsString(p) || out->run.nfetch >= LANG_MAX_FETCH) {
			api_bad(bad, 422, "fetch_files", "fetch_files: at most %d strings",
				LANG_MAX_FETCH);
			return -1;
		}
		out->run.fetch[out->run.nfetch++] = p->valuestring;
	}
	out->run.fetch_files_only = true; /* SandboxFusion leaves those out */
	out->lang = lg;
	out->stdin_len = out->stdin_s ? strlen(out->stdin_s) : 0;
	struct lang_run_req *r = &out->run;
	r->lang = lg;
	r->source = code;
	r->source_len = code_len;
	r->run_timeout_s = run_t;
	r->compile_timeout_s = api_timeout(l, compile_t, cdflt);
	r->output_limit = l->output;
	r->workdir = out->workdir[0] ? out->workdir : NULL;
	memcpy(r->libraries, libs, nlibs * sizeof(*libs));
	r->nlibraries = nlibs;
	r->has_network = l->network;
	struct lang_session_req *s = &out->session;
	s->source = code;
	s->source_len = code_len;
	s->timeout_s = run_t;
	s->clear_plots = cJSON_IsTrue(clear);
	s->output_limit = l->output;
	memcpy(s->libraries, libs, nlibs * sizeof(*libs));
	s->nlibraries = nlibs;
	return 0;
}

/* env: {"K": "V"} into x->env as "K=V" strings (x->envbuf, freed by
 * api_exec_free however this ends). */
static bool parse_env(const cJSON *j, struct api_exec *x, struct api_bad *bad)
{
	const cJSON *jenv, *v;
	if (!api_req_typed(j, "env", cJSON_Object, "an object of strings", &jenv, bad))
		return false;
	cJSON_ArrayForEach(v, jenv)
	{
		if (!cJSON_IsString(v) || x->nenv >= CELL_MAX_ENV)
			return api_bad(bad, 422, "env", "env: at most %d strings", CELL_MAX_ENV);
		char *kv;
		if (asprintf(&kv, "%s=%s", v->string, v->valuestring) < 0)
			return api_bad(bad, 500, "env", "out of memory");
		x->env[x->nenv] = x->envbuf[x->nenv] = kv;
		x->nenv++;
		/* (a name with '=' in it would set another variable) */
		if (!sc_valid_env(kv) || strchr(v->string, '='))
			return api_bad(bad, 422, "env", "env: bad variable '%.64s'", v->string);
	}
	x->env[x->nenv] = NULL;
	return true;
}

/* argv: a list of strings, or the shell command of style's member. */
static bool parse_argv(const cJSON *j, const struct api_exec_style *style, struct api_exec *x,
		       struct api_bad *bad)
{
	const char *key = style->shell_key, *shell_cmd;
	const cJSON *jargv = cJSON_GetObjectItemCaseSensitive(j, "argv");
	size_t n = 0;
	if (!api_req_str(j, key, &shell_cmd, bad))
		return false;
	if (shell_cmd && !jargv) {
		if (strlen(shell_cmd) > LANG_MAX_SOURCE)
			return api_bad(bad, 413, key, "%s: at most %u bytes (write a script)", key,
				       (unsigned)LANG_MAX_SOURCE);
		x->argv[n++] = (char *)style->shell;
		x->argv[n++] = "-c";
		x->argv[n++] = (char *)shell_cmd;
	} else if (cJSON_IsArray(jargv) && !shell_cmd) {
		const cJSON *v;
		cJSON_ArrayForEach(v, jargv)
		{
			if (!cJSON_IsString(v) || n >= API_MAX_ARGV)
				return api_bad(bad, 422, "argv", "argv: at most %d strings",
					       API_MAX_ARGV);
			x->argv[n++] = v->valuestring;
		}
	}
	if (!n)
		return api_bad(bad, 422, key,
			       "give argv (a list of strings) or %s (a shell command)", key);
	x->argv[n] = NULL;
	return true;
}

int api_parse_exec(const cJSON *j, const struct api_exec_style *style, const struct api_limits *l,
		   struct api_exec *out, struct api_bad *bad)
{
	memset(out, 0, sizeof(*out));
	const char *cwd;
	double timeout;
	if (!api_req_str(j, "cwd", &cwd, bad) || !api_req_str(j, "stdin", &out->stdin_s, bad) ||
	    !api_req_num(j, "timeout", API_TIMEOUT_DEFAULT, &timeout, bad) ||
	    !parse_argv(j, style, out, bad))
		return -1;
	if (cwd && !api_cell_path(cwd, out->cwd, sizeof(out->cwd))) {
		api_bad(bad, 422, "cwd", "cwd: a path without '..'");
		return -1;
	}
	if (!parse_env(j, out, bad) ||
	    !api_req_user(j, &out->req.has_user, &out->req.uid, &out->req.gid, bad)) {
		api_exec_free(out);
		return -1;
	}
	out->stdin_len = out->stdin_s ? strlen(out->stdin_s) : 0;
	out->req.argv = out->argv;
	out->req.env = out->nenv ? out->env : NULL;
	out->req.cwd = cwd ? out->cwd : NULL;
	out->req.timeout_s = api_timeout(l, timeout, API_TIMEOUT_DEFAULT);
	out->req.output_limit = l->output;
	out->req.stdin_fd = out->req.stdout_fd = out->req.stderr_fd = -1;
	return 0;
}

void api_exec_free(struct api_exec *x)
{
	for (size_t i = 0; i < x->nenv; i++)
		free(x->envbuf[i]);
	x->nenv = 0;
}

static bool parse_volume_mount(const cJSON *m, struct api_volume_mount *out, struct api_bad *bad)
{
	const char *name, *path;
	const cJSON *ro;
	if (!cJSON_IsObject(m))
		return api_bad(bad, 422, "volume_mounts", "volume_mounts: a list of objects");
	if (!api_req_str(m, "name", &name, bad) || !api_req_str(m, "path", &path, bad) ||
	    !api_req_typed(m, "read_only", cJSON_True | cJSON_False, "a boolean", &ro, bad))
		return false;
	if (!name || !sc_valid_name(name))
		return api_bad(bad, 422, "volume_mounts",
			       "volume_mounts: name: a volume name (letters, digits, '_', '.', '-')");
	if (!path || path[0] != '/' || !api_cell_path(path, out->path, sizeof(out->path)))
		return api_bad(bad, 422, "volume_mounts",
			       "volume_mounts: path: an absolute cell path without '..'");
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->read_only = ro && cJSON_IsTrue(ro);
	return true;
}

static bool parse_volume_mounts(const cJSON *j, struct api_cell_new *out, struct api_bad *bad)
{
	const cJSON *list;
	if (!api_req_typed(j, "volume_mounts", cJSON_Array, "a list", &list, bad))
		return false;
	if (!list)
		return true;
	if (cJSON_GetArraySize(list) > CELL_MAX_VOLUMES)
		return api_bad(bad, 422, "volume_mounts", "volume_mounts: at most %d",
			       CELL_MAX_VOLUMES);
	const cJSON *m;
	cJSON_ArrayForEach(m, list)
	{
		if (!parse_volume_mount(m, &out->volumes[out->nvolumes], bad))
			return false;
		out->nvolumes++;
	}
	return true;
}

bool api_image_choice(const struct api_limits *l, const char *image,
		      char out[API_IMAGE_NAME_MAX + 1], struct api_bad *bad)
{
	out[0] = '\0';
	if (!l->other_images || !image || !strcmp(image, l->image))
		return api_image_ok(l, image, bad);
	size_t n = strlen(image);
	if (n == 0 || n > API_IMAGE_NAME_MAX ||
	    (!rootfs_is_reference(image) && !sc_valid_name(image)))
		return api_bad(bad, 422, "image",
			       "image: a stored image's name or a registry reference "
			       "([HOST/]REPO[:TAG|@sha256:...]), at most %d bytes",
			       API_IMAGE_NAME_MAX);
	memcpy(out, image, n + 1);
	return true;
}

int api_parse_cell_new(const cJSON *j, const struct api_limits *l, double idle_max,
		       struct api_cell_new *out, struct api_bad *bad)
{
	memset(out, 0, sizeof(*out));
	const char *image;
	if (!api_req_str(j, "image", &image, bad) ||
	    !api_req_num(j, "memory_limit_MB", -1, &out->memory_mb, bad) ||
	    !api_req_num(j, "idle_timeout", idle_max, &out->idle_s, bad) ||
	    !api_image_choice(l, image, out->image, bad) ||
	    !api_req_user(j, &out->has_user, &out->uid, &out->gid, bad) ||
	    !parse_volume_mounts(j, out, bad))
		return -1;
	if (!(out->idle_s > 0) || out->idle_s > idle_max)
		out->idle_s = idle_max;
	return 0;
}

int api_parse_fork(const cJSON *j, unsigned *count, bool *replay, struct api_bad *bad)
{
	double n;
	const cJSON *r;
	if (!api_req_typed(j, "replay_sessions", cJSON_True | cJSON_False, "a boolean", &r, bad))
		return -1;
	*replay = r && cJSON_IsTrue(r);
	if (!api_req_num(j, "count", 1, &n, bad))
		return -1;
	if (!(n >= 1 && n <= API_FORK_MAX) || n != (double)(unsigned)n) {
		api_bad(bad, 422, "count", "count: an integer from 1 to %d", API_FORK_MAX);
		return -1;
	}
	*count = (unsigned)n;
	return 0;
}

bool api_tag_ok(const char *s, bool required, char tag[64], struct api_bad *bad)
{
	tag[0] = '\0';
	if (!s)
		return !required || api_bad(bad, 422, "tag", "tag: required");
	if (!sc_valid_name(s))
		return api_bad(bad, 422, "tag", "tag: letters, digits, '.', '_' and '-' (1 to 63, "
						"the first a letter or digit)");
	snprintf(tag, 64, "%s", s);
	return true;
}

int api_parse_tag(const cJSON *j, bool required, char tag[64], struct api_bad *bad)
{
	const char *s;
	return api_req_str(j, "tag", &s, bad) && api_tag_ok(s, required, tag, bad) ? 0 : -1;
}

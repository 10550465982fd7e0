/* The request dispatcher: routes, authentication, the cell table. No HTTP
 * here: a transport hands in a struct api_request and sends the response.
 *
 * Cells come from one pool of the configured spec (a threaded process
 * never calls cell_create: the pool's single-threaded workers do). A cell
 * serves one /run_code request and is then released (destroyed in the
 * background, a fresh one takes its place); a cell of POST /cells lives
 * until DELETE, idleness or the server's end. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dirent.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/tarwrite.h"
#include "../rootfs/rootfs.h"
#include "api.h"

#define API_ID_LEN 16
#define API_MAX_ARGV 256

struct api_cell {
	char id[API_ID_LEN + 1];
	char name[64];
	double created, last_used;
	double idle_s;
	unsigned busy; /* exec/file requests on it now */
	struct cell *handle; /* kept from the create; a request uses a copy (cell_dup) */
	bool has_user; /* "user" at create: its execs' default user */
	uint32_t uid, gid;
	/* /code's session: known here, not from a file the cell could forge;
	 * installed once, by one request while the others on the cell wait */
	bool session, session_starting;
};

/* A pool cell that a /run_code holds: a second handle, for api_cancel. */
struct run_hold {
	struct cell *dup;   /* NULL: handed to the pool by api_cancel */
	struct run_hold *prev, *next;
	bool linked;
};

struct api {
	struct api_config cfg;
	char *token;
	struct cell_pool *pool;
	struct cell_spec pool_spec;  /* cfg.spec, and the cells start with lang's files */
	struct cell_seed_file seeds[LANG_SEED_FILES];
	struct lang_prep_cache prep; /* the pool workers' (each fills its own copy) */
	pthread_mutex_t mu; /* guards cells, ncells */
	pthread_cond_t session_cv; /* with mu: a cell's session_starting ended */
	struct api_cell *cells;
	size_t ncells;
	struct run_hold *holds;  /* with mu: pool cells /run_code holds */
	bool cancelled;          /* with mu: api_cancel was called */
	int stop_pipe[2];        /* every exec's cancel fd ([0]); api_cancel closes [1] */
	atomic_size_t in_flight;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void api_config_init(struct api_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->pool = API_DEFAULT_POOL;
	cfg->max_concurrency = API_DEFAULT_MAX_CONCURRENCY;
	cfg->max_cells = API_DEFAULT_MAX_CELLS;
	cfg->cell_idle_s = API_DEFAULT_CELL_IDLE;
	cfg->max_timeout_s = API_DEFAULT_MAX_TIMEOUT;
	cfg->max_body = API_DEFAULT_MAX_BODY;
}

int api_new(const struct api_config *cfg, struct api **out, struct sc_err *err)
{
	if (!cfg->spec)
		return sc_fail(err, EINVAL, "api: no cell spec");
	if (!cfg->max_concurrency || !cfg->max_cells || !cfg->max_body)
		return sc_fail(err, EINVAL, "api: limits must be at least 1");
	struct api *a = calloc(1, sizeof(*a));
	if (!a)
		return sc_fail(err, ENOMEM, "api");
	a->cfg = *cfg;
	if (cfg->token && !(a->token = strdup(cfg->token))) {
		free(a);
		return sc_fail(err, ENOMEM, "api");
	}
	a->cfg.token = a->token;
	a->cells = calloc(cfg->max_cells, sizeof(*a->cells));
	if (!a->cells) {
		free(a->token);
		free(a);
		return sc_fail(err, ENOMEM, "api");
	}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->session_cv, NULL);
	if (pipe2(a->stop_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		a->stop_pipe[0] = a->stop_pipe[1] = -1;
		api_free(a);
		return sc_fail(err, e, "api: pipe");
	}
	size_t workers = cfg->pool < 4 ? cfg->pool : 4;
	a->pool_spec = *cfg->spec;
	a->pool_spec.seed_files = a->seeds;
	a->pool_spec.nseed_files = lang_seed_files(a->seeds);
	a->prep.seeded = true;
	if (cell_pool_new(&a->pool_spec, cfg->pool, workers ? workers : 1, lang_prepare_cell, &a->prep,
			  &a->pool, err) < 0) {
		api_free(a);
		return sc_err_wrap(err, "the cell pool");
	}
	*out = a;
	return 0;
}

void api_free(struct api *a)
{
	if (!a)
		return;
	if (a->pool) {
		/* Each table cell goes back to be destroyed; freeing the pool
		 * waits until its workers removed everything they made. */
		for (size_t i = 0; i < a->ncells; i++)
			if (a->cells[i].handle)
				cell_pool_release(a->pool, a->cells[i].handle);
		cell_pool_free(a->pool);
	}
	lang_prep_cache_free(&a->prep);
	sc_closep(&a->stop_pipe[0]);
	sc_closep(&a->stop_pipe[1]);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->session_cv);
	free(a->cells);
	if (a->token)
		explicit_bzero(a->token, strlen(a->token));
	free(a->token);
	free(a);
}

const struct api_config *api_get_config(const struct api *a)
{
	return &a->cfg;
}

size_t api_in_flight(const struct api *a)
{
	return atomic_load(&a->in_flight);
}

bool api_enter(struct api *a)
{
	size_t n = atomic_fetch_add(&a->in_flight, 1);
	if (n >= a->cfg.max_concurrency) {
		atomic_fetch_sub(&a->in_flight, 1);
		return false;
	}
	return true;
}

void api_leave(struct api *a)
{
	atomic_fetch_sub(&a->in_flight, 1);
}

static struct cell *drop_cell_locked(struct api *a, size_t i);

void api_cancel(struct api *a)
{
	pthread_mutex_lock(&a->mu);
	a->cancelled = true;
	sc_closep(&a->stop_pipe[1]); /* every exec's cancel fd reads EOF */
	/* (a release is one message to the pool's workers: fine under mu) */
	for (struct run_hold *h = a->holds; h; h = h->next)
		if (h->dup) {
			cell_pool_release(a->pool, h->dup);
			h->dup = NULL;
		}
	for (size_t i = a->ncells; i-- > 0;)
		if (a->cells[i].id[0]) /* not a slot a create has reserved */
			cell_pool_release(a->pool, drop_cell_locked(a, i));
	pthread_mutex_unlock(&a->mu);
}

bool api_token_ok(const struct api *a, const char *given)
{
	if (!a->token)
		return true;
	if (!given)
		return false;
	/* Every byte of the token is looked at whatever was given. */
	size_t tl = strlen(a->token), gl = strnlen(given, 4096);
	unsigned char diff = tl != gl;
	for (size_t i = 0; i < tl; i++)
		diff |= (unsigned char)a->token[i] ^ (unsigned char)(i < gl ? given[i] : 0);
	return diff == 0;
}

/* ---- responses ---- */

void api_response_free(struct api_response *resp)
{
	free(resp->body);
	resp->body = NULL;
	if (resp->stream && resp->stream_free)
		resp->stream_free(resp->stream_ctx);
	resp->stream = NULL;
}

static void set_body(struct api_response *resp, int status, const char *type, char *body,
		     size_t len)
{
	free(resp->body);
	resp->status = status;
	resp->content_type = type;
	resp->body = body;
	resp->body_len = len;
}

static void add_header(struct api_response *resp, const char *name, const char *value)
{
	if (resp->nheaders < SC_ARRAY_LEN(resp->headers))
		resp->headers[resp->nheaders++] = (struct api_header){name, value};
}

void api_response_error(struct api_response *resp, int status, const char *detail)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		set_body(resp, status, "application/json", NULL, 0);
		return;
	}
	fputs("{\"detail\":", f);
	api_json_string(f, detail, strlen(detail));
	fputs("}\n", f);
	fclose(f);
	set_body(resp, status, "application/json", buf, len);
	if (status == 503 || status == 504) {
		add_header(resp, "Retry-After", "1");
	} else if (status == 401) {
		add_header(resp, "WWW-Authenticate", "Bearer");
	}
}

static void errorf(struct api_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void errorf(struct api_response *resp, int status, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_response_error(resp, status, msg);
}

/* A JSON body built with stdio. */
struct jbuf {
	char *buf;
	size_t len;
	FILE *f;
};

static FILE *jopen(struct jbuf *j)
{
	j->buf = NULL;
	j->len = 0;
	j->f = open_memstream(&j->buf, &j->len);
	return j->f;
}

static void jsend(struct jbuf *j, struct api_response *resp, int status)
{
	fputc('\n', j->f);
	if (fclose(j->f) != 0) {
		free(j->buf);
		api_response_error(resp, 500, "out of memory");
		return;
	}
	set_body(resp, status, "application/json", j->buf, j->len);
}

/* ---- request parsing ---- */

static cJSON *parse_body(const struct api_request *req, struct api_response *resp, bool empty_ok)
{
	if (req->body_len == 0 && empty_ok)
		return cJSON_CreateObject();
	cJSON *j = cJSON_ParseWithLength(req->body, req->body_len);
	if (!j) {
		api_response_error(resp, 422, "the body is not valid JSON (or nested too deeply)");
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		api_response_error(resp, 422, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

/* A field as a number, with a default for absent or null; false: wrong type. */
static bool get_number(const cJSON *o, const char *key, double dflt, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v || cJSON_IsNull(v)) {
		*out = dflt;
		return true;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

/* A field as a string or absent/null (*out NULL); false: wrong type. */
static bool get_string(const cJSON *o, const char *key, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsString(v))
		return false;
	*out = v->valuestring;
	return true;
}

/* "user": "UID[:GID]" (numbers; GID defaults to UID), which the server's
 * cells must map. Absent or null: none. false after an error response. */
static bool get_user(const cJSON *o, bool *has, uint32_t *uid, uint32_t *gid,
		     struct api_response *resp)
{
	const char *s;
	*has = false;
	if (!get_string(o, "user", &s)) {
		api_response_error(resp, 422, "user: a string \"UID[:GID]\"");
		return false;
	}
	if (!s)
		return true;
	struct sc_err err = {0};
	if (cell_parse_user(s, uid, gid, &err) < 0 || cell_user_check(*uid, *gid, &err) < 0) {
		errorf(resp, 422, "user: %s", err.msg);
		return false;
	}
	*has = true;
	return true;
}

/* A cell path given by a client: absolute, or relative to /testbed; no
 * ".." component, no NUL, bounded. Filled into out, else false. */
static bool cell_path(const char *p, char *out, size_t size)
{
	if (!p || !p[0] || strnlen(p, LANG_MAX_PATH) >= LANG_MAX_PATH)
		return false;
	for (const char *s = p; *s;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		while (*s == '/')
			s++;
	}
	int w = p[0] == '/' ? snprintf(out, size, "%s", p) : snprintf(out, size, "/testbed/%s", p);
	return w > 0 && (size_t)w < size;
}

static double clamp_timeout(const struct api *a, double t, double dflt)
{
	if (!(t > 0))
		t = dflt;
	if (t > a->cfg.max_timeout_s)
		t = a->cfg.max_timeout_s;
	return t;
}

/* The bytes of s in a sealed-off memfd at offset 0 (a program's stdin). */
static int memfd_of(const char *s, size_t len)
{
	int fd = memfd_create("stdin", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (sc_write_all(fd, s, len) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decode base64 (padding optional, whitespace skipped); malloc'd. */
static char *b64_decode(const char *s, size_t *out_len)
{
	size_t n = strlen(s);
	char *out = malloc(n / 4 * 3 + 4);
	if (!out)
		return NULL;
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '=')
			break;
		if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
			continue;
		int v = b64_value(c);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	*out_len = o;
	return out;
}

/* ---- /run_code ---- */

/* 200 with the result as JSON (500 when it cannot be held). */
static void send_lang_result(struct api *a, struct api_response *resp, const struct lang_result *res,
			     bool session)
{
	struct jbuf jb;
	if (!jopen(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	api_json_lang_result(jb.f, res, a->cfg.pod_name, session);
	jsend(&jb, resp, 200);
}

/* The cell's egress log at its end, for the decisions a command makes (-1:
 * the server's cells have no allowlist). */
static int net_log_open(const struct api *a, const struct cell *c)
{
	return a->cfg.spec->egress ? cell_egress_log_open(c, true, NULL) : -1;
}

/* The same with the egress decisions of the run ("network", as `run
 * --json` has it) when the server's cells have an allowlist. */
static void send_lang_result_net(struct api *a, struct api_response *resp,
				 const struct lang_result *res, const struct net_summary *net)
{
	char nj[4096];
	char *obj = NULL;
	size_t olen = 0;
	FILE *f = net && net_summary_json(net, nj, sizeof(nj)) > 0 ? open_memstream(&obj, &olen) : NULL;
	if (!f) {
		send_lang_result(a, resp, res, false);
		return;
	}
	api_json_lang_result(f, res, a->cfg.pod_name, false);
	struct jbuf jb;
	if (fclose(f) != 0 || olen < 2 || !jopen(&jb)) {
		free(obj);
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fwrite(obj, 1, olen - 1, jb.f); /* without its '}' */
	fprintf(jb.f, ",\"network\":%s}", nj);
	free(obj);
	jsend(&jb, resp, 200);
}

/* Hold c (a pool cell of a /run_code) where api_cancel finds it; false:
 * the server is stopping, do not run. */
static bool run_hold_begin(struct api *a, struct cell *c, struct run_hold *h)
{
	struct sc_err err;
	if (cell_dup(c, &h->dup, &err) < 0)
		h->dup = NULL; /* then it cannot be cancelled: it ends at its timeout */
	pthread_mutex_lock(&a->mu);
	bool ok = !a->cancelled;
	if (ok) {
		h->prev = NULL;
		h->next = a->holds;
		if (a->holds)
			a->holds->prev = h;
		a->holds = h;
	}
	pthread_mutex_unlock(&a->mu);
	if (!ok && h->dup) {
		cell_close(h->dup);
		h->dup = NULL;
	}
	h->linked = ok;
	return ok;
}

static void run_hold_end(struct api *a, struct run_hold *h)
{
	if (!h->linked)
		return;
	pthread_mutex_lock(&a->mu);
	if (h->prev)
		h->prev->next = h->next;
	else
		a->holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	struct cell *dup = h->dup;
	h->dup = NULL;
	pthread_mutex_unlock(&a->mu);
	if (dup)
		cell_close(dup);
}

static void sandbox_error(struct api *a, struct api_response *resp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void sandbox_error(struct api *a, struct api_response *resp, const char *fmt, ...)
{
	struct lang_result r;
	memset(&r, 0, sizeof(r));
	r.status = LANG_SANDBOX_ERROR;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	send_lang_result(a, resp, &r, false);
}

/* memory_limit_MB on a ready cell: lowered (or raised up to the server's
 * --memory) through its cgroup. */
static int apply_memory(struct api *a, struct cell *c, double mb, char *why, size_t why_size)
{
	if (!(mb > 0))
		return 0;
	uint64_t want = mb >= (double)(1ULL << 43) ? (1ULL << 63) : (uint64_t)(mb * 1048576.0);
	uint64_t cap = a->cfg.spec->limits.memory;
	if (want < (1u << 20))
		want = 1u << 20;
	if (cap && want > cap)
		want = cap;
	struct sc_err err = {0};
	if (cell_set_memory_limit(c, want, &err) == 0)
		return 0;
	if (cap && cap <= want)
		return 0; /* the cell's own limit is already this tight */
	snprintf(why, why_size, "memory_limit_MB cannot be enforced: %.400s", err.msg);
	return -1;
}

static int write_files(struct cell *c, const cJSON *files, char *why, size_t why_size)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, files)
	{
		char path[LANG_MAX_PATH + 16];
		if (!cell_path(f->string, path, sizeof(path))) {
			snprintf(why, why_size, "files: bad path '%.200s'", f->string ? f->string : "");
			return -1;
		}
		if (!cJSON_IsString(f)) {
			snprintf(why, why_size, "files['%.200s']: expected a base64 string", f->string);
			return -1;
		}
		size_t len;
		char *data = b64_decode(f->valuestring, &len);
		if (!data) {
			snprintf(why, why_size, "files['%.200s']: not base64", f->string);
			return -1;
		}
		struct sc_err err = {0};
		int rc = cell_write_file(c, path, data, len, CELL_FILE_CREATE, 30, &err);
		if (rc < 0 && err.errnum == EEXIST)
			rc = cell_write_file(c, path, data, len, 0, 30, &err);
		free(data);
		if (rc < 0) {
			snprintf(why, why_size, "files['%.200s']: %.250s", f->string, err.msg);
			return -1;
		}
	}
	return 0;
}

static void run_code(struct api *a, const struct api_request *req, struct api_response *resp)
{
	cJSON *j = parse_body(req, resp, false);
	if (!j)
		return;
	const char *code, *lang_name, *stdin_s;
	double compile_t, run_t, mem_mb;
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files");
	const cJSON *fetch = cJSON_GetObjectItemCaseSensitive(j, "fetch_files");
	if (!get_string(j, "code", &code) || !code) {
		api_response_error(resp, 422, "code: a string is required");
		goto out;
	}
	if (!get_string(j, "language", &lang_name) || !get_string(j, "stdin", &stdin_s) ||
	    !get_number(j, "compile_timeout", 10, &compile_t) ||
	    !get_number(j, "run_timeout", 10, &run_t) ||
	    !get_number(j, "memory_limit_MB", -1, &mem_mb) ||
	    (files && !cJSON_IsNull(files) && !cJSON_IsObject(files)) ||
	    (fetch && !cJSON_IsNull(fetch) && !cJSON_IsArray(fetch))) {
		api_response_error(resp, 422,
				   "expected language, stdin: strings; compile_timeout, run_timeout, "
				   "memory_limit_MB: numbers; files: an object; fetch_files: a list");
		goto out;
	}
	const struct lang_def *l = lang_find(lang_name ? lang_name : "python");
	if (!l) {
		errorf(resp, 422, "language: unknown language '%.64s'", lang_name);
		goto out;
	}
	struct lang_run_req lr;
	lang_run_req_init(&lr);
	lr.lang = l;
	lr.source = code;
	lr.source_len = strlen(code);
	lr.compile_timeout_s = clamp_timeout(a, compile_t, 10);
	lr.run_timeout_s = clamp_timeout(a, run_t, 10);
	lr.output_limit = a->cfg.spec->limits.output;
	if (fetch && cJSON_IsArray(fetch)) {
		const cJSON *p;
		cJSON_ArrayForEach(p, fetch)
		{
			if (!cJSON_IsString(p) || lr.nfetch >= LANG_MAX_FETCH) {
				errorf(resp, 422, "fetch_files: at most %d strings", LANG_MAX_FETCH);
				goto out;
			}
			lr.fetch[lr.nfetch++] = p->valuestring;
		}
	}
	int stdin_fd = -1;
	if (stdin_s && (stdin_fd = memfd_of(stdin_s, strlen(stdin_s))) < 0) {
		api_response_error(resp, 500, "cannot hold stdin");
		goto out;
	}
	lr.stdin_fd = stdin_fd;

	struct cell *c;
	struct sc_err err = {0};
	if (cell_pool_acquire(a->pool, &c, &err) < 0) {
		if (stdin_fd >= 0)
			close(stdin_fd);
		sc_log(&a->cfg.log, SC_LOG_WARN, "run_code: %s", err.msg);
		errorf(resp, 503, "no cell ready: %s", err.msg);
		goto out;
	}
	lr.prepared = true; /* the pool's cells start with the support files (seeded) */
	char why[SC_ERR_MAX];
	struct run_hold hold = {0};
	if (!run_hold_begin(a, c, &hold)) {
		api_response_error(resp, 503, "the server is stopping");
	} else if (apply_memory(a, c, mem_mb, why, sizeof(why)) < 0 ||
		   (files && cJSON_IsObject(files) && write_files(c, files, why, sizeof(why)) < 0)) {
		sandbox_error(a, resp, "%s", why);
	} else {
		struct lang_result res;
		_cleanup_fd_ int net_log = net_log_open(a, c);
		if (lang_run_in(c, &lr, &res, &err) < 0) {
			sandbox_error(a, resp, "%s", err.msg);
		} else {
			_cleanup_free_ struct net_summary *net = api_net_summary_since(net_log);
			send_lang_result_net(a, resp, &res, net);
			lang_result_free(&res);
		}
	}
	run_hold_end(a, &hold);
	cell_pool_release(a->pool, c); /* never reused: destroyed, replaced */
	if (stdin_fd >= 0)
		close(stdin_fd);
out:
	cJSON_Delete(j);
}

/* ---- /cells ---- */

static struct api_cell *find_cell(struct api *a, const char *id)
{
	for (size_t i = 0; i < a->ncells; i++)
		if (!strcmp(a->cells[i].id, id))
			return &a->cells[i];
	return NULL;
}

static bool valid_id(const char *s, size_t n)
{
	if (n != API_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static void cell_json(FILE *f, const struct api_cell *c, double now)
{
	fputs("{\"id\":", f);
	api_json_string(f, c->id, strlen(c->id));
	fprintf(f, ",\"age_s\":%.3f,\"idle_s\":%.3f,\"idle_timeout_s\":%.3f,\"busy\":%u}",
		now - c->created, c->busy ? 0.0 : now - c->last_used, c->idle_s, c->busy);
}

static void cells_create(struct api *a, const struct api_request *req, struct api_response *resp)
{
	cJSON *j = parse_body(req, resp, true);
	if (!j)
		return;
	const char *image;
	double mem_mb, idle;
	if (!get_string(j, "image", &image) || !get_number(j, "memory_limit_MB", -1, &mem_mb) ||
	    !get_number(j, "idle_timeout", a->cfg.cell_idle_s, &idle)) {
		api_response_error(resp, 422, "expected image: a string; memory_limit_MB, idle_timeout: numbers");
		goto out;
	}
	const char *mine = a->cfg.spec->image_name ? a->cfg.spec->image_name : "host";
	if (image && strcmp(image, mine) != 0) {
		errorf(resp, 422, "image: this server makes cells of image '%s' only", mine);
		goto out;
	}
	bool has_user;
	uint32_t uid = 0, gid = 0;
	if (!get_user(j, &has_user, &uid, &gid, resp))
		goto out;
	if (!(idle > 0) || idle > a->cfg.cell_idle_s)
		idle = a->cfg.cell_idle_s;
	pthread_mutex_lock(&a->mu);
	bool full = a->ncells >= a->cfg.max_cells;
	if (!full)
		a->ncells++; /* the slot is ours; filled below */
	pthread_mutex_unlock(&a->mu);
	if (full) {
		errorf(resp, 429, "at most %zu cells at once (DELETE one)", a->cfg.max_cells);
		goto out;
	}
	struct api_cell nc = {0};
	unsigned char rnd[API_ID_LEN / 2];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		api_response_error(resp, 500, "getrandom failed");
		goto undo;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(nc.id + 2 * i, 3, "%02x", rnd[i]);
	struct cell *c;
	struct sc_err err = {0};
	if (cell_pool_acquire(a->pool, &c, &err) < 0) {
		errorf(resp, 503, "no cell ready: %s", err.msg);
		goto undo;
	}
	char why[SC_ERR_MAX];
	if (apply_memory(a, c, mem_mb, why, sizeof(why)) < 0) {
		cell_pool_release(a->pool, c);
		api_response_error(resp, 422, why);
		goto undo;
	}
	snprintf(nc.name, sizeof(nc.name), "%s", cell_name(c));
	nc.handle = c;
	nc.created = nc.last_used = now_s();
	nc.idle_s = idle;
	nc.has_user = has_user;
	nc.uid = uid;
	nc.gid = gid;
	pthread_mutex_lock(&a->mu);
	/* place the cell in a reserved (empty) slot */
	size_t slot = a->ncells - 1;
	for (size_t i = 0; i < a->ncells; i++)
		if (!a->cells[i].id[0]) {
			slot = i;
			break;
		}
	a->cells[slot] = nc;
	pthread_mutex_unlock(&a->mu);
	struct jbuf jb;
	if (!jopen(&jb)) {
		api_response_error(resp, 500, "out of memory");
		goto out;
	}
	cell_json(jb.f, &nc, nc.created);
	jsend(&jb, resp, 201);
	goto out;
undo:
	pthread_mutex_lock(&a->mu);
	/* give the reserved slot back: the last empty one goes */
	for (size_t i = a->ncells; i-- > 0;)
		if (!a->cells[i].id[0]) {
			a->cells[i] = a->cells[a->ncells - 1];
			memset(&a->cells[a->ncells - 1], 0, sizeof(a->cells[0]));
			break;
		}
	a->ncells--;
	pthread_mutex_unlock(&a->mu);
out:
	cJSON_Delete(j);
}

static void cells_list(struct api *a, struct api_response *resp)
{
	struct jbuf jb;
	if (!jopen(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	double now = now_s();
	fputs("{\"cells\":[", jb.f);
	pthread_mutex_lock(&a->mu);
	size_t k = 0;
	for (size_t i = 0; i < a->ncells; i++) {
		if (!a->cells[i].id[0])
			continue;
		if (k++)
			fputc(',', jb.f);
		cell_json(jb.f, &a->cells[i], now);
	}
	pthread_mutex_unlock(&a->mu);
	fputs("]}", jb.f);
	jsend(&jb, resp, 200);
}

/* Drop entry i (under mu): its handle, for cell_pool_release once mu is
 * let go (the pool's worker removes the cell, dead or alive). */
static struct cell *drop_cell_locked(struct api *a, size_t i)
{
	struct cell *c = a->cells[i].handle;
	a->cells[i] = a->cells[a->ncells - 1];
	memset(&a->cells[a->ncells - 1], 0, sizeof(a->cells[0]));
	a->ncells--;
	return c;
}

static void cells_delete(struct api *a, const char *id, struct api_response *resp)
{
	struct cell *c = NULL;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->ncells; i++)
		if (a->cells[i].id[0] && !strcmp(a->cells[i].id, id)) {
			c = drop_cell_locked(a, i);
			break;
		}
	pthread_mutex_unlock(&a->mu);
	if (!c) {
		api_response_error(resp, 404, "no such cell");
		return;
	}
	cell_pool_release(a->pool, c);
	struct jbuf jb;
	if (!jopen(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputs("{\"id\":", jb.f);
	api_json_string(jb.f, id, strlen(id));
	fputs(",\"deleted\":true}", jb.f);
	jsend(&jb, resp, 200);
}

/* Mark the cell busy and give the request a handle of its own, a copy of
 * the one kept since the create (cells serve many connections at once;
 * one handle per thread): no file is read on the way to the cell. */
static int cell_begin(struct api *a, const char *id, struct cell **out, struct api_response *resp)
{
	struct sc_err err = {0};
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = find_cell(a, id);
	bool found = e != NULL, alive = found && cell_is_alive(e->handle);
	int rc = alive ? cell_dup(e->handle, out, &err) : -1;
	if (rc == 0)
		e->busy++;
	pthread_mutex_unlock(&a->mu);
	if (!found)
		api_response_error(resp, 404, "no such cell");
	else if (!alive)
		api_response_error(resp, 410, "the cell is gone (its init died): DELETE it");
	else if (rc < 0)
		errorf(resp, 500, "%s", err.msg);
	return rc;
}

static void cell_end(struct api *a, const char *id, struct cell *c)
{
	cell_close(c);
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = find_cell(a, id);
	if (e) {
		if (e->busy)
			e->busy--;
		e->last_used = now_s();
	}
	pthread_mutex_unlock(&a->mu);
}

/* An exec that failed: stopped by the server's end (503), its cell
 * deleted or its init dead meanwhile (410, as for a request that finds
 * it so), else 500. */
static void exec_error(struct api *a, const char *id, struct cell *c, const struct sc_err *err,
		       struct api_response *resp)
{
	pthread_mutex_lock(&a->mu);
	bool listed = find_cell(a, id) != NULL, stopping = a->cancelled;
	pthread_mutex_unlock(&a->mu);
	if (stopping) /* cancelled, or its cell removed first */
		api_response_error(resp, 503, "the server is stopping: the command was stopped");
	else if (!listed)
		api_response_error(resp, 410, "the cell was deleted while the command ran");
	else if (!cell_is_alive(c))
		api_response_error(resp, 410, "the cell is gone (its init died): DELETE it");
	else
		errorf(resp, 500, "exec: %s", err->msg);
}

/* ---- POST /cells/{id}/exec, streamed (Accept: application/x-ndjson) ----
 * cell_exec runs in a helper thread with two pipes for stdout and stderr;
 * the transport's thread (the reader) turns what comes into one JSON line
 * per chunk, then a result line. The client going away (its socket's
 * POLLRDHUP) or the transport giving up cancels the command (cancel pipe:
 * cell_exec closes its socket to the cell, whose init kills it). */

#define STREAM_CHUNK 16384

struct exec_stream {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;
	cJSON *j;                        /* owns the strings argv/env point to */
	char *envbuf[CELL_MAX_ENV];
	size_t nenv;
	char *argv[API_MAX_ARGV + 1];
	const char *envs[CELL_MAX_ENV + 1];
	char cwd[LANG_MAX_PATH + 16];
	int stdin_fd;
	struct cell_exec_req er;
	struct cell_result res;
	struct sc_err err;
	int rc;
	int po[2], pe[2], pd[2], pc[2];  /* stdout, stderr, done, cancel */
	int net_log;                     /* -1: no egress */
	bool stop_seen;                  /* the server's stop passed on to pc */
	pthread_t th;
	bool running;                    /* th started, not joined */
	bool open[2], done, finished;
	double drain_until;              /* after done: a background writer's bound */
	uint64_t sent[2], limit;
	bool trunc[2];
	unsigned char carry[2][4];       /* an unfinished UTF-8 sequence */
	size_t ncarry[2];
	char *ev;                        /* encoded bytes not yet handed out */
	size_t ev_len, ev_off;
	char buf[STREAM_CHUNK + 4];
};

static void *exec_stream_main(void *arg)
{
	struct exec_stream *x = arg;
	x->rc = cell_exec(x->c, &x->er, &x->res, &x->err);
	sc_closep(&x->po[1]);
	sc_closep(&x->pe[1]);
	(void)!write(x->pd[1], "x", 1);
	return NULL;
}

/* How many bytes at the end of p[0..n) begin a UTF-8 sequence that is not
 * complete yet (0..3). */
static size_t utf8_unfinished(const unsigned char *p, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char b = p[n - back];
		if ((b & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t want = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 1;
		return want > back ? back : 0;
	}
	return 0;
}

/* The events of a streamed answer (exec and code), without the newline. */
static void put_output_event(FILE *f, int k, const char *d, size_t n)
{
	fprintf(f, "{\"type\":\"%s\",\"data\":", k ? "stderr" : "stdout");
	api_json_string(f, d, n);
	fputc('}', f);
}

static void put_error_event(FILE *f, const char *msg)
{
	fputs("{\"type\":\"error\",\"detail\":", f);
	api_json_string(f, msg, strlen(msg));
	fputc('}', f);
}

/* Answer 200 with the NDJSON stream read by `rd` from ctx, which `fr`
 * frees (and which is now the transport's). */
static void stream_respond(struct api_response *resp, ssize_t (*rd)(void *, char *, size_t, int),
			   void (*fr)(void *), void *ctx)
{
	resp->status = 200;
	resp->content_type = "application/x-ndjson";
	resp->stream = rd;
	resp->stream_free = fr;
	resp->stream_ctx = ctx;
}

/* Close jb and make it the event to send next; -1 when it could not be
 * written. */
static int stream_take(struct exec_stream *x, struct jbuf *jb)
{
	if (fclose(jb->f) != 0) {
		free(jb->buf);
		return -1;
	}
	x->ev = jb->buf;
	x->ev_len = jb->len;
	x->ev_off = 0;
	return 0;
}

static int stream_event(struct exec_stream *x, int k, const char *d, size_t n)
{
	struct jbuf jb;
	if (!jopen(&jb))
		return -1;
	put_output_event(jb.f, k, d, n);
	fputc('\n', jb.f);
	return stream_take(x, &jb);
}

static int stream_result(struct exec_stream *x)
{
	struct jbuf jb;
	if (!jopen(&jb))
		return -1;
	if (x->rc < 0) {
		put_error_event(jb.f, x->err.msg);
	} else {
		x->res.out_truncated = x->trunc[0];
		x->res.err_truncated = x->trunc[1];
		x->res.network = api_net_summary_since(x->net_log);
		char *obj = NULL;
		size_t olen = 0;
		FILE *f = open_memstream(&obj, &olen);
		if (f) {
			api_json_cell_result(f, &x->res);
			if (fclose(f) != 0) {
				free(obj);
				obj = NULL;
			}
		}
		if (!obj || olen < 2) {
			free(obj);
			fclose(jb.f);
			free(jb.buf);
			return -1;
		}
		fprintf(jb.f, "{\"type\":\"result\",%s", obj + 1);
		free(obj);
	}
	fputc('\n', jb.f);
	return stream_take(x, &jb);
}

/* One chunk read from pipe k (n 0: its end) into an event, bounded by the
 * output limit; whole UTF-8 sequences only. 1: an event is ready. */
static int stream_chunk(struct exec_stream *x, int k, ssize_t n)
{
	char *d = x->buf;
	size_t len = x->ncarry[k];
	memcpy(d, x->carry[k], len);
	x->ncarry[k] = 0;
	len += n > 0 ? (size_t)n : 0;
	if (n > 0) {
		size_t hold = utf8_unfinished((const unsigned char *)d, len);
		memcpy(x->carry[k], d + len - hold, hold);
		x->ncarry[k] = hold;
		len -= hold;
	}
	if (x->sent[k] + len > x->limit) {
		x->trunc[k] = true;
		len = x->limit > x->sent[k] ? (size_t)(x->limit - x->sent[k]) : 0;
	}
	if (!len)
		return 0;
	x->sent[k] += len;
	return stream_event(x, k, d, len) < 0 ? -1 : 1;
}

static ssize_t exec_stream_read(void *ctx, char *buf, size_t max, int client_fd)
{
	struct exec_stream *x = ctx;
	for (;;) {
		if (x->ev && x->ev_off < x->ev_len) {
			size_t n = x->ev_len - x->ev_off < max ? x->ev_len - x->ev_off : max;
			memcpy(buf, x->ev + x->ev_off, n);
			x->ev_off += n;
			return (ssize_t)n;
		}
		free(x->ev);
		x->ev = NULL;
		if (x->finished)
			return API_STREAM_END;
		if (!x->open[0] && !x->open[1]) {
			if (x->running) {
				pthread_join(x->th, NULL);
				x->running = false;
			}
			x->finished = true;
			if (stream_result(x) < 0)
				return API_STREAM_ERROR;
			continue;
		}
		struct pollfd p[5] = {
			{.fd = x->open[0] ? x->po[0] : -1, .events = POLLIN},
			{.fd = x->open[1] ? x->pe[0] : -1, .events = POLLIN},
			{.fd = x->done ? -1 : x->pd[0], .events = POLLIN},
			{.fd = client_fd, .events = POLLRDHUP},
			{.fd = x->stop_seen ? -1 : x->a->stop_pipe[0], .events = POLLIN},
		};
		/* Once the command ended, what is in the pipes is read without
		 * waiting: a process it left behind may hold them open. */
		int r = poll(p, 5, x->done ? 0 : -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return API_STREAM_ERROR;
		if (p[4].revents) { /* the server stops: cancel, then end as usual */
			x->stop_seen = true;
			(void)!write(x->pc[1], "x", 1);
			if (--r == 0)
				continue;
		}
		if (x->done && now_s() > x->drain_until)
			r = 0;
		if (p[3].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return API_STREAM_ERROR; /* the client is gone: free cancels */
		if (r == 0) {
			for (int k = 0; k < 2; k++)
				if (x->open[k]) {
					x->open[k] = false;
					if (stream_chunk(x, k, 0) < 0)
						return API_STREAM_ERROR;
				}
			continue;
		}
		if (p[2].revents) {
			x->done = true;
			x->drain_until = now_s() + 1.0;
		}
		for (int k = 0; k < 2 && r > 0; k++) {
			if (!p[k].revents || x->ev)
				continue;
			ssize_t n = read(k ? x->pe[0] : x->po[0], x->buf + x->ncarry[k], STREAM_CHUNK);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0)
				x->open[k] = false;
			if (stream_chunk(x, k, n > 0 ? n : 0) < 0)
				return API_STREAM_ERROR;
		}
	}
}

static void exec_stream_free(void *ctx)
{
	struct exec_stream *x = ctx;
	if (x->running) {
		(void)!write(x->pc[1], "x", 1);
		pthread_join(x->th, NULL);
	}
	if (x->rc == 0)
		cell_result_free(&x->res);
	int *fds[] = {x->po, x->pe, x->pd, x->pc};
	for (size_t i = 0; i < SC_ARRAY_LEN(fds); i++) {
		sc_closep(&fds[i][0]);
		sc_closep(&fds[i][1]);
	}
	sc_closep(&x->net_log);
	if (x->stdin_fd >= 0)
		close(x->stdin_fd);
	cell_end(x->a, x->id, x->c);
	for (size_t i = 0; i < x->nenv; i++)
		free(x->envbuf[i]);
	cJSON_Delete(x->j);
	free(x->ev);
	free(x);
}

static bool wants_ndjson(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Accept") : NULL;
	return h && strstr(h, "application/x-ndjson");
}

/* Start the stream; it owns j, envbuf, c and stdin_fd from here on, even
 * when this fails (then resp is an error). */
static void exec_stream_start(struct api *a, const char *id, struct cell *c, cJSON *j,
			      char **envbuf, size_t nenv, int stdin_fd,
			      const struct cell_exec_req *er, struct api_response *resp)
{
	struct exec_stream *x = calloc(1, sizeof(*x));
	if (!x) {
		api_response_error(resp, 500, "out of memory");
		for (size_t i = 0; i < nenv; i++)
			free(envbuf[i]);
		if (stdin_fd >= 0)
			close(stdin_fd);
		cell_end(a, id, c);
		cJSON_Delete(j);
		return;
	}
	x->a = a;
	snprintf(x->id, sizeof(x->id), "%s", id);
	x->c = c;
	x->j = j;
	memcpy(x->envbuf, envbuf, nenv * sizeof(*envbuf));
	x->nenv = nenv;
	x->stdin_fd = stdin_fd;
	int *fds[] = {x->po, x->pe, x->pd, x->pc};
	for (size_t i = 0; i < SC_ARRAY_LEN(fds); i++)
		fds[i][0] = fds[i][1] = -1;
	x->net_log = net_log_open(a, c);
	x->er = *er;
	size_t n = 0;
	for (; er->argv[n]; n++)
		x->argv[n] = er->argv[n];
	x->argv[n] = NULL;
	x->er.argv = x->argv;
	if (er->env) {
		for (n = 0; er->env[n]; n++)
			x->envs[n] = er->env[n];
		x->envs[n] = NULL;
		x->er.env = x->envs;
	}
	if (er->cwd) {
		snprintf(x->cwd, sizeof(x->cwd), "%s", er->cwd);
		x->er.cwd = x->cwd;
	}
	x->limit = er->output_limit ? er->output_limit : CELL_DEFAULT_OUTPUT;
	x->open[0] = x->open[1] = true;
	for (size_t i = 0; i < SC_ARRAY_LEN(fds); i++)
		if (pipe2(fds[i], O_CLOEXEC) < 0) {
			errorf(resp, 500, "pipe: %s", strerror(errno));
			exec_stream_free(x);
			return;
		}
	x->er.stdout_fd = x->po[1];
	x->er.stderr_fd = x->pe[1];
	x->er.has_cancel = true;
	x->er.cancel_fd = x->pc[0];
	int e = pthread_create(&x->th, NULL, exec_stream_main, x);
	if (e) {
		errorf(resp, 500, "thread: %s", strerror(e));
		exec_stream_free(x);
		return;
	}
	x->running = true;
	stream_respond(resp, exec_stream_read, exec_stream_free, x);
}

static void cells_exec(struct api *a, const char *id, const struct api_request *req,
		       struct api_response *resp)
{
	cJSON *j = parse_body(req, resp, false);
	if (!j)
		return;
	char *argv[API_MAX_ARGV + 1];
	const char *envs[CELL_MAX_ENV + 1];
	char *envbuf[CELL_MAX_ENV];
	size_t nargs = 0, nenv = 0;
	const char *cmd, *cwd, *stdin_s;
	double timeout;
	const cJSON *jargv = cJSON_GetObjectItemCaseSensitive(j, "argv");
	const cJSON *jenv = cJSON_GetObjectItemCaseSensitive(j, "env");
	if (!get_string(j, "cmd", &cmd) || !get_string(j, "cwd", &cwd) ||
	    !get_string(j, "stdin", &stdin_s) || !get_number(j, "timeout", 30, &timeout)) {
		api_response_error(resp, 422, "expected cmd, cwd, stdin: strings; timeout: a number");
		goto out;
	}
	if (cmd && !jargv) {
		argv[nargs++] = "/bin/sh";
		argv[nargs++] = "-c";
		argv[nargs++] = (char *)cmd;
	} else if (cJSON_IsArray(jargv) && !cmd) {
		const cJSON *v;
		cJSON_ArrayForEach(v, jargv)
		{
			if (!cJSON_IsString(v) || nargs >= API_MAX_ARGV) {
				errorf(resp, 422, "argv: at most %d strings", API_MAX_ARGV);
				goto out;
			}
			argv[nargs++] = v->valuestring;
		}
	}
	if (!nargs) {
		api_response_error(resp, 422, "give argv (a list of strings) or cmd (a shell command)");
		goto out;
	}
	argv[nargs] = NULL;
	char cwdbuf[LANG_MAX_PATH + 16];
	if (cwd && !cell_path(cwd, cwdbuf, sizeof(cwdbuf))) {
		api_response_error(resp, 422, "cwd: a path without '..'");
		goto out;
	}
	if (jenv && !cJSON_IsNull(jenv)) {
		const cJSON *v;
		if (!cJSON_IsObject(jenv)) {
			api_response_error(resp, 422, "env: an object of strings");
			goto out;
		}
		cJSON_ArrayForEach(v, jenv)
		{
			if (!cJSON_IsString(v) || nenv >= CELL_MAX_ENV) {
				errorf(resp, 422, "env: at most %d strings", CELL_MAX_ENV);
				goto out_env;
			}
			if (asprintf(&envbuf[nenv], "%s=%s", v->string, v->valuestring) < 0) {
				api_response_error(resp, 500, "out of memory");
				goto out_env;
			}
			envs[nenv] = envbuf[nenv];
			nenv++;
			if (!sc_valid_env(envbuf[nenv - 1])) {
				errorf(resp, 422, "env: bad variable '%.64s'", v->string);
				goto out_env;
			}
		}
	}
	envs[nenv] = NULL;
	bool has_user;
	uint32_t uid = 0, gid = 0;
	if (!get_user(j, &has_user, &uid, &gid, resp))
		goto out_env;
	struct cell *c;
	if (cell_begin(a, id, &c, resp) < 0)
		goto out_env;
	if (!has_user) {
		/* the cell's own default, from its create */
		pthread_mutex_lock(&a->mu);
		const struct api_cell *e = find_cell(a, id);
		if (e && e->has_user) {
			has_user = true;
			uid = e->uid;
			gid = e->gid;
		}
		pthread_mutex_unlock(&a->mu);
	}
	int stdin_fd = -1;
	if (stdin_s && (stdin_fd = memfd_of(stdin_s, strlen(stdin_s))) < 0) {
		api_response_error(resp, 500, "cannot hold stdin");
		cell_end(a, id, c);
		goto out_env;
	}
	struct cell_exec_req er = {
		.argv = argv,
		.env = nenv ? envs : NULL,
		.cwd = cwd ? cwdbuf : NULL,
		.timeout_s = clamp_timeout(a, timeout, 30),
		.output_limit = a->cfg.spec->limits.output,
		.stdin_fd = stdin_fd,
		.stdout_fd = -1,
		.stderr_fd = -1,
		.has_user = has_user,
		.uid = uid,
		.gid = gid,
	};
	if (wants_ndjson(req)) {
		exec_stream_start(a, id, c, j, envbuf, nenv, stdin_fd, &er, resp);
		return; /* the stream owns j, envbuf, c, stdin_fd */
	}
	struct cell_result res;
	struct sc_err err = {0};
	er.has_cancel = true;
	er.cancel_fd = a->stop_pipe[0];
	int net_log = net_log_open(a, c);
	if (cell_exec(c, &er, &res, &err) < 0) {
		exec_error(a, id, c, &err, resp);
	} else {
		res.network = api_net_summary_since(net_log);
		struct jbuf jb;
		if (jopen(&jb)) {
			api_json_cell_result(jb.f, &res);
			jsend(&jb, resp, 200);
		} else {
			api_response_error(resp, 500, "out of memory");
		}
		cell_result_free(&res);
	}
	sc_closep(&net_log);
	if (stdin_fd >= 0)
		close(stdin_fd);
	cell_end(a, id, c);
out_env:
	for (size_t i = 0; i < nenv; i++)
		free(envbuf[i]);
out:
	cJSON_Delete(j);
}

/* ---- a directory as a tar stream (GET/PUT /cells/{id}/files) ----
 * Through a private (0700) directory on the host: GET copies the cell's
 * directory out with the runtime's copy (links out of the tree are left
 * out, nothing is followed) and writes it as tar (common/tarwrite.c); PUT
 * unpacks the body with rootfs's checked extractor (no absolute or ".."
 * names) and copies the tree in. Both are bounded by the cell's disk
 * limit (API_MAX_TAR when it has none).
 *
 * The directory is under the data root's serve-tmp/ (on disk, beside the
 * images; not $TMPDIR nor the state root, often small tmpfs), flock'ed by
 * the server for as long as it uses it: one nobody holds was left by a
 * server that died (SIGKILL), and api_gc (`sandcell gc`) removes it. A
 * shared lock on serve-tmp/ while one is made (exclusive for gc) keeps gc
 * from taking it between its mkdtemp and its lock. No message a client
 * gets names it. */

#define API_MAX_TAR (1ull << 30)

static uint64_t tar_bound(const struct api *a)
{
	uint64_t d = a->cfg.spec->limits.disk;
	return d && d < API_MAX_TAR ? d : API_MAX_TAR;
}

#define API_SCRATCH "serve-tmp"

static int scratch_parent(char *out, size_t size, struct sc_err *err)
{
	if (sc_path(out, size, "%s/" API_SCRATCH, cell_data_root()) < 0)
		return sc_fail(err, ENAMETOOLONG, "the data directory's path is too long");
	return cell_ensure_private_dir(out, err);
}

/* A new locked directory (its path into out, its fd returned), or -1. */
static int tar_tmpdir(char *out, size_t size, struct sc_err *err)
{
	char parent[PATH_MAX - 32];
	if (scratch_parent(parent, sizeof(parent), err) < 0)
		return -1;
	_cleanup_fd_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return sc_fail(err, errno, "open %s", parent);
	while (flock(pfd, LOCK_SH) < 0)
		if (errno != EINTR)
			return sc_fail(err, errno, "lock %s", parent);
	if (sc_path(out, size, "%s/files-XXXXXX", parent) < 0 || !mkdtemp(out))
		return sc_fail(err, errno, "mkdtemp in %s", parent);
	int fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rmdir(out);
		return sc_fail(err, e, "lock %s", out);
	}
	return fd; /* pfd's shared lock goes with it */
}

static void tar_tmpdir_end(const char *path, int fd)
{
	sc_remove_tree_path(path, NULL);
	close(fd);
}

int api_gc(size_t *removed, struct sc_err *err)
{
	*removed = 0;
	char parent[PATH_MAX];
	if (sc_path(parent, sizeof(parent), "%s/" API_SCRATCH, cell_data_root()) < 0)
		return sc_fail(err, ENAMETOOLONG, "the data directory's path is too long");
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "open %s", parent);
	DIR *d = fdopendir(pfd);
	if (!d) {
		close(pfd);
		return sc_fail(err, errno, "read %s", parent);
	}
	while (flock(pfd, LOCK_EX) < 0 && errno == EINTR)
		;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "files-", 6) != 0)
			continue;
		_cleanup_fd_ int fd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* a running server's */
		if (sc_remove_tree_at(pfd, e->d_name, rc < 0 ? NULL : err) == 0)
			++*removed;
		else if (rc == 0) /* the first failure is the one reported */
			rc = sc_err_wrap(err, "%s", parent);
	}
	closedir(d); /* and the lock */
	return rc;
}

/* msg without the host path of a temporary tree (whatever follows it up
 * to a space, quote or colon goes too): a client is never told where the
 * server keeps things. */
static void scrub_path(char *msg, size_t size, const char *path)
{
	char out[SC_ERR_MAX];
	size_t o = 0, n = strlen(path);
	const char *p = msg, *hit;
	while (n && (hit = strstr(p, path))) {
		int w = snprintf(out + o, sizeof(out) - o, "%.*s(a temporary copy)", (int)(hit - p), p);
		if (w > 0)
			o = o + (size_t)w < sizeof(out) ? o + (size_t)w : sizeof(out) - 1;
		for (p = hit + n; *p && !strchr(" :'\"", *p); p++)
			;
	}
	snprintf(out + o, sizeof(out) - o, "%s", p);
	snprintf(msg, size, "%s", out);
}

struct fd_stream {
	int fd;
};

static ssize_t fd_stream_read(void *ctx, char *buf, size_t max, int client_fd)
{
	(void)client_fd;
	struct fd_stream *s = ctx;
	for (;;) {
		ssize_t n = read(s->fd, buf, max);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0 ? n : n == 0 ? API_STREAM_END : API_STREAM_ERROR;
	}
}

static void fd_stream_free(void *ctx)
{
	struct fd_stream *s = ctx;
	close(s->fd);
	free(s);
}

static void files_get_tar(struct api *a, struct cell *c, const char *path,
			  struct api_response *resp)
{
	char tmp[PATH_MAX], tree[PATH_MAX + 8];
	struct sc_err err = {0};
	int tfd = tar_tmpdir(tmp, sizeof(tmp), &err);
	if (tfd < 0) {
		sc_log(&a->cfg.log, SC_LOG_WARN, "files: a temporary directory: %s", err.msg);
		api_response_error(resp, 500, "the server cannot make a temporary copy (see its log)");
		return;
	}
	snprintf(tree, sizeof(tree), "%s/t", tmp);
	int out = -1, dfd = -1;
	uint64_t max = tar_bound(a);
	if (cell_copy_out_flags(c, path, tree, max, 0, &a->cfg.log, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), tmp);
		errorf(resp, err.errnum == ENOENT ? 404 : err.errnum == EFBIG ? 413 : 500, "%s", err.msg);
		goto out;
	}
	dfd = open(tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && (errno == ELOOP || errno == ENOTDIR || errno == ENOENT)) {
		/* path, a directory when followed, was copied as what it is: a
		 * link (kept, or left out for pointing out of the tree) */
		errorf(resp, 400,
		       "%.200s is a symbolic link to a directory: a directory is sent as a tar by "
		       "its own path only (ask for the directory the link points to)",
		       path);
		goto out;
	}
	out = dfd < 0 ? -1 : open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (dfd >= 0 && out < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		char tarpath[PATH_MAX + 8]; /* no O_TMPFILE here (overlayfs before 6.6) */
		snprintf(tarpath, sizeof(tarpath), "%s/tar", tmp);
		out = open(tarpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out >= 0)
			unlink(tarpath);
	}
	if (dfd < 0 || out < 0) {
		errorf(resp, 500, "a temporary copy: %s", strerror(errno));
		goto out;
	}
	struct tarw_opts o = {.max_bytes = max};
	if (sc_tarw_tree(out, dfd, &o, &err) < 0 || lseek(out, 0, SEEK_SET) < 0) {
		if (!err.msg[0])
			snprintf(err.msg, sizeof(err.msg), "%s", strerror(errno));
		scrub_path(err.msg, sizeof(err.msg), tmp);
		errorf(resp, 500, "tar: %s", err.msg);
		goto out;
	}
	struct fd_stream *fs = malloc(sizeof(*fs));
	if (!fs) {
		api_response_error(resp, 500, "out of memory");
		goto out;
	}
	fs->fd = out;
	out = -1;
	resp->status = 200;
	resp->content_type = "application/x-tar";
	resp->stream = fd_stream_read;
	resp->stream_free = fd_stream_free;
	resp->stream_ctx = fs;
out:
	if (dfd >= 0)
		close(dfd);
	if (out >= 0)
		close(out);
	tar_tmpdir_end(tmp, tfd);
}

static void files_put_tar(struct api *a, struct cell *c, const char *path,
			  const struct api_request *req, struct api_response *resp)
{
	char tmp[PATH_MAX], tree[PATH_MAX + 8];
	struct sc_err err = {0};
	int tfd = tar_tmpdir(tmp, sizeof(tmp), &err);
	if (tfd < 0) {
		sc_log(&a->cfg.log, SC_LOG_WARN, "files: a temporary directory: %s", err.msg);
		api_response_error(resp, 500, "the server cannot make a temporary copy (see its log)");
		return;
	}
	snprintf(tree, sizeof(tree), "%s/t", tmp);
	int in = -1, dfd = -1;
	uint64_t files = 0, max = tar_bound(a);
	if (mkdir(tree, 0700) < 0 ||
	    (dfd = open(tree, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (in = memfd_of(req->body, req->body_len)) < 0) {
		errorf(resp, 500, "a temporary copy: %s", strerror(errno));
		goto out;
	}
	if (rootfs_tar_unpack(dfd, in, max, 100000, &files, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), tmp);
		errorf(resp, 400, "the tar is refused: %s", err.msg);
		goto out;
	}
	if (cell_copy_in_as(c, tree, path, max, &err) < 0) {
		scrub_path(err.msg, sizeof(err.msg), tmp);
		errorf(resp, err.errnum == EFBIG || err.errnum == ENOSPC || err.errnum == EDQUOT ? 413 : 500,
		       "%s", err.msg);
		goto out;
	}
	struct jbuf jb;
	if (!jopen(&jb)) {
		api_response_error(resp, 500, "out of memory");
		goto out;
	}
	fputs("{\"path\":", jb.f);
	api_json_string(jb.f, path, strlen(path));
	fprintf(jb.f, ",\"size\":%zu,\"entries\":%llu}", req->body_len, (unsigned long long)files);
	jsend(&jb, resp, 200);
out:
	if (dfd >= 0)
		close(dfd);
	if (in >= 0)
		close(in);
	tar_tmpdir_end(tmp, tfd);
}

static bool is_tar_type(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Content-Type") : NULL;
	return h && !strncasecmp(h, "application/x-tar", 17) && (!h[17] || h[17] == ';' || h[17] == ' ');
}

static void cells_files(struct api *a, const char *id, const struct api_request *req,
			struct api_response *resp)
{
	const char *p = req->query ? req->query(req->ctx, "path") : NULL;
	char path[LANG_MAX_PATH + 16];
	if (!cell_path(p, path, sizeof(path))) {
		api_response_error(resp, 400, "path: a cell path without '..' (?path=/testbed/x)");
		return;
	}
	bool put = !strcmp(req->method, "PUT");
	if (put && req->body_len > API_MAX_FILE) {
		errorf(resp, 413, "a file of at most %u bytes", API_MAX_FILE);
		return;
	}
	struct cell *c;
	if (cell_begin(a, id, &c, resp) < 0)
		return;
	struct sc_err err = {0};
	if (put && is_tar_type(req)) {
		files_put_tar(a, c, path, req, resp);
	} else if (put) {
		int rc = cell_write_file(c, path, req->body, req->body_len, CELL_FILE_CREATE, 30, &err);
		if (rc < 0 && err.errnum == EEXIST)
			rc = cell_write_file(c, path, req->body, req->body_len, 0, 30, &err);
		if (rc < 0) {
			errorf(resp, err.errnum == EISDIR || err.errnum == EINVAL ? 400 : 500, "%s", err.msg);
		} else {
			struct jbuf jb;
			if (jopen(&jb)) {
				fputs("{\"path\":", jb.f);
				api_json_string(jb.f, path, strlen(path));
				fprintf(jb.f, ",\"size\":%zu}", req->body_len);
				jsend(&jb, resp, 200);
			} else {
				api_response_error(resp, 500, "out of memory");
			}
		}
	} else {
		struct cell_file f;
		int rc = cell_read_file(c, path, API_MAX_FILE, 30, &f, &err);
		if (rc < 0 && err.errnum == EISDIR) {
			files_get_tar(a, c, path, resp);
		} else if (rc < 0) {
			int st = err.errnum == ENOENT ? 404 :
				 (err.errnum == EISDIR || err.errnum == EINVAL) ? 400 :
				 err.errnum == EACCES ? 403 : 500;
			errorf(resp, st, "%s", err.msg);
		} else if (f.truncated) {
			free(f.data);
			errorf(resp, 413, "the file is larger than %u bytes", API_MAX_FILE);
		} else {
			set_body(resp, 200, "application/octet-stream", f.data, f.len);
		}
	}
	cell_end(a, id, c);
}

/* ---- POST /cells/{id}/run and /cells/{id}/code ----
 * /run: code of any language run in the cell's work directory
 * (lang_run_in; files stay between runs, state does not); /code: Python
 * in a session kept in the cell, started on the first call
 * (lang_session_install). Both answer `code ... --json`'s result, or, with
 * Accept: application/x-ndjson, stream: the run goes on in a helper
 * thread whose sink writes one JSON line per event into a socketpair that
 * the transport's thread hands out. A client that goes away closes the
 * read end: later lines are dropped and the run ends at its timeout (lang
 * has no cancel), which bounds the join. */

struct code_run {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;                  /* NULL: not begun */
	cJSON *j;                        /* owns the strings the requests point to */
	bool session;
	struct lang_run_req rr;
	struct lang_session_req sr;
	char workdir[LANG_MAX_PATH + 16];
	int stdin_fd;
	struct lang_result res;
	struct sc_err err;
	int rc;
	int sp[2];                       /* the helper writes [1], the transport reads [0] */
	bool gone;                       /* the reader went away: drop lines */
	unsigned char carry[2][4];       /* an unfinished UTF-8 sequence per stream */
	size_t ncarry[2];
	pthread_t th;
	bool running;
};

static void code_run_free(void *ctx)
{
	struct code_run *r = ctx;
	sc_closep(&r->sp[0]);
	if (r->running)
		pthread_join(r->th, NULL);
	sc_closep(&r->sp[1]);
	if (r->rc == 0)
		lang_result_free(&r->res);
	if (r->stdin_fd >= 0)
		close(r->stdin_fd);
	if (r->c)
		cell_end(r->a, r->id, r->c);
	cJSON_Delete(r->j);
	free(r);
}

static void code_run_send(struct code_run *r, const char *p, size_t n)
{
	while (n && !r->gone) {
		ssize_t w = send(r->sp[1], p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r->gone = true;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void code_run_line(struct code_run *r, struct jbuf *jb)
{
	fputc('\n', jb->f);
	if (fclose(jb->f) == 0)
		code_run_send(r, jb->buf, jb->len);
	else
		r->gone = true;
	free(jb->buf);
}

static void code_run_output_line(struct code_run *r, int k, const char *d, size_t n)
{
	struct jbuf jb;
	if (jopen(&jb)) {
		put_output_event(jb.f, k, d, n);
		code_run_line(r, &jb);
	}
}

/* An output event: whole UTF-8 characters only (the rest waits for the
 * next chunk of the same stream; a stream's end comes with the result). */
static void code_run_output(struct code_run *r, int k, const char *d, size_t n)
{
	size_t total = r->ncarry[k] + n;
	char *buf = malloc(total ? total : 1);
	if (!buf) {
		r->gone = true;
		return;
	}
	memcpy(buf, r->carry[k], r->ncarry[k]);
	memcpy(buf + r->ncarry[k], d, n);
	size_t hold = utf8_unfinished((const unsigned char *)buf, total);
	memcpy(r->carry[k], buf + total - hold, hold);
	r->ncarry[k] = hold;
	if (total - hold)
		code_run_output_line(r, k, buf, total - hold);
	free(buf);
}

static void code_run_event(void *ctx, const struct lang_event *ev)
{
	struct code_run *r = ctx;
	if (r->gone)
		return;
	if (ev->type == LANG_EV_STDOUT || ev->type == LANG_EV_STDERR) {
		code_run_output(r, ev->type == LANG_EV_STDERR, ev->data, ev->len);
		return;
	}
	if (ev->type != LANG_EV_RESULT)
		return; /* plots come with the result */
	for (int k = 0; k < 2; k++)
		if (r->ncarry[k]) { /* a stream that ended mid-character */
			code_run_output_line(r, k, (const char *)r->carry[k], r->ncarry[k]);
			r->ncarry[k] = 0;
		}
	char *obj = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&obj, &olen);
	if (!f) {
		r->gone = true;
		return;
	}
	api_json_lang_result(f, ev->result, r->a->cfg.pod_name, r->session);
	if (fclose(f) != 0 || olen < 2) {
		free(obj);
		r->gone = true;
		return;
	}
	struct jbuf jb;
	if (jopen(&jb)) {
		fprintf(jb.f, "{\"type\":\"result\",%s", obj + 1);
		code_run_line(r, &jb);
	}
	free(obj);
}

static int code_run_do(struct code_run *r)
{
	return r->session ? lang_session_run_in(r->c, &r->sr, &r->res, &r->err)
			  : lang_run_in(r->c, &r->rr, &r->res, &r->err);
}

static void *code_run_main(void *arg)
{
	struct code_run *r = arg;
	r->rc = code_run_do(r);
	if (r->rc < 0) {
		struct jbuf jb;
		if (jopen(&jb)) {
			put_error_event(jb.f, r->err.msg);
			code_run_line(r, &jb);
		}
	}
	sc_closep(&r->sp[1]);
	return NULL;
}

static ssize_t code_run_read(void *ctx, char *buf, size_t max, int client_fd)
{
	struct code_run *r = ctx;
	for (;;) {
		struct pollfd p[2] = {{.fd = r->sp[0], .events = POLLIN},
				      {.fd = client_fd, .events = POLLRDHUP}};
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return API_STREAM_ERROR;
		if (!p[0].revents)
			continue;
		ssize_t got = read(r->sp[0], buf, max);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return got > 0 ? got : got == 0 ? API_STREAM_END : API_STREAM_ERROR;
	}
}

/* The request's fields into r (its strings stay in r->j); false: resp is
 * the error. */
static bool code_run_parse(struct api *a, struct code_run *r, struct api_response *resp)
{
	const cJSON *j = r->j;
	const char *code, *lang_name, *stdin_s, *workdir;
	double timeout, run_t, compile_t;
	const cJSON *jclear = cJSON_GetObjectItemCaseSensitive(j, "clear_plots");
	const cJSON *jlibs = cJSON_GetObjectItemCaseSensitive(j, "libraries");
	if (!get_string(j, "code", &code) || !code) {
		api_response_error(resp, 422, "code: a string is required");
		return false;
	}
	if (!get_string(j, "language", &lang_name) || !get_string(j, "stdin", &stdin_s) ||
	    !get_string(j, "workdir", &workdir) || !get_number(j, "timeout", 30, &timeout) ||
	    !get_number(j, "run_timeout", timeout, &run_t) ||
	    !get_number(j, "compile_timeout", LANG_DEFAULT_COMPILE_TIMEOUT, &compile_t) ||
	    (jclear && !cJSON_IsNull(jclear) && !cJSON_IsBool(jclear)) ||
	    (jlibs && !cJSON_IsNull(jlibs) && !cJSON_IsArray(jlibs))) {
		api_response_error(resp, 422, "expected language, stdin, workdir: strings; timeout, "
					      "run_timeout, compile_timeout: numbers; clear_plots: a "
					      "boolean; libraries: a list");
		return false;
	}
	const struct lang_def *l = lang_find(lang_name ? lang_name : "python");
	if (!l) {
		errorf(resp, 422, "language: unknown language '%.64s'", lang_name);
		return false;
	}
	if (r->session && strcmp(l->name, "python") != 0) {
		errorf(resp, 422, "language: sessions keep state for python only (%.32s: use /run)",
		       l->name);
		return false;
	}
	if (strlen(code) > LANG_MAX_SOURCE) {
		errorf(resp, 413, "code: at most %u bytes", (unsigned)LANG_MAX_SOURCE);
		return false;
	}
	const char *libs[LANG_MAX_LIBRARIES];
	size_t nlibs = 0;
	const cJSON *v, *list = cJSON_IsArray(jlibs) ? jlibs : NULL;
	cJSON_ArrayForEach(v, list)
	{
		if (nlibs >= LANG_MAX_LIBRARIES || !cJSON_IsString(v) ||
		    !lang_library_name_ok(v->valuestring)) {
			errorf(resp, 422, "libraries: at most %d package names such as \"numpy==2.0\"",
			       LANG_MAX_LIBRARIES);
			return false;
		}
		libs[nlibs++] = v->valuestring;
	}
	if (workdir && (!cell_path(workdir, r->workdir, sizeof(r->workdir)))) {
		api_response_error(resp, 422, "workdir: a cell path without '..'");
		return false;
	}
	if (stdin_s && (r->stdin_fd = memfd_of(stdin_s, strlen(stdin_s))) < 0) {
		api_response_error(resp, 500, "cannot hold stdin");
		return false;
	}
	uint64_t out_limit = a->cfg.spec->limits.output;
	if (r->session) {
		struct lang_session_req *s = &r->sr;
		lang_session_req_init(s);
		s->source = code;
		s->source_len = strlen(code);
		s->timeout_s = clamp_timeout(a, run_t, 30);
		s->clear_plots = cJSON_IsTrue(jclear);
		s->output_limit = out_limit;
		memcpy(s->libraries, libs, nlibs * sizeof(*libs));
		s->nlibraries = nlibs;
		return true;
	}
	struct lang_run_req *q = &r->rr;
	lang_run_req_init(q);
	q->lang = l;
	q->source = code;
	q->source_len = strlen(code);
	q->run_timeout_s = clamp_timeout(a, run_t, 30);
	q->compile_timeout_s = clamp_timeout(a, compile_t, LANG_DEFAULT_COMPILE_TIMEOUT);
	q->output_limit = out_limit;
	q->stdin_fd = r->stdin_fd;
	q->workdir = r->workdir[0] ? r->workdir : NULL;
	memcpy(q->libraries, libs, nlibs * sizeof(*libs));
	q->nlibraries = nlibs;
	q->has_network = a->cfg.spec->egress != NULL;
	/* every cell here came from the pool, whose cells start with the
	 * support files (seeded by their setup); what the cell's code did to
	 * them since is its own business, so they are not checked again on
	 * each run */
	q->prepared = true;
	return true;
}

/* Start the streamed answer; the stream owns r from here on. */
static void code_run_stream(struct code_run *r, struct api_response *resp)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, r->sp) < 0) {
		errorf(resp, 500, "socketpair: %s", strerror(errno));
		code_run_free(r);
		return;
	}
	struct lang_sink sink = {.fn = code_run_event, .ctx = r};
	r->rr.sink = r->sr.sink = sink;
	r->rr.stream = r->sr.stream = true;
	int e = pthread_create(&r->th, NULL, code_run_main, r);
	if (e) {
		errorf(resp, 500, "thread: %s", strerror(e));
		code_run_free(r);
		return;
	}
	r->running = true;
	stream_respond(resp, code_run_read, code_run_free, r);
}

/* The session of cell id (c, a request's handle), installed on the first
 * /code: one request installs it while the cell's other /code requests
 * wait; requests on other cells never wait for it (a cell's install may
 * take as long as the cell makes it). */
static int session_ensure(struct api *a, const char *id, struct cell *c, struct sc_err *err)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *e;
	while ((e = find_cell(a, id)) && e->session_starting)
		pthread_cond_wait(&a->session_cv, &a->mu);
	bool ready = e && e->session;
	if (e && !ready)
		e->session_starting = true;
	pthread_mutex_unlock(&a->mu);
	if (!e)
		return sc_fail(err, ENOENT, "the cell was deleted");
	if (ready)
		return 0;
	int rc = lang_session_install(c, lang_find("python"), err);
	pthread_mutex_lock(&a->mu);
	if ((e = find_cell(a, id))) {
		e->session_starting = false;
		e->session = rc == 0;
	}
	pthread_cond_broadcast(&a->session_cv);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static void cells_code(struct api *a, const char *id, bool session, const struct api_request *req,
		       struct api_response *resp)
{
	struct code_run *r = calloc(1, sizeof(*r));
	if (!r) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	r->a = a;
	r->session = session;
	r->stdin_fd = r->sp[0] = r->sp[1] = -1;
	snprintf(r->id, sizeof(r->id), "%s", id);
	if (!(r->j = parse_body(req, resp, false)) || !code_run_parse(a, r, resp) ||
	    cell_begin(a, id, &r->c, resp) < 0) {
		r->c = NULL;
		code_run_free(r);
		return;
	}
	struct sc_err err = {0};
	int rc = session ? session_ensure(a, id, r->c, &err) : 0;
	if (rc < 0) {
		errorf(resp, 500, "starting the session: %s", err.msg);
		code_run_free(r);
		return;
	}
	if (wants_ndjson(req)) {
		code_run_stream(r, resp);
		return;
	}
	r->rc = code_run_do(r);
	if (r->rc < 0)
		errorf(resp, r->err.errnum == EINVAL ? 422 : 500, "%s", r->err.msg);
	else
		send_lang_result(a, resp, &r->res, session);
	code_run_free(r);
}

void api_tick(struct api *a)
{
	struct cell *gone[8];
	size_t n = 0;
	double now = now_s();
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->ncells && n < SC_ARRAY_LEN(gone);) {
		struct api_cell *e = &a->cells[i];
		if (e->id[0] && !e->busy && now - e->last_used > e->idle_s) {
			sc_log(&a->cfg.log, SC_LOG_INFO,
			       "{\"event\":\"cell_idle_removed\",\"id\":\"%s\"}", e->id);
			gone[n++] = drop_cell_locked(a, i);
			continue; /* entry i is now another cell */
		}
		i++;
	}
	pthread_mutex_unlock(&a->mu);
	for (size_t i = 0; i < n; i++)
		cell_pool_release(a->pool, gone[i]);
}

/* ---- routing ---- */

static bool has_dotdot(const char *path)
{
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if ((n == 2 && s[0] == '.' && s[1] == '.') || (n == 1 && s[0] == '.'))
			return true;
		s += n;
	}
	return false;
}

static const char *given_token(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Authorization") : NULL;
	if (h && !strncasecmp(h, "Bearer ", 7)) {
		h += 7;
		while (*h == ' ')
			h++;
		return h;
	}
	return req->query ? req->query(req->ctx, "token") : NULL;
}

void api_handle(struct api *a, const struct api_request *req, struct api_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	const char *m = req->method, *p = req->path;
	const char *tok = given_token(req);
	bool ping = p && (!strcmp(p, "/v1/ping") || !strcmp(p, "/ping")) &&
		    (!strcmp(m, "GET") || !strcmp(m, "HEAD"));
	/* /v1/ping is a health probe's (which cannot send a secret): it says
	 * "pong" to anyone, but a token given must be right */
	if (ping ? tok && !api_token_ok(a, tok) : !api_token_ok(a, tok)) {
		api_response_error(resp, 401, "a token is required (Authorization: Bearer TOKEN)");
		return;
	}
	if (ping) {
		char *b = strdup("\"pong\"\n");
		set_body(resp, 200, "application/json", b, b ? strlen(b) : 0);
		return;
	}
	if (!p || p[0] != '/' || has_dotdot(p) || strnlen(p, 4096) >= 4096) {
		api_response_error(resp, 400, "bad path");
		return;
	}
	if (!strcmp(p, "/v1/ping") || !strcmp(p, "/ping"))
		goto bad_method;
	if (!strcmp(p, "/run_code") || !strcmp(p, "/v1/run_code")) {
		if (strcmp(m, "POST"))
			goto bad_method;
		run_code(a, req, resp);
		return;
	}
	if (!strcmp(p, "/cells") || !strcmp(p, "/cells/")) {
		if (!strcmp(m, "POST"))
			cells_create(a, req, resp);
		else if (!strcmp(m, "GET"))
			cells_list(a, resp);
		else
			goto bad_method;
		return;
	}
	if (!strncmp(p, "/cells/", 7)) {
		const char *id = p + 7, *slash = strchr(id, '/');
		size_t idlen = slash ? (size_t)(slash - id) : strlen(id);
		if (!valid_id(id, idlen)) {
			api_response_error(resp, 404, "no such cell");
			return;
		}
		char idbuf[API_ID_LEN + 1];
		memcpy(idbuf, id, API_ID_LEN);
		idbuf[API_ID_LEN] = '\0';
		const char *rest = slash ? slash : "";
		if (!rest[0]) {
			if (strcmp(m, "DELETE"))
				goto bad_method;
			cells_delete(a, idbuf, resp);
		} else if (!strcmp(rest, "/exec")) {
			if (strcmp(m, "POST"))
				goto bad_method;
			cells_exec(a, idbuf, req, resp);
		} else if (!strcmp(rest, "/code") || !strcmp(rest, "/run")) {
			if (strcmp(m, "POST"))
				goto bad_method;
			cells_code(a, idbuf, !strcmp(rest, "/code"), req, resp);
		} else if (!strcmp(rest, "/files")) {
			if (strcmp(m, "GET") && strcmp(m, "PUT"))
				goto bad_method;
			cells_files(a, idbuf, req, resp);
		} else {
			api_response_error(resp, 404, "no such route");
		}
		return;
	}
	api_response_error(resp, 404, "no such route (see docs/api.md)");
	return;
bad_method:
	errorf(resp, 405, "method %.16s is not allowed on %.200s", m, p);
}

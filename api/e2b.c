/* E2B's control plane (the SDKs' E2B_API_URL): sandboxes created, shown,
 * listed, killed, their time set, connected to; and what envd's routes
 * share: a request's sandbox from E2b-Sandbox-Id checked against its
 * access token, its user, its paths. A sandbox is a cell of the server's
 * table (cells.c: the same pool, limits and policy as POST /cells) that
 * dies when its time is up (api_tick). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "../common/base64.h"
#include "e2b_priv.h"

void api_e2b_free(struct api_e2b *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nprocs; i++) {
		api_stream_kill(e->procs[i].s);
		if (e->procs[i].stdin_w >= 0)
			close(e->procs[i].stdin_w);
		if (e->procs[i].pty >= 0)
			close(e->procs[i].pty);
	}
	cJSON_Delete(e->metadata);
	cJSON_Delete(e->env);
	explicit_bzero(e->token, sizeof(e->token));
	free(e);
}

static bool new_token(char out[API_E2B_TOKEN_LEN + 1]);
static bool api_e2b_exists(struct api *a, const char *id);

struct api_e2b *api_e2b_copy(const struct api_e2b *e)
{
	struct api_e2b *c = calloc(1, sizeof(*c));
	if (!c || !new_token(c->token)) {
		free(c);
		return NULL;
	}
	snprintf(c->template_id, sizeof(c->template_id), "%s", e->template_id);
	c->started = (double)time(NULL);
	c->end_at = e->end_at;
	c->next_pid = 1000;
	if ((e->metadata && !(c->metadata = cJSON_Duplicate(e->metadata, true))) ||
	    (e->env && !(c->env = cJSON_Duplicate(e->env, true)))) {
		api_e2b_free(c);
		return NULL;
	}
	return c;
}

double api_e2b_end_at(const struct api_e2b *e)
{
	return e->paused ? INFINITY : e->end_at; /* E2B keeps paused sandboxes */
}

void api_e2b_error(struct api_response *resp, int status, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fprintf(jb.f, "{\"code\":%d,\"message\":", status);
	api_json_string(jb.f, msg, strlen(msg));
	fputc('}', jb.f);
	api_jb_send(&jb, resp, status);
}

/* A refusal of the request layer in E2B's shape. */
static void refuse(struct api_response *resp, const struct api_bad *bad)
{
	api_e2b_error(resp, bad->status == 422 ? 400 : bad->status, "%s", bad->msg);
}

/* {k: v} of strings, at most API_E2B_MAX_META entries of bounded length
 * (absent or null: *out NULL); a copy into *out. */
static bool string_map(const cJSON *j, const char *k, cJSON **out, struct api_bad *bad)
{
	const cJSON *m, *v;
	*out = NULL;
	if (!api_req_typed(j, k, cJSON_Object, "an object of strings", &m, bad))
		return false;
	if (!m)
		return true;
	size_t n = 0;
	cJSON_ArrayForEach(v, m)
	{
		if (!cJSON_IsString(v) || ++n > API_E2B_MAX_META ||
		    strnlen(v->string, API_E2B_MAX_META_LEN + 1) > API_E2B_MAX_META_LEN ||
		    strnlen(v->valuestring, API_E2B_MAX_META_LEN + 1) > API_E2B_MAX_META_LEN)
			return api_bad(bad, 400, k,
				       "%s: at most %d string entries of at most %d bytes", k,
				       API_E2B_MAX_META, API_E2B_MAX_META_LEN);
	}
	*out = cJSON_Duplicate(m, true);
	return *out || api_bad(bad, 500, k, "out of memory");
}

/* A template id names the server's image: E2B's defaults ("base",
 * "code-interpreter-v1" and the like) do, and so does the image's own
 * name; with serve --allow-images, any other names its image (into
 * image: a store name or a registry reference, as POST /cells' "image");
 * else it is refused. */
static bool template_default(const char *t)
{
	static const char *const DEFAULTS[] = {"base", "code-interpreter-v1", "code-interpreter",
					       "desktop", "mcp-gateway"};
	for (size_t i = 0; t && i < SC_ARRAY_LEN(DEFAULTS); i++)
		if (!strcmp(t, DEFAULTS[i]))
			return true;
	return false;
}

static bool template_ok(const struct api *a, const char *t, char image[API_IMAGE_NAME_MAX + 1],
			struct api_bad *bad)
{
	image[0] = '\0';
	if (!t || template_default(t))
		return true;
	return api_image_choice(&a->lim, t, image, bad);
}

/* The image a create names: its metadata's image key (serve
 * --e2b-image-key: slime's E2BSandbox routes its task images so), else
 * its templateID; both, naming two images: refused. */
static bool create_image(const struct api *a, const char *tmpl, const cJSON *meta,
			 char image[API_IMAGE_NAME_MAX + 1], struct api_bad *bad)
{
	const char *key = a->cfg.e2b_image_key ? a->cfg.e2b_image_key : API_E2B_IMAGE_KEY;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(meta, key);
	const char *named = cJSON_IsString(m) ? m->valuestring : NULL;
	if (named && tmpl && !template_default(tmpl) && strcmp(tmpl, named) != 0)
		return api_bad(bad, 400, "metadata",
			       "templateID %.64s and metadata %.64s (%.64s) name two images", tmpl,
			       key, named);
	return template_ok(a, named ? named : tmpl, image, bad);
}

static bool new_token(char out[API_E2B_TOKEN_LEN + 1])
{
	unsigned char rnd[API_E2B_TOKEN_LEN / 2];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return false;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	return true;
}

/* A sandbox's timeout in seconds (E2B's default when not positive), cut
 * to the server's cap. */
static double sandbox_timeout(const struct api *a, double t)
{
	return api_timeout(&a->lim, t, API_E2B_DEFAULT_TIMEOUT);
}

/* The create's body into a new struct api_e2b; NULL with bad. */
static struct api_e2b *parse_create(struct api *a, const cJSON *j,
				    char image[API_IMAGE_NAME_MAX + 1], struct api_bad *bad)
{
	const char *tmpl;
	double timeout;
	cJSON *meta = NULL, *env = NULL;
	if (!api_req_str(j, "templateID", &tmpl, bad) ||
	    !api_req_num(j, "timeout", API_E2B_DEFAULT_TIMEOUT, &timeout, bad) ||
	    !string_map(j, "metadata", &meta, bad) || !string_map(j, "envVars", &env, bad) ||
	    !create_image(a, tmpl, meta, image, bad)) {
		cJSON_Delete(meta);
		cJSON_Delete(env);
		return NULL;
	}
	struct api_e2b *e = calloc(1, sizeof(*e));
	if (!e || !new_token(e->token)) {
		free(e);
		cJSON_Delete(meta);
		cJSON_Delete(env);
		api_bad(bad, 500, "", "out of memory or randomness");
		return NULL;
	}
	snprintf(e->template_id, sizeof(e->template_id), "%s", tmpl ? tmpl : "base");
	e->metadata = meta;
	e->env = env;
	e->started = (double)time(NULL);
	e->end_at = sc_now() + sandbox_timeout(a, timeout);
	e->next_pid = 1000;
	return e;
}

static void put_time(FILE *f, double wall)
{
	time_t t = (time_t)wall;
	struct tm tm;
	char buf[40];
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "\"%s\"", buf);
}

/* One sandbox as E2B shows it (under a->mu); token: with its
 * envdAccessToken (the create's and connect's answers, and GET one). */
static void sandbox_json(FILE *f, const struct api *a, const struct api_cell *c, bool token)
{
	const struct api_e2b *e = c->e2b;
	double wall_end = (double)time(NULL) + (e->end_at - sc_now());
	fputs("{\"sandboxID\":", f);
	api_json_string(f, c->id, strlen(c->id));
	fputs(",\"templateID\":", f);
	api_json_string(f, e->template_id, strlen(e->template_id));
	fputs(",\"clientID\":\"sandcell\",\"envdVersion\":\"" API_E2B_ENVD_VERSION "\"", f);
	if (token) {
		char traffic[API_PORT_TOKEN_LEN + 1];
		api_port_token(a, c->id, traffic);
		fputs(",\"envdAccessToken\":", f);
		api_json_string(f, e->token, strlen(e->token));
		fprintf(f, ",\"trafficAccessToken\":\"%s\"", traffic);
	}
	/* getHost(port) is PORT-ID.DOMAIN: serve --domain */
	fputs(",\"domain\":", f);
	if (a->cfg.domain)
		api_json_string(f, a->cfg.domain, strlen(a->cfg.domain));
	else
		fputs("null", f);
	fputs(e->paused ? ",\"state\":\"paused\",\"startedAt\":"
			: ",\"state\":\"running\",\"startedAt\":",
	      f);
	put_time(f, e->started);
	fputs(",\"endAt\":", f);
	put_time(f, wall_end);
	fprintf(f, ",\"cpuCount\":%d,\"memoryMB\":%llu,\"diskSizeMB\":%llu,\"metadata\":",
		api_e2b_cores(a), (unsigned long long)(api_e2b_memory(a, c) >> 20),
		(unsigned long long)(a->cfg.spec->limits.disk >> 20));
	char *m = e->metadata ? cJSON_PrintUnformatted(e->metadata) : NULL;
	fputs(m ? m : "{}", f);
	free(m);
	fputc('}', f);
}

/* Answer one sandbox (under a->mu); 404 when id is no sandbox. */
static void answer_sandbox(struct api *a, const char *id, int status, bool token,
			   struct api_response *resp)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	pthread_mutex_lock(&a->mu);
	const struct api_cell *c = api_cell_find_locked(a, id);
	if (c && c->e2b)
		sandbox_json(jb.f, a, c, token);
	pthread_mutex_unlock(&a->mu);
	if (!c || !c->e2b) {
		free(api_jb_close(&jb));
		api_e2b_error(resp, 404, "sandbox %s not found", id);
		return;
	}
	api_jb_send(&jb, resp, status);
}

void api_e2b_create(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	struct api_cell_new want = {.memory_mb = -1, .idle_s = INFINITY};
	struct api_e2b *e = j ? parse_create(a, j, want.image, &bad) : NULL;
	cJSON_Delete(j);
	if (!e) {
		refuse(resp, &bad);
		return;
	}
	struct api_cell nc;
	struct api_response inner = {0};
	if (api_cells_add(a, &want, e, &nc, &inner) < 0) {
		api_e2b_free(e);
		api_e2b_error(resp, inner.status, "%.*s", (int)inner.body_len,
			      inner.body ? inner.body : "");
		api_response_free(&inner);
		return;
	}
	answer_sandbox(a, nc.id, 201, true, resp);
}

/* E2B's fork body: {"count": 1..100 (1), "timeout": the children's
 * seconds (15)}; false with bad. */
static bool parse_fork(const cJSON *j, unsigned *count, double *timeout, struct api_bad *bad)
{
	double n;
	if (!api_req_num(j, "count", 1, &n, bad) ||
	    !api_req_num(j, "timeout", API_E2B_FORK_TIMEOUT, timeout, bad))
		return false;
	if (!(n >= 1 && n <= API_FORK_MAX) || n != floor(n))
		return api_bad(bad, 400, "count", "count: a whole number from 1 to %d", API_FORK_MAX);
	*count = (unsigned)n;
	return true;
}

/* The children as E2B's fork answers them: one entry each, a sandbox
 * (with its access token) or an error with a code (429: no room). */
static void answer_forks(struct api *a, const struct api_fork_child *kids, unsigned count,
			 struct api_response *resp)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputc('[', jb.f);
	for (unsigned i = 0; i < count; i++) {
		fputs(i ? ",{" : "{", jb.f);
		pthread_mutex_lock(&a->mu);
		const struct api_cell *c = kids[i].err[0] ? NULL : api_cell_find_locked(a, kids[i].id);
		if (c && c->e2b) {
			fputs("\"sandbox\":", jb.f);
			sandbox_json(jb.f, a, c, true);
		}
		pthread_mutex_unlock(&a->mu);
		if (!c || !c->e2b) {
			const char *why = kids[i].err[0] ? kids[i].err : "the sandbox is gone";
			fprintf(jb.f, "\"error\":{\"code\":%d,\"message\":", kids[i].full ? 429 : 500);
			api_json_string(jb.f, why, strlen(why));
			fputc('}', jb.f);
		}
		fputc('}', jb.f);
	}
	fputc(']', jb.f);
	api_jb_send(&jb, resp, 201);
}

void api_e2b_fork(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	unsigned count = 1;
	double timeout;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	bool ok = j && parse_fork(j, &count, &timeout, &bad);
	cJSON_Delete(j);
	if (!ok) {
		refuse(resp, &bad);
		return;
	}
	/* the children's state, from the parent's now (it may go meanwhile) */
	struct api_e2b *proto = NULL;
	pthread_mutex_lock(&a->mu);
	const struct api_cell *p = api_cell_find_locked(a, call->id);
	bool found = p && p->e2b;
	if (found && (proto = api_e2b_copy(p->e2b)))
		proto->end_at = sc_now() + sandbox_timeout(a, timeout);
	pthread_mutex_unlock(&a->mu);
	struct api_fork_child *kids = proto ? calloc(count, sizeof(*kids)) : NULL;
	struct api_response inner = {0};
	if (!found)
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
	else if (!kids)
		api_e2b_error(resp, 500, "out of memory");
	else if (api_fork_cells(a, call->id, count, false, proto, kids, &inner) < 0)
		api_e2b_error(resp, inner.status, "%.*s", (int)inner.body_len,
			      inner.body ? inner.body : "");
	else
		answer_forks(a, kids, count, resp);
	api_response_free(&inner);
	api_e2b_free(proto);
	free(kids);
}

static bool api_e2b_exists(struct api *a, const char *id)
{
	pthread_mutex_lock(&a->mu);
	const struct api_cell *c = api_cell_find_locked(a, id);
	bool found = c && c->e2b;
	pthread_mutex_unlock(&a->mu);
	return found;
}

void api_e2b_get(struct api *a, const struct api_call *call, struct api_response *resp)
{
	answer_sandbox(a, call->id, 200, true, resp);
}

/* The sandbox id's cell, for one request (api_cell_end after); NULL with
 * resp filled (404) when id is no sandbox. */
static struct cell *sandbox_begin(struct api *a, const char *id, struct api_response *resp)
{
	struct api_cell e;
	struct cell *c;
	struct api_response inner = {0};
	int rc = api_cell_begin_entry(a, id, &c, &e, &inner);
	api_response_free(&inner);
	if (rc == 0 && !e.e2b) { /* a cell of /cells, not a sandbox */
		api_cell_end(a, id, c);
		rc = -1;
	}
	if (rc < 0) {
		api_e2b_error(resp, 404, "sandbox %s not found", id);
		return NULL;
	}
	return c;
}

/* The sandbox's paused flag, and when it goes (end_at >= 0: set it). */
static void set_paused(struct api *a, const char *id, bool paused, double end_at)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	if (c && c->e2b) {
		c->e2b->paused = paused;
		if (end_at >= 0)
			c->e2b->end_at = end_at;
	}
	pthread_mutex_unlock(&a->mu);
}

static bool is_paused(struct api *a, const char *id)
{
	pthread_mutex_lock(&a->mu);
	const struct api_cell *c = api_cell_find_locked(a, id);
	bool paused = c && c->e2b && c->e2b->paused;
	pthread_mutex_unlock(&a->mu);
	return paused;
}

/* Resume sandbox id if it is paused (*resumed), with a new timeout (E2B's
 * default when not positive): 0, or -1 with resp filled. */
static int resume_if_paused(struct api *a, const char *id, double timeout, bool *resumed,
			    struct api_response *resp)
{
	*resumed = false;
	if (!is_paused(a, id))
		return 0;
	struct cell *c = sandbox_begin(a, id, resp);
	if (!c)
		return -1;
	struct sc_err err = {0};
	int rc = cell_resume(c, &err);
	api_cell_end(a, id, c);
	if (rc < 0 && err.errnum != EALREADY) { /* EALREADY: another resume won */
		api_e2b_error(resp, 500, "resume of sandbox %s: %s", id, err.msg);
		return -1;
	}
	set_paused(a, id, false, sc_now() + sandbox_timeout(a, timeout));
	*resumed = rc == 0;
	return 0;
}

/* POST /sandboxes/{id}/pause ({"memory": bool} is taken, and memory is
 * always kept): 204; 409 when it is paused already. */
void api_e2b_pause(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	if (!j) {
		refuse(resp, &bad);
		return;
	}
	cJSON_Delete(j);
	struct cell *c = sandbox_begin(a, call->id, resp);
	if (!c)
		return;
	struct sc_err err = {0};
	int rc = cell_pause(c, &err);
	if (rc == 0)
		set_paused(a, call->id, true, -1);
	api_cell_end(a, call->id, c);
	if (rc == 0)
		api_set_body(resp, 204, "application/json", NULL, 0);
	else if (err.errnum == EALREADY)
		api_e2b_error(resp, 409, "sandbox %s is paused already", call->id);
	else
		api_e2b_error(resp, 500, "pause of sandbox %s: %s", call->id, err.msg);
}

/* A connect's or resume's body ({"timeout": s}) read, into *timeout, and
 * the sandbox resumed when it was paused (*resumed); false when resp was
 * answered. */
static bool resume_call(struct api *a, const struct api_call *call, double *timeout, bool *resumed,
			struct api_response *resp)
{
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	bool ok = j && api_req_num(j, "timeout", -1, timeout, &bad);
	cJSON_Delete(j);
	if (!ok)
		refuse(resp, &bad);
	return ok && resume_if_paused(a, call->id, *timeout, resumed, resp) == 0;
}

/* POST /sandboxes/{id}/resume ({"timeout": s}; the older SDKs'): 201 with
 * the sandbox; 409 when it is not paused. */
void api_e2b_resume(struct api *a, const struct api_call *call, struct api_response *resp)
{
	double timeout;
	bool resumed;
	if (!resume_call(a, call, &timeout, &resumed, resp))
		return;
	if (resumed)
		answer_sandbox(a, call->id, 201, true, resp);
	else if (!api_e2b_exists(a, call->id))
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
	else
		api_e2b_error(resp, 409, "sandbox %s is not paused", call->id);
}

void api_e2b_connect(struct api *a, const struct api_call *call, struct api_response *resp)
{
	double timeout;
	bool resumed;
	if (!resume_call(a, call, &timeout, &resumed, resp))
		return;
	if (resumed) { /* as E2B: 201 for a sandbox that was paused */
		answer_sandbox(a, call->id, 201, true, resp);
		return;
	}
	if (timeout > 0) {
		/* as E2B: a connect may lengthen a sandbox's life, not shorten it */
		double end = sc_now() + sandbox_timeout(a, timeout);
		pthread_mutex_lock(&a->mu);
		struct api_cell *c = api_cell_find_locked(a, call->id);
		if (c && c->e2b && c->e2b->end_at < end)
			c->e2b->end_at = end;
		pthread_mutex_unlock(&a->mu);
	}
	answer_sandbox(a, call->id, 200, true, resp);
}

void api_e2b_kill(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct cell *c = NULL;
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, call->id);
	bool changing = e && e->e2b && e->changing;
	if (e && e->e2b && !changing)
		c = api_cell_drop_locked(a, (size_t)(e - a->cells));
	pthread_mutex_unlock(&a->mu);
	if (changing) {
		api_e2b_error(resp, 409, "sandbox %s is being forked: kill it when that ended", call->id);
		return;
	}
	if (!c) {
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
		return;
	}
	cell_pool_release(a->pool, c);
	api_set_body(resp, 204, "application/json", NULL, 0);
}

void api_e2b_timeout(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	double timeout;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, false, &bad);
	if (!j || !api_req_num(j, "timeout", -1, &timeout, &bad)) {
		cJSON_Delete(j);
		refuse(resp, &bad);
		return;
	}
	cJSON_Delete(j);
	if (!(timeout >= 0)) {
		api_e2b_error(resp, 400, "timeout: seconds, not negative");
		return;
	}
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, call->id);
	if (c && c->e2b)
		c->e2b->end_at = sc_now() + (timeout > 0 ? sandbox_timeout(a, timeout) : 0);
	bool found = c && c->e2b;
	pthread_mutex_unlock(&a->mu);
	if (!found)
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
	else
		api_set_body(resp, 204, "application/json", NULL, 0);
}

/* %XX decoded in place (the SDK encodes each key and value once more
 * before the query's own encoding). false: a bad escape. */
static bool percent_decode(char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (*r != '%') {
			*w++ = *r;
			continue;
		}
		unsigned v;
		if (!r[1] || !r[2] || sscanf(r + 1, "%2x", &v) != 1 || v == 0)
			return false;
		*w++ = (char)v;
		r += 2;
	}
	*w = '\0';
	return true;
}

/* Does the sandbox's metadata hold every k=v of the filter (an
 * "&"-joined list)? */
static bool metadata_matches(const cJSON *meta, const char *filter)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", filter);
	char *save = NULL;
	for (char *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : "";
		if (eq)
			*eq = '\0';
		char val[API_E2B_MAX_META_LEN * 3 + 1];
		snprintf(val, sizeof(val), "%s", v);
		if (!percent_decode(kv) || !percent_decode(val))
			return false;
		const cJSON *have = meta ? cJSON_GetObjectItemCaseSensitive(meta, kv) : NULL;
		if (!cJSON_IsString(have) || strcmp(have->valuestring, val))
			return false;
	}
	return true;
}

void api_e2b_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	const struct api_request *req = call->req;
	const char *filter = req->query ? req->query(req->ctx, "metadata") : NULL;
	const char *state = req->query ? req->query(req->ctx, "state") : NULL;
	if (filter && strnlen(filter, 4096) >= 4096) {
		api_e2b_error(resp, 400, "metadata: a filter of at most 4095 bytes");
		return;
	}
	/* no state: both, as E2B lists them */
	bool running = !state || strstr(state, "running"), paused = !state || strstr(state, "paused");
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	fputc('[', jb.f);
	size_t k = 0;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->ncells; i++) {
		const struct api_cell *c = &a->cells[i];
		if (!c->id[0] || !c->e2b || (filter && !metadata_matches(c->e2b->metadata, filter)) ||
		    !(c->e2b->paused ? paused : running))
			continue;
		if (k++)
			fputc(',', jb.f);
		sandbox_json(jb.f, a, c, false);
	}
	pthread_mutex_unlock(&a->mu);
	fputc(']', jb.f);
	api_jb_send(&jb, resp, 200);
}

void api_e2b_health(struct api *a, const struct api_call *call, struct api_response *resp)
{
	(void)a;
	(void)call;
	api_set_body(resp, 204, "application/json", NULL, 0);
}

/* ---- what envd's routes share ---- */

static void envd_refuse(struct api_response *resp, bool http, int status, const char *msg)
{
	if (http)
		api_e2b_error(resp, status, "%s", msg);
	else
		api_connect_error(resp, api_connect_code_of_status(status), "%s", msg);
}

/* traffic: the sandbox's traffic token (E2B-Traffic-Access-Token) will
 * do as well as its access token */
static bool envd_auth(struct api *a, const struct api_request *req, char id[API_ID_LEN + 1],
		      bool http, bool traffic, struct api_response *resp)
{
	const char *sid = req->header ? req->header(req->ctx, "E2b-Sandbox-Id") : NULL;
	const char *tok = req->header ? req->header(req->ctx, "X-Access-Token") : NULL;
	const char *ttok = traffic && req->header ? req->header(req->ctx, "E2B-Traffic-Access-Token")
						  : NULL;
	size_t node_len;
	if (!sid || !api_id_parse(sid, strnlen(sid, API_ID_LEN + 1), &node_len) ||
	    strlen(sid) > API_ID_LEN) {
		envd_refuse(resp, http, 400, "E2b-Sandbox-Id: a sandbox id is required");
		return false;
	}
	snprintf(id, API_ID_LEN + 1, "%s", sid);
	char port_token[API_PORT_TOKEN_LEN + 1] = "";
	if (ttok)
		api_port_token(a, id, port_token);
	pthread_mutex_lock(&a->mu);
	const struct api_cell *c = api_cell_find_locked(a, id);
	bool found = c && c->e2b, ok = found && tok && api_secret_equal(c->e2b->token, tok);
	ok = ok || (found && ttok && api_secret_equal(port_token, ttok));
	bool paused = found && c->e2b->paused;
	pthread_mutex_unlock(&a->mu);
	if (!found) /* as E2B's proxy answers for a sandbox that is gone */
		envd_refuse(resp, http, http ? 502 : 503, "the sandbox is not running");
	else if (ok && paused) {
		envd_refuse(resp, http, http ? 502 : 503,
			    "the sandbox is paused: connect to it to resume it");
		ok = false;
	}
	else if (!ok)
		envd_refuse(resp, http, 401, "X-Access-Token: the sandbox's access token is required");
	return ok;
}

bool api_e2b_envd_auth(struct api *a, const struct api_request *req, char id[API_ID_LEN + 1],
		       bool http, struct api_response *resp)
{
	return envd_auth(a, req, id, http, false, resp);
}

bool api_e2b_code_auth(struct api *a, const struct api_request *req, char id[API_ID_LEN + 1],
		       struct api_response *resp)
{
	return envd_auth(a, req, id, true, true, resp);
}

void api_e2b_user(const struct api_request *req, bool *has_user, uint32_t *uid, uint32_t *gid)
{
	const char *h = req->header ? req->header(req->ctx, "Authorization") : NULL;
	*has_user = false;
	if (!h || strncasecmp(h, "Basic ", 6) || strnlen(h, 256) >= 256)
		return;
	char *dec = NULL;
	size_t n;
	if (sc_base64_decode(h + 6, strlen(h + 6), &dec, &n) < 0)
		return;
	if (n >= 5 && !memcmp(dec, "root", 4) && dec[4] == ':') {
		*has_user = true;
		*uid = *gid = 0;
	}
	free(dec);
}

bool api_e2b_path(const char *p, char out[API_CELL_PATH])
{
	char abs[API_CELL_PATH];
	if (!p || !p[0])
		return false;
	if (p[0] != '/') {
		int w = snprintf(abs, sizeof(abs), API_E2B_HOME "/%s", p);
		if (w < 0 || (size_t)w >= sizeof(abs))
			return false;
		p = abs;
	}
	return api_cell_path(p, out, API_CELL_PATH);
}

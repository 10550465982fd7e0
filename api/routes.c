/* The routes: one table of {method, pattern, handler}, the token, and
 * api_handle, which finds the row of a request. A pattern is the path
 * itself, with {id} standing for a cell id (NODE-HEX, node.c) and {tag}
 * for one more path segment (a checkpoint's tag, checked by its handler). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b_priv.h"

static void ping(struct api *a, const struct api_call *call, struct api_response *resp)
{
	(void)a;
	(void)call;
	char *b = strdup("\"pong\"\n");
	api_set_body(resp, 200, "application/json", b, b ? strlen(b) : 0);
}

struct api_route {
	const char *method;
	const char *pattern;
	api_handler *fn;
	/* a health probe's (a kubelet's httpGet cannot carry a secret): it
	 * answers anyone, but a token given must be right */
	bool open;
	/* E2B's envd (E2B_SANDBOX_URL): no server token, the sandbox's
	 * access token instead (X-Access-Token, checked by the handler) */
	bool envd;
};

static const struct api_route ROUTES[] = {
	{"GET", "/v1/ping", ping, true, false},
	{"HEAD", "/v1/ping", ping, true, false},
	{"GET", "/ping", ping, true, false},
	{"HEAD", "/ping", ping, true, false},
	{"POST", "/run_code", api_run_code, false, false},
	{"POST", "/v1/run_code", api_run_code, false, false},
	{"POST", "/run_jupyter", api_run_jupyter, false, false},
	{"POST", "/v1/run_jupyter", api_run_jupyter, false, false},
	{"POST", "/cells", api_cells_create, false, false},
	{"GET", "/cells", api_cells_list, false, false},
	{"POST", "/cells/", api_cells_create, false, false},
	{"GET", "/cells/", api_cells_list, false, false},
	{"DELETE", "/cells/{id}", api_cells_delete, false, false},
	{"POST", "/cells/{id}/exec", api_cells_exec, false, false},
	{"POST", "/cells/{id}/run", api_cells_run, false, false},
	{"POST", "/cells/{id}/code", api_cells_code, false, false},
	{"GET", "/cells/{id}/files", api_files_get, false, false},
	{"PUT", "/cells/{id}/files", api_files_put, false, false},
	{"POST", "/cells/{id}/fork", api_cells_fork, false, false},
	{"POST", "/cells/{id}/checkpoints", api_checkpoints_create, false, false},
	{"GET", "/cells/{id}/checkpoints", api_checkpoints_list, false, false},
	{"DELETE", "/cells/{id}/checkpoints/{tag}", api_checkpoints_delete, false, false},
	{"POST", "/cells/{id}/rollback", api_cells_rollback, false, false},
	{"GET", "/metrics", api_metrics_get, false, false},
	/* E2B's control plane (E2B_API_URL, X-API-KEY: the token) */
	{"POST", "/sandboxes", api_e2b_create, false, false},
	{"POST", "/v2/sandboxes", api_e2b_create, false, false},
	{"GET", "/sandboxes", api_e2b_list, false, false},
	{"GET", "/v2/sandboxes", api_e2b_list, false, false},
	{"GET", "/sandboxes/{id}", api_e2b_get, false, false},
	{"DELETE", "/sandboxes/{id}", api_e2b_kill, false, false},
	{"POST", "/sandboxes/{id}/timeout", api_e2b_timeout, false, false},
	{"POST", "/sandboxes/{id}/connect", api_e2b_connect, false, false},
	{"POST", "/sandboxes/{id}/fork", api_e2b_fork, false, false},
	{"GET", "/sandboxes/{id}/metrics", api_e2b_metrics, false, false},
	{"POST", "/v2/sandboxes/{id}/connect", api_e2b_connect, false, false},
	{"POST", "/sandboxes/{id}/pause", api_e2b_pause, false, false},
	{"POST", "/sandboxes/{id}/resume", api_e2b_resume, false, false},
	{"POST", "/sandboxes/{id}/snapshots", api_e2b_snapshot_create, false, false},
	{"GET", "/snapshots", api_e2b_snapshot_list, false, false},
	{"DELETE", "/templates/{tag}", api_e2b_template_delete, false, false},
	/* E2B's envd (E2B_SANDBOX_URL, E2b-Sandbox-Id, X-Access-Token) */
	{"GET", "/health", api_e2b_health, true, false},
	{"POST", "/process.Process/Start", api_e2b_process_start, false, true},
	{"POST", "/process.Process/List", api_e2b_process_list, false, true},
	{"POST", "/process.Process/SendSignal", api_e2b_process_signal, false, true},
	{"POST", "/process.Process/Connect", api_e2b_process_connect, false, true},
	{"POST", "/process.Process/SendInput", api_e2b_process_input, false, true},
	{"POST", "/process.Process/StreamInput", api_e2b_process_unimplemented, false, true},
	{"POST", "/process.Process/CloseStdin", api_e2b_process_close_stdin, false, true},
	{"POST", "/process.Process/Update", api_e2b_process_update, false, true},
	{"POST", "/filesystem.Filesystem/Stat", api_e2b_fs_stat, false, true},
	{"POST", "/filesystem.Filesystem/ListDir", api_e2b_fs_list, false, true},
	{"POST", "/filesystem.Filesystem/MakeDir", api_e2b_fs_mkdir, false, true},
	{"POST", "/filesystem.Filesystem/Move", api_e2b_fs_move, false, true},
	{"POST", "/filesystem.Filesystem/Remove", api_e2b_fs_remove, false, true},
	{"POST", "/filesystem.Filesystem/WatchDir", api_e2b_fs_watch, false, true},
	{"GET", "/files", api_e2b_files_get, false, true},
	{"POST", "/files", api_e2b_files_post, false, true},
	/* E2B's code interpreter (port 49999, the same URL) */
	{"POST", "/execute", api_e2b_execute, false, true},
	{"POST", "/contexts", api_e2b_context_create, false, true},
	{"GET", "/contexts", api_e2b_context_list, false, true},
	{"DELETE", "/contexts/{tag}", api_e2b_context_remove, false, true},
	{"POST", "/contexts/{tag}/restart", api_e2b_context_restart, false, true},
};
_Static_assert(SC_ARRAY_LEN(ROUTES) + 1 <= API_METRICS_ROUTES, "API_METRICS_ROUTES too small");

size_t api_route_count(void)
{
	return SC_ARRAY_LEN(ROUTES) + 1;
}

void api_route_label(size_t i, const char **method, const char **pattern)
{
	if (i < SC_ARRAY_LEN(ROUTES)) {
		*method = ROUTES[i].method;
		*pattern = ROUTES[i].pattern;
	} else {
		*method = "other";
		*pattern = "unmatched";
	}
}

static bool valid_id(const char *s, size_t n)
{
	size_t node_len;
	return api_id_parse(s, n, &node_len);
}

/* Does path match pat ({id}: a valid cell id, copied into call->id;
 * {tag}: a segment of 1 to API_TAG_SEGMENT - 1 bytes, into call->tag)? */
static bool match(const char *pat, const char *path, struct api_call *call)
{
	for (;;) {
		const char *hole = strchr(pat, '{');
		size_t lit = hole ? (size_t)(hole - pat) : strlen(pat);
		if (strncmp(pat, path, lit) != 0)
			return false;
		path += lit;
		if (!hole)
			return !*path;
		size_t n = strcspn(path, "/");
		bool tag = !strncmp(hole, "{tag}", 5);
		if (tag ? n == 0 || n >= sizeof(call->tag) : !valid_id(path, n))
			return false;
		char *into = tag ? call->tag : call->id;
		memcpy(into, path, n);
		into[n] = '\0';
		path += n;
		pat = hole + (tag ? 5 : 4);
	}
}

size_t api_route_index(const char *method, const char *path)
{
	struct api_call call;
	for (size_t i = 0; method && path && i < SC_ARRAY_LEN(ROUTES); i++)
		if (!strcmp(ROUTES[i].method, method) && match(ROUTES[i].pattern, path, &call))
			return i;
	return SC_ARRAY_LEN(ROUTES);
}

static const struct api_route *open_route(const char *method, const char *path)
{
	struct api_call call;
	for (size_t i = 0; path && i < SC_ARRAY_LEN(ROUTES); i++)
		if (ROUTES[i].open && !strcmp(ROUTES[i].method, method) &&
		    match(ROUTES[i].pattern, path, &call))
			return &ROUTES[i];
	return NULL;
}

bool api_route_is_open(const char *method, const char *path)
{
	return open_route(method, path) != NULL;
}

static bool is_envd(const char *method, const char *path)
{
	struct api_call call;
	for (size_t i = 0; path && i < SC_ARRAY_LEN(ROUTES); i++)
		if (ROUTES[i].envd && !strcmp(ROUTES[i].method, method) &&
		    match(ROUTES[i].pattern, path, &call))
			return true;
	return false;
}

bool api_route_skips_token(const char *method, const char *path)
{
	return open_route(method, path) || is_envd(method, path);
}

bool api_route_is_ungated(const char *method, const char *path)
{
	/* a scrape renders in microseconds and must answer most when every
	 * slot is taken */
	return !strcmp(method, "GET") && path && !strcmp(path, "/metrics");
}

int api_busy_status(const char *path)
{
	/* SandboxFusion's clients retry a 504 on /run_code */
	return !strcmp(path, "/run_code") || !strcmp(path, "/v1/run_code") ? 504 : 503;
}

const char *api_given_token(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Authorization") : NULL;
	if (h && !strncasecmp(h, "Bearer ", 7)) {
		h += 7;
		while (*h == ' ')
			h++;
		return h;
	}
	/* E2B's SDKs send their API key so */
	const char *key = req->header ? req->header(req->ctx, "X-API-KEY") : NULL;
	if (key)
		return key;
	return req->query ? req->query(req->ctx, "token") : NULL;
}

bool api_wants_ndjson(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Accept") : NULL;
	return h && strstr(h, "application/x-ndjson");
}

cJSON *api_call_body(const struct api_call *call, char *id, struct api_bad *bad)
{
	snprintf(id, API_ID_LEN + 1, "%s", call->id);
	return api_req_object(call->req->body, call->req->body_len, false, bad);
}

/* A "." or ".." component anywhere. */
static bool has_dots(const char *path)
{
	for (const char *s = path; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if ((n == 2 && s[0] == '.' && s[1] == '.') || (n == 1 && s[0] == '.'))
			return true;
		s += n;
	}
	return false;
}

/* A cell id of another node: 421 Misdirected Request, naming the owner
 * (a balancer that routes by the id's node part never sends one here). A
 * bare 16 hex digits is no server's: the handler's 404. */
static bool id_is_ours(const struct api *a, const char *id, struct api_response *resp)
{
	size_t k;
	api_id_parse(id, strlen(id), &k);
	if (!k || (k == strlen(a->node) && !memcmp(id, a->node, k)))
		return true;
	api_errorf(resp, 421,
		   "cell %s belongs to node '%.*s'; this is node '%s' (route by the id's "
		   "node part: docs/scale-out.md)",
		   id, (int)k, id, a->node);
	return false;
}

bool api_request_authorized(const struct api *a, const struct api_request *req)
{
	char id[API_ID_LEN + 1];
	unsigned port;
	const char *rest;
	bool by_host, by_query;
	if (api_port_request(a, req, id, &port, &rest, &by_host))
		return api_port_authorized(a, req, id, &by_query);
	const char *tok = api_given_token(req);
	return api_route_skips_token(req->method, req->path) ? !tok || api_token_ok(a, tok)
							     : api_token_ok(a, tok);
}

static const char NEED_TOKEN[] = "a token is required (Authorization: Bearer TOKEN)";

/* A request for a cell's port (by path or by host name). */
static void port_request(struct api *a, struct api_call *call, unsigned port, const char *rest,
			 bool by_host, struct api_response *resp)
{
	const struct api_request *req = call->req;
	bool by_query;
	if (!api_port_authorized(a, req, call->id, &by_query)) {
		api_response_error(resp, 401, NEED_TOKEN);
		return;
	}
	if (!rest || rest[0] != '/' || strnlen(rest, 4096) >= 4096 ||
	    (!by_host && has_dots(req->path))) {
		api_response_error(resp, 400, "bad path");
		return;
	}
	if (!id_is_ours(a, call->id, resp))
		return;
	api_ports_proxy(a, call, port, rest, resp);
	if (by_query && resp->status != 101)
		api_port_set_cookie(a, call->id, by_host, resp);
}

void api_handle(struct api *a, const struct api_request *req, struct api_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	const char *m = req->method, *p = req->path;
	struct api_call call = {.req = req};
	unsigned port;
	const char *rest;
	bool by_host;
	if (api_port_request(a, req, call.id, &port, &rest, &by_host)) {
		port_request(a, &call, port, rest, by_host, resp);
		return;
	}
	const struct api_route *open = open_route(m, p);
	if (!api_request_authorized(a, req)) {
		api_response_error(resp, 401, NEED_TOKEN);
		return;
	}
	if (open) {
		open->fn(a, &call, resp);
		return;
	}
	if (!p || p[0] != '/' || has_dots(p) || strnlen(p, 4096) >= 4096) {
		api_response_error(resp, 400, "bad path");
		return;
	}
	bool known = false;
	for (size_t i = 0; i < SC_ARRAY_LEN(ROUTES); i++) {
		if (!match(ROUTES[i].pattern, p, &call))
			continue;
		if (!strcmp(ROUTES[i].method, m)) {
			if (call.id[0] && !id_is_ours(a, call.id, resp))
				return;
			ROUTES[i].fn(a, &call, resp);
			return;
		}
		known = true;
	}
	if (known) {
		api_errorf(resp, 405, "method %.16s is not allowed on %.200s", m, p);
	} else if (!strncmp(p, "/sandboxes/", 11) || !strncmp(p, "/v2/sandboxes/", 14)) {
		api_e2b_error(resp, 404, "no such sandbox or route");
	} else if (!strncmp(p, "/cells/", 7)) {
		/* a cell id that is not one names no cell; a cell's unknown
		 * resource is no route */
		bool id_ok = valid_id(p + 7, strcspn(p + 7, "/"));
		api_response_error(resp, 404, id_ok ? "no such route" : "no such cell");
	} else {
		api_response_error(resp, 404, "no such route (see docs/api.md)");
	}
}

/* sandcell api: the protocols over sandcell's cells and languages, all
 * through one request layer (api/request.c: JSON in, checked and clamped
 * C structs out) and the same resource calls (api/ops.c):
 *   - the HTTP API and SandboxFusion's /run_code (`sandcell serve`): a
 *     route table (api/routes.c) whose handlers are the resources (cells,
 *     exec, files and tar, code), a transport-free api_handle (method,
 *     path, query, headers and body in; status, headers and a JSON body or
 *     an NDJSON stream out), and its HTTP transport (api/http*.c,
 *     libmicrohttpd loaded at run time);
 *   - MCP over stdio (`sandcell mcp`): JSON-RPC framing and a tool table
 *     (api/mcp*.c);
 *   - the JSON encoders of results, shared with the CLI (api/json.c).
 * Above batch/, lang/ and runtime/; only cli/ calls it.
 *
 * Typical use (cli/cmd_serve.c):
 *   struct api_config cfg; api_config_init(&cfg); cfg.spec = &spec; ...
 *   struct api *a; api_new(&cfg, &a, &err);       // forks the pool: no threads yet
 *   api_http_serve(a, &http, &stop, &err);        // until stop is set
 *   api_free(a);                                  // removes every cell it made
 *
 * Threads. api_new and api_free: from one thread, while no request runs
 * (api_new forks the pool's workers: call it before any thread starts).
 * api_handle and api_tick are thread-safe (one request per call; the
 * cell table is locked inside); a streamed answer's job runs on a helper
 * thread of its own while the transport's thread reads it. The encoders
 * are thread-safe. The MCP server is one thread (api_mcp_serve).
 */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../common/sc.h"
#include "../lang/lang.h"
#include "../runtime/cell.h"

#define API_DEFAULT_MAX_BODY (16u << 20)    /* bytes of a request body */
#define API_DEFAULT_MAX_CONCURRENCY 16
#define API_DEFAULT_POOL 4
#define API_DEFAULT_MAX_CELLS 64
#define API_DEFAULT_CELL_IDLE 600.0         /* seconds */
#define API_DEFAULT_MAX_TIMEOUT 300.0       /* seconds a request may ask for */
#define API_MAX_FILE (16u << 20)            /* GET/PUT /cells/{id}/files */
#define API_MAX_HEADERS 32

/* ---- encoders (JSON) ---- */

/* s as a JSON string literal (quotes included): control characters
 * escaped, valid UTF-8 passed through, invalid bytes as U+FFFD. */
void api_json_string(FILE *f, const char *s, size_t len);
/* n bytes as a JSON string of their base64 (quotes included). */
void api_json_base64(FILE *f, const unsigned char *p, size_t n);
/* A command's result (exit_code, signal, timed_out, stdout, stderr, ...;
 * `run --json`, /cells/{id}/exec), no newline. */
void api_json_cell_result(FILE *f, const struct cell_result *res);
/* ,"replay":{"ok":B,"runs":N[,"error":S]} of a fork's child whose
 * session was replayed; nothing when r->tried is false. */
struct lang_replay;
void api_json_replay(FILE *f, const struct lang_replay *r);
/* The SandboxFusion result object of a lang run (no newline).
 * pod: executor_pod_name, NULL: null; session: add session_restarted. */
void api_json_lang_result(FILE *f, const struct lang_result *r, const char *pod, bool session);

/* ---- the server (HTTP routes, without HTTP: api_handle) ---- */

struct api_config {
	const struct cell_spec *spec; /* the cells it makes (must outlive the api) */
	size_t pool;                  /* ready cells kept (1..256) */
	size_t max_concurrency;       /* requests at once; more get 503 */
	size_t max_cells;             /* cells made by POST /cells alive at once */
	double cell_idle_s;           /* such a cell idle this long is removed */
	double max_timeout_s;         /* longer timeouts are cut to it (0: no cap) */
	size_t max_body;              /* bytes of a request body */
	const char *token;            /* NULL: no authentication (a unix socket) */
	const char *pod_name;         /* executor_pod_name in results, or NULL */
	const char *node_name;        /* the prefix of its cell ids (api_node_name_ok) */
	const char *domain;           /* ports by host name PORT-ID.DOMAIN, or NULL */
	/* the E2B create's metadata key that names the sandbox's image, as
	 * a template id does (slime's E2BSandbox routes images so); NULL:
	 * API_E2B_IMAGE_KEY */
	const char *e2b_image_key;
	/* POST /cells may name other images (stored ones, and references the
	 * store holds or, from the registries of allow_pull, "REG,REG" or
	 * "*", pulls), each with a pool of image_pool cells */
	bool allow_images;
	const char *allow_pull;
	bool pull_insecure;           /* plain HTTP to loopback registries */
	uint64_t store_max;           /* after a pull, the store trimmed to it (0: no cap) */
	size_t image_pool;
	/* A server no other takes over (the Python client's private ones):
	 * no lock on the state root, no records, its cells die with it, and
	 * it may share the root with others. Else one server per state root,
	 * whose /cells cells a restarted server adopts (api/restart.c). */
	bool ephemeral;
	/* /run_code's Python runs in a process cloned from an interpreter each
	 * pool cell starts ahead (lang_prep_cache.prestart), with the modules
	 * of preimport ("numpy,pandas", or NULL) imported */
	bool prestart;
	const char *preimport;
	/* A pool cell that served /run_code or a DELETEd /cells cell is
	 * renewed (cell_renew) instead of removed, at most max_reuse times
	 * (0: no bound), unless no_reuse */
	bool no_reuse;
	unsigned max_reuse;
	struct sc_log log;            /* one JSON line per request (SC_LOG_INFO),
				       * warnings */
};
void api_config_init(struct api_config *cfg);
/* A node name: 1 to API_NODE_NAME_MAX of a-z, 0-9 and '-', starting and
 * ending with a letter or digit (a DNS label, so that NAME-ID is one too). */
#define API_NODE_NAME_MAX 32
bool api_node_name_ok(const char *name);
/* A --domain: a host name (a-z, A-Z, 0-9, '-', '.'; no leading or
 * trailing '.') of at most 200 bytes, and an optional ":PORT". */
bool api_domain_ok(const char *domain);

struct api;
int api_new(const struct api_config *cfg, struct api **out, struct sc_err *err);
/* Remove every cell the api made (the pool's and POST /cells's). */
void api_free(struct api *a);
const struct api_config *api_get_config(const struct api *a);

struct api_header {
	const char *name, *value;
};

struct api_request {
	const char *method;           /* "GET", "POST", ... */
	const char *path;             /* without the query: "/run_code" */
	/* query parameters, already %-decoded, by name (NULL: absent) */
	const char *(*query)(void *ctx, const char *name);
	/* request headers by name, case-insensitive (NULL: absent) */
	const char *(*header)(void *ctx, const char *name);
	/* the query parameters again as one %-encoded string ("a=1&b=x%20y",
	 * "" for none) without `token`, into buf: false when it does not fit
	 * (NULL: the transport cannot tell) */
	bool (*query_string)(void *ctx, char *buf, size_t size);
	void *ctx;
	const char *body;             /* NUL-terminated, may hold NULs */
	size_t body_len;
	const char *peer;             /* for the log: "127.0.0.1:5555", "unix" */
	/* The request's W3C trace context as the server hands it on
	 * ("00-TRACE-SPAN-FLAGS", the server's span as the parent), or NULL:
	 * a command it runs gets it as TRACEPARENT (docs/api.md) */
	const char *traceparent;
};

struct api_response {
	int status;                   /* HTTP status */
	const char *content_type;     /* static string */
	char *body;                   /* malloc'd */
	size_t body_len;
	struct api_header headers[6]; /* static strings, in hbuf or upgrade_ctx */
	size_t nheaders;
	char hbuf[64];
	char cookie[160];             /* a Set-Cookie header's value */
	/* A streamed body (body NULL) instead: the transport calls stream
	 * from the connection's thread until it returns API_STREAM_END (or
	 * API_STREAM_ERROR: drop the connection); it may block. client_fd:
	 * the connection's socket (-1: unknown), to notice a client that
	 * went away (POLLRDHUP). stream_free is called once, always, after
	 * the last call or when the client is gone; it ends what the stream
	 * runs. A response with a stream keeps its concurrency slot until
	 * stream_free. */
	ssize_t (*stream)(void *ctx, char *buf, size_t max, int client_fd);
	void (*stream_free)(void *ctx);
	void *stream_ctx;
	/* A protocol switch (status 101: a WebSocket) instead: after the
	 * head, the transport relays bytes both ways between the client and
	 * upgrade_fd (sending the client upgrade_pre first: what followed
	 * the peer's own head) until both sides end, either fails or the
	 * server stops. upgrade_done is called once, always: after the relay,
	 * or when the switch never happened (the client went away); it
	 * closes upgrade_fd. Takes no concurrency slot. */
	bool upgrade;
	int upgrade_fd;
	const char *upgrade_pre;
	size_t upgrade_pre_len;
	void (*upgrade_done)(void *ctx);
	void *upgrade_ctx;
};
#define API_STREAM_END ((ssize_t)-1)
#define API_STREAM_ERROR ((ssize_t)-2)
/* Answer one request. Never fails: an error is a response (4xx/5xx with
 * {"detail": "..."}). Free the response with api_response_free. */
void api_handle(struct api *a, const struct api_request *req, struct api_response *resp);
void api_response_free(struct api_response *resp); /* stream_free too */
/* An answer made outside api_handle (the transport's 413, 503, ...). */
void api_response_error(struct api_response *resp, int status, const char *detail);
/* Is the token right? Constant time in the token's content. */
bool api_token_ok(const struct api *a, const char *given);
/* Housekeeping, every second or so: removes idle cells. */
void api_tick(struct api *a);
/* Requests being answered now (for draining). */
size_t api_in_flight(const struct api *a);
/* Take one of max_concurrency slots (false: full, answer 503) / give it back. */
bool api_enter(struct api *a);
void api_leave(struct api *a);
/* After the drain: end what still runs. Every exec and code run is
 * cancelled (its command killed: an exec answers 503, a code run a
 * SandboxError, a stream its error line), every cell of POST /cells goes
 * to the pool to be removed, and a /run_code that had no cell yet answers
 * 503. Thread-safe; the api is stopping from then on. */
void api_cancel(struct api *a);
/* The egress decisions appended to fd (a cell's egress.jsonl opened at its
 * end before the command ran: cell_egress_log_open) as a summary
 * (malloc'd), or NULL (fd -1, unreadable). Lines that do not parse are
 * skipped. Thread-safe. */
struct net_summary *api_net_summary_since(int fd);
/* Temporary trees of directory GET/PUT (files routes) left by a server
 * that died: removed when no process holds them. `sandcell gc`. */
int api_gc(size_t *removed, struct sc_err *err);

/* ---- the HTTP transport (api/http*.c) ---- */

/* api_http_opts_init's defaults */
#define API_HTTP_DEFAULT_LISTEN "127.0.0.1:8080"
#define API_HTTP_DEFAULT_CONNECTION_TIMEOUT 30.0 /* seconds */
#define API_HTTP_DEFAULT_HEAD_TIMEOUT 10.0       /* seconds */
#define API_HTTP_DEFAULT_REQUEST_DEADLINE 60.0   /* seconds */
#define API_HTTP_DEFAULT_MAX_HEADER 32768        /* bytes */
#define API_HTTP_DEFAULT_MAX_CONNECTIONS 256
#define API_HTTP_DEFAULT_DRAIN 30.0              /* seconds */

struct api_http_opts {
	const char *listen;           /* "127.0.0.1:8080", "[::1]:0", "unix:/path" */
	const char *tls_cert, *tls_key; /* PEM files, or NULL */
	bool insecure_plaintext;      /* allow a non-loopback listener without TLS */
	double connection_timeout_s;  /* an idle (or slow) connection is dropped */
	double head_timeout_s;        /* a request's head must be in within this
				       * of the accept (or of the last answer) */
	double request_deadline_s;    /* a request's body must be in within this
				       * of its head */
	size_t max_header;            /* bytes of a request's head */
	size_t max_connections;
	size_t max_connections_per_peer; /* an IPv4 address or IPv6 /64; 0: half
				       * of max_connections */
	double drain_s;               /* on stop: wait this long for requests */
	/* A second listener that answers GET /metrics only, without a
	 * token (NULL: none; GET /metrics on the main one needs the token):
	 * loopback or a unix socket unless metrics_public */
	const char *metrics_listen;
	bool metrics_public;
	/* As on_listen, for the metrics listener. */
	void (*on_metrics_listen)(void *ctx, const char *addr);
	/* Called once the listener is up with its address ("127.0.0.1:PORT",
	 * "unix:/path"), before requests are served. */
	void (*on_listen)(void *ctx, const char *addr);
	void *on_listen_ctx;
};
void api_http_opts_init(struct api_http_opts *o);
/* Check the options (token, TLS, address) without listening. */
int api_http_check(const struct api_config *cfg, const struct api_http_opts *o,
		   struct sc_err *err);
/* Serve until *stop is set, then stop taking connections, let requests
 * in flight finish (up to drain_s) and return 0; -1 (err) when the
 * listener cannot start. */
int api_http_serve(struct api *a, const struct api_http_opts *o,
		   const atomic_bool *stop, struct sc_err *err);

/* ---- the MCP server (api/mcp*.c, `sandcell mcp`) ----
 * Newline-delimited JSON-RPC 2.0 (MCP 2024-11-05 .. 2025-11-25) read from
 * in_fd, answers written to out_fd, one message at a time in the calling
 * thread (its tools call cell_create: no other threads may exist). Tools:
 * execute_code, get_supported_languages, get_language_details,
 * create_session, close_session, run_command, write_file, read_file
 * (docs/mcp.md). Returns 0 when the input ends or *stop is set (check it
 * between messages; a signal should interrupt read(): no SA_RESTART),
 * -1 (err) when the input cannot be read; either way every session's cell
 * is removed first. */
#define API_MCP_MAX_LINE (16u << 20)   /* bytes of one message */
#define API_MCP_MIN_LINE 64            /* the least max_line a server takes */
#define API_MCP_MAX_SESSIONS 32

struct api_mcp_config {
	const struct cell_spec *spec;  /* the cells it makes */
	double max_timeout_s;          /* longer timeouts are cut to it (0: no cap) */
	size_t max_line;               /* bytes of one message (>= API_MCP_MIN_LINE) */
	const char *version;           /* serverInfo.version */
	struct sc_log log;             /* sessions started and removed (SC_LOG_INFO),
					* each call (SC_LOG_PROGRESS) */
};
void api_mcp_config_init(struct api_mcp_config *cfg);
int api_mcp_serve(const struct api_mcp_config *cfg, int in_fd, int out_fd,
		  const atomic_bool *stop, struct sc_err *err);

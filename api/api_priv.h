/* What api/'s files share (private): the HTTP server's state, its
 * responses, the route handlers of each resource and the one NDJSON
 * stream; the JSON text buffer (MCP's answers use it too). The request
 * layer is request.h, the resource calls both protocols make ops.h, the
 * transports' own parts http_priv.h and mcp_priv.h. */
#pragma once
#include <pthread.h>
#include <stdatomic.h>

#include "api.h"
#include "metrics.h"
#include "request.h"

/* A cell id of POST /cells: the node name, '-', 16 lower-case hex digits
 * (node.c) */
#define API_ID_HEX_LEN 16
#define API_ID_LEN (API_NODE_NAME_MAX + 1 + API_ID_HEX_LEN)

/* E2B's working directory (e2b.c): every cell of the server has it. */
#define API_E2B_HOME "/home/user"

/* A cell of POST /cells, in the server's table. */
struct api_e2b;
struct api_cell {
	char id[API_ID_LEN + 1]; /* "": a slot a create has reserved */
	char name[64];
	double created, last_used;
	double idle_s;
	unsigned busy;        /* exec/file/code requests on it now */
	struct cell *handle;  /* kept from the create; a request uses a copy (cell_dup) */
	bool has_user;        /* "user" at create: its execs' default user */
	uint32_t uid, gid;
	double memory_mb;     /* memory_limit_MB at create (not positive: the
			       * server's); its forks' and rollbacks' too */
	struct api_volume_mount *volumes; /* volume_mounts at create (owned): its
					   * forks and rollbacks mount them too */
	size_t nvolumes;
	bool volumes_unknown; /* adopted after a restart with volumes mounted:
			       * where is not known, so it is not forked */
	/* /code's session: known here, not from a file the cell could forge;
	 * installed once, by one request while the others on the cell wait */
	bool session, session_starting;
	/* a fork, checkpoint or rollback runs on it (one at a time; DELETE
	 * waits for its end: 409); rolling: a rollback, which replaces the
	 * cell, so no other request may begin on it */
	bool changing, rolling;
	struct api_e2b *e2b;  /* an E2B sandbox's (e2b_priv.h), else NULL; owned */
	char image[64];       /* its image's store name when not the server's
			       * (images.c), else "" */
};

/* A pool cell that a /run_code holds: a second handle, for api_cancel. */
struct api_hold {
	struct cell *dup;     /* NULL: handed to the pool by api_cancel */
	struct api_hold *prev, *next;
	bool linked;
};

/* A pool of an image other than the server's (images.c). */
#define API_IMAGE_POOLS_MAX 32
struct api_image_pool {
	char named[API_IMAGE_NAME_MAX + 1]; /* as requests name it */
	char store[64];
	struct cell_pool *pool;
	bool making;                /* being pulled or made: wait on images_cv */
};

struct api {
	struct api_config cfg;
	char node[API_NODE_NAME_MAX + 1]; /* cfg.node_name's copy */
	struct api_limits lim;       /* the request layer's clamps, from cfg */
	char *token;
	struct cell_pool *pool;
	struct cell_spec pool_spec;  /* cfg.spec, and the cells start with lang's files */
	struct cell_seed_file seeds[LANG_SEED_FILES];
	const char *dirs[16];        /* pool_spec.make_dirs: cfg.spec's, and API_E2B_HOME */
	struct lang_prep_cache prep; /* the pool workers' (each fills its own copy) */
	char preimport_buf[512];     /* cfg.preimport, split at ',' */
	const char *preimport[LANG_MAX_PREIMPORT + 1]; /* prep.preimport */
	pthread_mutex_t mu;          /* guards cells, ncells, holds, cancelled */
	pthread_cond_t session_cv;   /* with mu: a cell's session_starting ended */
	struct api_cell *cells;
	size_t ncells;
	struct api_hold *holds;      /* pool cells /run_code holds */
	struct api_stream *orphans;  /* streams whose jobs outlive their clients (stream.c) */
	size_t norphans;             /* those not yet freed */
	pthread_cond_t orphans_cv;   /* with mu: norphans fell */
	bool cancelled;              /* api_cancel was called */
	int stop_pipe[2];            /* [0] is every run's cancel fd; api_cancel closes [1] */
	int stream_keepalive_ms;     /* an NDJSON stream's silence before a keepalive
				      * line: under the transport's idle timeout */
	atomic_size_t in_flight;
	struct api_metrics metrics;  /* counters: atomics, no lock (metrics.h) */
	int lock_fd;                 /* STATE_ROOT/.serve/lock, flock'd (restart.c) */
	/* images other than the server's (images.c, poolhost.c) */
	pid_t host_pid;              /* the pool host */
	int host_sock;               /* -1: none */
	pthread_mutex_t host_mu;     /* one request to the host at a time */
	pthread_mutex_t images_mu;   /* guards images, nimages */
	pthread_cond_t images_cv;    /* with images_mu: an image's pool was made (or not) */
	struct api_image_pool images[API_IMAGE_POOLS_MAX];
	size_t nimages;
};

/* ---- images other than the server's (images.c, poolhost.c) ---- */

/* The pool of image `named` (NULL or "": the server's own), made on first
 * use: its image resolved, pulled when serve --allow-pull allows it. NULL
 * with resp: 403 (may not pull), 404 (not stored), 502 (the pull
 * failed), 503 (no room for another image's pool). Thread-safe. */
struct cell_pool *api_image_pool(struct api *a, const char *named, char store[64],
				 struct api_response *resp);
/* The pool of table cell e's image (its forks and rollbacks are made of
 * its spec); NULL with resp as api_image_pool. */
struct cell_pool *api_pool_of(struct api *a, const struct api_cell *e, struct api_response *resp);
void api_image_pools_free(struct api *a);
/* The runtime's answer to which images cells use, for the store's calls. */
extern const struct rootfs_in_use api_cells_in_use;
/* Is image `name` in the store (it opens)? */
bool api_image_stored(const char *name);
/* Image `store`'s pool ended (its ready cells go, in the background), so
 * that the image can be removed; a later request makes another. */
void api_image_pool_drop(struct api *a, const char *store);
/* Is one of the table's cells (POST /cells, sandboxes) of image store? */
bool api_image_in_table(struct api *a, const char *store);
/* The pool host: started by api_new before any thread (a->host_sock,
 * a->host_pid); make asks it for a pool of stored image `store`;
 * stop ends it (after api_image_pools_free). */
int api_pool_host_start(struct api *a, struct sc_err *err);
int api_pool_host_make(struct api *a, const char *store, struct cell_pool **out,
		       struct sc_err *err);
void api_pool_host_stop(struct api *a);
/* Cell `cell`'s files as new image `image` (its source: "commit:SOURCE@BASE"),
 * made by the pool host; E2B's snapshots (e2b_snapshot.c). */
int api_pool_host_snapshot(struct api *a, const char *cell, const char *image,
			   const char *source, struct sc_err *err);

/* ---- restarts: the record on the state root (restart.c) ---- */

/* The names of the server's pool cells (and so of its /cells ones):
 * serve-PID-...; every such cell on a root belongs to its one server. */
#define API_POOL_PREFIX "serve"
/* Take the state root for this server (a->lock_fd): waits (up to a
 * minute) for what is left of a server that died, refuses a live one. */
int api_restart_lock(struct api *a, struct sc_err *err);
/* Adopt the cells of the records a server before left (into the table),
 * remove its other cells. Before the pool starts, from one thread. */
int api_restart_adopt(struct api *a, struct sc_err *err);
/* Write entry e's record (crash-safe: temp, fsync, rename) / remove it. */
int api_record_write(struct api *a, const struct api_cell *e, struct sc_err *err);
void api_record_drop(const char *id);

/* ---- cell ids (node.c) ---- */

/* Is s (n bytes) a cell id's shape: NODE-HEX (*node_len: NODE's length)
 * or a bare 16 hex digits (*node_len 0; no server gives one out)? */
bool api_id_parse(const char *s, size_t n, size_t *node_len);

/* ---- trace context (trace.c) ---- */

#define API_TRACEPARENT_LEN 55 /* "00-" 32 hex "-" 16 hex "-" 2 hex */
struct api_trace {
	char trace_id[33];  /* the request's, or a new one */
	char parent_id[17]; /* the caller's span ("" when none was given) */
	char span_id[17];   /* the server's span for this request */
	char flags[3];
	bool given;         /* a valid traceparent came with the request */
	char traceparent[API_TRACEPARENT_LEN + 1]; /* 00-trace_id-span_id-flags */
};
/* A traceparent header (NULL: none): true and t filled when it is a
 * valid version 00 one; else false (treat it as absent). */
bool api_trace_parse(const char *header, struct api_trace *t);
/* The request's trace: the header's trace id and flags when it is valid,
 * else a new random trace id (flags 01), and a new span id of the
 * server's; false when getrandom fails (t zeroed: no trace). */
bool api_trace_begin(const char *header, struct api_trace *t);

/* ---- responses (response.c) ---- */

void api_set_body(struct api_response *resp, int status, const char *type, char *body,
		  size_t len);
void api_add_header(struct api_response *resp, const char *name, const char *value);
/* gzip bodies (api/gzip.c). api_gunzip: in inflated into *out (malloc'd,
 * NUL-terminated, at most max bytes): 0, or the HTTP status that says why
 * not (400 not one whole gzip stream, 413 over max, 500). api_gzip: false
 * when out of memory. api_accepts_gzip: an Accept-Encoding that takes
 * gzip (or "*") with a q above 0. */
int api_gunzip(const char *in, size_t len, size_t max, char **out, size_t *out_len);
bool api_gzip(const char *in, size_t len, char **out, size_t *out_len);
bool api_accepts_gzip(const char *accept_encoding);
void api_errorf(struct api_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A request the request layer refused: its status and message. */
void api_refuse(struct api_response *resp, const struct api_bad *bad);

/* A JSON text built with stdio (api_jb_open NULL: out of memory). */
struct api_jbuf {
	char *buf;
	size_t len;
	FILE *f;
};
FILE *api_jb_open(struct api_jbuf *j);
/* Close it: the text (malloc'd, j->len bytes), or NULL when it could not
 * be written (freed). */
char *api_jb_close(struct api_jbuf *j);
/* Close it with a newline as the answer's body (500 when it could not be
 * written). */
void api_jb_send(struct api_jbuf *j, struct api_response *resp, int status);
/* The events of a streamed answer (no newline). */
void api_put_output_event(FILE *f, int k, const char *d, size_t n);
void api_put_error_event(FILE *f, const char *msg);

/* ---- the routes: one request, its cell id (routes.c) ---- */

#define API_TAG_SEGMENT 128 /* a {tag} segment's bytes, its NUL included */
struct api_call {
	const struct api_request *req;
	char id[API_ID_LEN + 1]; /* the route's {id}, "" when it has none */
	char tag[API_TAG_SEGMENT]; /* the route's {tag}, "" when it has none */
};
typedef void api_handler(struct api *a, const struct api_call *call, struct api_response *resp);

/* Does the client want the answer as a stream (Accept: application/x-ndjson)? */
bool api_wants_ndjson(const struct api_request *req);
/* The call's {id} into id (API_ID_LEN + 1 bytes) and its body, which must
 * be a JSON object: the object, or NULL (bad filled). */
cJSON *api_call_body(const struct api_call *call, char *id, struct api_bad *bad);
/* For the transport, before a body is read: the token given (a bearer
 * header, else ?token=), whether the route answers without one (the
 * pings), and the status that says "busy, retry" on a path (504 for
 * SandboxFusion's /run_code, whose clients retry it; else 503). */
const char *api_given_token(const struct api_request *req);
bool api_route_is_open(const char *method, const char *path);
/* Does the route go without the server's token (the open ones, and E2B's
 * envd routes, which check a sandbox's access token)? */
bool api_route_skips_token(const char *method, const char *path);
/* Does the route answer without a concurrency slot (GET /metrics: a
 * scrape must get through while the server is full)? */
bool api_route_is_ungated(const char *method, const char *path);
int api_busy_status(const char *path);

/* The route table's rows for the metrics: how many (the last is
 * "unmatched", every path no row has), a row's method and template, and
 * the row of a request (the unmatched one when none). */
size_t api_route_count(void);
void api_route_label(size_t i, const char **method, const char **pattern);
size_t api_route_index(const char *method, const char *path);
/* GET /metrics (metrics route, also the --metrics-listen listener's) */
api_handler api_metrics_get;
/* The exposition text (malloc'd, *len bytes), or NULL (out of memory). */
char *api_metrics_text(struct api *a, size_t *len);

/* cells.c */
api_handler api_cells_create, api_cells_list, api_cells_delete;
/* exec.c */
api_handler api_cells_exec;
/* fork.c */
struct api_fork_child {
	char id[API_ID_LEN + 1];
	char name[64];
	bool slot;              /* a table slot is reserved for it */
	bool full;              /* err: the table had no room (--max-cells) */
	char err[SC_ERR_MAX];   /* "" while it may be made */
	struct lang_replay replay; /* replay_sessions: the parent's /code runs again here */
};
/* Cell id forked into count children of the table (POST /cells/{id}/fork):
 * 0 and each kids[i]'s id, or its err; -1 with resp answered when the fork
 * could not begin (404, 409, 410). e2b: the children are E2B sandboxes,
 * each with a copy of it (a new access token). */
int api_fork_cells(struct api *a, const char *id, unsigned count, bool replay,
		   const struct api_e2b *e2b, struct api_fork_child *kids, struct api_response *resp);
api_handler api_cells_fork, api_checkpoints_create, api_checkpoints_list,
	api_checkpoints_delete, api_cells_rollback;
/* files.c */
api_handler api_files_get, api_files_put;
/* code.c */
api_handler api_run_code, api_cells_run, api_cells_code;
/* proxy.c: /cells/{id}/ports/{port}[/REST] (id into API_ID_LEN + 1 bytes,
 * rest "/" when absent), and HTTP to that port in the cell */
bool api_proxy_path(const char *path, char *id, unsigned *port, const char **rest);
void api_ports_proxy(struct api *a, const struct api_call *call, unsigned port, const char *rest,
		     struct api_response *resp);
/* Is given (NULL: none) the secret want? In time that depends on want's
 * length only (server.c). */
bool api_secret_equal(const char *want, const char *given);
/* All of buf to socket fd (non-blocking sends, waiting for room) by
 * deadline (sc_now() seconds; 0: none) and while *stop (may be NULL)
 * stays false; false when the peer is gone or time or stop came (proxy.c). */
bool api_send_all(int fd, const char *buf, size_t n, double deadline, const atomic_bool *stop);
/* portaccess.c: who reaches a cell's ports, by path or by host name */
#define API_PORT_TOKEN_LEN 32
/* The cell's port token: opens its ports and nothing else (hex). */
void api_port_token(const struct api *a, const char *id, char out[API_PORT_TOKEN_LEN + 1]);
/* serve --domain D: Host "PORT-ID.D" (any port after D) names cell ID's
 * port (id into API_ID_LEN + 1 bytes). */
bool api_port_host(const struct api *a, const struct api_request *req, char *id, unsigned *port);
/* A request for a cell's port, by host name (*by_host; rest: the whole
 * path) or by path (/cells/ID/ports/PORT/REST). */
bool api_port_request(const struct api *a, const struct api_request *req, char *id,
		      unsigned *port, const char **rest, bool *by_host);
/* May the request go on, by its head: the token (or, for a cell's port,
 * the cell's port token), the pings and E2B's envd routes. */
bool api_request_authorized(const struct api *a, const struct api_request *req);
/* The server's token or the cell's port token (given as a token, header
 * e2b-traffic-access-token or our cookie); *by_query: it came as ?token=
 * (the answer then sets the cookie: api_port_set_cookie). */
bool api_port_authorized(const struct api *a, const struct api_request *req, const char *id,
			 bool *by_query);
void api_port_set_cookie(const struct api *a, const char *id, bool by_host,
			 struct api_response *resp);
/* A Cookie header for the cell's server: ours taken out. */
void api_port_cookies_without_ours(const char *cookies, char *out, size_t size);
/* jupyter.c */
api_handler api_run_jupyter;

/* ---- the cell table (cells.c) ---- */

/* A new cell from the pool into the table, as asked, with e2b (NULL for
 * a cell of /cells; the table owns it once this returns 0, the caller
 * still on -1); *out a copy of its entry; -1 with resp (429, 503, 422). */
int api_cells_add(struct api *a, const struct api_cell_new *want, struct api_e2b *e2b,
		  struct api_cell *out, struct api_response *resp);

/* A new cell id (NODE-HEX) into id (API_ID_LEN + 1 bytes); false when
 * getrandom failed. */
bool api_cell_new_id(const struct api *a, char *id);
/* A slot of the table for a cell being made (false: the table is full);
 * filled with the cell's entry, or given back. */
bool api_slot_reserve(struct api *a);
void api_slot_fill(struct api *a, const struct api_cell *nc);
void api_slot_give_back(struct api *a);

/* A request's own handle on cell id (a copy of the kept one) with the
 * cell marked busy; -1 with resp the error (404, 410, 500). */
int api_cell_begin(struct api *a, const char *id, struct cell **out, struct api_response *resp);
/* The same with a copy of its entry (*e, under the lock). */
int api_cell_begin_entry(struct api *a, const char *id, struct cell **out, struct api_cell *e,
			 struct api_response *resp);
void api_cell_end(struct api *a, const char *id, struct cell *c);
/* An E2B sandbox's part of its entry (e2b.c): freed (its running
 * commands cancelled), and when its time is up (sc_now() seconds). */
void api_e2b_free(struct api_e2b *e);
/* A new sandbox's state like e's (template, metadata, envs, end), with
 * its own access token and no processes; NULL when out of memory. */
struct api_e2b *api_e2b_copy(const struct api_e2b *e);
double api_e2b_end_at(const struct api_e2b *e);
/* The table's entry of id, under a->mu, or NULL. */
struct api_cell *api_cell_find_locked(struct api *a, const char *id);
/* A cell from the pool for one request, counted as a pooled or a cold
 * start; NULL with a 503 in resp when none is ready (logged under route
 * unless it is NULL). */
struct cell *api_pool_take(struct api *a, const char *route, struct api_response *resp);
struct cell *api_pool_take_from(struct api *a, struct cell_pool *pool, const char *route,
				struct api_response *resp);
/* Take entry i out of the table (under a->mu): its handle, for
 * cell_pool_release once mu is let go. */
struct cell *api_cell_drop_locked(struct api *a, size_t i);
/* A malloc'd copy of vs[0..n) (n > 0), NULL when out of memory. */
struct api_volume_mount *api_volumes_dup(const struct api_volume_mount *vs, size_t n);
/* The Python session of cell id (c, a request's handle), installed by the
 * first /code while the cell's other /code requests wait. */
int api_cell_session(struct api *a, const char *id, struct cell *c, struct sc_err *err);
/* The cell's egress log at its end (-1: the server's cells have none). */
int api_net_log_open(const struct api *a, const struct cell *c);

/* ---- temporary trees of directory GET/PUT (tar.c) ---- */

void api_tar_get(struct api *a, struct cell *c, const char *path, struct api_response *resp);
void api_tar_put(struct api *a, struct cell *c, const char *path, const struct api_request *req,
		 struct api_response *resp);

/* ---- the one NDJSON stream (stream.c) ----
 * A job runs on a helper thread and says what happens through the calls
 * below, each of which writes whole lines into a socket pair; the
 * transport's thread hands them out (it is pulled by libmicrohttpd, so
 * the job cannot write to the client itself). The client going away, or
 * the server stopping, makes the job's cancel fd readable; a job gives it
 * to the command it runs (cell_exec, lang) and ends soon after. */
struct api_stream;
/* Answer resp with a stream of run(s, ctx) (200, application/x-ndjson);
 * free_fn(ctx) once it ended, also when the stream cannot start (resp is
 * then the error). limit: bytes of output events per stream (0: none;
 * past it the events stop and api_stream_truncated says so). */
void api_stream_start(struct api *a, struct api_response *resp, uint64_t limit,
		      void (*run)(struct api_stream *s, void *ctx), void (*free_fn)(void *ctx),
		      void *ctx);
int api_stream_cancel_fd(const struct api_stream *s);
/* Output of stream k (0 stdout, 1 stderr) as events: whole UTF-8
 * characters, at most 16 KiB of output each. Thread: the job's. */
void api_stream_output(struct api_stream *s, int k, const char *d, size_t n);
/* As a cell_exec_req's on_output (stream 1 or 2), ctx the stream. */
void api_stream_on_output(void *ctx, int stream, const char *d, size_t n);
bool api_stream_truncated(const struct api_stream *s, int k);
/* The last line: {"type":"result", ...the members of obj} (obj, len: a
 * JSON object), or {"type":"error","detail":msg}. What a stream held back
 * of an unfinished UTF-8 character goes out first. */
void api_stream_result(struct api_stream *s, const char *obj, size_t len);
void api_stream_error(struct api_stream *s, const char *msg);
/* Bytes as they are (another protocol's framing: Connect's envelopes);
 * thread: the job's. */
void api_stream_raw(struct api_stream *s, const void *p, size_t n);
/* After msg's len bytes (at most 64) when the job has sent nothing for
 * every_ms: a protocol's keepalive, so that a command that runs long
 * without output keeps its connection (the transport drops an idle one).
 * Not before the job's first bytes: a protocol's stream begins with its
 * own message (Connect's start event, which the E2B SDK reads first).
 * Call from the handler, right after api_stream_start. The job must
 * write whole messages at once (no keepalive lands inside one). */
void api_stream_keepalive(struct api_stream *s, const void *msg, size_t len, int every_ms);
/* Cancel the job (as the client going away does); from any thread while
 * the job runs. */
void api_stream_kill(struct api_stream *s);
/* The job goes on when its client goes away (an E2B command outlives the
 * stream that started it): its writes are dropped from then on, and the
 * stream is freed when it ends; until then api_stream_kill and the
 * server's stop still cancel it. Call from the handler, right after
 * api_stream_start. */
void api_stream_outlive(struct api_stream *s);
/* Cancel every such job whose client went away (under a->mu: api_cancel);
 * cancel them and wait until they ended and were freed (api_free). */
void api_stream_orphans_cancel_locked(struct api *a);
void api_stream_orphans_wait(struct api *a);
/* A zeroed job of size bytes, or NULL with resp answered (500). */
void *api_job_alloc(size_t size, struct api_response *resp);
/* A job on a cell (exec, a run), answered either way. */
struct api_job_ops {
	void (*stream)(struct api_stream *s, void *ctx); /* streamed, on its thread */
	void (*whole)(void *ctx, struct api_response *resp); /* one answer */
	void (*free)(void *ctx);
};
/* Answer resp with ctx's job: streamed when the client asks for NDJSON
 * (api_wants_ndjson; limit as api_stream_start's), else whole; the job
 * is freed once it ended, either way. */
void api_stream_begin(struct api *a, const struct api_request *req, struct api_response *resp,
		      uint64_t limit, const struct api_job_ops *ops, void *ctx);

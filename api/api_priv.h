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

/* A cell of POST /cells, in the server's table. */
struct api_cell {
	char id[API_ID_LEN + 1]; /* "": a slot a create has reserved */
	char name[64];
	double created, last_used;
	double idle_s;
	unsigned busy;        /* exec/file/code requests on it now */
	struct cell *handle;  /* kept from the create; a request uses a copy (cell_dup) */
	bool has_user;        /* "user" at create: its execs' default user */
	uint32_t uid, gid;
	/* /code's session: known here, not from a file the cell could forge;
	 * installed once, by one request while the others on the cell wait */
	bool session, session_starting;
};

/* A pool cell that a /run_code holds: a second handle, for api_cancel. */
struct api_hold {
	struct cell *dup;     /* NULL: handed to the pool by api_cancel */
	struct api_hold *prev, *next;
	bool linked;
};

struct api {
	struct api_config cfg;
	char node[API_NODE_NAME_MAX + 1]; /* cfg.node_name's copy */
	struct api_limits lim;       /* the request layer's clamps, from cfg */
	char *token;
	struct cell_pool *pool;
	struct cell_spec pool_spec;  /* cfg.spec, and the cells start with lang's files */
	struct cell_seed_file seeds[LANG_SEED_FILES];
	struct lang_prep_cache prep; /* the pool workers' (each fills its own copy) */
	pthread_mutex_t mu;          /* guards cells, ncells, holds, cancelled */
	pthread_cond_t session_cv;   /* with mu: a cell's session_starting ended */
	struct api_cell *cells;
	size_t ncells;
	struct api_hold *holds;      /* pool cells /run_code holds */
	bool cancelled;              /* api_cancel was called */
	int stop_pipe[2];            /* [0] is every run's cancel fd; api_cancel closes [1] */
	atomic_size_t in_flight;
	struct api_metrics metrics;  /* counters: atomics, no lock (metrics.h) */
};

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

struct api_call {
	const struct api_request *req;
	char id[API_ID_LEN + 1]; /* the route's {id}, "" when it has none */
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
/* files.c */
api_handler api_files_get, api_files_put;
/* code.c */
api_handler api_run_code, api_cells_run, api_cells_code;

/* ---- the cell table (cells.c) ---- */

/* A request's own handle on cell id (a copy of the kept one) with the
 * cell marked busy; -1 with resp the error (404, 410, 500). */
int api_cell_begin(struct api *a, const char *id, struct cell **out, struct api_response *resp);
void api_cell_end(struct api *a, const char *id, struct cell *c);
/* The table's entry of id, under a->mu, or NULL. */
struct api_cell *api_cell_find_locked(struct api *a, const char *id);
/* Take entry i out of the table (under a->mu): its handle, for
 * cell_pool_release once mu is let go. */
struct cell *api_cell_drop_locked(struct api *a, size_t i);
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

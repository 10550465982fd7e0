/* E2B's wire API (private to api/): the control plane (e2b.c), envd's
 * Process and Filesystem services over Connect (e2b_process.c,
 * e2b_fs.c), envd's REST /files (e2b_files.c) and the Connect protocol's
 * framing (connect.c). An E2B sandbox is a cell of the server's table
 * (cells.c) with a struct api_e2b beside it; every request goes through
 * the same request layer and resource calls as /cells (docs/e2b.md). */
#pragma once
#include "api_priv.h"
#include "ops.h"

#define API_E2B_ENVD_VERSION "0.5.7"    /* what the SDKs gate features on */
#define API_E2B_TOKEN_LEN 32            /* hex digits of an envd access token */
#define API_E2B_DEFAULT_TIMEOUT 300.0   /* seconds a sandbox lives, as on E2B */
#define API_E2B_FORK_TIMEOUT 15.0       /* a fork's children's, as on E2B */
#define API_E2B_MAX_PROCS 64            /* running commands per sandbox */
#define API_E2B_STDIN_WAIT_MS 10000     /* SendInput waits this long for room in a full pipe */
#define API_E2B_MAX_WATCHERS 8         /* Process.Connect streams on one command */
#define API_E2B_MAX_ATTACH 32          /* Connect and WatchDir streams on one sandbox */
#define API_E2B_WATCH_BUF (512 * 1024) /* a watcher this far behind is cut off */
#define API_E2B_PTY_MAX 1000           /* a PTY's columns and rows, each */
#define API_E2B_MAX_CONTEXTS 8         /* code interpreter contexts per sandbox */
#define API_E2B_CONTEXT_ID 32           /* hex digits of a context's id */
#define API_E2B_CONTEXT_CWD 1024        /* bytes of its cwd, NUL included */
#define API_E2B_MAX_META 64             /* metadata / envVars entries */
#define API_E2B_MAX_META_LEN 1024       /* bytes of a key or a value */
#define API_E2B_IMAGE_KEY "sandcell/image" /* the metadata key that names an image
					    * (serve --e2b-image-key) */

struct api_e2b_hub;

/* A running command of Process.Start, for List, SendSignal, Connect. */
struct api_e2b_proc {
	uint32_t pid;                 /* ours, per sandbox (not the cell's) */
	struct api_stream *s;         /* its stream: api_stream_kill ends it */
	struct api_e2b_hub *hub;      /* its Connect watchers (its job's) */
	int pty;                      /* its PTY's master (a dup, owned), or -1 */
	char cmd[256];                /* ProcessConfig.cmd, cut */
	char tag[64];
	int stdin_w;                  /* its stdin pipe's write end (owned), or -1:
				       * started without stdin, or CloseStdin */
};

/* A code interpreter context (createCodeContext): an interpreter of its
 * own in the sandbox's cell (lang_session_req.context: its id). */
struct api_e2b_context {
	char id[API_E2B_CONTEXT_ID + 1];
	const struct lang_def *lang;  /* NULL: Python, an interpreter kept; else
				       * a language run one-shot (e2b_code.c) */
	char cwd[API_E2B_CONTEXT_CWD];
	unsigned executions;
};

/* What E2B knows of a sandbox beyond the cell; in its api_cell, under
 * a->mu. */
struct api_e2b {
	char template_id[API_IMAGE_NAME_MAX + 1];
	char token[API_E2B_TOKEN_LEN + 1];
	cJSON *metadata;              /* {k: v} strings, or NULL */
	cJSON *env;                   /* envVars {k: v}, or NULL */
	double started;               /* wall clock (time(2) seconds) */
	double end_at;                /* sc_now() seconds; the sandbox goes then */
	bool paused;                  /* its cell is paused: no timeout meanwhile */
	uint32_t next_pid;
	unsigned executions;          /* the code interpreter's runs */
	double metrics_at;            /* sc_now() of the last metrics call (0: none) */
	double metrics_cpu_s;         /* the cell's CPU time then */
	struct api_e2b_proc procs[API_E2B_MAX_PROCS];
	size_t nprocs;
	unsigned nattach;             /* Connect and WatchDir streams now */
	struct api_e2b_context contexts[API_E2B_MAX_CONTEXTS];
	size_t ncontexts;
};

/* ---- routes (e2b.c) ---- */
api_handler api_e2b_create, api_e2b_list, api_e2b_get, api_e2b_kill, api_e2b_timeout,
	api_e2b_connect, api_e2b_health, api_e2b_fork, api_e2b_metrics, api_e2b_pause,
	api_e2b_resume, api_e2b_snapshot_create, api_e2b_snapshot_list, api_e2b_template_delete;
/* The cores and the bytes of memory sandbox c may use, as its info and
 * its metrics say (e2b_metrics.c): the server's --cpus (else the host's
 * cores), c's memory_limit_MB (else the server's --memory, else the
 * host's). */
int api_e2b_cores(const struct api *a);
uint64_t api_e2b_memory(const struct api *a, const struct api_cell *c);
/* The E2B control plane's error body: {"code": status, "message": msg}. */
void api_e2b_error(struct api_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An envd request's sandbox: the E2b-Sandbox-Id header's cell, checked
 * against its X-Access-Token; id filled. false: resp answered (http:
 * the REST shape, else Connect's). */
bool api_e2b_envd_auth(struct api *a, const struct api_request *req, char id[API_ID_LEN + 1],
		       bool http, struct api_response *resp);
/* The same for the code interpreter's routes, which take the sandbox's
 * traffic token (E2B-Traffic-Access-Token) too: the SDK sends only that
 * with its /contexts calls. HTTP's shape. */
bool api_e2b_code_auth(struct api *a, const struct api_request *req, char id[API_ID_LEN + 1],
		       struct api_response *resp);
/* The E2B user of an envd request (Authorization: Basic base64(user:)):
 * "root" runs as 0:0; anything else, or none, as the cell's default. */
void api_e2b_user(const struct api_request *req, bool *has_user, uint32_t *uid, uint32_t *gid);
/* A path of an E2B client as a cell path: relative ones under
 * API_E2B_HOME; no "..". false: refused. */
bool api_e2b_path(const char *p, char out[API_CELL_PATH]);

/* ---- Connect (connect.c): JSON codec, HTTP/1.1 ---- */
/* Connect's error codes, as names and as HTTP statuses. */
enum api_connect_code {
	API_CONNECT_CANCELED,
	API_CONNECT_UNKNOWN,
	API_CONNECT_INVALID_ARGUMENT,
	API_CONNECT_DEADLINE_EXCEEDED,
	API_CONNECT_NOT_FOUND,
	API_CONNECT_ALREADY_EXISTS,
	API_CONNECT_PERMISSION_DENIED,
	API_CONNECT_RESOURCE_EXHAUSTED,
	API_CONNECT_UNIMPLEMENTED,
	API_CONNECT_INTERNAL,
	API_CONNECT_UNAVAILABLE,
	API_CONNECT_UNAUTHENTICATED,
	API_CONNECT_FAILED_PRECONDITION,
};
const char *api_connect_code_name(enum api_connect_code c);
/* A unary call's error: the code's HTTP status, {"code","message"}. */
void api_connect_error(struct api_response *resp, enum api_connect_code c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The code of an HTTP status an inner call answered with. */
enum api_connect_code api_connect_code_of_status(int status);
/* A streaming call's request body: one enveloped message (flags 0, its
 * JSON object). NULL and resp answered when it is not one. */
cJSON *api_connect_stream_request(const struct api_request *req, struct api_response *resp);
/* One enveloped message (json, len) or the end of the stream (end: the
 * flags say so; json "{}" or {"error":{...}}) into the stream. */
void api_connect_send(struct api_stream *s, bool end, const char *json, size_t len);
/* The same message as one malloc'd frame of *out_len bytes (NULL: out
 * of memory); is the frame m the end of the stream? */
unsigned char *api_connect_frame(bool end, const char *json, size_t len, size_t *out_len);
bool api_connect_frame_is_end(const unsigned char *m, size_t len);
/* A streaming call's error before its stream began: 200 and the
 * end-stream frame with the error, for a client that takes the code of
 * a non-200 answer from its status alone (connect-es does). */
void api_connect_stream_error(struct api_response *resp, enum api_connect_code c, const char *fmt,
			      ...) __attribute__((format(printf, 3, 4)));
/* The end of a stream with an error, as a frame / into the stream. */
unsigned char *api_connect_error_frame(enum api_connect_code c, const char *msg, size_t *out_len);
void api_connect_send_error(struct api_stream *s, enum api_connect_code c, const char *msg);
/* Answer a unary call with jb's JSON (200). */
void api_connect_reply(struct api_jbuf *jb, struct api_response *resp);

/* ---- envd's services (e2b_process.c, e2b_fs.c, e2b_files.c) ---- */
api_handler api_e2b_process_start, api_e2b_process_list, api_e2b_process_signal,
	api_e2b_process_input, api_e2b_process_close_stdin, api_e2b_process_update,
	api_e2b_process_unimplemented;
/* A streaming call's deadline: its Connect-Timeout-Ms in seconds (none:
 * a day). */
double api_e2b_deadline_s(const struct api_request *req);
/* A stream api_stream_start began (resp->stream, else nothing): Connect's
 * content type, envd's keepalive event after a second of silence. */
void api_e2b_stream_setup(struct api_response *resp);

/* ---- Process.Connect (e2b_attach.c) ---- */
api_handler api_e2b_process_connect;
/* A command's hub: every frame of its stream goes to its watchers too.
 * send: thread-safe; a watcher without room for the frame is cut off.
 * close: the command's stream has ended (its watchers see the end). */
struct api_e2b_hub *api_e2b_hub_new(void);
void api_e2b_hub_send(struct api_e2b_hub *h, const unsigned char *m, size_t n);
void api_e2b_hub_close(struct api_e2b_hub *h);
void api_e2b_hub_free(struct api_e2b_hub *h);
/* A Connect or WatchDir stream of sandbox id has ended (its count). */
void api_e2b_attach_end(struct api *a, const char *id);
api_handler api_e2b_fs_stat, api_e2b_fs_list, api_e2b_fs_mkdir, api_e2b_fs_move,
	api_e2b_fs_remove;
/* Filesystem.WatchDir (e2b_watch.c) */
api_handler api_e2b_fs_watch;
api_handler api_e2b_files_get, api_e2b_files_post;
/* the code interpreter (e2b_code.c) */
api_handler api_e2b_execute;
/* its contexts (e2b_contexts.c): POST and GET /contexts, DELETE
 * /contexts/{tag}, POST /contexts/{tag}/restart */
api_handler api_e2b_context_create, api_e2b_context_list, api_e2b_context_remove,
	api_e2b_context_restart;
#define API_E2B_DEFAULT_CONTEXT "default" /* the id of the sandbox's own session */
/* The language a runCode or a createCodeContext names: *out NULL for
 * Python (none named: Python too), which keeps its state in a session;
 * else JavaScript, TypeScript, R or bash, each run of which is a fresh
 * program. false: any other, resp answered (400). */
bool api_e2b_code_language(const char *name, const struct lang_def **out,
			   struct api_response *resp);
/* Run src in sandbox id's session (context NULL: its own, else a
 * context's id), installing the session first when it has none: 0 with
 * res (lang_session_run_in's), or -1 with err. */
int api_e2b_code_run(struct api *a, const char *id, const char *context, const char *src,
		     struct lang_result *res, struct sc_err *err);

/* The request layer (private to api/): what a client sent, a JSON object
 * (an HTTP body, an MCP tool's arguments), read, checked and clamped into
 * the C structs the resource code takes (struct lang_run_req, struct
 * cell_exec_req, a cell path). Every protocol goes through it, so each
 * limit, default and refusal is decided here, once.
 *
 * Pure: no cell is touched and nothing is kept; what a parsed request
 * points to lives in the cJSON it came from (keep that until the request
 * is done). Thread-safe. */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

/* ---- the limits, beside their contract ---- */

/* Seconds a request may leave out. Ours: exec (POST /cells/{id}/exec, MCP
 * run_command), code in a kept cell (/cells/{id}/run, /cells/{id}/code)
 * and MCP's execute_code (docs/api.md, docs/mcp.md); the CLI's `code run`
 * has the same (LANG_DEFAULT_RUN_TIMEOUT). */
#define API_TIMEOUT_DEFAULT LANG_DEFAULT_RUN_TIMEOUT
/* SandboxFusion's RunCodeRequest (/run_code): compile_timeout and
 * run_timeout default to 10 s there, and its clients count on that. */
#define API_SF_TIMEOUT_DEFAULT 10.0
/* A compile left without a timeout (ours) gets LANG_DEFAULT_COMPILE_TIMEOUT,
 * or the run's when that is longer: a program given long to run is not
 * cut short at its build. */
/* A memory limit asked for in MiB (memory_limit_MB, MCP's
 * limits.memory_mb): at least 1 MiB, never above the server's --memory;
 * from API_MEMORY_HUGE_MB on it means "as much as may be". */
#define API_MEMORY_MIN (1ull << 20)
#define API_MEMORY_HUGE_MB ((double)(1ull << 43))
#define API_MAX_ARGV 256         /* argv entries of an exec */
#define API_CELL_PATH (LANG_MAX_PATH + 16) /* a cell path made absolute */
#define API_FILE_TIMEOUT 30.0    /* seconds for one file read or written */

/* What the server's configuration allows, for the clamps. */
struct api_limits {
	double max_timeout_s;    /* a longer timeout is cut to it; <= 0: no cap */
	uint64_t memory;         /* the server's --memory in bytes, 0: none */
	uint64_t output;         /* bytes kept per stream, 0: CELL_DEFAULT_OUTPUT */
	const char *image;       /* the server's image ("host" when unnamed) */
	bool network;            /* its cells have an egress allowlist */
	bool other_images;       /* POST /cells may name another (serve --allow-images) */
};
void api_limits_of(struct api_limits *l, const struct cell_spec *spec, double max_timeout_s);

/* Why a request is refused: an HTTP status (a protocol without statuses
 * maps it: MCP answers a tool error), the member at fault ("" for the
 * body as a whole) and one line that names it ("language: ..."; a control
 * character a client's string brought in shows as '?'). */
struct api_bad {
	int status;              /* 400, 413, 422; 500: out of memory */
	char field[32];
	char msg[SC_ERR_MAX];
};
/* Fill bad (may be NULL); always false, so a check refuses in one line. */
bool api_bad(struct api_bad *bad, int status, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- typed reads ---- */

/* The body as a JSON object (empty_ok: an empty body is {}), or NULL and
 * bad (422). Free with cJSON_Delete. */
cJSON *api_req_object(const char *body, size_t len, bool empty_ok, struct api_bad *bad);
/* Member k: absent or null -> NULL / dflt; of another type -> false with
 * bad ("k: a string", "k: a number"). Numbers must be finite. */
bool api_req_str(const cJSON *o, const char *k, const char **out, struct api_bad *bad);
bool api_req_num(const cJSON *o, const char *k, double dflt, double *out, struct api_bad *bad);
/* Member k absent, null, or of cJSON type `type` (cJSON_Array,
 * cJSON_Object, cJSON_True|cJSON_False for a boolean): *out it or NULL;
 * else false with bad ("k: what"). */
bool api_req_typed(const cJSON *o, const char *k, int type, const char *what, const cJSON **out,
		   struct api_bad *bad);

/* ---- values ---- */

/* A cell path from a client: absolute, or relative to /testbed; no ".."
 * component, not empty, shorter than LANG_MAX_PATH. Into out (at least
 * API_CELL_PATH bytes), else false. */
bool api_cell_path(const char *p, char *out, size_t size);
/* A timeout asked for: not positive (or NaN) -> dflt; cut to the cap. */
double api_timeout(const struct api_limits *l, double t, double dflt);
/* A memory limit asked for in MiB as bytes for the cell's cgroup, clamped
 * (see API_MEMORY_MIN); 0 when none was asked for (mb not positive). */
uint64_t api_memory_bytes(const struct api_limits *l, double mb);
/* image (NULL: not given) must be the server's: else false with bad. */
bool api_image_ok(const struct api_limits *l, const char *image, struct api_bad *bad);
/* "user": "UID[:GID]" (numbers, mapped in the server's cells); absent or
 * null: *has false. */
bool api_req_user(const cJSON *o, bool *has, uint32_t *uid, uint32_t *gid, struct api_bad *bad);
/* Member k, a list of library names (lang_library_name_ok), at most
 * LANG_MAX_LIBRARIES, into libs. */
bool api_req_libraries(const cJSON *o, const char *k, const char *libs[LANG_MAX_LIBRARIES],
		       size_t *n, struct api_bad *bad);
/* One entry of SandboxFusion's "files" ({path: base64}): its cell path and
 * its bytes (malloc'd into *data), or false with why (not a bad request:
 * /run_code answers it as a SandboxError). */
bool api_file_entry(const cJSON *f, char path[API_CELL_PATH], char **data, size_t *len, char *why,
		    size_t why_size);

/* ---- requests ---- */

enum api_run_kind {
	API_RUN_SANDBOXFUSION, /* /run_code: code, language, stdin, compile_timeout,
				* run_timeout (10 s), memory_limit_MB, files,
				* fetch_files */
	API_RUN_CELL,          /* ours: code, language, stdin, timeout (30 s),
				* run_timeout (timeout), compile_timeout, workdir,
				* libraries, clear_plots (/cells/{id}/run, MCP) */
	API_RUN_SESSION,       /* the same, Python only (/cells/{id}/code) */
};

/* Code to run, as lang takes it: run for lang_run/lang_run_in, session
 * (the same source, timeout, libraries and output limit) for
 * lang_session_run_in. The caller adds what is not in the JSON: the stdin
 * fd (from stdin_s), prepared, a sink. */
struct api_run {
	const struct lang_def *lang;
	struct lang_run_req run;
	struct lang_session_req session;
	const char *stdin_s;         /* NULL: none */
	size_t stdin_len;
	double memory_mb;            /* memory_limit_MB; not positive: the server's */
	const cJSON *files;          /* SandboxFusion's {path: base64}, or NULL */
	char workdir[API_CELL_PATH]; /* run.workdir points here: do not copy */
	char trace_env[80];          /* run.extra_env points here: TRACEPARENT=... */
};
/* j's members into out (dflt_lang: when "language" is absent; NULL:
 * python). 0, or -1 with bad. */
int api_parse_run(const cJSON *j, enum api_run_kind kind, const struct api_limits *l,
		  const struct lang_def *dflt_lang, struct api_run *out, struct api_bad *bad);

/* A command to run: argv (a list) or a shell command (the member
 * style->shell_key, run by style->shell -c), cwd, env ({"K": "V"}),
 * stdin, timeout (30 s), user. */
struct api_exec_style {
	const char *shell_key;       /* "cmd" (HTTP), "command" (MCP) */
	const char *shell;           /* "/bin/sh" (HTTP), "bash" (MCP) */
};
extern const struct api_exec_style API_EXEC_HTTP, API_EXEC_MCP;
struct api_exec {
	struct cell_exec_req req;    /* stdin_fd, stdout_fd, stderr_fd -1 */
	const char *stdin_s;         /* NULL: none */
	size_t stdin_len;
	char *argv[API_MAX_ARGV + 1];
	const char *env[CELL_MAX_ENV + 1];
	char *envbuf[CELL_MAX_ENV];  /* malloc'd: api_exec_free */
	size_t nenv;
	char cwd[API_CELL_PATH];     /* req points into the struct: do not copy */
};
int api_parse_exec(const cJSON *j, const struct api_exec_style *style, const struct api_limits *l,
		   struct api_exec *out, struct api_bad *bad);
void api_exec_free(struct api_exec *x);

/* POST /cells: image (the server's, or with other_images any store name
 * or registry reference), memory_limit_MB, idle_timeout (cut
 * to, and by default, idle_max), user, volume_mounts ([{"name": VOLUME,
 * "path": "/abs", "read_only": false}], at most CELL_MAX_VOLUMES). */
struct api_volume_mount {
	char name[64];
	char path[API_CELL_PATH];
	bool read_only;
};
#define API_IMAGE_NAME_MAX 255 /* bytes of an "image" (a store name or a reference) */
struct api_cell_new {
	char image[API_IMAGE_NAME_MAX + 1]; /* "": the server's */
	double memory_mb;
	double idle_s;
	bool has_user;
	uint32_t uid, gid;
	struct api_volume_mount volumes[CELL_MAX_VOLUMES];
	size_t nvolumes;
};
/* image (NULL: not given) is the server's (out ""), or with other_images
 * another stored image's name or a registry reference (into out); else
 * false with bad. */
bool api_image_choice(const struct api_limits *l, const char *image,
		      char out[API_IMAGE_NAME_MAX + 1], struct api_bad *bad);
int api_parse_cell_new(const cJSON *j, const struct api_limits *l, double idle_max,
		       struct api_cell_new *out, struct api_bad *bad);

/* ---- fork, checkpoints (POST /cells/{id}/fork, .../checkpoints,
 * .../rollback; MCP's fork_cell) ---- */

#define API_FORK_MAX 100 /* children of one fork (CELL_POOL_FORK_MAX) */
/* {"count": N, "replay_sessions": B}: N 1 to API_FORK_MAX, an integer
 * (absent or null: 1); B a boolean (absent: false). */
int api_parse_fork(const cJSON *j, unsigned *count, bool *replay, struct api_bad *bad);
/* A checkpoint tag (a cell name's characters, at most 63) into tag (64
 * bytes); NULL: required is refused, else tag "" (the caller makes one). */
bool api_tag_ok(const char *s, bool required, char tag[64], struct api_bad *bad);
/* {"tag": "t1"} through api_tag_ok. */
int api_parse_tag(const cJSON *j, bool required, char tag[64], struct api_bad *bad);

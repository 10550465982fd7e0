/* What a request does to a cell, whichever protocol asked (private to
 * api/): the HTTP routes and the MCP tools get their cell their own way
 * (the server's table or pool, an MCP session) and then call these.
 * Thread-safe on distinct cells (one cell, one thread at a time, as
 * cell_exec). */
#pragma once
#include "request.h"

/* The memory limit asked for (mb, see api_memory_bytes) on c's cgroup.
 * 0 when none was asked for, when it is set, and when it cannot be set
 * but the cell's own limit is already that tight; else -1 (err). */
int api_op_memory(struct cell *c, const struct api_limits *l, double mb, struct sc_err *err);
/* The volumes vs[0..n) mounted in c (volume_mounts); -1 with err, whose
 * errnum says why: ENOENT no such volume, ENOTSUP not here. */
int api_op_volumes(struct cell *c, const struct api_volume_mount *vs, size_t n,
		   struct sc_err *err);
/* data as c's file path (an absolute cell path): a new file (its parent
 * directories made) or the old one's contents replaced. */
int api_op_write_file(struct cell *c, const char *path, const void *data, size_t len,
		      struct sc_err *err);
/* SandboxFusion's "files" ({path: base64}) into c; -1 with why. */
int api_op_write_files(struct cell *c, const cJSON *files, char *why, size_t why_size);
/* A memfd holding s (a command's stdin), -1 when s is NULL or on failure
 * (err filled then). */
int api_op_stdin(const char *s, size_t len, struct sc_err *err);
/* x in c (its stdin from x->stdin_s; x->req's other fds as they are):
 * cell_exec's answer. */
int api_op_exec(struct cell *c, struct api_exec *x, struct cell_result *res, struct sc_err *err);
/* r in c: in its Python session (session), else as a fresh program
 * (r->run, with its stdin from r->stdin_s). lang's answer. */
int api_op_run(struct cell *c, struct api_run *r, bool session, struct lang_result *res,
	       struct sc_err *err);

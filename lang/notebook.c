/* Notebooks: a session whose runs are Jupyter cells (lang/py/sc_jupyter.py),
 * for SandboxFusion's /run_jupyter. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RUNNER LANG_PY_DIR "/sc_jupyter.py"
#define RECORDS "/tmp/.sandcell/nb" /* sc_jupyter.py's DIR */

/* s as lowercase hex into out (2 * len + 1 bytes). */
static void to_hex(const char *s, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	out[2 * len] = '\0';
}

/* "PREFIX'HEX'SUFFIX" of s, malloc'd (*len its length), or NULL. */
static char *call_of(const char *prefix, const char *s, size_t slen, const char *suffix,
		     size_t *len)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	char *code = malloc(pl + 2 * slen + sl + 3);
	if (!code)
		return NULL;
	memcpy(code, prefix, pl);
	code[pl] = '\'';
	to_hex(s, slen, code + pl + 1);
	size_t at = pl + 1 + 2 * slen;
	code[at++] = '\'';
	memcpy(code + at, suffix, sl + 1);
	*len = at + sl;
	return code;
}

int lang_notebook_start(struct cell *c, const char *workdir, struct sc_err *err)
{
	if (!workdir || workdir[0] != '/' || strlen(workdir) >= LANG_MAX_PATH)
		return sc_fail(err, EINVAL, "a notebook's directory must be an absolute cell path");
	if (lang_session_install(c, lang_find("python"), err) < 0 ||
	    lang_i_put_file(c, RUNNER, lang_py_sc_jupyter, lang_py_sc_jupyter_size, err) < 0)
		return -1;
	size_t len;
	_cleanup_free_ char *code = call_of("__import__('sc_jupyter').start(", workdir,
					    strlen(workdir), ")\n", &len);
	if (!code)
		return sc_fail(err, ENOMEM, "out of memory");
	struct lang_session_req req;
	lang_session_req_init(&req);
	req.source = code;
	req.source_len = len;
	req.timeout_s = 60;
	struct lang_result res;
	if (lang_session_run_in(c, &req, &res, err) < 0)
		return -1;
	int rc = 0;
	if (res.status != LANG_SUCCESS)
		rc = sc_fail(err, EIO, "starting the notebook in %s: %.200s%.300s", workdir,
			     res.message, res.run.err ? res.run.err : "");
	lang_result_free(&res);
	return rc;
}

/* The record cell n left, or NULL. */
static char *read_record(struct cell *c, unsigned n, size_t *len)
{
	char path[96];
	snprintf(path, sizeof(path), RECORDS "/rec-%u.json", n);
	struct cell_file cf;
	struct sc_err e = {0};
	if (cell_read_file(c, path, LANG_NOTEBOOK_MAX_RECORD, 30, &cf, &e) < 0)
		return NULL;
	if (cf.truncated) { /* half a JSON text is no record */
		free(cf.data);
		return NULL;
	}
	*len = cf.len;
	return cf.data;
}

int lang_notebook_cell(struct cell *c, unsigned n, const struct lang_session_req *req,
		       struct lang_result *res, char **record, size_t *record_len,
		       struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	*record = NULL;
	*record_len = 0;
	if (!req->source && req->source_len)
		return sc_fail(err, EINVAL, "no source given");
	if (req->source_len > LANG_NOTEBOOK_MAX_CELL)
		return sc_fail(err, EFBIG, "a cell of %zu bytes is larger than the limit of %u bytes",
			       req->source_len, (unsigned)LANG_NOTEBOOK_MAX_CELL);
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "__import__('sc_jupyter').run(%u, ", n);
	struct lang_session_req r = *req;
	size_t len;
	_cleanup_free_ char *code = call_of(prefix, req->source ? req->source : "", req->source_len,
					    ", globals())\n", &len);
	if (!code)
		return sc_fail(err, ENOMEM, "out of memory");
	r.source = code;
	r.source_len = len;
	r.clear_plots = true;
	if (lang_session_run_in(c, &r, res, err) < 0)
		return -1;
	*record = read_record(c, n, record_len);
	return 0;
}

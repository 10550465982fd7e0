/* POST /run_jupyter: SandboxFusion's notebook run. The cells run in order
 * in one Python session (lang's notebooks) in a pool cell used once; the
 * answer is SandboxFusion's RunJupyterResponse: status, message, driver
 * (the whole run as one command), cells [{stdout, stderr, display, error}],
 * executor_pod_name, files. A cell that raises is an error in that cell
 * and the next cells still run (status Success, as a kernel goes on); a
 * cell past cell_timeout, the cells past total_timeout (counted from the
 * first cell: the kernel's start is not theirs), or a kernel that died
 * end the run: status Failed, the cells so far. */
#include <stdlib.h>
#include <string.h>

#include "api_priv.h"
#include "ops.h"

#define MAX_CELLS 1024
#define TOTAL_TIMEOUT_DEFAULT 45.0 /* SandboxFusion's */
#define FETCH_LIMIT LANG_DEFAULT_FETCH_LIMIT

struct nb_req {
	const cJSON *cells;
	size_t ncells;
	double cell_timeout, total_timeout, memory_mb;
	const cJSON *files, *fetch;
};

/* j's members into q; false with bad. */
static bool parse_nb(const cJSON *j, const struct api_limits *l, struct nb_req *q,
		    struct api_bad *bad)
{
	const char *kernel;
	const cJSON *v;
	memset(q, 0, sizeof(*q));
	if (!api_req_typed(j, "cells", cJSON_Array, "a list of strings", &q->cells, bad) ||
	    !api_req_num(j, "cell_timeout", 0, &q->cell_timeout, bad) ||
	    !api_req_num(j, "total_timeout", TOTAL_TIMEOUT_DEFAULT, &q->total_timeout, bad) ||
	    !api_req_num(j, "memory_limit_MB", -1, &q->memory_mb, bad) ||
	    !api_req_str(j, "kernel", &kernel, bad) ||
	    !api_req_typed(j, "files", cJSON_Object, "an object of base64 strings", &q->files, bad) ||
	    !api_req_typed(j, "fetch_files", cJSON_Array, "a list of paths", &q->fetch, bad))
		return false;
	if (!q->cells)
		return api_bad(bad, 422, "cells", "cells: a list of strings is required");
	if (kernel && strcmp(kernel, "python3") != 0)
		return api_bad(bad, 422, "kernel", "kernel: only \"python3\"");
	cJSON_ArrayForEach(v, q->cells)
	{
		if (!cJSON_IsString(v) || q->ncells >= MAX_CELLS)
			return api_bad(bad, 422, "cells", "cells: at most %d strings", MAX_CELLS);
		if (strlen(v->valuestring) > LANG_NOTEBOOK_MAX_CELL)
			return api_bad(bad, 413, "cells", "cells: at most %u bytes each",
				       (unsigned)LANG_NOTEBOOK_MAX_CELL);
		q->ncells++;
	}
	size_t nfetch = 0;
	cJSON_ArrayForEach(v, q->fetch)
	{
		char path[API_CELL_PATH];
		if (!cJSON_IsString(v) || ++nfetch > LANG_MAX_FETCH ||
		    !api_cell_path(v->valuestring, path, sizeof(path)))
			return api_bad(bad, 422, "fetch_files",
				       "fetch_files: at most %d paths without '..'", LANG_MAX_FETCH);
	}
	q->total_timeout = api_timeout(l, q->total_timeout, TOTAL_TIMEOUT_DEFAULT);
	if (q->cell_timeout < 0)
		q->cell_timeout = 0;
	return true;
}

/* How the run went, for the answer's status and driver. */
struct nb_run {
	double t0;           /* the request's start (the driver's time) */
	double cells_t0;     /* the first cell's: total_timeout counts from it */
	bool failed, timed_out;
	int return_code;
	char note[512];      /* the driver's stderr */
	char message[SC_ERR_MAX];
	bool sandbox_error;
};

/* The record's member k (a list of objects) into f, else []. */
static void record_list(FILE *f, const cJSON *rec, const char *k, bool open_ended)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(rec, k), *v;
	bool first = true;
	if (!cJSON_IsArray(list))
		list = NULL;
	fputc('[', f);
	cJSON_ArrayForEach(v, list)
	{
		if (!cJSON_IsObject(v))
			continue;
		_cleanup_free_ char *s = cJSON_PrintUnformatted(v);
		if (!s)
			continue;
		fprintf(f, "%s%s", first ? "" : ",", s);
		first = false;
	}
	if (!open_ended)
		fputc(']', f);
	else if (!first)
		fputc(',', f);
}

/* One plot as a display entry, as the inline backend shows a figure. */
static void plot_display(FILE *f, const struct lang_plot *p)
{
	if (!strcmp(p->format, "png")) {
		fputs("{\"text/plain\":\"<Figure>\",\"image/png\":", f);
		api_json_base64(f, (const unsigned char *)p->data, p->len);
	} else {
		fputs("{\"text/plain\":\"<Figure>\",\"text/html\":", f);
		api_json_string(f, p->data, p->len);
	}
	fputc('}', f);
}

static void cell_json(FILE *f, const struct lang_result *res, const cJSON *rec, const char *died)
{
	fputs("{\"stdout\":", f);
	api_json_string(f, res->run.out ? res->run.out : "", res->run.out_len);
	fputs(",\"stderr\":", f);
	api_json_string(f, res->run.err ? res->run.err : "", res->run.err_len);
	fputs(",\"display\":", f);
	record_list(f, rec, "display", res->nplots > 0);
	for (size_t i = 0; i < res->nplots; i++) {
		if (i)
			fputc(',', f);
		plot_display(f, &res->plots[i]);
	}
	if (res->nplots)
		fputc(']', f);
	fputs(",\"error\":", f);
	if (died) {
		fputs("[{\"ename\":\"DeadKernelError\",\"evalue\":", f);
		api_json_string(f, died, strlen(died));
		fputs(",\"traceback\":[]}]", f);
	} else {
		record_list(f, rec, "error", false);
	}
	fputc('}', f);
}

/* Cell n of q (code); false when the run must stop after it. */
static bool run_cell(struct api *a, struct cell *c, unsigned n, const char *code,
		     const struct nb_req *q, struct nb_run *st, FILE *f)
{
	double left = q->total_timeout - (sc_now() - st->cells_t0);
	if (left <= 0.001) {
		st->failed = st->timed_out = true;
		snprintf(st->note, sizeof(st->note), "total_timeout of %gs reached before cell %u",
			 q->total_timeout, n);
		return false;
	}
	bool by_cell = q->cell_timeout > 0 && q->cell_timeout < left;
	struct lang_session_req req;
	lang_session_req_init(&req);
	req.source = code;
	req.source_len = strlen(code);
	req.timeout_s = by_cell ? q->cell_timeout : left;
	req.output_limit = a->lim.output;
	req.has_cancel = true;
	req.cancel_fd = a->stop_pipe[0];
	struct lang_result res;
	struct sc_err err = {0};
	char *text = NULL;
	size_t len;
	if (lang_notebook_cell(c, n, &req, &res, &text, &len, &err) < 0) {
		st->sandbox_error = true;
		snprintf(st->message, sizeof(st->message), "cell %u: %.400s", n, err.msg);
		return false;
	}
	if (res.status == LANG_SANDBOX_ERROR) {
		st->sandbox_error = true;
		snprintf(st->message, sizeof(st->message), "cell %u: %.400s", n, res.message);
		free(text);
		lang_result_free(&res);
		return false;
	}
	cJSON *rec = text ? cJSON_ParseWithLength(text, len) : NULL;
	free(text);
	bool timeout = res.run.status == LANG_EXEC_TIME_LIMIT;
	char died[160] = "";
	if (!rec && !timeout)
		snprintf(died, sizeof(died), "the kernel died (exit %d) while running cell %u",
			 res.run.return_code, n);
	if (n > 1)
		fputc(',', f);
	cell_json(f, &res, rec, died[0] ? died : NULL);
	cJSON_Delete(rec);
	if (timeout) {
		st->failed = st->timed_out = true;
		snprintf(st->note, sizeof(st->note), "cell %u: timed out after %gs (%s)", n, req.timeout_s,
			 by_cell ? "cell_timeout" : "total_timeout");
	} else if (died[0]) {
		st->failed = true;
		st->return_code = 1;
		snprintf(st->note, sizeof(st->note), "%s%s%s%s", died, res.limit_hit ? " (the " : "",
			 res.limit_hit ? res.limit_hit : "", res.limit_hit ? " limit)" : "");
	}
	lang_result_free(&res);
	return !st->failed;
}

/* fetch_files: each that is a file, {path: base64}; missing ones left out
 * (as SandboxFusion does). */
static void fetch_json(struct cell *c, const cJSON *fetch, FILE *f)
{
	const cJSON *v;
	bool first = true;
	fputc('{', f);
	cJSON_ArrayForEach(v, fetch)
	{
		char path[API_CELL_PATH];
		struct cell_file cf;
		struct sc_err e = {0};
		if (!api_cell_path(v->valuestring, path, sizeof(path)) ||
		    cell_read_file(c, path, FETCH_LIMIT, 30, &cf, &e) < 0)
			continue;
		fprintf(f, "%s", first ? "" : ",");
		api_json_string(f, v->valuestring, strlen(v->valuestring));
		fputc(':', f);
		api_json_base64(f, (const unsigned char *)cf.data, cf.len);
		free(cf.data);
		first = false;
	}
	fputc('}', f);
}

static const char *driver_status(const struct nb_run *st)
{
	return st->sandbox_error ? "Error" : st->timed_out ? "TimeLimitExceeded" : "Finished";
}

/* The cells of q in c, the answer into resp. */
static void run_notebook(struct api *a, struct cell *c, const struct nb_req *q,
			 struct api_response *resp)
{
	struct nb_run st = {.t0 = sc_now()};
	struct sc_err err = {0};
	struct api_jbuf cells, jb;
	if (!api_jb_open(&cells)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	char why[SC_ERR_MAX];
	if (api_op_memory(c, &a->lim, q->memory_mb, &err) < 0) {
		st.sandbox_error = true;
		snprintf(st.message, sizeof(st.message), "memory_limit_MB cannot be enforced: %.400s",
			 err.msg);
	} else if (q->files && api_op_write_files(c, q->files, why, sizeof(why)) < 0) {
		st.sandbox_error = true;
		snprintf(st.message, sizeof(st.message), "%s", why);
	} else if (lang_notebook_start(c, "/testbed", &err) < 0) {
		st.sandbox_error = true;
		snprintf(st.message, sizeof(st.message), "starting the kernel: %.400s", err.msg);
	}
	st.cells_t0 = sc_now(); /* the kernel's start is not the cells' time */
	const cJSON *v, *cells_in = st.sandbox_error ? NULL : q->cells;
	unsigned n = 0;
	cJSON_ArrayForEach(v, cells_in)
	{
		if (!run_cell(a, c, ++n, v->valuestring, q, &st, cells.f) || st.sandbox_error)
			break;
	}
	_cleanup_free_ char *cells_s = api_jb_close(&cells);
	size_t cells_len = cells.len;
	if (!cells_s || !api_jb_open(&jb)) {
		api_response_error(resp, 500, "out of memory");
		return;
	}
	FILE *f = jb.f;
	fprintf(f, "{\"status\":\"%s\",\"message\":",
		st.sandbox_error ? "SandboxError" : st.failed ? "Failed" : "Success");
	api_json_string(f, st.message, strlen(st.message));
	fprintf(f, ",\"driver\":{\"status\":\"%s\",\"execution_time\":%.6f,\"return_code\":",
		driver_status(&st), sc_now() - st.t0);
	if (st.timed_out)
		fputs("null", f);
	else
		fprintf(f, "%d", st.sandbox_error ? 1 : st.return_code);
	fputs(",\"stdout\":\"\",\"stderr\":", f);
	api_json_string(f, st.note, strlen(st.note));
	fputs("},\"cells\":[", f);
	fwrite(cells_s, 1, cells_len, f);
	fputs("],\"executor_pod_name\":", f);
	if (a->cfg.pod_name)
		api_json_string(f, a->cfg.pod_name, strlen(a->cfg.pod_name));
	else
		fputs("null", f);
	fputs(",\"files\":", f);
	if (st.sandbox_error)
		fputs("{}", f);
	else
		fetch_json(c, q->fetch, f);
	fputs("}\n", f);
	api_jb_send(&jb, resp, 200);
}

void api_run_jupyter(struct api *a, const struct api_call *call, struct api_response *resp)
{
	struct api_bad bad;
	struct nb_req q;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, false, &bad);
	if (!j || !parse_nb(j, &a->lim, &q, &bad)) {
		api_refuse(resp, &bad);
		cJSON_Delete(j);
		return;
	}
	struct cell *c = api_pool_take(a, "run_jupyter", resp);
	if (!c) {
		cJSON_Delete(j);
		return;
	}
	pthread_mutex_lock(&a->mu);
	bool stopping = a->cancelled;
	pthread_mutex_unlock(&a->mu);
	if (stopping)
		api_response_error(resp, 503, "the server is stopping");
	else
		run_notebook(a, c, &q, resp);
	cell_pool_release(a->pool, c); /* renewed (or removed), never reused as it is */
	cJSON_Delete(j);
}

/* One command of a run or a session as a step: its result in lang terms,
 * its output to the sink (streamed as it comes, or once at the end). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void lang_i_emit(const struct lang_sink *sink, enum lang_event_type t, const char *data,
		 size_t len, const struct lang_result *res)
{
	if (!sink || !sink->fn)
		return;
	struct lang_event ev = {.type = t, .data = data, .len = len, .result = res};
	sink->fn(sink->ctx, &ev);
}

static char *dup_or_empty(char *s, size_t *len)
{
	if (s)
		return s;
	*len = 0;
	return calloc(1, 1);
}

/* A streamed step's output, piece by piece, as cell_exec reads it. */
static void emit_output(void *ctx, int stream, const char *data, size_t len)
{
	lang_i_emit(ctx, stream == 2 ? LANG_EV_STDERR : LANG_EV_STDOUT, data, len, NULL);
}

int lang_i_exec(struct cell *c, const struct lang_i_exec *x, struct lang_exec *ex,
		struct sc_err *err)
{
	struct cell_exec_req er = {
		.argv = x->argv,
		.env = x->env,
		.cwd = x->cwd,
		.timeout_s = x->timeout_s,
		.output_limit = x->output_limit,
		.stdin_fd = x->stdin_fd,
		.stdout_fd = -1,
		.stderr_fd = -1,
		.has_cancel = x->has_cancel,
		.cancel_fd = x->cancel_fd,
		.prestarted = x->prestarted,
	};
	bool stream = x->stream && x->sink && x->sink->fn;
	if (stream) {
		er.on_output = emit_output;
		er.output_ctx = (void *)x->sink;
	}
	struct cell_result cr;
	ex->present = true;
	if (cell_exec(c, &er, &cr, err) < 0) {
		ex->status = LANG_EXEC_ERROR;
		ex->return_code = CELL_EXIT_INTERNAL;
		ex->out = calloc(1, 1);
		ex->err = calloc(1, 1);
		return sc_err_wrap(err, "%s", x->argv[0]);
	}
	ex->status = cr.timed_out ? LANG_EXEC_TIME_LIMIT : LANG_EXEC_FINISHED;
	ex->return_code = cr.exit_code;
	ex->out = dup_or_empty(cr.out, &cr.out_len);
	ex->out_len = cr.out_len;
	ex->err = dup_or_empty(cr.err, &cr.err_len);
	ex->err_len = cr.err_len;
	cr.out = cr.err = NULL;
	ex->out_truncated = cr.out_truncated;
	ex->err_truncated = cr.err_truncated;
	ex->execution_time = cr.wall_s;
	ex->limit_hit = cr.limit_hit ? cr.limit_hit : cr.timed_out ? "timeout" : NULL;
	ex->peak_memory = cr.peak_memory;
	ex->prestarted = cr.prestarted;
	cell_result_free(&cr);
	if (!ex->out || !ex->err)
		return sc_fail(err, ENOMEM, "%s: out of memory", x->argv[0]);
	if (!stream) {
		lang_i_emit(x->sink, LANG_EV_STDOUT, ex->out, ex->out_len, NULL);
		lang_i_emit(x->sink, LANG_EV_STDERR, ex->err, ex->err_len, NULL);
	}
	return 0;
}

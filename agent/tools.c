#include "tools.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "edit.h"
#include "text.h"

const char AGENT_TOOL_NO_CALL_REMINDER[] =
	"You did not call a tool. Use execute_bash or str_replace_editor to work on the "
	"problem, and call submit once /testbed/answer.txt holds your final answer.";

/* ---- running things in the cell ---- */

static double time_left(const struct tool_ctx *t, double want)
{
	double left = t->deadline - sc_now();
	if (left < 0.001)
		left = 0.001;
	return want > 0 && want < left ? want : left;
}

static int exec_in_cell(struct tool_ctx *t, char *const argv[], const char *in, size_t inlen,
			uint64_t limit, double timeout, struct cell_result *res, struct sc_err *err)
{
	_cleanup_fd_ int fd = -1;
	if (in) {
		fd = sc_memfd_of("stdin", in, inlen, err);
		if (fd < 0)
			return -1;
	}
	struct cell_exec_req req = {
		.argv = argv,
		.cwd = t->cwd ? t->cwd : "/testbed",
		.timeout_s = time_left(t, timeout),
		.output_limit = limit,
		.stdin_fd = fd,
		.stdout_fd = -1,
		.stderr_fd = -1,
	};
	*res = (struct cell_result){0};
	return cell_exec(t->cell, &req, res, err);
}

/* ---- observations ---- */

static char *stream_text(const char *s, size_t len, bool truncated)
{
	_cleanup_free_ char *clean = agent_text_sanitize(s ? s : "", s ? len : 0, &len);
	if (!clean)
		return NULL;
	_cleanup_free_ char *lines = agent_text_truncate_lines(clean, len, TOOL_MAX_LINES, TOOL_KEEP_HEAD,
							 TOOL_KEEP_TAIL);
	if (!lines)
		return NULL;
	char *capped = agent_text_cap_middle(lines, strlen(lines), TOOL_MAX_STREAM);
	if (capped && truncated) {
		struct sc_sbuf b = {0};
		sc_sbuf_adds(&b, capped);
		sc_sbuf_printf(&b, "\n[output above %u MiB: its middle was dropped]", TOOL_EXEC_OUTPUT >> 20);
		free(capped);
		capped = sc_sbuf_take(&b);
	}
	return capped;
}

char *agent_tool_bash_observation(const struct cell_result *res, double timeout_s)
{
	struct sc_sbuf b = {0};
	if (res->timed_out)
		sc_sbuf_printf(&b,
			    "The command timed out after %g seconds and was killed (exit code %d). "
			    "The machine is still running; run long jobs in the background "
			    "(nohup CMD > log 2>&1 &) and check on them.\n",
			    timeout_s, res->exit_code);
	else if (res->signal)
		sc_sbuf_printf(&b, "Exit code: %d (killed by signal %d%s%s)\n", res->exit_code,
			    res->signal, res->limit_hit ? ", limit hit: " : "",
			    res->limit_hit ? res->limit_hit : "");
	else
		sc_sbuf_printf(&b, "Exit code: %d\n", res->exit_code);
	_cleanup_free_ char *out = stream_text(res->out, res->out_len, res->out_truncated);
	_cleanup_free_ char *err = stream_text(res->err, res->err_len, res->err_truncated);
	if (!out || !err) {
		sc_sbuf_free(&b);
		return NULL;
	}
	if (!*out && !*err)
		sc_sbuf_adds(&b, "(no output)");
	if (*out) {
		sc_sbuf_adds(&b, "[stdout]\n");
		sc_sbuf_adds(&b, out);
		if (out[strlen(out) - 1] != '\n')
			sc_sbuf_adds(&b, "\n");
	}
	if (*err) {
		sc_sbuf_adds(&b, "[stderr]\n");
		sc_sbuf_adds(&b, err);
	}
	/* no trailing newline: the step counter note follows on its own line */
	while (b.len && b.s[b.len - 1] == '\n')
		b.s[--b.len] = '\0';
	return sc_sbuf_take(&b);
}

static int set_obs(struct tool_outcome *o, bool is_error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set_obs(struct tool_outcome *o, bool is_error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	size_t len;
	o->observation = agent_text_sanitize(s, (size_t)n, &len);
	free(s);
	o->is_error = is_error;
	return o->observation ? 0 : -1;
}

/* Editor output: capped at TOOL_EDITOR_MAX characters with a note. */
static int set_editor_obs(struct tool_outcome *o, struct sc_sbuf *b)
{
	_cleanup_free_ char *s = sc_sbuf_take(b);
	if (!s)
		return -1;
	size_t len;
	_cleanup_free_ char *clean = agent_text_sanitize(s, strlen(s), &len);
	if (!clean)
		return -1;
	struct sc_sbuf out = {0};
	size_t keep = agent_text_utf8_prefix(clean, len, TOOL_EDITOR_MAX);
	sc_sbuf_add(&out, clean, keep);
	if (keep < len)
		sc_sbuf_printf(&out,
			    "\n[output cut at %d characters: view a smaller view_range, or find "
			    "line numbers with `grep -n` first]",
			    TOOL_EDITOR_MAX);
	while (out.len && out.s[out.len - 1] == '\n')
		out.s[--out.len] = '\0';
	o->observation = sc_sbuf_take(&out);
	return o->observation ? 0 : -1;
}

/* ---- execute_bash ---- */

/* A command too long for an exec request goes to a script file on stdin;
 * the command itself still reads /dev/null. */
static const char LONG_COMMAND_SCRIPT[] = "f=$(mktemp) || exit 125\n"
					  "cat > \"$f\"\n"
					  "bash \"$f\" </dev/null\n"
					  "rc=$?\n"
					  "rm -f \"$f\"\n"
					  "exit $rc\n";

/* Is the cell still there after an exec failed? */
static bool cell_alive(struct tool_ctx *t)
{
	char *argv[] = {"true", NULL};
	struct cell_result res;
	struct sc_err err = {0};
	if (exec_in_cell(t, argv, NULL, 0, 4096, 10, &res, &err) < 0)
		return false;
	cell_result_free(&res);
	return true;
}

static int run_bash(struct tool_ctx *t, const cJSON *args, struct tool_outcome *o)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
	if (!cJSON_IsString(cmd) || !*cmd->valuestring)
		return set_obs(o, true, "Error: execute_bash needs a non-empty string argument "
					"\"command\".");
	size_t len = strlen(cmd->valuestring);
	bool long_cmd = len > TOOL_INLINE_COMMAND;
	char *argv[] = {"bash", "-c", long_cmd ? (char *)LONG_COMMAND_SCRIPT : cmd->valuestring, NULL};
	struct cell_result res;
	struct sc_err err = {0};
	double timeout = time_left(t, t->command_timeout_s);
	if (exec_in_cell(t, argv, long_cmd ? cmd->valuestring : NULL, len, TOOL_EXEC_OUTPUT, timeout,
			 &res, &err) < 0) {
		o->cell_failed = !cell_alive(t);
		return set_obs(o, true, "Error: the command could not be run: %s", err.msg);
	}
	o->exit_code = res.exit_code;
	o->timed_out = res.timed_out;
	o->observation = agent_tool_bash_observation(&res, timeout);
	cell_result_free(&res);
	return o->observation ? 0 : -1;
}

/* ---- str_replace_editor ---- */

/* Files are read and written by the cell's init (cell_read_file,
 * cell_write_file); only a directory listing runs a command. */
static const char LIST_SCRIPT[] =
	"find \"$1\" -mindepth 1 -maxdepth 2 -name '.*' -prune -o -type d -printf '%p/\\n' "
	"-o -printf '%p\\n' 2>&1 | LC_ALL=C sort | head -n 1000\n";

struct file_read {
	char kind;   /* F file, D directory, N missing, O other, R unreadable, 0 failed */
	char *data;  /* the file, or the listing of a directory */
	size_t len;
	bool too_large;
	char error[SC_ERR_MAX];
};

static void list_dir(struct tool_ctx *t, const char *path, struct file_read *fr)
{
	char *argv[] = {"sh", "-c", (char *)LIST_SCRIPT, "sh", (char *)path, NULL};
	struct cell_result res;
	struct sc_err err = {0};
	if (exec_in_cell(t, argv, NULL, 0, TOOL_MAX_FILE, t->command_timeout_s, &res, &err) < 0) {
		fr->kind = 0;
		snprintf(fr->error, sizeof(fr->error), "%s", err.msg);
		return;
	}
	fr->data = res.out;
	fr->len = res.out_len;
	res.out = NULL;
	cell_result_free(&res);
}

static void read_path(struct tool_ctx *t, const char *path, bool list, struct file_read *fr)
{
	struct cell_file f;
	struct sc_err err = {0};
	*fr = (struct file_read){0};
	if (cell_read_file(t->cell, path, TOOL_MAX_FILE, time_left(t, t->command_timeout_s), &f,
			   &err) == 0) {
		fr->kind = 'F';
		fr->data = f.data;
		fr->len = f.len;
		fr->too_large = f.truncated;
		return;
	}
	switch (err.errnum) {
	case ENOENT:
	case ENOTDIR:
		fr->kind = 'N';
		return;
	case EISDIR:
		fr->kind = 'D';
		if (list)
			list_dir(t, path, fr);
		return;
	case EINVAL:
		fr->kind = 'O';
		return;
	case EACCES:
		fr->kind = 'R';
		return;
	default:
		snprintf(fr->error, sizeof(fr->error), "%s", err.msg);
	}
}

/* Explain a read that gave no regular file; returns 0 when it did. */
static int check_file(struct tool_outcome *o, const struct file_read *fr, const char *path,
		      int *rc)
{
	switch (fr->kind) {
	case 'F':
		if (fr->too_large) {
			*rc = set_obs(o, true,
				      "Error: %s is larger than %u MiB; the editor cannot handle it. "
				      "Use execute_bash (grep -n, sed -n 'A,Bp', head, tail) instead.",
				      path, TOOL_MAX_FILE >> 20);
			return -1;
		}
		return 0;
	case 'D':
		*rc = set_obs(o, true, "Error: %s is a directory, not a file.", path);
		return -1;
	case 'N':
		*rc = set_obs(o, true, "Error: the path %s does not exist.", path);
		return -1;
	case 'O':
		*rc = set_obs(o, true, "Error: %s is not a regular file.", path);
		return -1;
	case 'R':
		*rc = set_obs(o, true, "Error: %s is not readable.", path);
		return -1;
	default:
		*rc = set_obs(o, true, "Error: cannot read %s: %s", path, fr->error);
		return -1;
	}
}

static int write_path(struct tool_ctx *t, const char *path, const char *data, size_t len,
		      unsigned flags, struct sc_err *err)
{
	return cell_write_file(t->cell, path, data, len, flags, time_left(t, t->command_timeout_s),
			       err);
}

static const char *str_arg(const cJSON *args, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An integer argument, also from a string of digits (models do that). */
static bool int_of(const cJSON *v, long *out)
{
	if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble) &&
	    fabs(v->valuedouble) < 1e12) {
		*out = (long)v->valuedouble;
		return true;
	}
	if (cJSON_IsString(v) && *v->valuestring) {
		char *end;
		errno = 0;
		long n = strtol(v->valuestring, &end, 10);
		if (!*end && !errno) {
			*out = n;
			return true;
		}
	}
	return false;
}

static int editor_view(struct tool_ctx *t, const char *path, const cJSON *args,
		       struct tool_outcome *o)
{
	const cJSON *range = cJSON_GetObjectItemCaseSensitive(args, "view_range");
	long start = 0, end = -1;
	bool ranged = range && !cJSON_IsNull(range);
	if (ranged && (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 ||
		       !int_of(cJSON_GetArrayItem(range, 0), &start) ||
		       !int_of(cJSON_GetArrayItem(range, 1), &end)))
		return set_obs(o, true, "Error: view_range must be a list of two integers [start, end], "
					"e.g. [1, 40] or [100, -1].");
	struct file_read fr;
	read_path(t, path, true, &fr);
	_cleanup_free_ char *data = fr.data;
	int rc = 0;
	struct sc_sbuf b = {0};
	if (fr.kind == 'D') {
		if (ranged)
			return set_obs(o, true, "Error: view_range only applies to files; %s is a directory.",
				       path);
		sc_sbuf_printf(&b, "Files and directories up to 2 levels deep in %s, hidden ones excluded:\n",
			    path);
		sc_sbuf_add(&b, data, fr.len);
		if (!fr.len)
			sc_sbuf_adds(&b, "(empty directory)");
		return set_editor_obs(o, &b);
	}
	if (check_file(o, &fr, path, &rc) < 0)
		return rc;
	size_t lines = agent_edit_line_count(data, fr.len);
	if (!ranged) {
		if (!lines)
			return set_obs(o, false, "The file %s is empty.", path);
		start = 1;
		end = -1;
	} else {
		char msg[300];
		if (agent_edit_check_range(start, end, lines, msg, sizeof(msg)) < 0)
			return set_obs(o, true, "Error: %s", msg);
	}
	sc_sbuf_printf(&b, "Here's the result of running `cat -n` on %s:\n", path);
	agent_edit_number_lines(&b, data, fr.len, (size_t)start, end == -1 ? lines : (size_t)end);
	return set_editor_obs(o, &b);
}

static int editor_create(struct tool_ctx *t, const char *path, const cJSON *args,
			 struct tool_outcome *o)
{
	const cJSON *ft = cJSON_GetObjectItemCaseSensitive(args, "file_text");
	if (!cJSON_IsString(ft))
		return set_obs(o, true, "Error: create needs a string argument \"file_text\".");
	size_t len = strlen(ft->valuestring);
	if (len > TOOL_MAX_FILE)
		return set_obs(o, true, "Error: file_text is larger than %u MiB.", TOOL_MAX_FILE >> 20);
	struct sc_err err = {0};
	if (write_path(t, path, ft->valuestring, len, CELL_FILE_CREATE, &err) < 0) {
		if (err.errnum == EEXIST)
			return set_obs(o, true,
				       "Error: %s already exists; create never overwrites a file. Edit it "
				       "with str_replace or insert, or remove it with execute_bash first.",
				       path);
		return set_obs(o, true, "Error: %s", err.msg);
	}
	return set_obs(o, false, "File created successfully at: %s (%zu lines)", path,
		       agent_edit_line_count(ft->valuestring, len));
}

static void snippet(struct sc_sbuf *b, const char *path, const char *data, size_t len, size_t first,
		    size_t last)
{
	size_t lines = agent_edit_line_count(data, len);
	first = first > EDIT_SNIPPET_LINES ? first - EDIT_SNIPPET_LINES : 1;
	last += EDIT_SNIPPET_LINES;
	if (last > lines)
		last = lines;
	sc_sbuf_printf(b, "The file %s has been edited. Here's the result of running `cat -n` on a "
		       "snippet of %s:\n", path, path);
	agent_edit_number_lines(b, data, len, first, last);
	sc_sbuf_adds(b, "Review the changes and make sure they are as expected. Edit the file again if "
		     "necessary.");
}

/* Write an edited file back and show lines first..last of it. */
static int save_edit(struct tool_ctx *t, const char *path, const char *out, size_t out_len,
		     size_t first, size_t last, struct tool_outcome *o)
{
	if (out_len > TOOL_MAX_FILE)
		return set_obs(o, true, "Error: the result would be larger than %u MiB.", TOOL_MAX_FILE >> 20);
	struct sc_err err = {0};
	if (write_path(t, path, out, out_len, 0, &err) < 0)
		return set_obs(o, true, "Error: %s", err.msg);
	struct sc_sbuf b = {0};
	snippet(&b, path, out, out_len, first, last);
	return set_editor_obs(o, &b);
}

static int editor_str_replace(struct tool_ctx *t, const char *path, const cJSON *args,
			      struct tool_outcome *o)
{
	const char *old = str_arg(args, "old_str"), *new = str_arg(args, "new_str");
	const cJSON *nv = cJSON_GetObjectItemCaseSensitive(args, "new_str");
	if (!old || !*old)
		return set_obs(o, true, "Error: str_replace needs a non-empty string argument \"old_str\".");
	if (nv && !cJSON_IsNull(nv) && !new)
		return set_obs(o, true, "Error: new_str must be a string.");
	if (!new)
		new = "";
	struct file_read fr;
	read_path(t, path, false, &fr);
	_cleanup_free_ char *data = fr.data;
	int rc = 0;
	if (check_file(o, &fr, path, &rc) < 0)
		return rc;
	size_t olen = strlen(old), nlen = strlen(new);
	size_t n = agent_edit_count(data, fr.len, old, olen);
	if (n == 0)
		return set_obs(o, true, "Error: no replacement was performed: old_str did not appear "
					"verbatim in %s (found 0 occurrences).", path);
	if (n > 1)
		return set_obs(o, true,
			       "Error: no replacement was performed: old_str occurs %zu times in %s; "
			       "include more surrounding lines so that it is unique.", n, path);
	size_t out_len = 0, line = 0;
	_cleanup_free_ char *out = agent_edit_replace(data, fr.len, old, olen, new, nlen, &out_len, &line);
	if (!out)
		return -1;
	size_t new_lines = agent_edit_line_count(new, nlen);
	return save_edit(t, path, out, out_len, line, line + (new_lines ? new_lines - 1 : 0), o);
}

static int editor_insert(struct tool_ctx *t, const char *path, const cJSON *args,
			 struct tool_outcome *o)
{
	long after;
	const char *text = str_arg(args, "new_str");
	if (!int_of(cJSON_GetObjectItemCaseSensitive(args, "insert_line"), &after))
		return set_obs(o, true, "Error: insert needs an integer argument \"insert_line\" "
					"(0 inserts at the top).");
	if (!text)
		return set_obs(o, true, "Error: insert needs a string argument \"new_str\".");
	struct file_read fr;
	read_path(t, path, false, &fr);
	_cleanup_free_ char *data = fr.data;
	int rc = 0;
	if (check_file(o, &fr, path, &rc) < 0)
		return rc;
	size_t lines = agent_edit_line_count(data, fr.len);
	if (after < 0 || (size_t)after > lines)
		return set_obs(o, true, "Error: invalid insert_line %ld: it must be from 0 to %zu "
					"(the number of lines in %s).", after, lines, path);
	size_t tlen = strlen(text), out_len = 0;
	_cleanup_free_ char *out = agent_edit_insert(data, fr.len, (size_t)after, text, tlen, &out_len);
	if (!out)
		return -1;
	size_t added = agent_edit_line_count(text, tlen);
	return save_edit(t, path, out, out_len, (size_t)after + 1, (size_t)after + (added ? added : 1), o);
}

static int run_editor(struct tool_ctx *t, const cJSON *args, struct tool_outcome *o)
{
	const char *cmd = str_arg(args, "command"), *path = str_arg(args, "path");
	if (!cmd)
		return set_obs(o, true, "Error: str_replace_editor needs \"command\": one of view, "
					"create, str_replace, insert.");
	if (!path || !*path)
		return set_obs(o, true, "Error: str_replace_editor needs a string argument \"path\".");
	if (path[0] != '/')
		return set_obs(o, true, "Error: the path %.300s is not absolute; use a full path such "
					"as %s/%.300s.", t->cwd ? t->cwd : "/testbed", path, path);
	if (strlen(path) > 4096)
		return set_obs(o, true, "Error: the path is longer than 4096 characters.");
	if (!strcmp(cmd, "view"))
		return editor_view(t, path, args, o);
	if (!strcmp(cmd, "create"))
		return editor_create(t, path, args, o);
	if (!strcmp(cmd, "str_replace"))
		return editor_str_replace(t, path, args, o);
	if (!strcmp(cmd, "insert"))
		return editor_insert(t, path, args, o);
	return set_obs(o, true, "Error: unknown command '%.100s'; use one of view, create, "
				"str_replace, insert.", cmd);
}

int agent_tool_run(struct tool_ctx *t, const struct llm_tool_call *call, struct tool_outcome *o)
{
	*o = (struct tool_outcome){0};
	double t0 = sc_now();
	int rc;
	if (call->args_error)
		rc = set_obs(o, true, "Error: could not parse the arguments of %.100s: %s. Arguments "
				      "must be a JSON object, e.g. {\"command\": \"ls\"}. Received: %.500s",
			     call->name, call->args_error, call->arguments);
	else if (!strcmp(call->name, "execute_bash"))
		rc = run_bash(t, call->args, o);
	else if (!strcmp(call->name, "str_replace_editor"))
		rc = run_editor(t, call->args, o);
	else if (!strcmp(call->name, "submit")) {
		o->submitted = true;
		rc = set_obs(o, false, "Submitted.");
	} else
		rc = set_obs(o, true, "Error: unknown tool '%.100s'; the tools are execute_bash, "
				      "str_replace_editor and submit.", call->name);
	o->exec_s = sc_now() - t0;
	return rc;
}

void agent_tool_outcome_free(struct tool_outcome *o)
{
	free(o->observation);
	o->observation = NULL;
}

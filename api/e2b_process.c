/* envd's Process service (process.proto) over Connect: Start runs a
 * command in the sandbox's cell and streams its start, data and end
 * events as they happen; List shows the commands still running; SendSignal
 * ends one (SIGTERM and SIGKILL alike: the cell's init kills it). The
 * command is read through the same request layer as POST
 * /cells/{id}/exec (api_parse_exec: its limits and refusals) and run by
 * the same call (api_op_exec). A pid is the sandbox's own number for the
 * command, not the cell's. Stdin is /dev/null, or with "stdin": true a
 * pipe that SendInput writes to and CloseStdin closes. With "pty" the
 * command runs on a pty of the cell's own (cell_exec's tty): its output
 * comes as pty data, SendInput's pty bytes go to its master, Update sets
 * its size. Every frame also goes to the command's Connect watchers
 * (e2b_attach.c). A command outlives its Start stream, as on E2B: when
 * the client goes away (handle.disconnect()) it runs on, listed, to be
 * reached by Connect and ended by SendSignal (api_stream_outlive).
 * StreamInput answers unimplemented (docs/e2b.md). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "../common/base64.h"
#include "../common/parse.h"
#include "e2b_priv.h"

#define E2B_KEEPALIVE_MS 1000   /* silence before a keepalive event (the least timeout is 1 s) */
#define E2B_NO_DEADLINE 86400.0 /* seconds a command without a deadline gets (then the cap) */

struct proc_job {
	struct api *a;
	char id[API_ID_LEN + 1];
	struct cell *c;
	cJSON *j;              /* the strings x points to */
	struct api_exec x;
	uint32_t pid;
	char cmd[256], tag[64];
	struct api_stream *s;
	uint64_t limit, sent[2]; /* bytes of stdout, stderr streamed: the server's output limit */
	int stdin_r, stdin_w;  /* "stdin": true: the pipe (stdin_w goes to the
				* sandbox's list when registered), else -1 */
	struct api_e2b_hub *hub;
	bool pty;              /* "pty": its output is the pty's, not limited */
	unsigned short cols, rows;
};

static void proc_job_free(void *ctx)
{
	struct proc_job *p = ctx;
	if (p->c)
		api_cell_end(p->a, p->id, p->c);
	if (p->stdin_r >= 0)
		close(p->stdin_r);
	if (p->stdin_w >= 0)
		close(p->stdin_w);
	api_exec_free(&p->x);
	cJSON_Delete(p->j);
	api_e2b_hub_free(p->hub);
	free(p);
}

/* One frame into the command's stream and to its watchers. */
static void proc_send(struct proc_job *p, bool end, const char *json, size_t len)
{
	size_t n;
	_cleanup_free_ unsigned char *m = api_connect_frame(end, json, len, &n);
	if (!m)
		return;
	api_stream_raw(p->s, m, n);
	api_e2b_hub_send(p->hub, m, n);
}

static void proc_send_error(struct proc_job *p, enum api_connect_code c, const char *msg)
{
	size_t n;
	_cleanup_free_ unsigned char *m = api_connect_error_frame(c, msg, &n);
	if (!m)
		return;
	api_stream_raw(p->s, m, n);
	api_e2b_hub_send(p->hub, m, n);
}

/* {"event": {...}} as one message. */
static void send_event(struct proc_job *p, const char *fmt_head, const char *b64, size_t n,
		       const char *tail)
{
	struct api_jbuf jb;
	if (!api_jb_open(&jb))
		return;
	fputs(fmt_head, jb.f);
	if (b64)
		fwrite(b64, 1, n, jb.f);
	fputs(tail, jb.f);
	_cleanup_free_ char *t = api_jb_close(&jb);
	if (t)
		proc_send(p, false, t, jb.len);
}

static void on_output(void *ctx, int stream, const char *d, size_t n)
{
	struct proc_job *p = ctx;
	if (p->pty) { /* a terminal's: as it comes (the client's pace), not cut */
		size_t len;
		_cleanup_free_ char *b = sc_base64_encode(d, n, &len);
		if (b)
			send_event(p, "{\"event\":{\"data\":{\"pty\":\"", b, len, "\"}}}");
		return;
	}
	int k = stream == 2;
	/* as much as /cells/{id}/exec keeps of a stream; the rest is dropped */
	if (p->sent[k] >= p->limit)
		return;
	if (n > p->limit - p->sent[k])
		n = (size_t)(p->limit - p->sent[k]);
	p->sent[k] += n;
	size_t len;
	_cleanup_free_ char *b = sc_base64_encode(d, n, &len);
	if (b)
		send_event(p, stream == 2 ? "{\"event\":{\"data\":{\"stderr\":\""
					     : "{\"event\":{\"data\":{\"stdout\":\"",
			   b, len, "\"}}}");
}

/* The command in the sandbox's list of running ones (under a->mu);
 * false when the sandbox is gone or its list is full. */
static bool proc_register(struct proc_job *p)
{
	pthread_mutex_lock(&p->a->mu);
	struct api_cell *c = api_cell_find_locked(p->a, p->id);
	bool ok = c && c->e2b && c->e2b->nprocs < API_E2B_MAX_PROCS;
	if (ok) {
		struct api_e2b *e = c->e2b;
		p->pid = e->next_pid++;
		struct api_e2b_proc *q = &e->procs[e->nprocs++];
		q->pid = p->pid;
		q->s = p->s;
		snprintf(q->cmd, sizeof(q->cmd), "%s", p->cmd);
		snprintf(q->tag, sizeof(q->tag), "%s", p->tag);
		q->stdin_w = p->stdin_w; /* the list's now */
		p->stdin_w = -1;
		q->hub = p->hub;
		q->pty = -1;
	}
	pthread_mutex_unlock(&p->a->mu);
	return ok;
}

static void proc_unregister(struct proc_job *p)
{
	pthread_mutex_lock(&p->a->mu);
	struct api_cell *c = api_cell_find_locked(p->a, p->id);
	struct api_e2b *e = c ? c->e2b : NULL;
	for (size_t i = 0; e && i < e->nprocs; i++)
		if (e->procs[i].pid == p->pid && e->procs[i].s == p->s) {
			if (e->procs[i].stdin_w >= 0)
				close(e->procs[i].stdin_w);
			if (e->procs[i].pty >= 0)
				close(e->procs[i].pty);
			e->procs[i] = e->procs[--e->nprocs];
			break;
		}
	pthread_mutex_unlock(&p->a->mu);
}

/* The command's pty is open (cell_exec's on_pty): its size as asked,
 * and a dup of its master in the sandbox's list, for SendInput and
 * Update. */
static void proc_on_pty(void *ctx, int master)
{
	struct proc_job *p = ctx;
	struct winsize ws = {.ws_row = p->rows, .ws_col = p->cols};
	(void)ioctl(master, TIOCSWINSZ, &ws);
	int fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return; /* no input, no resize: the output still streams */
	pthread_mutex_lock(&p->a->mu);
	struct api_cell *c = api_cell_find_locked(p->a, p->id);
	struct api_e2b *e = c ? c->e2b : NULL;
	for (size_t i = 0; e && i < e->nprocs && fd >= 0; i++)
		if (e->procs[i].pid == p->pid && e->procs[i].s == p->s && e->procs[i].pty < 0) {
			e->procs[i].pty = fd;
			fd = -1;
		}
	pthread_mutex_unlock(&p->a->mu);
	if (fd >= 0)
		close(fd);
}

/* envd's end event of a command that ran (rc 0) or was killed
 * (ECANCELED) into end; false with the stream ended by an error. */
static bool end_event(struct proc_job *p, int rc, const struct sc_err *err,
		      const struct cell_result *res, char *end, size_t size, int *n)
{
	if (rc < 0 && err->errnum == ECANCELED) {
		/* SendSignal (or the sandbox's end): as envd tells of a killed one */
		*n = snprintf(end, size, "{\"event\":{\"end\":{\"exitCode\":-1,\"exited\":false,"
					 "\"status\":\"signal: killed\"}}}");
	} else if (rc < 0) {
		proc_send_error(p, API_CONNECT_INTERNAL, err->msg);
		return false;
	} else if (res->timed_out) {
		proc_send_error(p, API_CONNECT_DEADLINE_EXCEEDED,
				"the command ran past its deadline and was killed");
		return false;
	} else if (res->signal) {
		*n = snprintf(end, size,
			      "{\"event\":{\"end\":{\"exitCode\":%d,\"exited\":false,"
			      "\"status\":\"signal: %d\"}}}",
			      res->exit_code, res->signal);
	} else {
		*n = snprintf(end, size,
			      "{\"event\":{\"end\":{\"exitCode\":%d,\"exited\":true,"
			      "\"status\":\"exit status %d\"}}}",
			      res->exit_code, res->exit_code);
	}
	return true;
}

static void proc_job_stream(struct api_stream *s, void *ctx)
{
	struct proc_job *p = ctx;
	p->s = s;
	if (!proc_register(p)) {
		api_connect_send_error(s, API_CONNECT_RESOURCE_EXHAUSTED,
				       "too many commands run at once in the sandbox");
		return;
	}
	char start[64];
	int n = snprintf(start, sizeof(start), "{\"event\":{\"start\":{\"pid\":%u}}}", p->pid);
	api_connect_send(s, false, start, (size_t)n);
	p->x.req.has_cancel = true;
	p->x.req.cancel_fd = api_stream_cancel_fd(s);
	p->x.req.stdin_fd = p->stdin_r;
	p->x.req.on_output = on_output;
	p->x.req.output_ctx = p;
	if (p->pty) {
		p->x.req.tty = true;
		p->x.req.on_pty = proc_on_pty;
	}
	struct cell_result res = {0};
	struct sc_err err = {0};
	int rc = api_op_exec(p->c, &p->x, &res, &err);
	/* no watcher joins after this: each one before gets the end */
	proc_unregister(p);
	char end[160];
	if (end_event(p, rc, &err, &res, end, sizeof(end), &n)) {
		proc_send(p, false, end, (size_t)n);
		proc_send(p, true, "{}", 2);
	}
	if (rc == 0)
		cell_result_free(&res);
	api_e2b_hub_close(p->hub);
}

double api_e2b_deadline_s(const struct api_request *req)
{
	const char *h = req->header ? req->header(req->ctx, "Connect-Timeout-Ms") : NULL;
	uint64_t ms;
	if (!h || sc_parse_uint(h, 0, 1ull << 40, &ms) < 0 || ms == 0)
		return E2B_NO_DEADLINE;
	return (double)ms / 1000.0;
}

/* A PTY message's {"size": {"cols", "rows"}} (80x24 when it has none);
 * false when a number is not 1 to API_E2B_PTY_MAX. */
static bool pty_size(const cJSON *pty, unsigned short *cols, unsigned short *rows)
{
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(pty, "size");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(size, "cols");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(size, "rows");
	if (!cJSON_IsObject(pty) || (size && !cJSON_IsObject(size)))
		return false;
	double cv = c ? (cJSON_IsNumber(c) ? c->valuedouble : -1) : 80;
	double rv = r ? (cJSON_IsNumber(r) ? r->valuedouble : -1) : 24;
	if (!(cv >= 1 && cv <= API_E2B_PTY_MAX && rv >= 1 && rv <= API_E2B_PTY_MAX))
		return false;
	*cols = (unsigned short)cv;
	*rows = (unsigned short)rv;
	return true;
}

void api_e2b_stream_setup(struct api_response *resp)
{
	if (!resp->stream)
		return;
	resp->content_type = "application/connect+json";
	/* envd's keepalive event: a command silent for longer than the
	 * server's --connection-timeout keeps its stream */
	static const char KA[] = "\0\0\0\0\x1a{\"event\":{\"keepalive\":{}}}";
	api_stream_keepalive(resp->stream_ctx, KA, sizeof(KA) - 1, E2B_KEEPALIVE_MS);
}

/* StartRequest -> the request layer's exec body: {"argv": [cmd,
 * args...], "env": envVars + envs, "cwd": ..., "timeout": ...}; NULL
 * with resp. */
static cJSON *exec_body(struct api *a, const char *id, const cJSON *start, double timeout,
			struct proc_job *p, struct api_response *resp)
{
	const cJSON *proc = cJSON_GetObjectItemCaseSensitive(start, "process");
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(proc, "cmd");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(proc, "args");
	const cJSON *envs = cJSON_GetObjectItemCaseSensitive(proc, "envs");
	const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(proc, "cwd");
	const cJSON *tag = cJSON_GetObjectItemCaseSensitive(start, "tag");
	const cJSON *pty = cJSON_GetObjectItemCaseSensitive(start, "pty");
	if (!cJSON_IsObject(proc) || !cJSON_IsString(cmd) || (args && !cJSON_IsArray(args)) ||
	    (envs && !cJSON_IsObject(envs)) || (cwd && !cJSON_IsString(cwd))) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT,
				  "process: {cmd: string, args: [string], envs: {}, cwd: string}");
		return NULL;
	}
	if (pty && !cJSON_IsNull(pty) && !pty_size(pty, &p->cols, &p->rows)) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT,
				  "pty: {size: {cols, rows}}, each 1 to %d", API_E2B_PTY_MAX);
		return NULL;
	}
	p->pty = pty && !cJSON_IsNull(pty);
	char dir[API_CELL_PATH];
	if (!api_e2b_path(cwd ? cwd->valuestring : API_E2B_HOME, dir)) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "cwd: a path without '..'");
		return NULL;
	}
	snprintf(p->cmd, sizeof(p->cmd), "%s", cmd->valuestring);
	if (cJSON_IsString(tag))
		snprintf(p->tag, sizeof(p->tag), "%s", tag->valuestring);
	cJSON *j = cJSON_CreateObject(), *argv = cJSON_AddArrayToObject(j, "argv"), *env = NULL;
	pthread_mutex_lock(&a->mu);
	const struct api_cell *c = api_cell_find_locked(a, id);
	if (c && c->e2b && c->e2b->env)
		env = cJSON_Duplicate(c->e2b->env, true);
	pthread_mutex_unlock(&a->mu);
	if (!env)
		env = cJSON_CreateObject();
	const cJSON *v;
	cJSON_ArrayForEach(v, envs)
	{
		if (!cJSON_IsString(v))
			continue; /* the request layer refuses it below */
		cJSON_DeleteItemFromObjectCaseSensitive(env, v->string);
		cJSON_AddItemToObject(env, v->string, cJSON_Duplicate(v, false));
	}
	cJSON_AddItemToArray(argv, cJSON_Duplicate(cmd, false));
	cJSON_ArrayForEach(v, args)
	cJSON_AddItemToArray(argv, cJSON_Duplicate(v, false));
	cJSON_AddItemToObject(j, "env", env);
	cJSON_AddStringToObject(j, "cwd", dir);
	cJSON_AddNumberToObject(j, "timeout", timeout);
	return j;
}

void api_e2b_process_start(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	cJSON *start = api_connect_stream_request(call->req, resp);
	if (!start)
		return;
	struct proc_job *p = api_job_alloc(sizeof(*p), resp);
	if (!p) {
		cJSON_Delete(start);
		return;
	}
	p->a = a;
	p->stdin_r = p->stdin_w = -1;
	snprintf(p->id, sizeof(p->id), "%s", id);
	struct api_bad bad;
	p->j = exec_body(a, id, start, api_e2b_deadline_s(call->req), p, resp);
	/* a PTY's input goes to its master */
	bool want_stdin = !p->pty && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(start, "stdin"));
	cJSON_Delete(start);
	int pipe_fds[2];
	if (p->j && want_stdin) {
		if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
			api_connect_error(resp, API_CONNECT_INTERNAL, "stdin pipe: %s", strerror(errno));
			proc_job_free(p);
			return;
		}
		p->stdin_r = pipe_fds[0];
		p->stdin_w = pipe_fds[1];
		/* SendInput waits for room with poll, never in write */
		(void)fcntl(p->stdin_w, F_SETFL, O_NONBLOCK);
	}
	if (!p->j) {
		free(p);
		return;
	}
	if (api_parse_exec(p->j, &API_EXEC_HTTP, &a->lim, &p->x, &bad) < 0) {
		api_connect_error(resp, api_connect_code_of_status(bad.status), "%s", bad.msg);
		proc_job_free(p);
		return;
	}
	api_e2b_user(call->req, &p->x.req.has_user, &p->x.req.uid, &p->x.req.gid);
	p->limit = p->x.req.output_limit ? p->x.req.output_limit : CELL_DEFAULT_OUTPUT;
	if (!(p->hub = api_e2b_hub_new())) {
		api_connect_error(resp, API_CONNECT_INTERNAL, "out of memory");
		proc_job_free(p);
		return;
	}
	struct api_response inner = {0};
	if (api_cell_begin(a, id, &p->c, &inner) < 0) {
		api_connect_error(resp, api_connect_code_of_status(inner.status),
				  "the sandbox's cell is gone");
		api_response_free(&inner);
		p->c = NULL;
		proc_job_free(p);
		return;
	}
	api_stream_start(a, resp, 0, proc_job_stream, proc_job_free, p);
	api_e2b_stream_setup(resp);
	if (resp->stream) /* as envd's, the command outlives its Start stream */
		api_stream_outlive(resp->stream_ctx);
}

static uint32_t selected_pid(const cJSON *j, bool *ok)
{
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(j, "process");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(sel, "pid");
	*ok = cJSON_IsNumber(pid) && pid->valuedouble >= 0 && pid->valuedouble <= UINT32_MAX;
	return *ok ? (uint32_t)pid->valuedouble : 0;
}

void api_e2b_process_signal(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	bool ok = false;
	uint32_t pid = j ? selected_pid(j, &ok) : 0;
	cJSON_Delete(j);
	if (!ok) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "process: {pid: number}");
		return;
	}
	bool found = false;
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	for (size_t i = 0; c && c->e2b && i < c->e2b->nprocs; i++)
		if (c->e2b->procs[i].pid == pid) {
			api_stream_kill(c->e2b->procs[i].s);
			found = true;
		}
	pthread_mutex_unlock(&a->mu);
	if (!found) {
		api_connect_error(resp, API_CONNECT_NOT_FOUND, "process with pid %u not found", pid);
		return;
	}
	struct api_jbuf jb;
	if (api_jb_open(&jb)) {
		fputs("{}", jb.f);
		api_connect_reply(&jb, resp);
	}
}

void api_e2b_process_list(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_connect_error(resp, API_CONNECT_INTERNAL, "out of memory");
		return;
	}
	fputs("{\"processes\":[", jb.f);
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	for (size_t i = 0; c && c->e2b && i < c->e2b->nprocs; i++) {
		const struct api_e2b_proc *q = &c->e2b->procs[i];
		fprintf(jb.f, "%s{\"pid\":%u,\"config\":{\"cmd\":", i ? "," : "", q->pid);
		api_json_string(jb.f, q->cmd, strlen(q->cmd));
		fputs(",\"args\":[],\"envs\":{}}", jb.f);
		if (q->tag[0]) {
			fputs(",\"tag\":", jb.f);
			api_json_string(jb.f, q->tag, strlen(q->tag));
		}
		fputc('}', jb.f);
	}
	pthread_mutex_unlock(&a->mu);
	fputs("]}", jb.f);
	api_connect_reply(&jb, resp);
}

/* The write end of process pid's stdin pipe (pty: its pty's master),
 * dup'd (the caller closes it), -1 with *found false when there is no
 * such process, -1 with *found true when it has no stdin (any more).
 * close_it: CloseStdin. */
static int stdin_of(struct api *a, const char *id, uint32_t pid, bool close_it, bool pty,
		    bool *found)
{
	int fd = -1;
	*found = false;
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	for (size_t i = 0; c && c->e2b && i < c->e2b->nprocs; i++) {
		struct api_e2b_proc *q = &c->e2b->procs[i];
		if (q->pid != pid)
			continue;
		*found = true;
		if (pty) {
			fd = q->pty >= 0 ? fcntl(q->pty, F_DUPFD_CLOEXEC, 3) : -1;
		} else if (q->stdin_w >= 0 && close_it) {
			close(q->stdin_w);
			q->stdin_w = -1;
		} else if (q->stdin_w >= 0) {
			fd = fcntl(q->stdin_w, F_DUPFD_CLOEXEC, 3);
		}
	}
	pthread_mutex_unlock(&a->mu);
	return fd;
}

/* All of d into the pipe fd (non-blocking), waiting for room up to
 * API_E2B_STDIN_WAIT_MS at a time: 0, or -1 with errno. */
static int write_stdin(int fd, const char *d, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, d, n);
		if (w > 0) {
			d += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -1;
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		int r = poll(&pf, 1, API_E2B_STDIN_WAIT_MS);
		if (r == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (r < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* SendInput ({"process": {"pid"}, "input": {"stdin": base64}}) and
 * CloseStdin ({"process": {"pid"}}). */
static void stdin_call(struct api *a, const struct api_call *call, bool close_it,
		       struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	bool ok = false;
	uint32_t pid = j ? selected_pid(j, &ok) : 0;
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(in, "stdin");
	const cJSON *pty = cJSON_GetObjectItemCaseSensitive(in, "pty");
	bool to_pty = !close_it && pty != NULL;
	if (to_pty)
		data = pty;
	char *bytes = NULL;
	size_t n = 0;
	if (ok && !close_it) {
		if (cJSON_IsString(data))
			ok = sc_base64_decode(data->valuestring, strlen(data->valuestring), &bytes, &n) == 0;
		else
			ok = data == NULL || cJSON_IsNull(data); /* nothing to send */
	}
	cJSON_Delete(j);
	if (!ok) {
		free(bytes);
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT,
				  close_it ? "process: {pid: number}"
					   : "process: {pid: number}, input: {stdin or pty: base64 bytes}");
		return;
	}
	bool found;
	int fd = stdin_of(a, id, pid, close_it, to_pty, &found);
	int rc = fd >= 0 ? write_stdin(fd, bytes ? bytes : "", n) : 0;
	int e = errno;
	if (fd >= 0)
		close(fd);
	free(bytes);
	if (!found)
		api_connect_error(resp, API_CONNECT_NOT_FOUND, "process with pid %u not found", pid);
	else if (fd < 0 && to_pty)
		api_connect_error(resp, API_CONNECT_FAILED_PRECONDITION, "process %u has no pty", pid);
	else if (fd < 0 && !close_it)
		api_connect_error(resp, API_CONNECT_FAILED_PRECONDITION,
				  "process %u has no stdin: start it with stdin: true (or it was closed)", pid);
	else if (rc < 0)
		api_connect_error(resp, e == ETIMEDOUT ? API_CONNECT_DEADLINE_EXCEEDED : API_CONNECT_UNAVAILABLE,
				  "stdin of process %u: %s", pid,
				  e == ETIMEDOUT ? "the command reads none of it" : strerror(e));
	else {
		struct api_jbuf jb;
		if (api_jb_open(&jb)) {
			fputs("{}", jb.f);
			api_connect_reply(&jb, resp);
		}
	}
}

void api_e2b_process_input(struct api *a, const struct api_call *call, struct api_response *resp)
{
	stdin_call(a, call, false, resp);
}

void api_e2b_process_close_stdin(struct api *a, const struct api_call *call,
				 struct api_response *resp)
{
	stdin_call(a, call, true, resp);
}

/* The window size of process pid's pty: 0, or -1 with errno (ENOENT
 * no such process, ENOTTY it has no pty). */
static int pty_resize(struct api *a, const char *id, uint32_t pid, unsigned short cols,
		      unsigned short rows)
{
	int rc = -1, e = ENOENT;
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	for (size_t i = 0; c && c->e2b && i < c->e2b->nprocs; i++) {
		const struct api_e2b_proc *q = &c->e2b->procs[i];
		if (q->pid != pid)
			continue;
		e = ENOTTY;
		/* the kernel tells the pty's foreground process group (SIGWINCH) */
		if (q->pty >= 0 && (rc = ioctl(q->pty, TIOCSWINSZ, &ws)) < 0)
			e = errno;
	}
	pthread_mutex_unlock(&a->mu);
	errno = e;
	return rc;
}

/* Update ({"process": {"pid"}, "pty": {"size": {"cols", "rows"}}}): a
 * PTY's new size. */
void api_e2b_process_update(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	struct api_bad bad;
	cJSON *j = api_req_object(call->req->body, call->req->body_len, true, &bad);
	bool ok = false;
	uint32_t pid = j ? selected_pid(j, &ok) : 0;
	const cJSON *pty = cJSON_GetObjectItemCaseSensitive(j, "pty");
	unsigned short cols = 0, rows = 0;
	ok = ok && (!pty || cJSON_IsNull(pty) || pty_size(pty, &cols, &rows));
	cJSON_Delete(j);
	if (!ok) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT,
				  "process: {pid: number}, pty: {size: {cols, rows}}, each 1 to %d",
				  API_E2B_PTY_MAX);
		return;
	}
	if (cols && pty_resize(a, id, pid, cols, rows) < 0) {
		if (errno == ENOENT)
			api_connect_error(resp, API_CONNECT_NOT_FOUND, "process with pid %u not found", pid);
		else
			api_connect_error(resp, API_CONNECT_FAILED_PRECONDITION,
					  "process %u has no pty to resize (%s)", pid, strerror(errno));
		return;
	}
	struct api_jbuf jb;
	if (api_jb_open(&jb)) {
		fputs("{}", jb.f);
		api_connect_reply(&jb, resp);
	}
}

void api_e2b_process_unimplemented(struct api *a, const struct api_call *call,
				   struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	api_connect_error(resp, API_CONNECT_UNIMPLEMENTED, "%.100s is not served (docs/e2b.md)",
			  call->req->path);
}

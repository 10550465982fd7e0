/* Sessions: a kept Python interpreter in a long-lived cell (lang/py/driver.py),
 * and the plots and support files that one-shot Python runs share. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define DRIVER LANG_SESSION_DIR "/driver.py"
#define CLIENT LANG_SESSION_DIR "/client.py"
#define FAST_CLIENT LANG_SESSION_DIR "/client" /* lang/client/session_client.c */
#define MARKER LANG_SESSION_DIR "/lang"
#define SESSION_PLOTS LANG_SESSION_DIR "/plots"
#define GRACE_S 5.0   /* the driver's SIGINT-to-SIGKILL grace */
#define STATUS_MAX 4096
/* The marker's version line: the clients' arguments and where the status
 * goes changed with it (a session started by an older sandcell is not run) */
#define MARKER_PROTO "proto=2\n"
#define KEY_HEX 32

void lang_session_req_init(struct lang_session_req *req)
{
	*req = (struct lang_session_req){0};
}

static const char *const SESSION_ENV[] = {
	LANG_PY_ENV_SUPPORT,
	"SANDCELL_PLOTS=" SESSION_PLOTS,
	"SANDCELL_SESSION_DIR=" LANG_SESSION_DIR,
	NULL,
};

/* Was the session's cell made with egress? */
static bool session_has_network(struct cell *c)
{
	struct cell_file cf;
	struct sc_err e = {0};
	if (cell_read_file(c, MARKER, 64, 30, &cf, &e) < 0)
		return false;
	bool net = strstr(cf.data, "\nnet=1\n") != NULL;
	free(cf.data);
	return net;
}

/* Is the cell a Python session, and may its runs use the fast client
 * (it ran there at install: "fast=1" in the marker)? *current: it was
 * started by this version (may be NULL). */
static bool session_marker(struct cell *c, bool *fast, bool *current)
{
	struct cell_file cf;
	struct sc_err e = {0};
	*fast = false;
	if (cell_read_file(c, MARKER, 64, 30, &cf, &e) < 0)
		return false;
	bool ok = !strncmp(cf.data, "python", 6);
	*fast = strstr(cf.data, "\nfast=1\n") != NULL;
	if (current)
		*current = strstr(cf.data, "\n" MARKER_PROTO) != NULL;
	free(cf.data);
	return ok;
}

bool lang_session_is(struct cell *c)
{
	bool fast;
	return session_marker(c, &fast, NULL);
}

/* The name of the session's own directory in the cell (its socket, locks
 * and notes): derived from the cell's token, so the cell cannot know it
 * before the session starts, and cannot have put a listener of its own
 * there; the same in every process that runs the session (serve, mcp, the
 * CLI's start and run). */
static int session_key(struct cell *c, const char *context, char key[KEY_HEX + 1],
		       struct sc_err *err)
{
	uint8_t raw[32];
	char label[64 + LANG_SESSION_CONTEXT_MAX];
	/* a context's is another directory, so another interpreter */
	snprintf(label, sizeof(label), "sandcell lang session directory%s%s",
		 context && context[0] ? "\ncontext " : "", context ? context : "");
	if (cell_derive_secret(c, label, raw, err) < 0)
		return sc_err_wrap(err, "the session's key");
	for (int i = 0; i < KEY_HEX / 2; i++)
		snprintf(key + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* Write the fast client in and see that it runs (a /tmp mounted noexec,
 * or a foreign architecture, leaves the runs to client.py). */
static bool install_fast_client(struct cell *c)
{
	struct sc_err e = {0};
	if (lang_i_put_file_as(c, FAST_CLIENT, lang_session_client, lang_session_client_size, CELL_FILE_EXEC,
			&e) < 0)
		return false;
	char *argv[] = {FAST_CLIENT, "probe", NULL};
	struct cell_exec_req er = {.argv = argv, .env = SESSION_ENV, .timeout_s = 30,
				   .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result cr;
	if (cell_exec(c, &er, &cr, &e) < 0)
		return false;
	bool ok = cr.exit_code == 0;
	cell_result_free(&cr);
	return ok;
}

static int session_install(struct cell *c, const struct lang_def *l, bool net, struct sc_err *err)
{
	if (!l || strcmp(l->name, "python") != 0)
		return sc_fail(err, ENOTSUP,
			       "sessions keep state for python only (%.32s: use 'code run', each run is fresh)",
			       l ? l->name : "no language");
	char key[KEY_HEX + 1];
	if (session_key(c, NULL, key, err) < 0 || lang_i_install_py(c, err) < 0 ||
	    lang_i_put_file(c, DRIVER, lang_py_driver, lang_py_driver_size, err) < 0 ||
	    lang_i_put_file(c, CLIENT, lang_py_client, lang_py_client_size, err) < 0)
		return -1;
	char *argv[] = {"python3", "-S", "-E", "-u", CLIENT, "start", key, NULL};
	struct cell_exec_req er = {.argv = argv, .env = SESSION_ENV, .cwd = NULL, .timeout_s = 90,
				   .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result cr;
	if (cell_exec(c, &er, &cr, err) < 0)
		return sc_err_wrap(err, "starting the session's interpreter");
	int rc = 0;
	if (cr.exit_code != 0) {
		size_t n = cr.err_len;
		while (n && (cr.err[n - 1] == '\n' || cr.err[n - 1] == '\r'))
			n--;
		const char *tail = cr.err ? cr.err : "";
		if (n > 300) {
			tail += n - 300;
			n = 300;
		}
		rc = sc_fail(err, EIO, "starting the session's interpreter: python3 exited with %d%s%.*s",
			     cr.exit_code, n ? ": " : "", (int)n, tail);
	}
	cell_result_free(&cr);
	if (rc < 0)
		return rc;
	char mark[64];
	int n = snprintf(mark, sizeof(mark), "python\n" MARKER_PROTO "%s%s", net ? "net=1\n" : "",
			 install_fast_client(c) ? "fast=1\n" : "");
	return lang_i_put_file(c, MARKER, (const unsigned char *)mark, (size_t)n, err);
}

int lang_session_install(struct cell *c, const struct lang_def *l, struct sc_err *err)
{
	return session_install(c, l, false, err);
}

int lang_session_start(const struct cell_spec *spec, const char *name, const struct lang_def *l,
		       struct sc_err *err)
{
	if (!l || strcmp(l->name, "python") != 0)
		return lang_session_install(NULL, l, err);
	struct cell *c;
	if (cell_create(spec, name, &c, err) < 0)
		return -1;
	if (session_install(c, l, spec->egress != NULL, err) < 0) {
		struct sc_err e2 = {0};
		(void)cell_destroy(c, &e2);
		return -1;
	}
	cell_close(c);
	return 0;
}

/* "key=N" lines of the client's status. */
static long status_get(const char *s, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = s; p && *p;) {
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			char *end;
			long v = strtol(p + kl + 1, &end, 10);
			return (end != p + kl + 1 && v >= 0 && v < 1000000) ? v : -1;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

/* The source as an fd to read (the client's stdin): a memfd, into which
 * the client writes its status after the source (read back once the run
 * ended: no status file is left in the cell). */
static int source_fd(const char *src, size_t len, struct sc_err *err)
{
	return sc_memfd_of("sandcell-source", src, len, err);
}

/* What a run asks for, checked before anything runs: the source, the
 * timeout, the session's marker (*fast from it), its key, the libraries. */
static int check_session_run(struct cell *c, const struct lang_session_req *req, bool *fast,
			     char key[KEY_HEX + 1], struct sc_err *err)
{
	if (!req->source && req->source_len)
		return sc_fail(err, EINVAL, "no source given");
	if (req->source_len > LANG_MAX_SOURCE)
		return sc_fail(err, EFBIG, "source of %zu bytes is larger than the limit of %u bytes",
			       req->source_len, LANG_MAX_SOURCE);
	if (req->timeout_s < 0 || req->timeout_s > 1e7)
		return sc_fail(err, EINVAL, "timeout out of range");
	bool current;
	if (!session_marker(c, fast, &current))
		return sc_fail(err, ENOENT,
			       "cell %.63s is not a code session (make one with 'sandcell code session start')",
			       cell_name(c));
	if (!current)
		return sc_fail(err, ENOTSUP,
			       "the session in cell %.63s was started by an older sandcell: start a new one",
			       cell_name(c));
	const char *ctx = req->context;
	size_t clen = ctx ? strlen(ctx) : 0;
	if (clen > LANG_SESSION_CONTEXT_MAX ||
	    strspn(ctx ? ctx : "", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != clen)
		return sc_fail(err, EINVAL, "a session context is 1 to %d of [A-Za-z0-9_-]",
			       LANG_SESSION_CONTEXT_MAX);
	if (session_key(c, ctx, key, err) < 0)
		return -1;
	return lang_i_check_libraries(req->libraries, req->nlibraries, err);
}

/* Installs the run's --libraries for the session's Python. */
static int session_libraries(struct cell *c, const struct lang_session_req *req, struct sc_err *err)
{
	struct lang_run_req lr;
	lang_run_req_init(&lr);
	lr.lang = lang_find("python");
	for (size_t i = 0; i < req->nlibraries; i++)
		lr.libraries[i] = req->libraries[i];
	lr.nlibraries = req->nlibraries;
	lr.has_network = session_has_network(c);
	return lang_i_install_libraries(c, &lr, SESSION_ENV, err);
}

/* Runs the session's client (the fast one where it may) with the source
 * on its stdin (fd). */
static int session_exec(struct cell *c, const struct lang_session_req *req, bool fast, char *key,
			int fd, struct lang_result *res, struct sc_err *err)
{
	char timeout[32];
	snprintf(timeout, sizeof(timeout), "%.3f", req->timeout_s);
	char *clear = req->clear_plots ? "1" : "0";
	char *py_argv[] = {"python3", "-S", "-E", "-u", CLIENT, "run", key, timeout, clear, NULL};
	char *fast_argv[] = {FAST_CLIENT, "run", key, timeout, clear, NULL};
	struct lang_i_exec x = {
		.argv = fast ? fast_argv : py_argv,
		.env = SESSION_ENV,
		/* a backstop: the driver stops the code itself */
		.timeout_s = req->timeout_s > 0 ? req->timeout_s + GRACE_S + 60 : 0,
		.output_limit = req->output_limit,
		.stdin_fd = fd,
		.sink = &req->sink,
		.stream = req->stream,
		.has_cancel = req->has_cancel,
		.cancel_fd = req->cancel_fd,
	};
	return lang_i_exec(c, &x, &res->run, err);
}

static void session_error(struct lang_result *res, const char *msg)
{
	res->status = LANG_SANDBOX_ERROR;
	snprintf(res->message, sizeof(res->message), "%s", msg);
}

/* The result of a run that went through: the client's status (st, stn
 * bytes; none when stn <= 0), then the plots it counted. */
static void session_result(struct cell *c, const struct lang_session_req *req, char *st,
			   ssize_t stn, struct lang_result *res)
{
	res->limit_hit = res->run.limit_hit;
	res->peak_memory = res->run.peak_memory;
	long nplots = 0;
	if (stn > 0) {
		st[stn] = '\0';
		if (status_get(st, "timeout") == 1) {
			res->run.status = LANG_EXEC_TIME_LIMIT;
			if (!res->run.limit_hit)
				res->run.limit_hit = res->limit_hit = "timeout";
		}
		res->session_restarted = status_get(st, "restarted") == 1;
		nplots = status_get(st, "plots");
	} else if (res->run.status == LANG_EXEC_FINISHED) {
		/* the client itself did not get to the end */
		res->status = LANG_SANDBOX_ERROR;
		snprintf(res->message, sizeof(res->message),
			 "the session's client exited with %d without a status", res->run.return_code);
		return;
	}
	struct sc_err e = {0};
	if (nplots > 0)
		(void)lang_i_read_plots(c, SESSION_PLOTS, nplots > LANG_MAX_PLOTS ? LANG_MAX_PLOTS : nplots,
					&req->sink, res, &e);
	if (nplots > LANG_MAX_PLOTS) /* the client counts one more when plots were dropped */
		res->plots_truncated = true;
	res->status = res->run.status == LANG_EXEC_FINISHED && res->run.return_code == 0
			      ? LANG_SUCCESS : LANG_FAILED;
}

static int session_done(const struct lang_session_req *req, struct lang_result *res, double t0)
{
	res->wall_s = sc_now() - t0;
	lang_i_emit(&req->sink, LANG_EV_RESULT, NULL, 0, res);
	return 0;
}

int lang_session_run_in(struct cell *c, const struct lang_session_req *req,
			struct lang_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	double t0 = sc_now();
	bool fast;
	char key[KEY_HEX + 1];
	if (check_session_run(c, req, &fast, key, err) < 0)
		return -1;
	struct sc_err e = {0};
	if (req->nlibraries && session_libraries(c, req, &e) < 0) {
		session_error(res, e.msg);
		return session_done(req, res, t0);
	}
	int fd = source_fd(req->source ? req->source : "", req->source_len, err);
	if (fd < 0)
		return -1;
	int rc = session_exec(c, req, fast, key, fd, res, &e);
	char st[STATUS_MAX];
	ssize_t stn = rc < 0 ? -1 : pread(fd, st, sizeof(st) - 1, (off_t)req->source_len);
	close(fd);
	if (rc < 0)
		session_error(res, e.msg);
	else
		session_result(c, req, st, stn, res);
	return session_done(req, res, t0);
}

/* One record of the history at *p (end: its end): "LENGTH EXIT\n" CODE
 * "\n". 1 with the code and exit, 0 at the end, -1 when malformed, 2 at
 * "full". */
static int history_next(const char **p, const char *end, const char **code, size_t *len,
			int *exit_code)
{
	if (*p >= end)
		return 0;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	if (!nl || nl - *p > 40)
		return -1;
	char head[48];
	memcpy(head, *p, (size_t)(nl - *p));
	head[nl - *p] = '\0';
	if (!strcmp(head, "full"))
		return 2;
	unsigned long long n;
	int ex, used = 0;
	if (sscanf(head, "%llu %d%n", &n, &ex, &used) != 2 || head[used] != '\0' ||
	    n > LANG_MAX_SOURCE || n + 1 > (unsigned long long)(end - nl - 1) || nl[1 + n] != '\n')
		return -1;
	*code = nl + 1;
	*len = (size_t)n;
	*exit_code = ex;
	*p = nl + 2 + n;
	return 1;
}

#define HISTORY LANG_SESSION_DIR "/history"

static int replay_runs(struct cell *c, const char *h, size_t hlen, size_t *nrun,
		       char *why, size_t why_size, struct sc_err *err)
{
	const char *p = h, *end = h + hlen, *code;
	size_t len;
	int parent_exit, r;
	while ((r = history_next(&p, end, &code, &len, &parent_exit)) == 1) {
		struct lang_session_req req;
		lang_session_req_init(&req);
		req.source = code;
		req.source_len = len;
		req.timeout_s = LANG_REPLAY_RUN_TIMEOUT;
		struct lang_result res;
		if (lang_session_run_in(c, &req, &res, err) < 0)
			return sc_err_wrap(err, "replaying run %zu", *nrun + 1);
		++*nrun;
		bool ok = res.status == LANG_SUCCESS;
		if (parent_exit == 0 && !ok) {
			size_t n = res.run.err_len;
			while (n && res.run.err[n - 1] == '\n')
				n--;
			size_t tail = n > 200 ? n - 200 : 0;
			snprintf(why, why_size, "run %zu succeeded in the parent; here: %.200s%s%.*s", *nrun,
				 res.message[0] ? res.message : lang_status_name(res.status),
				 n ? ": " : "", (int)(n - tail), n ? res.run.err + tail : "");
			lang_result_free(&res);
			return 1;
		}
		lang_result_free(&res);
	}
	if (r == 2)
		return sc_fail(err, EFBIG, "the session's history passed %u MiB: not replayed",
			       LANG_HISTORY_MAX >> 20);
	if (r < 0)
		return sc_fail(err, EINVAL, "the session's history is malformed after run %zu", *nrun);
	return 0;
}

static int replay(struct cell *c, struct lang_replay *r, struct sc_err *err)
{
	bool fast;
	if (!session_marker(c, &fast, NULL))
		return 0;
	r->tried = true;
	bool net = session_has_network(c);
	struct cell_file cf = {0};
	struct sc_err e = {0};
	if (cell_read_file(c, HISTORY, LANG_HISTORY_MAX + 8, 30, &cf, &e) < 0 && e.errnum != ENOENT) {
		*err = e;
		return sc_err_wrap(err, "the session's history");
	}
	int rc = 0;
	if (cf.truncated)
		rc = sc_fail(err, EFBIG, "the session's history passed %u MiB: not replayed",
			     LANG_HISTORY_MAX >> 20);
	/* the replay records its runs afresh */
	else if (lang_i_put_file(c, HISTORY, (const unsigned char *)"", 0, err) < 0 ||
		 session_install(c, lang_find("python"), net, err) < 0)
		rc = sc_err_wrap(err, "the child's session");
	else if (cf.data)
		rc = replay_runs(c, cf.data, cf.len, &r->runs, r->why, sizeof(r->why), err);
	free(cf.data);
	return rc;
}

int lang_session_replay(struct cell *c, struct lang_replay *r)
{
	*r = (struct lang_replay){0};
	struct sc_err err = {0};
	int rc = replay(c, r, &err);
	if (rc < 0)
		snprintf(r->why, sizeof(r->why), "%s", err.msg);
	r->ok = rc == 0;
	return rc;
}

int lang_session_run(const char *name, const struct lang_session_req *req,
		     struct lang_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	struct cell *c;
	if (cell_open(name, &c, err) < 0)
		return -1;
	int rc = lang_session_run_in(c, req, res, err);
	cell_close(c);
	return rc;
}

int lang_session_rm(const char *name, struct sc_err *err)
{
	struct cell *c;
	if (cell_open(name, &c, err) < 0)
		return -1;
	bool is = lang_session_is(c);
	cell_close(c);
	if (!is)
		return sc_fail(err, EINVAL, "cell %.63s is not a code session (remove it with 'sandcell rm')",
			       name);
	return cell_remove(name, true, err);
}

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

static const char PNG_MAGIC[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};

/* Write a file into the cell unless it is there with the same bytes. A
 * fresh cell has none of them: creating comes first (one round trip). */
static int put_file_as(struct cell *c, const char *path, const unsigned char *data, size_t len,
		       unsigned flags, struct sc_err *err)
{
	struct sc_err e = {0};
	if (cell_write_file(c, path, data, len, CELL_FILE_CREATE | flags, 30, &e) == 0)
		return 0;
	if (e.errnum != EEXIST) {
		*err = e;
		return sc_err_wrap(err, "writing %s in the cell", path);
	}
	struct cell_file cf;
	if (cell_read_file(c, path, len + 1, 30, &cf, &e) == 0) {
		bool same = cf.len == len && !memcmp(cf.data, data, len);
		free(cf.data);
		if (same)
			return 0;
	}
	if (cell_write_file(c, path, data, len, 0, 30, err) < 0)
		return sc_err_wrap(err, "writing %s in the cell", path);
	return 0;
}

static int put_file(struct cell *c, const char *path, const unsigned char *data, size_t len,
		    struct sc_err *err)
{
	return put_file_as(c, path, data, len, 0, err);
}

/* The support files every cell that runs code starts with: seeded by its
 * setup (lang_seed_files), or written into a cell made without them. */
static struct cell_seed_file support_file(size_t i)
{
	switch (i) {
	case 0:
		return (struct cell_seed_file){LANG_PY_DIR "/sc_plots.py", lang_py_sc_plots,
					       lang_py_sc_plots_size};
	case 1:
		return (struct cell_seed_file){LANG_PY_DIR "/sitecustomize.py", lang_py_sitecustomize,
					       lang_py_sitecustomize_size};
	case 2:
		return (struct cell_seed_file){LANG_PY_DIR "/sc_backend.py", lang_py_sc_backend,
					       lang_py_sc_backend_size};
	default:
		return (struct cell_seed_file){LANG_R_PROFILE, lang_r_profile, lang_r_profile_size};
	}
}

size_t lang_seed_files(struct cell_seed_file out[LANG_SEED_FILES])
{
	for (size_t i = 0; i < LANG_SEED_FILES; i++)
		out[i] = support_file(i);
	return LANG_SEED_FILES;
}

/* Write the support files of one language (Python's live under
 * LANG_PY_DIR, R's is its profile) into a cell made without them. */
static int install_support(struct cell *c, bool python, struct sc_err *err)
{
	for (size_t i = 0; i < LANG_SEED_FILES; i++) {
		struct cell_seed_file f = support_file(i);
		bool is_py = !strncmp(f.path, LANG_PY_DIR "/", strlen(LANG_PY_DIR) + 1);
		if (is_py == python && put_file(c, f.path, f.data, f.len, err) < 0)
			return -1;
	}
	return 0;
}

int lang_i_install_py(struct cell *c, struct sc_err *err)
{
	return install_support(c, true, err);
}

int lang_i_install_r(struct cell *c, struct sc_err *err)
{
	return install_support(c, false, err);
}

/* Does an HTML plot look like one: '<' first (after blanks and a BOM)? */
static bool html_ok(const char *d, size_t n)
{
	size_t i = n >= 3 && !memcmp(d, "\xef\xbb\xbf", 3) ? 3 : 0;
	while (i < n && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t'))
		i++;
	return i < n && d[i] == '<';
}

/* Plot number i of dir, as PNG or else HTML: 1 with cf filled and *fmt
 * set; 0 when it is there but over the size bound or not of its format
 * (cf to be freed); -ENOENT when neither file is there; -1 else. */
static int read_plot(struct cell *c, const char *dir, long i, struct cell_file *cf,
		     const char **fmt)
{
	static const char *const FMTS[] = {"png", "html"};
	bool missing = true;
	for (size_t k = 0; k < SC_ARRAY_LEN(FMTS); k++) {
		char path[LANG_MAX_PATH + 64];
		snprintf(path, sizeof(path), "%s/plot-%04ld.%s", dir, i, FMTS[k]);
		struct sc_err e = {0};
		if (cell_read_file(c, path, LANG_MAX_PLOT_BYTES, 30, cf, &e) < 0) {
			if (e.errnum != ENOENT)
				missing = false;
			continue;
		}
		*fmt = FMTS[k];
		if (cf->truncated)
			return 0;
		if (k == 0)
			return cf->len >= sizeof(PNG_MAGIC) && !memcmp(cf->data, PNG_MAGIC, sizeof(PNG_MAGIC));
		return html_ok(cf->data, cf->len);
	}
	return missing ? -ENOENT : -1;
}

int lang_i_read_plots(struct cell *c, const char *dir, long count, const struct lang_sink *sink,
		      struct lang_result *res, struct sc_err *err)
{
	(void)err;
	size_t total = 0;
	long max = count < 0 ? LANG_MAX_PLOTS : count;
	/* a run's own plot directory is made with its first plot: when it
	 * is not there, one round trip says so */
	struct cell_file probe;
	struct sc_err pe = {0};
	if (count < 0) {
		if (cell_read_file(c, dir, 1, 30, &probe, &pe) == 0)
			free(probe.data); /* not a directory: the reads below fail */
		else if (pe.errnum == ENOENT)
			return 0;
	}
	long i;
	for (i = 1; i <= max; i++) {
		if (res->nplots >= LANG_MAX_PLOTS) {
			res->plots_truncated = true;
			break;
		}
		struct cell_file cf;
		const char *fmt;
		int rc = read_plot(c, dir, i, &cf, &fmt);
		if (rc < 0) {
			if (count < 0 && rc == -ENOENT)
				break;
			continue; /* gone (cleared meanwhile), or not a file: skip it */
		}
		if (rc == 0 || total + cf.len > LANG_MAX_PLOTS_TOTAL) {
			res->plots_truncated = true; /* over a bound, or not a plot */
			free(cf.data);
			continue;
		}
		total += cf.len;
		struct lang_plot *p = &res->plots[res->nplots++];
		p->format = fmt;
		p->data = cf.data;
		p->len = cf.len;
		if (sink && sink->fn) {
			struct lang_event ev = {.type = LANG_EV_PLOT, .data = p->data, .len = p->len,
						.format = fmt};
			sink->fn(sink->ctx, &ev);
		}
	}
	/* every slot was there: were more made than kept (sc_plots.py and
	 * profile.R leave plot-more)? */
	if (count < 0 && i > max && !res->plots_truncated) {
		char path[LANG_MAX_PATH + 64];
		snprintf(path, sizeof(path), "%s/plot-more", dir);
		if (cell_read_file(c, path, 1, 30, &probe, &pe) == 0) {
			free(probe.data);
			res->plots_truncated = true;
		}
	}
	return 0;
}

void lang_session_req_init(struct lang_session_req *req)
{
	*req = (struct lang_session_req){0};
}

static const char *const SESSION_ENV[] = {
	"PYTHONDONTWRITEBYTECODE=1",
	LANG_PY_ENV_PATH,
	LANG_PY_ENV_BACKEND,
	LANG_PY_ENV_MPLCONFIG,
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
static int session_key(struct cell *c, char key[KEY_HEX + 1], struct sc_err *err)
{
	uint8_t raw[32];
	if (cell_derive_secret(c, "sandcell lang session directory", raw, err) < 0)
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
	if (put_file_as(c, FAST_CLIENT, lang_session_client, lang_session_client_size, CELL_FILE_EXEC,
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
	if (session_key(c, key, err) < 0 || lang_i_install_py(c, err) < 0 ||
	    put_file(c, DRIVER, lang_py_driver, lang_py_driver_size, err) < 0 ||
	    put_file(c, CLIENT, lang_py_client, lang_py_client_size, err) < 0)
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
	return put_file(c, MARKER, (const unsigned char *)mark, (size_t)n, err);
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
	int fd = memfd_create("sandcell-source", MFD_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "memfd_create: %s", strerror(errno));
	if ((len && sc_write_all(fd, src, len) < 0) || lseek(fd, 0, SEEK_SET) < 0) {
		int e = errno;
		close(fd);
		return sc_fail(err, e, "writing the source: %s", strerror(e));
	}
	return fd;
}

int lang_session_run_in(struct cell *c, const struct lang_session_req *req,
			struct lang_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	double t0 = lang_i_now();
	if (!req->source && req->source_len)
		return sc_fail(err, EINVAL, "no source given");
	if (req->source_len > LANG_MAX_SOURCE)
		return sc_fail(err, EFBIG, "source of %zu bytes is larger than the limit of %u bytes",
			       req->source_len, LANG_MAX_SOURCE);
	if (req->timeout_s < 0 || req->timeout_s > 1e7)
		return sc_fail(err, EINVAL, "timeout out of range");
	bool fast, current;
	if (!session_marker(c, &fast, &current))
		return sc_fail(err, ENOENT,
			       "cell %.63s is not a code session (make one with 'sandcell code session start')",
			       cell_name(c));
	if (!current)
		return sc_fail(err, ENOTSUP,
			       "the session in cell %.63s was started by an older sandcell: start a new one",
			       cell_name(c));
	char key[KEY_HEX + 1];
	if (session_key(c, key, err) < 0)
		return -1;
	if (lang_i_check_libraries(req->libraries, req->nlibraries, err) < 0)
		return -1;
	struct sc_err e = {0};
	if (req->nlibraries) {
		struct lang_run_req lr;
		lang_run_req_init(&lr);
		lr.lang = lang_find("python");
		for (size_t i = 0; i < req->nlibraries; i++)
			lr.libraries[i] = req->libraries[i];
		lr.nlibraries = req->nlibraries;
		lr.has_network = session_has_network(c);
		if (lang_i_install_libraries(c, &lr, SESSION_ENV, &e) < 0) {
			res->status = LANG_SANDBOX_ERROR;
			snprintf(res->message, sizeof(res->message), "%s", e.msg);
			res->wall_s = lang_i_now() - t0;
			lang_i_emit(&req->sink, LANG_EV_RESULT, NULL, 0, res);
			return 0;
		}
	}
	int fd = source_fd(req->source ? req->source : "", req->source_len, err);
	if (fd < 0)
		return -1;
	char timeout[32];
	snprintf(timeout, sizeof(timeout), "%.3f", req->timeout_s);
	char *clear = req->clear_plots ? "1" : "0";
	char *py_argv[] = {"python3", "-S", "-E", "-u", CLIENT, "run", key, timeout, clear, NULL};
	char *fast_argv[] = {FAST_CLIENT, "run", key, timeout, clear, NULL};
	char **argv = fast ? fast_argv : py_argv;
	struct lang_i_exec x = {
		.argv = argv,
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
	int rc = lang_i_exec(c, &x, &res->run, &e);
	char st[STATUS_MAX];
	ssize_t stn = rc < 0 ? -1 : pread(fd, st, sizeof(st) - 1, (off_t)req->source_len);
	close(fd);
	if (rc < 0) {
		res->status = LANG_SANDBOX_ERROR;
		snprintf(res->message, sizeof(res->message), "%s", e.msg);
		goto done;
	}
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
		goto done;
	}
	if (nplots > 0)
		(void)lang_i_read_plots(c, SESSION_PLOTS, nplots > LANG_MAX_PLOTS ? LANG_MAX_PLOTS : nplots,
					&req->sink, res, &e);
	if (nplots > LANG_MAX_PLOTS) /* the client counts one more when plots were dropped */
		res->plots_truncated = true;
	res->status = res->run.status == LANG_EXEC_FINISHED && res->run.return_code == 0
			      ? LANG_SUCCESS : LANG_FAILED;
done:
	res->wall_s = lang_i_now() - t0;
	lang_i_emit(&req->sink, LANG_EV_RESULT, NULL, 0, res);
	return 0;
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

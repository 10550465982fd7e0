/* Task setups and GRPO groups: a task's setup runs once in a cell, and
 * the group's attempts run in forks of that cell (cell_fork).
 *
 * cell_fork calls cell_create, which must not run in a multi-threaded
 * process, and the batch runner is one. So the forks are made by a
 * helper process, forked (like the pool's workers) before the first
 * thread starts: single-threaded, it serves one fork at a time over a
 * SOCK_SEQPACKET socket, and when the runner dies (even by SIGKILL) it
 * reads an end of file and removes every cell it made. The setup itself
 * (files written, the command run) is cell_write_file and cell_exec on a
 * pool cell, which the runner's threads may call, so groups set up in
 * parallel; only the short fork step is serialised. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "../common/names.h"
#include "../common/parse.h"
#include "batch_priv.h"

#define SETUP_OUTPUT (64U << 10)

struct fork_req {
	uint32_t spec, n;
	char parent[64];
};

struct fork_reply {
	int32_t made; /* -1: the parent's files could not be read (error) */
	char error[448];
	char names[BATCH_MAX_GROUP][64];   /* "" where the child failed */
	char errors[BATCH_MAX_GROUP][192]; /* why it failed */
};

struct batch_forker {
	pthread_mutex_t mu;
	int sock;
	pid_t pid;
};

/* ---- the setup ---- */

/* The last non-empty line of s[0..n), as *line and its length. */
static size_t last_line(const char *s, size_t n, const char **line)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
		n--;
	size_t b = n;
	while (b && s[b - 1] != '\n')
		b--;
	*line = s + b;
	return n - b;
}

static int setup_command_run(struct cell *c, const struct batch_setup *s, const char *log,
			     struct sc_err *err)
{
	char *argv[] = {"/bin/sh", "-c", s->command, NULL};
	struct cell_exec_req req = {.argv = argv, .cwd = "/testbed", .timeout_s = s->timeout_s,
				    .output_limit = SETUP_OUTPUT, .stdin_fd = -1, .stdout_fd = -1,
				    .stderr_fd = -1};
	struct cell_result res;
	if (cell_exec(c, &req, &res, err) < 0)
		return sc_err_wrap(err, "setup command");
	if (log) {
		char wall[40];
		snprintf(wall, sizeof(wall), " wall %.3f s", res.wall_s);
		batch_write_exec_log(log, &res, wall);
	}
	int rc = 0;
	if (res.exit_code != 0) {
		const char *l = "";
		size_t n = res.err ? last_line(res.err, res.err_len, &l) : 0;
		if (!n && res.out)
			n = last_line(res.out, res.out_len, &l);
		rc = sc_fail(err, 0, "setup command %s %d%s%.*s",
			     res.timed_out ? "timed out after" : "exited",
			     res.timed_out ? (int)s->timeout_s : res.exit_code, n ? ": " : "",
			     (int)(n > 300 ? 300 : n), l);
	}
	cell_result_free(&res);
	return rc;
}

int batch_setup_run(struct cell *c, const struct batch_setup *s, const char *log,
		    struct sc_err *err)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (cell_write_file(c, s->files[i].path, s->files[i].data, s->files[i].len,
				    CELL_FILE_CREATE | CELL_FILE_REPLACE, 60, err) < 0)
			return sc_err_wrap(err, "setup file %.200s", s->files[i].path);
	return s->command ? setup_command_run(c, s, log, err) : 0;
}

/* ---- the helper process ---- */

/* One fork request answered into *rep; the children made go to made. */
static void serve_fork(const struct fork_req *q, const struct cell_spec *specs, size_t nspecs,
		       struct sc_names *made, unsigned long *counter, struct fork_reply *rep)
{
	static struct sc_err errs[BATCH_MAX_GROUP];
	struct cell *cells[BATCH_MAX_GROUP];
	char names[BATCH_MAX_GROUP][64];
	const char *np[BATCH_MAX_GROUP];
	struct sc_err err = {0};
	memset(rep, 0, sizeof(*rep));
	if (q->spec >= nspecs || q->n == 0 || q->n > BATCH_MAX_GROUP || !sc_valid_name(q->parent)) {
		rep->made = -1;
		snprintf(rep->error, sizeof(rep->error), "bad fork request");
		return;
	}
	for (size_t i = 0; i < q->n; i++) {
		snprintf(names[i], sizeof(names[i]), "grp-%d-%d-%lu", (int)getppid(), (int)getpid(),
			 (*counter)++);
		np[i] = names[i];
	}
	int made_n = cell_fork(q->parent, &specs[q->spec], np, q->n, cells, errs, NULL, &err);
	rep->made = made_n;
	if (made_n < 0) {
		snprintf(rep->error, sizeof(rep->error), "%.440s", err.msg);
		return;
	}
	for (size_t i = 0; i < q->n; i++) {
		if (cells[i]) {
			sc_names_add(made, names[i]);
			cell_close(cells[i]);
			snprintf(rep->names[i], sizeof(rep->names[i]), "%s", names[i]);
		} else {
			snprintf(rep->errors[i], sizeof(rep->errors[i]), "%.180s", errs[i].msg);
		}
	}
}

static ssize_t recv_req(int sock, struct fork_req *q)
{
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			; /* the inits of cells removed meanwhile */
		struct pollfd p = {.fd = sock, .events = POLLIN};
		int n = poll(&p, 1, 1000);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0) {
			ssize_t got = recv(sock, q, sizeof(*q), 0);
			if (got < 0 && errno == EINTR)
				continue;
			return got;
		}
	}
}

static void forker_loop(int sock, const struct cell_spec *specs, size_t nspecs)
{
	struct sc_names made = {0};
	unsigned long counter = 0;
	static struct fork_reply rep;
	for (;;) {
		struct fork_req q;
		if (recv_req(sock, &q) != (ssize_t)sizeof(q))
			break; /* the runner is gone or done */
		q.parent[sizeof(q.parent) - 1] = '\0';
		serve_fork(&q, specs, nspecs, &made, &counter, &rep);
		if (send(sock, &rep, sizeof(rep), MSG_NOSIGNAL) != (ssize_t)sizeof(rep))
			break;
	}
	/* the runner removes the children it used; these are the rest */
	for (size_t i = 0; i < made.n; i++) {
		struct sc_err ignored;
		cell_remove(made.names[i], true, &ignored);
	}
	_exit(0);
}

int batch_forker_start(const struct cell_spec *const *specs, size_t nspecs,
		       struct batch_forker **out, struct sc_err *err)
{
	struct batch_forker *f = calloc(1, sizeof(*f));
	int sv[2];
	if (!f)
		return sc_fail(err, ENOMEM, "forker");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		free(f);
		return sc_fail(err, errno, "socketpair");
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		free(f);
		return sc_fail(err, e, "fork the group helper");
	}
	if (pid == 0) {
		close(sv[0]);
		struct cell_spec *copy = calloc(nspecs, sizeof(*copy));
		if (!copy)
			_exit(1);
		/* a killed helper takes its cells along */
		for (size_t i = 0; i < nspecs; i++) {
			copy[i] = *specs[i];
			copy[i].die_with_creator = true;
		}
		forker_loop(sv[1], copy, nspecs);
	}
	close(sv[1]);
	pthread_mutex_init(&f->mu, NULL);
	f->sock = sv[0];
	f->pid = pid;
	*out = f;
	return 0;
}

int batch_forker_fork(struct batch_forker *f, size_t spec, const char *parent, size_t n,
		      char (*names)[64], char (*errors)[192], struct sc_err *err)
{
	struct fork_req q = {.spec = (uint32_t)spec, .n = (uint32_t)n};
	struct fork_reply *rep = malloc(sizeof(*rep));
	if (!rep)
		return sc_fail(err, ENOMEM, "fork reply");
	if (n == 0 || n > BATCH_MAX_GROUP || strlen(parent) >= sizeof(q.parent)) {
		free(rep);
		return sc_fail(err, EINVAL, "fork of %.64s into %zu cells", parent, n);
	}
	snprintf(q.parent, sizeof(q.parent), "%s", parent);
	pthread_mutex_lock(&f->mu);
	ssize_t got = -1;
	if (send(f->sock, &q, sizeof(q), MSG_NOSIGNAL) == (ssize_t)sizeof(q))
		do
			got = recv(f->sock, rep, sizeof(*rep), 0);
		while (got < 0 && errno == EINTR);
	pthread_mutex_unlock(&f->mu);
	int rc;
	if (got != (ssize_t)sizeof(*rep)) {
		rc = sc_fail(err, 0, "the group helper is gone");
	} else if (rep->made < 0) {
		rc = sc_fail(err, 0, "%s", rep->error);
	} else {
		for (size_t i = 0; i < n; i++) {
			memcpy(names[i], rep->names[i], 64);
			memcpy(errors[i], rep->errors[i], 192);
			names[i][63] = errors[i][191] = '\0';
		}
		rc = rep->made;
	}
	free(rep);
	return rc;
}

void batch_forker_stop(struct batch_forker *f)
{
	if (!f)
		return;
	shutdown(f->sock, SHUT_WR);
	while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(f->sock);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* A pool of ready cells for one spec. Cells are made and destroyed in the
 * background by single-threaded worker processes (forked when the pool is
 * made, so no cell is ever cloned from a multi-threaded process); a cell is
 * handed out once and destroyed on release, never reused.
 *
 * Threads: acquire takes `mu` for the ready list and the socket's answers
 * (a thread that waits for a cell holds it, the others wait behind it);
 * release only sends one SOCK_SEQPACKET message, which is atomic, on the
 * socket that stays open until cell_pool_free. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdlib.h>

#include "../common/names.h"
#include "cell_priv.h"

#define POOL_MAX 256
#define POOL_MAX_WORKERS CELL_POOL_MAX_WORKERS

enum {
	MSG_MAKE = 1,
	MSG_DESTROY = 2,
	MSG_READY = 3,
	MSG_FAILED = 4,
	MSG_FORK = 5,       /* pool_job: fork job.name into job.names */
	MSG_CHECKPOINT = 6, /* pool_job: checkpoint job.name as job.tag */
	MSG_ROLLBACK = 7,   /* pool_job: roll job.name back to job.tag */
	MSG_RENEW = 8,      /* owner -> worker: renew text, then RENEWED (or GONE) */
	MSG_GONE = 9,       /* worker -> owner: the cell to renew was removed instead */
	MSG_RENEWED = 10,   /* worker -> owner: text is ready again, renewed */
};

struct pool_msg {
	int32_t kind;
	char text[448]; /* a cell name, or an error */
};

/* A job a caller's thread waits for (cell_pool_fork, _checkpoint,
 * _rollback): sent on the shared socket with the write end of a socket
 * pair of the caller's own (SCM_RIGHTS), on which the worker that took
 * it answers one pool_job_answer; so no other thread's answers mix in. */
struct pool_job {
	int32_t kind;
	uint32_t n;
	char name[64], tag[64];
	char names[CELL_POOL_FORK_MAX][64];
};

struct pool_job_answer {
	int32_t rc;     /* cell_fork's: children made, or -1 */
	int32_t errnum;
	char msg[448];
	struct {
		int32_t errnum;
		char msg[256]; /* "" for a child made */
	} child[CELL_POOL_FORK_MAX];
};

/* What a worker reads: either message. */
union pool_in {
	struct pool_msg m;
	struct pool_job j;
};

struct cell_pool {
	pthread_mutex_t mu; /* guards everything below but sock and workers */
	int sock;
	pid_t workers[POOL_MAX_WORKERS];
	size_t nworkers;
	char ready[POOL_MAX][64];
	size_t nready;
	size_t in_flight; /* MAKE requests not answered yet */
	size_t size;
	bool limited;     /* cell_pool_limit: at most `left` more cells are wanted */
	size_t left;
	bool keepable;
	bool reuse;
	/* The takes not given back yet (a kept cell's too), each with the
	 * lease its handles carry: a release that matches none is a second
	 * one (two handles of a cell, both given back) or a stale one, whose
	 * cell may be ready or taken again by now, or a cell the pool never
	 * made (adopted by a restarted server). */
	struct pool_lease *leases;
	size_t nleases, cap_leases;
	uint64_t next_lease;
	size_t lent;      /* leases of cells that are not kept */
	struct sc_names renewing; /* released, being renewed */
	uint64_t renewed, not_renewed;
	char last_error[448];
};

static int send_msg(int fd, int kind, const char *text)
{
	struct pool_msg m = {.kind = kind};
	snprintf(m.text, sizeof(m.text), "%.440s", text ? text : "");
	return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

/* ---- worker side ---- */

/* Reap what has exited, then wait for the next message; a child that exits
 * meanwhile (the init of a cell this worker made, which any worker may
 * have removed) is reaped at once instead of staying a zombie until then.
 * SIGCHLD is blocked only while waiting (a blocked signal is queued even
 * when its default action is to ignore it: the signalfd sees it), so the
 * cells' processes never inherit a blocked mask. */
static ssize_t recv_with_fd(int sock, union pool_in *in, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = in, .iov_len = sizeof(*in)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	*fd = -1;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	return n;
}

static ssize_t recv_reaping(int sock, int sigfd, const sigset_t *chld, union pool_in *m, int *fd)
{
	for (;;) {
		sigset_t old;
		if (sigfd >= 0)
			sigprocmask(SIG_BLOCK, chld, &old);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
		int n = poll(p, sigfd >= 0 ? 2 : 1, -1);
		if (n > 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
		}
		if (sigfd >= 0)
			sigprocmask(SIG_SETMASK, &old, NULL);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			return recv_with_fd(sock, m, fd);
	}
}

struct worker_cfg {
	const struct cell_spec *spec;
	cell_prepare_fn prepare;
	void *ctx;
	const char *prefix;
	int id;
	unsigned max_renewals;
};

/* The mark of a kept cell (cell_pool_keep): a file in its state
 * directory, which only the caller writes; any worker may be told to
 * keep a cell, but only its maker's list has it, so the mark is what the
 * maker looks at before removing its cells. */
static int kept_path(const char *name, char *buf, size_t size, struct sc_err *err)
{
	char dir[SC_PATH_BUF];
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0)
		return -1;
	if (sc_path(buf, size, "%s/kept", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "state directory of %s", name);
	return 0;
}

static bool is_kept(const char *name)
{
	char path[SC_PATH_BUF];
	struct sc_err ignored;
	return kept_path(name, path, sizeof(path), &ignored) == 0 && access(path, F_OK) == 0;
}

/* A MAKE: a new cell, prepared, its name told to the owner. */
static void worker_make(int sock, const struct worker_cfg *w, const char *name, struct sc_names *made)
{
	struct sc_err err = {0};
	struct cell *c;
	if (cell_create(w->spec, name, &c, &err) < 0) {
		send_msg(sock, MSG_FAILED, err.msg);
		return;
	}
	if (w->prepare && w->prepare(c, w->ctx, &err) < 0) {
		struct sc_err ignored;
		cell_destroy(c, &ignored);
		send_msg(sock, MSG_FAILED, err.msg);
		return;
	}
	sc_names_add(made, name);
	cell_close(c);
	send_msg(sock, MSG_READY, name);
}

/* A RENEW: the released cell made fresh and ready again, or, where it
 * cannot be, removed (the owner makes another where it needs one). Any
 * worker may take it: the cell is this worker's to remove at its end
 * from now on. */
static void worker_renew(int sock, const struct worker_cfg *w, const char *name,
			 struct sc_names *made)
{
	struct sc_err err = {0};
	struct cell *c = NULL;
	char kept[SC_PATH_BUF];
	if (kept_path(name, kept, sizeof(kept), &err) == 0)
		(void)unlink(kept); /* the pool's again */
	if (cell_renew(name, w->spec, w->max_renewals, &err) == 0 && cell_open(name, &c, &err) == 0 &&
	    (!w->prepare || w->prepare(c, w->ctx, &err) == 0)) {
		cell_close(c);
		sc_names_drop(made, name);
		sc_names_add(made, name);
		send_msg(sock, MSG_RENEWED, name);
		return;
	}
	cell_close(c);
	sc_names_drop(made, name);
	cell_remove(name, true, &err);
	send_msg(sock, MSG_GONE, name);
}

/* The cells a fork or rollback made are the worker's as a MAKE's are:
 * removed at its end unless kept. */
static void job_fork(const struct worker_cfg *w, const struct pool_job *j, struct sc_names *made,
		     struct pool_job_answer *a)
{
	const char *names[CELL_POOL_FORK_MAX];
	struct sc_err *errs = calloc(CELL_POOL_FORK_MAX, sizeof(*errs));
	struct sc_err err = {0};
	if (!errs) {
		a->rc = -1;
		a->errnum = ENOMEM;
		snprintf(a->msg, sizeof(a->msg), "out of memory");
		return;
	}
	for (size_t i = 0; i < j->n; i++)
		names[i] = j->names[i];
	a->rc = cell_fork(j->name, w->spec, names, j->n, NULL, errs, NULL, &err);
	a->errnum = err.errnum;
	snprintf(a->msg, sizeof(a->msg), "%.440s", err.msg);
	for (size_t i = 0; a->rc >= 0 && i < j->n; i++) {
		a->child[i].errnum = errs[i].errnum;
		snprintf(a->child[i].msg, sizeof(a->child[i].msg), "%.250s", errs[i].msg);
		if (!errs[i].msg[0])
			sc_names_add(made, j->names[i]);
	}
	free(errs);
}

static void worker_job(const struct worker_cfg *w, const struct pool_job *j, int fd,
		       struct sc_names *made)
{
	struct pool_job_answer *a = calloc(1, sizeof(*a));
	if (!a)
		return; /* the caller sees the fd close: no answer */
	struct sc_err err = {0};
	bool names_ok = sc_valid_name(j->name) && j->n <= CELL_POOL_FORK_MAX;
	for (size_t i = 0; names_ok && j->kind == MSG_FORK && i < j->n; i++)
		names_ok = sc_valid_name(j->names[i]);
	if (!names_ok) {
		a->rc = sc_fail(&err, EINVAL, "pool job: bad cell name");
	} else if (j->kind == MSG_FORK) {
		job_fork(w, j, made, a);
	} else if (j->kind == MSG_CHECKPOINT) {
		a->rc = cell_checkpoint(j->name, j->tag, NULL, &err);
	} else {
		a->rc = cell_rollback(j->name, j->tag, w->spec, &err);
		if (a->rc == 0) {
			sc_names_drop(made, j->name);
			sc_names_add(made, j->name);
		}
	}
	if (j->kind != MSG_FORK || !names_ok) {
		a->errnum = err.errnum;
		snprintf(a->msg, sizeof(a->msg), "%.440s", err.msg);
	}
	(void)!send(fd, a, sizeof(*a), MSG_NOSIGNAL);
	free(a);
}

static void worker_loop(int sock, const struct worker_cfg *w)
{
	struct sc_names made = {0};
	unsigned long counter = 0;
	pid_t owner = getppid();
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK); /* -1: reaped per message */
	union pool_in *in = malloc(sizeof(*in));
	for (;;) {
		int fd = -1;
		ssize_t n = in ? recv_reaping(sock, sigfd, &chld, in, &fd) : -1;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == (ssize_t)sizeof(in->j) && fd >= 0 &&
		    (in->j.kind == MSG_FORK || in->j.kind == MSG_CHECKPOINT ||
		     in->j.kind == MSG_ROLLBACK)) {
			in->j.name[63] = in->j.tag[63] = '\0';
			for (size_t i = 0; i < CELL_POOL_FORK_MAX; i++)
				in->j.names[i][63] = '\0';
			worker_job(w, &in->j, fd, &made);
			close(fd);
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (n != (ssize_t)sizeof(in->m))
			break; /* the pool's owner is gone */
		struct pool_msg *m = &in->m;
		m->text[sizeof(m->text) - 1] = '\0';
		if (m->kind == MSG_MAKE) {
			char name[64];
			/* the worker's own pid too: several pools of one owner
			 * (batch: one per image) have workers of the same ids */
			snprintf(name, sizeof(name), "%.16s-%d-%d-%d-%lu", w->prefix, (int)owner,
				 (int)getpid(), w->id, counter++);
			worker_make(sock, w, name, &made);
		} else if (m->kind == MSG_RENEW && sc_valid_name(m->text)) {
			worker_renew(sock, w, m->text, &made);
		} else if (m->kind == MSG_DESTROY && sc_valid_name(m->text)) {
			struct sc_err err = {0};
			sc_names_drop(&made, m->text);
			cell_remove(m->text, true, &err);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	free(in);
	for (size_t i = 0; i < made.n; i++) {
		struct sc_err ignored;
		if (!is_kept(made.names[i]))
			cell_remove(made.names[i], true, &ignored);
	}
	_exit(0);
}

/* ---- owner side ---- */

/* Whether name is in list (n entries). */
static bool listed(char (*list)[64], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

struct pool_lease {
	char name[64];
	uint64_t id;
	bool kept;
};

/* A lease for a cell taken now; 0 when out of memory (its release then
 * removes it, as one without a lease). */
static uint64_t lease_new(struct cell_pool *p, const char *name)
{
	if (p->nleases == p->cap_leases) {
		size_t cap = p->cap_leases ? 2 * p->cap_leases : 16;
		struct pool_lease *v = realloc(p->leases, cap * sizeof(*v));
		if (!v)
			return 0;
		p->leases = v;
		p->cap_leases = cap;
	}
	struct pool_lease *l = &p->leases[p->nleases++];
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->id = ++p->next_lease;
	l->kept = false;
	p->lent++;
	return l->id;
}

static struct pool_lease *lease_of(struct cell_pool *p, const struct cell *c)
{
	for (size_t i = 0; c->lease && i < p->nleases; i++)
		if (p->leases[i].id == c->lease && !strcmp(p->leases[i].name, c->name))
			return &p->leases[i];
	return NULL;
}

/* A lease on cell `name` not matching the handle's: a kept cell's, whose
 * handle was opened again (a rollback), if any, else another's. */
static struct pool_lease *lease_named(struct cell_pool *p, const char *name)
{
	struct pool_lease *other = NULL;
	for (size_t i = 0; i < p->nleases; i++)
		if (!strcmp(p->leases[i].name, name)) {
			if (p->leases[i].kept)
				return &p->leases[i];
			other = &p->leases[i];
		}
	return other;
}

static void lease_end(struct cell_pool *p, struct pool_lease *l)
{
	if (!l->kept && p->lent)
		p->lent--;
	*l = p->leases[--p->nleases];
}

/* Ready, on their way, or (reuse) taken and expected back. */
static size_t cells_coming(const struct cell_pool *p)
{
	return p->nready + p->in_flight + p->lent;
}

static int request_more(struct cell_pool *p)
{
	size_t want = p->size;
	if (p->limited && p->left < want)
		want = p->left;
	while (cells_coming(p) < want) {
		if (send_msg(p->sock, MSG_MAKE, NULL) < 0)
			return -1;
		p->in_flight++;
	}
	return 0;
}

/* Read what the workers have finished; block until one answer if asked. */
static int pump(struct cell_pool *p, bool block)
{
	for (;;) {
		struct pool_msg m;
		ssize_t n = recv(p->sock, &m, sizeof(m), block ? 0 : MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n != (ssize_t)sizeof(m))
			return -1;
		m.text[sizeof(m.text) - 1] = '\0';
		if (m.kind == MSG_GONE || m.kind == MSG_RENEWED)
			sc_names_drop(&p->renewing, m.text);
		if (m.kind == MSG_GONE) { /* a renewal that could not be */
			p->not_renewed++;
			if (p->in_flight)
				p->in_flight--;
			if (request_more(p) < 0)
				return -1;
			/* a taker may wait for it: never nothing on the way */
			bool wanted = !p->limited || p->left > 0;
			if (wanted && p->nready + p->in_flight == 0) {
				if (send_msg(p->sock, MSG_MAKE, NULL) < 0)
					return -1;
				p->in_flight++;
			}
		} else if (m.kind == MSG_READY || m.kind == MSG_FAILED || m.kind == MSG_RENEWED) {
			if (p->in_flight)
				p->in_flight--;
			if (m.kind == MSG_RENEWED) {
				p->renewed++;
				m.kind = MSG_READY;
			}
			if (m.kind == MSG_READY && p->nready < POOL_MAX)
				snprintf(p->ready[p->nready++], 64, "%.63s", m.text);
			else
				snprintf(p->last_error, sizeof(p->last_error), "%s", m.text);
		}
		block = false;
	}
}

int cell_pool_new(const struct cell_spec *spec, size_t size, size_t workers,
		  cell_prepare_fn prepare, void *prepare_ctx, struct cell_pool **out,
		  struct sc_err *err)
{
	const struct cell_pool_opts o = {.size = size, .workers = workers, .prepare = prepare,
					 .prepare_ctx = prepare_ctx};
	return cell_pool_new_opts(spec, &o, out, err);
}

int cell_pool_new_opts(const struct cell_spec *spec, const struct cell_pool_opts *o,
		       struct cell_pool **out, struct sc_err *err)
{
	size_t size = o->size, workers = o->workers;
	const char *prefix = o->prefix ? o->prefix : "pool";
	if (!sc_valid_name(prefix) || strlen(prefix) > 16)
		return sc_fail(err, EINVAL, "pool name prefix '%.40s' is no name of 1 to 16 characters",
			       prefix);
	if (size == 0 || size > POOL_MAX)
		return sc_fail(err, 0, "pool size must be 1 to %d", POOL_MAX);
	if (workers == 0 || workers > POOL_MAX_WORKERS)
		return sc_fail(err, 0, "pool workers must be 1 to %d", POOL_MAX_WORKERS);
	struct cell_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return sc_fail(err, ENOMEM, "pool");
	pthread_mutex_init(&p->mu, NULL);
	p->sock = -1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		free(p);
		return sc_fail(err, errno, "socketpair");
	}
	struct cell_spec wspec = *spec;
	/* A killed pool takes its cells along: its workers remove them, and
	 * where cells may be kept (which then must outlive the workers) an
	 * init killed with its worker would do it even if that was killed too */
	wspec.die_with_creator = !o->keepable;
	for (size_t i = 0; i < workers; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			sc_fail(err, errno, "fork a pool worker");
			close(sv[0]);
			close(sv[1]);
			cell_pool_free(p);
			return -1;
		}
		if (pid == 0) {
			/* The owner's death closes the socket: then we clean up. */
			close(sv[0]);
			struct worker_cfg w = {.spec = &wspec, .prepare = o->prepare,
					       .ctx = o->prepare_ctx, .prefix = prefix, .id = (int)i,
					       .max_renewals = o->max_renewals};
			worker_loop(sv[1], &w);
		}
		p->workers[p->nworkers++] = pid;
	}
	close(sv[1]);
	p->sock = sv[0];
	p->size = size;
	p->keepable = o->keepable;
	p->reuse = o->reuse && cell_spec_renewable(spec);
	if (request_more(p) < 0) {
		sc_fail(err, errno, "start the pool");
		cell_pool_free(p);
		return -1;
	}
	*out = p;
	return 0;
}

int cell_pool_detach(struct cell_pool *p, int *sock, size_t *in_flight, pid_t *workers,
		     size_t *nworkers)
{
	pthread_mutex_lock(&p->mu);
	*sock = p->sock;
	*in_flight = p->in_flight;
	*nworkers = p->nworkers;
	memcpy(workers, p->workers, p->nworkers * sizeof(*workers));
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_destroy(&p->mu);
	free(p->leases); /* a pool being handed over has none taken */
	sc_names_free(&p->renewing);
	free(p);
	return 0;
}

int cell_pool_attach(int sock, size_t in_flight, const struct cell_pool_opts *o,
		     struct cell_pool **out, struct sc_err *err)
{
	if (o->size == 0 || o->size > POOL_MAX)
		return sc_fail(err, 0, "pool size must be 1 to %d", POOL_MAX);
	struct cell_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return sc_fail(err, ENOMEM, "pool");
	pthread_mutex_init(&p->mu, NULL);
	p->sock = sock;
	p->size = o->size;
	p->keepable = o->keepable;
	p->reuse = o->reuse;
	p->in_flight = in_flight;
	if (request_more(p) < 0) {
		sc_fail(err, errno, "start the pool");
		cell_pool_free(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* Take the next ready cell's name, under p->mu; *ready: one was ready
 * (else the taker waited for one to be made). */
static int take_ready(struct cell_pool *p, char name[64], uint64_t *lease, bool *ready,
		      struct sc_err *err)
{
	if (pump(p, false) < 0)
		return sc_fail(err, 0, "the pool's workers are gone");
	*ready = p->nready > 0;
	for (;;) {
		/* beyond the limit: a cell made for this taker */
		if (p->nready == 0 && p->in_flight == 0) {
			if (send_msg(p->sock, MSG_MAKE, NULL) < 0)
				return sc_fail(err, 0, "the pool's workers are gone");
			p->in_flight++;
		}
		if (pump(p, p->nready == 0) < 0)
			return sc_fail(err, 0, "the pool's workers are gone");
		if (p->nready > 0)
			break;
		if (p->in_flight == 0) {
			/* Every request failed: say why, and try again later. */
			request_more(p);
			return sc_fail(err, 0, "the pool could not make a cell: %s", p->last_error);
		}
	}
	snprintf(name, 64, "%s", p->ready[0]);
	memmove(p->ready[0], p->ready[1], (p->nready - 1) * sizeof(p->ready[0]));
	p->nready--;
	*lease = lease_new(p, name);
	if (p->left)
		p->left--;
	request_more(p);
	return 0;
}

int cell_pool_acquire(struct cell_pool *p, struct cell **out, struct sc_err *err)
{
	bool ready;
	return cell_pool_acquire_how(p, out, &ready, err);
}

int cell_pool_acquire_how(struct cell_pool *p, struct cell **out, bool *ready,
			  struct sc_err *err)
{
	char name[64];
	uint64_t lease = 0;
	pthread_mutex_lock(&p->mu);
	int rc = take_ready(p, name, &lease, ready, err);
	pthread_mutex_unlock(&p->mu);
	if (rc < 0)
		return -1;
	if (cell_open(name, out, err) < 0) {
		struct cell gone = {.lease = lease};
		snprintf(gone.name, sizeof(gone.name), "%s", name);
		pthread_mutex_lock(&p->mu);
		struct pool_lease *l = lease_of(p, &gone);
		if (l)
			lease_end(p, l);
		pthread_mutex_unlock(&p->mu);
		return -1;
	}
	(*out)->lease = lease;
	return 0;
}

void cell_pool_limit(struct cell_pool *p, size_t cells)
{
	pthread_mutex_lock(&p->mu);
	p->limited = true;
	p->left = cells;
	pthread_mutex_unlock(&p->mu);
}

int cell_pool_keep(struct cell_pool *p, const struct cell *c, struct sc_err *err)
{
	if (!p->keepable)
		return sc_fail(err, EINVAL, "the pool's cells die with it: it was not made keepable");
	/* not coming back soon: the pool makes another */
	pthread_mutex_lock(&p->mu);
	struct pool_lease *l = lease_of(p, c);
	if (l && !l->kept) {
		l->kept = true;
		if (p->lent)
			p->lent--;
	}
	(void)request_more(p);
	pthread_mutex_unlock(&p->mu);
	char path[SC_PATH_BUF];
	if (kept_path(c->name, path, sizeof(path), err) < 0)
		return -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "mark %s kept", c->name);
	close(fd);
	return 0;
}

void cell_pool_renewals(struct cell_pool *p, uint64_t *renewed, uint64_t *not_renewed)
{
	pthread_mutex_lock(&p->mu);
	(void)pump(p, false);
	*renewed = p->renewed;
	*not_renewed = p->not_renewed;
	pthread_mutex_unlock(&p->mu);
}

size_t cell_pool_ready_count(struct cell_pool *p)
{
	pthread_mutex_lock(&p->mu);
	(void)pump(p, false); /* the cells made since the last take */
	size_t n = p->nready;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void cell_pool_release(struct cell_pool *p, struct cell *c)
{
	pthread_mutex_lock(&p->mu);
	struct pool_lease *l = lease_of(p, c);
	if (!l && !c->lease && (l = lease_named(p, c->name)) && !l->kept)
		l = NULL;
	/* (a cell of another pool, or of none, is removed: its name is
	 * unknown here) */
	bool again = !l && lease_named(p, c->name);
	if (again || listed(p->ready, p->nready, c->name) ||
	    listed(p->renewing.names, p->renewing.n, c->name)) {
		/* given back before (its renewal stands), or taken again since */
		pthread_mutex_unlock(&p->mu);
		cell_close(c);
		return;
	}
	bool renew = false;
	if (l) {
		lease_end(p, l);
		/* A kept cell (POST /cells) was replaced when it was kept: up to
		 * size more wait renewed, for the takes to come, instead of
		 * being removed while new ones are made. */
		size_t cap = p->limited ? (p->left < p->size ? p->left : p->size) : 2 * p->size;
		renew = p->reuse && p->nready + p->in_flight < cap;
	}
	if (renew && sc_names_add(&p->renewing, c->name) == 0) {
		if (send_msg(p->sock, MSG_RENEW, c->name) == 0)
			p->in_flight++;
		else
			sc_names_drop(&p->renewing, c->name);
	} else {
		send_msg(p->sock, MSG_DESTROY, c->name);
	}
	(void)request_more(p);
	pthread_mutex_unlock(&p->mu);
	cell_close(c);
}

void cell_pool_free(struct cell_pool *p)
{
	if (!p)
		return;
	/* The workers read what is queued for them (a release's DESTROY),
	 * then an end of file, remove their cells and exit. Not a close: a
	 * socket closed with answers it never read (a refill's READY) resets
	 * the workers' end, and they would stop before the DESTROY. */
	if (p->sock >= 0)
		shutdown(p->sock, SHUT_WR);
	for (size_t i = 0; i < p->nworkers; i++)
		while (waitpid(p->workers[i], NULL, 0) < 0 && errno == EINTR)
			;
	if (p->sock >= 0)
		close(p->sock);
	pthread_mutex_destroy(&p->mu);
	free(p->leases);
	sc_names_free(&p->renewing);
	free(p);
}

/* ---- jobs a caller's thread waits for ---- */

static int send_job(int sock, const struct pool_job *j, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)j, .iov_len = sizeof(*j)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*j) ? 0 : -1;
}

/* Send j to a worker and wait for its answer (a, filled): 0, or -1 with
 * err when no worker answered. The pool's lock is not taken: the
 * send is one atomic message, the answer comes on our own socket. */
static int run_job(struct cell_pool *p, const struct pool_job *j, struct pool_job_answer *a,
		   struct sc_err *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sc_fail(err, errno, "socketpair");
	int rc = send_job(p->sock, j, sv[1]);
	int e = errno;
	close(sv[1]);
	if (rc < 0) {
		close(sv[0]);
		return sc_fail(err, e, "the pool's workers are gone");
	}
	ssize_t n;
	do
		n = recv(sv[0], a, sizeof(*a), 0);
	while (n < 0 && errno == EINTR);
	close(sv[0]);
	if (n != (ssize_t)sizeof(*a))
		return sc_fail(err, 0, "the pool's worker gave no answer (it died?)");
	a->msg[sizeof(a->msg) - 1] = '\0';
	return 0;
}

static int job_of(struct pool_job *j, int kind, const char *name, const char *tag,
		  struct sc_err *err)
{
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	if (!sc_valid_name(name))
		return sc_fail(err, EINVAL, "bad cell name '%.64s'", name);
	if (tag && !sc_valid_name(tag))
		return sc_fail(err, EINVAL, "bad checkpoint tag '%.64s': use letters, digits, '.', "
					    "'_' and '-' (at most 63)", tag);
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->tag, sizeof(j->tag), "%s", tag ? tag : "");
	return 0;
}

int cell_pool_fork(struct cell_pool *p, const char *parent, const char *const *names, size_t n,
		   struct sc_err *errs, struct sc_err *err)
{
	if (n == 0 || n > CELL_POOL_FORK_MAX)
		return sc_fail(err, EINVAL, "fork: 1 to %d new cells", CELL_POOL_FORK_MAX);
	struct pool_job *j = malloc(sizeof(*j));
	struct pool_job_answer *a = malloc(sizeof(*a));
	int rc = j && a ? job_of(j, MSG_FORK, parent, NULL, err) : sc_fail(err, ENOMEM, "fork");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!sc_valid_name(names[i]))
			rc = sc_fail(err, EINVAL, "fork: bad cell name '%.64s'", names[i]);
		else
			snprintf(j->names[i], 64, "%s", names[i]);
	}
	if (rc == 0) {
		j->n = (uint32_t)n;
		rc = run_job(p, j, a, err);
	}
	if (rc == 0 && a->rc < 0) {
		rc = sc_fail(err, 0, "%s", a->msg);
		err->errnum = a->errnum;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		errs[i].errnum = a->child[i].errnum;
		a->child[i].msg[sizeof(a->child[i].msg) - 1] = '\0';
		snprintf(errs[i].msg, sizeof(errs[i].msg), "%s", a->child[i].msg);
	}
	if (rc == 0)
		rc = a->rc;
	free(j);
	free(a);
	return rc;
}

/* A checkpoint or rollback job: 0, or -1 with the worker's error. */
static int tag_job(struct cell_pool *p, int kind, const char *name, const char *tag,
		   struct sc_err *err)
{
	struct pool_job *j = malloc(sizeof(*j));
	struct pool_job_answer *a = malloc(sizeof(*a));
	int rc = j && a ? job_of(j, kind, name, tag, err) : sc_fail(err, ENOMEM, "pool job");
	if (rc == 0)
		rc = run_job(p, j, a, err);
	if (rc == 0 && a->rc < 0) {
		rc = sc_fail(err, 0, "%s", a->msg);
		err->errnum = a->errnum;
	}
	free(j);
	free(a);
	return rc;
}

int cell_pool_checkpoint(struct cell_pool *p, const char *name, const char *tag,
			 struct sc_err *err)
{
	return tag_job(p, MSG_CHECKPOINT, name, tag, err);
}

int cell_pool_rollback(struct cell_pool *p, const char *name, const char *tag, struct sc_err *err)
{
	return tag_job(p, MSG_ROLLBACK, name, tag, err);
}

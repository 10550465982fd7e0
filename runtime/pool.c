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

#include "cell_priv.h"

#define POOL_MAX 256
#define POOL_MAX_WORKERS 16

enum { MSG_MAKE = 1, MSG_DESTROY = 2, MSG_READY = 3, MSG_FAILED = 4 };

struct pool_msg {
	int32_t kind;
	char text[448]; /* a cell name, or an error */
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
	char last_error[448];
};

static int send_msg(int fd, int kind, const char *text)
{
	struct pool_msg m = {.kind = kind};
	snprintf(m.text, sizeof(m.text), "%.440s", text ? text : "");
	return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

/* ---- worker side ---- */

struct made {
	char (*names)[64];
	size_t n, cap;
};

static void remember(struct made *m, const char *name)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		char(*grown)[64] = realloc(m->names, cap * sizeof(*grown));
		if (!grown)
			return;
		m->names = grown;
		m->cap = cap;
	}
	snprintf(m->names[m->n++], 64, "%s", name);
}

static void forget(struct made *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->names[i], name)) {
			memcpy(m->names[i], m->names[--m->n], 64);
			return;
		}
}

/* Reap what has exited, then wait for the next message; a child that exits
 * meanwhile (the init of a cell this worker made, which any worker may
 * have removed) is reaped at once instead of staying a zombie until then.
 * SIGCHLD is blocked only while waiting (a blocked signal is queued even
 * when its default action is to ignore it: the signalfd sees it), so the
 * cells' processes never inherit a blocked mask. */
static ssize_t recv_reaping(int sock, int sigfd, const sigset_t *chld, struct pool_msg *m)
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
			return recv(sock, m, sizeof(*m), 0);
	}
}

struct worker_cfg {
	const struct cell_spec *spec;
	cell_prepare_fn prepare;
	void *ctx;
	int id;
};

static void worker_loop(int sock, const struct worker_cfg *w)
{
	const struct cell_spec *spec = w->spec;
	struct made made = {0};
	unsigned long counter = 0;
	pid_t owner = getppid();
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK); /* -1: reaped per message */
	for (;;) {
		struct pool_msg m;
		ssize_t n = recv_reaping(sock, sigfd, &chld, &m);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(m))
			break; /* the pool's owner is gone */
		m.text[sizeof(m.text) - 1] = '\0';
		struct sc_err err = {0};
		if (m.kind == MSG_MAKE) {
			char name[64];
			/* the worker's own pid too: several pools of one owner
			 * (batch: one per image) have workers of the same ids */
			snprintf(name, sizeof(name), "pool-%d-%d-%d-%lu", (int)owner, (int)getpid(), w->id,
				 counter++);
			struct cell *c;
			if (cell_create(spec, name, &c, &err) < 0) {
				send_msg(sock, MSG_FAILED, err.msg);
				continue;
			}
			if (w->prepare && w->prepare(c, w->ctx, &err) < 0) {
				struct sc_err ignored;
				cell_destroy(c, &ignored);
				send_msg(sock, MSG_FAILED, err.msg);
				continue;
			}
			remember(&made, name);
			cell_close(c);
			send_msg(sock, MSG_READY, name);
		} else if (m.kind == MSG_DESTROY && sc_valid_name(m.text)) {
			forget(&made, m.text);
			cell_remove(m.text, true, &err);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	for (size_t i = 0; i < made.n; i++) {
		struct sc_err ignored;
		cell_remove(made.names[i], true, &ignored);
	}
	_exit(0);
}

/* ---- owner side ---- */

static int request_more(struct cell_pool *p)
{
	size_t want = p->size;
	if (p->limited && p->left < want)
		want = p->left;
	while (p->nready + p->in_flight < want) {
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
		if (m.kind == MSG_READY || m.kind == MSG_FAILED) {
			if (p->in_flight)
				p->in_flight--;
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
	wspec.die_with_creator = true; /* a killed pool takes its cells along */
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
			struct worker_cfg w = {.spec = &wspec, .prepare = prepare,
					       .ctx = prepare_ctx, .id = (int)i};
			worker_loop(sv[1], &w);
		}
		p->workers[p->nworkers++] = pid;
	}
	close(sv[1]);
	p->sock = sv[0];
	p->size = size;
	if (request_more(p) < 0) {
		sc_fail(err, errno, "start the pool");
		cell_pool_free(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* Take the next ready cell's name, under p->mu. */
static int take_ready(struct cell_pool *p, char name[64], struct sc_err *err)
{
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
	if (p->left)
		p->left--;
	request_more(p);
	return 0;
}

int cell_pool_acquire(struct cell_pool *p, struct cell **out, struct sc_err *err)
{
	char name[64];
	pthread_mutex_lock(&p->mu);
	int rc = take_ready(p, name, err);
	pthread_mutex_unlock(&p->mu);
	return rc < 0 ? -1 : cell_open(name, out, err);
}

void cell_pool_limit(struct cell_pool *p, size_t cells)
{
	pthread_mutex_lock(&p->mu);
	p->limited = true;
	p->left = cells;
	pthread_mutex_unlock(&p->mu);
}

void cell_pool_release(struct cell_pool *p, struct cell *c)
{
	send_msg(p->sock, MSG_DESTROY, c->name);
	cell_close(c);
}

void cell_pool_free(struct cell_pool *p)
{
	if (!p)
		return;
	if (p->sock >= 0)
		close(p->sock); /* workers remove their cells and exit */
	for (size_t i = 0; i < p->nworkers; i++)
		while (waitpid(p->workers[i], NULL, 0) < 0 && errno == EINTR)
			;
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* The pool host: a single-threaded process that api_new forks before any
 * thread exists, to make the pools of images other than the server's
 * (POST /cells "image", serve --allow-images) when a request first needs
 * one. A threaded server must not fork pool workers itself (a cell is
 * never cloned from a multi-threaded process, and a fork of one may
 * inherit a lock another thread held). The host opens the image, makes a
 * pool of the server's spec on its layers (its env and workdir too), and
 * passes the pool's socket back (SCM_RIGHTS): the server's cell_pool_attach
 * owns the pool from then on, the workers stay the host's children, which
 * it reaps. The host ends when the server closes its socket, after its
 * workers (each ends when its pool's socket closes). */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../rootfs/rootfs.h"
#include "api_priv.h"

#define HOST_REAP_MS 1000

enum { HOST_MAKE_POOL = 1, HOST_SNAPSHOT = 2 };

struct host_req {
	int32_t kind;
	char store[64]; /* MAKE_POOL: the image; SNAPSHOT: the new image's name */
	char cell[64];  /* SNAPSHOT: the cell */
	char source[128]; /* SNAPSHOT: what the image's source names */
};

struct host_ans {
	int32_t rc;
	int32_t errnum;
	uint64_t in_flight;
	char msg[448];
};

/* The server's pool spec on image `store`: its layers, env, workdir. */
static int image_spec(const struct api *a, struct rootfs_image *img, struct cell_spec *spec,
		      struct sc_err *err)
{
	*spec = a->pool_spec;
	cell_spec_set_layers(spec, img);
	spec->image_name = img->name;
	for (char **e = img->env; e && *e; e++)
		if (cell_spec_setenv(spec, *e, err) < 0)
			return sc_err_wrap(err, "image '%s'", img->name);
	if (img->workdir)
		spec->workdir = img->workdir;
	return 0;
}

static void send_answer(int sock, const struct host_ans *ans, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (void *)ans, .iov_len = sizeof(*ans)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	(void)!sendmsg(sock, &mh, MSG_NOSIGNAL);
}

/* One pool for image `store`: its socket (to pass on), or -1 with err. */
static int make_pool(const struct api *a, const char *store, size_t *in_flight,
		     struct sc_err *err)
{
	struct rootfs_image img;
	if (rootfs_image_open(cell_data_root(), store, &img, err) < 0)
		return -1;
	struct cell_spec spec;
	struct cell_pool *p = NULL;
	const struct cell_pool_opts po = {.size = a->cfg.image_pool, .workers = 1,
					  .prepare = lang_prepare_cell,
					  .prepare_ctx = (void *)&a->prep,
					  .prefix = a->cfg.ephemeral ? "pool" : API_POOL_PREFIX,
					  .keepable = !a->cfg.ephemeral, .reuse = !a->cfg.no_reuse,
					  .max_renewals = a->cfg.max_reuse};
	int rc = image_spec(a, &img, &spec, err);
	if (rc == 0)
		rc = cell_pool_new_opts(&spec, &po, &p, err);
	/* the workers have their copies of the spec and the image */
	rootfs_image_free(&img);
	if (rc < 0)
		return -1;
	int sock;
	pid_t workers[CELL_POOL_MAX_WORKERS];
	size_t nworkers;
	cell_pool_detach(p, &sock, in_flight, workers, &nworkers);
	return sock;
}

struct snapshot_ctx {
	const char *base, *name, *source;
};

static int into_image(int fd, void *ctx, struct sc_err *err)
{
	const struct snapshot_ctx *x = ctx;
	struct rootfs_limits lim = {.max_size = ROOTFS_DEFAULT_MAX_SIZE};
	return rootfs_image_commit(cell_data_root(), &api_cells_in_use, x->base, x->name, x->source, fd, &lim,
				   NULL, err);
}

/* Cell `cell`'s files (its image and writable layer) as new image `name`. */
static int snapshot(const char *cell, const char *name, const char *source, struct sc_err *err)
{
	struct cell_status st;
	struct cell *c;
	if (!sc_valid_name(cell) || !sc_valid_name(name))
		return sc_fail(err, EINVAL, "bad cell or image name");
	if (cell_status_get(cell, &st, err) < 0 || cell_open(cell, &c, err) < 0)
		return -1;
	struct snapshot_ctx x = {.base = st.image, .name = name, .source = source};
	int rc = cell_export_layer(c, ROOTFS_DEFAULT_MAX_SIZE, into_image, &x, err);
	cell_close(c);
	return rc;
}

static _Noreturn void host_main(const struct api *a, int sock)
{
	signal(SIGPIPE, SIG_IGN);
	/* the server's: its state root's lock ends with it, not with us */
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	struct host_req q;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		struct pollfd p = {.fd = sock, .events = POLLIN};
		if (poll(&p, 1, HOST_REAP_MS) <= 0)
			continue;
		ssize_t n = recv(sock, &q, sizeof(q), 0);
		if (n != (ssize_t)sizeof(q))
			break; /* the server is gone */
		q.store[sizeof(q.store) - 1] = q.cell[sizeof(q.cell) - 1] = '\0';
		q.source[sizeof(q.source) - 1] = '\0';
		struct host_ans ans = {0};
		struct sc_err err = {0};
		size_t in_flight = 0;
		int fd = -1;
		if (q.kind == HOST_SNAPSHOT)
			ans.rc = snapshot(q.cell, q.store, q.source, &err);
		else if (!sc_valid_name(q.store))
			ans.rc = sc_fail(&err, EINVAL, "bad image name");
		else
			ans.rc = (fd = make_pool(a, q.store, &in_flight, &err)) < 0 ? -1 : 0;
		ans.errnum = err.errnum;
		ans.in_flight = in_flight;
		snprintf(ans.msg, sizeof(ans.msg), "%.440s", err.msg);
		send_answer(sock, &ans, fd);
		if (fd >= 0)
			close(fd);
	}
	/* the workers end as their pools' sockets close */
	while (wait(NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

int api_pool_host_start(struct api *a, struct sc_err *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sc_fail(err, errno, "socketpair");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return sc_fail(err, e, "fork the pool host");
	}
	if (pid == 0) {
		close(sv[0]);
		host_main(a, sv[1]);
	}
	close(sv[1]);
	a->host_pid = pid;
	a->host_sock = sv[0];
	return 0;
}

/* One request and its answer (and an fd with it, or -1): 0, or -1 with err. */
static int host_call(struct api *a, const struct host_req *q, struct host_ans *ans, int *fd,
		     struct sc_err *err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = ans, .iov_len = sizeof(*ans)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	*fd = -1;
	/* one request at a time: the answers come in order on one socket */
	pthread_mutex_lock(&a->host_mu);
	ssize_t n = -1;
	if (a->host_sock >= 0 && send(a->host_sock, q, sizeof(*q), MSG_NOSIGNAL) == sizeof(*q))
		n = recvmsg(a->host_sock, &mh, MSG_CMSG_CLOEXEC);
	pthread_mutex_unlock(&a->host_mu);
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof(*ans)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return sc_fail(err, EPIPE, "the pool host is gone (serve --allow-images starts it)");
	}
	ans->msg[sizeof(ans->msg) - 1] = '\0';
	if (ans->rc < 0) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return sc_fail(err, ans->errnum, "%s", ans->msg);
	}
	return 0;
}

int api_pool_host_snapshot(struct api *a, const char *cell, const char *image,
			   const char *source, struct sc_err *err)
{
	struct host_req q = {.kind = HOST_SNAPSHOT};
	snprintf(q.store, sizeof(q.store), "%s", image);
	snprintf(q.cell, sizeof(q.cell), "%s", cell);
	snprintf(q.source, sizeof(q.source), "%s", source);
	struct host_ans ans;
	int fd;
	return host_call(a, &q, &ans, &fd, err);
}

int api_pool_host_make(struct api *a, const char *store, struct cell_pool **out,
		       struct sc_err *err)
{
	struct host_req q = {.kind = HOST_MAKE_POOL};
	snprintf(q.store, sizeof(q.store), "%s", store);
	struct host_ans ans;
	int fd;
	if (host_call(a, &q, &ans, &fd, err) < 0)
		return -1;
	if (fd < 0)
		return sc_fail(err, EPROTO, "the pool host sent no pool");
	/* the pool host's pools renew what their image's spec lets them */
	const struct cell_pool_opts po = {.size = a->cfg.image_pool, .keepable = !a->cfg.ephemeral,
					  .reuse = !a->cfg.no_reuse && cell_spec_renewable(a->cfg.spec)};
	if (cell_pool_attach(fd, (size_t)ans.in_flight, &po, out, err) < 0) {
		close(fd);
		return -1;
	}
	return 0;
}

void api_pool_host_stop(struct api *a)
{
	if (a->host_sock < 0)
		return;
	close(a->host_sock);
	a->host_sock = -1;
	while (waitpid(a->host_pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* envd's Process.Connect: more streams on a running command. The
 * command's job (e2b_process.c) sends every frame of its Start stream
 * to a hub too, which copies it, without waiting, into one socket per
 * watcher; each Connect stream's job reads its socket and passes whole
 * frames on. A watcher gets what the command writes from the time it
 * connected, and the end. One that falls so far behind that its socket
 * is full (API_E2B_WATCH_BUF) is cut off rather than slowing the command
 * down: its stream ends with an error. No history is kept. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "e2b_priv.h"

#define WATCH_MSG_MAX (128u * 1024) /* a frame's JSON: 64 KiB of output in base64 fits */

struct api_e2b_hub {
	pthread_mutex_t mu;
	int w[API_E2B_MAX_WATCHERS]; /* the hub's ends of the watchers' sockets, -1 */
	bool closed;                 /* the command's stream has ended */
};

struct api_e2b_hub *api_e2b_hub_new(void)
{
	struct api_e2b_hub *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	pthread_mutex_init(&h->mu, NULL);
	for (size_t i = 0; i < API_E2B_MAX_WATCHERS; i++)
		h->w[i] = -1;
	return h;
}

void api_e2b_hub_close(struct api_e2b_hub *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < API_E2B_MAX_WATCHERS; i++)
		sc_closep(&h->w[i]);
	h->closed = true;
	pthread_mutex_unlock(&h->mu);
}

void api_e2b_hub_free(struct api_e2b_hub *h)
{
	if (!h)
		return;
	api_e2b_hub_close(h);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void api_e2b_hub_send(struct api_e2b_hub *h, const unsigned char *m, size_t n)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < API_E2B_MAX_WATCHERS; i++) {
		if (h->w[i] < 0)
			continue;
		ssize_t w = n <= WATCH_MSG_MAX + 5 ? send(h->w[i], m, n, MSG_DONTWAIT | MSG_NOSIGNAL) : -1;
		if (w != (ssize_t)n) /* no room (or the watcher is gone): cut off */
			sc_closep(&h->w[i]);
	}
	pthread_mutex_unlock(&h->mu);
}

/* A new watcher's end of its socket, or -1 (errno EMFILE: the command
 * has API_E2B_MAX_WATCHERS; ESRCH: its stream has ended). */
static int hub_add(struct api_e2b_hub *h)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	int buf = API_E2B_WATCH_BUF;
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	(void)shutdown(sv[1], SHUT_WR);
	int rc = -1;
	pthread_mutex_lock(&h->mu);
	errno = h->closed ? ESRCH : EMFILE;
	for (size_t i = 0; !h->closed && i < API_E2B_MAX_WATCHERS && rc < 0; i++) {
		struct pollfd p = {.fd = h->w[i], .events = 0};
		if (h->w[i] >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)))
			sc_closep(&h->w[i]); /* a watcher that has gone: its place is free */
		if (h->w[i] < 0) {
			h->w[i] = sv[0];
			rc = sv[1];
		}
	}
	pthread_mutex_unlock(&h->mu);
	if (rc < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		errno = e;
	}
	return rc;
}

struct watch_job {
	struct api *a;
	char id[API_ID_LEN + 1];
	uint32_t pid;
	int rd;            /* the socket the hub writes into */
	double deadline;   /* sc_now() seconds: Connect-Timeout-Ms */
	unsigned char *buf; /* WATCH_MSG_MAX + 5: frames read, not yet whole */
	size_t len;
	bool ended;        /* the end-stream frame has been passed on */
};

static void watch_job_free(void *ctx)
{
	struct watch_job *w = ctx;
	sc_closep(&w->rd);
	free(w->buf);
	api_e2b_attach_end(w->a, w->id);
	free(w);
}

/* The whole frames in w->buf into the stream; false when one is bigger
 * than a frame can be (the hub never sends one). */
static bool pass_frames(struct watch_job *w, struct api_stream *s)
{
	size_t off = 0;
	while (!w->ended && w->len - off >= 5) {
		const unsigned char *b = w->buf + off;
		size_t n = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
		if (n > WATCH_MSG_MAX)
			return false;
		if (w->len - off - 5 < n)
			break;
		api_stream_raw(s, b, n + 5);
		w->ended = api_connect_frame_is_end(b, n + 5);
		off += n + 5;
	}
	memmove(w->buf, w->buf + off, w->len - off);
	w->len -= off;
	return true;
}

/* Until the command's end, the watcher's deadline, or the stream's
 * cancel: what went wrong, or NULL (the end was passed on). */
static const char *watch_loop(struct watch_job *w, struct api_stream *s,
			      enum api_connect_code *code)
{
	for (;;) {
		double left = w->deadline - sc_now();
		if (left <= 0) {
			*code = API_CONNECT_DEADLINE_EXCEEDED;
			return "the connection's deadline (Connect-Timeout-Ms) has passed";
		}
		struct pollfd p[2] = {{.fd = w->rd, .events = POLLIN},
				      {.fd = api_stream_cancel_fd(s), .events = POLLIN}};
		int r = poll(p, 2, left > 3600 ? 3600000 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (p[1].revents) { /* the server stops (or the client went away: unread) */
			*code = API_CONNECT_UNAVAILABLE;
			return "the server is stopping";
		}
		ssize_t n = recv(w->rd, w->buf + w->len, WATCH_MSG_MAX + 5 - w->len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		w->len += (size_t)n;
		if (!pass_frames(w, s))
			break;
		if (w->ended)
			return NULL;
	}
	*code = API_CONNECT_UNAVAILABLE;
	return "the command's stream went on without this watcher (it fell behind its output)";
}

static void watch_job_stream(struct api_stream *s, void *ctx)
{
	struct watch_job *w = ctx;
	char start[64];
	int n = snprintf(start, sizeof(start), "{\"event\":{\"start\":{\"pid\":%u}}}", w->pid);
	api_connect_send(s, false, start, (size_t)n);
	enum api_connect_code code;
	const char *why = watch_loop(w, s, &code);
	if (why)
		api_connect_send_error(s, code, why);
}

/* ConnectRequest {"process": {"pid": N} or {"tag": "..."}}: the pid and
 * the tag (NULL) it names; false when it names neither. */
static bool parse_selector(const cJSON *j, uint32_t *pid, const char **tag)
{
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(j, "process");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(sel, "pid");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(sel, "tag");
	*tag = cJSON_IsString(t) && t->valuestring[0] ? t->valuestring : NULL;
	*pid = 0;
	if (cJSON_IsNumber(p) && p->valuedouble >= 0 && p->valuedouble <= UINT32_MAX)
		*pid = (uint32_t)p->valuedouble;
	else if (p || !*tag)
		return false;
	return true;
}

/* A watcher of the sandbox's command (by pid, else by tag) for w: w->rd
 * and w->pid set, the sandbox's count of attached streams taken; else
 * resp answered. */
static bool watch_attach(struct api *a, struct watch_job *w, uint32_t pid, const char *tag,
			 struct api_response *resp)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, w->id);
	struct api_e2b *e = c ? c->e2b : NULL;
	struct api_e2b_proc *q = NULL;
	for (size_t i = 0; e && i < e->nprocs && !q; i++)
		if (tag ? strcmp(e->procs[i].tag, tag) == 0 : e->procs[i].pid == pid)
			q = &e->procs[i];
	int fd = -1, why = ENOENT;
	if (q && e->nattach >= API_E2B_MAX_ATTACH)
		why = EMFILE;
	else if (q && (fd = hub_add(q->hub)) < 0)
		why = errno;
	if (fd >= 0) {
		e->nattach++;
		w->rd = fd;
		w->pid = q->pid;
	}
	pthread_mutex_unlock(&a->mu);
	if (fd >= 0)
		return true;
	if (why == EMFILE)
		api_connect_stream_error(resp, API_CONNECT_RESOURCE_EXHAUSTED,
					 "too many streams on the process or the sandbox (%d, %d at most)",
				  API_E2B_MAX_WATCHERS, API_E2B_MAX_ATTACH);
	else if (tag && (why == ENOENT || why == ESRCH))
		api_connect_stream_error(resp, API_CONNECT_NOT_FOUND, "process with tag %s not found", tag);
	else if (why == ENOENT || why == ESRCH)
		api_connect_stream_error(resp, API_CONNECT_NOT_FOUND, "process with pid %u not found", pid);
	else
		api_connect_stream_error(resp, API_CONNECT_INTERNAL, "watcher: %s", strerror(why));
	return false;
}

void api_e2b_attach_end(struct api *a, const char *id)
{
	pthread_mutex_lock(&a->mu);
	struct api_cell *c = api_cell_find_locked(a, id);
	if (c && c->e2b && c->e2b->nattach)
		c->e2b->nattach--;
	pthread_mutex_unlock(&a->mu);
}

void api_e2b_process_connect(struct api *a, const struct api_call *call, struct api_response *resp)
{
	char id[API_ID_LEN + 1];
	if (!api_e2b_envd_auth(a, call->req, id, false, resp))
		return;
	cJSON *j = api_connect_stream_request(call->req, resp);
	if (!j)
		return;
	uint32_t pid;
	const char *tag;
	char tagbuf[64] = "";
	bool ok = parse_selector(j, &pid, &tag);
	if (tag)
		snprintf(tagbuf, sizeof(tagbuf), "%s", tag);
	cJSON_Delete(j);
	if (!ok) {
		api_connect_error(resp, API_CONNECT_INVALID_ARGUMENT, "process: {pid: number} or {tag: string}");
		return;
	}
	struct watch_job *w = api_job_alloc(sizeof(*w), resp);
	if (!w)
		return;
	*w = (struct watch_job){.a = a, .rd = -1,
				.deadline = sc_now() + api_e2b_deadline_s(call->req),
				.buf = malloc(WATCH_MSG_MAX + 5)};
	snprintf(w->id, sizeof(w->id), "%s", id);
	if (!w->buf) {
		free(w);
		api_connect_error(resp, API_CONNECT_INTERNAL, "out of memory");
		return;
	}
	if (!watch_attach(a, w, pid, tagbuf[0] ? tagbuf : NULL, resp)) {
		free(w->buf);
		free(w);
		return;
	}
	api_stream_start(a, resp, 0, watch_job_stream, watch_job_free, w);
	api_e2b_stream_setup(resp);
}

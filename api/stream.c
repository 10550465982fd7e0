/* The one NDJSON stream of the HTTP side (exec, /run, /code with Accept:
 * application/x-ndjson): a job on a helper thread turns what happens into
 * lines (output events as cell_exec's on_output or lang's sink hands them
 * over, then a result or an error) written into a socket pair; the
 * transport's thread reads them out. The helper thread is there because
 * libmicrohttpd pulls a body from its connection's thread while the
 * command's output is pushed by the call that runs it.
 *
 * The client going away (its socket's POLLRDHUP) or the transport giving
 * up frees the stream, which cancels the job (its cancel fd) and joins
 * it; the server stopping cancels it too, and the stream then ends as the
 * job ends it (an error line). A slow client slows the job down: its
 * writes wait for room in the socket pair, and the command for room in
 * its pipes.
 *
 * A job that outlives its client (api_stream_outlive: an E2B command)
 * is not cancelled then: its stream becomes an orphan in the server's
 * list, its writes are dropped, and its own thread frees it when the job
 * ends; api_cancel cancels the orphans and api_free waits for them. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/utf8.h"
#include "api_priv.h"

#define STREAM_CHUNK 16384 /* bytes of output in one event */

struct api_stream {
	struct api *a;
	int sp[2];          /* lines: the job writes [1], the transport reads [0] */
	int pc[2];          /* the job's cancel fd is [0]; a byte in [1] cancels */
	bool gone;          /* the reader went away: lines are dropped */
	bool stop_seen;     /* the server's stop was passed on to pc */
	unsigned char carry[2][4]; /* an unfinished UTF-8 sequence per stream */
	size_t ncarry[2];
	uint64_t limit, sent[2];
	bool trunc[2];
	void (*run)(struct api_stream *s, void *ctx);
	void (*free_fn)(void *ctx);
	void *ctx;
	pthread_t th;
	bool running;       /* th started, not joined */
	bool outlive;       /* the job goes on when the client goes away */
	bool done;          /* under a->mu: run returned */
	bool orphan;        /* under a->mu: in a->orphans, freed by th */
	struct api_stream *next_orphan;
	char ka[64];        /* a keepalive message, sent after ka_ms of silence */
	size_t ka_len;
	int ka_ms;
	bool ka_after_first; /* ... only once the job's first bytes went */
	bool got_any;       /* the transport has read some of the job's bytes */
};

static void send_all(struct api_stream *s, const char *p, size_t n)
{
	while (n && !s->gone) {
		ssize_t w = send(s->sp[1], p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->gone = true;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

/* jb (open) with a newline as the next line. */
static void send_line(struct api_stream *s, struct api_jbuf *jb)
{
	fputc('\n', jb->f);
	char *t = api_jb_close(jb);
	if (t)
		send_all(s, t, jb->len);
	else
		s->gone = true;
	free(t);
}

/* One output event of d[0..n), within the stream's limit. */
static void output_line(struct api_stream *s, int k, const char *d, size_t n)
{
	if (s->limit && s->sent[k] + n > s->limit) {
		s->trunc[k] = true;
		n = s->limit > s->sent[k] ? (size_t)(s->limit - s->sent[k]) : 0;
	}
	struct api_jbuf jb;
	if (!n || s->gone || !api_jb_open(&jb))
		return;
	s->sent[k] += n;
	api_put_output_event(jb.f, k, d, n);
	send_line(s, &jb);
}

void api_stream_output(struct api_stream *s, int k, const char *d, size_t n)
{
	while (n && !s->gone) {
		char buf[STREAM_CHUNK + 4];
		size_t len = s->ncarry[k], take = n < STREAM_CHUNK ? n : STREAM_CHUNK;
		memcpy(buf, s->carry[k], len);
		memcpy(buf + len, d, take);
		len += take;
		d += take;
		n -= take;
		size_t hold = sc_utf8_unfinished((const unsigned char *)buf, len);
		memcpy(s->carry[k], buf + len - hold, hold);
		s->ncarry[k] = hold;
		output_line(s, k, buf, len - hold);
	}
}

void api_stream_on_output(void *ctx, int stream, const char *d, size_t n)
{
	api_stream_output(ctx, stream == 2, d, n);
}

bool api_stream_truncated(const struct api_stream *s, int k)
{
	return s->trunc[k];
}

int api_stream_cancel_fd(const struct api_stream *s)
{
	return s->pc[0];
}

/* A stream that ended mid-character: what was held back goes as it is. */
static void flush_carry(struct api_stream *s)
{
	for (int k = 0; k < 2; k++)
		if (s->ncarry[k]) {
			output_line(s, k, (const char *)s->carry[k], s->ncarry[k]);
			s->ncarry[k] = 0;
		}
}

void api_stream_result(struct api_stream *s, const char *obj, size_t len)
{
	flush_carry(s);
	struct api_jbuf jb;
	if (len < 2 || obj[0] != '{' || s->gone || !api_jb_open(&jb))
		return;
	fputs("{\"type\":\"result\"", jb.f);
	if (len > 2)
		fputc(',', jb.f);
	fwrite(obj + 1, 1, len - 1, jb.f);
	send_line(s, &jb);
}

void api_stream_error(struct api_stream *s, const char *msg)
{
	flush_carry(s);
	struct api_jbuf jb;
	if (s->gone || !api_jb_open(&jb))
		return;
	api_put_error_event(jb.f, msg);
	send_line(s, &jb);
}

void api_stream_raw(struct api_stream *s, const void *p, size_t n)
{
	send_all(s, p, n);
}

static void stream_cancel(struct api_stream *s)
{
	if (s->pc[1] >= 0)
		(void)!write(s->pc[1], "x", 1);
}

static void stream_close_fds(struct api_stream *s)
{
	int *fds[] = {s->sp, s->pc};
	for (size_t i = 0; i < SC_ARRAY_LEN(fds); i++) {
		sc_closep(&fds[i][0]);
		sc_closep(&fds[i][1]);
	}
}

/* The job of an orphan has ended (its thread, detached): nobody else
 * holds the stream. */
static void orphan_end(struct api_stream *s)
{
	struct api *a = s->a;
	stream_close_fds(s);
	s->free_fn(s->ctx);
	free(s);
	pthread_mutex_lock(&a->mu);
	a->norphans--;
	pthread_cond_broadcast(&a->orphans_cv);
	pthread_mutex_unlock(&a->mu);
}

static void *stream_main(void *arg)
{
	struct api_stream *s = arg;
	s->run(s, s->ctx);
	sc_closep(&s->sp[1]); /* the reader's end of the stream */
	pthread_mutex_lock(&s->a->mu);
	s->done = true;
	bool orphan = s->orphan;
	for (struct api_stream **q = &s->a->orphans; orphan && *q; q = &(*q)->next_orphan)
		if (*q == s) {
			*q = s->next_orphan;
			break;
		}
	pthread_mutex_unlock(&s->a->mu);
	if (orphan)
		orphan_end(s);
	return NULL;
}

void api_stream_outlive(struct api_stream *s)
{
	s->outlive = true;
}

/* The client of a running job that outlives it went away: an orphan
 * now (true), unless the job has ended or the server stops. */
static bool stream_orphan(struct api_stream *s)
{
	struct api *a = s->a;
	pthread_mutex_lock(&a->mu);
	bool orphan = !s->done && !a->cancelled;
	if (orphan) {
		s->orphan = true;
		s->next_orphan = a->orphans;
		a->orphans = s;
		a->norphans++;
		/* (under mu: the job's thread frees s only once it has taken mu) */
		sc_closep(&s->sp[0]); /* its writes fail now: dropped */
		pthread_detach(s->th);
	}
	pthread_mutex_unlock(&a->mu);
	return orphan;
}

void api_stream_orphans_cancel_locked(struct api *a)
{
	for (struct api_stream *s = a->orphans; s; s = s->next_orphan)
		stream_cancel(s);
}

void api_stream_orphans_wait(struct api *a)
{
	pthread_mutex_lock(&a->mu);
	api_stream_orphans_cancel_locked(a);
	while (a->norphans)
		pthread_cond_wait(&a->orphans_cv, &a->mu);
	pthread_mutex_unlock(&a->mu);
}

static void stream_keepalive(struct api_stream *s, const void *msg, size_t len, int every_ms,
			     bool after_first)
{
	if (len > sizeof(s->ka) || every_ms <= 0)
		return;
	memcpy(s->ka, msg, len);
	s->ka_len = len;
	s->ka_ms = every_ms;
	s->ka_after_first = after_first;
}

void api_stream_keepalive(struct api_stream *s, const void *msg, size_t len, int every_ms)
{
	stream_keepalive(s, msg, len, every_ms, true);
}

void api_stream_kill(struct api_stream *s)
{
	stream_cancel(s);
}

/* The transport's side: the next lines, until the job closed its end. */
static ssize_t stream_read(void *ctx, char *buf, size_t max, int client_fd)
{
	struct api_stream *s = ctx;
	for (;;) {
		struct pollfd p[3] = {
			{.fd = s->sp[0], .events = POLLIN},
			{.fd = client_fd, .events = POLLRDHUP},
			{.fd = s->stop_seen ? -1 : s->a->stop_pipe[0], .events = POLLIN},
		};
		bool ka = s->ka_len && (s->got_any || !s->ka_after_first);
		int n = poll(p, 3, ka ? s->ka_ms : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) { /* silence: the keepalive (between whole messages: none is half sent) */
			if (max < s->ka_len)
				continue;
			memcpy(buf, s->ka, s->ka_len);
			return (ssize_t)s->ka_len;
		}
		if (n < 0 || (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return API_STREAM_ERROR; /* the client is gone: free cancels */
		if (p[2].revents) { /* the server stops: cancel, then end as the job ends */
			s->stop_seen = true;
			stream_cancel(s);
		}
		if (!p[0].revents)
			continue;
		ssize_t got = read(s->sp[0], buf, max);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		s->got_any = s->got_any || got > 0;
		return got > 0 ? got : got == 0 ? API_STREAM_END : API_STREAM_ERROR;
	}
}

static void stream_free(void *ctx)
{
	struct api_stream *s = ctx;
	if (s->running && s->outlive && stream_orphan(s))
		return; /* its thread frees it */
	if (s->running) {
		stream_cancel(s);
		sc_closep(&s->sp[0]); /* a job blocked on a full pair gets EPIPE */
		pthread_join(s->th, NULL);
	}
	stream_close_fds(s);
	s->free_fn(s->ctx);
	free(s);
}

void api_stream_start(struct api *a, struct api_response *resp, uint64_t limit,
		      void (*run)(struct api_stream *s, void *ctx), void (*free_fn)(void *ctx),
		      void *ctx)
{
	struct api_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		api_response_error(resp, 500, "out of memory");
		free_fn(ctx);
		return;
	}
	*s = (struct api_stream){.a = a, .sp = {-1, -1}, .pc = {-1, -1}, .limit = limit,
				 .run = run, .free_fn = free_fn, .ctx = ctx};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s->sp) < 0 ||
	    pipe2(s->pc, O_CLOEXEC) < 0) {
		api_errorf(resp, 500, "stream: %s", strerror(errno));
		stream_free(s);
		return;
	}
	int e = pthread_create(&s->th, NULL, stream_main, s);
	if (e) {
		api_errorf(resp, 500, "thread: %s", strerror(e));
		stream_free(s);
		return;
	}
	s->running = true;
	static const char KA[] = "{\"type\":\"keepalive\"}\n";
	stream_keepalive(s, KA, sizeof(KA) - 1, a->stream_keepalive_ms, false);
	resp->status = 200;
	resp->content_type = "application/x-ndjson";
	resp->stream = stream_read;
	resp->stream_free = stream_free;
	resp->stream_ctx = s;
}

void *api_job_alloc(size_t size, struct api_response *resp)
{
	void *job = calloc(1, size);
	if (!job)
		api_response_error(resp, 500, "out of memory");
	return job;
}

void api_stream_begin(struct api *a, const struct api_request *req, struct api_response *resp,
		      uint64_t limit, const struct api_job_ops *ops, void *ctx)
{
	if (api_wants_ndjson(req)) {
		api_stream_start(a, resp, limit, ops->stream, ops->free, ctx);
		return; /* the stream owns ctx */
	}
	ops->whole(ctx, resp);
	ops->free(ctx);
}

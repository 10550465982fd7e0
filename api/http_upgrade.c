/* The HTTP transport's protocol switches (a WebSocket through a cell's
 * port proxy, api/proxy.c): the 101 answer, then a thread of its own
 * relays bytes both ways between the client's socket and the api's fd.
 * A thread, not the connection's: with TLS, MHD forwards the client's
 * bytes only after the upgrade handler returns. The relay ends when both
 * sides have ended, when either fails, or when the server stops (drain
 * waits for every relay before it stops MHD, which must not free a
 * connection a relay still uses). */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http_priv.h"

#define UPGRADE_BUF 65536
#define UPGRADE_POLL_MS 250 /* how often a relay looks at s->stopping */
#define UPGRADE_PRE_MAX (1u << 20)

struct upgrade_box {
	struct server *s;
	int fd; /* the api's end (upgrade_fd) */
	char *pre;
	size_t pre_len;
	void (*done)(void *ctx);
	void *done_ctx;
	struct upgrade_box **owner; /* the request's: NULL once claimed */
	bool *switched;             /* the request's: the switch happened */
	/* the handler's */
	MHD_socket sock;
	struct MHD_UpgradeResponseHandle *urh;
};

static void box_free(struct upgrade_box *b)
{
	if (b->done)
		b->done(b->done_ctx);
	free(b->pre);
	free(b);
}

void api_http_upgrade_abandon(struct upgrade_box *b)
{
	if (b)
		box_free(b);
}

/* One direction's step: what from has, to to. false: it ended (to is
 * half-closed) or failed (*failed). */
static bool pass_on(const struct server *s, int from, int to, char *buf, bool *failed)
{
	ssize_t n = recv(from, buf, UPGRADE_BUF, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	if (n > 0 && api_send_all(to, buf, (size_t)n, 0, &s->stopping))
		return true;
	*failed = n != 0;
	(void)shutdown(to, SHUT_WR);
	return false;
}

static void relay(struct upgrade_box *b, char *up, char *down)
{
	const struct server *s = b->s;
	if (b->pre_len && !api_send_all(b->sock, b->pre, b->pre_len, 0, &s->stopping))
		return;
	bool in_open = true, out_open = true, failed = false;
	while ((in_open || out_open) && !failed && !atomic_load(&s->stopping)) {
		struct pollfd p[2] = {{.fd = in_open ? b->sock : -1, .events = POLLIN},
				      {.fd = out_open ? b->fd : -1, .events = POLLIN}};
		if (poll(p, 2, UPGRADE_POLL_MS) < 0 && errno != EINTR)
			return;
		if (in_open && p[0].revents)
			in_open = pass_on(s, b->sock, b->fd, up, &failed);
		if (out_open && p[1].revents && !failed)
			out_open = pass_on(s, b->fd, b->sock, down, &failed);
	}
}

static void *relay_main(void *arg)
{
	struct upgrade_box *b = arg;
	struct server *s = b->s;
	char *up = malloc(UPGRADE_BUF), *down = malloc(UPGRADE_BUF);
	if (up && down)
		relay(b, up, down);
	free(up);
	free(down);
	api_mhd.upgrade_action(b->urh, MHD_UPGRADE_ACTION_CLOSE);
	box_free(b);
	atomic_fetch_sub(&s->upgrades, 1);
	return NULL;
}

/* MHD's upgrade handler, on the connection's thread, after the 101 went
 * out: the box is the relay's from now on. */
static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls,
		       const char *extra_in, size_t extra_in_size, MHD_socket sock,
		       struct MHD_UpgradeResponseHandle *urh)
{
	(void)conn;
	(void)con_cls;
	struct upgrade_box *b = cls;
	*b->owner = NULL;
	*b->switched = true;
	b->sock = sock;
	b->urh = urh;
	/* what the client sent after its head: the cell's first */
	if (extra_in_size && !api_send_all(b->fd, extra_in, extra_in_size, 0, &b->s->stopping)) {
		api_mhd.upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		box_free(b);
		return;
	}
	pthread_attr_t at;
	pthread_t t;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	atomic_fetch_add(&b->s->upgrades, 1);
	if (pthread_create(&t, &at, relay_main, b) != 0) {
		atomic_fetch_sub(&b->s->upgrades, 1);
		api_mhd.upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		box_free(b);
	}
	pthread_attr_destroy(&at);
}

struct MHD_Response *api_http_upgrade_response(struct server *s, struct api_response *r,
					       struct upgrade_box **owner, bool *switched)
{
	size_t pre = r->upgrade_pre_len > UPGRADE_PRE_MAX ? 0 : r->upgrade_pre_len;
	struct upgrade_box *b = calloc(1, sizeof(*b));
	char *pre_copy = pre ? malloc(pre) : NULL;
	if (!b || (pre && !pre_copy)) {
		free(b);
		free(pre_copy);
		return NULL;
	}
	if (pre)
		memcpy(pre_copy, r->upgrade_pre, pre);
	*b = (struct upgrade_box){.s = s, .fd = r->upgrade_fd, .pre = pre_copy, .pre_len = pre,
				  .done = r->upgrade_done, .done_ctx = r->upgrade_ctx,
				  .owner = owner, .switched = switched, .sock = -1};
	struct MHD_Response *mr = api_mhd.response_for_upgrade(on_upgrade, b);
	if (!mr) {
		free(pre_copy);
		free(b);
		return NULL;
	}
	r->upgrade = false; /* the box calls upgrade_done */
	*owner = b;
	return mr;
}

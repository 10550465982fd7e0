/* The HTTP transport's parts (private to api/http*.c): libmicrohttpd's
 * functions (resolved at run time), the listener, the requests, and the
 * connection table that enforces deadlines and per-peer room. */
#pragma once
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "api_priv.h"

struct mhd_dl {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_quiesce_daemon) *quiesce_daemon;
	__typeof__(MHD_lookup_connection_value) *lookup;
	__typeof__(MHD_get_connection_values) *get_values;
	__typeof__(MHD_create_response_from_buffer) *response_from_buffer;
	__typeof__(MHD_add_response_header) *add_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
	__typeof__(MHD_get_connection_info) *connection_info;
	__typeof__(MHD_create_response_from_callback) *response_from_callback;
	__typeof__(MHD_create_response_for_upgrade) *response_for_upgrade;
	__typeof__(MHD_upgrade_action) *upgrade_action;
};
/* Filled once by sc_dl_load in api_http_serve, read-only after. */
extern struct mhd_dl api_mhd;

/* ---- the listener (http_listen.c) ---- */

struct listen_addr {
	bool unix_socket;
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
};
int api_http_parse_listen(const char *s, struct listen_addr *la, struct sc_err *err);
/* "127.0.0.1:5555", "[::1]:5555" or "unix". */
void api_http_addr_string(const struct sockaddr *sa, char *out, size_t size);
/* A listening socket: a unix socket of mode 0600 (a stale one is replaced,
 * a live one refused), or TCP (port 0: the kernel picks); its address as
 * shown to the user into shown. */
#define HTTP_LISTEN_BACKLOG 128
int api_http_open_listener(const struct listen_addr *la, char *shown, size_t shown_size,
			   struct sc_err *err);

/* ---- requests (http_request.c) ---- */

/* MHD's access handler and completion notification (cls: the server). */
struct server;
enum MHD_Result api_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **con_cls);
void api_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			   enum MHD_RequestTerminationCode toe);

/* ---- the connection table (http_conns.c) ---- */

#define HTTP_REPORT_EVERY 10.0 /* seconds between the slow-client summaries */
#define HTTP_MHD_LOG_MAX 5     /* MHD's messages logged per HTTP_REPORT_EVERY */

enum conn_phase { CONN_HEAD, CONN_BODY, CONN_BUSY };

/* One connection, from MHD's STARTED notification to its CLOSED one. */
struct conn {
	struct conn *prev, *next;
	int fd;
	bool has_peer;
	unsigned char peer[16];  /* IPv4 address, or IPv6 /64 (8 bytes) */
	enum conn_phase phase;
	double since;            /* when the phase began */
	double deadline;         /* 0: none */
	bool cut;                /* shut down by us, closing */
	bool over;               /* accepted over a limit: 503 at its head */
};

struct server {
	struct api *a;
	const struct api_http_opts *o;
	const struct sc_log *log;
	size_t per_peer;
	atomic_bool stopping;
	atomic_size_t body_bytes; /* request bodies held (their buffers) */
	size_t body_budget;
	pthread_mutex_t mu;       /* guards the table and the counts below */
	struct conn *conns;
	size_t live;              /* entries not cut */
	bool accept_over;         /* on_accept's word for the next STARTED */
	size_t cut_head, cut_body, evicted, refused, mhd_logged, mhd_dropped;
	double report_at;
	atomic_size_t upgrades;   /* protocol switches being relayed */
};

/* MHD's callbacks (cls: the server). */
enum MHD_Result api_http_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void api_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			    enum MHD_ConnectionNotificationCode code);
void api_http_on_mhd_log(void *cls, const char *fmt, va_list ap);
/* The connection's phase is now `phase`, to end within limit_s (0: no
 * limit); true when it was accepted over a limit. */
bool api_http_conn_phase(struct server *s, struct MHD_Connection *conn, enum conn_phase phase,
			 double limit_s);
/* ---- protocol switches (http_upgrade.c) ---- */

struct upgrade_box;
/* The 101 answer of r (r->upgrade); the relay's box goes into *owner
 * until MHD's upgrade handler claims it (then *owner = NULL and *switched
 * = true); NULL when out of memory (r is left as it was). */
struct MHD_Response *api_http_upgrade_response(struct server *s, struct api_response *r,
					       struct upgrade_box **owner, bool *switched);
/* A box whose switch never happened (the client went away first). */
void api_http_upgrade_abandon(struct upgrade_box *b);

/* From the main loop, a few times a second: drop the connections past
 * their deadline; now and then, one line about what was dropped. */
void api_http_conns_tick(struct server *s);

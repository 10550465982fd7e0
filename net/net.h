/* sandcell net: egress by allowlist. The proxy that serves a cell's
 * 127.0.0.1:3128 from the host side, its rules and its decision log.
 *
 * The cell has only `lo`; its HTTP(S)_PROXY points at a socket whose other
 * end is served here, outside the cell. For every connection:
 *   1. the request head is parsed (CONNECT host:port, or an absolute-URI
 *      plain HTTP request whose Host header equals the URL's host);
 *   2. the name must match an allow entry - before any DNS lookup;
 *   3. a name in `hosts` goes to its mapped address (never looked up);
 *      any other name is resolved on the host and refused if any address
 *      it has is not public (loopback, private, link-local, ...);
 *   4. for CONNECT, the TLS ClientHello's SNI must equal the CONNECT host
 *      (checked before the proxy connects anywhere);
 *   5. the proxy connects to exactly the address it checked and relays;
 *   6. the decision is one JSON line in the log.
 *
 * Everything here is pure except net_proxy_*; all functions are
 * thread-safe (no global state). */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../common/netname.h"
#include "../common/sc.h"

#define NET_NAME_MAX SC_NET_NAME_MAX
#define NET_ALLOW_MAX 64
#define NET_HOSTS_MAX 32
#define NET_HEAD_MAX 8192       /* a request head, CRLFCRLF included */
#define NET_HELLO_MAX (16384 + 5) /* one TLS record */
#define NET_PROXY_PORT 3128

/* ---- rules ------------------------------------------------------------- */

struct net_host {
	char name[NET_NAME_MAX + 1]; /* normalised */
	int family;                  /* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

struct net_rules {
	struct sc_net_allow allow[NET_ALLOW_MAX];
	size_t nallow;
	struct net_host hosts[NET_HOSTS_MAX];
	size_t nhosts;
};

void net_rules_init(struct net_rules *r);
/* Add an allow entry (see common/netname.h). Errors are one line without
 * a field name; the caller puts the field in front (sc_err_wrap). */
int net_rules_allow(struct net_rules *r, const char *entry, struct sc_err *err);
/* Map a name to a trusted address (IPv4 or IPv6 literal). A name mapped
 * twice keeps the last address. */
int net_rules_host(struct net_rules *r, const char *name, const char *addr,
		   struct sc_err *err);
/* "NAME=ADDR" (the --net-host form). */
int net_rules_host_arg(struct net_rules *r, const char *arg, struct sc_err *err);
/* Does an entry allow the normalised name on port? */
bool net_rules_allows(const struct net_rules *r, const char *name, uint16_t port);
/* The hosts entry for a normalised name, NULL when none. */
const struct net_host *net_rules_find_host(const struct net_rules *r, const char *name);

/* ---- addresses --------------------------------------------------------- */

/* NULL when the address is public (globally routable unicast); otherwise
 * what it is: "loopback", "private", "link-local", "shared (CGNAT)",
 * "multicast", "unspecified", "reserved", "documentation", "benchmarking",
 * "unique-local", "site-local", "broadcast", "this network", "IETF",
 * "6to4/Teredo", "v4-mapped <class>"... (static strings).
 * sa is AF_INET or AF_INET6; anything else is "unknown family". */
const char *net_addr_class(const struct sockaddr *sa);
/* The same for raw bytes (4 or 16 by family). */
const char *net_addr_class_raw(int family, const uint8_t *addr);

/* ---- request heads ----------------------------------------------------- */

enum net_req_kind { NET_REQ_CONNECT = 1, NET_REQ_HTTP = 2 };

struct net_request {
	enum net_req_kind kind;
	char host[NET_NAME_MAX + 1]; /* normalised */
	uint16_t port;
	size_t head_len;     /* bytes of the head in the input, CRLFCRLF included */
	uint64_t body_len;   /* plain HTTP: Content-Length (0 when none) */
	/* plain HTTP: the head to send upstream - origin-form request line,
	 * hop-by-hop and proxy headers dropped, "Connection: close" added */
	char fwd[NET_HEAD_MAX + 64];
	size_t fwd_len;
};

/* Parse a request head from buf[0..len). Returns 1 when complete (req
 * filled), 0 when more bytes are needed (len < NET_HEAD_MAX and no end
 * yet), -1 when the head is refused: *why says why, and req->host holds
 * what the client asked for ("" when no target was parsed; raw bytes, not
 * a valid name, when the name itself was refused), for the log only. */
int net_parse_head(const char *buf, size_t len, struct net_request *req,
		   const char **why);

/* ---- TLS ClientHello --------------------------------------------------- */

/* Extract the server_name from a TLS ClientHello that starts buf (one
 * handshake record). Returns 1 with the normalised name in out, 0 when more
 * bytes are needed, -1 when it is not a ClientHello, is malformed, is
 * fragmented over records, or carries no (or more than one) host_name. */
int net_tls_sni(const uint8_t *buf, size_t len, char out[NET_NAME_MAX + 1],
		const char **why);

/* ---- decisions --------------------------------------------------------- */

/* A connection is logged when it is decided (allow, deny, error), so a
 * summary taken when a command ends is exact; an allowed one gets a second
 * line, "close", with its byte counts when it ends. */
enum net_verdict { NET_ALLOW = 1, NET_DENY = 2, NET_ERROR = 3, NET_CLOSE = 4 };

struct net_decision {
	double time;          /* seconds since the epoch */
	const char *cell;     /* may be NULL */
	const char *host;     /* what the client asked for (may be any bytes) */
	uint16_t port;
	enum net_verdict verdict;
	const char *reason;
	uint64_t up, down;    /* bytes cell->remote, remote->cell */
};

/* One JSON line ending in '\n' into buf: {"time":..,"cell":..,"host":..,
 * "port":..,"verdict":"allow|deny|error|close","reason":..,"up":..,"down":..}.
 * Strings are escaped and cut to 256 bytes each. Returns the length, or -1
 * when buf is too small (1024 bytes are always enough). */
int net_decision_json(const struct net_decision *d, char *buf, size_t size);

/* ---- the proxy --------------------------------------------------------- */

#define NET_DENIED_MAX 16

struct net_summary {
	uint64_t allowed;
	uint64_t denied;    /* refused or failed */
	size_t ndenied;     /* entries kept below (first NET_DENIED_MAX) */
	struct {
		char host[NET_NAME_MAX + 1];
		char reason[96];
	} denied_list[NET_DENIED_MAX];
};

/* Count one decision (a "close" counts nothing); "allow|deny|error|close"
 * back to a verdict (0: none of them). */
void net_summary_add(struct net_summary *s, enum net_verdict v, const char *host,
		     const char *reason);
enum net_verdict net_verdict_of(const char *name);

/* The proxy's defaults, for a config member left 0. */
#define NET_PROXY_MAX_CONNS 64
#define NET_HEAD_TIMEOUT_MS 10000     /* 10 s */
#define NET_IDLE_TIMEOUT_MS 300000    /* 300 s */
#define NET_CONNECT_TIMEOUT_MS 10000  /* 10 s */
#define NET_LOG_MAX (16u << 20)       /* 16 MiB */

struct net_proxy_config {
	const struct net_rules *rules; /* read only, must outlive the proxy */
	const char *cell;              /* name for the log, may be NULL */
	int listen_fd;                 /* a listening stream socket */
	int log_fd;                    /* decisions (O_APPEND), -1: none */
	int stop_fd;                   /* readable (and staying so) = stop */
	unsigned max_conns;            /* 0: NET_PROXY_MAX_CONNS */
	int head_timeout_ms;           /* request head and ClientHello;
					* 0: NET_HEAD_TIMEOUT_MS */
	int idle_timeout_ms;           /* a relay with no traffic;
					* 0: NET_IDLE_TIMEOUT_MS */
	int connect_timeout_ms;        /* 0: NET_CONNECT_TIMEOUT_MS */
	uint64_t log_max;              /* bytes of log lines written, then one
					* "decision log full" line and no more;
					* 0: NET_LOG_MAX */
	const struct sc_log *log;      /* warnings; may be NULL */
};

struct net_proxy;

/* Serve until stop_fd becomes readable: accept, check, relay, log, one
 * thread per connection (at most max_conns; beyond that a connection is
 * refused with 503 and logged). Returns when every connection thread has
 * ended. The fds stay the caller's. */
int net_proxy_serve(const struct net_proxy_config *cfg, struct net_summary *sum,
		    struct sc_err *err);

/* The summary as JSON: {"allowed":N,"denied":[{"host":..,"reason":..}]}
 * into buf; returns the length or -1 when it does not fit. */
int net_summary_json(const struct net_summary *s, char *buf, size_t size);

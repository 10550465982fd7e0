/* The one HTTP client, over the dlopen'ed libcurl (common/curl_dl.h: never
 * linked, loaded by the first sc_http_init). One request at a time per
 * client; the connection is kept between requests. GET into memory or into
 * an fd (resuming with a Range request), POST or PUT of a body from memory
 * or an fd, HEAD, bounded responses,
 * the response headers callers act on, and an abort callback.
 *
 * Thread-safety: a struct sc_http belongs to one thread at a time; any
 * number of clients may run at once in different threads. No state is
 * shared between clients beyond libcurl's one-time global init. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sc.h"

#define SC_HTTP_MAX_BODY (64U << 20) /* default bound of a body kept in memory */
#define SC_HTTP_MAX_HEADERS 16       /* request headers */

struct curl_dl;

struct sc_http {
	const struct curl_dl *curl;
	void *h; /* CURL *: callers need no libcurl header */
	/* Called often from inside a transfer (libcurl's progress callback, in
	 * the thread that runs the request): returning true aborts it
	 * (SC_HTTP_ABORTED). It must only read state, e.g. an atomic flag
	 * another thread raises. NULL: never. */
	bool (*should_abort)(void *ctx);
	void *abort_ctx;
};

/* Where a GET's 2xx body goes instead of memory. */
struct sc_http_download {
	int fd;          /* written with pwrite at the file offsets below */
	uint64_t offset; /* bytes already in fd: only the rest is asked for
			  * (Range); a server that sends the whole body (200)
			  * makes the client truncate fd and start at 0 */
	uint64_t limit;  /* the file may not grow past this many bytes */
	/* told about every chunk after it is written (e.g. to hash it); a
	 * chunk at offset 0 starts the file over */
	void (*on_data)(void *ctx, uint64_t offset, const void *data, size_t n);
	void *ctx;
};

/* A request body read from an fd (a PUT of a file), from its offset 0 each
 * time the request is sent. */
struct sc_http_upload {
	int fd;
	uint64_t size;
};

struct sc_http_req {
	const char *url;
	const char *method;         /* NULL: POST with a body, else GET; or
				     * "HEAD" (no body), "PUT", ... */
	const char *const *headers; /* "Name: value" lines, NULL-terminated, or NULL */
	const char *body;           /* send this when non-NULL (POST unless method) */
	size_t body_len;
	const struct sc_http_upload *upload; /* else send this (PUT unless method) */
	bool https_only;            /* else http and https */
	unsigned max_redirects;     /* 0: redirects are not followed */
	const char *user_agent;     /* NULL: "sandcell" */
	double timeout_s;           /* whole request; 0: none */
	double connect_timeout_s;   /* 0: 30 s (never above timeout_s) */
	unsigned low_speed_time_s;  /* give up below 1 byte/s for this long; 0: never */
	bool keepalive;             /* TCP keepalive probes */
	bool compressed;            /* accept any encoding libcurl can decode */
	size_t max_body;            /* a body kept in memory; 0: SC_HTTP_MAX_BODY */
	const struct sc_http_download *download; /* NULL: the body goes to memory */
};

enum sc_http_failure {
	SC_HTTP_OK = 0,    /* a response arrived (any status) */
	SC_HTTP_SETUP,     /* the request could not be set up (libcurl, memory) */
	SC_HTTP_CONNECT,   /* could not resolve / connect / TLS */
	SC_HTTP_TIMEOUT,   /* no complete response in time */
	SC_HTTP_TRANSFER,  /* connection broke mid-way, empty reply, bad protocol, ... */
	SC_HTTP_TOO_LARGE, /* body above max_body, or a download above its limit */
	SC_HTTP_WRITE,     /* the download could not be written, or the upload
			    * read (errno in err) */
	SC_HTTP_ABORTED,   /* should_abort said so */
};

struct sc_http_resp {
	enum sc_http_failure failure;
	long status;          /* of the last response seen, 0 before any */
	char *body;           /* memory body, NUL-terminated ("" when empty); with a
			       * download, the body of a non-2xx response */
	size_t len;
	uint64_t file_size;   /* download: the file's size afterwards */
	double latency_s;
	const char *reason;   /* libcurl's short reason for a failure, or "" */
	/* Headers of the last response ("" when absent; a value too long for
	 * the field is cut, except Retry-After's, which are dropped). */
	char content_type[128];
	char www_authenticate[4096];
	char retry_after[96];
	char retry_after_ms[96];
	char location[2048];   /* of a 3xx the client did not follow, or of a 201/202 */
	bool location_cut;     /* the Location was longer than the field */
};

/* Load libcurl (first use in the process) and make a client. */
int sc_http_init(struct sc_http *c, struct sc_err *err);
void sc_http_free(struct sc_http *c);

/* One request. Returns 0 when a whole response arrived, whatever its
 * status. Else -1 with resp->failure saying what kind of failure and err
 * why (libcurl's message; "response body larger than ..."; the write's
 * errno); resp->status and resp->body keep what had arrived. resp must be
 * freed with sc_http_resp_free either way. */
int sc_http_perform(struct sc_http *c, const struct sc_http_req *req, struct sc_http_resp *resp,
		    struct sc_err *err);
void sc_http_resp_free(struct sc_http_resp *resp);

/* The value of header `name` in one raw header line ("Name: value\r\n",
 * name matched case-insensitively), blanks trimmed, into out. Returns the
 * value's full length (it was cut when >= outsize), or -1 when the line is
 * another header. Pure; exposed for tests. */
ssize_t sc_http_header_value(const char *line, size_t len, const char *name, char *out,
			     size_t outsize);

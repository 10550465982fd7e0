/* One HTTP client per episode, over the dlopen'ed libcurl: JSON POSTs on a
 * reused connection, bounded response bodies, the headers that matter for
 * retries, and a flag that aborts a transfer in flight. */
#pragma once
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/curl_dl.h"
#include "../common/sc.h"

#define HTTP_MAX_BODY (64U << 20)

struct http_client {
	const struct curl_dl *curl;
	CURL *h;
	const atomic_bool *abort_flag; /* raised: give up now */
};

enum http_failure {
	HTTP_OK = 0,       /* a response arrived (any status) */
	HTTP_CONNECT,      /* could not connect / resolve / TLS */
	HTTP_TIMEOUT,      /* no complete response in time */
	HTTP_TRANSFER,     /* connection broke mid-way, empty reply, ... */
	HTTP_TOO_LARGE,    /* body above HTTP_MAX_BODY */
	HTTP_ABORTED,      /* abort_flag was raised */
};

struct http_response {
	enum http_failure failure;
	long status;
	char *body;            /* NUL-terminated */
	size_t len;
	double retry_after_s;  /* from Retry-After / retry-after-ms, -1 none */
	double latency_s;
	char error[CURL_ERROR_SIZE + 64]; /* with a failure */
};

int http_client_init(struct http_client *c, struct sc_err *err);
void http_client_free(struct http_client *c);

/* POST body to url with the given extra headers. Returns 0 with resp filled
 * (check resp->failure, then resp->status); -1 only when curl could not be
 * set up at all. */
int http_post(struct http_client *c, const char *url, const struct curl_slist *headers,
	      const char *body, size_t len, double timeout_s, struct http_response *resp,
	      struct sc_err *err);
void http_response_free(struct http_response *resp);

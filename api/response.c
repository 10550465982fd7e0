/* Responses: bodies, headers, errors ({"detail": ...}), JSON texts built
 * with stdio, and the events of a streamed answer. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "api_priv.h"

void api_response_free(struct api_response *resp)
{
	free(resp->body);
	resp->body = NULL;
	if (resp->stream && resp->stream_free)
		resp->stream_free(resp->stream_ctx);
	resp->stream = NULL;
	if (resp->upgrade && resp->upgrade_done)
		resp->upgrade_done(resp->upgrade_ctx);
	resp->upgrade = false;
}

void api_set_body(struct api_response *resp, int status, const char *type, char *body,
		  size_t len)
{
	free(resp->body);
	resp->status = status;
	resp->content_type = type;
	resp->body = body;
	resp->body_len = len;
}

void api_add_header(struct api_response *resp, const char *name, const char *value)
{
	if (resp->nheaders < SC_ARRAY_LEN(resp->headers))
		resp->headers[resp->nheaders++] = (struct api_header){name, value};
}

void api_response_error(struct api_response *resp, int status, const char *detail)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		api_set_body(resp, status, "application/json", NULL, 0);
		return;
	}
	fputs("{\"detail\":", f);
	api_json_string(f, detail, strlen(detail));
	fputs("}\n", f);
	fclose(f);
	api_set_body(resp, status, "application/json", buf, len);
	if (status == 503 || status == 504) {
		api_add_header(resp, "Retry-After", "1");
	} else if (status == 401) {
		api_add_header(resp, "WWW-Authenticate", "Bearer");
	}
}

void api_errorf(struct api_response *resp, int status, const char *fmt, ...)
{
	char msg[SC_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_response_error(resp, status, msg);
}

void api_refuse(struct api_response *resp, const struct api_bad *bad)
{
	api_response_error(resp, bad->status ? bad->status : 422, bad->msg);
}

FILE *api_jb_open(struct api_jbuf *j)
{
	j->buf = NULL;
	j->len = 0;
	j->f = open_memstream(&j->buf, &j->len);
	return j->f;
}

char *api_jb_close(struct api_jbuf *j)
{
	bool bad = !j->f || ferror(j->f);
	if (j->f && fclose(j->f) != 0)
		bad = true;
	j->f = NULL;
	if (bad) {
		free(j->buf);
		j->buf = NULL;
	}
	return j->buf;
}

void api_jb_send(struct api_jbuf *j, struct api_response *resp, int status)
{
	if (j->f)
		fputc('\n', j->f);
	char *s = api_jb_close(j);
	if (!s)
		api_response_error(resp, 500, "out of memory");
	else
		api_set_body(resp, status, "application/json", s, j->len);
}

void api_put_output_event(FILE *f, int k, const char *d, size_t n)
{
	fprintf(f, "{\"type\":\"%s\",\"data\":", k ? "stderr" : "stdout");
	api_json_string(f, d, n);
	fputc('}', f);
}

void api_put_error_event(FILE *f, const char *msg)
{
	fputs("{\"type\":\"error\",\"detail\":", f);
	api_json_string(f, msg, strlen(msg));
	fputc('}', f);
}

/* libFuzzer target for the request layer (api/request.c), which every
 * protocol's input goes through: the input is a cell path, a newline, and
 * a request body. The path either becomes an absolute cell path of no ".."
 * component within its bound, or is refused; the body, a JSON object or
 * not, is put through every parser (code of each kind, exec in both
 * styles, a new cell), and each either fills its struct within the limits
 * (timeouts in (0, cap], argv and env NULL-ended, paths absolute) or
 * refuses with a status and one line naming what it refused. The body is
 * also decoded as base64, and what decodes encodes and decodes back the
 * same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/request.h"
#include "common/base64.h"
#include "fuzz_util.h"

static const struct api_limits LIM = {
	.max_timeout_s = 300, .memory = 1ull << 30, .output = 1 << 20, .image = "host"};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_request: %s: %.300s\n", what, detail ? detail : "");
	abort();
}

static bool has_dotdot(const char *p)
{
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return true;
		s += n;
		s += strspn(s, "/");
	}
	return false;
}

static void check_path(const char *p)
{
	if (p[0] != '/' || strlen(p) >= API_CELL_PATH || has_dotdot(p))
		die("a bad cell path got through", p);
}

static void check_timeout(double t)
{
	if (!(t > 0) || t > LIM.max_timeout_s)
		die("a timeout out of bounds", NULL);
}

static void check_refusal(const struct api_bad *bad)
{
	if ((bad->status != 413 && bad->status != 422 && bad->status != 500) || !bad->msg[0] ||
	    strchr(bad->msg, '\n'))
		die("a refusal without a status or one line", bad->msg);
}

static void parse_all(const cJSON *j)
{
	static const enum api_run_kind KINDS[] = {API_RUN_SANDBOXFUSION, API_RUN_CELL,
						  API_RUN_SESSION};
	struct api_bad bad;
	for (size_t k = 0; k < SC_ARRAY_LEN(KINDS); k++) {
		struct api_run r;
		memset(&bad, 0, sizeof(bad));
		if (api_parse_run(j, KINDS[k], &LIM, NULL, &r, &bad) < 0) {
			check_refusal(&bad);
			continue;
		}
		if (!r.lang || !r.run.source || r.run.source_len != strlen(r.run.source) ||
		    r.run.nfetch > LANG_MAX_FETCH || r.run.nlibraries > LANG_MAX_LIBRARIES ||
		    (KINDS[k] == API_RUN_SESSION && strcmp(r.lang->name, "python")))
			die("a parsed run out of bounds", NULL);
		check_timeout(r.run.run_timeout_s);
		check_timeout(r.run.compile_timeout_s);
		check_timeout(r.session.timeout_s);
		if (r.run.workdir)
			check_path(r.run.workdir);
	}
	const struct api_exec_style *styles[] = {&API_EXEC_HTTP, &API_EXEC_MCP};
	for (size_t s = 0; s < SC_ARRAY_LEN(styles); s++) {
		struct api_exec x;
		memset(&bad, 0, sizeof(bad));
		if (api_parse_exec(j, styles[s], &LIM, &x, &bad) < 0) {
			check_refusal(&bad);
			continue;
		}
		size_t n = 0;
		while (n <= API_MAX_ARGV && x.req.argv[n])
			n++;
		if (!n || n > API_MAX_ARGV || x.nenv > CELL_MAX_ENV ||
		    (x.req.env && x.req.env[x.nenv]))
			die("a parsed exec out of bounds", NULL);
		for (size_t i = 0; i < x.nenv; i++)
			if (!strchr(x.req.env[i], '='))
				die("an env entry without '='", x.req.env[i]);
		check_timeout(x.req.timeout_s);
		if (x.req.cwd)
			check_path(x.req.cwd);
		api_exec_free(&x);
	}
	struct api_cell_new c;
	if (api_parse_cell_new(j, &LIM, 600, &c, &bad) < 0)
		check_refusal(&bad);
	else if (!(c.idle_s > 0) || c.idle_s > 600)
		die("an idle timeout out of bounds", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t plen = nl ? (size_t)(nl - data) : size;
	char *path = fuzz_cstr(data, plen), out[API_CELL_PATH];
	if (api_cell_path(path, out, sizeof(out)))
		check_path(out);
	free(path);
	const char *body = nl ? (const char *)nl + 1 : "";
	size_t blen = nl ? size - plen - 1 : 0;

	struct api_bad bad;
	cJSON *j = api_req_object(body, blen, true, &bad);
	if (j)
		parse_all(j);
	else
		check_refusal(&bad);
	cJSON_Delete(j);

	char *dec, *dec2, *enc;
	size_t dlen, d2len, elen;
	if (sc_base64_decode(body, blen, &dec, &dlen) == 0) {
		if (dlen > blen / 4 * 3 + 2)
			die("base64 decoded to more than it can", NULL);
		if (!(enc = sc_base64_encode(dec, dlen, &elen)))
			abort();
		if (sc_base64_decode(enc, elen, &dec2, &d2len) < 0 || d2len != dlen ||
		    memcmp(dec, dec2, dlen))
			die("base64 round trip", enc);
		free(dec2);
		free(enc);
		free(dec);
	}
	return 0;
}

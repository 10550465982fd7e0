/* The server's metrics registry and its rendering (api/metrics.c), the
 * route templates they are labelled by (api/routes.c), and the W3C trace
 * context reader (api/trace.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_priv.h"

#define GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void test_trace_parse(void **state)
{
	(void)state;
	struct api_trace t;
	assert_true(api_trace_parse(GOOD, &t));
	assert_string_equal(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(t.parent_id, "00f067aa0ba902b7");
	assert_string_equal(t.flags, "01");
	static const char *const bad[] = {
		NULL,
		"",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* version */
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero parent */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* upper case */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",  /* flags */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* trailing */
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  /* dash moved */
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++)
		assert_false(api_trace_parse(bad[i], &t));
}

static void test_trace_begin(void **state)
{
	(void)state;
	struct api_trace t, u;
	assert_true(api_trace_begin(GOOD, &t));
	assert_true(t.given);
	assert_string_equal(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_int_equal(strlen(t.traceparent), API_TRACEPARENT_LEN);
	assert_string_not_equal(t.span_id, "00f067aa0ba902b7");
	/* what is handed on is itself a valid traceparent of the same trace */
	assert_true(api_trace_parse(t.traceparent, &u));
	assert_string_equal(u.trace_id, t.trace_id);
	assert_string_equal(u.parent_id, t.span_id);
	/* none, or a bad one: a new trace */
	assert_true(api_trace_begin("garbage", &t));
	assert_false(t.given);
	assert_true(api_trace_parse(t.traceparent, &u));
	assert_true(api_trace_begin(NULL, &u));
	assert_string_not_equal(u.trace_id, t.trace_id);
}

static void test_route_index(void **state)
{
	(void)state;
	const char *m, *p;
	api_route_label(api_route_index("POST", "/cells/0123456789abcdef/exec"), &m, &p);
	assert_string_equal(m, "POST");
	assert_string_equal(p, "/cells/{id}/exec");
	api_route_label(api_route_index("POST", "/run_code"), &m, &p);
	assert_string_equal(p, "/run_code");
	size_t unmatched = api_route_count() - 1;
	assert_int_equal(api_route_index("GET", "/etc/passwd"), unmatched);
	assert_int_equal(api_route_index("POST", "/cells/NOTANID/exec"), unmatched);
	assert_int_equal(api_route_index("PATCH", "/run_code"), unmatched);
	api_route_label(unmatched, &m, &p);
	assert_string_equal(p, "unmatched");
	/* a scrape takes no concurrency slot; other routes do */
	assert_true(api_route_is_ungated("GET", "/metrics"));
	assert_false(api_route_is_ungated("POST", "/metrics"));
	assert_false(api_route_is_ungated("POST", "/run_code"));
}

/* the value of the first line that starts with prefix */
static double value_of(const char *text, const char *prefix)
{
	const char *l = strstr(text, prefix);
	assert_non_null(l);
	return strtod(l + strlen(prefix), NULL);
}

static void test_render(void **state)
{
	(void)state;
	struct api_metrics *m = malloc(sizeof(*m));
	assert_non_null(m);
	api_metrics_init(m);
	size_t r = api_route_index("POST", "/run_code");
	api_metrics_request(m, r, 200, 0.002);
	api_metrics_request(m, r, 200, 0.2);
	api_metrics_request(m, r, 504, 100.0); /* above every bucket */
	api_metrics_request(m, r, 299, 0.0);   /* a code not listed */
	api_metrics_limit_hit(m, "timeout");
	api_metrics_limit_hit(m, "bogus");
	api_metrics_limit_hit(m, NULL);
	api_metrics_run_code(m, lang_find("python"), LANG_FAILED);
	api_metrics_run_code(m, NULL, LANG_FAILED);
	api_metrics_run_code(m, lang_find("python"), 7);
	struct api_metrics_gauges g = {.cells_idle = 3, .pool_target = 4};
	char *buf = malloc(API_METRICS_OUT_MAX);
	assert_non_null(buf);
	long n = api_metrics_render(m, &g, buf, API_METRICS_OUT_MAX);
	assert_true(n > 0 && (size_t)n < API_METRICS_OUT_MAX);
	assert_int_equal(strlen(buf), (size_t)n);
	const char *h = "sandcell_http_request_duration_seconds";
	char key[256];
	snprintf(key, sizeof(key), "%s_bucket{method=\"POST\",route=\"/run_code\",le=\"+Inf\"} ", h);
	double inf = value_of(buf, key);
	snprintf(key, sizeof(key), "%s_count{method=\"POST\",route=\"/run_code\"} ", h);
	assert_true(inf == 4 && value_of(buf, key) == 4);
	snprintf(key, sizeof(key), "%s_bucket{method=\"POST\",route=\"/run_code\",le=\"0.0025\"} ", h);
	assert_true(value_of(buf, key) == 2); /* cumulative: 0 s and 2 ms */
	assert_true(value_of(buf, "sandcell_http_requests_total{method=\"POST\",route=\"/run_code\","
				  "code=\"other\"} ") == 1);
	assert_true(value_of(buf, "sandcell_http_requests_refused_total{code=\"504\"} ") == 1);
	assert_true(value_of(buf, "sandcell_limit_hits_total{kind=\"timeout\"} ") == 1);
	assert_true(value_of(buf, "sandcell_run_code_total{language=\"python\",status=\"Failed\"} ") ==
		    1);
	assert_true(value_of(buf, "sandcell_cells{state=\"idle\"} ") == 3);
	assert_non_null(strstr(buf, "# TYPE sandcell_http_request_duration_seconds histogram\n"));
	assert_int_equal(buf[n - 1], '\n');
	/* a buffer too small: refused, never cut */
	assert_int_equal(api_metrics_render(m, &g, buf, 100), -1);
	free(buf);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_parse),
		cmocka_unit_test(test_trace_begin),
		cmocka_unit_test(test_route_index),
		cmocka_unit_test(test_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

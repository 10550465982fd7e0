/* policy/: the network member (mode, allow, hosts): parse, errors that
 * name the field, and the printed form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"

static int parse(const char *json, struct policy *p, struct sc_err *err)
{
	memset(p, 0, sizeof(*p));
	return policy_parse(json, strlen(json), "p.json", p, err);
}

static void allowlist_parsed_and_printed(void **state)
{
	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(parse("{\"seccomp\": null, \"network\": {\"mode\": \"allowlist\", "
			       "\"allow\": [\"pypi.org\", \"files.pythonhosted.org\", \"*.example.org:8443\"],"
			       " \"hosts\": {\"Mirror.Internal\": \"10.1.2.3\"}}}",
			       &p, &err),
			 0);
	assert_string_equal(p.network, "allowlist");
	assert_int_equal(p.nnet_allow, 3);
	assert_string_equal(p.net_allow[2], "*.example.org:8443");
	assert_int_equal(p.nnet_hosts, 1);
	assert_string_equal(p.net_hosts[0].name, "mirror.internal");
	assert_string_equal(p.net_hosts[0].addr, "10.1.2.3");
	char *json = policy_to_json(&p);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"allow\""));
	assert_non_null(strstr(json, "\"*.example.org:8443\""));
	assert_non_null(strstr(json, "\"mirror.internal\""));
	assert_non_null(strstr(json, "\"10.1.2.3\""));
	/* what is printed parses back the same */
	struct policy q;
	assert_int_equal(parse(json, &q, &err), 0);
	assert_int_equal(q.nnet_allow, 3);
	assert_int_equal(q.nnet_hosts, 1);
	free(json);
	policy_free(&q);
	policy_free(&p);
}

static void expect_error(const char *json, const char *msg)
{
	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(parse(json, &p, &err), -1);
	if (strcmp(err.msg, msg) != 0)
		fail_msg("got '%s', want '%s'", err.msg, msg);
	policy_free(&p);
}

static void errors_name_the_field(void **state)
{
	expect_error("{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"a.org\", \"b.org\", \"*\"]}}",
		     "p.json: network.allow[2]: '*' alone is not allowed");
	expect_error("{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"1.2.3.4\"]}}",
		     "p.json: network.allow[0]: IP literals are not allowed (name the host, or map it in hosts)");
	expect_error("{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"a.org:0\"]}}",
		     "p.json: network.allow[0]: port must be 1..65535");
	expect_error("{\"network\": {\"mode\": \"none\", \"allow\": [\"a.org\"]}}",
		     "p.json: network.allow: needs \"mode\": \"allowlist\"");
	expect_error("{\"network\": {\"mode\": \"allowlist\", \"hosts\": {\"a.test\": \"nope\"}}}",
		     "p.json: network.hosts.a?test: expected an IPv4 or IPv6 address like \"10.1.2.3\", got \"nope\"");
	expect_error("{\"network\": {\"mode\": \"allowlist\", \"hosts\": {\"10.0.0.1\": \"10.0.0.1\"}}}",
		     "p.json: network.hosts.10?0?0?1: IP literals are not allowed (name the host, or map it in hosts)");
	expect_error("{\"network\": {\"mode\": \"open\"}}",
		     "p.json: network.mode: expected \"none\" (loopback only) or \"allowlist\", got \"open\"");
	expect_error("{\"network\": {\"mode\": \"allowlist\", \"allow\": [1]}}",
		     "p.json: network.allow[0]: expected a host name like \"pypi.org\", \"name:port\" or \"*.suffix\", got 1");
	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(parse("{\"network\": {\"mode\": \"allowlist\", \"proxy\": 1}}", &p, &err), -1);
	assert_non_null(strstr(err.msg, "network"));
	policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allowlist_parsed_and_printed),
		cmocka_unit_test(errors_name_the_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Landlock: what a cell handles on each ABI under each policy setting
 * (runtime/landlock.c), and the policy's "landlock" key (policy/parse.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "runtime/landlock.h"

#define FS_ABI1 ((1ULL << 13) - 1)
#define REFER (1ULL << 13)
#define TRUNCATE (1ULL << 14)
#define IOCTL_DEV (1ULL << 15)

static void none_without_landlock(void **state)
{
	(void)state;
	struct policy_landlock set = {.connect = POLICY_CONNECT_PROXY};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(0, &set, &r);
	assert_true(r.fs == 0 && r.net == 0 && r.scoped == 0);
}

static void fs_rights_grow_with_abi(void **state)
{
	(void)state;
	struct policy_landlock set = {0};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(1, &set, &r);
	assert_true(r.fs == 0); /* ABI 1 would refuse renames across directories */
	rt_landlock_rules_for(2, &set, &r);
	assert_true(r.fs == (FS_ABI1 | REFER));
	rt_landlock_rules_for(3, &set, &r);
	assert_true(r.fs == (FS_ABI1 | REFER | TRUNCATE));
	rt_landlock_rules_for(5, &set, &r);
	assert_true(r.fs == (FS_ABI1 | REFER | TRUNCATE | IOCTL_DEV));
	rt_landlock_rules_for(7, &set, &r);
	assert_true(r.fs == (FS_ABI1 | REFER | TRUNCATE | IOCTL_DEV));
}

static void connect_only_when_asked(void **state)
{
	(void)state;
	struct policy_landlock set = {0};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(7, &set, &r);
	assert_true(r.net == 0); /* default: in-cell servers stay reachable */
	set.connect = POLICY_CONNECT_PROXY;
	rt_landlock_rules_for(3, &set, &r);
	assert_true(r.net == 0); /* ABI 3 has no network rules */
	rt_landlock_rules_for(4, &set, &r);
	assert_true(r.net == 2); /* LANDLOCK_ACCESS_NET_CONNECT_TCP, never BIND */
}

static void scope_from_abi6(void **state)
{
	(void)state;
	struct policy_landlock set = {0};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(5, &set, &r);
	assert_true(r.scoped == 0);
	rt_landlock_rules_for(6, &set, &r);
	assert_true(r.scoped == 3);
	set.no_scope = true;
	rt_landlock_rules_for(7, &set, &r);
	assert_true(r.scoped == 0);
}

static void policy_turns_parts_off(void **state)
{
	(void)state;
	struct policy_landlock set = {.no_filesystem = true, .no_scope = true};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(7, &set, &r);
	assert_true(r.fs == 0 && r.net == 0 && r.scoped == 0);
	char buf[128];
	rt_landlock_describe(&r, buf, sizeof(buf));
	assert_string_equal(buf, "none");
	set = (struct policy_landlock){.connect = POLICY_CONNECT_PROXY};
	rt_landlock_rules_for(7, &set, &r);
	rt_landlock_describe(&r, buf, sizeof(buf));
	assert_string_equal(buf, "filesystem, truncate, device ioctl, tcp connect, "
				 "abstract unix sockets, signals");
}

static int parse(const char *json, struct policy *p, struct sc_err *err)
{
	memset(p, 0, sizeof(*p));
	return policy_parse(json, strlen(json), "t.json", p, err);
}

static void policy_key(void **state)
{
	(void)state;
	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(parse("{}", &p, &err), 0);
	assert_false(p.landlock.no_filesystem);
	assert_false(p.landlock.no_scope);
	assert_int_equal(p.landlock.connect, POLICY_CONNECT_ANY);
	policy_free(&p);
	assert_int_equal(parse("{\"landlock\": false}", &p, &err), 0);
	assert_true(p.landlock.no_filesystem && p.landlock.no_scope);
	policy_free(&p);
	assert_int_equal(parse("{\"landlock\": {\"scope\": false, \"connect\": \"proxy\"}}", &p, &err),
			 0);
	assert_false(p.landlock.no_filesystem);
	assert_true(p.landlock.no_scope);
	assert_int_equal(p.landlock.connect, POLICY_CONNECT_PROXY);
	char *json = policy_to_json(&p);
	assert_non_null(strstr(json, "\"landlock\""));
	assert_non_null(strstr(json, "\"proxy\""));
	free(json);
	policy_free(&p);
	assert_int_equal(parse("{\"landlock\": {\"connect\": \"all\"}}", &p, &err), -1);
	assert_non_null(strstr(err.msg, "landlock.connect: expected \"any\" or \"proxy\""));
	policy_free(&p);
	assert_int_equal(parse("{\"landlock\": {\"files\": true}}", &p, &err), -1);
	assert_non_null(strstr(err.msg, "files"));
	policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(none_without_landlock),
		cmocka_unit_test(fs_rights_grow_with_abi),
		cmocka_unit_test(connect_only_when_asked),
		cmocka_unit_test(scope_from_abi6),
		cmocka_unit_test(policy_turns_parts_off),
		cmocka_unit_test(policy_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

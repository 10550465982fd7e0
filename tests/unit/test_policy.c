/* policy/: parsing and validation (every error names its JSON path), sizes,
 * syscalls, the built-in profiles and their round trip through JSON, the
 * seccomp compiler (checked with the BPF interpreter and by loading the
 * filter into a real child process), and the filter cache. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include "policy/policy.h"
#include "policy/policy_priv.h"

#ifndef AF_ALG
#define AF_ALG 38
#endif

#define RET_ALLOW 0x7fff0000U
#define RET_ERRNO(e) (0x00050000U | (uint32_t)(e))
#define RET_KILL_PROCESS 0x80000000U

/* ---- helpers ---- */

static int parse(const char *doc, struct policy *p, struct sc_err *err)
{
	return policy_parse(doc, strlen(doc), "policy.json", p, err);
}

/* The document is refused with one line that starts with the origin and
 * contains `want` (the JSON path and the expected form). */
static void expect_error(const char *doc, const char *want)
{
	struct policy p;
	struct sc_err err = {0};
	int rc = parse(doc, &p, &err);
	if (rc == 0 || !strstr(err.msg, want) || strncmp(err.msg, "policy.json: ", 13) ||
	    strchr(err.msg, '\n'))
		fail_msg("document %s\n  expected an error containing: %s\n  got (rc=%d): %s",
			 doc, want, rc, err.msg);
	/* A failed parse leaves nothing to free but must be safe to free. */
	policy_free(&p);
}

static void load(const char *name, struct policy *p)
{
	struct sc_err err = {0};
	if (policy_load(name, p, &err) < 0)
		fail_msg("policy_load(%s): %s", name, err.msg);
}

static void compile(const struct policy *p, const char *cache, struct policy_filter *f)
{
	struct sc_err err = {0};
	if (policy_compile_filter(p, cache, f, &err) < 0)
		fail_msg("policy_compile_filter: %s", err.msg);
}

/* What the compiled program answers for one call. */
static uint32_t run_filter(const struct policy_filter *f, uint32_t arch, int nr, uint64_t a0,
			   uint64_t a1, uint64_t a2)
{
	struct pol_seccomp_data d = {.nr = nr, .arch = arch, .args = {a0, a1, a2}};
	uint32_t ret = 0;
	assert_int_equal(policy_bpf_run(f->insns, f->count, &d, &ret), 0);
	return ret;
}

static uint32_t native(const struct policy_filter *f, int nr, uint64_t a0, uint64_t a1,
		       uint64_t a2)
{
#if defined(__x86_64__)
	return run_filter(f, AUDIT_ARCH_X86_64, nr, a0, a1, a2);
#elif defined(__aarch64__)
	return run_filter(f, AUDIT_ARCH_AARCH64, nr, a0, a1, a2);
#else
#error "unsupported architecture"
#endif
}

/* ---- the built-in profiles ---- */

static void builtins_load(void **state)
{
	const char *name;
	size_t n = 0;
	for (size_t i = 0; (name = policy_builtin_name(i)); i++, n++) {
		struct policy p;
		assert_true(policy_is_builtin(name));
		load(name, &p);
		assert_string_equal(p.name, name);
		assert_non_null(p.seccomp);
		assert_string_equal(p.network, "none");
		policy_free(&p);
	}
	assert_int_equal(n, 2);
	assert_false(policy_is_builtin("nope"));
	assert_null(policy_builtin_json("nope"));
}

static void strict_limits(void **state)
{
	struct policy p;
	load("strict", &p);
	assert_int_equal(p.limits.memory, 512ULL << 20);
	assert_int_equal(p.limits.pids, 64);
	assert_true(p.limits.timeout_s == 60.0);
	assert_int_equal(p.limits.disk, 256ULL << 20);
	assert_true(p.no_writable_binds);
	policy_free(&p);

	load("default", &p);
	assert_false(p.no_writable_binds);
	assert_int_equal(p.limits.memory, 0);
	policy_free(&p);
}

/* policy_to_json -> policy_parse gives the same policy: printing it again
 * yields the same text, and the filter compiles to the same program. */
static void roundtrip_one(const struct policy *p)
{
	char *json = policy_to_json(p);
	assert_non_null(json);
	struct policy q;
	struct sc_err err = {0};
	if (policy_parse(json, strlen(json), "roundtrip", &q, &err) < 0)
		fail_msg("re-parse failed: %s\n%s", err.msg, json);
	char *again = policy_to_json(&q);
	assert_non_null(again);
	assert_string_equal(json, again);

	struct policy_filter f1, f2;
	compile(p, NULL, &f1);
	compile(&q, NULL, &f2);
	assert_int_equal(f1.count, f2.count);
	if (f1.count)
		assert_memory_equal(f1.insns, f2.insns, f1.count * 8);
	policy_filter_free(&f1);
	policy_filter_free(&f2);
	free(json);
	free(again);
	policy_free(&q);
}

static void builtins_roundtrip(void **state)
{
	const char *name;
	for (size_t i = 0; (name = policy_builtin_name(i)); i++) {
		struct policy p;
		load(name, &p);
		roundtrip_one(&p);
		policy_free(&p);
	}
}

static const char FULL[] =
	"{\n"
	"  \"description\": \"a full example\",\n"
	"  \"image\": \"host\",\n"
	"  \"workdir\": \"/testbed\",\n"
	"  \"hostname\": \"cell-1\",\n"
	"  \"network\": {\"mode\": \"none\"},\n"
	"  \"env\": {\"LANG\": \"C.UTF-8\", \"PIP_NO_INPUT\": \"1\", \"Q\": \"a \\\"quoted\\\" "
	"\\u00e9\"},\n"
	"  \"require_cgroups\": true,\n"
	"  \"no_writable_binds\": false,\n"
	"  \"limits\": {\"memory\": \"1.5G\", \"pids\": 256, \"cpus\": 1.5, \"timeout\": \"2.5\",\n"
	"             \"disk\": 1073741824, \"output\": \"64k\", \"nofile\": 1024,\n"
	"             \"fsize\": \"100M\"},\n"
	"  \"mounts\": [\n"
	"    {\"type\": \"bind\", \"host\": \"/srv/data\", \"cell\": \"/data\", \"readonly\": true},\n"
	"    {\"type\": \"bind\", \"host\": \"/srv/out\", \"cell\": \"/out\"},\n"
	"    {\"type\": \"tmpfs\", \"cell\": \"/scratch\", \"size\": \"32M\"},\n"
	"    {\"type\": \"tmpfs\", \"cell\": \"/cache\"}\n"
	"  ],\n"
	"  \"seccomp\": {\n"
	"    \"default_action\": \"errno\", \"default_errno\": \"ENOSYS\",\n"
	"    \"allow\": [\"read\", \"write\", \"exit_group\", \"ioctl\", \"chown32\"],\n"
	"    \"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\", \"comment\": \"no\"},\n"
	"             {\"names\": [\"socket\"], \"errno\": 97}],\n"
	"    \"rules\": [\n"
	"      {\"names\": [\"socket\"], \"action\": \"allow\",\n"
	"       \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": \"0xffffffff\", \"value\": 1}]},\n"
	"      {\"names\": [\"ioctl\"], \"action\": \"errno\", \"errno\": \"EPERM\",\n"
	"       \"args\": [{\"arg\": 1, \"op\": \"eq\", \"value\": \"0xffffffffffffffff\"}]},\n"
	"      {\"names\": [\"ioctl\"], \"action\": \"kill\",\n"
	"       \"args\": [{\"arg\": 1, \"op\": \"lt\", \"value\": 3}, {\"arg\": 2, \"op\": \"ge\", "
	"\"value\": 7}]}\n"
	"    ]\n"
	"  }\n"
	"}\n";

static void full_document(void **state)
{
	struct policy p;
	struct sc_err err = {0};
	if (parse(FULL, &p, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(p.name, "policy.json");
	assert_string_equal(p.description, "a full example");
	assert_string_equal(p.image, "host");
	assert_string_equal(p.workdir, "/testbed");
	assert_string_equal(p.hostname, "cell-1");
	assert_string_equal(p.network, "none");
	assert_int_equal(p.nenv, 3);
	assert_string_equal(p.env[0], "LANG=C.UTF-8");
	assert_string_equal(p.env[1], "PIP_NO_INPUT=1");
	assert_string_equal(p.env[2], "Q=a \"quoted\" \xc3\xa9");
	assert_null(p.env[3]);
	assert_true(p.require_cgroups);
	assert_false(p.no_writable_binds);
	assert_int_equal(p.limits.memory, 1536ULL << 20);
	assert_int_equal(p.limits.pids, 256);
	assert_true(p.limits.cpus == 1.5);
	assert_true(p.limits.timeout_s == 2.5);
	assert_int_equal(p.limits.disk, 1ULL << 30);
	assert_int_equal(p.limits.output, 64 << 10);
	assert_int_equal(p.limits.nofile, 1024);
	assert_int_equal(p.limits.fsize, 100ULL << 20);
	assert_int_equal(p.nmounts, 4);
	assert_string_equal(p.mounts[0].host, "/srv/data");
	assert_string_equal(p.mounts[0].cell, "/data");
	assert_true(p.mounts[0].readonly);
	assert_false(p.mounts[1].readonly);
	assert_null(p.mounts[2].host);
	assert_string_equal(p.mounts[2].cell, "/scratch");
	assert_int_equal(p.mounts[2].size, 32ULL << 20);
	assert_int_equal(p.mounts[3].size, 64ULL << 20); /* the tmpfs default */
	assert_int_equal(p.seccomp->nrules, 3);
	assert_int_equal(p.seccomp->rules[1].args[0].value, UINT64_MAX);
	assert_int_equal(p.seccomp->deny[1].errnum, EAFNOSUPPORT);
	roundtrip_one(&p);

	/* What the filter does with it. */
	struct policy_filter f;
	compile(&p, NULL, &f);
	assert_int_equal(native(&f, __NR_read, 0, 0, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_mount, 0, 0, 0), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_getpid, 0, 0, 0), RET_ERRNO(ENOSYS));
	assert_int_equal(native(&f, __NR_socket, AF_UNIX, 0, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socket, AF_UNIX | (1ULL << 40), 0, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socket, AF_INET, 0, 0), RET_ERRNO(EAFNOSUPPORT));
	assert_int_equal(native(&f, __NR_ioctl, 0, UINT64_MAX, 0), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_ioctl, 0, 2, 7), RET_KILL_PROCESS);
	assert_int_equal(native(&f, __NR_ioctl, 0, 2, 6), RET_ALLOW);
	assert_int_equal(native(&f, __NR_ioctl, 0, 3, 7), RET_ALLOW);
	policy_filter_free(&f);
	policy_free(&p);
}

static void minimal_documents(void **state)
{
	struct policy p;
	struct sc_err err = {0};
	struct policy_filter f;

	/* No "seccomp": the default profile's filter, not none. */
	assert_int_equal(parse("{}", &p, &err), 0);
	assert_non_null(p.seccomp);
	assert_null(p.image);
	assert_int_equal(p.nmounts, 0);
	assert_null(p.env);
	compile(&p, NULL, &f);
	assert_int_equal(native(&f, __NR_mount, 0, 0, 0), RET_ERRNO(EPERM));
	policy_filter_free(&f);
	policy_free(&p);

	/* "seccomp": null: explicitly no filter. */
	assert_int_equal(parse("{\"seccomp\": null}", &p, &err), 0);
	assert_null(p.seccomp);
	compile(&p, NULL, &f);
	assert_int_equal(f.count, 0);
	assert_null(f.insns);
	char *json = policy_to_json(&p);
	assert_non_null(strstr(json, "\"seccomp\": null"));
	free(json);
	roundtrip_one(&p);
	policy_free(&p);

	/* An empty seccomp object: everything is the default action. */
	assert_int_equal(parse("{\"seccomp\": {\"default_action\": \"kill\"}}", &p, &err), 0);
	compile(&p, NULL, &f);
	assert_int_equal(native(&f, __NR_read, 0, 0, 0), RET_KILL_PROCESS);
	policy_filter_free(&f);
	policy_free(&p);
}

/* ---- sizes and numbers ---- */

static void sizes(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
		const char *printed;
	} cases[] = {
		{"\"512M\"", 512ULL << 20, "\"512M\""},
		{"\"512MiB\"", 512ULL << 20, "\"512M\""},
		{"\"1G\"", 1ULL << 30, "\"1G\""},
		{"\"1.5G\"", 1536ULL << 20, "\"1536M\""},
		{"\"2T\"", 2ULL << 40, "\"2T\""},
		{"4194304", 4ULL << 20, "\"4M\""},
		{"\"5000000\"", 5000000, "\"5000000\""},
		{"\"4100k\"", 4100ULL << 10, "\"4100K\""},
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
		char doc[128];
		snprintf(doc, sizeof(doc), "{\"limits\": {\"memory\": %s}}", cases[i].text);
		struct policy p;
		struct sc_err err = {0};
		if (parse(doc, &p, &err) < 0)
			fail_msg("%s: %s", doc, err.msg);
		assert_int_equal(p.limits.memory, cases[i].bytes);
		char *json = policy_to_json(&p);
		char want[64];
		snprintf(want, sizeof(want), "\"memory\": %s", cases[i].printed);
		if (!strstr(json, want))
			fail_msg("%s not in\n%s", want, json);
		free(json);
		policy_free(&p);
	}
	expect_error("{\"limits\": {\"memory\": \"lots\"}}",
		     "policy.json: limits.memory: expected a size like \"512M\", got \"lots\"");
	expect_error("{\"limits\": {\"memory\": \"1K\"}}",
		     "limits.memory: expected a size from 4M to 16T (0: no limit), got \"1K\"");
	expect_error("{\"limits\": {\"pids\": -1}}",
		     "limits.pids: expected an integer from 1 to 4194304 (0: no limit), got -1");
	expect_error("{\"limits\": {\"memory\": \"-1G\"}}", "limits.memory: expected a size");
	expect_error("{\"limits\": {\"memory\": 1.5}}", "limits.memory: expected a size");
	expect_error("{\"limits\": {\"memory\": -5}}", "limits.memory: expected a size");
	expect_error("{\"limits\": {\"memory\": \"17T\"}}", "limits.memory: expected a size from");
	expect_error("{\"limits\": {\"memory\": 1e300}}", "limits.memory: expected a size");
	expect_error("{\"limits\": {\"disk\": true}}", "limits.disk: expected a size like");
	expect_error("{\"limits\": {\"output\": \"2G\"}}", "limits.output: expected a size from 1 byte to 1G");
	expect_error("{\"limits\": {\"fsize\": \"12\"}}", "limits.fsize: expected a size from 1K");
	expect_error("{\"mounts\": [{\"type\": \"tmpfs\", \"cell\": \"/t\", \"size\": \"1\"}]}",
		     "mounts[0].size: expected a size from 4K");
}

static void numbers(void **state)
{
	/* 0 lifts the default: explicitly unlimited, not "not set" */
	{
		struct policy p = {0};
		struct sc_err err = {0};
		assert_int_equal(parse("{\"limits\": {\"pids\": 0, \"memory\": 0}}", &p, &err), 0);
		assert_true(p.limits.pids == POLICY_UNLIMITED);
		assert_true(p.limits.memory == POLICY_UNLIMITED);
		char *j = policy_to_json(&p);
		assert_non_null(j);
		assert_non_null(strstr(j, "\"pids\": 0"));
		assert_non_null(strstr(j, "\"memory\": 0"));
		free(j);
		policy_free(&p);
		assert_int_equal(policy_limit_value(POLICY_UNLIMITED, POLICY_DEFAULT_PIDS), 0);
		assert_int_equal(policy_limit_value(0, POLICY_DEFAULT_PIDS), POLICY_DEFAULT_PIDS);
		assert_int_equal(policy_limit_value(64, POLICY_DEFAULT_PIDS), 64);
	}
	expect_error("{\"limits\": {\"pids\": -1}}", "limits.pids: expected an integer");
	expect_error("{\"limits\": {\"pids\": 1.5}}", "limits.pids: expected an integer");
	expect_error("{\"limits\": {\"pids\": \"64\"}}", "limits.pids: expected an integer");
	expect_error("{\"limits\": {\"pids\": 4194305}}", "limits.pids: expected an integer");
	expect_error("{\"limits\": {\"nofile\": 2}}", "limits.nofile: expected an integer from 8");
	expect_error("{\"limits\": {\"cpus\": 0}}", "limits.cpus: expected a number of CPUs");
	expect_error("{\"limits\": {\"cpus\": \"fast\"}}", "limits.cpus: expected a number of CPUs");
	expect_error("{\"limits\": {\"cpus\": 5000}}", "limits.cpus: expected a number of CPUs");
	expect_error("{\"limits\": {\"timeout\": -1}}", "limits.timeout: expected a number of seconds");
	expect_error("{\"limits\": {\"timeout\": \"1y\"}}", "limits.timeout: expected a number of seconds");
	expect_error("{\"limits\": {\"timeout\": 0}}", "limits.timeout: expected a number of seconds");
	expect_error("{\"limits\": {\"timeout\": 40000000}}", "limits.timeout: expected a number of seconds");

	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(parse("{\"limits\": {\"cpus\": \"0.5\", \"timeout\": 0.25}}", &p, &err), 0);
	assert_true(p.limits.cpus == 0.5);
	assert_true(p.limits.timeout_s == 0.25);
	roundtrip_one(&p);
	policy_free(&p);
}

/* ---- refused documents ---- */

static void bad_json(void **state)
{
	expect_error("{", "policy.json: line 1, column 2: invalid JSON");
	expect_error("{\n  \"image\": \"host\",\n}", "policy.json: line 3, column");
	expect_error("{} {}", "invalid JSON");
	expect_error("[]", "policy.json: expected a JSON object at the top level, got an array");
	expect_error("\"x\"", "expected a JSON object at the top level, got \"x\"");
	expect_error("", "invalid JSON");
	expect_error("{\"image\": \"ho\\u0000st\"}", "\\u0000");
	expect_error("{\"image\": \"h\xff\"}", "not valid UTF-8");
	expect_error("{\"image\": \"h\xc0\xaf\"}", "not valid UTF-8"); /* overlong '/' */

	struct policy p;
	struct sc_err err = {0};
	const char nul[] = "{}\0{\"x\": 1}";
	assert_int_equal(policy_parse(nul, sizeof(nul) - 1, "policy.json", &p, &err), -1);
	assert_non_null(strstr(err.msg, "NUL byte"));
	/* "\\u0000" is an escaped backslash followed by text: fine. */
	assert_int_equal(parse("{\"description\": \"a\\\\u0000b\"}", &p, &err), 0);
	assert_string_equal(p.description, "a\\u0000b");
	policy_free(&p);

	size_t big = (1u << 20) + 1;
	char *doc = malloc(big);
	memset(doc, ' ', big);
	doc[0] = '{';
	doc[big - 1] = '}';
	assert_int_equal(policy_parse(doc, big, "policy.json", &p, &err), -1);
	assert_non_null(strstr(err.msg, "too large"));
	free(doc);
}

static void unknown_and_duplicate_keys(void **state)
{
	expect_error("{\"limitz\": {}}", "policy.json: limitz: unknown key (expected one of:");
	expect_error("{\"limits\": {\"memroy\": \"1G\"}}", "limits.memroy: unknown key");
	expect_error("{\"network\": {\"mode\": \"none\", \"dns\": 1}}", "network.dns: unknown key");
	expect_error("{\"seccomp\": {\"alow\": []}}", "seccomp.alow: unknown key");
	expect_error("{\"seccomp\": {\"rules\": [{\"names\": [\"read\"], \"action\": \"allow\", "
		     "\"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": 1, \"x\": 2}]}]}}",
		     "seccomp.rules[0].args[0].x: unknown key");
	expect_error("{\"image\": \"a\", \"image\": \"b\"}", "policy.json: image: duplicate key");
	expect_error("{\"limits\": {\"pids\": 1, \"pids\": 2}}", "limits.pids: duplicate key");
	expect_error("{\"env\": {\"A\": \"1\", \"A\": \"2\"}}", "env.A: duplicate key");
	/* Unprintable keys are shown sanitized, not raw. */
	expect_error("{\"a\\nb\": 1}", "a?b: unknown key");
}

static void wrong_types(void **state)
{
	expect_error("{\"require_cgroups\": \"yes\"}",
		     "require_cgroups: expected true or false, got \"yes\"");
	expect_error("{\"no_writable_binds\": 1}", "no_writable_binds: expected true or false, got 1");
	expect_error("{\"limits\": []}", "limits: expected an object, got an array");
	expect_error("{\"mounts\": {}}", "mounts: expected an array, got an object");
	expect_error("{\"env\": [\"A=1\"]}", "env: expected an object, got an array");
	expect_error("{\"env\": {\"A\": 1}}", "env.A: expected a string, got 1");
	expect_error("{\"env\": {\"1A\": \"x\"}}", "env.1A: not a valid variable name");
	expect_error("{\"env\": {\"A-B\": \"x\"}}", "not a valid variable name");
	expect_error("{\"network\": \"none\"}", "network: expected an object, got \"none\"");
	expect_error("{\"network\": {\"mode\": \"host\"}}",
		     "network.mode: expected \"none\" (loopback only) or \"allowlist\", got \"host\"");
	expect_error("{\"network\": {}}", "network.mode: missing");
	expect_error("{\"hostname\": \"bad host\"}", "hostname: expected a host name");
	expect_error("{\"hostname\": \"\"}", "hostname: expected a host name");
	expect_error("{\"image\": \"../etc\"}", "image: expected an image name");
	expect_error("{\"image\": null}", "image: expected an image name like \"host\", got null");
	expect_error("{\"workdir\": \"testbed\"}", "workdir: expected an absolute path");
	expect_error("{\"workdir\": \"/a/../b\"}", "workdir: expected an absolute path");
	expect_error("{\"description\": 5}", "description: expected a string, got 5");
	expect_error("{\"seccomp\": []}", "seccomp: expected an object, got an array");
}

static void mounts(void **state)
{
	expect_error("{\"mounts\": [{\"host\": \"/a\", \"cell\": \"/a\"}]}",
		     "mounts[0].type: missing (expected \"bind\" or \"tmpfs\")");
	expect_error("{\"mounts\": [{\"type\": \"overlay\"}]}", "mounts[0].type: expected \"bind\"");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"cell\": \"/a\"}]}", "mounts[0].host: missing");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"host\": \"a\", \"cell\": \"/a\"}]}",
		     "mounts[0].host: expected an absolute path");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"host\": \"/a\", \"cell\": \"/x/..\"}]}",
		     "mounts[0].cell: expected an absolute path");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"host\": \"/a\", \"cell\": \"//\"}]}",
		     "mounts[0].cell: cannot mount over the cell's root");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"host\": \"/a\", \"cell\": \"/proc/sys\"}]}",
		     "mounts[0].cell: /proc is set up by sandcell");
	expect_error("{\"mounts\": [{\"type\": \"tmpfs\", \"cell\": \"//dev\"}]}",
		     "mounts[0].cell: /dev is set up by sandcell");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"host\": \"/a\", \"cell\": \"/a\", "
		     "\"readonly\": \"yes\"}]}",
		     "mounts[0].readonly: expected true or false");
	expect_error("{\"mounts\": [{\"type\": \"tmpfs\", \"cell\": \"/t\", \"host\": \"/a\"}]}",
		     "mounts[0].host: unknown key");
	expect_error("{\"mounts\": [{\"type\": \"bind\", \"host\": \"/a\", \"cell\": \"/t\", "
		     "\"size\": \"1M\"}]}",
		     "mounts[0].size: unknown key");
	expect_error("{\"mounts\": [{\"type\": \"tmpfs\", \"cell\": \"/t\"}, "
		     "{\"type\": \"tmpfs\", \"cell\": \"/t/\"}]}",
		     "mounts[1].cell: /t/ is already mounted by mounts[0]");
	expect_error("{\"no_writable_binds\": true, \"mounts\": [{\"type\": \"bind\", \"host\": "
		     "\"/a\", \"cell\": \"/a\"}]}",
		     "mounts[0].readonly: must be true: the policy sets no_writable_binds");

	/* /procfoo is not /proc. */
	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(parse("{\"no_writable_binds\": true, \"mounts\": [{\"type\": \"bind\", "
			       "\"host\": \"/a\", \"cell\": \"/procfoo\", \"readonly\": true}]}",
			       &p, &err),
			 0);
	policy_free(&p);

	char doc[8192];
	size_t o = (size_t)snprintf(doc, sizeof(doc), "{\"mounts\": [");
	for (int i = 0; i < 65; i++)
		o += (size_t)snprintf(doc + o, sizeof(doc) - o,
				      "%s{\"type\": \"tmpfs\", \"cell\": \"/t%d\"}", i ? "," : "", i);
	snprintf(doc + o, sizeof(doc) - o, "]}");
	expect_error(doc, "mounts: too many entries (at most 64)");
}

static void seccomp_syscalls(void **state)
{
	expect_error("{\"seccomp\": {\"allow\": [\"read\", \"opne\"]}}",
		     "policy.json: seccomp.allow[1]: unknown syscall \"opne\"");
	expect_error("{\"seccomp\": {\"allow\": [\"read\", \"Read\"]}}",
		     "seccomp.allow[1]: expected a syscall name");
	expect_error("{\"seccomp\": {\"allow\": [\"read\", 3]}}", "seccomp.allow[1]: expected a syscall name");
	expect_error("{\"seccomp\": {\"allow\": [\"read\", \"write\", \"read\"]}}",
		     "seccomp.allow[2]: duplicate syscall \"read\" (already in seccomp.allow[0])");
	expect_error("{\"seccomp\": {\"allow\": [\"read\", \"mount\"], \"deny\": [{\"names\": "
		     "[\"mount\"], \"errno\": \"EPERM\"}]}}",
		     "seccomp.deny[0].names[0]: duplicate syscall \"mount\" (already in "
		     "seccomp.allow[1])");
	expect_error("{\"seccomp\": {\"deny\": [{\"names\": [\"mount\"], \"errno\": \"EPERM\"}, "
		     "{\"names\": [\"bpf\", \"mount\"], \"errno\": \"EPERM\"}]}}",
		     "seccomp.deny[1].names[1]: duplicate syscall \"mount\" (already in "
		     "seccomp.deny[0].names[0])");
	/* Known to libseccomp on another architecture: accepted, then a no-op. */
	expect_error("{\"seccomp\": {\"allow\": [\"chown32\", \"chown32\"]}}",
		     "seccomp.allow[1]: duplicate syscall \"chown32\"");
	expect_error("{\"seccomp\": {\"allow\": []}}", "seccomp.allow: expected at least one");
	expect_error("{\"seccomp\": {\"deny\": [{\"names\": [\"mount\"]}]}}",
		     "seccomp.deny[0].errno: missing (expected an errno name");
	expect_error("{\"seccomp\": {\"deny\": [{\"names\": [\"mount\"], \"errno\": \"EWHAT\"}]}}",
		     "seccomp.deny[0].errno: expected an errno name like \"EPERM\" or a number from "
		     "1 to 4095, got \"EWHAT\"");
	expect_error("{\"seccomp\": {\"deny\": [{\"names\": [\"mount\"], \"errno\": 0}]}}",
		     "seccomp.deny[0].errno: expected an errno name");
	expect_error("{\"seccomp\": {\"deny\": [{\"names\": [\"mount\"], \"errno\": 4096}]}}",
		     "seccomp.deny[0].errno: expected an errno name");
	expect_error("{\"seccomp\": {\"default_action\": \"deny\"}}",
		     "seccomp.default_action: expected one of \"allow\", \"errno\"");
	expect_error("{\"seccomp\": {\"default_action\": \"allow\", \"default_errno\": \"EPERM\"}}",
		     "seccomp.default_errno: only allowed when the action is \"errno\"");

	/* 1025 names in one list. */
	size_t cap = 1025 * 12 + 64, o = 0;
	char *doc = malloc(cap);
	o += (size_t)snprintf(doc + o, cap - o, "{\"seccomp\": {\"allow\": [");
	for (int i = 0; i < 1025; i++)
		o += (size_t)snprintf(doc + o, cap - o, "%s\"read\"", i ? "," : "");
	snprintf(doc + o, cap - o, "]}}");
	expect_error(doc, "seccomp.allow: too many entries (at most 1024)");
	free(doc);
}

static void seccomp_rules(void **state)
{
#define RULE(body) "{\"seccomp\": {\"allow\": [\"socket\"], \"rules\": [" body "]}}"
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"errno\", \"errno\": \"EPERM\"}"),
		     "seccomp.rules[0]: missing key \"args\"");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"allow\", \"args\": []}"),
		     "seccomp.rules[0].args: expected at least one condition");
	expect_error(RULE("{\"names\": [\"socket\"], \"args\": [{\"arg\": 0, \"op\": \"eq\", "
			  "\"value\": 1}]}"),
		     "seccomp.rules[0]: missing key \"action\"");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"errno\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": 1}]}"),
		     "seccomp.rules[0]: missing key \"errno\" (the action is \"errno\")");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"errno\": 1, \"args\": "
			  "[{\"arg\": 0, \"op\": \"eq\", \"value\": 1}]}"),
		     "seccomp.rules[0].errno: only allowed when the action is \"errno\"");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 6, "
			  "\"op\": \"eq\", \"value\": 1}]}"),
		     "seccomp.rules[0].args[0].arg: expected an integer from 0 to 5, got 6");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"regex\", \"value\": 1}]}"),
		     "seccomp.rules[0].args[0].op: expected one of \"eq\"");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"masked_eq\", \"value\": 1}]}"),
		     "seccomp.rules[0].args[0]: missing key \"mask\"");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"mask\": 1, \"value\": 1}]}"),
		     "seccomp.rules[0].args[0].mask: only allowed when the op is \"masked_eq\"");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"masked_eq\", \"mask\": \"0xf\", \"value\": 16}]}"),
		     "seccomp.rules[0].args[0].value: has bits outside the mask");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"masked_eq\", \"mask\": 0, \"value\": 0}]}"),
		     "seccomp.rules[0].args[0].mask: a mask of 0 matches every value");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": -1}]}"),
		     "seccomp.rules[0].args[0].value: expected a 64-bit unsigned integer");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": \"0x10000000000000000\"}]}"),
		     "seccomp.rules[0].args[0].value: expected a 64-bit unsigned integer");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": \"18446744073709551616\"}]}"),
		     "seccomp.rules[0].args[0].value: expected a 64-bit unsigned integer");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": 9007199254740993}]}"),
		     "seccomp.rules[0].args[0].value: expected a 64-bit unsigned integer");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": 1}, {\"arg\": 0, \"op\": \"ne\", \"value\": 2}]}"),
		     "seccomp.rules[0].args[1]: argument 0 is already compared in "
		     "seccomp.rules[0].args[0]");
	expect_error(RULE("{\"names\": [\"socket\", \"socket\"], \"action\": \"kill\", \"args\": "
			  "[{\"arg\": 0, \"op\": \"eq\", \"value\": 1}]}"),
		     "seccomp.rules[0].names[1]: duplicate syscall \"socket\"");
	/* Two rules that can match the same call with different actions. */
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"eq\", \"value\": 2}]},"
			  "{\"names\": [\"socket\"], \"action\": \"errno\", \"errno\": \"EPERM\", "
			  "\"args\": [{\"arg\": 1, \"op\": \"eq\", \"value\": 3}]}"),
		     "seccomp.rules[1]: can match the same call to \"socket\" as seccomp.rules[0] "
		     "with a different action");
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"ge\", \"value\": 2}]},"
			  "{\"names\": [\"socket\"], \"action\": \"trap\", \"args\": [{\"arg\": 0, "
			  "\"op\": \"le\", \"value\": 2}]}"),
		     "seccomp.rules[1]: can match the same call");
	/* The default action as a rule of a syscall whose fallback differs. */
	expect_error(RULE("{\"names\": [\"socket\"], \"action\": \"errno\", \"errno\": \"ENOSYS\", "
			  "\"args\": [{\"arg\": 0, \"op\": \"eq\", \"value\": 2}]}"),
		     "seccomp.rules[0]: the action is the default action");
#undef RULE

	/* Exclusive conditions with different actions are fine, in many forms. */
	static const char *const ok[] = {
		"{\"arg\": 0, \"op\": \"eq\", \"value\": 1}|{\"arg\": 0, \"op\": \"eq\", \"value\": 2}",
		"{\"arg\": 0, \"op\": \"lt\", \"value\": 10}|{\"arg\": 0, \"op\": \"ge\", \"value\": 10}",
		"{\"arg\": 0, \"op\": \"ne\", \"value\": 5}|{\"arg\": 0, \"op\": \"eq\", \"value\": 5}",
		"{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": 15, \"value\": 3}|"
		"{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": 3, \"value\": 1}",
		"{\"arg\": 1, \"op\": \"masked_eq\", \"mask\": 15, \"value\": 3}|"
		"{\"arg\": 1, \"op\": \"eq\", \"value\": 4}",
		"{\"arg\": 2, \"op\": \"gt\", \"value\": 100}|{\"arg\": 2, \"op\": \"le\", \"value\": 100}",
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(ok); i++) {
		char a[256], b[256], doc[1024];
		const char *bar = strchr(ok[i], '|');
		snprintf(a, sizeof(a), "%.*s", (int)(bar - ok[i]), ok[i]);
		snprintf(b, sizeof(b), "%s", bar + 1);
		snprintf(doc, sizeof(doc),
			 "{\"seccomp\": {\"allow\": [\"socket\"], \"rules\": ["
			 "{\"names\": [\"socket\"], \"action\": \"kill\", \"args\": [%s]},"
			 "{\"names\": [\"socket\"], \"action\": \"errno\", \"errno\": \"EPERM\", "
			 "\"args\": [%s]}]}}",
			 a, b);
		struct policy p;
		struct sc_err err = {0};
		if (parse(doc, &p, &err) < 0)
			fail_msg("%s: %s", doc, err.msg);
		struct policy_filter f;
		compile(&p, NULL, &f); /* compiles and verifies */
		policy_filter_free(&f);
		policy_free(&p);
	}
}

/* ---- the compiled default and strict filters ---- */

static void default_filter(void **state)
{
	struct policy p;
	struct policy_filter f;
	load("default", &p);
	compile(&p, NULL, &f);
	assert_true(f.count > 100 && f.count <= 4096);
	/* The program starts by checking the architecture. */
	const struct sock_filter *in = f.insns;
	assert_int_equal(in[0].code, BPF_LD | BPF_W | BPF_ABS);
	assert_int_equal(in[0].k, offsetof(struct seccomp_data, arch));

	static const int eperm[] = {
		__NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot, __NR_unshare,
		__NR_setns, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
		__NR_move_mount, __NR_open_tree, __NR_mount_setattr, __NR_keyctl,
		__NR_add_key, __NR_request_key, __NR_bpf, __NR_perf_event_open, __NR_ptrace,
		__NR_process_vm_readv, __NR_process_vm_writev, __NR_userfaultfd,
		__NR_kexec_load, __NR_kexec_file_load, __NR_init_module, __NR_finit_module,
		__NR_delete_module, __NR_reboot, __NR_swapon, __NR_swapoff, __NR_acct,
		__NR_settimeofday, __NR_clock_settime, __NR_clock_adjtime, __NR_adjtimex,
		__NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
		__NR_open_by_handle_at, __NR_name_to_handle_at, __NR_lookup_dcookie,
		__NR_quotactl, __NR_syslog, __NR_vhangup,
#ifdef __x86_64__
		__NR_iopl, __NR_ioperm, __NR_uselib,
#endif
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(eperm); i++)
		if (native(&f, eperm[i], 0, 0, 0) != RET_ERRNO(EPERM))
			fail_msg("syscall %d is not denied with EPERM", eperm[i]);

	/* Everyday calls. */
	static const int allowed[] = {__NR_read, __NR_write, __NR_openat, __NR_close,
				      __NR_mmap, __NR_futex, __NR_execve, __NR_exit_group,
				      __NR_getpid, __NR_epoll_pwait, __NR_rseq, __NR_wait4};
	for (size_t i = 0; i < SC_ARRAY_LEN(allowed); i++)
		assert_int_equal(native(&f, allowed[i], 0, 0, 0), RET_ALLOW);

	/* Unlisted (e.g. newer) syscalls and clone3: ENOSYS. */
	assert_int_equal(native(&f, __NR_clone3, 0, 0, 0), RET_ERRNO(ENOSYS));
	assert_int_equal(native(&f, 1000, 0, 0, 0), RET_ERRNO(ENOSYS));

	/* clone: threads and fork yes, namespaces no. */
	const uint64_t thread_flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
				      CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
				      CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	assert_int_equal(native(&f, __NR_clone, thread_flags, 0, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_clone, SIGCHLD, 0, 0), RET_ALLOW);
	static const uint64_t ns[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
				      CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, 0x80 /* NEWTIME */};
	for (size_t i = 0; i < SC_ARRAY_LEN(ns); i++) {
		assert_int_equal(native(&f, __NR_clone, ns[i] | SIGCHLD, 0, 0), RET_ERRNO(EPERM));
		assert_int_equal(native(&f, __NR_clone, ns[i] | thread_flags | (1ULL << 33), 0, 0),
				 RET_ERRNO(EPERM));
	}

	/* personality: Docker's values only. */
	static const uint64_t pers_ok[] = {0, 8, 0x20000, 0x20008, 0xffffffff};
	for (size_t i = 0; i < SC_ARRAY_LEN(pers_ok); i++)
		assert_int_equal(native(&f, __NR_personality, pers_ok[i], 0, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_personality, 0x0040000 /* READ_IMPLIES_EXEC */, 0, 0),
			 RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_personality, 1ULL << 32, 0, 0), RET_ERRNO(EPERM));

	/* ioctl: TIOCSTI/TIOCLINUX denied whatever the high bits. */
	assert_int_equal(native(&f, __NR_ioctl, 0, TCGETS, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_ioctl, 0, TIOCSTI, 0), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_ioctl, 0, TIOCSTI | (1ULL << 32), 0), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_ioctl, 0, TIOCSTI | 0xffffffff00000000ULL, 0),
			 RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_ioctl, 0, TIOCLINUX | (7ULL << 40), 0), RET_ERRNO(EPERM));

	/* socket: families and raw sockets, whatever the high bits. */
	assert_int_equal(native(&f, __NR_socket, AF_INET, SOCK_STREAM, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socket, AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socket, AF_UNIX, SOCK_STREAM, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socket, AF_NETLINK, SOCK_RAW, 0), RET_ALLOW);
	static const uint64_t fams[] = {AF_ALG, AF_VSOCK, AF_PACKET, AF_KEY};
	for (size_t i = 0; i < SC_ARRAY_LEN(fams); i++) {
		assert_int_equal(native(&f, __NR_socket, fams[i], SOCK_RAW, 0),
				 RET_ERRNO(EAFNOSUPPORT));
		assert_int_equal(native(&f, __NR_socket, fams[i] | (1ULL << 32), 1, 0),
				 RET_ERRNO(EAFNOSUPPORT));
		assert_int_equal(native(&f, __NR_socketpair, fams[i], 1, 0),
				 RET_ERRNO(EAFNOSUPPORT));
	}
	assert_int_equal(native(&f, __NR_socket, AF_INET, SOCK_RAW, IPPROTO_ICMP), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_socket, AF_INET6 | (1ULL << 35),
				SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
			 RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_socket, AF_INET, SOCK_PACKET, 0), RET_ERRNO(EPERM));

	/* Other ABIs are killed. */
#ifdef __x86_64__
	assert_int_equal(run_filter(&f, AUDIT_ARCH_I386, 20, 0, 0, 0), RET_KILL_PROCESS);
	assert_int_equal(native(&f, 0x40000000 | __NR_getpid, 0, 0, 0), RET_KILL_PROCESS);
	assert_int_equal(native(&f, 0x40000000 | __NR_mount, 0, 0, 0), RET_KILL_PROCESS);
#endif
	policy_filter_free(&f);
	policy_free(&p);
}

/* What Docker's default seccomp profile (moby profiles/seccomp/default.json)
 * allows a container without added capabilities, 64-bit names only. */
static const char *const DOCKER_ALLOWS[] = {
	"accept", "accept4", "access", "adjtimex", "alarm", "arch_prctl", "bind", "brk",
	"capget", "capset", "chdir", "chmod", "chown", "clock_adjtime", "clock_getres",
	"clock_gettime", "clock_nanosleep", "clone", "close", "close_range", "connect",
	"copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait",
	"epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group",
	"faccessat", "faccessat2", "fadvise64", "fallocate", "fanotify_mark", "fchdir",
	"fchmod", "fchmodat", "fchown", "fchownat", "fcntl", "fdatasync", "fgetxattr",
	"flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs",
	"fsync", "ftruncate", "futex", "futex_waitv", "futimesat", "getcpu", "getcwd",
	"getdents", "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer",
	"getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
	"getrandom", "getresgid", "getresuid", "getrlimit", "get_robust_list", "getrusage",
	"getsid", "getsockname", "getsockopt", "get_thread_area", "gettid", "gettimeofday",
	"getuid", "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1",
	"inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", "io_getevents",
	"io_pgetevents", "ioprio_get", "ioprio_set", "io_setup", "io_submit",
	"io_uring_enter", "io_uring_register", "io_uring_setup", "kill",
	"landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown",
	"lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr", "lremovexattr",
	"lseek", "lsetxattr", "lstat", "madvise", "membarrier", "memfd_create",
	"memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
	"mlock2", "mlockall", "mmap", "modify_ldt", "mprotect", "mq_getsetattr",
	"mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap",
	"msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
	"name_to_handle_at", "nanosleep", "newfstatat", "open", "openat", "openat2",
	"pause", "personality", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64",
	"preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6", "pwrite64",
	"pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
	"recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename",
	"renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction",
	"rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
	"rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_getaffinity",
	"sched_getattr", "sched_getparam", "sched_get_priority_max",
	"sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval",
	"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler",
	"sched_yield", "seccomp", "select", "semctl", "semget", "semop", "semtimedop",
	"sendfile", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsuid", "setgid",
	"setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid",
	"setresuid", "setreuid", "setrlimit", "set_robust_list", "setsid", "setsockopt",
	"set_thread_area", "set_tid_address", "setuid", "setxattr", "shmat", "shmctl",
	"shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "socket",
	"socketpair", "splice", "stat", "statfs", "statx", "symlink", "symlinkat", "sync",
	"sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create",
	"timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime",
	"timerfd_create", "timerfd_gettime", "timerfd_settime", "times", "tkill",
	"truncate", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes",
	"vfork", "vmsplice", "wait4", "waitid", "write", "writev",
};

/* No weaker than Docker: every syscall number that `default` allows for
 * some arguments is one Docker allows too. */
static void default_within_docker(void **state)
{
	struct policy p;
	struct policy_filter f;
	load("default", &p);
	compile(&p, NULL, &f);
	size_t allowed = 0;
	for (int nr = 0; nr < 1024; nr++) {
		bool allows = native(&f, nr, 0, 0, 0) == RET_ALLOW ||
			      native(&f, nr, 1, 1, 1) == RET_ALLOW ||
			      native(&f, nr, UINT64_MAX, UINT64_MAX, UINT64_MAX) == RET_ALLOW;
		if (!allows)
			continue;
		allowed++;
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
		bool in_docker = false;
		for (size_t i = 0; name && i < SC_ARRAY_LEN(DOCKER_ALLOWS); i++)
			in_docker = in_docker || !strcmp(name, DOCKER_ALLOWS[i]);
		if (!in_docker)
			fail_msg("default allows %s (nr %d), which Docker's profile does not",
				 name ? name : "?", nr);
		free(name);
	}
	assert_true(allowed > 250);
	policy_filter_free(&f);
	policy_free(&p);
}

static void strict_filter(void **state)
{
	struct policy p;
	struct policy_filter f;
	load("strict", &p);
	compile(&p, NULL, &f);
	assert_int_equal(native(&f, __NR_socket, AF_UNIX, SOCK_STREAM, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socketpair, AF_UNIX, SOCK_STREAM, 0), RET_ALLOW);
	assert_int_equal(native(&f, __NR_socket, AF_INET, SOCK_STREAM, 0), RET_ERRNO(EAFNOSUPPORT));
	assert_int_equal(native(&f, __NR_socket, AF_INET6, SOCK_DGRAM, 0), RET_ERRNO(EAFNOSUPPORT));
	assert_int_equal(native(&f, __NR_socket, AF_NETLINK, SOCK_RAW, 0), RET_ERRNO(EAFNOSUPPORT));
	assert_int_equal(native(&f, __NR_socket, AF_ALG, SOCK_SEQPACKET, 0), RET_ERRNO(EAFNOSUPPORT));
	/* AF_UNIX in the low bits is AF_UNIX to the kernel. */
	assert_int_equal(native(&f, __NR_socket, AF_UNIX | (1ULL << 32), SOCK_STREAM, 0), RET_ALLOW);
	/* Everything else as in default. */
	assert_int_equal(native(&f, __NR_mount, 0, 0, 0), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_ioctl, 0, TIOCSTI | (1ULL << 32), 0), RET_ERRNO(EPERM));
	assert_int_equal(native(&f, __NR_clone3, 0, 0, 0), RET_ERRNO(ENOSYS));
	policy_filter_free(&f);
	policy_free(&p);
}

/* The verifier catches a program that does not do what the policy says. */
static void verifier_catches_mismatch(void **state)
{
	struct policy a, b;
	struct policy_filter fa;
	struct sc_err err = {0};
	load("default", &a);
	load("strict", &b);
	compile(&a, NULL, &fa);
	assert_int_equal(policy_verify(a.seccomp, &fa, &err), 0);
	/* default's program is not strict's (sockets differ). */
	assert_int_equal(policy_verify(b.seccomp, &fa, &err), -1);
	assert_non_null(strstr(err.msg, "does not match the policy"));

	/* Flip one "allow" into "kill": caught. */
	struct sock_filter *in = fa.insns;
	size_t i = 0;
	while (i < fa.count && !(in[i].code == (BPF_RET | BPF_K) && in[i].k == RET_ALLOW))
		i++;
	assert_true(i < fa.count);
	in[i].k = RET_KILL_PROCESS;
	assert_int_equal(policy_verify(a.seccomp, &fa, &err), -1);

	/* A jump out of the program: not a valid program. */
	in[i].k = RET_ALLOW;
	in[0] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 100000, 0, 0);
	assert_int_equal(policy_verify(a.seccomp, &fa, &err), -1);
	assert_non_null(strstr(err.msg, "not a valid program"));

	policy_filter_free(&fa);
	policy_free(&a);
	policy_free(&b);
}

/* What libseccomp gets wrong or too slowly is refused, never used. */
static void libseccomp_limits(void **state)
{
	/* Two rules, each "a0 != x && a1 != y": libseccomp 2.5 merges them
	 * into a program that also allows (7, 1). Either the program is right
	 * or the policy is refused. */
	static const char two_ne[] =
		"{\"seccomp\": {\"default_action\": \"kill\", \"rules\": ["
		"{\"names\": [\"read\"], \"action\": \"allow\", \"args\": [{\"arg\": 0, "
		"\"op\": \"ne\", \"value\": 0}, {\"arg\": 1, \"op\": \"ne\", \"value\": 1}]},"
		"{\"names\": [\"read\"], \"action\": \"allow\", \"args\": [{\"arg\": 0, "
		"\"op\": \"ne\", \"value\": 7}, {\"arg\": 1, \"op\": \"ne\", \"value\": 8}]}]}}";
	struct policy p;
	struct policy_filter f;
	struct sc_err err = {0};
	assert_int_equal(parse(two_ne, &p, &err), 0);
	if (policy_compile_filter(&p, NULL, &f, &err) == 0) {
		assert_int_equal(native(&f, __NR_read, 7, 1, 0), RET_KILL_PROCESS);
		assert_int_equal(native(&f, __NR_read, 1, 2, 0), RET_ALLOW);
		policy_filter_free(&f);
	} else {
		assert_non_null(strstr(err.msg, "policy.json: seccomp: the compiled filter does "
						"not match the policy for read"));
	}
	policy_free(&p);

	/* Sixteen overlapping four-condition rules: libseccomp's time grows
	 * exponentially; the compile is stopped and the policy refused. */
	char doc[8192];
	size_t o = (size_t)snprintf(doc, sizeof(doc),
				    "{\"seccomp\": {\"default_action\": \"kill\", \"rules\": [");
	for (int i = 0; i < 16; i++) {
		assert_true(o < sizeof(doc) - 256);
		o += (size_t)snprintf(doc + o, sizeof(doc) - o,
				      "%s{\"names\": [\"read\"], \"action\": \"allow\", \"args\": [",
				      i ? "," : "");
		for (int a = 0; a < 4; a++)
			o += (size_t)snprintf(doc + o, sizeof(doc) - o,
					      "%s{\"arg\": %d, \"op\": \"ne\", \"value\": %d}",
					      a ? "," : "", a, i * 7 + a);
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "]}");
	}
	snprintf(doc + o, sizeof(doc) - o, "]}}");
	assert_int_equal(parse(doc, &p, &err), 0);
	if (policy_compile_filter(&p, NULL, &f, &err) == 0)
		policy_filter_free(&f); /* a faster libseccomp: fine, it was verified */
	else if (!strstr(err.msg, "libseccomp took more than") &&
		 !strstr(err.msg, "does not match the policy"))
		fail_msg("unexpected error: %s", err.msg);
	policy_free(&p);

	/* Too many conditions for any filter to hold: refused when parsed. */
	size_t cap = 65536;
	char *big = malloc(cap);
	o = (size_t)snprintf(big, cap, "{\"seccomp\": {\"allow\": [\"read\"], \"rules\": [");
	for (int i = 0; i < 180 && o < cap; i++)
		o += (size_t)snprintf(big + o, cap - o,
				      "%s{\"names\": [\"read\"], \"action\": \"kill\", \"args\": "
				      "[{\"arg\": 0, \"op\": \"eq\", \"value\": %d}, {\"arg\": 1, "
				      "\"op\": \"eq\", \"value\": 1}, {\"arg\": 2, \"op\": \"eq\", "
				      "\"value\": 1}, {\"arg\": 3, \"op\": \"eq\", \"value\": 1}, "
				      "{\"arg\": 4, \"op\": \"eq\", \"value\": 1}, {\"arg\": 5, "
				      "\"op\": \"eq\", \"value\": 1}]}",
				      i ? "," : "", i);
	assert_true(o < cap - 8);
	snprintf(big + o, cap - o, "]}}");
	expect_error(big, "seccomp.rules: too many conditions (1080");
	free(big);
}

/* ---- the filter cache ---- */

struct cache_fixture {
	char dir[64];
	char path[256];
	char key[1 << 16];
	struct policy def, other;
	struct policy_filter genuine;
};

static int cache_setup(void **state)
{
	struct cache_fixture *c = calloc(1, sizeof(*c));
	snprintf(c->dir, sizeof(c->dir), "/tmp/sc-policy-test-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	load("default", &c->def);
	load("strict", &c->other);
	compile(&c->def, NULL, &c->genuine);
	/* The cache key of `default`, as the compiler forms it. */
	char env[128];
	assert_int_equal(policy_compile_env(env, sizeof(env)), 0);
	char *canon = policy_seccomp_canonical(c->def.seccomp);
	snprintf(c->key, sizeof(c->key), "%s\n%s", env, canon);
	free(canon);
	assert_int_equal(policy_cache_path(c->dir, c->key, c->path, sizeof(c->path)), 0);
	*state = c;
	return 0;
}

static int cache_teardown(void **state)
{
	struct cache_fixture *c = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	if (system(cmd) != 0)
		return -1;
	policy_filter_free(&c->genuine);
	policy_free(&c->def);
	policy_free(&c->other);
	free(c);
	return 0;
}

static bool same_program(const struct policy_filter *a, const struct policy_filter *b)
{
	return a->count == b->count && !memcmp(a->insns, b->insns, a->count * 8);
}

/* Plant `f` as the cache entry of `default`. */
static void plant(struct cache_fixture *c, const struct policy_filter *f)
{
	struct sc_err err = {0};
	if (policy_cache_put(c->dir, c->key, f, &err) < 0)
		fail_msg("policy_cache_put: %s", err.msg);
}

static void cache_hit_is_identical(void **state)
{
	struct cache_fixture *c = *state;
	struct policy_filter f1, f2;
	compile(&c->def, c->dir, &f1);
	assert_true(same_program(&f1, &c->genuine));
	struct stat st;
	assert_int_equal(stat(c->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/seccomp", c->dir);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	compile(&c->def, c->dir, &f2);
	assert_true(same_program(&f1, &f2));
	policy_filter_free(&f1);
	policy_filter_free(&f2);

	/* The file is really read: a (valid) planted entry is what comes back. */
	struct policy_filter strict_prog, got;
	compile(&c->other, NULL, &strict_prog);
	plant(c, &strict_prog);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &strict_prog));
	policy_filter_free(&got);
	policy_filter_free(&strict_prog);
}

static void flip_byte(const char *path, off_t from_end)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	off_t size = lseek(fd, 0, SEEK_END);
	unsigned char ch;
	assert_int_equal(pread(fd, &ch, 1, size - from_end), 1);
	ch ^= 0x01;
	assert_int_equal(pwrite(fd, &ch, 1, size - from_end), 1);
	close(fd);
}

static void cache_refuses_tampered(void **state)
{
	struct cache_fixture *c = *state;
	struct policy_filter strict_prog, got;
	compile(&c->other, NULL, &strict_prog);

	/* A byte of the program changed after writing: recompiled. */
	plant(c, &strict_prog);
	flip_byte(c->path, 3);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);
	/* ... and the bad file was replaced by a good one. */
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);

	/* Truncated: recompiled. */
	plant(c, &strict_prog);
	assert_int_equal(truncate(c->path, 100), 0);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);

	/* Group- or world-writable: never used. */
	plant(c, &strict_prog);
	assert_int_equal(chmod(c->path, 0666), 0);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);
	plant(c, &strict_prog);
	assert_int_equal(chmod(c->path, 0620), 0);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);

	/* Not owned by the caller (needs root to arrange). */
	if (geteuid() == 0) {
		plant(c, &strict_prog);
		assert_int_equal(chown(c->path, 65534, 65534), 0);
		compile(&c->def, c->dir, &got);
		assert_true(same_program(&got, &c->genuine));
		policy_filter_free(&got);
	}

	/* A symlink where the file should be: not followed. */
	char target[128];
	snprintf(target, sizeof(target), "%s/elsewhere", c->dir);
	plant(c, &strict_prog);
	assert_int_equal(rename(c->path, target), 0);
	assert_int_equal(symlink(target, c->path), 0);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);

	/* Another policy's key in the file (what a hash collision would give). */
	char env[128], other_key[1 << 16];
	policy_compile_env(env, sizeof(env));
	char *canon = policy_seccomp_canonical(c->other.seccomp);
	snprintf(other_key, sizeof(other_key), "%s\n%s", env, canon);
	free(canon);
	char other_path[256];
	struct sc_err err = {0};
	assert_int_equal(policy_cache_put(c->dir, other_key, &strict_prog, &err), 0);
	policy_cache_path(c->dir, other_key, other_path, sizeof(other_path));
	assert_int_equal(rename(other_path, c->path), 0);
	compile(&c->def, c->dir, &got);
	assert_true(same_program(&got, &c->genuine));
	policy_filter_free(&got);

	policy_filter_free(&strict_prog);
}

static void cache_refuses_unsafe_dir(void **state)
{
	struct cache_fixture *c = *state;
	struct policy_filter f;
	struct sc_err err = {0};
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/seccomp", c->dir);
	compile(&c->def, c->dir, &f);
	policy_filter_free(&f);
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(policy_compile_filter(&c->def, c->dir, &f, &err), -1);
	assert_non_null(strstr(err.msg, "writable by group or others"));
	assert_non_null(strstr(err.msg, sub));
	assert_int_equal(chmod(sub, 0700), 0);

	/* A relative cache directory is refused rather than guessed at. */
	assert_int_equal(policy_compile_filter(&c->def, "relative/dir", &f, &err), -1);
	/* No cache at all is fine. */
	compile(&c->def, NULL, &f);
	assert_true(same_program(&f, &c->genuine));
	policy_filter_free(&f);
}

/* ---- the filter in a real process ---- */

static void report(int fd, const char *what, long rc, int want_errno)
{
	char buf[160];
	int saved = errno;
	bool ok = want_errno ? (rc == -1 && saved == want_errno) : rc >= 0;
	int n = snprintf(buf, sizeof(buf), "%s %s: rc=%ld errno=%d\n", ok ? "ok" : "FAIL", what,
			 rc, rc == -1 ? saved : 0);
	if (write(fd, buf, (size_t)n) < 0)
		_exit(3);
}

static int install(const struct policy_filter *f)
{
	struct sock_fprog prog = {.len = (unsigned short)f->count, .filter = f->insns};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static void child_checks(const struct policy_filter *f, int out)
{
	if (install(f) < 0) {
		report(out, "install the filter", -1, 0);
		_exit(2);
	}
	char ch = 'x';
	int pipefd[2];
	report(out, "pipe2", pipe2(pipefd, O_CLOEXEC), 0);
	report(out, "getpid", syscall(SYS_getpid), 0);
	report(out, "write", write(pipefd[1], &ch, 1), 0);
	report(out, "openat /dev/null", syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC), 0);
	report(out, "socket(AF_UNIX)", socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	report(out, "personality(query)", syscall(SYS_personality, 0xffffffffUL), 0);
	report(out, "unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER), EPERM);
	report(out, "unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS), EPERM);
	report(out, "mount", syscall(SYS_mount, "none", "/mnt", "tmpfs", 0, NULL), EPERM);
	report(out, "ptrace", syscall(SYS_ptrace, 0 /* TRACEME */, 0, 0, 0), EPERM);
	report(out, "io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL), EPERM);
	report(out, "socket(AF_ALG)", socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	report(out, "socket(AF_INET, SOCK_RAW)",
	       socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP), EPERM);
	report(out, "ioctl(TIOCSTI | 1<<32)",
	       syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &ch), EPERM);
	report(out, "ioctl(TIOCSTI)", syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI, &ch), EPERM);
	report(out, "clone(CLONE_NEWUSER)",
	       syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0), EPERM);
	struct clone_args ca = {.exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0); /* only if the filter failed to stop it */
	report(out, "clone3", pid, ENOSYS);
	/* fork still works (glibc: clone without namespace flags). */
	pid = fork();
	if (pid == 0)
		_exit(7);
	int status = 0;
	report(out, "fork", pid, 0);
	if (pid > 0 && (waitpid((pid_t)pid, &status, 0) != pid || !WIFEXITED(status) ||
			WEXITSTATUS(status) != 7))
		report(out, "fork's child exit status", -1, 0);
	_exit(0);
}

static void filter_in_child(void **state)
{
	struct policy p;
	struct policy_filter f;
	load("default", &p);
	compile(&p, NULL, &f);
	int fds[2];
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		child_checks(&f, fds[1]);
	}
	close(fds[1]);
	char out[4096] = "";
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(out) - 1 && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strstr(out, "FAIL") ||
	    !strstr(out, "ok fork:"))
		fail_msg("child status 0x%x, checks:\n%s", status, out);
	policy_filter_free(&f);
	policy_free(&p);
}

#ifdef __x86_64__
enum abi { ABI_I386, ABI_X32 };

/* Make a getpid call through `abi` in a child (after loading `f` when not
 * NULL); returns the signal that killed the child, or -(exit status). */
static int call_through(const struct policy_filter *f, enum abi abi)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGSEGV, SIG_DFL); /* cmocka's handlers must not catch these */
		signal(SIGSYS, SIG_DFL);
		if (f && install(f) < 0)
			_exit(2);
		if (abi == ABI_I386) {
			long ret;
			__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
		} else {
			syscall(0x40000000 | __NR_getpid);
		}
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

static void other_abis_killed(void **state)
{
	struct policy p;
	struct policy_filter f;
	load("default", &p);
	compile(&p, NULL, &f);
	/* Some hosts (e.g. some VMs) have no working int 0x80 at all. */
	if (call_through(NULL, ABI_I386) == 0)
		assert_int_equal(call_through(&f, ABI_I386), SIGSYS);
	else
		print_message("int 0x80 does not work on this host: i386 check skipped\n");
	assert_int_equal(call_through(&f, ABI_X32), SIGSYS);
	policy_filter_free(&f);
	policy_free(&p);
}
#endif

/* ---- loading files ---- */

static void load_files(void **state)
{
	char dir[] = "/tmp/sc-policy-load-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/p.json", dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{\"hostname\": \"from-file\",\n \"limits\": {\"memory\": \"lots\"}}\n", fp);
	fclose(fp);

	struct policy p;
	struct sc_err err = {0};
	assert_int_equal(policy_load(path, &p, &err), -1);
	char want[256];
	snprintf(want, sizeof(want), "%s: limits.memory: expected a size like \"512M\", got \"lots\"",
		 path);
	assert_string_equal(err.msg, want);

	fp = fopen(path, "w");
	fputs("{\"hostname\": \"from-file\"}", fp);
	fclose(fp);
	assert_int_equal(policy_load(path, &p, &err), 0);
	assert_string_equal(p.hostname, "from-file");
	assert_string_equal(p.name, path);
	policy_free(&p);

	/* "x.json" without a slash is a file too, not a built-in name. */
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(policy_load("p.json", &p, &err), 0);
	policy_free(&p);
	assert_int_equal(chdir("/"), 0);

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	assert_int_equal(policy_load(path, &p, &err), -1);
	assert_non_null(strstr(err.msg, "cannot open policy"));
	assert_int_equal(policy_load(dir, &p, &err), -1);
	assert_int_equal(policy_load("nosuch", &p, &err), -1);
	assert_non_null(strstr(err.msg, "unknown policy \"nosuch\" (built-in: default, strict"));
	assert_int_equal(policy_load("", &p, &err), -1);

	snprintf(path, sizeof(path), "%s/p.json", dir);
	assert_int_equal(truncate(path, (2 << 20)), 0);
	assert_int_equal(policy_load(path, &p, &err), -1);
	assert_non_null(strstr(err.msg, "too large"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(builtins_load),
		cmocka_unit_test(strict_limits),
		cmocka_unit_test(builtins_roundtrip),
		cmocka_unit_test(full_document),
		cmocka_unit_test(minimal_documents),
		cmocka_unit_test(sizes),
		cmocka_unit_test(numbers),
		cmocka_unit_test(bad_json),
		cmocka_unit_test(unknown_and_duplicate_keys),
		cmocka_unit_test(wrong_types),
		cmocka_unit_test(mounts),
		cmocka_unit_test(seccomp_syscalls),
		cmocka_unit_test(seccomp_rules),
		cmocka_unit_test(default_filter),
		cmocka_unit_test(default_within_docker),
		cmocka_unit_test(strict_filter),
		cmocka_unit_test(verifier_catches_mismatch),
		cmocka_unit_test(libseccomp_limits),
		cmocka_unit_test_setup_teardown(cache_hit_is_identical, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(cache_refuses_tampered, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(cache_refuses_unsafe_dir, cache_setup, cache_teardown),
		cmocka_unit_test(filter_in_child),
#ifdef __x86_64__
		cmocka_unit_test(other_abis_killed),
#endif
		cmocka_unit_test(load_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

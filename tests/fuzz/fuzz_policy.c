/* libFuzzer target for the policy loader: any byte string either parses into
 * a policy or is refused with one line; a parsed policy prints to JSON that
 * parses back to the same text, and its seccomp part either compiles (to a
 * program the verifier accepted) or is refused with one line. Anything else
 * aborts (and so is a finding). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/policy_priv.h"

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_policy: %s: %s\n", what, detail ? detail : "");
	abort();
}

/* The default filter is what most inputs get (no "seccomp" member);
 * compiling it every time would only slow the search down. */
static char *default_canonical;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy p;
	struct sc_err err = {0};
	if (!default_canonical) {
		if (policy_load("default", &p, &err) < 0)
			die("default profile", err.msg);
		default_canonical = policy_seccomp_canonical(p.seccomp);
		policy_free(&p);
	}

	if (policy_parse((const char *)data, size, "fuzz", &p, &err) < 0) {
		if (!err.msg[0] || strchr(err.msg, '\n') || strncmp(err.msg, "fuzz", 4))
			die("error is not one line naming the origin", err.msg);
		return 0;
	}

	char *json = policy_to_json(&p);
	if (!json)
		die("policy_to_json returned NULL", NULL);
	struct policy q;
	if (policy_parse(json, strlen(json), "fuzz", &q, &err) < 0)
		die("printed policy does not parse back", err.msg);
	char *again = policy_to_json(&q);
	if (!again || strcmp(json, again))
		die("round trip changed the policy", json);

	if (p.seccomp) {
		char *canon = policy_seccomp_canonical(p.seccomp);
		if (!canon)
			die("canonical form", NULL);
		if (strcmp(canon, default_canonical)) {
			/* Refusals are fine (libseccomp cannot express everything,
			 * and the verifier says so); a program must be sane. */
			struct policy_filter f;
			if (policy_compile_filter(&p, NULL, &f, &err) == 0) {
				if (f.count == 0 || f.count > 4096 || !f.insns)
					die("compiled filter has a bad size", NULL);
				policy_filter_free(&f);
			} else if (!err.msg[0] || strchr(err.msg, '\n')) {
				die("compile error is not one line", err.msg);
			}
		}
		free(canon);
	}
	free(again);
	free(json);
	policy_free(&q);
	policy_free(&p);
	return 0;
}

/* policy/ internals: the seccomp model, shared by the parser, the printer,
 * the compiler and the cache. Nothing outside policy/ (and its unit tests)
 * includes this header. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* Bounds on everything a policy document may contain. */
#define POL_MAX_DOC (1u << 20)      /* bytes of JSON */
#define POL_MAX_NAMES 1024          /* syscall names in one list */
#define POL_MAX_DENY 64             /* entries of seccomp.deny */
#define POL_MAX_RULES 256           /* entries of seccomp.rules */
#define POL_MAX_ARGS 6              /* conditions in one rule */
#define POL_MAX_COMMENT 1024
#define POL_MAX_PATH 4096
#define POL_MAX_ENV_VAL 32768
#define POL_MAX_ENV_KEY 256
#define POL_MAX_SYSCALL_NAME 64
#define POL_MAX_ERRNO 4095

/* What the filter does with a call. */
enum pol_act_kind {
	POL_ACT_ALLOW,
	POL_ACT_ERRNO,
	POL_ACT_KILL,   /* kill the whole process */
	POL_ACT_TRAP,   /* SIGSYS */
	POL_ACT_LOG,    /* allow, and log */
};

struct pol_act {
	enum pol_act_kind kind;
	int errnum; /* POL_ACT_ERRNO only: 1..4095 */
};

enum pol_op {
	POL_OP_EQ,
	POL_OP_NE,
	POL_OP_LT,
	POL_OP_LE,
	POL_OP_GT,
	POL_OP_GE,
	POL_OP_MASKED_EQ, /* (arg & mask) == value */
};

/* One condition on one syscall argument (64-bit comparison). */
struct pol_arg {
	unsigned index; /* 0..5 */
	enum pol_op op;
	uint64_t value;
	uint64_t mask; /* POL_OP_MASKED_EQ only */
};

/* An unconditional errno for a list of syscalls. */
struct pol_deny {
	char **names;
	size_t nnames;
	int errnum;
	char *comment;
};

/* A conditional rule: when every condition holds, `act`. */
struct pol_rule {
	char **names;
	size_t nnames;
	struct pol_act act;
	struct pol_arg args[POL_MAX_ARGS];
	size_t nargs;
	char *comment;
};

/* A syscall's action when no rule matches it is its entry in `allow` or
 * `deny`, else the default action. */
struct policy_seccomp {
	struct pol_act def;
	char **allow;
	size_t nallow;
	struct pol_deny *deny;
	size_t ndeny;
	struct pol_rule *rules;
	size_t nrules;
};

/* policy/names.c */
const char *policy_act_name(enum pol_act_kind k);
int policy_act_parse(const char *s, enum pol_act_kind *out);
const char *policy_op_name(enum pol_op op);
int policy_op_parse(const char *s, enum pol_op *out);
/* "EPERM" for 1; NULL for a number without a name in our table. */
const char *policy_errno_name(int e);
int policy_errno_parse(const char *s, int *out);
/* The kernel's SECCOMP_RET_* value of an action. */
uint32_t policy_act_ret(const struct pol_act *a);
bool policy_arg_matches(const struct pol_arg *a, uint64_t v);
bool policy_act_equal(const struct pol_act *a, const struct pol_act *b);

/* policy/seccomp_model.c: the syscall table of a policy on the native
 * architecture, what the compiler emits and the verifier checks. */
struct pol_sys {
	int nr;                   /* native syscall number */
	const char *name;
	struct pol_act fallback;  /* no rule matches */
	size_t *rules;            /* indexes into seccomp->rules, in order */
	size_t nrules;
};
struct pol_table {
	struct pol_sys *sys;
	size_t nsys;
	struct pol_act def;
};
int policy_table_build(const struct policy_seccomp *s, struct pol_table *t,
		    struct sc_err *err);
void policy_table_free(struct pol_table *t);
/* The entry of syscall `nr`, NULL when the policy does not name it. */
const struct pol_sys *policy_table_find(const struct pol_table *t, int nr);
/* The action of a call according to the policy (the reference semantics). */
uint32_t policy_table_eval(const struct policy_seccomp *s, const struct pol_table *t,
			int nr, const uint64_t args[6]);

/* policy/json_out.c: the seccomp part as canonical compact JSON (the cache
 * key), malloc'd. */
char *policy_seccomp_canonical(const struct policy_seccomp *s);
void policy_seccomp_free(struct policy_seccomp *s);

/* policy/compile.c: compile with libseccomp (no cache) and check the
 * result against the policy. */
int policy_compile(const struct policy_seccomp *s, struct policy_filter *out,
		struct sc_err *err);
/* Check that `f` does what the policy says, on probe calls built from the
 * policy's own rules, every syscall number up to 1023, x32 and a foreign
 * architecture. */
int policy_verify(const struct policy_seccomp *s, const struct policy_filter *f,
	       struct sc_err *err);
/* A short description of what the cache key covers besides the policy:
 * the libseccomp version and the native architecture. */
int policy_compile_env(char *buf, size_t size);

/* policy/bpf_eval.c: a classic-BPF interpreter with the kernel's seccomp
 * semantics, used to verify compiled programs. Returns 0 and the program's
 * return value, or -1 on an invalid program. */
struct pol_seccomp_data {
	int nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};
int policy_bpf_run(const void *insns, size_t count,
		const struct pol_seccomp_data *d, uint32_t *ret);

/* policy/cache.c */
int policy_cache_get(const char *dir, const char *key, struct policy_filter *out,
		  struct sc_err *err);
int policy_cache_put(const char *dir, const char *key, const struct policy_filter *f,
		  struct sc_err *err);
/* "<dir>/<16 hex digits>.bpf" for a key. */
int policy_cache_path(const char *dir, const char *key, char *buf, size_t size);

/* policy/profiles.c */
struct pol_builtin {
	const char *name;
	const char *summary;
	const char *json;
};
extern const struct pol_builtin policy_builtins[];
extern const size_t policy_nbuiltins;

/* policy/parse.c and deferred.c: the loaders' shared core. */
typedef int (*pol_parser)(const char *json, size_t len, const char *origin, struct policy *out,
			  struct sc_err *err);
int policy_parse_text(const char *json, size_t len, const char *origin, bool default_seccomp_if_missing,
		   struct policy *out, struct sc_err *err);
int policy_load_with(const char *name_or_file, pol_parser parse, struct policy *out,
		  struct sc_err *err);
/* Parse a deferred seccomp part (policy_load_deferred) into p->seccomp. */
int policy_resolve_seccomp(struct policy *p, struct sc_err *err);

/* Policies: what a cell may do. Loaded from JSON (cJSON), validated, merged
 * with command-line overrides, and compiled to a seccomp BPF program.
 * This header is plain C: runtime/ uses it without parsing JSON. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc.h"

/* Limits; a field of 0 means "not set" (the runtime's default applies).
 * memory and pids may also be POLICY_UNLIMITED: explicitly no limit (written
 * 0 in JSON and on the command line), which no default replaces. */
#define POLICY_UNLIMITED UINT64_MAX
/* The defaults every cell gets where neither the policy nor the command
 * line sets a limit. 1024 processes hold a fork bomb while leaving room for
 * make -j, test runners and language servers; 4G of memory is enough for
 * compilers and test suites and keeps one runaway cell from taking a
 * typical host down. The memory default applies where a cgroup enforces it
 * (an RLIMIT_AS stand-in would break programs that reserve address space). */
#define POLICY_DEFAULT_PIDS 1024
#define POLICY_DEFAULT_MEMORY (4ULL << 30)
/* A limit as the runtime applies it: 0 = none, else the value. */
static inline uint64_t policy_limit_value(uint64_t v, uint64_t dflt)
{
	return v == POLICY_UNLIMITED ? 0 : v ? v : dflt;
}
struct policy_limits {
	uint64_t memory;  /* bytes */
	uint64_t pids;
	double cpus;
	double timeout_s;
	uint64_t disk;    /* writable layer, bytes */
	uint64_t output;  /* captured stdout/stderr, bytes each */
	uint64_t nofile;
	uint64_t fsize;   /* largest file, bytes */
};

/* The ranges of limits, the same for a policy's JSON and the command
 * line (policy_limit_parse). */
#define POLICY_MEMORY_MIN (4ULL << 20)
#define POLICY_MEMORY_MAX (16ULL << 40)
#define POLICY_PIDS_MAX 4194304
#define POLICY_DISK_MIN (1ULL << 20)
#define POLICY_DISK_MAX (16ULL << 40)
#define POLICY_OUTPUT_MAX (1ULL << 30)

/* A limit given as text (a command-line option): key is "memory", "pids",
 * "cpus", "timeout", "disk" or "output"; the value is checked against the
 * ranges above ("0" for memory and pids: POLICY_UNLIMITED) and stored in
 * *l. On error, err says what was expected, without naming the option. */
int policy_limit_parse(const char *key, const char *text, struct policy_limits *l,
		       struct sc_err *err);
/* A hostname as a policy or --hostname may set it. */
bool policy_valid_hostname(const char *s);

struct policy_mount {
	char *host;   /* NULL for a tmpfs */
	char *cell;
	bool readonly;
	uint64_t size; /* tmpfs size */
};

struct policy_seccomp; /* private to policy/ */

/* Bounds on a policy document (the runtime's own limits are the same). */
#define POLICY_MAX_MOUNTS 64
#define POLICY_MAX_ENV 256
#define POLICY_MAX_NET_ALLOW 64 /* = NET_ALLOW_MAX */
#define POLICY_MAX_NET_HOSTS 32 /* = NET_HOSTS_MAX */

/* network.hosts: a name the user trusts, mapped to an address. */
struct policy_net_host {
	char *name;
	char *addr;
};

/* Landlock, the cell's second wall (runtime/landlock.c). All zero is the
 * default: the filesystem rules and the scoping on, TCP connect open. */
enum policy_connect {
	POLICY_CONNECT_ANY = 0, /* any port: servers in the cell reach each other */
	POLICY_CONNECT_PROXY,   /* only the egress proxy's port; none without egress */
};
struct policy_landlock {
	bool no_filesystem; /* "filesystem": false */
	bool no_scope;      /* "scope": false (abstract unix sockets, signals) */
	enum policy_connect connect; /* "connect": "any" or "proxy" */
};

struct policy {
	char *name;     /* built-in name or file path */
	char *description; /* free text, NULL: none */
	char *image;    /* NULL: not set */
	char *workdir;
	char *hostname;
	char *network;  /* "none" or "allowlist" */
	char **net_allow; /* network.allow entries (validated), allowlist mode */
	size_t nnet_allow;
	struct policy_net_host *net_hosts; /* network.hosts */
	size_t nnet_hosts;
	char **env;     /* KEY=VAL, NULL-terminated; NULL when empty */
	size_t nenv;
	struct policy_limits limits;
	struct policy_mount *mounts;
	size_t nmounts;
	bool no_writable_binds;
	bool require_cgroups;
	struct policy_landlock landlock;
	struct policy_seccomp *seccomp; /* NULL: no filter (unless pending) */
	/* policy_load_deferred: the seccomp part not parsed yet; its text is
	 * the filter cache's key, the document is parsed on a cache miss. */
	bool seccomp_pending;
	char *seccomp_text;
	char *seccomp_doc;
};

/* A compiled filter: an array of struct sock_filter (8 bytes each). */
struct policy_filter {
	void *insns;
	size_t count;
};

/* Load a built-in profile by name ("default", "strict") or a JSON file by
 * path (anything containing '/' or ending in .json). Errors name the JSON
 * path and the expected form. */
int policy_load(const char *name_or_file, struct policy *out, struct sc_err *err);
/* As policy_load, for starting a cell: the seccomp part is parsed only
 * when policy_compile_filter finds no cached program for it (a cache hit
 * means the same text compiled before). Compile before printing it. */
int policy_load_deferred(const char *name_or_file, struct policy *out, struct sc_err *err);
/* Is `name` one of the built-in profiles? */
bool policy_is_builtin(const char *name);
/* The name of the i-th built-in profile, NULL past the last one. */
const char *policy_builtin_name(size_t i);
/* The JSON text of a built-in profile (valid input for --policy). */
const char *policy_builtin_json(const char *name);
/* Parse a JSON document; `origin` names it in errors. */
int policy_parse(const char *json, size_t len, const char *origin,
		 struct policy *out, struct sc_err *err);
/* The effective policy as JSON (malloc'd). */
char *policy_to_json(const struct policy *p);
/* Compile the seccomp part to BPF, through a cache keyed by the filter's
 * content under cache_dir/seccomp (NULL: no cache). A policy without a filter
 * ("seccomp": null) gives count 0. On a cache miss, libseccomp runs in a
 * short-lived forked child (CPU-time limited); the program is verified
 * before it is returned or cached. The program checks the architecture
 * itself; the caller sets no_new_privs and loads it with seccomp(2). */
int policy_compile_filter(const struct policy *p, const char *cache_dir,
			  struct policy_filter *out, struct sc_err *err);
void policy_filter_free(struct policy_filter *f);
void policy_free(struct policy *p);

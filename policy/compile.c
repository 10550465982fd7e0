/* The seccomp compiler: policy -> libseccomp -> classic BPF, then checked
 * against the policy with our own interpreter before anyone uses it.
 *
 * libseccomp drops a conditional rule when the same syscall already has an
 * unconditional one (and refuses rules whose action is the default), so a
 * syscall that has rules and a fallback action other than the default gets
 * its fallback as a catch-all *conditional* rule ("arg >= 0", always true);
 * libseccomp then checks the more specific comparisons first. policy_verify
 * proves on probe calls that the result is what the policy says. */
#include <linux/audit.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <seccomp.h>

#include "policy_priv.h"

#define MAX_INSNS 4096 /* BPF_MAXINSNS */
#define RET_KILL_PROCESS 0x80000000U

static uint32_t scmp_action(const struct pol_act *a)
{
	switch (a->kind) {
	case POL_ACT_ALLOW: return SCMP_ACT_ALLOW;
	case POL_ACT_ERRNO: return SCMP_ACT_ERRNO((uint32_t)a->errnum);
	case POL_ACT_KILL: return SCMP_ACT_KILL_PROCESS;
	case POL_ACT_TRAP: return SCMP_ACT_TRAP;
	case POL_ACT_LOG: return SCMP_ACT_LOG;
	}
	return SCMP_ACT_KILL_PROCESS;
}

static enum scmp_compare scmp_op(enum pol_op op)
{
	switch (op) {
	case POL_OP_EQ: return SCMP_CMP_EQ;
	case POL_OP_NE: return SCMP_CMP_NE;
	case POL_OP_LT: return SCMP_CMP_LT;
	case POL_OP_LE: return SCMP_CMP_LE;
	case POL_OP_GT: return SCMP_CMP_GT;
	case POL_OP_GE: return SCMP_CMP_GE;
	case POL_OP_MASKED_EQ: return SCMP_CMP_MASKED_EQ;
	}
	return SCMP_CMP_EQ;
}

static void ctx_release(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static int add_syscall(scmp_filter_ctx ctx, const struct policy_seccomp *s,
		       const struct pol_table *t, const struct pol_sys *e,
		       struct sc_err *err)
{
	bool fb_is_def = policy_act_equal(&e->fallback, &t->def);
	int rc;
	if (e->nrules == 0) {
		if (fb_is_def)
			return 0;
		rc = seccomp_rule_add_exact(ctx, scmp_action(&e->fallback), e->nr, 0);
		if (rc < 0)
			return sc_fail(err, -rc, "seccomp: cannot add a rule for %s", e->name);
		return 0;
	}
	if (!fb_is_def) {
		unsigned lowest = 5;
		for (size_t i = 0; i < e->nrules; i++)
			for (size_t j = 0; j < s->rules[e->rules[i]].nargs; j++)
				if (s->rules[e->rules[i]].args[j].index < lowest)
					lowest = s->rules[e->rules[i]].args[j].index;
		struct scmp_arg_cmp any = {.arg = lowest, .op = SCMP_CMP_GE, .datum_a = 0};
		rc = seccomp_rule_add_exact_array(ctx, scmp_action(&e->fallback), e->nr, 1,
						  &any);
		if (rc < 0)
			return sc_fail(err, -rc, "seccomp: cannot add the fallback of %s",
				       e->name);
	}
	for (size_t i = 0; i < e->nrules; i++) {
		const struct pol_rule *r = &s->rules[e->rules[i]];
		if (policy_act_equal(&r->act, &t->def) && fb_is_def)
			continue; /* same as no rule */
		if (policy_act_equal(&r->act, &e->fallback))
			continue; /* covered by the catch-all */
		struct scmp_arg_cmp cmp[POL_MAX_ARGS];
		for (size_t j = 0; j < r->nargs; j++) {
			const struct pol_arg *a = &r->args[j];
			cmp[j] = (struct scmp_arg_cmp){
				.arg = a->index,
				.op = scmp_op(a->op),
				.datum_a = a->op == POL_OP_MASKED_EQ ? a->mask : a->value,
				.datum_b = a->op == POL_OP_MASKED_EQ ? a->value : 0,
			};
		}
		rc = seccomp_rule_add_exact_array(ctx, scmp_action(&r->act), e->nr,
						  (unsigned)r->nargs, cmp);
		if (rc < 0)
			return sc_fail(err, -rc, "seccomp: cannot add seccomp.rules[%zu] for %s",
				       e->rules[i], e->name);
	}
	return 0;
}

/* A binary tree of syscall numbers (libseccomp >= 2.5) keeps a 300-rule
 * filter at ~10 comparisons per syscall instead of a linear scan: every
 * syscall of a cell pays it. An older library (at build or at run time)
 * gets the linear filter, which allows and denies the same calls. */
static void set_binary_tree(scmp_filter_ctx ctx)
{
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 5)
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
#else
	(void)ctx;
#endif
}

/* Build the filter with libseccomp and export it into fd. */
static int build_and_export(const struct policy_seccomp *s, int fd, struct sc_err *err)
{
	struct pol_table t;
	if (policy_table_build(s, &t, err) < 0)
		return -1;
	__attribute__((cleanup(ctx_release))) scmp_filter_ctx ctx =
		seccomp_init(scmp_action(&s->def));
	int rc = 0;
	if (!ctx) {
		rc = sc_fail(err, ENOMEM, "seccomp: cannot create a filter");
		goto out;
	}
	/* Only the native architecture: any other (i386, x32) is killed;
	 * no_new_privs is the runtime's job. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0) {
		rc = sc_fail(err, -rc, "seccomp: cannot set the filter attributes");
		goto out;
	}
	set_binary_tree(ctx);
	for (size_t i = 0; i < t.nsys; i++)
		if ((rc = add_syscall(ctx, s, &t, &t.sys[i], err)) < 0)
			goto out;
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
		rc = sc_fail(err, -rc, "seccomp: cannot export the filter");
out:
	policy_table_free(&t);
	return rc < 0 ? -1 : 0;
}

/* libseccomp takes exponential time on some rule sets (many overlapping
 * multi-argument rules), so it runs in a child process with a CPU-time
 * limit; the program comes back through a memfd, an error through a shared
 * page. The child only computes: it touches nothing outside its memory. */
#define COMPILE_CPU_SECONDS 3

static int compile_in_child(const struct policy_seccomp *s, int fd, struct sc_err *err)
{
	struct sc_err *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return sc_fail(err, errno, "seccomp: mmap");
	memset(shared, 0, sizeof(*shared));
	pid_t pid = fork();
	if (pid < 0) {
		munmap(shared, sizeof(*shared));
		return sc_fail(err, errno, "seccomp: fork the compiler");
	}
	if (pid == 0) {
		struct rlimit cpu = {COMPILE_CPU_SECONDS, COMPILE_CPU_SECONDS + 1};
		signal(SIGXCPU, SIG_DFL);
		setrlimit(RLIMIT_CPU, &cpu);
		_exit(build_and_export(s, fd, shared) < 0 ? 1 : 0);
	}
	int status = 0;
	pid_t w;
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	int rc = 0;
	if (w < 0)
		rc = sc_fail(err, errno, "seccomp: wait for the compiler");
	else if (WIFSIGNALED(status) &&
		 (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL))
		rc = sc_fail(err, 0,
			     "seccomp: libseccomp took more than %d s to compile the filter "
			     "(many overlapping rules with several conditions?); simplify "
			     "the rules",
			     COMPILE_CPU_SECONDS);
	else if (WIFSIGNALED(status))
		rc = sc_fail(err, 0, "seccomp: the compiler died of signal %d",
			     WTERMSIG(status));
	else if (WEXITSTATUS(status) != 0) {
		shared->msg[sizeof(shared->msg) - 1] = '\0';
		if (err)
			*err = *shared;
		rc = -1;
		if (!shared->msg[0])
			rc = sc_fail(err, 0, "seccomp: the compiler failed");
	}
	munmap(shared, sizeof(*shared));
	return rc;
}

/* Read the exported program (libseccomp 2.5 exports only to an fd). */
static int read_program(int fd, struct policy_filter *out, struct sc_err *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sc_fail(err, errno, "seccomp: fstat");
	size_t len = (size_t)st.st_size;
	if (len == 0 || len % 8 || len / 8 > MAX_INSNS)
		return sc_fail(err, 0,
			       "seccomp: the filter has %zu instructions, more than the "
			       "kernel's %d (too many rules?)",
			       len / 8, MAX_INSNS);
	_cleanup_free_ void *buf = malloc(len);
	if (!buf)
		return sc_fail(err, ENOMEM, "seccomp: export");
	ssize_t n = pread(fd, buf, len, 0);
	if (n < 0 || (size_t)n != len)
		return sc_fail(err, n < 0 ? errno : EIO, "seccomp: reading the exported filter");
	out->insns = steal_ptr(&buf);
	out->count = len / 8;
	return 0;
}

int policy_compile(const struct policy_seccomp *s, struct policy_filter *out,
		struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	_cleanup_fd_ int fd = memfd_create("sandcell-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "seccomp: memfd_create");
	if (compile_in_child(s, fd, err) < 0 || read_program(fd, out, err) < 0)
		return -1;
	if (policy_verify(s, out, err) < 0) {
		policy_filter_free(out);
		return -1;
	}
	return 0;
}

/* ---- verification ---- */

/* A deterministic generator for sampling large probe sets. */
static uint64_t next_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#define MAX_VALUES 32
#define MAX_PROBES 20000     /* per syscall */
#define PROBE_BUDGET 100000  /* for all syscalls with rules together */

struct values {
	uint64_t v[MAX_VALUES];
	size_t n;
};

static void add_value(struct values *vs, uint64_t v)
{
	for (size_t i = 0; i < vs->n; i++)
		if (vs->v[i] == v)
			return;
	if (vs->n < MAX_VALUES)
		vs->v[vs->n++] = v;
}

/* Values around each comparison: equal, one off, with the high or low
 * half changed, and with bits outside a mask set. */
static void values_for(const struct pol_arg *a, struct values *vs)
{
	uint64_t v = a->value;
	add_value(vs, v);
	add_value(vs, v + 1);
	add_value(vs, v - 1);
	add_value(vs, v ^ (1ULL << 32));
	add_value(vs, v | 0xffffffff00000000ULL);
	if (a->op == POL_OP_MASKED_EQ) {
		uint64_t outside = ~a->mask;
		add_value(vs, v | outside);
		add_value(vs, v | (outside & 0xffffffffULL));
		add_value(vs, v | (outside & 0xffffffff00000000ULL));
		add_value(vs, v ^ (a->mask & (~a->mask + 1))); /* lowest mask bit */
		add_value(vs, v ^ (a->mask & ~(a->mask >> 1))); /* highest mask bit */
	}
}

static int mismatch(const char *name, int nr, const struct pol_seccomp_data *d,
		    uint32_t want, uint32_t got, struct sc_err *err)
{
	return sc_fail(err, 0,
		       "seccomp: the compiled filter does not match the policy for %s "
		       "(nr %d, args 0x%llx 0x%llx 0x%llx: expected 0x%08x, got 0x%08x); "
		       "simplify the rules of this syscall",
		       name ? name : "?", nr, (unsigned long long)d->args[0],
		       (unsigned long long)d->args[1], (unsigned long long)d->args[2], want,
		       got);
}

static int probe(const struct policy_filter *f, const struct pol_seccomp_data *d,
		 uint32_t want, const char *name, struct sc_err *err)
{
	uint32_t got;
	if (policy_bpf_run(f->insns, f->count, d, &got) < 0)
		return sc_fail(err, 0, "seccomp: the compiled filter is not a valid program");
	if (got != want)
		return mismatch(name, d->nr, d, want, got, err);
	return 0;
}

static int verify_rules(const struct policy_seccomp *s, const struct pol_table *t,
			const struct pol_sys *e, const struct policy_filter *f,
			uint32_t arch, size_t max_probes, struct sc_err *err)
{
	struct values vals[6] = {0};
	bool used[6] = {false};
	for (size_t i = 0; i < e->nrules; i++) {
		const struct pol_rule *r = &s->rules[e->rules[i]];
		for (size_t j = 0; j < r->nargs; j++) {
			used[r->args[j].index] = true;
			values_for(&r->args[j], &vals[r->args[j].index]);
		}
	}
	size_t total = 1;
	for (int k = 0; k < 6; k++)
		if (used[k]) {
			add_value(&vals[k], 0);
			add_value(&vals[k], UINT64_MAX);
			total *= vals[k].n;
		}
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)e->nr;
	bool all = total <= max_probes;
	size_t nprobes = all ? total : max_probes;
	for (size_t p = 0; p < nprobes; p++) {
		struct pol_seccomp_data d = {.nr = e->nr, .arch = arch};
		size_t idx = p;
		for (int k = 0; k < 6; k++) {
			if (!used[k]) {
				d.args[k] = (p & 1) ? 0xdeadbeefcafef00dULL : 0;
				continue;
			}
			size_t pick;
			if (all) {
				pick = idx % vals[k].n;
				idx /= vals[k].n;
			} else {
				pick = (size_t)(next_rand(&seed) % vals[k].n);
			}
			d.args[k] = vals[k].v[pick];
		}
		if (probe(f, &d, policy_table_eval(s, t, e->nr, d.args), e->name, err) < 0)
			return -1;
	}
	return 0;
}

int policy_verify(const struct policy_seccomp *s, const struct policy_filter *f,
	       struct sc_err *err)
{
	struct pol_table t;
	if (policy_table_build(s, &t, err) < 0)
		return -1;
	uint32_t arch = seccomp_arch_native();
	int rc = 0;
	static const uint64_t ZERO[6] = {0};

	/* Every syscall number of the native ABI, with trivial arguments. */
	for (int nr = 0; rc == 0 && nr < 1024; nr++) {
		struct pol_seccomp_data d = {.nr = nr, .arch = arch};
		rc = probe(f, &d, policy_table_eval(s, &t, nr, ZERO), "a syscall number", err);
	}
	size_t with_rules = 0;
	for (size_t i = 0; i < t.nsys; i++)
		with_rules += t.sys[i].nrules > 0;
	size_t max_probes = with_rules ? PROBE_BUDGET / with_rules : MAX_PROBES;
	if (max_probes > MAX_PROBES)
		max_probes = MAX_PROBES;
	if (max_probes < 256)
		max_probes = 256;
	for (size_t i = 0; rc == 0 && i < t.nsys; i++)
		if (t.sys[i].nrules)
			rc = verify_rules(s, &t, &t.sys[i], f, arch, max_probes, err);
		else
			for (int v = 0; rc == 0 && v < 2; v++) {
				struct pol_seccomp_data d = {.nr = t.sys[i].nr, .arch = arch};
				for (int k = 0; k < 6; k++)
					d.args[k] = v ? UINT64_MAX : 0;
				rc = probe(f, &d, policy_act_ret(&t.sys[i].fallback), t.sys[i].name, err);
			}
	/* Other ABIs are killed: a foreign architecture, and on x86-64 the
	 * x32 syscall numbers. */
	static const uint32_t foreign[] = {AUDIT_ARCH_I386, AUDIT_ARCH_X86_64,
					   AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM};
	for (size_t i = 0; rc == 0 && i < SC_ARRAY_LEN(foreign); i++) {
		if (foreign[i] == arch)
			continue;
		for (int nr = 0; rc == 0 && nr < 400; nr += 7) {
			struct pol_seccomp_data d = {.nr = nr, .arch = foreign[i]};
			rc = probe(f, &d, RET_KILL_PROCESS, "a foreign architecture", err);
		}
	}
	if (arch == AUDIT_ARCH_X86_64)
		for (int nr = 0; rc == 0 && nr < 600; nr += 3) {
			struct pol_seccomp_data d = {.nr = 0x40000000 | nr, .arch = arch};
			rc = probe(f, &d, RET_KILL_PROCESS, "an x32 syscall", err);
		}
	policy_table_free(&t);
	return rc;
}

int policy_compile_env(char *buf, size_t size)
{
	const struct scmp_version *v = seccomp_version();
	return sc_path(buf, size, "libseccomp %u.%u.%u arch 0x%08x bpf-format 1",
		       v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0,
		       seccomp_arch_native());
}

/* ---- the public entry point ---- */

/* A deferred policy: keyed by the exact seccomp text; parsed and compiled
 * only on a miss. The "text " prefix keeps these keys apart from the
 * canonical ones. */
static int compile_deferred(const struct policy *p, const char *env, const char *cache_dir,
			    struct policy_filter *out, struct sc_err *err)
{
	size_t klen = strlen(env) + 6 + strlen(p->seccomp_text) + 1;
	_cleanup_free_ char *key = malloc(klen);
	if (!key)
		return sc_fail(err, ENOMEM, "seccomp: cache key");
	snprintf(key, klen, "%s\ntext %s", env, p->seccomp_text);
	if (cache_dir) {
		int rc = policy_cache_get(cache_dir, key, out, err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			return 0;
	}
	struct policy full = *p; /* shallow: resolve into a private copy */
	full.seccomp_text = strdup(p->seccomp_text);
	full.seccomp_doc = strdup(p->seccomp_doc);
	full.name = NULL;
	full.seccomp = NULL;
	int rc = -1;
	if (full.seccomp_text && full.seccomp_doc) {
		full.name = p->name;
		rc = policy_resolve_seccomp(&full, err);
		full.name = NULL;
	}
	if (rc == 0) {
		rc = policy_compile(full.seccomp, out, err);
		if (rc < 0 && p->name)
			sc_err_wrap(err, "%s", p->name);
	}
	if (rc == 0 && cache_dir) {
		struct sc_err ignored;
		policy_cache_put(cache_dir, key, out, &ignored);
	}
	policy_seccomp_free(full.seccomp);
	free(full.seccomp_text);
	free(full.seccomp_doc);
	return rc;
}

int policy_compile_filter(const struct policy *p, const char *cache_dir,
			  struct policy_filter *out, struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!p->seccomp && !p->seccomp_pending)
		return 0; /* no filter */
	char env[128];
	if (policy_compile_env(env, sizeof(env)) < 0)
		return sc_fail(err, errno, "seccomp: version string");
	if (p->seccomp_pending)
		return compile_deferred(p, env, cache_dir, out, err);
	_cleanup_free_ char *canon = policy_seccomp_canonical(p->seccomp);
	if (!canon)
		return sc_fail(err, ENOMEM, "seccomp: canonical form");
	size_t klen = strlen(env) + 1 + strlen(canon) + 1;
	_cleanup_free_ char *key = malloc(klen);
	if (!key)
		return sc_fail(err, ENOMEM, "seccomp: cache key");
	snprintf(key, klen, "%s\n%s", env, canon);

	if (cache_dir) {
		int rc = policy_cache_get(cache_dir, key, out, err);
		if (rc < 0)
			return -1; /* the cache directory itself is unsafe */
		if (rc > 0)
			return 0;
	}
	if (policy_compile(p->seccomp, out, err) < 0) {
		if (p->name) /* say which policy */
			sc_err_wrap(err, "%s", p->name);
		return -1;
	}
	if (cache_dir) {
		/* A cache that cannot be written only costs time next run. */
		struct sc_err ignored;
		policy_cache_put(cache_dir, key, out, &ignored);
	}
	return 0;
}

void policy_filter_free(struct policy_filter *f)
{
	if (!f)
		return;
	free(f->insns);
	f->insns = NULL;
	f->count = 0;
}

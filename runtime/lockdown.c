/* The last steps before untrusted code runs: no capabilities in any set,
 * no_new_privs, rlimits, the seccomp filter, no inherited fds. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "internal.h"

static int drop_capabilities(bool keep_setid, struct sc_err *err)
{
	/* Root in the cell must not regain capabilities on exec. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
					     SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
					     SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
					     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		return sc_fail(err, errno, "set securebits");
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
		if (cap_drop_bound(c) < 0 && errno != EINVAL)
			return sc_fail(err, errno, "drop capability %d from the bounding set", c);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return sc_fail(err, errno, "clear ambient capabilities");
	/* Only the two that start a command as another user may stay, in
	 * init's permitted and effective sets; every command and worker gives
	 * them up before it runs (rt_exec_become), and the empty bounding set
	 * keeps an exec from regaining them. */
	cap_t caps = cap_init();
	if (!caps)
		return sc_fail(err, errno, "cap_init");
	const cap_value_t setid[] = {CAP_SETUID, CAP_SETGID};
	int rc = 0;
	if (keep_setid)
		rc = cap_set_flag(caps, CAP_PERMITTED, 2, setid, CAP_SET) < 0 ||
				     cap_set_flag(caps, CAP_EFFECTIVE, 2, setid, CAP_SET) < 0
			     ? -1
			     : 0;
	if (rc == 0)
		rc = cap_set_proc(caps);
	int e = errno;
	cap_free(caps);
	if (rc < 0)
		return sc_fail(err, e, "drop capabilities");
	return 0;
}

int rt_lockdown_init_process(const struct cell_plan *plan, struct sc_err *err)
{
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return sc_fail(err, errno, "set non-dumpable");
	if (drop_capabilities(plan->keep_setid, err) < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sc_fail(err, errno, "set no_new_privs");
	return 0;
}

static int set_rlimit(int res, uint64_t v, const char *what, struct sc_err *err)
{
	struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
	if (setrlimit(res, &rl) < 0)
		return sc_fail(err, errno, "set %s limit", what);
	return 0;
}

int rt_lockdown_rlimits(const struct policy_limits *l, bool cgroup_limits, struct sc_err *err)
{
	if (l->nofile && set_rlimit(RLIMIT_NOFILE, l->nofile, "open files", err) < 0)
		return -1;
	if (l->fsize && set_rlimit(RLIMIT_FSIZE, l->fsize, "file size", err) < 0)
		return -1;
	if (cgroup_limits)
		return 0;
	/* No cgroup: weaker stand-ins. RLIMIT_NPROC is counted per user
	 * namespace (Linux >= 5.14), so it bounds this cell alone. */
	if (l->memory && set_rlimit(RLIMIT_AS, l->memory, "address space", err) < 0)
		return -1;
	if (l->pids && set_rlimit(RLIMIT_NPROC, l->pids, "process", err) < 0)
		return -1;
	if (l->cpus > 0 && l->timeout_s > 0) {
		uint64_t secs = (uint64_t)(l->cpus * l->timeout_s) + 1;
		if (set_rlimit(RLIMIT_CPU, secs, "cpu time", err) < 0)
			return -1;
	}
	return 0;
}

int rt_lockdown_apply_filter(const struct policy_filter *f, struct sc_err *err)
{
	if (!f || !f->count)
		return 0;
	struct sock_fprog prog = {.len = (unsigned short)f->count, .filter = f->insns};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return sc_fail(err, errno, "load the seccomp filter");
	return 0;
}

void rt_lockdown_close_fds(int keep_from)
{
	/* Everything from keep_from up is closed on exec; fds the command
	 * must not see but we still need (the exec-error pipe) stay until
	 * then. */
	syscall(SYS_close_range, (unsigned)keep_from, ~0U, CLOSE_RANGE_CLOEXEC);
}

static void close_range_or_loop(unsigned from, unsigned to)
{
	if (syscall(SYS_close_range, from, to, 0) == 0)
		return;
	struct rlimit rl;
	unsigned top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (unsigned)rl.rlim_cur : 65536;
	for (unsigned fd = from; fd <= to && fd < top; fd++)
		close((int)fd);
}

void rt_close_fds_except(int *keep, size_t n)
{
	/* insertion sort: a handful of fds, and no library call that might
	 * allocate (this runs in the post-clone child) */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from)
			close_range_or_loop(from, (unsigned)keep[i] - 1);
		from = (unsigned)keep[i] + 1;
	}
	close_range_or_loop(from, ~0U);
}

/* sandcell doctor: Landlock, and the sysctls that restrict user namespaces
 * (see doctor_walls.h). */
#include "doctor_walls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock.h"

/* The errno of restricting a child as a cell's init does; 0 on success. */
static int try_landlock(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		struct policy_landlock set = {0};
		struct sc_err err = {0};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    rt_landlock_restrict(&set, -1, NULL, 0, &err) < 0)
			_exit(err.errnum > 0 && err.errnum < 256 ? err.errnum : 255);
		_exit(0);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
}

void rt_doctor_landlock(struct cell_check *c)
{
	memset(c, 0, sizeof(*c));
	c->name = "landlock";
	int abi = rt_landlock_abi();
	if (abi < 2) {
		rt_doctor_set(c, CELL_CHECK_WARN,
		    "boot Linux 5.19 or newer with landlock in the lsm= list (e.g. "
		    "lsm=landlock,lockdown,yama,integrity,apparmor)",
		    abi == 1 ? "Landlock ABI 1 only, which refuses renames across directories: cells "
			       "run without their second wall (--require-landlock fails)"
			     : "no Landlock: cells run without their second wall (--require-landlock "
			       "fails)");
		return;
	}
	int e = try_landlock();
	if (e) {
		rt_doctor_set(c, CELL_CHECK_WARN, "report it with this line", "Landlock ABI %d, but restricting a child "
		    "failed: %s", abi, strerror(e));
		return;
	}
	struct policy_landlock set = {0};
	struct rt_landlock_rules r;
	rt_landlock_rules_for(abi, &set, &r);
	char parts[160];
	rt_landlock_describe(&r, parts, sizeof(parts));
	rt_doctor_set(c, CELL_CHECK_OK, "", "ABI %d, enforced around every cell: %s%s", abi, parts,
	    abi >= 4 ? "; tcp connect where the policy says \"connect\": \"proxy\"" : "");
}

/* A sysctl under root ("kernel/x") as a number; -1 when absent. */
static long sysctl_at(const char *root, const char *name)
{
	char path[PATH_MAX], buf[32];
	if (snprintf(path, sizeof(path), "%s/%s", root, name) >= (int)sizeof(path))
		return -1;
	if (sc_read_small(AT_FDCWD, path, 0, buf, sizeof(buf), NULL) <= 0)
		return -1;
	char *end;
	long v = strtol(buf, &end, 10);
	return end == buf ? -1 : v;
}

static const char *own_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return "/usr/local/bin/sandcell";
	buf[n] = '\0';
	return buf;
}

enum restriction { R_NONE, R_MAX_ZERO, R_CLONE_OFF, R_APPARMOR };

static enum restriction find_restriction(const char *root)
{
	if (sysctl_at(root, "user/max_user_namespaces") == 0)
		return R_MAX_ZERO;
	if (sysctl_at(root, "kernel/unprivileged_userns_clone") == 0)
		return R_CLONE_OFF;
	if (sysctl_at(root, "kernel/apparmor_restrict_unprivileged_userns") == 1)
		return R_APPARMOR;
	return R_NONE;
}

static const char *fix_for(enum restriction r, char *buf, size_t size)
{
	char exe[PATH_MAX];
	switch (r) {
	case R_MAX_ZERO:
		return "as root: sysctl -w user.max_user_namespaces=15000, and persist it in "
		       "/etc/sysctl.d/ (no profile or root caller helps while it is 0)";
	case R_CLONE_OFF:
		return "as root: sysctl -w kernel.unprivileged_userns_clone=1, and persist it in "
		       "/etc/sysctl.d/; or run sandcell as root";
	case R_APPARMOR:
		snprintf(buf, size,
			 "as root: sandcell's scripts/install-apparmor.sh %.200s (installs the profile "
			 "/etc/apparmor.d/sandcell that allows user namespaces to this binary); or "
			 "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; or run sandcell as root",
			 own_path(exe, sizeof(exe)));
		return buf;
	case R_NONE:
		break;
	}
	return NULL;
}

const char *rt_doctor_userns_fix(const char *sysctl_root, char *buf, size_t size)
{
	return fix_for(find_restriction(sysctl_root ? sysctl_root : "/proc/sys"), buf, size);
}

void rt_doctor_userns_sysctls(struct cell_check *c, const char *sysctl_root, bool probe_ok)
{
	static const char *const what[] = {
		[R_MAX_ZERO] = "user.max_user_namespaces=0: no one may create user namespaces, "
			       "root included",
		[R_CLONE_OFF] = "kernel.unprivileged_userns_clone=0 (Debian): only root may create "
				"user namespaces",
		[R_APPARMOR] = "kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 23.10+): "
			       "unprivileged user namespaces lose every capability unless an "
			       "AppArmor profile allows the program (mounts then fail with EPERM)",
	};
	memset(c, 0, sizeof(*c));
	c->name = "sysctl";
	const char *root = sysctl_root ? sysctl_root : "/proc/sys";
	enum restriction r = find_restriction(root);
	if (r == R_NONE) {
		rt_doctor_set(c, CELL_CHECK_OK, "", "no sysctl restricts user namespaces");
		return;
	}
	char buf[384];
	const char *fix = fix_for(r, buf, sizeof(buf));
	if (probe_ok)
		rt_doctor_set(c, CELL_CHECK_WARN, fix, "%s; this caller got through (root, or a profile allows "
		    "this binary), other users may not", what[r]);
	else
		rt_doctor_set(c, CELL_CHECK_FAIL, fix, "%s", what[r]);
}

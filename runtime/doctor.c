/* sandcell doctor: can this host run cells, and if not, what to do. Every
 * check tries the feature it names in a throwaway child or cgroup. */
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/idmapfs.h"
#include "../common/parse.h"
#include "cgroup.h"
#include "cgroup_probe.h"
#include "doctor_walls.h"
#include "internal.h"

struct doctor {
	struct cell_check *checks;
	size_t n, max;
	bool cgroup_failed; /* the test cgroup could not be made or removed */
	struct cell_check spare; /* absorbs checks beyond max */
	const char *sysctl_root; /* /proc/sys, or a stand-in for tests */
};

static struct cell_check *check_new(struct doctor *d, const char *name)
{
	struct cell_check *c = d->n < d->max ? &d->checks[d->n++] : &d->spare;
	memset(c, 0, sizeof(*c));
	c->name = name;
	return c;
}

static void check_kernel(struct doctor *d)
{
	struct cell_check *c = check_new(d, "kernel");
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2) {
		rt_doctor_set(c, CELL_CHECK_WARN, "", "cannot read the kernel version");
		return;
	}
	unsigned v = major * 1000 + minor;
	if (v < 5003)
		rt_doctor_set(c, CELL_CHECK_FAIL, "upgrade to Linux 5.14 or newer",
		    "Linux %s: no clone3(), cells cannot start", u.release);
	else if (v < 5011)
		rt_doctor_set(c, CELL_CHECK_WARN, "upgrade to Linux 5.14 or newer",
		    "Linux %s: overlayfs in user namespaces needs 5.11 unless the "
		    "distribution patched it in, and cgroup.kill 5.14",
		    u.release);
	else if (v < 5014)
		rt_doctor_set(c, CELL_CHECK_WARN, "upgrade to Linux 5.14 or newer",
		    "Linux %s: no cgroup.kill, teardown falls back to killing pid by pid",
		    u.release);
	else
		rt_doctor_set(c, CELL_CHECK_OK, "", "Linux %s", u.release);
}

/* ---- namespaces, id map, overlay: one throwaway child ---- */

enum ns_stage { NS_USERNS = 1, NS_OTHERS, NS_MOUNT, NS_OVERLAY, NS_DONE };

struct ns_report {
	int stage; /* the stage that failed, or NS_DONE */
	int errnum;
	char what[160];
};

static void ns_report(int fd, int stage, int errnum, const char *what)
{
	struct ns_report r = {.stage = stage, .errnum = errnum};
	snprintf(r.what, sizeof(r.what), "%s", what);
	(void)sc_write_all(fd, &r, sizeof(r));
}

static int write_small(const char *path, const char *text)
{
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	return sc_write_all(fd, text, strlen(text));
}

/* The child: what a cell does first, on a tmpfs over /tmp in its own mount
 * namespace: an overlay of a tmpfs layer and the host's /usr with a tmpfs
 * upper, written through. Never returns. */
static void __attribute__((noreturn)) ns_child(int report, int go)
{
	char b;
	if (unshare(CLONE_NEWUSER) < 0) {
		ns_report(report, NS_USERNS, errno, "unshare(CLONE_NEWUSER)");
		_exit(1);
	}
	ns_report(report, 0, 0, "");
	if (read(go, &b, 1) != 1)
		_exit(1);
	/* as a cell's init: become the namespace's root, whose ids are mapped */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
		ns_report(report, NS_USERNS, errno, "become root in the user namespace");
		_exit(1);
	}
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC |
		    CLONE_NEWCGROUP) < 0) {
		ns_report(report, NS_OTHERS, errno, "unshare(mount, pid, net, uts, ipc, cgroup)");
		_exit(1);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		ns_report(report, NS_MOUNT, errno, "make / private");
		_exit(1);
	}
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0) {
		ns_report(report, NS_MOUNT, errno, "mount tmpfs on /tmp");
		_exit(1);
	}
	static const char *const dirs[] = {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"};
	for (size_t i = 0; i < SC_ARRAY_LEN(dirs); i++)
		if (mkdir(dirs[i], 0755) < 0) {
			ns_report(report, NS_MOUNT, errno, "mkdir on the tmpfs");
			_exit(1);
		}
	if (write_small("/tmp/l/probe", "lower\n") < 0) {
		ns_report(report, NS_MOUNT, errno, "write on the tmpfs");
		_exit(1);
	}
	if (mount("overlay", "/tmp/m", "overlay", MS_NOSUID | MS_NODEV,
		  "lowerdir=/tmp/l:/usr,upperdir=/tmp/u,workdir=/tmp/w") < 0) {
		ns_report(report, NS_OVERLAY, errno, "mount overlay (lower: a tmpfs dir and /usr)");
		_exit(1);
	}
	struct stat st;
	if (write_small("/tmp/m/written", "upper\n") < 0 || stat("/tmp/u/written", &st) < 0 ||
	    stat("/tmp/m/probe", &st) < 0 || stat("/tmp/m/bin", &st) < 0) {
		ns_report(report, NS_OVERLAY, errno, "use the overlay");
		_exit(1);
	}
	ns_report(report, NS_DONE, 0, "");
	_exit(0);
}

static const char *userns_fix(const char *sysctl_root, char *buf, size_t size)
{
	const char *fix = rt_doctor_userns_fix(sysctl_root, buf, size);
	return fix ? fix
		   : "check that 'unshare --user --map-root-user true' works; the kernel needs "
		     "CONFIG_USER_NS";
}

/* Forks the probe child, maps it as a cell is mapped and lets it go on:
 * 1 with its last report in *r, 0 when it died without one, -1 (errno)
 * when it could not be started. */
static int run_ns_probe(const struct idmap *map, struct ns_report *r)
{
	int rep[2], go[2];
	struct sc_err err = {0};
	if (pipe2(rep, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(go, O_CLOEXEC) < 0) {
		close(rep[0]);
		close(rep[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(rep[0]);
		close(rep[1]);
		close(go[0]);
		close(go[1]);
		return -1;
	}
	if (pid == 0) {
		close(rep[0]);
		close(go[1]);
		ns_child(rep[1], go[0]);
	}
	close(rep[1]);
	close(go[0]);

	*r = (struct ns_report){0};
	bool got = sc_read_all(rep[0], r, sizeof(*r)) == (ssize_t)sizeof(*r);
	if (got && r->stage == 0) {
		/* unshared: map it as a cell is mapped, then let it go on */
		if (rt_idmap_write(pid, map, &err) < 0) {
			r->stage = NS_USERNS;
			r->errnum = 0;
			snprintf(r->what, sizeof(r->what), "%.150s", err.msg);
		} else if (write(go[1], "g", 1) == 1) {
			got = sc_read_all(rep[0], r, sizeof(*r)) == (ssize_t)sizeof(*r);
		}
	}
	close(go[1]);
	close(rep[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return got ? 1 : 0;
}

/* The userns and overlay checks from the probe's report. */
static void report_namespaces(const char *sysctl_root, struct cell_check *cu, struct cell_check *co,
			      const struct idmap *map, const struct ns_report *r)
{
	char fixbuf[384];
	const char *why = r->errnum ? strerror(r->errnum) : "";
	switch (r->stage) {
	case NS_USERNS:
		rt_doctor_set(cu, CELL_CHECK_FAIL, userns_fix(sysctl_root, fixbuf, sizeof(fixbuf)), "%s%s%s", r->what,
		    r->errnum ? ": " : "", why);
		return;
	case NS_OTHERS:
	case NS_MOUNT:
		rt_doctor_set(cu, CELL_CHECK_FAIL, userns_fix(sysctl_root, fixbuf, sizeof(fixbuf)),
		    "user namespace created but %s failed: %s", r->what, why);
		return;
	default:
		break;
	}
	if (map->range)
		rt_doctor_set(cu, CELL_CHECK_OK, "",
		    "user, mount, pid, net, uts, ipc and cgroup namespaces; cell root is host "
		    "uid %u (range of %u)",
		    map->uid_start, map->count);
	else
		rt_doctor_set(cu, CELL_CHECK_OK, "",
		    "user, mount, pid, net, uts, ipc and cgroup namespaces; cell root is "
		    "your uid %u",
		    map->uid_start);
	if (r->stage == NS_OVERLAY)
		rt_doctor_set(co, CELL_CHECK_FAIL,
		    r->errnum == ENODEV ? "load the module: modprobe overlay"
					: "Linux 5.11+ mounts overlayfs in user namespaces; upgrade the kernel",
		    "%s in a user namespace: %s", r->what, why);
	else
		rt_doctor_set(co, CELL_CHECK_OK, "", "overlay of /usr with a tmpfs upper layer in a user namespace");
}

static void check_namespaces(struct doctor *d)
{
	struct cell_check *cu = check_new(d, "userns");
	struct cell_check *co = check_new(d, "overlay");
	struct sc_err err = {0};
	struct idmap map;

	rt_doctor_set(co, CELL_CHECK_FAIL, "", "not tried: user namespaces failed");
	if (rt_idmap_for_caller(&map, &err) < 0) {
		rt_doctor_set(cu, CELL_CHECK_FAIL, "", "no id map for this user: %s", err.msg);
		return;
	}
	struct ns_report r;
	int got = run_ns_probe(&map, &r);
	if (got < 0)
		rt_doctor_set(cu, CELL_CHECK_FAIL, "", "cannot start the probe: %s", strerror(errno));
	else if (!got)
		rt_doctor_set(cu, CELL_CHECK_FAIL, "", "the probe child died without a report");
	else
		report_namespaces(d->sysctl_root, cu, co, &map, &r);
}

/* ---- cgroups ---- */

/* Root on a v1 or hybrid host: a test cgroup in each v1 hierarchy, with a
 * limit per controller, made and removed the way a cell's are. */
/* A test cgroup "doctor-PID" with a small limit per controller in ctrls. */
static int test_cgroup_create(struct cell_cgroup *cg, unsigned ctrls, struct sc_err *err)
{
	struct cell_spec spec;
	memset(&spec, 0, sizeof(spec));
	spec.limits.memory = (ctrls & CG_CTRL_MEMORY) ? 64ull << 20 : 0;
	spec.limits.pids = (ctrls & CG_CTRL_PIDS) ? 64 : 0;
	spec.limits.cpus = (ctrls & CG_CTRL_CPU) ? 0.5 : 0;
	char id[64];
	snprintf(id, sizeof(id), "doctor-%d", (int)getpid());
	return rt_cgroup_create(cg, id, &spec, &spec.limits, err);
}

static void check_cgroups_v1(struct doctor *d, struct cell_check *c, const struct cg_host *h)
{
	const char *mode = rt_cg_mode_name(h->mode);
	char have[64], missing[64], where[3 * 48] = "";
	unsigned ctrls = h->v1_writable & CG_CTRL_ALL;
	rt_cg_ctrl_names(ctrls, have, sizeof(have));
	rt_cg_ctrl_names(CG_CTRL_ALL & ~ctrls, missing, sizeof(missing));
	for (unsigned bit = CG_CTRL_MEMORY; bit & CG_CTRL_ALL; bit <<= 1) {
		size_t used = strlen(where);
		if (ctrls & bit)
			snprintf(where + used, sizeof(where) - used, "%s%.40s", used ? " " : "",
				 h->v1_mount[CG_CTRL_INDEX(bit)]);
	}
	struct cell_cgroup cg;
	struct sc_err err = {0};
	if (test_cgroup_create(&cg, ctrls, &err) < 0 || !cg.active) {
		d->cgroup_failed = true;
		rt_doctor_set(c, CELL_CHECK_FAIL, "see docs/cgroups.md", "%s: cgroup v1 test cgroup: %.250s", mode,
		    cg.active ? cg.why : err.msg);
		return;
	}
	char saved[sizeof(cg.path)];
	snprintf(saved, sizeof(saved), "%s", cg.path);
	if (rt_cgroup_destroy(&cg, &err) < 0) {
		d->cgroup_failed = true;
		rt_doctor_set(c, CELL_CHECK_FAIL, "see docs/cgroups.md", "%s: test cgroup not removed: %.250s", mode,
		    err.msg);
		return;
	}
	for (char *p = saved + strlen(RT_CG_V1_PREFIX), *q; p && *p; p = q) {
		q = strchr(p, ':');
		if (q)
			*q++ = '\0';
		if (access(p, F_OK) == 0) {
			d->cgroup_failed = true;
			rt_doctor_set(c, CELL_CHECK_FAIL, "see docs/cgroups.md", "%s: test cgroup %.200s not removed",
			    mode, p);
			return;
		}
	}
	if (ctrls != CG_CTRL_ALL)
		rt_doctor_set(c, CELL_CHECK_WARN, "mount the missing cgroup v1 controller(s) (until then those limits fall back to rlimits)",
		    "%s: cgroup v1 for root callers: %s at %.150s (not %s)", mode, have, where, missing);
	else
		rt_doctor_set(c, CELL_CHECK_OK, "",
		    "%s: cgroup v1 for root callers: %s, cells under %.150s (each /sandcell)", mode,
		    have, where);
}

static void check_cgroups(struct doctor *d)
{
	struct cell_check *c = check_new(d, "cgroup");
	_cleanup_free_ struct cg_host *h = malloc(sizeof(*h));
	char have[64], missing[64];
	if (!h) {
		rt_doctor_set(c, CELL_CHECK_WARN, "", "out of memory");
		return;
	}
	rt_cgroup_host_status(h);
	const char *mode = rt_cg_mode_name(h->mode);
	/* What cells use: v2 where delegated, else v1 for root (cgroup.c) */
	bool v2 = h->base[0] && (h->delegated & CG_CTRL_ALL);
	if (!v2 && geteuid() == 0 &&
	    (h->v1_writable & (CG_CTRL_MEMORY | CG_CTRL_PIDS)) == (CG_CTRL_MEMORY | CG_CTRL_PIDS)) {
		check_cgroups_v1(d, c, h);
		return;
	}
	const char *v2_fix = h->v1 && geteuid() != 0
		? "boot with systemd.unified_cgroup_hierarchy=1 (pure cgroup v2) or run sandcell as "
		  "root (it uses the v1 controllers); until then limits fall back to rlimits"
		: "boot with systemd.unified_cgroup_hierarchy=1 (pure cgroup v2); until then "
		  "limits fall back to rlimits";
	if (h->mode == CG_MODE_NONE || h->mode == CG_MODE_V1) {
		rt_doctor_set(c, CELL_CHECK_WARN, v2_fix, "%s: %s", mode, h->why);
		return;
	}
	if (h->mode == CG_MODE_HYBRID && !((h->available | h->delegated) & CG_CTRL_ALL)) {
		rt_doctor_set(c, CELL_CHECK_WARN, v2_fix, "%s: v1 controllers, v2 at %.100s: %s", mode,
		    h->mount, h->why);
		return;
	}
	if (!h->base[0]) {
		rt_doctor_set(c, CELL_CHECK_WARN,
		    "run sandcell under 'systemd-run --user --scope -p Delegate=yes' or delegate "
		    "a subtree (docs/cgroups.md); until then limits fall back to rlimits",
		    "%s at %.100s, own cgroup %.100s: %s", mode, h->mount, h->own, h->why);
		return;
	}
	unsigned deleg = h->delegated & CG_CTRL_ALL;
	rt_cg_ctrl_names(deleg, have, sizeof(have));
	rt_cg_ctrl_names(CG_CTRL_ALL & ~deleg, missing, sizeof(missing));
	if (!deleg) {
		rt_doctor_set(c, CELL_CHECK_WARN, h->mode == CG_MODE_HYBRID ? v2_fix : "see docs/cgroups.md",
		    "%s at %.100s: %s", mode, h->mount, h->why);
		return;
	}

	/* The real thing: a cgroup with a limit per delegated controller. */
	struct cell_cgroup cg;
	struct sc_err err = {0};
	if (test_cgroup_create(&cg, deleg, &err) < 0) {
		d->cgroup_failed = true;
		rt_doctor_set(c, CELL_CHECK_FAIL, "see docs/cgroups.md", "%s at %.100s: %s", mode, h->mount,
		    err.msg);
		return;
	}
	if (!cg.active) {
		rt_doctor_set(c, CELL_CHECK_WARN, "see docs/cgroups.md", "%s at %.100s: %s", mode, h->mount,
		    cg.why);
		return;
	}
	char path[sizeof(cg.path)];
	snprintf(path, sizeof(path), "%s", cg.path);
	if (rt_cgroup_destroy(&cg, &err) < 0 || access(path, F_OK) == 0) {
		d->cgroup_failed = true;
		rt_doctor_set(c, CELL_CHECK_FAIL, "see docs/cgroups.md", "%s: test cgroup %.150s not removed: %s",
		    mode, path, err.msg);
		return;
	}
	if (deleg != CG_CTRL_ALL)
		rt_doctor_set(c, CELL_CHECK_WARN,
		    "systemd delegates only memory and pids to users by default; add cpu as "
		    "docs/cgroups.md shows",
		    "%s at %.100s, cells under %.100s/sandcell, delegated: %s (not %s)", mode,
		    h->mount, h->base, have, missing);
	else
		rt_doctor_set(c, CELL_CHECK_OK, "", "%s at %.100s, cells under %.100s/sandcell, delegated: %s",
		    mode, h->mount, h->base, have);
}

/* Which mechanism holds each limit here (cell_limit_mechanisms). */
static void check_limits(struct doctor *d)
{
	struct cell_check *c = check_new(d, "limits");
	struct cell_limit_mechanisms m;
	cell_limit_mechanisms(&m);
	static const char *const what[][3] = {
		/* rlimit, cgroup v1, cgroup v2 */
		{"rlimit (RLIMIT_AS, per process)", "cgroup v1 (memory.limit_in_bytes + memsw)",
		 "cgroup v2 (memory.max, memory.swap.max 0)"},
		{"rlimit (RLIMIT_NPROC of the cell's user namespace)", "cgroup v1 (pids.max)",
		 "cgroup v2 (pids.max)"},
		{"rlimit (RLIMIT_CPU: cpus x --timeout)", "cgroup v1 (cpu.cfs_quota_us)",
		 "cgroup v2 (cpu.max)"},
	};
	enum cell_limit_how how[3] = {m.memory, m.pids, m.cpu};
	bool all_cgroup = true;
	for (int i = 0; i < 3; i++)
		all_cgroup = all_cgroup && how[i] != CELL_LIMIT_RLIMIT;
	rt_doctor_set(c, all_cgroup && !d->cgroup_failed ? CELL_CHECK_OK : CELL_CHECK_WARN,
	    d->cgroup_failed ? "see the cgroup line: cells fall back to rlimits or fail there"
			     : "see the cgroup line for how to get cgroup limits",
	    "memory: %s, pids: %s, cpu: %s", what[0][how[0]], what[1][how[1]], what[2][how[2]]);
}

/* ---- seccomp ---- */

static void check_seccomp(struct doctor *d)
{
	struct cell_check *c = check_new(d, "seccomp");
	char actions[256] = "";
	if (sc_read_small(AT_FDCWD, "/proc/sys/kernel/seccomp/actions_avail", 0, actions,
			  sizeof(actions), NULL) > 0)
		actions[strcspn(actions, "\n")] = '\0';
	else
		actions[0] = '\0';
	/* A filter that fails getppid() with a telltale errno. */
	pid_t pid = fork();
	if (pid < 0) {
		rt_doctor_set(c, CELL_CHECK_WARN, "", "cannot fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		struct sock_filter insns[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 77),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {.len = SC_ARRAY_LEN(insns), .filter = insns};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			_exit(2);
		_exit(syscall(SYS_getppid) == -1 && errno == 77 ? 0 : 3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	bool works = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	bool has_errno = strstr(actions, "errno") != NULL;
	bool has_kill = strstr(actions, "kill_process") != NULL;
	if (!works)
		rt_doctor_set(c, CELL_CHECK_FAIL, "use a kernel built with CONFIG_SECCOMP_FILTER",
		    "a seccomp filter could not be loaded (actions: %s)", actions[0] ? actions : "?");
	else if (!has_errno || !has_kill)
		rt_doctor_set(c, CELL_CHECK_WARN, "upgrade to Linux 4.14 or newer",
		    "filters load, but actions available are only: %s", actions);
	else
		rt_doctor_set(c, CELL_CHECK_OK, "", "filters load; actions: %s", actions);
}

/* ---- id ranges ---- */

/* Another entry of /etc/subuid overlapping [start, start+count)? */
static bool subid_overlap(const char *text, uint32_t start, uint32_t count, char *who,
			  size_t size)
{
	const char *p = text;
	while (p && *p) {
		char name[64];
		unsigned long s, n;
		if (sscanf(p, "%63[^:\n]:%lu:%lu", name, &s, &n) == 3 && strcmp(name, "sandcell") &&
		    s < (unsigned long)start + count && s + n > start) {
			snprintf(who, size, "%s", name);
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static void check_idmap(struct doctor *d)
{
	struct cell_check *c = check_new(d, "subuid");
	struct idmap map;
	struct sc_err err = {0};
	if (rt_idmap_for_caller(&map, &err) < 0) {
		rt_doctor_set(c, CELL_CHECK_FAIL, "", "%s", err.msg);
		return;
	}
	if (!map.range) {
		rt_doctor_set(c, CELL_CHECK_OK, "",
		    "rootless: a cell maps only your uid %u, no subordinate ids needed", map.uid_start);
		return;
	}
	char text[16384] = "", who[64];
	if (sc_read_small(AT_FDCWD, "/etc/subuid", 0, text, sizeof(text), NULL) < 0)
		text[0] = '\0';
	uint32_t s, n;
	bool own = sc_parse_subid(text, "sandcell", &s, &n) == 0;
	if (map.count < 65536)
		rt_doctor_set(c, CELL_CHECK_WARN, "give sandcell 65536 ids: 'sandcell:START:65536' in /etc/subuid and /etc/subgid",
		    "cells map %u ids from %u; programs that use ids above %u will fail", map.count,
		    map.uid_start, map.count - 1);
	else if (subid_overlap(text, map.uid_start, map.count, who, sizeof(who)))
		rt_doctor_set(c, CELL_CHECK_WARN,
		    "add an unused range as 'sandcell:START:65536' to /etc/subuid and /etc/subgid",
		    "cells map host uids %u-%u, which overlap %s's range in /etc/subuid",
		    map.uid_start, map.uid_start + map.count - 1, who);
	else
		rt_doctor_set(c, CELL_CHECK_OK, "", "cells map host uids %u-%u (%s)", map.uid_start,
		    map.uid_start + map.count - 1,
		    own ? "the sandcell entry of /etc/subuid" : "the default range");
}

/* Root callers: whether new image layers keep their own owners and are
 * idmapped into cells, or are stored shifted into the cells' range. */
static void check_layers(struct doctor *d)
{
	struct idmap map;
	if (rt_idmap_for_caller(&map, NULL) < 0 || !map.range)
		return;
	struct cell_check *c = check_new(d, "layers");
	struct sc_err why = {0};
	const char *dir = cell_data_root();
	if (sc_idmap_layers_supported(dir, map.uid_start, map.gid_start, map.count, &why) == 1)
		rt_doctor_set(c, CELL_CHECK_OK, "",
		    "idmapped: new image layers stay owned by host root, cells see them through "
		    "idmapped mounts");
	else
		rt_doctor_set(c, CELL_CHECK_WARN, "Linux 5.19+ and a data directory on ext4, xfs, btrfs or tmpfs",
		    "shifted: new image layers are owned by the cells' host range (%s)", why.msg);
}

/* ---- directories ---- */

static void check_dir(struct doctor *d, const char *name, const char *dir, const char *what)
{
	struct cell_check *c = check_new(d, name);
	struct sc_err err = {0};
	char probe[PATH_MAX];
	if (cell_ensure_private_dir(dir, &err) < 0) {
		rt_doctor_set(c, CELL_CHECK_FAIL, "set SANDCELL_ROOT (or --root) to a directory of your own",
		    "%s: %s", what, err.msg);
		return;
	}
	if (sc_path(probe, sizeof(probe), "%s/.doctor-XXXXXX", dir) < 0) {
		rt_doctor_set(c, CELL_CHECK_FAIL, "set SANDCELL_ROOT to a shorter path", "%s: path too long", what);
		return;
	}
	int fd = mkostemp(probe, O_CLOEXEC);
	if (fd < 0) {
		rt_doctor_set(c, CELL_CHECK_FAIL, "set SANDCELL_ROOT (or --root) to a writable directory",
		    "%s %s: cannot write: %s", what, dir, strerror(errno));
		return;
	}
	close(fd);
	unlink(probe);
	rt_doctor_set(c, CELL_CHECK_OK, "", "%s %s", what, dir);
}

/* The userns probe's verdict, then what the sysctls say about it. */
static void check_userns_sysctls(struct doctor *d)
{
	bool probe_ok = false;
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->checks[i].name, "userns"))
			probe_ok = d->checks[i].status == CELL_CHECK_OK;
	rt_doctor_userns_sysctls(check_new(d, "sysctl"), d->sysctl_root, probe_ok);
}

size_t cell_doctor(struct cell_check *checks, size_t max)
{
	return cell_doctor_at(checks, max, NULL);
}

size_t cell_doctor_at(struct cell_check *checks, size_t max, const char *sysctl_root)
{
	struct doctor d = {.checks = checks, .max = max,
			   .sysctl_root = sysctl_root ? sysctl_root : "/proc/sys"};
	check_kernel(&d);
	check_namespaces(&d);
	check_userns_sysctls(&d);
	rt_doctor_landlock(check_new(&d, "landlock"));
	check_cgroups(&d);
	check_limits(&d);
	check_seccomp(&d);
	check_idmap(&d);
	check_dir(&d, "state-dir", cell_state_root(), "cell state in");
	check_dir(&d, "data-dir", cell_data_root(), "images in");
	check_layers(&d);
	return d.n;
}

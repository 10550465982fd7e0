/* What the host's cgroups look like from this process: the v2 mount, our own
 * cgroup, where cell leaves can go and which controllers are delegated there.
 * Reads only; cgroup.c does the writing. */
#include "cgroup_probe.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/sc.h"

static const struct {
	const char *name;
	unsigned bit;
} CONTROLLERS[] = {
	{"memory", CG_CTRL_MEMORY},
	{"pids", CG_CTRL_PIDS},
	{"cpu", CG_CTRL_CPU},
};

const char *rt_cg_mode_name(enum cg_mode m)
{
	switch (m) {
	case CG_MODE_V1:
		return "v1";
	case CG_MODE_HYBRID:
		return "hybrid";
	case CG_MODE_V2:
		return "v2";
	case CG_MODE_NONE:
		break;
	}
	return "none";
}

void rt_cg_ctrl_names(unsigned set, char *buf, size_t size)
{
	size_t used = 0;
	if (size == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < SC_ARRAY_LEN(CONTROLLERS); i++) {
		if (!(set & CONTROLLERS[i].bit))
			continue;
		int n = snprintf(buf + used, size - used, "%s%s", used ? " " : "",
				 CONTROLLERS[i].name);
		if (n < 0 || (size_t)n >= size - used)
			break;
		used += (size_t)n;
	}
	if (used == 0)
		snprintf(buf, size, "none");
}

/* ---- pure parsers ---- */

/* Copy one space-separated field, decoding mountinfo's \ooo escapes.
 * Advances *p past the field and one separator. */
static int mi_field(const char **p, char *out, size_t size)
{
	const char *s = *p;
	size_t n = 0;
	if (*s == '\0' || *s == '\n')
		return -1;
	while (*s && *s != ' ' && *s != '\n') {
		char c = *s;
		if (c == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			c = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			s++;
		}
		if (n + 1 >= size)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	if (*s == ' ')
		s++;
	*p = s;
	return 0;
}

int rt_cg_parse_mountinfo_line(const char *line, struct cg_mountinfo *out)
{
	char skip[PATH_MAX];
	const char *p = line;
	memset(out, 0, sizeof(*out));
	/* id parent major:minor root point options [optional...] - type source superopts */
	for (int i = 0; i < 3; i++)
		if (mi_field(&p, skip, sizeof(skip)) < 0)
			return -1;
	if (mi_field(&p, out->root, sizeof(out->root)) < 0 ||
	    mi_field(&p, out->point, sizeof(out->point)) < 0 ||
	    mi_field(&p, skip, sizeof(skip)) < 0)
		return -1;
	for (;;) {
		if (mi_field(&p, skip, sizeof(skip)) < 0)
			return -1;
		if (!strcmp(skip, "-"))
			break;
	}
	if (mi_field(&p, out->fstype, sizeof(out->fstype)) < 0 ||
	    mi_field(&p, skip, sizeof(skip)) < 0 ||
	    mi_field(&p, out->superopts, sizeof(out->superopts)) < 0)
		return -1;
	return 0;
}

bool rt_cg_v1_has_controller(const char *superopts)
{
	static const char *const v1[] = {
		"cpu",     "cpuacct", "cpuset", "memory",     "pids",
		"blkio",   "devices", "freezer", "net_cls",   "net_prio",
		"perf_event", "hugetlb", "rdma", "misc",
	};
	const char *p = superopts;
	while (*p) {
		size_t len = strcspn(p, ",");
		for (size_t i = 0; i < SC_ARRAY_LEN(v1); i++)
			if (strlen(v1[i]) == len && !strncmp(p, v1[i], len))
				return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

unsigned rt_cg_v1_controllers(const char *superopts)
{
	unsigned set = 0;
	const char *p = superopts;
	while (*p) {
		size_t len = strcspn(p, ",");
		for (size_t i = 0; i < SC_ARRAY_LEN(CONTROLLERS); i++)
			if (strlen(CONTROLLERS[i].name) == len && !strncmp(p, CONTROLLERS[i].name, len))
				set |= CONTROLLERS[i].bit;
		p += len;
		if (*p == ',')
			p++;
	}
	return set;
}

long rt_cg_leaf_creator(const char *name)
{
	static const char *const prefixes[] = {"run-", "doctor-"};
	for (size_t i = 0; i < SC_ARRAY_LEN(prefixes); i++) {
		size_t plen = strlen(prefixes[i]);
		if (strncmp(name, prefixes[i], plen))
			continue;
		const char *p = name + plen;
		long pid = 0;
		if (*p < '1' || *p > '9')
			return 0;
		for (; *p >= '0' && *p <= '9'; p++) {
			pid = pid * 10 + (*p - '0');
			if (pid > (1L << 22)) /* PID_MAX_LIMIT */
				return 0;
		}
		return (*p == '-' || *p == '\0') ? pid : 0;
	}
	return 0;
}

int rt_cg_parse_self_cgroup(const char *text, char *out, size_t size)
{
	const char *p = text;
	while (p && *p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len >= 3 && !strncmp(p, "0::", 3)) {
			const char *path = p + 3;
			size_t plen = len - 3;
			static const char deleted[] = " (deleted)";
			size_t dlen = sizeof(deleted) - 1;
			if (plen >= dlen && !strncmp(path + plen - dlen, deleted, dlen))
				plen -= dlen;
			if (plen == 0 || path[0] != '/' || plen >= size)
				return -1;
			memcpy(out, path, plen);
			out[plen] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

unsigned rt_cg_parse_controllers(const char *text)
{
	unsigned set = 0;
	const char *p = text;
	while (*p) {
		p += strspn(p, " \t\n");
		size_t len = strcspn(p, " \t\n");
		if (len == 0)
			break;
		for (size_t i = 0; i < SC_ARRAY_LEN(CONTROLLERS); i++)
			if (strlen(CONTROLLERS[i].name) == len &&
			    !strncmp(p, CONTROLLERS[i].name, len))
				set |= CONTROLLERS[i].bit;
		p += len;
	}
	return set;
}

long long rt_cg_cpu_quota_us(double cpus)
{
	if (!(cpus > 0) || cpus > 4096)
		return -1;
	double quota = round(cpus * RT_CG_CPU_PERIOD_US);
	if (quota < 1000) /* the kernel's smallest quota */
		quota = 1000;
	return (long long)quota;
}

int rt_cg_format_cpu_max(double cpus, char *buf, size_t size)
{
	long long quota = rt_cg_cpu_quota_us(cpus);
	if (quota < 0)
		return -1;
	int n = snprintf(buf, size, "%lld %d", quota, RT_CG_CPU_PERIOD_US);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

int rt_cg_parse_keyed(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	const char *p = text;
	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ' ') {
			const char *v = p + klen + 1;
			if (*v < '0' || *v > '9')
				return -1;
			uint64_t val = 0;
			for (; *v >= '0' && *v <= '9'; v++) {
				uint64_t d = (uint64_t)(*v - '0');
				if (val > (UINT64_MAX - d) / 10)
					return -1;
				val = val * 10 + d;
			}
			if (*v != '\n' && *v != '\0')
				return -1;
			*out = val;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

bool rt_cg_valid_leaf_name(const char *s)
{
	size_t n = strnlen(s, 129);
	if (n == 0 || n > 128 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

/* ---- reading the host ---- */

static int read_text(const char *path, char *buf, size_t size)
{
	return sc_read_small(AT_FDCWD, path, SC_READ_NOFOLLOW, buf, size, NULL) < 0 ? -1 : 0;
}

static unsigned read_controllers(const char *dir)
{
	char path[PATH_MAX], buf[1024];
	if (sc_path(path, sizeof(path), "%s/cgroup.controllers", dir) < 0 ||
	    read_text(path, buf, sizeof(buf)) < 0)
		return 0;
	return rt_cg_parse_controllers(buf);
}

/* May we create children in dir, enable controllers there and move
 * processes below it (its cgroup.procs is the common ancestor's)? */
static bool cgroup_writable(const char *dir)
{
	static const char *const files[] = {"cgroup.procs", "cgroup.subtree_control"};
	char path[PATH_MAX];
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0)
		return false;
	for (size_t i = 0; i < SC_ARRAY_LEN(files); i++)
		if (sc_path(path, sizeof(path), "%s/%s", dir, files[i]) < 0 ||
		    faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0)
			return false;
	return true;
}

/* Is this process the only one in the cgroup at dir? */
static bool alone_in(const char *dir)
{
	char path[PATH_MAX], buf[256];
	if (sc_path(path, sizeof(path), "%s/cgroup.procs", dir) < 0 ||
	    read_text(path, buf, sizeof(buf)) < 0)
		return false;
	char self[32];
	snprintf(self, sizeof(self), "%d\n", (int)getpid());
	return !strcmp(buf, self);
}

/* Note where a v1 mount puts memory, pids and cpu (the first mount of each
 * wins; a hierarchy mounted twice is the same hierarchy). Only a mount of
 * the hierarchy's root: below it, cells would nest in someone's cgroup. */
static void find_v1_controllers(struct cg_host *h, const struct cg_mountinfo *mi)
{
	unsigned set = rt_cg_v1_controllers(mi->superopts);
	if (strcmp(mi->root, "/"))
		return;
	for (unsigned bit = CG_CTRL_MEMORY; bit & CG_CTRL_ALL; bit <<= 1) {
		if (!(set & bit) || (h->v1 & bit))
			continue;
		snprintf(h->v1_mount[CG_CTRL_INDEX(bit)], PATH_MAX, "%s", mi->point);
		h->v1 |= bit;
		/* root of the hierarchy: mkdir there (and a write to the new
		 * cgroup's files) is what a cell needs */
		if (faccessat(AT_FDCWD, mi->point, W_OK | X_OK, AT_EACCESS) == 0)
			h->v1_writable |= bit;
	}
}

static void find_v2_mount(struct cg_host *h, char *mnt_root, size_t root_size)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	bool v1 = false, v2 = false;
	if (!f)
		return;
	struct cg_mountinfo *mi = malloc(sizeof(*mi));
	if (!mi)
		return;
	while (getline(&line, &cap, f) > 0) {
		if (rt_cg_parse_mountinfo_line(line, mi) < 0)
			continue;
		if (!strcmp(mi->fstype, "cgroup2") && !v2) {
			v2 = true;
			snprintf(h->mount, sizeof(h->mount), "%s", mi->point);
			snprintf(mnt_root, root_size, "%s", mi->root);
		} else if (!strcmp(mi->fstype, "cgroup") &&
			   rt_cg_v1_has_controller(mi->superopts)) {
			v1 = true;
			find_v1_controllers(h, mi);
		}
	}
	free(mi);
	h->mode = v2 ? (v1 ? CG_MODE_HYBRID : CG_MODE_V2)
		     : (v1 ? CG_MODE_V1 : CG_MODE_NONE);
}

/* Our cgroup relative to the mount: /proc/self/cgroup is relative to our
 * cgroup namespace, the mount may show only a subtree of it. */
static int own_cgroup(struct cg_host *h, const char *mnt_root)
{
	char text[8192], path[PATH_MAX];
	if (read_text("/proc/self/cgroup", text, sizeof(text)) < 0 ||
	    rt_cg_parse_self_cgroup(text, path, sizeof(path)) < 0)
		return -1;
	size_t rlen = strlen(mnt_root);
	if (!strcmp(mnt_root, "/"))
		rlen = 0;
	if (strncmp(path, mnt_root, rlen) || (path[rlen] != '/' && path[rlen] != '\0'))
		return -1;
	snprintf(h->own, sizeof(h->own), "%s", path[rlen] ? path + rlen : "/");
	return 0;
}

/* mount + rel, without a doubled slash for the root. */
static int cg_abs(char *out, size_t size, const char *mount, const char *rel)
{
	return sc_path(out, size, "%s%s", mount, strcmp(rel, "/") ? rel : "");
}

static void find_base(struct cg_host *h)
{
	char dir[PATH_MAX], rel[PATH_MAX];
	if (geteuid() == 0 && cgroup_writable(h->mount)) {
		snprintf(h->base, sizeof(h->base), "%s", h->mount);
		return;
	}
	/* The nearest ancestor we may write: a delegated subtree (systemd's
	 * user@UID.service) keeps its processes in leaves below it. */
	snprintf(rel, sizeof(rel), "%s", h->own);
	while (strcmp(rel, "/")) {
		char *slash = strrchr(rel, '/');
		if (slash == rel)
			rel[1] = '\0';
		else
			*slash = '\0';
		if (cg_abs(dir, sizeof(dir), h->mount, rel) == 0 && cgroup_writable(dir)) {
			snprintf(h->base, sizeof(h->base), "%s", dir);
			return;
		}
	}
	/* A delegated cgroup of our own (systemd-run --scope -p Delegate=yes)
	 * with nobody else in it: sandcell moves itself into a leaf first. */
	if (cg_abs(dir, sizeof(dir), h->mount, h->own) == 0 && cgroup_writable(dir) &&
	    alone_in(dir)) {
		snprintf(h->base, sizeof(h->base), "%s", dir);
		h->base_is_own = true;
	}
}

void rt_cgroup_host_status(struct cg_host *h)
{
	char mnt_root[PATH_MAX] = "";
	char own_abs[PATH_MAX];
	memset(h, 0, sizeof(*h));
	find_v2_mount(h, mnt_root, sizeof(mnt_root));
	if (!h->mount[0]) {
		snprintf(h->why, sizeof(h->why), "%s",
			 h->mode == CG_MODE_V1 ? "no cgroup v2 hierarchy is mounted (cgroup v1 host)"
					       : "no cgroup filesystem is mounted");
		return;
	}
	if (own_cgroup(h, mnt_root) < 0) {
		snprintf(h->why, sizeof(h->why),
			 "cannot locate this process's cgroup under %.200s", h->mount);
		return;
	}
	if (cg_abs(own_abs, sizeof(own_abs), h->mount, h->own) == 0)
		h->available = read_controllers(own_abs);
	find_base(h);
	if (h->base[0])
		h->delegated = read_controllers(h->base);
	if (h->mode == CG_MODE_HYBRID && !((h->available | h->delegated) & CG_CTRL_ALL))
		snprintf(h->why, sizeof(h->why), "%s",
			 "cgroup v2 has no memory/pids/cpu controllers delegated (hybrid host)");
	else if (!h->base[0])
		snprintf(h->why, sizeof(h->why), "cgroup %.180s is not delegated to uid %u",
			 h->own, (unsigned)geteuid());
	else if (!(h->delegated & CG_CTRL_ALL))
		snprintf(h->why, sizeof(h->why), "%s",
			 "no memory/pids/cpu controllers are delegated to this user");
}

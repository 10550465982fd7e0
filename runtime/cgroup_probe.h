/* Private to runtime/: what the host's cgroups look like (used by cgroup.c
 * and by the doctor), and the pure parsers behind it (unit-tested). */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cg_mode {
	CG_MODE_NONE,   /* no cgroup filesystem at all */
	CG_MODE_V1,     /* only v1 hierarchies */
	CG_MODE_HYBRID, /* v1 controllers plus a (mostly empty) v2 hierarchy */
	CG_MODE_V2,     /* pure, unified v2 */
};

/* The controllers sandcell uses. */
enum {
	CG_CTRL_MEMORY = 1u << 0,
	CG_CTRL_PIDS = 1u << 1,
	CG_CTRL_CPU = 1u << 2,
	CG_CTRL_ALL = CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPU,
};
#define CG_NCTRL 3
/* The index of a CG_CTRL_* bit (0 memory, 1 pids, 2 cpu). */
#define CG_CTRL_INDEX(bit) __builtin_ctz(bit)

struct cg_host {
	enum cg_mode mode;
	char mount[PATH_MAX];  /* cgroup2 mount point, "" when none */
	char own[PATH_MAX];    /* our cgroup relative to the mount, "/..." */
	unsigned available;    /* CG_CTRL_* listed in our cgroup.controllers */
	/* Where cell leaves would go (the parent of "sandcell/<id>"): the
	 * mount's root for root, else the nearest ancestor of our cgroup we
	 * may write, else our own cgroup when sandcell is alone in it. */
	char base[PATH_MAX];   /* absolute path, "" when none */
	bool base_is_own;      /* base is our own cgroup: move ourselves first */
	unsigned delegated;    /* CG_CTRL_* listed in base's cgroup.controllers */
	char why[256];         /* when base is "" or delegated lacks controllers */
	/* cgroup v1 (v1-only and hybrid hosts): the mount point of the
	 * hierarchy of each controller (by CG_CTRL_INDEX), "" when it has
	 * none; cells go to <mount>/sandcell/<id> for root callers. */
	char v1_mount[CG_NCTRL][PATH_MAX];
	unsigned v1;           /* CG_CTRL_* mounted as v1 hierarchies */
	unsigned v1_writable;  /* of those, the ones whose root we may write */
};

/* Describe the host's cgroups as seen by this process. Reads only; creates
 * nothing. Always fills h (mode NONE when /proc is unreadable). */
void rt_cgroup_host_status(struct cg_host *h);
const char *rt_cg_mode_name(enum cg_mode m);
/* "memory pids cpu" for a CG_CTRL_* set, "none" when empty. */
void rt_cg_ctrl_names(unsigned set, char *buf, size_t size);

/* ---- pure parsers ---- */

/* One /proc/self/mountinfo line: fills the mount point (octal escapes
 * decoded), the mount's root, the filesystem type and the super options.
 * Returns 0, or -1 when the line is malformed or a field is too long. */
struct cg_mountinfo {
	char root[PATH_MAX];
	char point[PATH_MAX];
	char fstype[64];
	char superopts[512];
};
int rt_cg_parse_mountinfo_line(const char *line, struct cg_mountinfo *out);
/* Does a v1 "cgroup" mount's super options name a real controller (not
 * only name=systemd)? */
bool rt_cg_v1_has_controller(const char *superopts);
/* CG_CTRL_* named as options of a v1 mount ("rw,cpu,cpuacct" -> cpu). */
unsigned rt_cg_v1_controllers(const char *superopts);
/* The pid of the sandcell process that made a cell cgroup, from its name
 * ("run-PID-..." for one-shot cells, "doctor-PID"), or 0 when the name
 * does not say (a long-lived cell's own name). */
long rt_cg_leaf_creator(const char *name);
/* The "0::/path" line of /proc/self/cgroup (v2 path), without "(deleted)".
 * Returns 0, or -1 when absent or too long. */
int rt_cg_parse_self_cgroup(const char *text, char *out, size_t size);
/* CG_CTRL_* named in a cgroup.controllers / cgroup.subtree_control text. */
unsigned rt_cg_parse_controllers(const char *text);
/* The CFS quota in microseconds per RT_CG_CPU_PERIOD_US for a CPU count
 * (at least the kernel's smallest, 1000 us), or -1 when out of range. */
#define RT_CG_CPU_PERIOD_US 100000
long long rt_cg_cpu_quota_us(double cpus);
/* cpu.max for a CPU count: "<quota> 100000" (quota at least 1000 us). */
int rt_cg_format_cpu_max(double cpus, char *buf, size_t size);
/* Value of `key` in a flat-keyed file ("key value" lines: memory.events,
 * pids.events, cpu.stat, cgroup.events). Returns 0, or -1 when absent. */
int rt_cg_parse_keyed(const char *text, const char *key, uint64_t *out);
/* A cell id usable as a cgroup directory name. */
bool rt_cg_valid_leaf_name(const char *s);

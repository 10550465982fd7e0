/* Private to runtime/: the pieces cell_run and long-lived cells share. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cell.h"

/* Records the cell's init sends to the host side over its status pipe. */
enum cell_msg_kind {
	CELL_MSG_ERROR = 1, /* setup failed: text in msg */
	CELL_MSG_READY = 2, /* setup done, command starting */
	CELL_MSG_EXIT = 3,  /* value = wait status of the command */
	CELL_MSG_EXECFAIL = 4, /* value = errno of execve */
	CELL_MSG_DETACHED = 5, /* long-lived init no longer dies with its creator */
};
struct cell_msg {
	int32_t kind;
	int32_t value;
	char text[504];
};

/* Everything the child needs, prepared by the parent before clone so that
 * the child does no lookup it could get wrong or slow. */
struct cell_plan {
	const struct cell_spec *spec;
	/* The limits as applied: spec's with the defaults filled in and
	 * POLICY_UNLIMITED turned into 0 (none). */
	struct policy_limits limits;
	int status_fd;   /* child -> parent records */
	int sync_fd;     /* parent -> child: maps written, go */
	int lower_fds[CELL_MAX_LAYERS]; /* O_PATH fds of image layers (child side) */
	size_t nlowers;
	int bind_fds[CELL_MAX_BINDS];   /* O_PATH fds of bind sources */
	bool host_image;
	bool use_rlimits; /* no cgroup: enforce limits as rlimits */
	bool range_map;   /* root caller: cell ids are an unprivileged host range */
	uint32_t id_count; /* ids mapped in the cell: 0 .. id_count-1 */
	/* init keeps CAP_SETUID and CAP_SETGID (and nothing else) to start
	 * commands as another user: a long-lived cell with a range of ids, or
	 * a one-shot cell whose command runs as a user other than root */
	bool keep_setid;
	bool idmap_layers; /* the parent sends idmapped clones of the layers */
	/* cgroup v1: the parent moves the cell into its cgroups while the
	 * child sets up, and says 'a' on sync_fd when it has */
	bool await_cgroup;
	bool serve;       /* long-lived: serve exec requests instead of argv */
	int serve_fd;     /* listening socket for a long-lived cell */
	uint8_t token[32]; /* what every request to it must carry (proto.h) */
	int upper_fd;     /* O_PATH fd of spec->upper_dir, or -1 (child side) */
	bool use_trampoline; /* exec commands through the trampoline */
	int tramp_fd;     /* the exec trampoline's memfd, or -1 (child side) */
	int layer_fd;     /* the image overlay's upper dir, kept by init for
			   * commit; -1 for the host image (child side) */
	int state_fd;     /* all of the cell's writable state (its tmpfs or
			   * persistent directory), kept by init for fork and
			   * checkpoint; -1 for a one-shot cell (child side) */
	/* spec->snapshot and the snapshots below it, top first (parent
	 * side), and their tree/ dirs opened O_PATH (child side) */
	char snap_ids[16][33];
	size_t nsnaps;
	int snap_fds[16];
	int oom_fd;       /* init's own /proc/self/oom_score_adj, or -1 */
	/* a long-lived init's own user and network namespaces, opened before
	 * it stops being dumpable (no one else may open them then), for the
	 * creator's cell_renew (REQ_NAMESPACES); -1 (child side) */
	int ns_fds[2];
	char oom_base[8]; /* its value when opened, restored after each fork */
	/* The signals init ignores (bit N-1 for signal N): an ignored
	 * disposition is the only one that survives exec, so these are what a
	 * command's process resets. Signals 1-31 are read from
	 * /proc/self/stat as the child starts (the caller's at clone time),
	 * the real-time ones come from rt_realtime_signals_ignored() (filled
	 * in by the parent), plus what init ignores itself
	 * (rt_ignore_signal); RT_SIGS_ALL when /proc could not be read. */
	uint64_t ignored_sigs;
};
#define RT_SIGS_ALL UINT64_MAX

/* idmap.c */
struct idmap {
	uint32_t uid_start, gid_start, count;
	bool range; /* root caller: an unprivileged range */
};
/* Decide the cell's id map for the calling user (reads /etc/subuid). */
int rt_idmap_for_caller(struct idmap *m, struct sc_err *err);
/* "0 START COUNT\n" into buf. */
int rt_idmap_format(uint32_t start, uint32_t count, char *buf, size_t size);
int rt_idmap_write(pid_t pid, const struct idmap *m, struct sc_err *err);

/* user.c: whether uid and gid are mapped by map; else -1 with a
 * message that says what to do. */
int rt_user_check_map(uint32_t uid, uint32_t gid, const struct idmap *map, struct sc_err *err);

/* mounts.c: build the root under a fresh tmpfs and pivot into it. Runs in
 * the child, inside the new namespaces. */
int rt_mount_root(struct cell_plan *plan, struct sc_err *err);

/* net.c */
int rt_net_loopback_up(struct sc_err *err);

/* lockdown.c: the last steps before the cell runs untrusted code. */
int rt_lockdown_init_process(const struct cell_plan *plan, struct sc_err *err);
int rt_lockdown_apply_filter(const struct policy_filter *f, struct sc_err *err);
int rt_lockdown_rlimits(const struct policy_limits *l, bool cgroup_limits, struct sc_err *err);
void rt_lockdown_close_fds(int keep_from);
/* Close every fd from 3 up but those in keep (sorted in place; entries
 * below 3 or -1 are ignored). Safe in the post-clone child. */
void rt_close_fds_except(int *keep, size_t n);

/* execcmd.c: a sealed memfd holding the exec trampoline (-1 on failure). */
int rt_exec_trampoline_create(void);
/* Search PATH of env and exec argv through the trampoline (tramp_fd, or
 * directly when -1), with the signals in `ignored` (a plan's ignored_sigs)
 * back at their default and none blocked; returns only on failure with
 * errno set. */
void rt_exec_command(int tramp_fd, uint64_t ignored, char *const *argv, const char *const *env);
/* Commands are the OOM killer's first choice, never init (cmd_limits.c):
 * rt_oom_open in the child while it may still open its own /proc files;
 * then init calls rt_oom_command(plan, true) just before forking a
 * command and rt_oom_command(plan, false) right after. */
void rt_oom_open(struct cell_plan *plan);
void rt_oom_command(const struct cell_plan *plan, bool forking);
/* In a command's process before rt_exec_command: become uid:gid (no
 * supplementary groups) when switch_user, then give up every capability
 * (init may have kept CAP_SETUID/CAP_SETGID). Raw syscalls only: safe in a
 * vfork child. 0, or -1 with errno set. */
int rt_exec_become(bool switch_user, uint32_t uid, uint32_t gid);
/* The real-time signals this process ignores (bits as in ignored_sigs).
 * Probed once per process (pthread_once; the result is immutable and the
 * call thread-safe): sandcell never changes a real-time signal's
 * disposition, so what it inherited at exec holds for its lifetime, while
 * signals 1-31 (SIGPIPE...) change and are read afresh for every cell. */
uint64_t rt_realtime_signals_ignored(void);
/* Ignore sig in this process and add it to *ignored (what commands reset). */
void rt_ignore_signal(uint64_t *ignored, int sig);
/* exit status for an exec errno: 127 for ENOENT, 126 otherwise. */
int rt_exec_failure_status(int errnum);

/* cmd_limits.c: the cell's limits as rlimits (and nofile/fsize), in a
 * command's process before exec; exits 125 on failure. */
void rt_apply_command_limits(const struct cell_plan *plan);
/* The same with the memory limit replaced (0: the plan's). */
void rt_apply_command_limits_mem(const struct cell_plan *plan, uint64_t memory);
/* init.c: PID 1 of a one-shot cell: start the command, reap, forward
 * signals, report the command's wait status, exit. Never returns. */
void rt_init_run_once(const struct cell_plan *plan) __attribute__((noreturn));
/* Post-clone child entry: setup, then init. Never returns. */
void rt_child_main(struct cell_plan *plan) __attribute__((noreturn));
/* child_report.c: report an error from inside the cell and exit 125. */
void rt_child_die(const struct cell_plan *plan, const struct sc_err *err) __attribute__((noreturn));
void rt_child_send(int fd, int kind, int value, const char *text);

/* serve.c: PID 1 of a long-lived cell. Never returns. */
uid_t rt_serve_peer_uid(const struct cell_plan *plan);
void rt_init_serve(const struct cell_plan *plan, uid_t peer_uid) __attribute__((noreturn));

/* zygote.c: where a cell's pre-started Python interpreter waits
 * (lang/py/sc_zygote.py, started by lang/), and the exec server's offer
 * of a command to it: the pid of the command's process (init's child,
 * already let go), or 0 when the interpreter did not take it (absent,
 * refused, silent for a second, or answering nonsense): then the caller
 * starts the command the usual way. */
pid_t rt_zygote_exec(char *const *argv, const char *const *env, const char *cwd, const int fds[3]);
/* The pre-started interpreter (the process listening on its socket, when
 * it is this init's child) killed and reaped. */
void rt_zygote_end(void);

/* status.c: exit status as DESIGN.md says. */
void rt_result_from_wait(struct cell_result *res, int wstatus);


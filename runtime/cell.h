/* sandcell runtime: the cell. The one public interface of runtime/, used by
 * cli/ and agent/. No JSON, no HTTP: callers fill a plain struct cell_spec.
 *
 * Typical use:
 *   struct cell_spec spec; cell_spec_init(&spec);
 *   cell_spec_apply_policy(&spec, &policy);        // optional
 *   spec.argv = argv;
 *   struct cell_result res; cell_run(&spec, &res, &err);
 * or, for a long-lived cell:
 *   cell_create(&spec, "name", &cell, &err);
 *   cell_exec(cell, &req, &res, &err); ...
 *   cell_destroy(cell, &err);
 *
 * Threads. The runtime keeps no unguarded process-wide state: the caches
 * (state/data/cache roots, the host's cgroup probe, the subuid range) are
 * filled once under a mutex, results own their storage, and no call
 * changes a signal disposition. Per call:
 *  - thread-safe (any thread, at once, on different objects): the
 *    cell_spec_* setters, cell_result_free, the *_root getters,
 *    cell_ensure_private_dir, cell_open, cell_exec, cell_copy_*,
 *    cell_read_file, cell_write_file, cell_export_layer, cell_name,
 *    cell_set_memory_limit,
 *    cell_status_get, cell_list, cell_remove, cell_close, cell_destroy,
 *    cell_checkpoint_list, cell_checkpoint_remove,
 *    cell_pool_acquire, cell_pool_release, cell_pool_fork,
 *    cell_pool_checkpoint and cell_pool_rollback on one shared pool. One
 *    struct cell is used by one thread at a time (or by several with the
 *    caller's lock); the cell's init serves many connections at once.
 *  - not from a multi-threaded process: cell_create, cell_run
 *    and cell_doctor fork or clone3 a child that mallocs (libcap,
 *    libnl) before it execs, and cell_pool_new forks its workers: call them
 *    before the first thread starts, or from a single-threaded helper
 *    process. A threaded program makes cells through a pool, whose workers
 *    are such processes.
 *  - cell_run also takes the process's SIGINT, SIGTERM, SIGHUP, SIGQUIT,
 *    SIGUSR1, SIGUSR2 and SIGWINCH
 *    (blocked in the calling thread and read from a signalfd) to relay
 *    them to the cell: one caller per process, as the CLI is.
 *  - cell_set_root: once, before any other call (it re-points what the
 *    root getters return).
 *  - cell_gc and cell_pool_free: while no other thread uses the cells or
 *    the pool they remove.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/sc.h"
#include "../net/net.h"
#include "../policy/policy.h"

#define CELL_MAX_BINDS 64
#define CELL_MAX_LAYERS 64
#define CELL_MAX_ENV 256
#define CELL_MAX_PORTS 16
#define CELL_MAX_VOLUMES 16

/* A published port (run/create -p): TCP on the host's host_addr:host_port
 * relayed to 127.0.0.1:cell_port in the cell's own network namespace. The
 * listener is made on the host (cell_ports_listen) before the cell starts
 * and handed to a relay process inside the cell, which is its only holder
 * there; the cell gets no other network. */
struct cell_port {
	char host_addr[48]; /* numeric IPv4 or IPv6 address */
	uint16_t host_port; /* 0 before cell_ports_listen: any free port */
	uint16_t cell_port;
	int fd;             /* the host listener (O_CLOEXEC), or -1 */
};

struct cell_seed_file {
	const char *path;          /* absolute, in the cell */
	const void *data;
	size_t len;
};

#define CELL_DEFAULT_DISK (1ULL << 30)
#define CELL_DEFAULT_OUTPUT (1ULL << 20)

/* Exit statuses of run/exec when sandcell itself decides. */
enum {
	CELL_EXIT_TIMEOUT = 124,
	CELL_EXIT_INTERNAL = 125,
	CELL_EXIT_NOEXEC = 126,
	CELL_EXIT_NOTFOUND = 127,
};
/* What the command's stderr gets when its argv[0] cannot be executed
 * (argv[0], strerror), before the exit with 127 or 126: callers tell a
 * missing program from one that ran and exited 127 by it. */
#define CELL_EXEC_FAILED_FMT "sandcell: cannot run '%.200s': %s\n"

struct cell_bind {
	const char *host; /* NULL: a tmpfs of `size` bytes */
	const char *cell; /* absolute path in the cell */
	bool readonly;
	uint64_t size;
	const char *volume; /* the named volume host is the source of (recorded
			     * for ps and volume rm), or NULL */
};

struct cell_spec {
	/* Root: NULL/0 layers = the built-in host image; else image layers,
	 * top first, used as overlay lower dirs. */
	const char *layers[CELL_MAX_LAYERS];
	size_t nlayers;
	bool idmap_layers;     /* the layers keep the image's own owners: a root
				* caller's cell sees them through idmapped mounts
				* onto its user namespace (rootfs_image.idmap) */
	const char *upper_dir; /* persistent writable layer (a directory that
				* create fills with upper/ and work/), NULL: tmpfs */
	const char *image_name; /* recorded for ps and image rm; NULL: "host" */
	/* A snapshot layer of another cell's files (cell_fork, rollback):
	 * its id; the layer (and those it stands on) go above the image's
	 * layers, under the cell's own writable layer. NULL: none. */
	const char *snapshot;
	/* Bytes the caller keeps with a long-lived cell (the CLI: the options
	 * it was made with, so that a fork or rollback can make its kind
	 * again), at most CELL_NOTE_MAX; read back with cell_note_get. */
	const void *note;
	size_t note_len;
	bool die_with_creator;  /* long-lived cell killed when its creator dies */

	char *const *argv;     /* command (cell_run, create's first exec) */
	const char *env[CELL_MAX_ENV + 1]; /* KEY=VAL, NULL-terminated */
	size_t nenv;
	const char *workdir;   /* default /testbed */
	const char *const *make_dirs; /* NULL-terminated cell paths made (mkdir
				       * -p, 0755) before anything runs, or NULL */
	/* Small files the cell starts with, made as its root (missing parents
	 * 0755, the file 0644, replacing a regular file the image has there,
	 * never through a link) after the dirs above: no request, no round
	 * trip per file. The data must stay valid until cell_create/cell_run
	 * returns (the child has it from the clone). */
	const struct cell_seed_file *seed_files;
	size_t nseed_files;
	const char *hostname;  /* default "sandcell" */

	struct cell_bind binds[CELL_MAX_BINDS];
	size_t nbinds;

	struct policy_limits limits;
	bool require_cgroups;
	/* Landlock (runtime/landlock.h): the policy's settings; with
	 * require_landlock the cell fails to start (125) where its filesystem
	 * rules cannot be applied. */
	struct policy_landlock landlock;
	bool require_landlock;
	const struct policy_filter *filter; /* NULL: no seccomp */
	/* Egress by allowlist: the cell's 127.0.0.1:3128 is served by
	 * net_proxy_serve on the host side with these rules (runtime/egress.c).
	 * NULL: loopback only. Must outlive the cell's start (and the run). */
	const struct net_rules *egress;
	/* cell_run with egress: the decisions are also appended to this fd as
	 * JSON lines (the caller's, O_APPEND; -1: none). Long-lived cells
	 * keep theirs in their state directory (cell_egress_log_open). */
	int egress_log_fd;

	/* stdio for cell_run: fds to pass, or -1 to capture (stdout/stderr)
	 * or to use /dev/null (stdin). */
	int stdin_fd, stdout_fd, stderr_fd;
	/* A pty of the cell's own for the command (run -t): the command's
	 * 0/1/2 and controlling terminal are its slave, and cell_run relays
	 * stdin_fd -> pty -> stdout_fd (stdout_fd >= 0). The caller's own
	 * terminal (raw mode is the caller's business) never enters the cell. */
	bool tty;

	/* The user the commands run as (cell_run's, and a long-lived cell's
	 * exec requests that name none): uid/gid inside the cell, which must
	 * be mapped in its user namespace (cell_user_check). false: the
	 * cell's root (0:0). */
	bool has_user;
	uint32_t uid, gid;

	/* Published ports, each with its listener made by cell_ports_listen
	 * (the caller closes its copies with cell_ports_close once
	 * cell_create returns or cell_run ends). */
	struct cell_port ports[CELL_MAX_PORTS];
	size_t nports;
};

/* Make the host listeners of ports[0..n): bound to host_addr:host_port
 * (0: a free port, written back into host_port), O_CLOEXEC. On failure
 * none is left open and err says which port and why (in use, privileged).
 * Thread-safe. */
int cell_ports_listen(struct cell_port *ports, size_t n, struct sc_err *err);
void cell_ports_close(struct cell_port *ports, size_t n);

struct cell_result {
	int exit_code;        /* as DESIGN.md: status, 128+N, 124, 125... */
	int signal;           /* signal that killed the command, 0 if none */
	bool timed_out;
	char *out, *err;      /* captured output (malloc'd) or NULL */
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
	double wall_s, cpu_s;
	uint64_t peak_memory; /* bytes, 0 when unknown */
	bool prestarted;      /* it ran in a pre-started interpreter's process */
	const char *limit_hit; /* "memory", "pids", "timeout" or NULL */
	char *warning;        /* e.g. limits weaker than asked, or NULL (malloc'd) */
	struct net_summary *network; /* egress decisions (malloc'd), NULL without egress */
};

/* Defaults: host image, /testbed, hostname sandcell, 1G disk, 1M output,
 * PATH/HOME/TERM/LANG env, stdio passed through. */
void cell_spec_init(struct cell_spec *spec);
/* Copy a policy's fields into spec (limits, env, binds, hostname, workdir);
 * pointers into p stay referenced, so p must outlive spec. */
int cell_spec_apply_policy(struct cell_spec *spec, const struct policy *p,
			   struct sc_err *err);
/* The image's layers (pointers into img, which must outlive spec) and the
 * form they are stored in (idmapped or shifted). Only the layers: its env
 * and workdir are defaults the caller weighs against its own. */
struct rootfs_image;
void cell_spec_set_layers(struct cell_spec *spec, const struct rootfs_image *img);
/* Add or replace KEY=VAL. */
int cell_spec_setenv(struct cell_spec *spec, const char *kv, struct sc_err *err);
/* Egress by allowlist with these rules (NULL: none): sets spec->egress and
 * the cell's HTTP(S)_PROXY, NO_PROXY, npm and git proxy variables. */
int cell_spec_set_egress(struct cell_spec *spec, const struct net_rules *rules,
			 struct sc_err *err);

/* One-shot: build a cell, run spec->argv, tear it all down. Returns 0 when
 * the command ran (its status is in res), -1 when sandcell failed (err). */
int cell_run(const struct cell_spec *spec, struct cell_result *res,
	     struct sc_err *err);
void cell_result_free(struct cell_result *res);

/* ---- long-lived cells ---- */

struct cell;

/* Where sandcell keeps things. With --root DIR / SANDCELL_ROOT=DIR:
 * DIR/run, DIR/data, DIR/cache. Else for root /run/sandcell,
 * /var/lib/sandcell, /var/cache/sandcell; for a user
 * $XDG_RUNTIME_DIR/sandcell, $XDG_DATA_HOME/sandcell (~/.local/share),
 * $XDG_CACHE_HOME/sandcell (~/.cache), falling back to /tmp/sandcell-UID/.
 * Strings that stay valid for the process (worked out once, on first use,
 * under a lock); the directories are not created here. cell_set_root
 * (--root) must come before any other runtime call. */
const char *cell_state_root(void);
const char *cell_data_root(void);
const char *cell_cache_root(void);
void cell_set_root(const char *dir);
/* Create dir (and missing parents) as 0700 (0711 for root, whose cells run
 * as an unprivileged id that must reach their layers), and check that it
 * is a directory owned by the caller and not writable by others. */
int cell_ensure_private_dir(const char *dir, struct sc_err *err);

/* Where a cell's pre-started Python interpreter waits for commands
 * (lang/py/sc_zygote.py; cell_exec_req.prestarted). */
#define CELL_ZYGOTE_SOCKET "/tmp/.sandcell/zygote.sock"

struct cell_exec_req {
	char *const *argv;
	const char *const *env; /* KEY=VAL added to (or replacing in) the cell's
				 * environment; NULL: the cell's as it is */
	const char *cwd;        /* NULL: the cell's workdir */
	double timeout_s;       /* 0: none */
	uint64_t output_limit;  /* 0: CELL_DEFAULT_OUTPUT */
	int stdin_fd;           /* -1: /dev/null */
	int stdout_fd, stderr_fd; /* -1: capture into the result */
	bool tty;               /* a pty of the cell's own, relayed as for
				 * cell_spec.tty (stdout_fd >= 0), or to
				 * on_output as stream 1 (stdout_fd -1) */
	/* has_cancel: cancel_fd becoming readable ends the command (killed
	 * in the cell, as when the caller goes away); cell_exec then fails
	 * with ECANCELED. Another thread writes to a pipe to cancel. */
	bool has_cancel;
	int cancel_fd;
	/* has_user: run as uid:gid (inside the cell) instead of the cell's
	 * default user (cell_spec.has_user, else root); 0:0 is root. */
	bool has_user;
	uint32_t uid, gid;
	/* prestarted: the command (`python3 -u SCRIPT ...`) may run in a
	 * process cloned from the cell's pre-started interpreter, when the
	 * cell has one that takes it (lang/'s prestart; else it runs the
	 * usual way); cell_result.prestarted says which. */
	bool prestarted;
	/* on_output, when set: each piece of a captured stream (stdout_fd or
	 * stderr_fd -1) as it arrives, stream 1 or 2, on the caller's thread
	 * while cell_exec runs, besides going into the result (which keeps
	 * output_limit of it; the hook sees all). It must not call cell_exec
	 * on this cell. */
	void (*on_output)(void *ctx, int stream, const char *data, size_t len);
	void *output_ctx;
	/* on_pty, when set with tty: called once with the pty's master
	 * (output_ctx its ctx) before the command starts, on the caller's
	 * thread. The master stays the runtime's: a caller that keeps a dup
	 * of it may write input to it and set its window size (TIOCSWINSZ)
	 * from another thread while the command runs. */
	void (*on_pty)(void *ctx, int master);
};

/* A user as UID[:GID], numeric ids (at most 4294967294); without :GID the
 * gid is the uid's own number (Docker's rule for an id that has no passwd
 * entry). Pure, thread-safe. */
int cell_parse_user(const char *s, uint32_t *uid, uint32_t *gid, struct sc_err *err);
/* A user as UID[:GID] or NAME[:GROUP]: numbers as cell_parse_user; a name
 * is looked up in /etc/passwd (its uid and primary gid) and a group name
 * in /etc/group of the image whose layers are given (top first; none: the
 * host image, whose /etc is the host's). The files are read beneath each
 * layer without following a symlink, at most 1 MiB each. Thread-safe. */
int cell_resolve_user(const char *s, const char *const *layers, size_t nlayers, uint32_t *uid,
		      uint32_t *gid, struct sc_err *err);
/* Whether uid and gid are mapped in the user namespace of a cell this
 * caller would make (a rootless caller's cells map only 0; a root
 * caller's a range of ids): 0, or -1 with a message saying what to do. */
int cell_user_check(uint32_t uid, uint32_t gid, struct sc_err *err);

int cell_create(const struct cell_spec *spec, const char *name,
		struct cell **out, struct sc_err *err);
/* Start cell `name` again: a --persist cell whose init died, on the files
 * it kept (and the snapshot layer it stood on), made from spec (whose
 * upper_dir and snapshot are ignored). A cell that runs, or kept no
 * files, is refused. On failure the cell stays as it was: gone, its files
 * kept. Not from a multi-threaded process. */
int cell_start_again(const char *name, const struct cell_spec *spec, struct cell **out,
		     struct sc_err *err);
/* Renew cell `name`, made from spec, to what a new cell of spec is:
 * every process of it killed (its pid namespace goes), then a new init
 * in new mount, pid, uts, ipc and cgroup namespaces (a new writable
 * layer, binds, /dev/shm, hostname, IPC objects, mqueues, rlimits and
 * environment as at the start; seccomp and Landlock are the new init's).
 * Its user and network namespaces and its cgroup stay (their setup is
 * most of a cell's cost): the cgroup's memory limit is set back to the
 * spec's, v1's peak counters to 0. Refused (ENOTSUP; then remove it)
 * for a cell that differs from a new one in what stays or cannot be
 * redone: published ports, egress, a tty, volumes or a persistent or
 * forked layer, a paused cell, one whose memory limit killed a process,
 * and one renewed max_renewals times (0: no bound). Keeps the name; the
 * renewal count is in the info file. Not from a multi-threaded process. */
int cell_renew(const char *name, const struct cell_spec *spec, unsigned max_renewals,
	       struct sc_err *err);
/* Whether cells of spec can be renewed at all (the spec's part of what
 * cell_renew checks): no egress, ports, tty, persistent or forked layer. */
bool cell_spec_renewable(const struct cell_spec *spec);
int cell_open(const char *name, struct cell **out, struct sc_err *err);
int cell_exec(struct cell *c, const struct cell_exec_req *req,
	      struct cell_result *res, struct sc_err *err);
/* Copy a host file or directory into the cell, or out of it. The cell path
 * is resolved inside the cell; max_size bounds the bytes copied. */
int cell_copy_in(struct cell *c, const char *host_path, const char *cell_path,
		 uint64_t max_size, struct sc_err *err);
int cell_copy_out(struct cell *c, const char *cell_path, const char *host_path,
		  uint64_t max_size, struct sc_err *err);
/* Copied out, a symlink whose target is absolute or leaves the copied tree
 * is left out (it would point into the host for the next program reading
 * the copy), with one line to log naming the first; links that stay inside
 * are kept. CELL_COPY_KEEP_LINKS keeps every link as it is.
 * cell_copy_out is cell_copy_out_flags with no flags and no log. */
#define CELL_COPY_KEEP_LINKS 1u
int cell_copy_out_flags(struct cell *c, const char *cell_path, const char *host_path,
			uint64_t max_size, unsigned flags, const struct sc_log *log,
			struct sc_err *err);
/* As cell_copy_in, but the host entry becomes cell_path even when that is
 * an existing directory (a directory's entries are merged into it). */
int cell_copy_in_as(struct cell *c, const char *host_path, const char *cell_path,
		    uint64_t max_size, struct sc_err *err);
/* cell_copy_in_as of entry `name` (one component, sent as it is: a
 * symlink is not followed) of the host directory dir_fd. */
int cell_copy_in_at(struct cell *c, int dir_fd, const char *name, const char *cell_path,
		    uint64_t max_size, struct sc_err *err);
/* One regular file of the cell, read or written in place by a worker of
 * its init (no shell, no cat), with the cell's rights; symlinks inside the
 * cell are followed as a command there would. Failures set err->errnum:
 * ENOENT, EISDIR, EINVAL (not a regular file), EACCES, EEXIST (create),
 * ETIMEDOUT, ... */
struct cell_file {
	char *data;      /* malloc'd, NUL-terminated (the file may hold NULs too) */
	size_t len;
	bool truncated;  /* the file is larger than max; data holds max bytes */
};
int cell_read_file(struct cell *c, const char *cell_path, size_t max, double timeout_s,
		   struct cell_file *out, struct sc_err *err);
/* CELL_FILE_CREATE: a new file (0644), fails with EEXIST when the path
 * exists; missing parent directories are made. Without it: replace the
 * contents of an existing regular file. CELL_FILE_CREATE |
 * CELL_FILE_REPLACE: either, in one request (a new file, else the
 * existing regular file's contents replaced). */
#define CELL_FILE_CREATE 1u
#define CELL_FILE_EXEC 2u /* with CELL_FILE_CREATE: executable (0755) */
#define CELL_FILE_REPLACE 4u
int cell_write_file(struct cell *c, const char *cell_path, const void *data, size_t len,
		    unsigned flags, double timeout_s, struct sc_err *err);
/* One exchange with TCP port `port` on the cell's own loopback, made by
 * a worker of its init (the cell needs no network, and its policy's
 * Landlock "connect" must allow the port): req is sent, the cell side is
 * half-closed, and the answer is read until the cell's server closes, at
 * most max bytes (out->truncated beyond). ECONNREFUSED when nothing
 * listens there. Thread-safe, as cell_read_file. */
int cell_port_exchange(struct cell *c, uint16_t port, const void *req, size_t len, size_t max,
		       double timeout_s, struct cell_file *out, struct sc_err *err);
/* A connection to TCP port `port` on the cell's own loopback that the
 * caller keeps (a WebSocket through a server's proxy): its fd
 * (cell_port_conn_fd) is a stream socket that a worker of the cell's init
 * relays both ways to 127.0.0.1:port, passing each side's EOF on, for at
 * most timeout_s. When nothing listens there, the fd ends at once.
 * cell_port_close closes the fd, waits for the worker and says how it
 * ended (ECONNREFUSED: nothing listened; ETIMEDOUT). c must outlive the
 * connection. Thread-safe. */
struct cell_port_conn;
int cell_port_open(struct cell *c, uint16_t port, double timeout_s, struct cell_port_conn **out,
		   struct sc_err *err);
int cell_port_conn_fd(const struct cell_port_conn *pc);
int cell_port_close(struct cell_port_conn *pc, struct sc_err *err);
const char *cell_name(const struct cell *c);
/* The egress decision log of a cell made with an allowlist (egress.jsonl
 * in its state directory: one JSON line per decision, see net.h), opened
 * read-only; at_end: at its current end, so what the caller reads after an
 * exec is what was decided while it ran. -1 with errnum ENOENT when the
 * cell has no egress. Thread-safe. */
int cell_egress_log_open(const struct cell *c, bool at_end, struct sc_err *err);
/* Stream the cell's writable layer as a tar (OCI whiteouts for deleted
 * files, .wh..wh..opq for replaced directories) to consume(fd), which reads
 * it to the end; e.g. into rootfs_image_commit. Cells of the host image
 * cannot be exported. At most max_size bytes of file data. */
int cell_export_layer(struct cell *c, uint64_t max_size,
		      int (*consume)(int fd, void *ctx, struct sc_err *err), void *ctx,
		      struct sc_err *err);

struct cell_status {
	char name[64];
	char image[64];
	bool alive;      /* false: its init died ("gone"); rm or gc cleans up */
	bool paused;     /* cell_pause: held still until cell_resume */
	bool persist;    /* on-disk writable layer */
	pid_t pid;       /* host pid of init */
	double created;  /* epoch seconds */
	struct policy_limits limits;
	unsigned nprocs; /* processes in the cell */
	unsigned nexecs; /* requests in flight */
	struct cell_port ports[CELL_MAX_PORTS]; /* published (fd -1) */
	size_t nports;
	char volumes[CELL_MAX_VOLUMES][64]; /* named volumes mounted */
	size_t nvolumes;
	unsigned renewals; /* cell_renew: times its init was renewed */
};
int cell_status_get(const char *name, struct cell_status *st, struct sc_err *err);
/* Every cell under the state root (malloc'd array). */
int cell_list(struct cell_status **out, size_t *n, struct sc_err *err);
/* Does a cell (alive or gone, until rm or gc) use image `image`? Then its
 * name goes into who. The shape of struct rootfs_in_use's fn (ctx unused),
 * which callers of rootfs_image_* pass on. */
bool cell_image_in_use(void *ctx, const char *image, char *who, size_t who_size);
/* Change a running cell's memory limit: its cgroup's memory.max (no
 * swap), or, for a cell without a cgroup, the address-space rlimit of the
 * commands it runs from now on. A server sets a request's limit on a ready
 * cell of its pool. Fails with ENOTSUP when the cell has a cgroup made
 * without a memory limit (the memory controller is enabled only for cells
 * that have one).
 * Thread-safe, one struct cell per thread. */
int cell_set_memory_limit(struct cell *c, uint64_t bytes, struct sc_err *err);
/* The cell's pre-started interpreter (cell_exec_req.prestarted), if it has
 * one, is ended: for a pooled cell handed out for anything but such runs,
 * whose processes must be only its own. Thread-safe, one struct cell per
 * thread. */
int cell_prestart_end(struct cell *c, struct sc_err *err);
/* What a live cell uses now. CPU time: its processes' (and what their
 * ended children used), from /proc. Memory: its cgroup's charge and the
 * page cache in it where the cell has a memory cgroup, else its processes'
 * resident size (cache 0). Disk: what its writable layer holds, when that
 * is a tmpfs of its own (0 for a --persist cell's on-disk layer).
 * Thread-safe. */
struct cell_usage {
	double cpu_s;
	uint64_t memory, memory_cache;
	uint64_t disk, disk_size; /* used and the layer's size (--disk) */
};
int cell_usage_get(struct cell *c, struct cell_usage *u, struct sc_err *err);
/* Stop and remove a cell by name; refuses a busy cell unless force. */
int cell_remove(const char *name, bool force, struct sc_err *err);
/* Remove what crashed cells left behind (state, cgroups, layers). */
int cell_gc(size_t *removed, struct sc_err *err);

/* ---- named volumes ----
 * A volume is a directory under <data root>/volumes/NAME/ that outlives
 * cells and is bound into several at once (cell_bind.volume), owned by the
 * cells' root (the caller for a rootless caller; for root, host id 0, which
 * a writable bind's idmapped mount shows to each cell as its root). Its
 * size cap: for a root caller the volume is an
 * ext4 filesystem in a sparse image file of that size, loop-mounted on the
 * host, so the kernel refuses writes past it (ENOSPC); a rootless caller
 * can mount no such filesystem, so its volume is a plain directory whose
 * use is measured when a cell mounts it (refused when over the cap) and
 * by cell_volume_get, not while cells write. Thread-safe; create and
 * remove may fork mkfs.ext4 (root): not from a multi-threaded process. */
#define CELL_VOLUME_DEFAULT_SIZE (1ULL << 30)
struct cell_volume {
	char name[64];
	uint64_t size;  /* the cap, bytes */
	uint64_t used;  /* bytes in use now (blocks) */
	bool enforced;  /* the kernel holds the cap (ext4 image, root) */
	double created; /* epoch seconds */
	char path[4096]; /* the directory bound into cells */
	char users[256]; /* live cells that mount it, comma-separated ("" none) */
	size_t nusers;
};
int cell_volume_create(const char *name, uint64_t size, struct sc_err *err);
int cell_volume_get(const char *name, struct cell_volume *v, struct sc_err *err);
/* Every volume (malloc'd array, sorted by name). */
int cell_volume_list(struct cell_volume **out, size_t *n, struct sc_err *err);
/* Refused (EBUSY, naming the cell) while a live long-lived cell mounts it. */
int cell_volume_remove(const char *name, struct sc_err *err);
/* Mount volume name at cell_path (made if missing, never through a
 * symlink) in the running cell c, read-only or writable by the cell's
 * root, and record it for ps and volume rm: a pool cell given a volume by
 * the request that takes it. Root only (ENOTSUP otherwise: an unprivileged
 * caller can neither clone a host mount nor join a running cell's
 * namespaces). Forks a helper that makes system calls only: callable from
 * a multi-threaded process. Thread-safe, one c per thread. */
int cell_mount_volume(struct cell *c, const char *volume, const char *cell_path, bool readonly,
		      struct sc_err *err);
/* The host directory to bind for volume name (its filesystem mounted
 * again when a reboot took it away); ENOENT for no such volume, ENOSPC
 * for a rootless volume already over its cap. */
int cell_volume_source(const char *name, char *buf, size_t size, struct sc_err *err);

/* ---- fork, checkpoint, rollback ----
 * A long-lived cell's files (every writable place: the overlays over the
 * image, /testbed, /tmp, /root; not -v binds) are read once, the cell held
 * still (the cgroup v2 freezer where it has a leaf, else SIGSTOP of every
 * process under its init, then SIGCONT), into a shared read-only snapshot
 * layer under the state root. A child is a new cell whose root is an
 * overlay of that layer over the image's layers with an empty writable
 * layer of its own: its --disk counts only its own writes. Processes are
 * never copied: a child starts with a fresh init. A layer is removed with
 * its last user (cell, checkpoint, or a snapshot above it); cell_gc
 * removes what a killed process left. Not from a multi-threaded process
 * (they call cell_create). */
struct cell_fork_stats {
	double hold_s;   /* until every process was held */
	double frozen_s; /* the parent held still: hold + copy */
	double total_s;  /* the whole fork, children made */
};
/* Fork cell `parent` into cells names[0..n), made from spec (its image,
 * limits, policy...: the caller's; spec->snapshot is set here). cells
 * (may be NULL) gets each child's handle or NULL, errs (may be NULL) why
 * a child failed. Returns how many children were made, or -1 when the
 * parent's files could not be read (err). */
int cell_fork(const char *parent, const struct cell_spec *spec, const char *const *names, size_t n,
	      struct cell **cells, struct sc_err *errs, struct cell_fork_stats *stats,
	      struct sc_err *err);
#define CELL_NOTE_MAX (64 * 1024)
/* The note a cell was made with (malloc'd, *len bytes; NULL and 0 when
 * none). Thread-safe. */
int cell_note_get(const char *name, char **note, size_t *len, struct sc_err *err);
/* Save cell name's files as checkpoint `tag` (a cell name's characters). */
int cell_checkpoint(const char *name, const char *tag, struct cell_fork_stats *stats,
		    struct sc_err *err);
/* The checkpoints' tags (malloc'd array). */
int cell_checkpoint_list(const char *name, char (**tags)[64], size_t *n, struct sc_err *err);
int cell_checkpoint_remove(const char *name, const char *tag, struct sc_err *err);
/* Kill every process of cell `name` and restore its files exactly as they
 * were at checkpoint `tag`: the cell is replaced by a new one (a fresh
 * init, made from spec) on the checkpoint's layer, under the same name.
 * Its other checkpoints stay; cell_remove drops them all. */
int cell_rollback(const char *name, const char *tag, const struct cell_spec *spec,
		  struct sc_err *err);

/* ---- a pool of ready cells ----
 * `size` cells of one spec are kept ready by `workers` background
 * processes (make the pool before starting threads: workers are forked).
 * A cell is handed out once; release destroys it in the background and a
 * fresh one takes its place, so nothing leaks from one task to the next.
 * Freeing the pool (or the owner dying) removes every cell it made. */
struct cell_pool;
/* prepare (may be NULL) runs in the worker on each new cell before it is
 * ready, off the acquirer's path (e.g. support files written in); a
 * failure destroys the cell and reports the error to the acquirer. */
typedef int (*cell_prepare_fn)(struct cell *c, void *ctx, struct sc_err *err);
int cell_pool_new(const struct cell_spec *spec, size_t size, size_t workers,
		  cell_prepare_fn prepare, void *prepare_ctx, struct cell_pool **out,
		  struct sc_err *err);
/* cell_pool_new with options: cell names PREFIX-OWNERPID-... (default
 * "pool"; 1 to 16 characters of a cell name), and keepable: its cells do
 * not die with their worker (the init would, else, at the worker's end),
 * so that cell_pool_keep can hand one to the acquirer for good. Its
 * workers still remove every other cell when the owner dies; were they
 * killed too, the cells stay (ps shows them) until removed by name. */
struct cell_pool_opts {
	size_t size, workers;
	cell_prepare_fn prepare;
	void *prepare_ctx;
	const char *prefix;
	bool keepable;
	/* reuse: a released cell is renewed (cell_renew) and made ready
	 * again, while fewer than size cells are ready or on their way, at
	 * most max_renewals times (0: no bound); one that cannot be renewed
	 * is removed and a new one made. Otherwise released cells are removed. */
	bool reuse;
	unsigned max_renewals;
};
int cell_pool_new_opts(const struct cell_spec *spec, const struct cell_pool_opts *o,
		       struct cell_pool **out, struct sc_err *err);
/* Handing a pool to another process (a threaded server, which must not
 * fork workers itself, asks a single-threaded helper to make its pools):
 * cell_pool_detach frees p but its workers, and gives out the owner's
 * socket (to pass on with SCM_RIGHTS), the cells asked for and not yet
 * answered, and the workers' pids (at most CELL_POOL_MAX_WORKERS), whose
 * reaping is now the caller's. cell_pool_attach (in the other process)
 * makes a pool of that socket, with o's size and keepable: every call
 * works on it as on the maker's, and cell_pool_free ends its workers
 * without waiting for them. */
#define CELL_POOL_MAX_WORKERS 16
int cell_pool_detach(struct cell_pool *p, int *sock, size_t *in_flight, pid_t *workers,
		     size_t *nworkers);
int cell_pool_attach(int sock, size_t in_flight, const struct cell_pool_opts *o,
		     struct cell_pool **out, struct sc_err *err);
int cell_pool_acquire(struct cell_pool *p, struct cell **out, struct sc_err *err);
/* The same, and how: *ready true when a ready cell was there at the
 * caller's turn (a pooled start), false when it waited for one to be
 * made (a cold start). */
int cell_pool_acquire_how(struct cell_pool *p, struct cell **out, bool *ready,
			  struct sc_err *err);
/* How many made cells wait in the pool now (a gauge: it changes as soon
 * as it is read). Thread-safe. */
size_t cell_pool_ready_count(struct cell_pool *p);
/* Released cells renewed, and those removed instead (not renewable), so far. */
void cell_pool_renewals(struct cell_pool *p, uint64_t *renewed, uint64_t *not_renewed);
/* An acquired cell of a keepable pool is the acquirer's from now on: the
 * pool's end (or its owner's death) leaves it running. cell_pool_release
 * still removes it. A mark in its state directory (kept), written here. */
int cell_pool_keep(struct cell_pool *p, const struct cell *c, struct sc_err *err);
/* At most `cells` more acquires are expected (a batch knows how many cells
 * its attempts take): the pool makes no more than that, so a run's end
 * does not make (and remove) a full pool of cells nobody takes. A hint: an
 * acquire beyond it still gets a cell, made for it. Thread-safe. */
void cell_pool_limit(struct cell_pool *p, size_t cells);
/* Fork, checkpoint and rollback for a multi-threaded caller (which may
 * not call cell_fork, cell_checkpoint or cell_rollback: they clone): one
 * of the pool's workers does it, with the pool's spec, while the calling
 * thread waits for its answer alone (other threads' acquires go on; the
 * worker makes no new cells meanwhile). The cells made are the pool's as
 * an acquired one is: cell_pool_keep and cell_pool_release take them, and
 * the pool's end removes those not kept. A rolled-back cell is a new one
 * (its kept mark gone: keep it again). cell_pool_fork makes at most
 * CELL_POOL_FORK_MAX children: as cell_fork, how many were made (errs[i]
 * .msg "" for child i made), or -1 (err). Thread-safe. */
#define CELL_POOL_FORK_MAX 100
int cell_pool_fork(struct cell_pool *p, const char *parent, const char *const *names, size_t n,
		   struct sc_err *errs, struct sc_err *err);
int cell_pool_checkpoint(struct cell_pool *p, const char *name, const char *tag,
			 struct sc_err *err);
int cell_pool_rollback(struct cell_pool *p, const char *name, const char *tag, struct sc_err *err);
void cell_pool_release(struct cell_pool *p, struct cell *c);
void cell_pool_free(struct cell_pool *p);
/* Stop and remove the cell; frees c. */
int cell_destroy(struct cell *c, struct sc_err *err);
/* Release the handle without stopping the cell. */
void cell_close(struct cell *c);
/* A second handle to c's cell, for another thread: nothing is read (cell_open
 * reads the state directory and checks the init), so a caller that keeps
 * one handle per cell opens a request's handle in microseconds. */
int cell_dup(const struct cell *c, struct cell **out, struct sc_err *err);
/* A secret of the cell's creator for `purpose`: HMAC-SHA-256 of the cell's
 * token (which never enters the cell) and purpose. The same for every
 * handle of the cell, in every process that may use it; unknown inside
 * the cell until the caller puts it there (lang's session socket name).
 * EACCES without the token. Thread-safe. */
int cell_derive_secret(const struct cell *c, const char *purpose, uint8_t out[32],
		       struct sc_err *err);
/* Is the cell's init still there? The first call pins it with a pidfd kept
 * in c (checked against a reused pid); later calls are one poll of it. */
bool cell_is_alive(struct cell *c);
/* Pause a running cell: every process but its init held still (SIGSTOP;
 * init still answers status and file requests), processes and memory
 * kept, until cell_resume, also after the caller ended; cell_exec
 * and cell_fork refuse a paused cell. EALREADY: it was paused already
 * (cell_resume: it was not paused); ESRCH: it is not running. */
int cell_pause(struct cell *c, struct sc_err *err);
int cell_resume(struct cell *c, struct sc_err *err);
bool cell_is_paused(const struct cell *c);

/* ---- host checks (sandcell doctor) ---- */

enum cell_check_status { CELL_CHECK_OK, CELL_CHECK_WARN, CELL_CHECK_FAIL };

struct cell_check {
	const char *name;   /* "kernel", "userns", "overlay", "cgroup", ... */
	enum cell_check_status status;
	char detail[384];   /* what was found */
	char fix[384];      /* what to do about it, "" when nothing */
};

#define CELL_DOCTOR_MAX 16

/* Probe the host for what cells need. Each check tries the feature it names
 * (a child unshares namespaces, writes its id map and mounts an overlay; a
 * test cgroup is made and removed; a seccomp filter is loaded), it does not
 * just read versions. Fills up to max checks and returns how many; cells
 * can run when none has status CELL_CHECK_FAIL. */
size_t cell_doctor(struct cell_check *checks, size_t max);
/* As cell_doctor, reading the sysctls that restrict user namespaces
 * (kernel.apparmor_restrict_unprivileged_userns, ...) under sysctl_root
 * instead of /proc/sys (NULL: /proc/sys), so that each verdict can be
 * shown on a host that has none of them. Adds the "sysctl" and
 * "landlock" checks. */
size_t cell_doctor_at(struct cell_check *checks, size_t max, const char *sysctl_root);

/* How a cell of this caller holds each limit on this host: a cgroup v2
 * leaf, cgroup v1 hierarchies (root callers on v1 and hybrid hosts), or
 * the rlimit stand-ins (RLIMIT_AS per process, RLIMIT_NPROC of the cell's
 * user namespace, RLIMIT_CPU as cpus x --timeout). memory and pids are for
 * a cell with the default limits; cpu for one that adds --cpus (which
 * needs the cpu controller where the others are). Uses the host probe
 * (once per process); creates nothing. */
enum cell_limit_how { CELL_LIMIT_RLIMIT, CELL_LIMIT_CGROUP_V1, CELL_LIMIT_CGROUP_V2 };
struct cell_limit_mechanisms {
	enum cell_limit_how memory, pids, cpu;
};
void cell_limit_mechanisms(struct cell_limit_mechanisms *out);
/* "cgroup-v2", "cgroup-v1" or "rlimit". */
const char *cell_limit_how_name(enum cell_limit_how how);


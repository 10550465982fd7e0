/* Long-lived cells: create, open, destroy, list, gc. The cell's init serves
 * requests (serve.c); its state directory holds the socket and an info
 * file, so that any later sandcell process can find it. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "cell_priv.h"
#include "cgroup.h"
#include "egress.h"
#include "pidinfo.h"
#include "snapshot.h"
#include "start.h"

#define READY_TIMEOUT_MS 30000

static int listen_at(const char *dir, struct sc_err *err)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (sc_path(addr.sun_path, sizeof(addr.sun_path), "%s/sock", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "socket path under %s is too long for a unix socket (use a shorter --root)",
			       dir);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sc_fail(err, errno, "socket");
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(addr.sun_path, 0600) < 0 ||
	    listen(fd, 256) < 0) {
		int e = errno;
		close(fd);
		return sc_fail(err, e, "listen on %s", addr.sun_path);
	}
	return fd;
}

/* The on-disk writable layer of a persistent cell: owned by the cell's root. */
static int make_persist_dir(const char *name, const struct idmap *map, char *out, size_t size,
			    struct sc_err *err)
{
	char cells[4096];
	if (sc_path(cells, sizeof(cells), "%s/cells", cell_data_root()) < 0 ||
	    sc_path(out, size, "%s/%s", cells, name) < 0)
		return sc_fail(err, ENAMETOOLONG, "persistent layer path");
	if (cell_ensure_private_dir(cells, err) < 0)
		return -1;
	if (mkdir(out, 0700) < 0)
		return sc_fail(err, errno, "create %s", out);
	char sub[SC_PATH_BUF];
	for (int k = 0; k < 2; k++) {
		(void)sc_path(sub, sizeof(sub), "%s/%s", out, k ? "work" : "upper");
		if (mkdir(sub, 0755) < 0)
			return sc_fail(err, errno, "create %s", sub);
		if (map->range && chown(sub, map->uid_start, map->gid_start) < 0)
			return sc_fail(err, errno, "chown %s", sub);
	}
	if (map->range && chown(out, map->uid_start, map->gid_start) < 0)
		return sc_fail(err, errno, "chown %s", out);
	return 0;
}

/* The on-disk layer a persistent cell left (cell_start_again): there, a
 * directory and not a link. */
static int find_persist_dir(const char *name, char *out, size_t size, struct sc_err *err)
{
	struct stat st;
	if (sc_path(out, size, "%s/cells/%s", cell_data_root(), name) < 0)
		return sc_fail(err, ENAMETOOLONG, "persistent layer path");
	if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode))
		return sc_fail(err, 0, "the persistent layer of cell '%s' (%s) is gone", name, out);
	return 0;
}

static int wait_msg(struct rt_start *st, int want, struct sc_err *err)
{
	struct pollfd p = {.fd = st->status_rd, .events = POLLIN};
	int r;
	do
		r = poll(&p, 1, READY_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return sc_fail(err, 0, "the cell did not become ready within %d s", READY_TIMEOUT_MS / 1000);
	struct cell_msg m;
	if (rt_start_read_msg(st->status_rd, &m) < 0)
		return sc_fail(err, 0, "the cell's init exited during setup");
	if (m.kind == CELL_MSG_ERROR) {
		m.text[sizeof(m.text) - 1] = '\0';
		return sc_err_set(err, m.value, m.text);
	}
	if (m.kind != want)
		return sc_fail(err, 0, "unexpected message from the cell's init");
	return 0;
}

/* A handle: the name, the state directory, its info and the token in it
 * (a cell of an earlier version: in a file of its own; without one, every
 * request is refused by the cell). */
static struct cell *cell_alloc(const char *name, const char *dir, const struct cell_info *info)
{
	struct cell *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	c->pidfd = -1;
	c->info = *info;
	struct sc_err ignored;
	if (info->has_token) {
		memcpy(c->token, info->token, sizeof(c->token));
		c->have_token = true;
	} else {
		c->have_token = rt_state_read_token(dir, c->token, &ignored) == 0;
	}
	return c;
}

/* The cell's state directory, new (dir: its path). */
static int make_state_dir(const char *name, char *dir, size_t size, struct sc_err *err)
{
	if (rt_state_dir_of(name, dir, size, err) < 0 ||
	    cell_ensure_private_dir(cell_state_root(), err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0) {
		if (errno == EEXIST)
			return sc_fail(err, 0, "a cell named '%s' already exists (remove it with 'sandcell rm %s')",
				       name, name);
		return sc_fail(err, errno, "create %s", dir);
	}
	return 0;
}

/* The caller's note (cell_spec.note), 0600 beside the info file. */
static int write_note(const char *dir, const struct cell_spec *spec, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (spec->note_len > CELL_NOTE_MAX)
		return sc_fail(err, E2BIG, "the cell's note is larger than %d bytes", CELL_NOTE_MAX);
	if (sc_path(path, sizeof(path), "%s/note", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "note path");
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || sc_write_all(fd, spec->note, spec->note_len) < 0)
		return sc_fail(err, errno, "write %s", path);
	return 0;
}

int cell_note_get(const char *name, char **note, size_t *len, struct sc_err *err)
{
	char dir[SC_PATH_BUF];
	*note = NULL;
	*len = 0;
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0)
		return -1;
	if (access(dir, F_OK) < 0)
		return sc_fail(err, ENOENT, "no cell named '%s'", name);
	_cleanup_fd_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return sc_fail(err, errno, "%s", dir);
	char *buf = malloc(CELL_NOTE_MAX + 1);
	if (!buf)
		return sc_fail(err, ENOMEM, "note");
	struct sc_err e = {0};
	ssize_t n = sc_read_small(dfd, "note", SC_READ_NOFOLLOW | SC_READ_REGULAR, buf,
				  CELL_NOTE_MAX + 1, &e);
	if (n < 0) {
		free(buf);
		if (e.errnum == ENOENT)
			return 0;
		if (err)
			*err = e;
		return sc_err_wrap(err, "the note of '%s'", name);
	}
	*note = buf;
	*len = (size_t)n;
	return 0;
}

/* What is known of the cell before it starts. */
static void info_init(struct cell_info *info, const char *name, const struct cell_spec *spec)
{
	snprintf(info->name, sizeof(info->name), "%s", name);
	snprintf(info->image, sizeof(info->image), "%s", spec->image_name ? spec->image_name : "host");
	info->limits = spec->limits;
	if (spec->snapshot)
		snprintf(info->snapshot, sizeof(info->snapshot), "%s", spec->snapshot);
	for (size_t i = 0; i < spec->nports && i < CELL_MAX_PORTS; i++) {
		info->ports[i] = spec->ports[i];
		info->ports[i].fd = -1;
	}
	info->nports = spec->nports < CELL_MAX_PORTS ? spec->nports : CELL_MAX_PORTS;
	for (size_t i = 0; i < spec->nbinds && info->nvolumes < CELL_MAX_VOLUMES; i++)
		if (spec->binds[i].volume)
			snprintf(info->volumes[info->nvolumes++], sizeof(info->volumes[0]), "%s",
				 spec->binds[i].volume);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	info->created = (double)now.tv_sec + now.tv_nsec / 1e9;
}

/* The limits the cell got, as ps shows them: the defaults where none was
 * asked (1024 processes; 4G of memory where a cgroup holds it), and "no
 * limit" (POLICY_UNLIMITED) where none applies, not 0 ("not set"). */
static struct policy_limits effective_limits(const struct policy_limits *applied)
{
	struct policy_limits l = *applied;
	if (!l.memory)
		l.memory = POLICY_UNLIMITED;
	if (!l.pids)
		l.pids = POLICY_UNLIMITED;
	return l;
}

/* Starts init serving on lfd and waits until it is ready; info gets its
 * pid, token, cgroup and the limits it really has. */
static int start_init(struct rt_start *st, const struct cell_spec *spec, const char *name, int lfd,
		      struct cell_info *info, struct sc_err *err)
{
	st->plan.serve = true;
	st->plan.serve_fd = lfd;
	const int stdio[3] = {-1, -1, -1};
	if (rt_start(st, spec, name, stdio, err) < 0)
		return -1;
	if (wait_msg(st, CELL_MSG_READY, err) < 0) {
		rt_start_kill(st);
		return -1;
	}
	info->pid = st->pid;
	info->limits = effective_limits(&st->plan.limits);
	info->starttime = rt_pid_starttime(st->pid);
	info->has_token = true;
	memcpy(info->token, st->plan.token, sizeof(info->token));
	if (st->cg.active)
		snprintf(info->cgroup, sizeof(info->cgroup), "%s", st->cg.path);
	return 0;
}

/* Records the cell (info file, init register), releases init from dying
 * with us and waits until it has done so (exiting earlier could take it
 * down), then starts the egress helper where there is egress. The cell
 * is killed when one of these fails. */
static int detach_init(struct rt_start *st, const struct cell_spec *spec, const char *dir,
		       const char *name, const struct cell_info *info, struct sc_err *err)
{
	if (rt_state_write_info(dir, info, err) < 0 || rt_state_register_init(dir, info, err) < 0 ||
	    sc_write_all(st->sync_fd, "k", 1) < 0 ||
	    wait_msg(st, CELL_MSG_DETACHED, err) < 0 ||
	    (st->egress_fd >= 0 &&
	     rt_egress_spawn_helper(spec, st->egress_fd, st->pidfd, dir, name, info->cgroup, err) < 0)) {
		rt_start_kill(st);
		return -1;
	}
	sc_closep(&st->egress_fd);
	return 0;
}

/* cell_create; again: on the persistent layer the cell left (whose loss
 * a failure must not cause: the cell's old info is put back). */
static int create(const struct cell_spec *spec_in, const char *name, const struct cell_info *again,
		  struct cell **out, struct sc_err *err)
{
	char dir[4096];
	struct cell_spec spec = *spec_in;
	struct cell_info info = {0};
	struct rt_start st;
	_cleanup_fd_ int lfd = -1;
	rt_start_init(&st);
	if (make_state_dir(name, dir, sizeof(dir), err) < 0)
		return -1;
	info_init(&info, name, &spec);
	if (spec.note && write_note(dir, &spec, err) < 0)
		goto fail;
	/* info is written once, when init is ready: until then the directory
	 * has none, and ps skips it */
	if (rt_state_make_token(st.plan.token, err) < 0 || (lfd = listen_at(dir, err)) < 0)
		goto fail;
	if (again) {
		if (find_persist_dir(name, info.persist_dir, sizeof(info.persist_dir), err) < 0)
			goto fail;
		spec.upper_dir = info.persist_dir;
	} else if (spec.upper_dir) {
		/* "persist": the caller asks for an on-disk layer; we place it. */
		struct idmap map;
		if (rt_idmap_for_caller(&map, err) < 0 ||
		    make_persist_dir(name, &map, info.persist_dir, sizeof(info.persist_dir), err) < 0)
			goto fail;
		spec.upper_dir = info.persist_dir;
	}
	if (start_init(&st, &spec, name, lfd, &info, err) < 0 ||
	    detach_init(&st, &spec, dir, name, &info, err) < 0)
		goto fail;
	struct cell *c = cell_alloc(name, dir, &info);
	if (!c) {
		rt_start_kill(&st);
		sc_fail(err, ENOMEM, "cell handle");
		goto fail;
	}
	c->child = true;
	c->pidfd = steal_fd(&st.pidfd);
	st.cg.active = false; /* the cgroup lives on with the cell */
	sc_closep(&st.cg.dir_fd);
	rt_start_cleanup(&st);
	*out = c;
	return 0;
fail:;
	struct sc_err ignored;
	rt_start_cleanup(&st);
	if (again) { /* the files and the layer below them stay; so does the cell, gone */
		info.persist_dir[0] = info.snapshot[0] = '\0';
		rt_teardown_remove(dir, &info, &ignored);
		if (mkdir(dir, 0700) == 0)
			(void)rt_state_write_info(dir, again, &ignored);
		return -1;
	}
	rt_teardown_remove(dir, &info, &ignored);
	return -1;
}

int cell_create(const struct cell_spec *spec, const char *name, struct cell **out,
		struct sc_err *err)
{
	return create(spec, name, NULL, out, err);
}

int cell_start_again(const char *name, const struct cell_spec *spec_in, struct cell **out,
		     struct sc_err *err)
{
	char dir[SC_PATH_BUF];
	struct cell_info old;
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0)
		return -1;
	if (access(dir, F_OK) < 0)
		return sc_fail(err, 0, "no cell named '%s'", name);
	if (rt_state_read_info(dir, &old, err) < 0)
		return sc_err_wrap(err, "cell '%s'", name);
	if (rt_state_alive(&old))
		return sc_fail(err, 0, "cell '%s' is running", name);
	if (!old.persist_dir[0])
		return sc_fail(err, 0, "cell '%s' was not made with --persist: its files went with its "
				       "init (remove it: sandcell rm %s)", name, name);
	struct cell_spec spec = *spec_in;
	char snapshot[sizeof(old.snapshot)];
	snprintf(snapshot, sizeof(snapshot), "%s", old.snapshot);
	spec.snapshot = snapshot[0] ? snapshot : NULL; /* its user c@NAME is kept */
	/* what the dead init left (its cgroup, the state directory), not its
	 * files nor the layer they stand on */
	struct cell_info rest = old;
	rest.persist_dir[0] = rest.snapshot[0] = '\0';
	if (rt_teardown_remove(dir, &rest, err) < 0)
		return -1;
	return create(&spec, name, &old, out, err);
}

static int pin_init(const struct cell_info *info);

bool cell_spec_renewable(const struct cell_spec *spec)
{
	return !spec->egress && !spec->tty && !spec->nports && !spec->upper_dir && !spec->snapshot;
}

/* Why the cell (made from spec) is not renewed, or 0: what a renewal
 * keeps or cannot redo must be what a new cell of spec would have. */
static int check_renewable(const char *dir, const struct cell_info *info,
			   const struct cell_spec *spec, unsigned max_renewals, struct sc_err *err)
{
	size_t volumes = 0;
	for (size_t i = 0; i < spec->nbinds; i++)
		volumes += spec->binds[i].volume != NULL;
	const char *why = NULL;
	if (!cell_spec_renewable(spec))
		why = "cells with egress, published ports, a tty or a persistent or forked layer are not";
	else if (info->persist_dir[0] || info->snapshot[0] || info->nports || info->nvolumes != volumes)
		why = "its ports, volumes or layers changed since it was made";
	else if (rt_state_paused(dir))
		why = "it is paused";
	else if (max_renewals && info->renewals >= max_renewals)
		why = "it was renewed as many times as allowed";
	else if (info->cgroup[0] && rt_cgroup_memory_kills(info->cgroup) > 0)
		why = "its memory limit killed a process";
	return why ? sc_fail(err, ENOTSUP, "cell '%s' is not renewed: %s", info->name, why) : 0;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* What init sent as its namespaces must be a user namespace of ours (our
 * euid made it, as a child of our own) and a network namespace it owns:
 * a cell's, never the host's nor one a cell's process made inside. */
static int check_kept_namespaces(const char *name, int userns, int netns, struct sc_err *err)
{
	uid_t owner = (uid_t)-1;
	_cleanup_fd_ int own = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	_cleanup_fd_ int parent = ioctl(userns, NS_GET_PARENT);
	_cleanup_fd_ int net_owner = ioctl(netns, NS_GET_USERNS);
	if (ioctl(userns, NS_GET_NSTYPE) != CLONE_NEWUSER || ioctl(netns, NS_GET_NSTYPE) != CLONE_NEWNET ||
	    ioctl(userns, NS_GET_OWNER_UID, &owner) < 0 || owner != geteuid() || own < 0 ||
	    parent < 0 || !same_file(parent, own) || net_owner < 0 || !same_file(net_owner, userns))
		return sc_fail(err, EPERM, "cell '%s': its init sent namespaces not its own", name);
	return 0;
}

/* The namespaces a renewal keeps, from init (they are not ours to open
 * through /proc: init is not dumpable). */
static int get_kept_namespaces(const char *name, int fds[2], struct sc_err *err)
{
	struct cell *c;
	if (cell_open(name, &c, err) < 0)
		return -1;
	int rc = rt_query_namespaces(c, fds, err);
	cell_close(c);
	return rc < 0 ? -1 : check_kept_namespaces(name, fds[0], fds[1], err);
}

/* Kill init and wait until its pid namespace is empty: a pidfd is
 * readable once init has exited, which is after every other process of
 * its namespace was killed and reaped. */
static int end_pid_namespace(const struct cell_info *info, int pidfd, struct sc_err *err)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return sc_fail(err, errno, "kill the init of cell '%s'", info->name);
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	int n;
	do
		n = poll(&p, 1, READY_TIMEOUT_MS);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return sc_fail(err, n == 0 ? ETIMEDOUT : errno,
			       "the processes of cell '%s' did not end", info->name);
	return 0;
}

/* The memory limit a new cell of spec gets, where its cgroup holds one. */
static int restore_memory_limit(const struct cell_info *old, const struct cell_spec *spec,
				struct sc_err *err)
{
	uint64_t memory = policy_limit_value(spec->limits.memory, POLICY_DEFAULT_MEMORY);
	if (!old->cgroup[0] || !memory)
		return 0;
	struct sc_err e = {0};
	if (rt_cgroup_set_memory(old->cgroup, old->name, memory, &e) == 0 ||
	    e.errnum == ENOENT || e.errnum == ENOTSUP) /* no memory controller: no limit to undo */
		return 0;
	*err = e;
	return -1;
}

int cell_renew(const char *name, const struct cell_spec *spec_in, unsigned max_renewals,
	       struct sc_err *err)
{
	char dir[SC_PATH_BUF], sock[SC_PATH_BUF];
	struct cell_info old, info = {0};
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0 || rt_state_read_info(dir, &old, err) < 0 ||
	    check_renewable(dir, &old, spec_in, max_renewals, err) < 0)
		return -1;
	if (sc_path(sock, sizeof(sock), "%s/sock", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "state directory %s", dir);
	int ns[2] = {-1, -1};
	int got = get_kept_namespaces(name, ns, err);
	_cleanup_fd_ int userns = ns[0], netns = ns[1], lfd = -1, pidfd = -1;
	if (got < 0)
		return -1;
	if ((pidfd = pin_init(&old)) < 0)
		return sc_fail(err, errno, "cell '%s': its init is gone", name);
	if (end_pid_namespace(&old, pidfd, err) < 0)
		return -1;
	rt_teardown_drop_init_entry(dir, &old);
	rt_cgroup_reset_peaks(old.cgroup);
	struct cell_spec spec = *spec_in;
	struct rt_start st;
	rt_start_init(&st);
	st.reuse_userns = userns;
	st.reuse_netns = netns;
	st.reuse_cgroup = old.cgroup;
	info_init(&info, name, &spec);
	info.renewals = old.renewals + 1;
	int rc = -1;
	if (unlink(sock) < 0 && errno != ENOENT)
		sc_fail(err, errno, "remove %s", sock);
	else if (restore_memory_limit(&old, &spec, err) == 0 &&
		 rt_state_make_token(st.plan.token, err) == 0 && (lfd = listen_at(dir, err)) >= 0 &&
		 start_init(&st, &spec, name, lfd, &info, err) == 0 &&
		 detach_init(&st, &spec, dir, name, &info, err) == 0)
		rc = 0;
	st.cg.active = false; /* the cgroup is the cell's: removed with it */
	sc_closep(&st.cg.dir_fd);
	rt_start_cleanup(&st);
	return rc;
}

int cell_open(const char *name, struct cell **out, struct sc_err *err)
{
	char dir[4096];
	struct cell_info info;
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0)
		return -1;
	struct stat sb;
	if (lstat(dir, &sb) < 0) {
		if (errno == ENOENT)
			return sc_fail(err, 0, "no cell named '%s' (see 'sandcell ps')", name);
		return sc_fail(err, errno, "%s", dir);
	}
	if (!S_ISDIR(sb.st_mode) || sb.st_uid != geteuid())
		return sc_fail(err, 0, "%s is not a cell directory of yours", dir);
	if (rt_state_read_info(dir, &info, err) < 0)
		return -1;
	if (!rt_state_alive(&info))
		return sc_fail(err, 0, "cell '%s' is gone (its init died); remove it with 'sandcell rm %s'",
			       name, name);
	struct cell *c = cell_alloc(name, dir, &info);
	if (!c)
		return sc_fail(err, ENOMEM, "cell handle");
	*out = c;
	return 0;
}

const char *cell_name(const struct cell *c) { return c->name; }

void cell_close(struct cell *c)
{
	if (!c)
		return;
	sc_closep(&c->pidfd);
	free(c);
}

int cell_dup(const struct cell *c, struct cell **out, struct sc_err *err)
{
	struct cell *d = malloc(sizeof(*d));
	if (!d)
		return sc_fail(err, ENOMEM, "cell handle");
	*d = *c;
	d->child = false; /* the original reaps, if anyone */
	d->pidfd = -1;
	*out = d;
	return 0;
}

/* A pidfd of the cell's init, checked against a reused pid; -1 with errno
 * (ESRCH: init is gone). */
static int pin_init(const struct cell_info *info)
{
	if (!rt_state_alive(info))
		return errno = ESRCH, -1;
	int fd = (int)syscall(SYS_pidfd_open, info->pid, 0);
	if (fd >= 0 && !rt_state_alive(info)) { /* the pid was reused between the checks */
		close(fd);
		return errno = ESRCH, -1;
	}
	return fd;
}

bool cell_is_alive(struct cell *c)
{
	if (c->pidfd < 0 && (c->pidfd = pin_init(&c->info)) < 0)
		return false;
	struct pollfd p = {.fd = c->pidfd, .events = POLLIN};
	return poll(&p, 1, 0) == 0; /* readable: it has exited */
}

/* Kill init (its pid namespace takes every process of the cell with it)
 * and wait until it is gone. */
static int kill_init(const struct cell_info *info, int pidfd, bool child, struct sc_err *err)
{
	_cleanup_fd_ int own = -1;
	if (pidfd < 0 && (own = pidfd = pin_init(info)) < 0)
		return errno == ESRCH ? 0 : sc_fail(err, errno, "open the cell's init");
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return sc_fail(err, errno, "kill the cell's init");
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	while (poll(&p, 1, 10000) < 0 && errno == EINTR)
		;
	if (child)
		while (waitpid(info->pid, NULL, 0) < 0 && errno == EINTR)
			;
	return 0;
}

int cell_destroy(struct cell *c, struct sc_err *err)
{
	int rc = kill_init(&c->info, c->pidfd, c->child, err);
	if (rc == 0)
		rc = rt_teardown_remove(c->dir, &c->info, err);
	cell_close(c);
	return rc;
}

static int remove_cell(const char *name, bool force, struct sc_err *err)
{
	char dir[4096];
	struct cell_info info;
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0)
		return -1;
	if (access(dir, F_OK) < 0)
		return sc_fail(err, 0, "no cell named '%s'", name);
	if (rt_state_read_info(dir, &info, err) < 0) {
		/* A crash before the info file was written: nothing runs. */
		memset(&info, 0, sizeof(info));
	}
	if (!force && rt_state_alive(&info)) {
		struct cell_status s;
		if (cell_status_get(name, &s, err) == 0 && s.nexecs > 0)
			return sc_fail(err, 0, "cell '%s' is busy (%u commands running); use 'sandcell rm -f %s'",
				       name, s.nexecs, name);
	}
	if (kill_init(&info, -1, false, err) < 0)
		return -1;
	return rt_teardown_remove(dir, &info, err);
}

int rt_cell_remove_keep_checkpoints(const char *name, struct sc_err *err)
{
	return remove_cell(name, true, err);
}

int cell_remove(const char *name, bool force, struct sc_err *err)
{
	if (remove_cell(name, force, err) < 0)
		return -1;
	rt_snapshot_drop_checkpoints(name);
	return 0;
}

static void status_from_info(const struct cell_info *info, struct cell_status *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", info->name);
	snprintf(s->image, sizeof(s->image), "%s", info->image[0] ? info->image : "host");
	s->created = info->created;
	s->limits = info->limits;
	s->persist = info->persist_dir[0] != '\0';
	s->alive = rt_state_alive(info);
	s->pid = s->alive ? info->pid : 0;
	memcpy(s->ports, info->ports, sizeof(s->ports));
	s->nports = info->nports;
	memcpy(s->volumes, info->volumes, sizeof(s->volumes));
	s->nvolumes = info->nvolumes;
	s->renewals = info->renewals;
}

int cell_status_get(const char *name, struct cell_status *s, struct sc_err *err)
{
	char dir[4096];
	struct cell_info info;
	if (rt_state_dir_of(name, dir, sizeof(dir), err) < 0 || rt_state_read_info(dir, &info, err) < 0)
		return -1;
	status_from_info(&info, s);
	if (!s->alive)
		return 0;
	struct cell *c = cell_alloc(name, dir, &info);
	if (!c)
		return sc_fail(err, ENOMEM, "cell handle");
	s->paused = rt_state_paused(c->dir);
	struct sc_err ignored;
	if (rt_query_info(c, &s->nprocs, &s->nexecs, &ignored) < 0)
		s->alive = false;
	cell_close(c);
	return 0;
}

int cell_list(struct cell_status **out, size_t *n, struct sc_err *err)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(cell_state_root());
	if (!d)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "%s", cell_state_root());
	struct dirent *e;
	size_t cap = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !sc_valid_name(e->d_name))
			continue;
		struct cell_status s;
		struct sc_err ignored;
		if (cell_status_get(e->d_name, &s, &ignored) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct cell_status *grown = realloc(*out, cap * sizeof(**out));
			if (!grown) {
				closedir(d);
				return sc_fail(err, ENOMEM, "cell list");
			}
			*out = grown;
		}
		(*out)[(*n)++] = s;
	}
	closedir(d);
	return 0;
}

bool cell_image_in_use(void *ctx, const char *image, char *who, size_t who_size)
{
	(void)ctx;
	DIR *d = opendir(cell_state_root());
	if (!d)
		return false;
	struct dirent *e;
	bool used = false;
	while (!used && (e = readdir(d))) {
		char dir[PATH_MAX];
		struct cell_info info;
		struct sc_err ignored;
		if (e->d_name[0] == '.' ||
		    sc_path(dir, sizeof(dir), "%s/%s", cell_state_root(), e->d_name) < 0 ||
		    rt_state_read_info(dir, &info, &ignored) < 0 || strcmp(info.image, image) != 0)
			continue;
		used = true;
		snprintf(who, who_size, "%s", e->d_name);
	}
	closedir(d);
	return used;
}

int cell_gc(size_t *removed, struct sc_err *err)
{
	*removed = 0;
	DIR *d = opendir(cell_state_root());
	if (!d) {
		int e = errno;
		struct sc_err ignored;
		int n = rt_cgroup_gc(&ignored);
		*removed = n > 0 ? (size_t)n : 0;
		return e == ENOENT ? 0 : sc_fail(err, e, "%s", cell_state_root());
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !sc_valid_name(e->d_name))
			continue;
		char dir[4096];
		struct cell_info info;
		if (rt_state_dir_of(e->d_name, dir, sizeof(dir), err) < 0)
			continue;
		if (rt_state_read_info(dir, &info, err) < 0)
			memset(&info, 0, sizeof(info));
		if (rt_state_alive(&info))
			continue;
		/* Whatever a crash left: a stray process of the cell's cgroup,
		 * the cgroup, the on-disk layer, the state directory. */
		if (rt_teardown_remove(dir, &info, err) < 0)
			rc = -1;
		else
			(*removed)++;
	}
	closedir(d);
	/* Inits whose state directory was deleted by hand. */
	*removed += rt_teardown_gc_orphans(cell_state_root());
	/* And the cgroups of one-shot cells whose sandcell was killed. */
	struct sc_err ignored;
	int n = rt_cgroup_gc(&ignored);
	if (n > 0)
		*removed += (size_t)n;
	/* And snapshot layers nobody keeps (a fork killed half-way, the
	 * layers of cells removed above). */
	*removed += rt_snapshot_gc();
	return rc;
}

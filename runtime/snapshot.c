/* Snapshot layers on the host (snapshot.h): where they live, who keeps
 * them, and their removal when nobody does. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "../common/parse.h"
#include "cell.h"
#include "snapshot.h"
#include "state.h"

static int snaps_root(char *buf, size_t size)
{
	return sc_path(buf, size, "%s/.snapshots", cell_state_root());
}

bool rt_snapshot_valid_id(const char *id)
{
	size_t i = 0;
	for (; id[i]; i++)
		if (i >= RT_SNAP_ID_LEN - 1 || !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return i == RT_SNAP_ID_LEN - 1;
}

static int snap_path(const char *id, const char *sub, char *buf, size_t size)
{
	if (!rt_snapshot_valid_id(id))
		return -1;
	return sc_path(buf, size, "%s/.snapshots/%s%s%s", cell_state_root(), id, sub[0] ? "/" : "",
		       sub);
}

int rt_snapshot_tree_path(const char *id, char *buf, size_t size)
{
	return snap_path(id, "tree", buf, size);
}

static bool valid_who(const char *who)
{
	size_t n = strnlen(who, RT_SNAP_WHO_LEN);
	if (n == 0 || n >= RT_SNAP_WHO_LEN || who[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (who[i] == '/')
			return false;
	return true;
}

#define GONE_PREFIX ".gone-"
#define NEW_PREFIX ".new-"

/* Snapshots whose making or removal was cut short (its process killed):
 * named NEW_PREFIX+ID while they are made and GONE_PREFIX+ID while they
 * are removed, they are removed by whoever next finds them unlocked. */
static void sweep_unfinished(int rfd)
{
	_cleanup_dir_ DIR *d = sc_opendir_at(rfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, GONE_PREFIX, strlen(GONE_PREFIX)) != 0 &&
		    strncmp(e->d_name, NEW_PREFIX, strlen(NEW_PREFIX)) != 0)
			continue;
		_cleanup_fd_ int fd = openat(rfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
			sc_remove_tree_at(rfd, e->d_name, NULL);
	}
}

/* Snapshot id made in the directory rfd, locked, with its tree/ and
 * users/: built under a name gc skips, and renamed to its id once whole
 * (gc would take an unlocked one without users for unused). */
static int make_in(int rfd, const char *id, int *lock_fd, struct sc_err *err)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), NEW_PREFIX "%s", id);
	if (mkdirat(rfd, tmp, 0711) < 0)
		return sc_fail(err, errno, "mkdir snapshot %s", id);
	int fd = openat(rfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX) < 0 || mkdirat(fd, "tree", 0711) < 0 ||
	    mkdirat(fd, "users", 0700) < 0 || renameat(rfd, tmp, rfd, id) < 0) {
		sc_fail(err, errno, "make snapshot %s", id);
		if (fd >= 0)
			close(fd);
		sc_remove_tree_at(rfd, tmp, NULL);
		return -1;
	}
	*lock_fd = fd;
	return 0;
}

int rt_snapshot_new(char id[RT_SNAP_ID_LEN], int *lock_fd, struct sc_err *err)
{
	char root[SC_PATH_BUF];
	uint8_t raw[16];
	if (cell_ensure_private_dir(cell_state_root(), err) < 0)
		return -1;
	if (snaps_root(root, sizeof(root)) < 0)
		return sc_fail(err, ENAMETOOLONG, "snapshot path");
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return sc_fail(err, errno, "random snapshot id");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(id + 2 * i, 3, "%02x", raw[i]);
	/* again when the root goes meanwhile: whoever removes the last
	 * snapshot removes it too */
	for (int tries = 0;; tries++) {
		/* 0711: a root caller's cells run as unprivileged ids that
		 * must reach their layer; the names are random */
		if (mkdir(root, 0711) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "mkdir %s", root);
		_cleanup_fd_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (rfd < 0) {
			if (errno == ENOENT && tries < 8)
				continue;
			return sc_fail(err, errno, "open %s", root);
		}
		sweep_unfinished(rfd);
		struct sc_err e = {0};
		if (make_in(rfd, id, lock_fd, &e) == 0)
			return 0;
		if (e.errnum != ENOENT || tries >= 8) {
			if (err)
				*err = e;
			return -1;
		}
	}
}

int rt_snapshot_ref(const char *id, const char *who, struct sc_err *err)
{
	char path[SC_PATH_BUF], users[SC_PATH_BUF];
	if (!valid_who(who) || snap_path(id, "users", users, sizeof(users)) < 0 ||
	    sc_path(path, sizeof(path), "%s/%s", users, who) < 0)
		return sc_fail(err, EINVAL, "snapshot user %.60s", who);
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "snapshot %.40s: add user %.60s", id, who);
	close(fd);
	return 0;
}

int rt_snapshot_set_below(const char *id, const char *below, struct sc_err *err)
{
	char path[SC_PATH_BUF], who[RT_SNAP_WHO_LEN];
	if (snap_path(id, "below", path, sizeof(path)) < 0 || !rt_snapshot_valid_id(below))
		return sc_fail(err, EINVAL, "snapshot below");
	snprintf(who, sizeof(who), "s@%s", id);
	if (rt_snapshot_ref(below, who, err) < 0)
		return -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || sc_write_all(fd, below, strlen(below)) < 0) {
		sc_fail(err, errno, "write %s", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static bool read_below(int dir, char below[RT_SNAP_ID_LEN])
{
	ssize_t n = sc_read_small(dir, "below", SC_READ_NOFOLLOW | SC_READ_REGULAR, below,
				  RT_SNAP_ID_LEN, NULL);
	if (n <= 0)
		return false;
	below[n] = '\0';
	return rt_snapshot_valid_id(below);
}

static bool users_empty(int dir)
{
	_cleanup_fd_ int u = openat(dir, "users", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_dir_ DIR *d = sc_opendir_at(u);
	if (!d)
		return true;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			return false;
	return true;
}

/* With the lock held on dir (the snapshot id's directory): remove it when
 * nobody keeps it; then what it stood on loses it as a user. It is
 * renamed out of the way first, so that a process killed while it
 * removes leaves no half-removed snapshot under its id. */
static void remove_if_unused(int dir, const char *id)
{
	char below[RT_SNAP_ID_LEN], root[SC_PATH_BUF], gone[64];
	struct stat st;
	if (fstat(dir, &st) < 0 || st.st_nlink == 0 || !users_empty(dir))
		return; /* gone already, or still kept */
	bool has_below = read_below(dir, below);
	if (snaps_root(root, sizeof(root)) < 0)
		return;
	_cleanup_fd_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return;
	snprintf(gone, sizeof(gone), GONE_PREFIX "%s", id);
	const char *victim = renameat(rfd, id, rfd, gone) == 0 ? gone : id;
	if (sc_remove_tree_at(rfd, victim, NULL) < 0)
		return;
	rmdir(root); /* the last one: nothing of forks stays */
	if (has_below) {
		char who[RT_SNAP_WHO_LEN];
		snprintf(who, sizeof(who), "s@%s", id);
		rt_snapshot_unref(below, who);
	}
}

void rt_snapshot_unref(const char *id, const char *who)
{
	char path[SC_PATH_BUF];
	if (snap_path(id, "", path, sizeof(path)) < 0)
		return;
	_cleanup_fd_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0 || flock(dir, LOCK_EX) < 0)
		return;
	if (who && valid_who(who)) {
		char user[SC_PATH_BUF];
		if (sc_path(user, sizeof(user), "users/%s", who) == 0)
			unlinkat(dir, user, 0);
	}
	remove_if_unused(dir, id);
}

int rt_snapshot_chain(const char *id, char ids[][RT_SNAP_ID_LEN], size_t *n, struct sc_err *err)
{
	*n = 0;
	char cur[RT_SNAP_ID_LEN];
	snprintf(cur, sizeof(cur), "%s", id);
	for (;;) {
		char path[SC_PATH_BUF];
		if (*n >= RT_SNAP_MAX_DEPTH)
			return sc_fail(err, 0, "forks nested deeper than %d", RT_SNAP_MAX_DEPTH);
		if (snap_path(cur, "", path, sizeof(path)) < 0)
			return sc_fail(err, EINVAL, "bad snapshot id");
		_cleanup_fd_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir < 0)
			return sc_fail(err, errno, "snapshot %s", cur);
		snprintf(ids[(*n)++], RT_SNAP_ID_LEN, "%s", cur);
		if (!read_below(dir, cur))
			return 0;
	}
}

/* Calls fn for each user of each snapshot. */
static int each_user(void (*fn)(void *ctx, int dir, const char *id, const char *who), void *ctx,
		     bool locked_only)
{
	char root[SC_PATH_BUF];
	if (snaps_root(root, sizeof(root)) < 0)
		return -1;
	_cleanup_fd_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT ? 0 : -1;
	char **ids;
	size_t n;
	if (sc_dir_names_sorted(rfd, 1u << 16, &ids, &n, NULL) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!rt_snapshot_valid_id(ids[i]))
			continue;
		_cleanup_fd_ int dir = openat(rfd, ids[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir < 0 || (locked_only && flock(dir, LOCK_EX | LOCK_NB) < 0))
			continue;
		_cleanup_fd_ int u = openat(dir, "users", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		char **who;
		size_t nw;
		if (u >= 0 && sc_dir_names_sorted(u, 1u << 16, &who, &nw, NULL) == 0) {
			for (size_t k = 0; k < nw; k++)
				fn(ctx, dir, ids[i], who[k]);
			sc_dir_names_free(who, nw);
		}
		if (locked_only)
			remove_if_unused(dir, ids[i]);
	}
	sc_dir_names_free(ids, n);
	return 0;
}

struct ckpt_walk {
	const char *name;
	void (*fn)(void *ctx, const char *tag, const char *id);
	void *ctx;
};

/* "k@NAME@TAG": the tag, when the user is a checkpoint of name. */
static const char *checkpoint_tag(const char *who, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(who, "k@", 2) != 0 || strncmp(who + 2, name, n) != 0 || who[2 + n] != '@')
		return NULL;
	return who + 3 + n;
}

static void ckpt_visit(void *ctx, int dir, const char *id, const char *who)
{
	(void)dir;
	struct ckpt_walk *w = ctx;
	const char *tag = checkpoint_tag(who, w->name);
	if (tag)
		w->fn(w->ctx, tag, id);
}

int rt_snapshot_each_checkpoint(const char *name,
				void (*fn)(void *ctx, const char *tag, const char *id), void *ctx,
				struct sc_err *err)
{
	struct ckpt_walk w = {.name = name, .fn = fn, .ctx = ctx};
	if (each_user(ckpt_visit, &w, false) < 0)
		return sc_fail(err, errno, "list the checkpoints of %s", name);
	return 0;
}

struct id_list {
	char (*ids)[RT_SNAP_ID_LEN];
	char (*who)[RT_SNAP_WHO_LEN];
	size_t n, cap;
};

static void collect(struct id_list *l, const char *id, const char *who)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *a = realloc(l->ids, cap * sizeof(*l->ids));
		if (a)
			l->ids = a;
		void *b = realloc(l->who, cap * sizeof(*l->who));
		if (b)
			l->who = b;
		if (!a || !b)
			return;
		l->cap = cap;
	}
	snprintf(l->ids[l->n], RT_SNAP_ID_LEN, "%s", id);
	snprintf(l->who[l->n], RT_SNAP_WHO_LEN, "%s", who);
	l->n++;
}

static void ckpt_collect(void *ctx, int dir, const char *id, const char *who)
{
	(void)dir;
	struct ckpt_walk *w = ctx;
	if (checkpoint_tag(who, w->name))
		collect(w->ctx, id, who);
}

static void unref_all(struct id_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		rt_snapshot_unref(l->ids[i], l->who[i]);
	free(l->ids);
	free(l->who);
}

void rt_snapshot_drop_checkpoints(const char *name)
{
	struct id_list l = {0};
	struct ckpt_walk w = {.name = name, .ctx = &l};
	(void)each_user(ckpt_collect, &w, false);
	unref_all(&l);
}

/* Is the user still there? */
static bool user_alive(const char *id, const char *who)
{
	char dir[SC_PATH_BUF];
	struct cell_info info;
	struct sc_err ignored;
	if (!strncmp(who, "s@", 2))
		return snap_path(who + 2, "", dir, sizeof(dir)) == 0 && access(dir, F_OK) == 0;
	if (!strncmp(who, "c@", 2))
		return sc_valid_name(who + 2) && rt_state_dir_of(who + 2, dir, sizeof(dir), &ignored) == 0 &&
		       rt_state_read_info(dir, &info, &ignored) == 0 && !strcmp(info.snapshot, id);
	if (!strncmp(who, "r@", 2)) { /* a rollback in progress: its pid */
		const char *at = strrchr(who, '@');
		long pid = at ? strtol(at + 1, NULL, 10) : 0;
		return pid > 1 && kill((pid_t)pid, 0) == 0;
	}
	if (!strncmp(who, "k@", 2)) {
		char name[64];
		const char *at = strchr(who + 2, '@');
		if (!at || (size_t)(at - who - 2) >= sizeof(name))
			return false;
		memcpy(name, who + 2, (size_t)(at - who - 2));
		name[at - who - 2] = '\0';
		return sc_valid_name(name) && rt_state_dir_of(name, dir, sizeof(dir), &ignored) == 0 &&
		       rt_state_read_info(dir, &info, &ignored) == 0;
	}
	return false;
}

static void gc_visit(void *ctx, int dir, const char *id, const char *who)
{
	(void)ctx;
	if (user_alive(id, who))
		return;
	char user[SC_PATH_BUF];
	if (sc_path(user, sizeof(user), "users/%s", who) == 0)
		unlinkat(dir, user, 0);
}

static size_t count_snapshots(const char *root)
{
	_cleanup_fd_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **ids;
	size_t n;
	if (rfd < 0 || sc_dir_names_sorted(rfd, 1u << 16, &ids, &n, NULL) < 0)
		return 0;
	sc_dir_names_free(ids, n);
	return n;
}

size_t rt_snapshot_gc(void)
{
	char root[SC_PATH_BUF];
	if (snaps_root(root, sizeof(root)) < 0)
		return 0;
	_cleanup_fd_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd >= 0)
		sweep_unfinished(rfd);
	size_t before = count_snapshots(root), now = before;
	/* again while it helps: a snapshot removed frees the one below it */
	for (int pass = 0; pass < RT_SNAP_MAX_DEPTH && now > 0; pass++) {
		if (each_user(gc_visit, NULL, true) < 0)
			break;
		size_t n = count_snapshots(root);
		if (n == now)
			break;
		now = n;
	}
	rmdir(root); /* when it is empty */
	return before > now ? before - now : 0;
}

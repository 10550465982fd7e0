/* Fork, checkpoint and rollback of a long-lived cell's files: the cell's
 * writable state is read once, the cell held still, into a shared
 * read-only snapshot layer (snapshot.h); new cells stand on it with
 * writable layers of their own. Processes are never copied: each new cell
 * starts with a fresh init. */
#include <fcntl.h>
#include <string.h>

#include "../common/parse.h"
#include "cell_priv.h"
#include "hold.h"
#include "snapshot.h"

/* A snapshot of cell c's files, kept by the user `keep` (which the
 * caller drops once the snapshot's real users are recorded). It is locked
 * only while it is built: cell_create and teardown take no lock. */
static int take_snapshot(struct cell *c, char id[RT_SNAP_ID_LEN], const char *keep,
			 struct cell_fork_stats *stats, struct sc_err *err)
{
	_cleanup_fd_ int lock_fd = -1;
	int *lock = &lock_fd;
	if (!cell_is_alive(c))
		return sc_fail(err, 0, "cell '%s' is not running", c->name);
	if (rt_state_paused(c->dir)) /* its hold would let the paused processes go */
		return sc_fail(err, EBUSY, "cell '%s' is paused: resume it first", c->name);
	_cleanup_fd_ int state = rt_query_state_fd(c, err);
	if (state < 0)
		return -1;
	if (rt_snapshot_new(id, lock, err) < 0)
		return -1;
	if (c->info.snapshot[0] && rt_snapshot_set_below(id, c->info.snapshot, err) < 0)
		goto fail;
	uint64_t max = c->info.limits.disk && c->info.limits.disk != POLICY_UNLIMITED
			       ? c->info.limits.disk
			       : UINT64_MAX;
	struct rt_hold *h = malloc(sizeof(*h));
	if (!h) {
		sc_fail(err, ENOMEM, "hold");
		goto fail;
	}
	double t0 = sc_now();
	int rc = rt_hold_still(h, c->info.pid, c->info.cgroup, err);
	double t1 = sc_now();
	if (rc == 0) {
		rc = rt_snapshot_fill(id, state, c->info.persist_dir[0] != '\0', max, err);
		rt_hold_release(h);
	}
	double t2 = sc_now();
	free(h);
	if (stats) {
		stats->hold_s = t1 - t0;
		stats->frozen_s = t2 - t0;
	}
	if (rc < 0) {
		sc_err_wrap(err, "fork of '%s'", c->name);
		goto fail;
	}
	if (rt_snapshot_ref(id, keep, err) < 0)
		goto fail;
	return 0;
fail:
	sc_closep(lock);
	rt_snapshot_unref(id, NULL);
	return -1;
}

/* A user that keeps a snapshot while this process works on it (gc sees
 * it as alive while the process is). */
static void keep_user(char *who, size_t size, const char *name)
{
	snprintf(who, size, "r@%s@%d", name, (int)getpid());
}

static void who_cell(char *who, size_t size, const char *name)
{
	snprintf(who, size, "c@%s", name);
}

/* A cell named name on snapshot id (spec's other fields as given). */
static int create_on(const struct cell_spec *spec, const char *id, const char *name,
		     struct cell **out, struct sc_err *err)
{
	char who[RT_SNAP_WHO_LEN];
	who_cell(who, sizeof(who), name);
	if (rt_snapshot_ref(id, who, err) < 0)
		return -1;
	struct cell_spec s = *spec;
	s.snapshot = id;
	struct cell *c;
	if (cell_create(&s, name, &c, err) < 0) {
		char dir[SC_PATH_BUF];
		struct cell_info info;
		struct sc_err ignored;
		/* the name may be another cell's that stands on id already */
		if (rt_state_dir_of(name, dir, sizeof(dir), &ignored) < 0 ||
		    rt_state_read_info(dir, &info, &ignored) < 0 || strcmp(info.snapshot, id) != 0) {
			char path[SC_PATH_BUF];
			if (sc_path(path, sizeof(path), "%s/.snapshots/%s/users/%s", cell_state_root(), id,
				    who) == 0)
				unlink(path);
		}
		return -1;
	}
	if (out)
		*out = c;
	else
		cell_close(c);
	return 0;
}

int cell_fork(const char *parent, const struct cell_spec *spec, const char *const *names, size_t n,
	      struct cell **cells, struct sc_err *errs, struct cell_fork_stats *stats,
	      struct sc_err *err)
{
	struct cell *c;
	if (n == 0)
		return sc_fail(err, EINVAL, "fork: no names for the new cells");
	for (size_t i = 0; i < n; i++)
		if (!sc_valid_name(names[i]))
			return sc_fail(err, EINVAL, "fork: bad cell name '%.64s'", names[i]);
	if (cell_open(parent, &c, err) < 0)
		return -1;
	char id[RT_SNAP_ID_LEN], keep[RT_SNAP_WHO_LEN];
	keep_user(keep, sizeof(keep), parent);
	double t0 = sc_now();
	int rc = take_snapshot(c, id, keep, stats, err);
	cell_close(c);
	if (rc < 0)
		return -1;
	size_t made = 0;
	for (size_t i = 0; i < n; i++) {
		struct sc_err e = {0};
		if (cells)
			cells[i] = NULL;
		if (create_on(spec, id, names[i], cells ? &cells[i] : NULL, &e) == 0)
			made++;
		if (errs)
			errs[i] = e;
	}
	if (stats)
		stats->total_s = sc_now() - t0;
	rt_snapshot_unref(id, keep); /* gone when no child was made */
	return (int)made;
}

/* ---- checkpoints ---- */

static int valid_tag(const char *tag, struct sc_err *err)
{
	if (!sc_valid_name(tag))
		return sc_fail(err, EINVAL, "bad checkpoint tag '%.64s': use letters, digits, '.', '_' "
					    "and '-' (at most 63)", tag);
	return 0;
}

struct find_tag {
	const char *tag;
	char id[RT_SNAP_ID_LEN];
	char (*tags)[64];
	size_t n, cap;
};

static void find_visit(void *ctx, const char *tag, const char *id)
{
	struct find_tag *f = ctx;
	if (f->tag && !strcmp(f->tag, tag))
		snprintf(f->id, sizeof(f->id), "%s", id);
	if (!f->tags && f->tag)
		return;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		char(*grown)[64] = realloc(f->tags, cap * sizeof(*grown));
		if (!grown)
			return;
		f->tags = grown;
		f->cap = cap;
	}
	snprintf(f->tags[f->n++], 64, "%s", tag);
}

static int find_checkpoint(const char *name, const char *tag, char id[RT_SNAP_ID_LEN],
			   struct sc_err *err)
{
	struct find_tag f = {.tag = tag};
	if (rt_snapshot_each_checkpoint(name, find_visit, &f, err) < 0)
		return -1;
	if (!f.id[0])
		return sc_fail(err, ENOENT, "cell '%s' has no checkpoint '%s' (see 'sandcell checkpoint "
					    "ls %s')", name, tag, name);
	memcpy(id, f.id, RT_SNAP_ID_LEN);
	return 0;
}

int cell_checkpoint(const char *name, const char *tag, struct cell_fork_stats *stats,
		    struct sc_err *err)
{
	char id[RT_SNAP_ID_LEN], who[RT_SNAP_WHO_LEN];
	struct sc_err ignored;
	if (valid_tag(tag, err) < 0)
		return -1;
	if (find_checkpoint(name, tag, id, &ignored) == 0)
		return sc_fail(err, EEXIST, "cell '%s' has a checkpoint '%s' already (remove it with "
					    "'sandcell checkpoint rm %s %s')", name, tag, name, tag);
	struct cell *c;
	if (cell_open(name, &c, err) < 0)
		return -1;
	char keep[RT_SNAP_WHO_LEN];
	keep_user(keep, sizeof(keep), name);
	int rc = take_snapshot(c, id, keep, stats, err);
	cell_close(c);
	if (rc < 0)
		return -1;
	snprintf(who, sizeof(who), "k@%s@%s", name, tag);
	rc = rt_snapshot_ref(id, who, err);
	rt_snapshot_unref(id, keep);
	return rc;
}

int cell_checkpoint_list(const char *name, char (**tags)[64], size_t *n, struct sc_err *err)
{
	struct find_tag f = {0};
	*tags = NULL;
	*n = 0;
	f.tags = NULL;
	f.tag = NULL;
	if (rt_snapshot_each_checkpoint(name, find_visit, &f, err) < 0) {
		free(f.tags);
		return -1;
	}
	*tags = f.tags;
	*n = f.n;
	return 0;
}

int cell_checkpoint_remove(const char *name, const char *tag, struct sc_err *err)
{
	char id[RT_SNAP_ID_LEN], who[RT_SNAP_WHO_LEN];
	if (valid_tag(tag, err) < 0 || find_checkpoint(name, tag, id, err) < 0)
		return -1;
	snprintf(who, sizeof(who), "k@%s@%s", name, tag);
	rt_snapshot_unref(id, who);
	return 0;
}

int cell_rollback(const char *name, const char *tag, const struct cell_spec *spec,
		  struct sc_err *err)
{
	char id[RT_SNAP_ID_LEN], keep[RT_SNAP_WHO_LEN];
	if (valid_tag(tag, err) < 0 || find_checkpoint(name, tag, id, err) < 0)
		return -1;
	/* held by a user of our own while the cell is replaced, so that
	 * neither the removal nor a gc can take the layer away */
	keep_user(keep, sizeof(keep), name);
	if (rt_snapshot_ref(id, keep, err) < 0)
		return -1;
	int rc = rt_cell_remove_keep_checkpoints(name, err);
	if (rc == 0)
		rc = create_on(spec, id, name, NULL, err);
	rt_snapshot_unref(id, keep);
	/* on failure the cell is gone; its checkpoints go with the next gc */
	if (rc < 0)
		sc_err_wrap(err, "rollback of '%s'", name);
	return rc;
}

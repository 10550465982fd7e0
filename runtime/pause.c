/* Pause and resume a long-lived cell: every process but init held still
 * with SIGSTOP (hold.c), and left so when the caller ends; the mark
 * "paused" in the cell's state directory says so, and cell_exec refuses
 * to start a command meanwhile. Processes and memory are kept: resume
 * lets the same processes go on. Not the cgroup v2 freezer, which fork's
 * brief hold uses where it can: it would freeze init too (the cell's one
 * leaf holds it), and a paused cell's init must still answer status and
 * file requests. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cell_priv.h"
#include "hold.h"
#include "state.h"

static int mark_path(const struct cell *c, char *buf, size_t size, struct sc_err *err)
{
	if (rt_state_paused_path(c->dir, buf, size) < 0)
		return sc_fail(err, ENAMETOOLONG, "state directory of %s", c->name);
	return 0;
}

bool cell_is_paused(const struct cell *c)
{
	return rt_state_paused(c->dir);
}

int cell_pause(struct cell *c, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (mark_path(c, path, sizeof(path), err) < 0)
		return -1;
	if (!cell_is_alive(c))
		return sc_fail(err, ESRCH, "cell '%s' is not running", c->name);
	if (access(path, F_OK) == 0)
		return sc_fail(err, EALREADY, "cell '%s' is paused already", c->name);
	/* the mark first: an exec that starts while the cell is being held
	 * is refused, not left running */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) /* another pause came first */
		return sc_fail(err, EALREADY, "cell '%s' is paused already", c->name);
	if (fd < 0)
		return sc_fail(err, errno, "mark %s paused", c->name);
	close(fd);
	struct rt_hold *h = malloc(sizeof(*h));
	int rc = h ? rt_hold_still(h, c->info.pid, "", err) : sc_fail(err, ENOMEM, "hold");
	free(h); /* held until cell_resume: not released here */
	if (rc < 0) {
		unlink(path);
		sc_err_wrap(err, "pause of '%s'", c->name);
	}
	return rc;
}

int cell_resume(struct cell *c, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (mark_path(c, path, sizeof(path), err) < 0)
		return -1;
	if (access(path, F_OK) < 0)
		return sc_fail(err, EALREADY, "cell '%s' is not paused", c->name);
	if (!cell_is_alive(c))
		return sc_fail(err, ESRCH, "cell '%s' is not running", c->name);
	if (rt_hold_thaw(c->info.pid, err) < 0) {
		sc_err_wrap(err, "resume of '%s'", c->name);
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return sc_fail(err, errno, "unmark %s paused", c->name);
	return 0;
}

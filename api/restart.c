/* A restart that loses nothing: the server's record on its state root.
 *
 *   STATE_ROOT/.serve/lock         flock'd for the server's life (its pool's
 *                                  workers inherit it: the root stays taken
 *                                  until the last of them is gone); "pid=N"
 *   STATE_ROOT/.serve/cells/ID     one record per cell of POST /cells
 *
 * A record is written (temp file, fsync, rename) before the cell is
 * handed out and kept by the pool (cell_pool_keep), and unlinked when the
 * cell leaves the table. A server that starts on the root reads them:
 * a cell is adopted (same id, timeout and user; its idle clock starts
 * again) when its record is whole, names this server's node and was made
 * under this server's token, and its init is alive; every other cell the
 * root's servers made (named API_POOL_PREFIX-...: the pool's, /run_code's,
 * ones without a record) is removed. docs/api.md, "Restarts". */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../rootfs/rootfs.h"
#include "api_priv.h"

#define RECORD_MAX 1024
#define RECORDS_MAX 65536
#define LOCK_WAIT_S 60.0

static int serve_dir(char *buf, size_t size, const char *sub)
{
	return sc_path(buf, size, "%s/.serve%s%s", cell_state_root(), sub[0] ? "/" : "", sub);
}

static int ensure_dirs(struct sc_err *err)
{
	char d[SC_PATH_BUF];
	if (cell_ensure_private_dir(cell_state_root(), err) < 0)
		return -1;
	if (serve_dir(d, sizeof(d), "cells") < 0)
		return sc_fail(err, ENAMETOOLONG, "state root");
	if (sc_mkdir_p(d, 0700, err) < 0)
		return -1;
	return 0;
}

/* The holder's pid from the lock file (0: none). */
static pid_t lock_holder(int fd)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	int pid = 0;
	return sscanf(buf, "pid=%d", &pid) == 1 && pid > 0 ? (pid_t)pid : 0;
}

/* A zombie is no server: a killed one its parent has not reaped yet. */
static bool pid_alive(pid_t pid)
{
	if (pid <= 0)
		return false;
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t n = sc_read_small(AT_FDCWD, path, 0, buf, sizeof(buf), NULL);
	if (n <= 0)
		return kill(pid, 0) == 0 || errno == EPERM;
	const char *rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

int api_restart_lock(struct api *a, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (ensure_dirs(err) < 0)
		return sc_err_wrap(err, "serve's state under %s", cell_state_root());
	if (serve_dir(path, sizeof(path), "lock") < 0)
		return sc_fail(err, ENAMETOOLONG, "state root");
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "open %s", path);
	/* A server that died leaves its pool's workers removing its cells
	 * with the lock: wait for them; a live server refuses us. */
	double end = sc_now() + LOCK_WAIT_S;
	pid_t holder = 0;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		holder = lock_holder(fd);
		if (e != EWOULDBLOCK || pid_alive(holder) || sc_now() > end) {
			close(fd);
			if (e != EWOULDBLOCK)
				return sc_fail(err, e, "lock %s", path);
			if (pid_alive(holder))
				return sc_fail(err, EBUSY,
					       "another sandcell serve (pid %d) uses the state root %s: "
					       "stop it, or give this one a root of its own (--root DIR)",
					       (int)holder, cell_state_root());
			return sc_fail(err, EBUSY,
				       "the state root %s is still held by what is left of a server "
				       "that died (pid %d) after %.0f s: look for its processes",
				       cell_state_root(), (int)holder, LOCK_WAIT_S);
		}
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	char line[32];
	int n = snprintf(line, sizeof(line), "pid=%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n) {
		int e = errno;
		close(fd);
		return sc_fail(err, e, "write %s", path);
	}
	a->lock_fd = fd;
	return 0;
}

/* The owner of a record: who may use its cell. A keyed hash of the
 * token (never the token itself), or "none" for a server without one. */
static void owner_of(const struct api *a, char out[65])
{
	if (!a->token) {
		snprintf(out, 65, "none");
		return;
	}
	uint8_t h[32];
	rootfs_hmac_sha256(a->token, strlen(a->token), "sandcell serve cell owner", 25, h);
	for (size_t i = 0; i < sizeof(h); i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static int record_path(const char *id, bool tmp, char *buf, size_t size)
{
	char d[SC_PATH_BUF];
	if (serve_dir(d, sizeof(d), "cells") < 0)
		return -1;
	return sc_path(buf, size, "%s/%s%s", d, id, tmp ? ".tmp" : "");
}

int api_record_write(struct api *a, const struct api_cell *e, struct sc_err *err)
{
	char tmp[SC_PATH_BUF], path[SC_PATH_BUF], owner[65], text[RECORD_MAX];
	if (record_path(e->id, true, tmp, sizeof(tmp)) < 0 ||
	    record_path(e->id, false, path, sizeof(path)) < 0)
		return sc_fail(err, ENAMETOOLONG, "record of %s", e->id);
	owner_of(a, owner);
	/* created as wall-clock time: the monotonic clock of the table
	 * starts again at a reboot (whose cells are gone anyway) */
	double wall = (double)time(NULL) - (sc_now() - e->created);
	int n = snprintf(text, sizeof(text),
			 "id=%s\nname=%s\nnode=%s\nowner=%s\ncreated=%.3f\nidle_s=%.3f\nsession=%d\n",
			 e->id, e->name, a->node, owner, wall, e->idle_s, e->session ? 1 : 0);
	if (e->has_user && n > 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "user=%u:%u\n", e->uid, e->gid);
	if (e->memory_mb > 0 && n > 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "memory_mb=%.3f\n", e->memory_mb);
	if (e->image[0] && n > 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "image=%s\n", e->image);
	if (n < 0 || (size_t)n >= sizeof(text))
		return sc_fail(err, ENAMETOOLONG, "record of %s", e->id);
	_cleanup_fd_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "write %s", tmp);
	/* fsync: on a root on disk, a power cut never leaves an empty record
	 * under the final name (a killed process loses nothing written) */
	if (sc_write_all(fd, text, (size_t)n) < 0 || fsync(fd) < 0) {
		int e2 = errno;
		unlink(tmp);
		return sc_fail(err, e2, "write %s", tmp);
	}
	if (rename(tmp, path) < 0) {
		int e2 = errno;
		unlink(tmp);
		return sc_fail(err, e2, "rename %s", tmp);
	}
	return 0;
}

void api_record_drop(const char *id)
{
	char path[SC_PATH_BUF];
	if (id[0] && record_path(id, false, path, sizeof(path)) == 0)
		unlink(path);
}

/* ---- at the start ---- */

struct record {
	char id[API_ID_LEN + 1];
	char name[64];
	char node[API_NODE_NAME_MAX + 1];
	char owner[65];
	double created, idle_s, memory_mb;
	char image[64];   /* not the server's: its store name */
	bool session, has_user;
	uint32_t uid, gid;
};

static const char *field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; *p;) {
		if (!strncmp(p, key, kl) && p[kl] == '=')
			return p + kl + 1;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return NULL;
}

/* A field's value (up to the line's end) into buf; false when absent or
 * too long. */
static bool field_str(const char *text, const char *key, char *buf, size_t size)
{
	const char *v = field(text, key);
	if (!v)
		return false;
	size_t n = strcspn(v, "\n");
	if (n >= size)
		return false;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return true;
}

static bool field_num(const char *text, const char *key, double *out)
{
	char buf[32];
	char *end;
	if (!field_str(text, key, buf, sizeof(buf)))
		return false;
	*out = strtod(buf, &end);
	return end != buf && *end == '\0' && *out >= 0 && *out < 1e12;
}

static bool record_parse(const char *text, struct record *r)
{
	memset(r, 0, sizeof(*r));
	double session = 0;
	char user[32];
	if (!field_str(text, "id", r->id, sizeof(r->id)) ||
	    !field_str(text, "name", r->name, sizeof(r->name)) ||
	    !field_str(text, "node", r->node, sizeof(r->node)) ||
	    !field_str(text, "owner", r->owner, sizeof(r->owner)) ||
	    !field_num(text, "created", &r->created) || !field_num(text, "idle_s", &r->idle_s) ||
	    !field_num(text, "session", &session))
		return false;
	r->session = session != 0;
	if (field(text, "memory_mb") && !field_num(text, "memory_mb", &r->memory_mb))
		return false;
	if (field(text, "image") &&
	    (!field_str(text, "image", r->image, sizeof(r->image)) || !sc_valid_name(r->image)))
		return false;
	if (field_str(text, "user", user, sizeof(user))) {
		unsigned u, g;
		char tail;
		if (sscanf(user, "%u:%u%c", &u, &g, &tail) != 2)
			return false;
		r->has_user = true;
		r->uid = u;
		r->gid = g;
	}
	size_t node_len;
	return api_id_parse(r->id, strlen(r->id), &node_len) && node_len &&
	       sc_valid_name(r->name) && !strncmp(r->name, API_POOL_PREFIX "-",
						  sizeof(API_POOL_PREFIX));
}

/* Why record r's cell cannot be adopted ("" when it can); c: its handle. */
static const char *adoption_refused(struct api *a, const struct record *r, const char *file,
				    struct cell **c)
{
	char owner[65];
	owner_of(a, owner);
	*c = NULL;
	struct sc_err ignored;
	if (strcmp(r->id, file))
		return "the record's name is not its id";
	if (strcmp(r->node, a->node))
		return "made by another node (--node-name)";
	if (strcmp(r->owner, owner))
		return "made under another token";
	if (api_cell_find_locked(a, r->id))
		return "a second record of the id";
	if (a->ncells >= a->cfg.max_cells)
		return "more cells than --max-cells";
	if (cell_open(r->name, c, &ignored) < 0)
		return "its cell is gone";
	if (!cell_is_alive(*c)) {
		cell_close(*c);
		*c = NULL;
		return "its cell's init died";
	}
	return "";
}

static void adopt(struct api *a, const struct record *r, struct cell *c)
{
	struct api_cell *e = &a->cells[a->ncells++];
	memset(e, 0, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", r->id);
	snprintf(e->name, sizeof(e->name), "%s", r->name);
	double now = sc_now(), age = (double)time(NULL) - r->created;
	e->created = now - (age > 0 && age < now ? age : 0);
	e->last_used = now; /* when it was last used is not known: from now */
	e->idle_s = r->idle_s > 0 ? r->idle_s : a->cfg.cell_idle_s;
	e->handle = c;
	e->session = r->session;
	e->has_user = r->has_user;
	e->memory_mb = r->memory_mb;
	memcpy(e->image, r->image, sizeof(e->image));
	/* the record keeps no volume_mounts: a cell with some is not forked */
	struct cell_status st;
	struct sc_err ignored;
	e->volumes_unknown = cell_status_get(r->name, &st, &ignored) < 0 || st.nvolumes > 0;
	e->uid = r->uid;
	e->gid = r->gid;
}

static void log_cell(struct api *a, const char *event, const char *id, const char *name,
		     const char *reason)
{
	char ids[2 * API_ID_LEN + 8];
	size_t k = 0;
	for (const char *p = id; *p && k + 2 < sizeof(ids); p++) /* bounded, printable */
		ids[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	ids[k] = '\0';
	sc_log(&a->cfg.log, SC_LOG_INFO, "{\"event\":\"%s\",\"id\":\"%s\",\"cell\":\"%s\"%s%s%s}",
	       event, ids, name, reason ? ",\"reason\":\"" : "", reason ? reason : "",
	       reason ? "\"" : "");
}

/* One record file: adopted, or its cell removed; the file goes unless
 * adopted. True when a cell was removed. */
static bool take_record(struct api *a, int dfd, const char *file)
{
	char text[RECORD_MAX];
	struct record r;
	struct sc_err ignored;
	ssize_t n = sc_read_small(dfd, file, SC_READ_NOFOLLOW | SC_READ_REGULAR, text,
				  sizeof(text), &ignored);
	bool whole = n > 0 && (size_t)n < sizeof(text) - 1 && record_parse(text, &r);
	struct cell *c = NULL;
	const char *why = whole ? adoption_refused(a, &r, file, &c) : "the record does not parse";
	if (!why[0]) {
		adopt(a, &r, c);
		log_cell(a, "cell_adopted", r.id, r.name, NULL);
		return false;
	}
	bool removed = false;
	if (whole) {
		removed = cell_remove(r.name, true, &ignored) == 0; /* fails when gone already */
		log_cell(a, "cell_not_adopted", r.id, r.name, why);
	}
	unlinkat(dfd, file, 0);
	return removed;
}

static bool adopted(const struct api *a, const char *name)
{
	for (size_t i = 0; i < a->ncells; i++)
		if (!strcmp(a->cells[i].name, name))
			return true;
	return false;
}

/* Every cell of the root's servers that was not adopted goes: the pool's,
 * /run_code's, and /cells ones without a (whole) record. */
static size_t remove_the_rest(struct api *a)
{
	struct cell_status *all = NULL;
	size_t n = 0, removed = 0;
	struct sc_err ignored;
	if (cell_list(&all, &n, &ignored) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(all[i].name, API_POOL_PREFIX "-", sizeof(API_POOL_PREFIX)) &&
		    !adopted(a, all[i].name) && cell_remove(all[i].name, true, &ignored) == 0)
			removed++;
	free(all);
	return removed;
}

int api_restart_adopt(struct api *a, struct sc_err *err)
{
	char d[SC_PATH_BUF];
	if (serve_dir(d, sizeof(d), "cells") < 0)
		return sc_fail(err, ENAMETOOLONG, "state root");
	_cleanup_fd_ int dfd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return sc_fail(err, errno, "open %s", d);
	char **names = NULL;
	size_t n = 0, removed = 0;
	if (sc_dir_names_sorted(dfd, RECORDS_MAX, &names, &n, NULL) < 0)
		return sc_fail(err, errno, "read %s", d);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		if (len > 4 && !strcmp(names[i] + len - 4, ".tmp"))
			unlinkat(dfd, names[i], 0); /* a write a kill cut short */
		else if (take_record(a, dfd, names[i]))
			removed++;
	}
	sc_dir_names_free(names, n);
	removed += remove_the_rest(a);
	if (n || removed)
		sc_log(&a->cfg.log, SC_LOG_INFO,
		       "{\"event\":\"restart\",\"adopted\":%zu,\"removed\":%zu}", a->ncells, removed);
	return 0;
}

/* Where state, data and cache live (see cell.h). */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "cell.h"

/* The roots are worked out once, on first use, under `lock`; after that
 * the buffers never change (cell_set_root excepted, see cell.h), so the
 * pointers handed out stay valid and may be read from any thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char root_override[PATH_MAX - 64];
static char state_dir[PATH_MAX], data_dir[PATH_MAX], cache_dir[PATH_MAX];

void cell_set_root(const char *dir)
{
	pthread_mutex_lock(&lock);
	snprintf(root_override, sizeof(root_override), "%s", dir ? dir : "");
	state_dir[0] = data_dir[0] = cache_dir[0] = '\0';
	pthread_mutex_unlock(&lock);
}

static const char *usable_env(const char *name)
{
	const char *v = getenv(name);
	return (v && v[0] == '/' && strlen(v) < PATH_MAX - 64) ? v : NULL;
}

static void resolve_locked(char *buf, const char *sub, const char *root_path, const char *xdg,
			   const char *home_sub)
{
	const char *root = root_override[0] ? root_override : usable_env("SANDCELL_ROOT");
	const char *home = usable_env("HOME");
	if (root)
		(void)sc_path(buf, PATH_MAX, "%s/%s", root, sub);
	else if (geteuid() == 0)
		(void)sc_path(buf, PATH_MAX, "%s", root_path);
	else if (usable_env(xdg))
		(void)sc_path(buf, PATH_MAX, "%s/sandcell", usable_env(xdg));
	else if (home_sub && home && access(home, W_OK) == 0)
		(void)sc_path(buf, PATH_MAX, "%s/%s/sandcell", home, home_sub);
	else
		(void)sc_path(buf, PATH_MAX, "/tmp/sandcell-%u/%s", (unsigned)geteuid(), sub);
}

static const char *resolve(char *buf, const char *sub, const char *root_path, const char *xdg,
			   const char *home_sub)
{
	pthread_mutex_lock(&lock);
	if (!buf[0])
		resolve_locked(buf, sub, root_path, xdg, home_sub);
	pthread_mutex_unlock(&lock);
	return buf;
}

const char *cell_state_root(void)
{
	return resolve(state_dir, "run", "/run/sandcell", "XDG_RUNTIME_DIR", NULL);
}

const char *cell_data_root(void)
{
	return resolve(data_dir, "data", "/var/lib/sandcell", "XDG_DATA_HOME", ".local/share");
}

const char *cell_cache_root(void)
{
	return resolve(cache_dir, "cache", "/var/cache/sandcell", "XDG_CACHE_HOME", ".cache");
}

/* A directory only we (or root) can change. */
static int check_private(const char *dir, bool root_ok, struct sc_err *err)
{
	struct stat st;
	if (lstat(dir, &st) < 0)
		return sc_fail(err, errno, "%s", dir);
	if (!S_ISDIR(st.st_mode))
		return sc_fail(err, 0, "%s is not a directory", dir);
	if (st.st_uid != geteuid() && !(root_ok && st.st_uid == 0))
		return sc_fail(err, 0, "%s is owned by uid %u, not by you", dir, (unsigned)st.st_uid);
	if (st.st_mode & 022)
		return sc_fail(err, 0, "%s is writable by others; fix with chmod 700", dir);
	return 0;
}

int cell_ensure_private_dir(const char *dir, struct sc_err *err)
{
	/* A root caller's cells run as an unprivileged host id that must pass
	 * through to its layers: root's directories are searchable, never
	 * listable or writable by others. */
	mode_t mode = geteuid() == 0 ? 0711 : 0700;
	char buf[PATH_MAX];
	if (sc_path(buf, sizeof(buf), "%s", dir) < 0 || buf[0] != '/')
		return sc_fail(err, ENAMETOOLONG, "bad directory %s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		/* A shared /tmp parent must be ours alone, or another user
		 * could swap what lies under it. */
		bool shared = strncmp(buf, "/tmp/", 5) == 0 && strchr(buf + 5, '/') == NULL;
		if (mkdir(buf, shared ? mode : 0755) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "mkdir %s", buf);
		if (shared && check_private(buf, true, err) < 0)
			return -1;
		if (shared && geteuid() == 0 && chmod(buf, mode) < 0)
			return sc_fail(err, errno, "chmod %s", buf);
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return sc_fail(err, errno, "mkdir %s", buf);
	return check_private(buf, false, err);
}

/* Named volumes: <data root>/volumes/NAME/ holds `volume` (size=, created=,
 * enforced= lines, written last: a directory without it is a half-made
 * volume), `data/` (what cells see) and, for a root caller, `disk.ext4`
 * (the filesystem mounted on data/, volume_disk.c). A lock on NAME/ (flock)
 * keeps a mount, a removal and a create of one volume apart. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "../common/parse.h"
#include "state.h"
#include "volume.h"

#define VOLUME_MIN_SIZE (8ULL << 20) /* ext4's journal and tables need a few MiB */
#define VOLUME_MAX_SIZE (16ULL << 40)
#define VOLUME_USAGE_ENTRIES 1000000

struct volume_meta {
	uint64_t size;
	double created;
	bool enforced;
};

static int volume_dir(const char *name, char *buf, size_t size, struct sc_err *err)
{
	if (!sc_valid_name(name))
		return sc_fail(err, EINVAL,
			       "bad volume name '%.64s' (letters, digits, '_', '.', '-'; at most 64)",
			       name);
	if (sc_path(buf, size, "%s/volumes/%s", cell_data_root(), name) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume path for %s", name);
	return 0;
}

static int volume_lock(const char *dir, struct sc_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "%s", dir);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return sc_fail(err, e, "lock %s", dir);
		}
	}
	return fd;
}

static int meta_write(const char *dir, const struct volume_meta *m, struct sc_err *err)
{
	char tmp[SC_PATH_BUF], path[SC_PATH_BUF], text[128];
	if (sc_path(tmp, sizeof(tmp), "%s/volume.tmp", dir) < 0 ||
	    sc_path(path, sizeof(path), "%s/volume", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume file");
	int n = snprintf(text, sizeof(text), "size=%llu\ncreated=%.3f\nenforced=%d\n",
			 (unsigned long long)m->size, m->created, m->enforced ? 1 : 0);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "write %s", tmp);
	int rc = sc_write_all(fd, text, (size_t)n);
	int e = errno;
	close(fd);
	if (rc < 0)
		return sc_fail(err, e, "write %s", tmp);
	if (rename(tmp, path) < 0)
		return sc_fail(err, errno, "rename %s", tmp);
	return 0;
}

static int meta_read(const char *dir, const char *name, struct volume_meta *m,
		     struct sc_err *err)
{
	char path[SC_PATH_BUF], text[256];
	memset(m, 0, sizeof(*m));
	if (sc_path(path, sizeof(path), "%s/volume", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume file");
	struct sc_err rerr = {0};
	if (sc_read_small(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, text, sizeof(text),
			  &rerr) < 0) {
		if (rerr.errnum == ENOENT)
			return sc_fail(err, ENOENT, "no volume '%s' (sandcell volume ls)", name);
		*err = rerr;
		return -1;
	}
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "size=", 5))
			m->size = strtoull(line + 5, NULL, 10);
		else if (!strncmp(line, "created=", 8))
			m->created = strtod(line + 8, NULL);
		else if (!strncmp(line, "enforced=", 9))
			m->enforced = line[9] == '1';
	}
	if (m->size == 0)
		return sc_fail(err, EINVAL, "%s: no size", path);
	return 0;
}

static int make_volume(const char *dir, uint64_t size, struct volume_meta *m,
		       struct sc_err *err)
{
	char data[SC_PATH_BUF], image[SC_PATH_BUF];
	if (sc_path(data, sizeof(data), "%s/data", dir) < 0 ||
	    sc_path(image, sizeof(image), "%s/disk.ext4", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume path");
	if (mkdir(data, 0755) < 0)
		return sc_fail(err, errno, "create %s", data);
	struct idmap map;
	if (rt_idmap_for_caller(&map, err) < 0)
		return -1;
	m->size = size;
	m->enforced = map.range;
	if (map.range &&
	    (rt_volume_disk_make(image, size, err) < 0 ||
	     rt_volume_disk_mount(image, data, err) < 0))
		return -1;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	m->created = (double)now.tv_sec + now.tv_nsec / 1e9;
	return meta_write(dir, m, err);
}

int cell_volume_create(const char *name, uint64_t size, struct sc_err *err)
{
	char root[SC_PATH_BUF], dir[SC_PATH_BUF];
	if (volume_dir(name, dir, sizeof(dir), err) < 0)
		return -1;
	if (size < VOLUME_MIN_SIZE || size > VOLUME_MAX_SIZE)
		return sc_fail(err, EINVAL, "volume size: expected 8M to 16T, got %llu bytes",
			       (unsigned long long)size);
	if (sc_path(root, sizeof(root), "%s/volumes", cell_data_root()) < 0)
		return sc_fail(err, ENAMETOOLONG, "volumes path");
	if (cell_ensure_private_dir(root, err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0)
		return errno == EEXIST ? sc_fail(err, EEXIST, "volume '%s' exists", name)
				       : sc_fail(err, errno, "create %s", dir);
	_cleanup_fd_ int lock = volume_lock(dir, err);
	struct volume_meta m;
	if (lock < 0 || make_volume(dir, size, &m, err) < 0) {
		char data[SC_PATH_BUF];
		if (sc_path(data, sizeof(data), "%s/data", dir) == 0)
			(void)rt_volume_disk_unmount(data, NULL);
		sc_remove_tree(dir);
		return -1;
	}
	return 0;
}

static uint64_t volume_used(const char *data, bool enforced)
{
	if (enforced) {
		struct statvfs sv;
		if (!rt_volume_is_mounted(data) || statvfs(data, &sv) < 0)
			return 0;
		return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	}
	_cleanup_fd_ int fd = open(data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? 0 : rt_volume_tree_usage(fd, VOLUME_USAGE_ENTRIES);
}

/* Live long-lived cells that mount volume name, into who (comma-separated). */
static size_t volume_users(const char *name, char *who, size_t who_size)
{
	who[0] = '\0';
	DIR *d = opendir(cell_state_root());
	if (!d)
		return 0;
	struct dirent *e;
	size_t n = 0, len = 0;
	while ((e = readdir(d))) {
		char dir[SC_PATH_BUF];
		struct cell_info info;
		struct sc_err ignored;
		if (e->d_name[0] == '.' ||
		    sc_path(dir, sizeof(dir), "%s/%s", cell_state_root(), e->d_name) < 0 ||
		    rt_state_read_info(dir, &info, &ignored) < 0 || !rt_state_alive(&info))
			continue;
		for (size_t i = 0; i < info.nvolumes; i++) {
			if (strcmp(info.volumes[i], name) != 0)
				continue;
			int w = snprintf(who + len, who_size - len, "%s%s", n ? "," : "",
					 info.name);
			if (w > 0 && (size_t)w < who_size - len)
				len += (size_t)w;
			n++;
			break;
		}
	}
	closedir(d);
	return n;
}

int cell_volume_get(const char *name, struct cell_volume *v, struct sc_err *err)
{
	char dir[SC_PATH_BUF];
	struct volume_meta m;
	memset(v, 0, sizeof(*v));
	if (volume_dir(name, dir, sizeof(dir), err) < 0 || meta_read(dir, name, &m, err) < 0)
		return -1;
	snprintf(v->name, sizeof(v->name), "%s", name);
	if (sc_path(v->path, sizeof(v->path), "%s/data", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume path");
	v->size = m.size;
	v->created = m.created;
	v->enforced = m.enforced;
	v->used = volume_used(v->path, m.enforced);
	v->nusers = volume_users(name, v->users, sizeof(v->users));
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct cell_volume *)a)->name, ((const struct cell_volume *)b)->name);
}

int cell_volume_list(struct cell_volume **out, size_t *n, struct sc_err *err)
{
	char root[SC_PATH_BUF];
	*out = NULL;
	*n = 0;
	if (sc_path(root, sizeof(root), "%s/volumes", cell_data_root()) < 0)
		return sc_fail(err, ENAMETOOLONG, "volumes path");
	DIR *d = opendir(root);
	if (!d)
		return errno == ENOENT ? 0 : sc_fail(err, errno, "%s", root);
	struct dirent *e;
	size_t cap = 0;
	while ((e = readdir(d))) {
		struct cell_volume v;
		struct sc_err ignored;
		if (e->d_name[0] == '.' || cell_volume_get(e->d_name, &v, &ignored) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct cell_volume *grown = realloc(*out, cap * sizeof(**out));
			if (!grown) {
				closedir(d);
				return sc_fail(err, ENOMEM, "volume list");
			}
			*out = grown;
		}
		(*out)[(*n)++] = v;
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), by_name);
	return 0;
}

int cell_volume_remove(const char *name, struct sc_err *err)
{
	char dir[SC_PATH_BUF], data[SC_PATH_BUF], who[256];
	if (volume_dir(name, dir, sizeof(dir), err) < 0)
		return -1;
	if (access(dir, F_OK) < 0)
		return sc_fail(err, ENOENT, "no volume '%s' (sandcell volume ls)", name);
	_cleanup_fd_ int lock = volume_lock(dir, err);
	if (lock < 0)
		return -1;
	if (volume_users(name, who, sizeof(who)) > 0)
		return sc_fail(err, EBUSY, "volume '%s' is in use by cell %s (rm the cell first)",
			       name, who);
	if (sc_path(data, sizeof(data), "%s/data", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume path");
	if (rt_volume_disk_unmount(data, err) < 0)
		return -1;
	return sc_remove_tree_path(dir, err);
}

int cell_volume_source(const char *name, char *buf, size_t size, struct sc_err *err)
{
	char dir[SC_PATH_BUF];
	struct volume_meta m;
	if (volume_dir(name, dir, sizeof(dir), err) < 0 || meta_read(dir, name, &m, err) < 0)
		return -1;
	if (sc_path(buf, size, "%s/data", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume path");
	if (!m.enforced) {
		uint64_t used = volume_used(buf, false);
		if (used > m.size)
			return sc_fail(err, ENOSPC,
				       "volume '%s' holds %llu bytes, over its size %llu: remove "
				       "files from %s",
				       name, (unsigned long long)used, (unsigned long long)m.size, buf);
		return 0;
	}
	_cleanup_fd_ int lock = volume_lock(dir, err);
	if (lock < 0)
		return -1;
	if (rt_volume_is_mounted(buf))
		return 0;
	char image[SC_PATH_BUF];
	if (sc_path(image, sizeof(image), "%s/disk.ext4", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "volume path");
	return rt_volume_disk_mount(image, buf, err);
}

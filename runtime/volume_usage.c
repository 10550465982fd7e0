/* How much a rootless volume holds: the blocks of its tree, counted the
 * way du does (each hard link once per name: an overcount, never under). */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "volume.h"

#define USAGE_MAX_DEPTH 128

struct usage_walk {
	uint64_t bytes;
	size_t entries, max_entries;
	dev_t dev;
};

static void walk_dir(struct usage_walk *w, int dir_fd, int depth)
{
	DIR *d = fdopendir(dir_fd);
	if (!d) {
		close(dir_fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) && w->entries < w->max_entries) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		w->entries++;
		w->bytes += (uint64_t)st.st_blocks * 512;
		if (!S_ISDIR(st.st_mode) || st.st_dev != w->dev || depth >= USAGE_MAX_DEPTH)
			continue;
		int sub = openat(dirfd(d), e->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			walk_dir(w, sub, depth + 1);
	}
	closedir(d);
}

uint64_t rt_volume_tree_usage(int dir_fd, size_t max_entries)
{
	struct stat st;
	if (fstat(dir_fd, &st) < 0)
		return 0;
	struct usage_walk w = {.bytes = (uint64_t)st.st_blocks * 512, .max_entries = max_entries,
			       .dev = st.st_dev};
	int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
	if (fd >= 0)
		walk_dir(&w, fd, 0);
	return w.bytes;
}

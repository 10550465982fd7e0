/* Private to runtime/: paths resolved inside a cell by sandcell's own code
 * running there — init's exec and file workers, and the setup after
 * pivot_root. The cell (or its image) controls every name in its tree,
 * symlinks included, so no path string from a request or a spec is handed
 * to open, stat, chdir or mkdir: each lookup is openat2 from the cell's
 * root with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS (sc_openat_in_root).
 * Symlinks resolve as they do for the cell's own processes; a magic link
 * (/proc/self/fd/N/.., /proc/1/root, /proc/self/cwd) is refused with
 * ELOOP, so what a process of ours holds open can never become a way out.
 * Relative paths are taken from the cell's root. No malloc: safe in a
 * vfork child. Each returns an fd (or 0) or -1 with errno set. */
#pragma once
#include <limits.h>
#include <sys/types.h>

#define CELLPATH_MAX 4096

/* open(2) of path in the cell (O_CLOEXEC added). */
int rt_cellpath_open(const char *path, int flags, mode_t mode);
/* An O_PATH fd of path's parent directory and its last component in leaf
 * (for the *at calls, which then never follow a link at the leaf). With
 * make_mode, missing parent directories are made (mode make_mode).
 * EINVAL for a path with no last component ("/", ""). */
int rt_cellpath_open_parent(const char *path, mode_t make_mode, char leaf[NAME_MAX + 1]);
/* mkdir -p. */
int rt_cellpath_mkdir_p(const char *path, mode_t mode);
/* chdir(2). */
int rt_cellpath_chdir(const char *path);

/* Private to runtime/: opening paths inside a cell's root without ever
 * following a symlink the cell (or its image) could have planted. */
#pragma once
#include <stdbool.h>

#include "../common/sc.h"

/* Open `path` (absolute in the cell) beneath root_fd with no symlink in any
 * component, creating missing directories (0755) and, when !want_dir, an
 * empty final file (0644). Returns an O_PATH fd or -1 with err filled. */
int rt_safepath_open(int root_fd, const char *path, bool want_dir, bool create,
		  struct sc_err *err);

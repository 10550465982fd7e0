/* Private to runtime/: named volumes (volume.c) and the ext4 image that
 * holds a root caller's volume to its size (volume_disk.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

int rt_volume_disk_make(const char *image, uint64_t size, struct sc_err *err);
int rt_volume_disk_mount(const char *image, const char *dir, struct sc_err *err);
int rt_volume_disk_unmount(const char *dir, struct sc_err *err);
bool rt_volume_is_mounted(const char *dir);
/* Bytes in blocks under dir_fd's tree (no symlink followed, no other
 * filesystem entered), at most max_entries entries counted. */
uint64_t rt_volume_tree_usage(int dir_fd, size_t max_entries);

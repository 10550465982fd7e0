/* rootfs/: the image store. An image is a list of read-only layer
 * directories (overlay lower dirs, top first) plus defaults; `host` is the
 * built-in image made of the host's /usr, /etc and /opt. */
#pragma once
#include <stddef.h>

#include "../common/sc.h"

#define ROOTFS_MAX_LAYERS 64

struct rootfs_image {
	char name[64];
	char *layers[ROOTFS_MAX_LAYERS]; /* absolute paths, top first; 0 for host */
	size_t nlayers;
	char **env;       /* image default env (KEY=VAL), NULL-terminated or NULL */
	char *workdir;    /* image default workdir or NULL */
};

/* Resolve an image name under data_root (NULL or "host": the host image). */
int rootfs_image_open(const char *data_root, const char *name, struct rootfs_image *out,
		      struct sc_err *err);
void rootfs_image_free(struct rootfs_image *img);

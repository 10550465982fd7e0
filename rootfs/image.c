#include <string.h>

#include "../common/parse.h"
#include "rootfs.h"

int rootfs_image_open(const char *data_root, const char *name, struct rootfs_image *out,
		      struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!name || !strcmp(name, "host")) {
		snprintf(out->name, sizeof(out->name), "host");
		return 0;
	}
	if (!sc_valid_name(name))
		return sc_fail(err, 0, "bad image name '%.64s'", name);
	return sc_fail(err, 0, "image '%s' not found (see 'sandcell image ls')", name);
}

void rootfs_image_free(struct rootfs_image *img)
{
	for (size_t i = 0; i < img->nlayers; i++)
		free(img->layers[i]);
	if (img->env) {
		for (char **e = img->env; *e; e++)
			free(*e);
		free(img->env);
	}
	free(img->workdir);
	memset(img, 0, sizeof(*img));
}

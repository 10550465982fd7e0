/* imagebuild/: images built by running cells — `sandcell image build
 * --dockerfile`. Above runtime/ (the cells) and rootfs/ (the store), so
 * that runtime/ stays the cell alone. */
#pragma once
#include "../rootfs/rootfs.h"
#include "../runtime/cell.h"

/* Build image `name` from a Dockerfile (the subset rootfs_df_parse takes)
 * without a daemon: each RUN runs in a cell made from spec (its policy,
 * limits and filter; image, env and workdir are set per step) and each RUN
 * and COPY/ADD is committed as a layer of an intermediate image; ENV,
 * WORKDIR, USER, LABEL, CMD and ENTRYPOINT go to the image's config. COPY
 * and ADD read only beneath context, never through a symlink. On failure
 * the intermediate images are removed and no image `name` is made (an
 * existing one stays). Not from a multi-threaded process (cell_create). */
struct imagebuild_req {
	const char *name;
	const char *file;            /* the Dockerfile */
	const char *context;         /* the build context directory */
	char *const *build_args;     /* KEY=VALUE (--build-arg), NULL-terminated or NULL */
	const struct cell_spec *spec;
	const struct rootfs_in_use *in_use;
	const struct rootfs_limits *lim;
	int out_fd;                  /* RUN's stdout and stderr */
	const struct sc_log *log;    /* a line per step */
};
struct imagebuild_result {
	struct rootfs_report rep;    /* of the final image */
	unsigned steps, layers;
	double seconds;
};
int imagebuild_dockerfile(const struct imagebuild_req *b, struct imagebuild_result *res,
			   struct sc_err *err);

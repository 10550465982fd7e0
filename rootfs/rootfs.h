/* rootfs/: the image store. An image is a list of read-only layer
 * directories (overlay lower dirs, top first) plus defaults; `host` is the
 * built-in image made of the host's /usr, /etc and /opt. Other images live
 * under the data root (see docs/images.md): built from a recipe, imported
 * from a Docker/OCI archive, or pulled from a registry. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/sc.h"

#define ROOTFS_MAX_LAYERS 64
#define ROOTFS_DEFAULT_MAX_SIZE (8ULL << 30)
#define ROOTFS_DEFAULT_MAX_FILES 2000000ULL

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

/* What `image ls` shows. */
struct rootfs_image_info {
	char name[64];
	char id[80];          /* top layer, "sha256-HEX" */
	size_t nlayers;
	uint64_t size;        /* bytes of regular files */
	char created[32];     /* ISO 8601, UTC */
	char *source;         /* "build:RECIPE", "import:FILE", "pull:REF@DIGEST" */
	char **env, **entrypoint, **cmd; /* NULL-terminated or NULL */
	char *workdir;
	char *used_by;        /* a cell using it, or NULL */
};

/* All images, sorted by name (the host image is not listed). */
int rootfs_image_list(const char *data_root, struct rootfs_image_info **out, size_t *n,
		      struct sc_err *err);
void rootfs_image_list_free(struct rootfs_image_info *list, size_t n);

/* Which images cells use. Cells are the runtime's, above rootfs, so the
 * caller answers (cli/ passes the runtime's cell_image_in_use): fn returns
 * true, with the cell's name in who, when a cell uses `image`. A NULL
 * in_use or fn: no cell uses any image. */
struct rootfs_in_use {
	bool (*fn)(void *ctx, const char *image, char *who, size_t who_size);
	void *ctx;
};

/* Remove an image and the layers no other image uses. Refused while a cell
 * uses it (in_use). */
int rootfs_image_remove(const char *data_root, const struct rootfs_in_use *in_use,
			const char *name, struct sc_err *err);

struct rootfs_limits {
	uint64_t max_size;  /* uncompressed bytes of all layers (0: default) */
	uint64_t max_files; /* entries (0: default) */
	/* one line per device node left out (the first 20, then a count);
	 * NULL: only rootfs_report.skipped_devices counts them */
	const struct sc_log *log;
};

/* What an import or build did, for the CLI to report. */
struct rootfs_report {
	char id[80];
	uint64_t size, files;
	uint64_t skipped_devices, stripped_setid;
	bool shared;       /* the layer was stored already: nothing unpacked */
	double seconds;
};

/* A recipe runs in a process group of its own, so that a terminal's ^C
 * does not reach it: `group` is told the group's id when the recipe starts
 * and 0 once it is gone (before its id can be reused), so that the caller
 * can pass signals on to it. The library installs no signal handler. */
struct rootfs_recipe_hook {
	void (*group)(void *ctx, pid_t pgid);
	void *ctx;
};

/* Run a recipe (a shell script, see docs/images.md) and store its root
 * filesystem as image `name`. The recipe's output goes to log (stderr).
 * An image being replaced must not be in use by a cell (in_use). hook may
 * be NULL. */
int rootfs_image_build(const char *data_root, const struct rootfs_in_use *in_use, const char *name,
		       const char *recipe, const struct rootfs_limits *lim,
		       const struct rootfs_recipe_hook *hook, struct rootfs_report *rep,
		       struct sc_err *err);

/* Import a `docker save` archive or an OCI image layout (directory or tar).
 * Warnings (an archive with several images) go to log (may be NULL). */
int rootfs_image_import(const char *data_root, const struct rootfs_in_use *in_use, const char *file,
			const char *name, const struct rootfs_limits *lim,
			struct rootfs_report *rep, const struct sc_log *log,
			struct sc_err *err);

struct rootfs_pull_opts {
	bool insecure;      /* plain HTTP, loopback registries only */
	const char *platform; /* "linux/amd64"; NULL: the host's */
	FILE *progress;     /* one line per blob, or NULL */
	struct rootfs_limits limits;
};

/* Pull REF ([HOST[:PORT]/]REPO[:TAG|@sha256:HEX]) from a registry. */
int rootfs_image_pull(const char *data_root, const struct rootfs_in_use *in_use, const char *ref,
		      const char *name, const struct rootfs_pull_opts *opts,
		      struct rootfs_report *rep, struct sc_err *err);

/* Make image `name` from image `base` with a cell's writable layer on top:
 * diff_fd is a tar stream of that layer with OCI whiteouts (what
 * cell_export_layer writes). `cell` names the source in the manifest. */
int rootfs_image_commit(const char *data_root, const struct rootfs_in_use *in_use, const char *base,
			const char *name, const char *cell, int diff_fd,
			const struct rootfs_limits *lim, struct rootfs_report *rep, struct sc_err *err);

/* The directory recipes are looked up in when no file is given: the
 * SANDCELL_RECIPES environment variable, else the installed or source
 * scripts/images directory. */
const char *rootfs_recipe_dir(void);

/* Unpack a tar stream read from tar_fd (plain or gzip) into the directory
 * dir_fd (not owned) with the checked extractor of image layers: absolute
 * and ".." names are refused (the call fails), nothing is written through a
 * symlink, devices are skipped, setuid/setgid stripped, owners not changed
 * (the caller's). max_bytes bounds the unpacked bytes, max_files the
 * entries. *files (may be NULL): entries made. */
int rootfs_tar_unpack(int dir_fd, int tar_fd, uint64_t max_bytes, uint64_t max_files,
		      uint64_t *files, struct sc_err *err);

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
	bool idmap;       /* the layers keep the image's own owners (root
			   * caller, not shifted): cells see them idmapped */
	char **env;       /* image default env (KEY=VAL), NULL-terminated or NULL */
	char *workdir;    /* image default workdir or NULL */
	char *user;       /* image default user (USER) or NULL */
	char **entrypoint, **cmd; /* ENTRYPOINT and CMD, NULL-terminated or NULL */
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
	char *user;           /* USER of a Dockerfile build, or NULL */
	char **labels;        /* KEY=VALUE or NULL */
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
	uint64_t store_max; /* the store's cap, for the caller's rootfs_store_trim
			     * once the image is stored (0: none); unused here */
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

/* A pull's running figures, for a progress bar. Layers that are already
 * downloaded count as done from the start; rate = bytes_now / seconds. */
struct rootfs_pull_layer {
	char digest[20]; /* "sha256:" and the first 12 hex digits */
	uint64_t size, done;
	bool started;
};
struct rootfs_pull_figures {
	const struct rootfs_pull_layer *layer; /* each distinct layer once */
	size_t nlayers, layers_done;
	uint64_t bytes, bytes_done; /* over every layer */
	uint64_t bytes_now;         /* downloaded by this pull (not resumed) */
	double seconds;             /* since the downloads began */
	bool final;                 /* the last call: every layer is done */
};
struct rootfs_pull_meter {
	void (*fn)(void *ctx, const struct rootfs_pull_figures *f);
	void *ctx;
};

struct rootfs_pull_opts {
	bool insecure;      /* plain HTTP, loopback registries only */
	const char *platform; /* "linux/amd64"; NULL: the host's */
	/* A docker config.json or podman auth.json with the registry's
	 * credentials; NULL: the files docker and podman login write. */
	const char *creds_file;
	/* Progress, one SC_LOG_PROGRESS message per blob, or NULL. Layers
	 * download at once: it is called from the downloading threads, one
	 * call at a time, while rootfs_image_pull runs. */
	const struct sc_log *log;
	/* The figures, at most ten times a second while layers download
	 * and once when all are done, or NULL. Called like log: from the
	 * downloading threads, one call at a time, never at once with log. */
	const struct rootfs_pull_meter *meter;
	struct rootfs_limits limits;
};

/* Write stored image `name` to out_fd as one tar that is both an OCI
 * image layout and a `docker save` archive (uncompressed layers, the
 * image's config; tag NAME:latest). */
int rootfs_image_export(const char *data_root, const char *name, int out_fd, struct sc_err *err);

/* Pull REF ([HOST[:PORT]/]REPO[:TAG|@sha256:HEX]) from a registry. */
int rootfs_image_pull(const char *data_root, const struct rootfs_in_use *in_use, const char *ref,
		      const char *name, const struct rootfs_pull_opts *opts,
		      struct rootfs_report *rep, struct sc_err *err);

struct rootfs_push_opts {
	bool insecure;          /* plain HTTP, loopback registries only */
	const char *creds_file; /* as rootfs_pull_opts's */
	/* A SC_LOG_PROGRESS line per blob as it goes (checked, uploading),
	 * or NULL. */
	const struct sc_log *log;
};

struct rootfs_push_blob {
	char digest[72];  /* "sha256:HEX" of the blob as the registry has it */
	uint64_t size;
	bool config;      /* the image config, else a (gzip) layer */
	bool pushed;      /* uploaded now, else the registry had it already */
};

struct rootfs_push_result {
	char ref[660];    /* HOST/REPO:TAG, as pushed */
	char digest[72];  /* the image manifest's */
	size_t nblobs;    /* the layers bottom first, then the config */
	struct rootfs_push_blob blob[ROOTFS_MAX_LAYERS + 1];
};

/* Push stored image `name` to REF ([HOST[:PORT]/]REPO[:TAG]) on a
 * registry: each layer gzip-compressed (the config's diff_ids are the
 * plain tars'), the config, then an OCI image manifest under the tag.
 * Blobs the registry has already are not sent. Credentials as for a pull;
 * token services are asked for push,pull. res is filled as it goes. */
int rootfs_image_push(const char *data_root, const char *name, const char *ref,
		      const struct rootfs_push_opts *o, struct rootfs_push_result *res,
		      struct sc_err *err);

/* ---- registry references in place of store names, and the store's cap
 * (evict.c) ---- */

/* Whether s is a registry reference (it has a '/', ':' or '@') rather
 * than a store name. */
bool rootfs_is_reference(const char *s);
/* The store name an image pulled for reference ref is kept under:
 * HOST_REPO_TAG-HASH (HOST without its port's colon, Docker Hub as
 * "docker.io", REPO's last component, TAG or the digest's first 12 hex
 * digits, each cut and with other characters as '_'; HASH: 12 hex digits
 * of the sha256 of the canonical HOST/REPO:TAG or HOST/REPO@DIGEST).
 * out holds at least 64 bytes. */
int rootfs_ref_store_name(const char *ref, char *out, size_t size, struct sc_err *err);
/* The registry of reference ref, as pulls name it ("127.0.0.1:5000",
 * "docker.io" for Docker Hub), into out. */
int rootfs_ref_registry(const char *ref, char *out, size_t size, struct sc_err *err);
enum rootfs_pull_when { ROOTFS_PULL_MISSING, ROOTFS_PULL_NEVER, ROOTFS_PULL_ALWAYS };
struct rootfs_resolved {
	char store[64];             /* the image's store name */
	bool pulled;                /* it was pulled now: report and time */
	struct rootfs_report report;
	double pull_s;
};
/* An image as a user names it (--image, a task's "image"): a store name
 * as it is; a registry reference as its store name, pulled per `when`
 * with po (log, when not NULL, gets a line before a pull). A store name
 * that is not stored is not an error here (opening it is). */
int rootfs_image_resolve(const char *data_root, const struct rootfs_in_use *in_use,
			 const char *named, enum rootfs_pull_when when,
			 const struct rootfs_pull_opts *po, const struct sc_log *log,
			 struct rootfs_resolved *out, struct sc_err *err);
/* Record that a cell uses image `name` now (the least-recently-used order
 * of rootfs_store_trim): touches images/NAME.used. Best effort, cheap:
 * rootfs_image_open calls it. */
void rootfs_image_note_use(const char *data_root, const char *name);

struct rootfs_trim_report {
	uint64_t before, after; /* bytes of all images (image ls's sizes) */
	size_t evicted;
};
/* Keep the store at most max bytes (0: no cap): remove images that no
 * cell uses (in_use), that are not in keep (NULL-terminated, may be NULL)
 * and that no cell opened in the last 2 s, least recently used first,
 * until the images' sizes add up to max or less. Each eviction is told to
 * log (SC_LOG_INFO), and a store that stays over max (SC_LOG_WARN). Under
 * the store's lock. rep may be NULL. */
int rootfs_store_trim(const char *data_root, const struct rootfs_in_use *in_use, uint64_t max,
		      const char *const *keep, const struct sc_log *log,
		      struct rootfs_trim_report *rep, struct sc_err *err);

/* Make image `name` from image `base` with a cell's writable layer on top:
 * diff_fd is a tar stream of that layer with OCI whiteouts (what
 * cell_export_layer writes). `cell` names the source in the manifest. */
int rootfs_image_commit(const char *data_root, const struct rootfs_in_use *in_use, const char *base,
			const char *name, const char *cell, int diff_fd,
			const struct rootfs_limits *lim, struct rootfs_report *rep, struct sc_err *err);

/* An image's defaults (its config). Strings are malloc'd; arrays are
 * NULL-terminated or NULL. */
struct rootfs_config {
	char **env;        /* KEY=VALUE */
	char *workdir;
	char **entrypoint, **cmd;
	char *user;        /* USER: the default user of cells made from the image */
	char **labels;     /* KEY=VALUE */
};
/* The config of stored image `name` (not "host"). */
int rootfs_image_config(const char *data_root, const char *name, struct rootfs_config *out,
			struct sc_err *err);
void rootfs_config_free(struct rootfs_config *c);

/* Make image `name` from stored image `base`: diff_fd (a tar with OCI
 * whiteouts, as cell_export_layer writes; -1: no new layer, the base's
 * layer is shared) on top, and cfg as its config. source is recorded
 * ("dockerfile:FILE"). */
int rootfs_image_derive(const char *data_root, const struct rootfs_in_use *in_use, const char *base,
			const char *name, const char *source, int diff_fd,
			const struct rootfs_config *cfg, const struct rootfs_limits *lim,
			struct rootfs_report *rep, struct sc_err *err);

/* Make image `name` with an empty tree and no defaults (FROM scratch). */
int rootfs_image_empty(const char *data_root, const struct rootfs_in_use *in_use, const char *name,
		       const char *source, struct sc_err *err);

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

/* ---- Dockerfiles (dockerfile.c): the subset `image build --dockerfile`
 * builds, parsed without I/O. Errors name FILE:LINE; instructions and
 * forms outside the subset are refused ("FILE:LINE: HEALTHCHECK is not
 * supported"). ---- */
#define ROOTFS_DF_MAX_SIZE (1024 * 1024) /* bytes of a Dockerfile */
#define ROOTFS_DF_MAX_LINE (64 * 1024)   /* bytes of one instruction */
#define ROOTFS_DF_MAX_INSTR 1000
#define ROOTFS_DF_MAX_WORDS 256

enum rootfs_df_op {
	ROOTFS_DF_FROM, ROOTFS_DF_RUN, ROOTFS_DF_COPY, ROOTFS_DF_ADD, ROOTFS_DF_ENV,
	ROOTFS_DF_WORKDIR, ROOTFS_DF_USER, ROOTFS_DF_ARG, ROOTFS_DF_LABEL, ROOTFS_DF_CMD,
	ROOTFS_DF_ENTRYPOINT,
};

struct rootfs_df_instr {
	enum rootfs_df_op op;
	unsigned line;     /* where it starts */
	bool exec_form;    /* a JSON array of strings: argv */
	char **argv;       /* exec form's strings (NULL-terminated), else NULL */
	char *text;        /* the arguments as written, continuations joined */
};

struct rootfs_dockerfile {
	struct rootfs_df_instr *v;
	size_t n;
};

/* file names the text in messages. One FROM, first (ARGs may come before). */
int rootfs_df_parse(const char *text, size_t len, const char *file, struct rootfs_dockerfile *out,
		    struct sc_err *err);
void rootfs_df_free(struct rootfs_dockerfile *df);
const char *rootfs_df_op_name(enum rootfs_df_op op);

/* A variable's value, or NULL when it is not set. */
typedef const char *(*rootfs_df_lookup)(void *ctx, const char *name);
/* Split shell-form arguments into words: whitespace separates, '...' is
 * literal, "..." and bare text take backslash escapes and $NAME, ${NAME},
 * ${NAME:-WORD}, ${NAME:+WORD} (values from fn; NULL fn: none set).
 * *out is NULL-terminated (rootfs_strv_free). */
int rootfs_df_words(const char *text, rootfs_df_lookup fn, void *ctx, char ***out,
		    struct sc_err *err);
/* NULL-terminated string arrays: a copy (NULL for NULL or out of
 * memory), and freeing one (NULL is fine). */
char **rootfs_strv_dup(char *const *v);
void rootfs_strv_free(char **v);

/* HMAC-SHA-256 (RFC 2104) with rootfs's own SHA-256 (rootfs/sha256.c):
 * runtime derives secrets of a cell's creator from the cell's token with
 * it (cell_derive_secret). */
void rootfs_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
			uint8_t out[32]);

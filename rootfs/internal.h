/* Private to rootfs/: the byte streams and tar reader, the checked
 * extractor, the store's layout and manifests, the registry client. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "../common/http.h"
#include "rootfs.h"
#include "sha256.h"

/* ---- byte streams: a file region, a pipe, optionally gzip- or zstd-compressed ---- */

struct stream {
	int fd;
	bool seekable;       /* pread from pos; else read() */
	uint64_t pos;        /* next raw offset (seekable) */
	uint64_t raw_left;   /* raw bytes left in the region (UINT64_MAX: to EOF) */
	uint8_t *rbuf;       /* read-ahead of raw bytes */
	size_t rlen, roff;
	struct sha256 raw_hash; /* over the raw (maybe compressed) bytes */
	bool gzip;
	bool z_ready, z_end;
	z_stream z;
	uint8_t *zbuf;       /* compressed input buffer (gzip and zstd) */
	bool zstd, zs_end, zs_frame_open, zs_pending;
	ZSTD_DStream *zs;
	ZSTD_inBuffer zs_in;  /* over zbuf */
	struct sha256 data_hash; /* over the uncompressed bytes */
	uint64_t data_bytes; /* uncompressed bytes produced */
	uint64_t max_data;   /* limit on data_bytes (0: none) */
	bool over_limit;
	bool fast_skip;      /* skips seek (hashes then do not cover them) */
	bool peeked;         /* first bytes sniffed for the gzip or zstd magic */
	uint8_t peek[4];
	size_t peek_len, peek_off;
};

/* A stream over fd [offset, offset+len) (len UINT64_MAX: to EOF). fd stays
 * owned by the caller. Compression is sniffed on the first read. */
int rootfs_stream_open(struct stream *s, int fd, uint64_t offset, uint64_t len, uint64_t max_data,
		struct sc_err *err);
/* Read up to len uncompressed bytes; 0 at the end; -1 with err. */
ssize_t rootfs_stream_read(struct stream *s, void *buf, size_t len, struct sc_err *err);
/* Read and discard up to len bytes (seeks when it can). */
int rootfs_stream_skip(struct stream *s, uint64_t len, struct sc_err *err);
/* Read to the end so that both hashes cover everything. */
int rootfs_stream_drain(struct stream *s, struct sc_err *err);
void rootfs_stream_close(struct stream *s);

/* ---- tar: ustar, pax extended headers, GNU long names ---- */

#define TAR_PATH_MAX 4096

enum tar_type { TAR_FILE, TAR_DIR, TAR_SYMLINK, TAR_HARDLINK, TAR_CHAR, TAR_BLOCK, TAR_FIFO, TAR_OTHER };

struct tar_entry {
	char path[TAR_PATH_MAX];
	char link[TAR_PATH_MAX];
	enum tar_type type;
	uint32_t mode;
	uint64_t size;
	uint32_t uid, gid;
	int64_t mtime;
	uint64_t data_offset; /* raw offset of the content (uncompressed archives) */
};

struct tar_reader {
	struct stream *in;
	uint64_t offset;    /* bytes consumed from the uncompressed stream */
	uint64_t left;      /* content bytes of the current entry not yet read */
	uint64_t pad;       /* padding after the current entry */
};

void rootfs_tar_init(struct tar_reader *t, struct stream *in);
/* Next entry: 1 with e filled, 0 at the end of the archive, -1 on error. */
int rootfs_tar_next(struct tar_reader *t, struct tar_entry *e, struct sc_err *err);
/* Read the current entry's content. */
ssize_t rootfs_tar_read(struct tar_reader *t, void *buf, size_t len, struct sc_err *err);

/* ---- the checked extractor (extract.c) ---- */

/* The one rule for a path inside an archive: "./a//b/" -> "a/b" in out
 * ("" for the top); ".." anywhere, a name over 255 bytes, more than 256
 * levels or more than size bytes are refused, and so is an absolute path
 * unless absolute_ok (then its leading slashes are dropped). */
int rootfs_member_path(const char *in, bool absolute_ok, char *out, size_t size,
		       struct sc_err *err);

struct idshift {
	bool chown;         /* root: chown entries to start + id */
	bool shifted;       /* start is the cells' range (else 0: the image's
			     * own ids, which cells see through idmapped mounts) */
	uint32_t uid_start, gid_start, count;
};

/* The id range a root caller's cells map (/etc/subuid "sandcell", else
 * 524288+65536, as runtime/idmap.c), and whether layers under data_root
 * must be shifted into it (chown): only for root callers whose cells
 * cannot see them through idmapped mounts (common/idmapfs.h). */
int rootfs_idshift_for_caller(struct idshift *s, const char *data_root, struct sc_err *err);

struct extract_limits {
	uint64_t max_bytes; /* uncompressed archive bytes, all layers together */
	uint64_t max_files;
	const struct sc_log *log; /* skipped entries are told here (NULL: nowhere) */
};

/* skipped entries told one by one, before a count of the rest */
#define SKIPPED_SHOWN 20

struct extract_stats {
	uint64_t files, bytes;        /* entries made, bytes of regular files */
	uint64_t skipped_devices, stripped_setid;
};

struct extractor;
/* Extract into the (empty) directory root_fd (not owned). */
struct extractor *rootfs_extractor_new(int root_fd, const struct extract_limits *lim,
				const struct idshift *ids, struct sc_err *err);
/* Apply one layer (a tar stream) on top of what is there; OCI whiteouts
 * are applied when whiteouts is set; with drain, the stream is read to its
 * end so that its digests cover all of it. */
int rootfs_extractor_layer(struct extractor *x, struct stream *in, bool whiteouts, bool drain,
		    struct sc_err *err);
/* Make directory `path` (absolute in the image) and its parents unless
 * they exist; e.g. the image's working directory. */
int rootfs_extractor_mkdirs(struct extractor *x, const char *path, struct sc_err *err);
/* Finish: directory modes and times. */
int rootfs_extractor_finish(struct extractor *x, struct extract_stats *st, struct sc_err *err);
void rootfs_extractor_free(struct extractor *x);
/* Bytes extracted so far (uncompressed, all layers). */
uint64_t rootfs_extractor_bytes(const struct extractor *x);

/* ---- the store (store.c) ---- */

/* Layout under the data root:
 *   images/NAME.json         manifests
 *   layers/sha256-HEX/       read-only layer trees, shared by content
 *   blobs/sha256-HEX[.partial] downloads of an unfinished pull
 *   tmp/op-XXXXXX/           work dirs of running builds/imports (locked)
 *   .lock                    held while manifests and layers change */
struct store {
	char root[3072];
	int lock_fd;
};

int rootfs_store_open(struct store *st, const char *data_root, struct sc_err *err);
void rootfs_store_close(struct store *st);
int rootfs_store_lock(struct store *st, struct sc_err *err);
void rootfs_store_unlock(struct store *st);

/* A locked work dir under tmp/ (removed by rootfs_store_work_end or, after a
 * crash, by the next rootfs_store_work_begin). */
struct store_work {
	char path[3200];
	int lock_fd;
	int dir_fd;
};
int rootfs_store_work_begin(struct store *st, struct store_work *w, struct sc_err *err);
void rootfs_store_work_end(struct store_work *w);

/* The manifest of an image. */
struct image_manifest {
	char name[64];
	char *layers[ROOTFS_MAX_LAYERS]; /* layer ids "sha256-HEX", top first */
	size_t nlayers;
	char created[32];
	uint64_t size;
	char *source;
	char **env;         /* NULL-terminated or NULL */
	char *workdir;
	char **entrypoint;
	char **cmd;
	char *user;         /* USER of a Dockerfile build, or NULL */
	char **labels;      /* KEY=VALUE, NULL-terminated or NULL */
	bool shifted;       /* owned by the root caller's id range */
	uint32_t uid_start, gid_start;
};
void rootfs_manifest_free(struct image_manifest *m);
/* Load images/NAME.json; ENOENT gives "image 'NAME' not found". */
int rootfs_manifest_load(const char *data_root, const char *name, struct image_manifest *m,
		  struct sc_err *err);
int rootfs_manifest_save(struct store *st, const struct image_manifest *m, struct sc_err *err);

/* Move a finished tree (work dir entry `name`) into layers/ID. When the
 * layer exists already (same content) the new tree is left to the work
 * dir's removal. Store lock must be held. */
int rootfs_store_commit_layer(struct store *st, struct store_work *w, const char *name,
		       const char *id, struct sc_err *err);
/* Install a manifest (store lock held): refuse when a cell uses the image
 * of that name, then remove layers nothing refers to any more. */
int rootfs_store_install(struct store *st, const struct rootfs_in_use *in_use, const struct image_manifest *m,
		  struct sc_err *err);
/* Whether a cell (state dir with an `image` file) uses image `name`; the
 * first such cell's name goes to who. */
bool rootfs_store_image_in_use(const struct rootfs_in_use *in_use, const char *name, char *who, size_t who_size);
/* Remove layers that no manifest references (store lock held). */
int rootfs_store_gc_layers(struct store *st, struct sc_err *err);
/* Image names (NULL-terminated, rootfs_strv_free) or NULL with err. */
char **rootfs_store_list_names(const char *data_root, struct sc_err *err);

/* Forget image name's last use (images/NAME.used), when it is removed. */
void rootfs_store_forget_use(const char *data_root, const char *name);

bool rootfs_layer_id_valid(const char *id);
bool rootfs_env_entry_valid(const char *kv);

/* ---- making an image (commit.c) ---- */

/* One layer source for rootfs_image_make: opens a stream, then checks it. */
struct layer_source {
	int (*open)(void *ctx, size_t i, struct stream *s, struct sc_err *err);
	/* Called after the layer was extracted and drained; verify digests. */
	int (*close)(void *ctx, size_t i, struct stream *s, struct sc_err *err);
	void *ctx;
	size_t nlayers;        /* bottom first */
	bool whiteouts;
	bool no_drain;         /* stop at the end-of-archive blocks (builds) */
	const char *layer_id;  /* known content id (chain id), or NULL: the
				  sha256 of the single layer's tar stream */
};

/* Extract the layers into a fresh tree, commit it and install m (its
 * layers, size and id shift are filled here). */
int rootfs_image_make(struct store *st, const struct rootfs_in_use *in_use, struct store_work *w,
	       const struct layer_source *src, const struct rootfs_limits *lim,
	       struct image_manifest *m, struct rootfs_report *rep, struct sc_err *err);

/* Current time as "2025-05-20T12:00:00Z". */
void rootfs_iso8601_now(char out[32]);

/* ---- OCI / Docker image JSON (oci.c) ---- */

#define OCI_DIGEST_LEN 72 /* "sha256:" + 64 hex + NUL, rounded */
#define OCI_MAX_LAYERS 128
#define OCI_JSON_MAX (4 * 1024 * 1024)

struct oci_desc {
	char digest[OCI_DIGEST_LEN];
	uint64_t size;
	char media_type[128];
};

struct oci_manifest {
	bool is_index;
	struct oci_desc config;
	struct oci_desc layers[OCI_MAX_LAYERS];
	size_t nlayers;
};

struct oci_config {
	char **env, **entrypoint, **cmd;
	char *workdir;
	char diff_ids[OCI_MAX_LAYERS][OCI_DIGEST_LEN];
	size_t ndiff_ids;
};

bool rootfs_digest_valid(const char *d);
bool rootfs_media_is_index(const char *mt);
bool rootfs_media_is_manifest(const char *mt);
/* "linux/amd64" for this machine. */
void rootfs_host_platform(char *out, size_t size);
int rootfs_oci_pick_from_index(const char *text, size_t len, const char *platform,
			struct oci_desc *out, struct sc_err *err);
int rootfs_oci_parse_manifest(const char *text, size_t len, struct oci_manifest *m, struct sc_err *err);
int rootfs_oci_parse_config(const char *text, size_t len, struct oci_config *c, struct sc_err *err);
void rootfs_oci_config_free(struct oci_config *c);
/* The layer id ("sha256-HEX") of a stack of diff ids (bottom first). */
void rootfs_oci_chain_id(char diff_ids[][OCI_DIGEST_LEN], size_t n, char *out, size_t size);
/* Whether the stream's raw (or uncompressed) sha256 is `digest`. */
bool rootfs_stream_digest_is(struct stream *s, bool raw, const char *digest);
/* Move env/workdir/entrypoint/cmd from c into m. */
void rootfs_image_defaults_from_config(struct image_manifest *m, struct oci_config *c);

/* ---- a stored image as OCI blobs (ociwrite.c) ---- */

#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_MT_LAYER "application/vnd.oci.image.layer.v1.tar"
#define OCI_MT_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"

struct oci_blob {
	char hex[SHA256_HEX_LEN + 1]; /* its sha256: blobs/sha256/HEX */
	uint64_t size;
};

struct oci_image_blobs {
	bool gzip;
	size_t nlayers;
	struct oci_blob layers[ROOTFS_MAX_LAYERS];   /* bottom first, as the manifest lists them */
	struct oci_blob diff_ids[ROOTFS_MAX_LAYERS]; /* the uncompressed tars' (the config's) */
	struct oci_blob config, manifest;
};

/* Image m's layers (gzip-compressed when gzip), config and manifest as
 * blobs/sha256/HEX in dir (a store work directory), described in b. Only
 * the blobs b names are left in blobs/sha256. */
int rootfs_image_blobs(const char *data_root, const struct image_manifest *m, int dir, bool gzip,
		       struct oci_image_blobs *b, struct sc_err *err);
/* The URL that completes an upload to base ("https://HOST") for repo:
 * the POST's Location loc (absolute, absolute on the registry, or relative
 * to the uploads URL) with digest=sha256:HEX added to its query (push.c).
 * *elsewhere when it is on another host. -1 when loc is not printable or
 * the URL does not fit. */
int rootfs_push_upload_url(const char *base, const char *repo, const char *loc, const char *hex,
			   char *out, size_t size, bool *elsewhere);
struct cJSON;
/* {"mediaType", "digest", "size"} of blob b. */
struct cJSON *rootfs_oci_desc_json(const char *media, const struct oci_blob *b);

/* ---- registry references (pull.c), challenges and tokens (registry.c) ---- */

struct ref {
	char host[256];   /* "registry-1.docker.io", "127.0.0.1:5000" */
	char repo[256];   /* "library/debian" */
	char tag[130];    /* "latest" when not given */
	char digest[OCI_DIGEST_LEN]; /* "" unless pinned with @sha256:... */
};
/* [HOST[:PORT]/]REPO[:TAG|@sha256:HEX]; Docker Hub when HOST is absent. */
int rootfs_parse_ref(const char *in, struct ref *r, struct sc_err *err);
/* A WWW-Authenticate `Bearer realm="...",service="...",scope="..."` into
 * the three fields (each of size bytes, cut to fit); -1 unless Bearer with
 * a realm. */
int rootfs_pull_parse_challenge(const char *h, char *realm, char *service, char *scope, size_t size);
/* The token ("token", else "access_token") of a token service's JSON
 * reply into out; -1 with err when there is none that fits a header. */
int rootfs_pull_parse_token(const char *body, size_t len, char *out, size_t size, struct sc_err *err);

/* A registry's credentials (creds.c). Never logged, never in an error. */
struct registry_creds {
	char basic[1024];          /* base64 of "user:password", or "" */
	char identity_token[4096]; /* an OAuth2 refresh token, or "" */
	char source[SC_PATH_BUF];  /* the file they came from (for messages) */
	char note[192];            /* why none were found, when it may matter */
};
/* The credentials for registry host: from file (a docker config.json or
 * podman auth.json) when it is not NULL, else from $REGISTRY_AUTH_FILE,
 * $XDG_RUNTIME_DIR/containers/auth.json, then $DOCKER_CONFIG/config.json
 * or ~/.docker/config.json (the first file with an entry wins). Returns 1
 * with c filled, 0 when there are none, -1 with err (a named file that is
 * missing, a file or entry that is malformed). */
int rootfs_creds_find(const char *file, const char *host, struct registry_creds *c,
		      struct sc_err *err);
void rootfs_creds_clear(struct registry_creds *c);

/* ---- a registry client (registry.c), for pull and push ---- */

#define TOKEN_MAX 16384

struct registry {
	struct sc_http http;
	bool insecure;              /* plain HTTP allowed */
	bool push;                  /* tokens for push,pull (else pull) */
	char token[TOKEN_MAX];
	const char *scope_repo;
	const char *host;           /* the registry, for messages */
	bool have_creds;
	bool send_basic;            /* the registry asked for Basic: every request */
	struct registry_creds creds;
};

/* One request to the registry. */
struct reg_req {
	const char *method;         /* NULL: GET, or POST with a body */
	const char *url;
	const char *accept, *content_type; /* header values, or NULL */
	const char *body;           /* sent from memory, or NULL */
	size_t body_len;
	const struct sc_http_upload *upload; /* else sent from an fd, or NULL */
	const struct sc_http_download *dl;   /* a 2xx body into a file, or NULL */
	size_t max;                 /* a body kept in memory; 0: 64 KiB */
	bool anonymous;             /* no credentials or token (another host) */
};

/* Whether host ("127.0.0.1:5000", "[::1]", "localhost") is on loopback. */
bool rootfs_reg_is_loopback(const char *host);
int rootfs_reg_init(struct registry *hp, bool insecure, struct sc_err *err);
/* rootfs_reg_init for ref's registry, with its credentials (see
 * rootfs_creds_find); push asks token services for push,pull. */
int rootfs_reg_open(struct registry *hp, const struct ref *ref, bool insecure, bool push,
		    const char *creds_file, struct sc_err *err);
void rootfs_reg_free(struct registry *hp);
/* q, answering one 401 challenge (Basic or Bearer) and sending it again.
 * 0 when a response arrived, whatever its status (r to be freed either
 * way). */
int rootfs_reg_request(struct registry *hp, const struct reg_req *q, struct sc_http_resp *r,
		       struct sc_err *err);
/* A failed request's status as one line about what (a URL): not found,
 * access denied (and where the credentials came from), rate limited, or
 * the registry's own message. Returns -1. */
int rootfs_reg_status_error(const struct registry *hp, const struct sc_http_resp *r,
			    const char *what, struct sc_err *err);

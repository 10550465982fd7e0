/* The store's size cap (--store-max): images no cell uses are removed,
 * least recently used first. "Used" is when a cell last opened the image
 * (rootfs_image_open touches images/NAME.used: one utimensat on the start
 * path), else when the image was stored. Also the store names of pulled
 * registry references. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/parse.h"
#include "internal.h"

/* A cell registers itself (its state dir names the image) a few
 * milliseconds after it opened the image: an image opened this recently
 * counts as in use. */
#define RECENT_USE_S 2.0

bool rootfs_is_reference(const char *s)
{
	return s && (strchr(s, '/') || strchr(s, ':') || strchr(s, '@'));
}

/* Letters, digits, '.', '_' and '-' of s (others as '_'), at most max. */
static size_t sanitize(const char *s, char *out, size_t max)
{
	size_t n = 0;
	for (const char *p = s; *p && n < max; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '.' || c == '_' || c == '-';
		out[n++] = ok ? c : '_';
	}
	out[n] = '\0';
	return n;
}

int rootfs_ref_registry(const char *refstr, char *out, size_t size, struct sc_err *err)
{
	struct ref r;
	if (rootfs_parse_ref(refstr, &r, err) < 0)
		return -1;
	const char *host = strcmp(r.host, "registry-1.docker.io") ? r.host : "docker.io";
	if ((size_t)snprintf(out, size, "%s", host) >= size)
		return sc_fail(err, ENAMETOOLONG, "registry name too long");
	return 0;
}

int rootfs_ref_store_name(const char *refstr, char *out, size_t size, struct sc_err *err)
{
	struct ref r;
	if (rootfs_parse_ref(refstr, &r, err) < 0)
		return -1;
	/* the canonical reference decides the digest: "debian" and
	 * "docker.io/library/debian:latest" are one image */
	char canon[1024], hex[SHA256_HEX_LEN + 1];
	snprintf(canon, sizeof(canon), "%s/%s%s%s", r.host, r.repo, r.digest[0] ? "@" : ":",
		 r.digest[0] ? r.digest : r.tag);
	rootfs_sha256_hex(canon, strlen(canon), hex);
	const char *repo = strrchr(r.repo, '/') ? strrchr(r.repo, '/') + 1 : r.repo;
	const char *host = strcmp(r.host, "registry-1.docker.io") ? r.host : "docker.io";
	char h[24], p[24], t[16];
	while (*host && !((*host >= 'a' && *host <= 'z') || (*host >= '0' && *host <= '9')))
		host++; /* "[::1]:5000" */
	sanitize(host, h, 16);
	sanitize(repo, p, 20);
	sanitize(r.digest[0] ? r.digest + 7 : r.tag, t, 12);
	/* HOST_REPO_TAG-HASH12: at most 16+1+20+1+12+1+12 = 63 bytes */
	if (size < 64)
		return sc_fail(err, ENAMETOOLONG, "store name");
	snprintf(out, size, "%s_%s_%s-%.12s", h, p, t, hex);
	if (!sc_valid_name(out))
		return sc_fail(err, 0, "no store name for '%.200s'", refstr);
	return 0;
}

void rootfs_image_note_use(const char *data_root, const char *name)
{
	char path[4096];
	if (sc_path(path, sizeof(path), "%s/images/%s.used", data_root, name) < 0)
		return;
	/* A stat is ~1 us, a time update a journalled inode write (~60 us on
	 * ext4 under load): many cells started on an image within a second
	 * (a batch's pool) update it once. Under RECENT_USE_S, so that a cell
	 * still registering always counts as in use. */
	struct stat sb;
	struct timespec now;
	if (lstat(path, &sb) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0 &&
	    now.tv_sec - sb.st_mtim.tv_sec < 1 && now.tv_sec >= sb.st_mtim.tv_sec)
		return;
	if (utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		close(fd);
}

void rootfs_store_forget_use(const char *data_root, const char *name)
{
	char path[4096];
	if (sc_path(path, sizeof(path), "%s/images/%s.used", data_root, name) == 0)
		(void)unlink(path);
}

struct candidate {
	char name[64];
	uint64_t size;
	double used; /* epoch seconds */
};

static double mtime_of(const char *root, const char *name, const char *suffix)
{
	char path[4096];
	struct stat sb;
	if (sc_path(path, sizeof(path), "%s/images/%s%s", root, name, suffix) < 0 ||
	    lstat(path, &sb) < 0)
		return -1;
	return (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec / 1e9;
}

static int by_use(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	return x->used < y->used ? -1 : x->used > y->used ? 1 : strcmp(x->name, y->name);
}

static bool kept(const char *const *keep, const char *name)
{
	for (size_t i = 0; keep && keep[i]; i++)
		if (!strcmp(keep[i], name))
			return true;
	return false;
}

static void fmt_mb(char *out, size_t size, uint64_t v)
{
	snprintf(out, size, "%.1f MB", (double)v / 1e6);
}

int rootfs_store_trim(const char *data_root, const struct rootfs_in_use *in_use, uint64_t max,
		      const char *const *keep, const struct sc_log *log,
		      struct rootfs_trim_report *rep, struct sc_err *err)
{
	struct rootfs_trim_report local;
	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	if (!max)
		return 0;
	struct store st;
	if (rootfs_store_open(&st, data_root, err) < 0 || rootfs_store_lock(&st, err) < 0) {
		rootfs_store_close(&st);
		return -1;
	}
	int rc = -1;
	struct candidate *c = NULL;
	char **names = rootfs_store_list_names(st.root, err);
	if (!names)
		goto out;
	size_t n = 0, count = 0;
	while (names[count])
		count++;
	c = calloc(count + 1, sizeof(*c));
	if (!c) {
		sc_fail(err, ENOMEM, "store cap");
		goto out;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); /* file times are wall-clock */
	double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	for (size_t i = 0; i < count; i++) {
		struct image_manifest m;
		if (rootfs_manifest_load(st.root, names[i], &m, NULL) < 0)
			continue;
		rep->before += m.size;
		char who[256];
		double used = mtime_of(st.root, names[i], ".used");
		if (used < 0)
			used = mtime_of(st.root, names[i], ".json");
		if (!kept(keep, names[i]) && now - used >= RECENT_USE_S &&
		    !rootfs_store_image_in_use(in_use, names[i], who, sizeof(who))) {
			snprintf(c[n].name, sizeof(c[n].name), "%s", names[i]);
			c[n].size = m.size;
			c[n++].used = used;
		}
		rootfs_manifest_free(&m);
	}
	qsort(c, n, sizeof(*c), by_use);
	uint64_t total = rep->before;
	char a[32], b[32];
	for (size_t i = 0; i < n && total > max; i++) {
		char path[sizeof(st.root) + 128], when[32];
		snprintf(path, sizeof(path), "%s/images/%s.json", st.root, c[i].name);
		if (unlink(path) < 0) {
			sc_fail(err, errno, "remove %s", path);
			goto out;
		}
		rootfs_store_forget_use(st.root, c[i].name);
		total -= c[i].size < total ? c[i].size : total;
		rep->evicted++;
		time_t t = (time_t)c[i].used;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		fmt_mb(a, sizeof(a), c[i].size);
		fmt_mb(b, sizeof(b), max);
		sc_log(log, SC_LOG_INFO, "store: evicted image '%s' (%s, last used %s) to stay under "
					 "--store-max %s", c[i].name, a, when, b);
	}
	rep->after = total;
	if (rep->evicted && rootfs_store_gc_layers(&st, err) < 0)
		goto out;
	if (total > max) {
		fmt_mb(a, sizeof(a), total);
		fmt_mb(b, sizeof(b), max);
		sc_log(log, SC_LOG_WARN, "store: %s stored, over --store-max %s: the other images are "
					 "in use (or were just used)", a, b);
	}
	rc = 0;
out:
	free(c);
	rootfs_strv_free(names);
	rootfs_store_unlock(&st);
	rootfs_store_close(&st);
	return rc;
}

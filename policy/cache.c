/* The compiled-filter cache: one file per filter in <cache_dir>/seccomp/, a
 * private directory.
 *
 * File: a 24-byte header (magic, key length, instruction count, checksum),
 * the key (the canonical seccomp JSON plus the libseccomp version and the
 * architecture), then the BPF instructions. A file is used only when it is a
 * regular file owned by us, not writable by group or others, of exactly the
 * size its header announces, with the same key byte for byte (so a hash
 * collision cannot substitute another filter) and a matching checksum.
 * Anything else is deleted and the filter recompiled. Files are written to a
 * temporary name and renamed into place, so readers never see half a file. */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/hash.h"
#include "policy_priv.h"

#define MAGIC "SCBPF\0\0\1"
#define HDR_LEN 24
#define MAX_KEY (2u << 20)
#define MAX_INSNS 4096
#define MAX_FILES 64

struct hdr {
	char magic[8];
	uint32_t key_len;
	uint32_t count;
	uint64_t checksum;
};

static uint64_t checksum(const char *key, size_t klen, const void *insns, size_t count)
{
	return sc_fnv1a64_update(sc_fnv1a64_update(SC_FNV1A64_INIT, key, klen), insns, count * 8);
}

static int file_name(const char *key, char *buf, size_t size)
{
	return sc_path(buf, size, "%016llx.bpf",
		       (unsigned long long)sc_fnv1a64(key));
}

#define SUBDIR "seccomp"

int policy_cache_path(const char *dir, const char *key, char *buf, size_t size)
{
	char name[32];
	if (file_name(key, name, sizeof(name)) < 0)
		return -1;
	return sc_path(buf, size, "%s/" SUBDIR "/%s", dir, name);
}

/* mkdir -p, new directories private. */
static int make_dirs(const char *dir, struct sc_err *err)
{
	char path[POL_MAX_PATH + 1];
	if (sc_path(path, sizeof(path), "%s", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "policy cache %s", dir);
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "cannot create the policy cache %s", path);
		*p = saved;
		if (!saved)
			break;
	}
	return 0;
}

/* Open <top>/seccomp, creating it, and refuse it when others could write
 * into it. Everything after is relative to the returned fd, so the checked
 * directory is the one used. Returns the fd or -1. */
static int open_cache_dir(const char *top, struct sc_err *err)
{
	char dir[POL_MAX_PATH + 1];
	if (top[0] != '/')
		return sc_fail(err, 0, "policy cache %s: not an absolute path", top);
	if (sc_path(dir, sizeof(dir), "%s/" SUBDIR, top) < 0)
		return sc_fail(err, ENAMETOOLONG, "policy cache %s", top);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		if (make_dirs(dir, err) < 0)
			return -1;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return sc_fail(err, errno, "cannot open the policy cache %s", dir);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		sc_fail(err, errno, "policy cache %s", dir);
		close(fd);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		sc_fail(err, 0,
			"policy cache %s is %s (fix: chown $(id -u) and chmod 700 it, "
			"or remove it)",
			dir, st.st_uid != geteuid() ? "owned by another user"
						    : "writable by group or others");
		close(fd);
		return -1;
	}
	return fd;
}

/* 1: hit (out filled), 0: no usable file. */
static int read_entry(int dirfd, const char *name, const char *key,
		      struct policy_filter *out)
{
	_cleanup_fd_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat st;
	size_t klen = strlen(key);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size < HDR_LEN + 8 ||
	    (uint64_t)st.st_size > HDR_LEN + MAX_KEY + MAX_INSNS * 8ULL)
		return -1;
	struct hdr h;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, MAGIC, 8) || h.key_len != klen || h.count == 0 ||
	    h.count > MAX_INSNS || (uint64_t)st.st_size != HDR_LEN + (uint64_t)h.key_len + h.count * 8ULL)
		return -1;
	size_t len = (size_t)st.st_size - HDR_LEN;
	_cleanup_free_ char *buf = malloc(len);
	if (!buf)
		return 0;
	if (pread(fd, buf, len, HDR_LEN) != (ssize_t)len)
		return -1;
	const char *insns = buf + klen;
	if (memcmp(buf, key, klen) || checksum(buf, klen, insns, h.count) != h.checksum)
		return -1;
	void *copy = malloc(h.count * 8ULL);
	if (!copy)
		return 0;
	memcpy(copy, insns, h.count * 8ULL);
	out->insns = copy;
	out->count = h.count;
	return 1;
}

int policy_cache_get(const char *dir, const char *key, struct policy_filter *out,
		  struct sc_err *err)
{
	_cleanup_fd_ int dirfd = open_cache_dir(dir, err);
	if (dirfd < 0)
		return -1;
	char name[32];
	if (file_name(key, name, sizeof(name)) < 0)
		return 0;
	int rc = read_entry(dirfd, name, key, out);
	if (rc < 0) {
		/* Not ours, unsafe, truncated or tampered with: never use it. */
		unlinkat(dirfd, name, 0);
		return 0;
	}
	return rc;
}

/* Keep the directory bounded: past MAX_FILES entries, drop every other
 * filter (they are rebuilt on demand) and stale temporary files. */
static void trim(int dirfd, const char *keep)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	if (n > MAX_FILES) {
		rewinddir(d);
		while ((e = readdir(d))) {
			size_t len = strlen(e->d_name);
			bool ours = (len == 20 && !strcmp(e->d_name + 16, ".bpf")) ||
				    !strncmp(e->d_name, ".tmp-", 5);
			if (ours && strcmp(e->d_name, keep))
				unlinkat(dirfd, e->d_name, 0);
		}
	}
	closedir(d);
}

int policy_cache_put(const char *dir, const char *key, const struct policy_filter *f,
		  struct sc_err *err)
{
	size_t klen = strlen(key);
	if (!f->insns || f->count == 0 || f->count > MAX_INSNS || klen > MAX_KEY)
		return sc_fail(err, EINVAL, "policy cache: nothing to store");
	_cleanup_fd_ int dirfd = open_cache_dir(dir, err);
	if (dirfd < 0)
		return -1;
	char name[32], tmp[64];
	if (file_name(key, name, sizeof(name)) < 0)
		return sc_fail(err, ENAMETOOLONG, "policy cache");
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (sc_path(tmp, sizeof(tmp), ".tmp-%d-%lx", (int)getpid(),
		    (unsigned long)ts.tv_nsec) < 0)
		return sc_fail(err, ENAMETOOLONG, "policy cache");
	_cleanup_fd_ int fd = openat(dirfd, tmp,
				     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "policy cache %s/%s", dir, tmp);
	struct hdr h = {.key_len = (uint32_t)klen, .count = (uint32_t)f->count};
	memcpy(h.magic, MAGIC, 8);
	h.checksum = checksum(key, klen, f->insns, f->count);
	if (sc_write_all(fd, &h, sizeof(h)) < 0 || sc_write_all(fd, key, klen) < 0 ||
	    sc_write_all(fd, f->insns, f->count * 8) < 0 ||
	    renameat(dirfd, tmp, dirfd, name) < 0) {
		int e = errno;
		unlinkat(dirfd, tmp, 0);
		return sc_fail(err, e, "policy cache %s/%s", dir, name);
	}
	trim(dirfd, name);
	return 0;
}

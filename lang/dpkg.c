/* The Debian packages an image has installed, from its dpkg status file,
 * for `code languages`' versions: read, never executed, with no link of
 * the image followed on the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define DPKG_STATUS "var/lib/dpkg/status"
#define DPKG_STATUS_MAX (64u << 20)
#define DPKG_MAX_PACKAGES 100000

struct lang_dpkg_pkg {
	const char *name, *version; /* into text */
};

struct lang_dpkg {
	char *text; /* the status file, its lines cut at '\n' */
	struct lang_dpkg_pkg *pkgs;
	size_t n;
};

/* The status file of the top layer that has one, or -1: no layer has
 * one, the top one deleted it (a whiteout), or it is no plain file. */
static int open_status(const char *const *roots, size_t nroots)
{
	const char *host[] = {"/"};
	if (!roots || !nroots) {
		roots = host;
		nroots = 1;
	}
	for (size_t i = 0; i < nroots; i++) {
		int dir = open(roots[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return -1;
		int fd = sc_openat_beneath(dir, DPKG_STATUS, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, 0);
		int e = errno;
		close(dir);
		if (fd >= 0 || e != ENOENT)
			return fd;
	}
	return -1;
}

/* The value of "Key: value" when line is of key, else NULL. */
static const char *field(const char *line, const char *key)
{
	size_t k = strlen(key);
	if (strncmp(line, key, k) || line[k] != ':')
		return NULL;
	line += k + 1;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

static bool installed(const char *status)
{
	size_t n = status ? strlen(status) : 0;
	static const char want[] = " installed";
	return n >= sizeof(want) - 1 && !strcmp(status + n - (sizeof(want) - 1), want);
}

/* One paragraph's package, when installed. */
static int add(struct lang_dpkg *d, size_t *cap, const char *name, const char *version,
	       const char *status)
{
	if (!name || !version || !installed(status))
		return 0;
	if (d->n == *cap) {
		if (*cap >= DPKG_MAX_PACKAGES)
			return 0;
		size_t nc = *cap ? *cap * 2 : 256;
		struct lang_dpkg_pkg *p = realloc(d->pkgs, nc * sizeof(*p));
		if (!p)
			return -1;
		d->pkgs = p;
		*cap = nc;
	}
	d->pkgs[d->n++] = (struct lang_dpkg_pkg){name, version};
	return 0;
}

static int parse(struct lang_dpkg *d)
{
	const char *name = NULL, *version = NULL, *status = NULL;
	size_t cap = 0;
	char *line = d->text;
	while (line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!*line) { /* a paragraph ends */
			if (add(d, &cap, name, version, status) < 0)
				return -1;
			name = version = status = NULL;
		} else if (field(line, "Package")) {
			name = field(line, "Package");
		} else if (field(line, "Version")) {
			version = field(line, "Version");
		} else if (field(line, "Status")) {
			status = field(line, "Status");
		}
		line = nl ? nl + 1 : NULL;
	}
	return add(d, &cap, name, version, status);
}

int lang_dpkg_open(const char *const *roots, size_t nroots, struct lang_dpkg **out,
		   struct sc_err *err)
{
	*out = NULL;
	struct lang_dpkg *d = calloc(1, sizeof(*d));
	if (!d)
		return sc_fail(err, ENOMEM, "dpkg status");
	int fd = open_status(roots, nroots);
	if (fd >= 0) {
		struct sc_err rerr = {0};
		int rc = sc_read_small_alloc_fd(fd, "/" DPKG_STATUS, SC_READ_REGULAR | SC_READ_WHOLE,
						DPKG_STATUS_MAX, &d->text, NULL, &rerr);
		close(fd);
		if (rc < 0 && rerr.errnum != EINVAL) { /* EINVAL: no plain file, none */
			free(d);
			if (err)
				*err = rerr;
			return -1;
		}
		if (rc == 0 && parse(d) < 0) {
			lang_dpkg_free(d);
			return sc_fail(err, ENOMEM, "dpkg status");
		}
	}
	*out = d;
	return 0;
}

const char *lang_dpkg_version(const struct lang_dpkg *d, const char *package, size_t len)
{
	for (size_t i = 0; d && i < d->n; i++)
		if (strlen(d->pkgs[i].name) == len && !memcmp(d->pkgs[i].name, package, len))
			return d->pkgs[i].version;
	return NULL;
}

void lang_dpkg_free(struct lang_dpkg *d)
{
	if (!d)
		return;
	free(d->text);
	free(d->pkgs);
	free(d);
}

/* libFuzzer target for image layers: the input is a layer (tar, maybe
 * gzip-compressed). First every entry is read with the tar reader; then the
 * checked extractor applies it, with OCI whiteouts, to a fresh directory in
 * the process's scratch dir (removed afterwards). Nothing may land outside
 * that directory: after each input the scratch dir must hold only it. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "rootfs/internal.h"

static void read_all_entries(int fd)
{
	struct stream s;
	struct sc_err err = {0};
	if (rootfs_stream_open(&s, fd, 0, UINT64_MAX, 16 << 20, &err) < 0)
		return;
	struct tar_reader t;
	rootfs_tar_init(&t, &s);
	struct tar_entry *e = malloc(sizeof(*e));
	char buf[4096];
	if (!e)
		abort();
	for (int n = 0; n < 10000 && rootfs_tar_next(&t, e, &err) == 1; n++) {
		if (strnlen(e->path, sizeof(e->path)) == sizeof(e->path) ||
		    strnlen(e->link, sizeof(e->link)) == sizeof(e->link))
			abort();
		while (rootfs_tar_read(&t, buf, sizeof(buf), &err) > 0)
			;
	}
	free(e);
	rootfs_stream_close(&s);
}

static size_t entries_in(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	if (!d)
		abort();
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void extract(int fd)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/x.XXXXXX", fuzz_scratch());
	if (!mkdtemp(dir))
		abort();
	int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		abort();
	struct extract_limits lim = {.max_bytes = 16 << 20, .max_files = 2000};
	struct idshift ids = {.chown = false};
	struct sc_err err = {0};
	struct extractor *x = rootfs_extractor_new(root, &lim, &ids, &err);
	if (!x)
		abort();
	struct stream s;
	if (rootfs_stream_open(&s, fd, 0, UINT64_MAX, lim.max_bytes, &err) == 0) {
		struct extract_stats st;
		if (rootfs_extractor_layer(x, &s, true, true, &err) == 0)
			rootfs_extractor_finish(x, &st, &err);
		else if (!err.msg[0])
			abort();
		rootfs_stream_close(&s);
	}
	rootfs_extractor_free(x);
	close(root);
	if (entries_in(fuzz_scratch()) != 1) /* only our x.XXXXXX */
		abort();
	if (sc_remove_tree(dir) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_memfd(data, size);
	read_all_entries(fd);
	extract(fd);
	close(fd);
	return 0;
}

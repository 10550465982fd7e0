/* libFuzzer target for the cell's copy stream (runtime/copy.c): the input
 * is what a hostile cell writes into the pipe of `sandcell cp NAME:SRC DST`.
 * The host side receives it into a fresh directory in the process's scratch
 * dir with the host-side flags; nothing may land outside that directory. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runtime/copy.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/x.XXXXXX", fuzz_scratch());
	if (!mkdtemp(dir))
		abort();
	int fd = fuzz_memfd(data, size);
	struct sc_err err = {0};
	unsigned flags = COPY_STRIP_SPECIAL | (size && (data[0] & 1) ? COPY_AS_DEST : 0);
	if (rt_copy_receive(fd, dir, 16 << 20, flags, NULL, &err) < 0 && !err.msg[0])
		abort();
	close(fd);
	if (entries_in(fuzz_scratch()) > 1) /* only our x.XXXXXX (or nothing, AS_DEST) */
		abort();
	sc_remove_tree(dir);
	return 0;
}

/* Helpers shared by the fuzz targets: inputs as memory files (nothing on
 * disk) and one private scratch directory per process for the targets that
 * must write (removed at exit). */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/sc.h"

/* A memfd holding data, at offset 0; aborts when the kernel refuses. */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0 || (size && sc_write_all(fd, data, size) < 0) || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	return fd;
}

/* A NUL-terminated copy of the input. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static char fuzz_scratch_dir[256];

static void fuzz_scratch_remove(void)
{
	if (fuzz_scratch_dir[0])
		sc_remove_tree(fuzz_scratch_dir);
}

/* The process's scratch directory (made on first use, under $TMPDIR). */
static inline const char *fuzz_scratch(void)
{
	if (!fuzz_scratch_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(fuzz_scratch_dir, sizeof(fuzz_scratch_dir), "%s/sandcell-fuzz.XXXXXX",
			 t && *t ? t : "/tmp");
		if (!mkdtemp(fuzz_scratch_dir))
			abort();
		atexit(fuzz_scratch_remove);
	}
	return fuzz_scratch_dir;
}

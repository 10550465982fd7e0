/* libFuzzer target for the Dockerfile parser: the bytes as a Dockerfile,
 * then every shell-form instruction's arguments split into words with a
 * variable lookup, as a build does. Each either parses within its bounds
 * or fails with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs/rootfs.h"

static const char *lookup(void *ctx, const char *name)
{
	(void)ctx;
	return strlen(name) % 2 ? "a value with spaces" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rootfs_dockerfile df;
	struct sc_err err = {0};
	if (rootfs_df_parse((const char *)data, size, "F", &df, &err) < 0) {
		if (!err.msg[0] || df.n || df.v)
			abort();
		return 0;
	}
	if (df.n == 0 || df.n > ROOTFS_DF_MAX_INSTR)
		abort();
	for (size_t i = 0; i < df.n; i++) {
		const struct rootfs_df_instr *in = &df.v[i];
		if (!in->text || strlen(in->text) > ROOTFS_DF_MAX_LINE || (in->exec_form && !in->argv))
			abort();
		char **w;
		err.msg[0] = '\0';
		if (rootfs_df_words(in->text, lookup, NULL, &w, &err) == 0) {
			size_t n = 0;
			while (w[n])
				n++;
			if (n > ROOTFS_DF_MAX_WORDS)
				abort();
			rootfs_strv_free(w);
		} else if (!err.msg[0]) {
			abort();
		}
	}
	rootfs_df_free(&df);
	return 0;
}

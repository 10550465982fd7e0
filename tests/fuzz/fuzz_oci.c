/* libFuzzer target for OCI / Docker image JSON: the same bytes as an image
 * manifest or index, as an index to pick a platform from, and as an image
 * config. Each either parses within its bounds or fails with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct sc_err err = {0};
	struct oci_manifest *man = calloc(1, sizeof(*man));
	if (!man)
		abort();
	if (rootfs_oci_parse_manifest(text, size, man, &err) == 0) {
		if (man->nlayers > OCI_MAX_LAYERS)
			abort();
		if (!man->is_index && !rootfs_digest_valid(man->config.digest))
			abort();
	} else if (!err.msg[0]) {
		abort();
	}
	free(man);

	struct oci_desc d;
	err.msg[0] = '\0';
	if (rootfs_oci_pick_from_index(text, size, "linux/amd64", &d, &err) == 0) {
		if (!rootfs_digest_valid(d.digest))
			abort();
	} else if (!err.msg[0]) {
		abort();
	}

	struct oci_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		abort();
	err.msg[0] = '\0';
	if (rootfs_oci_parse_config(text, size, cfg, &err) == 0) {
		if (cfg->ndiff_ids > OCI_MAX_LAYERS)
			abort();
		char id[80];
		if (cfg->ndiff_ids)
			rootfs_oci_chain_id(cfg->diff_ids, cfg->ndiff_ids, id, sizeof(id));
	} else if (!err.msg[0]) {
		abort();
	}
	rootfs_oci_config_free(cfg);
	free(cfg);
	return 0;
}

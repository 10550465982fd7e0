/* An image as a user names it where an image is expected: a store name is
 * used as it is; a registry reference is kept under its store name
 * (rootfs_ref_store_name) and pulled when the caller's rule says so. */
#include <string.h>

#include "../common/parse.h"
#include "internal.h"

static bool stored(const char *data_root, const char *name)
{
	struct rootfs_image_info *list;
	size_t n;
	bool found = false;
	if (rootfs_image_list(data_root, &list, &n, NULL) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		found = !strcmp(list[i].name, name);
	rootfs_image_list_free(list, n);
	return found;
}

int rootfs_image_resolve(const char *data_root, const struct rootfs_in_use *in_use,
			 const char *named, enum rootfs_pull_when when,
			 const struct rootfs_pull_opts *po, const struct sc_log *log,
			 struct rootfs_resolved *out, struct sc_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!rootfs_is_reference(named)) {
		if (!sc_valid_name(named))
			return sc_fail(err, 0, "image '%.150s' is neither a store name nor a "
				       "registry reference ([HOST[:PORT]/]REPO[:TAG|@sha256:DIGEST])",
				       named);
		snprintf(out->store, sizeof(out->store), "%s", named);
		return 0; /* a store name: opened (or not found) next */
	}
	struct sc_err why = {0};
	if (rootfs_ref_store_name(named, out->store, sizeof(out->store), &why) < 0)
		return sc_fail(err, 0, "image '%.150s': %.300s", named, why.msg);
	bool have = stored(data_root, out->store);
	if (when == ROOTFS_PULL_NEVER || (have && when == ROOTFS_PULL_MISSING)) {
		if (!have)
			return sc_fail(err, 0, "image '%.150s' is not in the store and --pull "
				       "never forbids pulling it (pull it first: sandcell image pull "
				       "%.150s %s, or use --pull missing)", named, named, out->store);
		return 0;
	}
	if (log)
		sc_log(log, SC_LOG_INFO, "pulling %s as image '%s'", named, out->store);
	double t0 = sc_now();
	if (rootfs_image_pull(data_root, in_use, named, out->store, po, &out->report, &why) < 0)
		return sc_fail(err, 0, "pulling image '%.150s' failed: %.300s", named,
			       why.msg);
	out->pulled = true;
	out->pull_s = sc_now() - t0;
	return 0;
}

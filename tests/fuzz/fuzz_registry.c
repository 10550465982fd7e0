/* libFuzzer target for what a registry sends `image pull` before any layer:
 * the WWW-Authenticate challenge (up to the first NUL), the token service's
 * reply, and manifests / indexes (the rest), parsed as pull parses them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "rootfs/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	size_t hlen = strlen(s);
	const char *rest = hlen < size ? s + hlen + 1 : "";
	size_t rlen = hlen < size ? size - hlen - 1 : 0;

	char realm[1024], service[1024], scope[1024];
	if (rootfs_pull_parse_challenge(s, realm, service, scope, sizeof(realm)) == 0 &&
	    (!realm[0] || strlen(realm) >= sizeof(realm)))
		abort();

	char token[16384];
	struct sc_err err = {0};
	if (rootfs_pull_parse_token(rest, rlen, token, sizeof(token), &err) == 0) {
		if (strpbrk(token, "\r\n"))
			abort();
	} else if (!err.msg[0]) {
		abort();
	}

	struct oci_manifest *man = calloc(1, sizeof(*man));
	if (!man)
		abort();
	if (rootfs_oci_parse_manifest(rest, rlen, man, &err) == 0 && man->is_index) {
		struct oci_desc d;
		for (const char *const *p = (const char *const[]){"linux/amd64", "linux/arm64/v8", NULL}; *p; p++)
			if (rootfs_oci_pick_from_index(rest, rlen, *p, &d, &err) == 0 && !rootfs_digest_valid(d.digest))
				abort();
	}
	free(man);
	free(s);
	return 0;
}

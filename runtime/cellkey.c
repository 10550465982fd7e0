/* Secrets of a cell's creator derived from the cell's token, which never
 * enters the cell (state.h): names and keys the cell's own processes cannot
 * guess or forge, the same in every process that may use the cell. */
#include <string.h>

#include "../rootfs/rootfs.h"
#include "cell_priv.h"

int cell_derive_secret(const struct cell *c, const char *purpose, uint8_t out[32],
		       struct sc_err *err)
{
	if (!c->have_token)
		return sc_fail(err, EACCES, "cannot read the token of cell '%s' (only its creator can)",
			       c->name);
	rootfs_hmac_sha256(c->token, sizeof(c->token), purpose, strlen(purpose), out);
	return 0;
}

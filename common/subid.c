#include "subid.h"

#include <fcntl.h>
#include <string.h>

#include "parse.h"

/* Does some "NAME:START:COUNT" line for `who` have START 0? */
static bool entry_at_zero(const char *text, const char *who)
{
	size_t wl = strlen(who);
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		if (strncmp(line, who, wl) == 0 && line[wl] == ':') {
			const char *p = line + wl + 1;
			while (*p == '0')
				p++;
			if (p > line + wl + 1 && *p == ':')
				return true;
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

static int one_range(const char *text, const char *file, uint32_t *start, uint32_t *count,
		     struct sc_err *err)
{
	*start = SC_SUBID_DEFAULT_START;
	*count = SC_SUBID_DEFAULT_COUNT;
	if (!text)
		return 0;
	if (entry_at_zero(text, "sandcell"))
		return sc_fail(err, 0, "the sandcell id range in %s starts at 0 (use an unprivileged range)",
			       file);
	uint32_t s, c;
	if (sc_parse_subid(text, "sandcell", &s, &c) == 0 && c >= 1) {
		*start = s;
		*count = c;
	}
	return 0;
}

int sc_subid_range_from(const char *subuid, const char *subgid, struct sc_subid_range *r,
			struct sc_err *err)
{
	memset(r, 0, sizeof(*r));
	uint32_t ucount, gcount;
	if (one_range(subuid, "/etc/subuid", &r->uid_start, &ucount, err) < 0 ||
	    one_range(subgid, "/etc/subgid", &r->gid_start, &gcount, err) < 0)
		return -1;
	r->count = ucount < gcount ? ucount : gcount;
	if (r->count > SC_SUBID_DEFAULT_COUNT)
		r->count = SC_SUBID_DEFAULT_COUNT;
	return 0;
}

int sc_subid_range(struct sc_subid_range *r, struct sc_err *err)
{
	char uid[16384], gid[16384];
	bool have_uid = sc_read_small(AT_FDCWD, "/etc/subuid", SC_READ_NOFOLLOW, uid, sizeof(uid), NULL) >= 0;
	bool have_gid = sc_read_small(AT_FDCWD, "/etc/subgid", SC_READ_NOFOLLOW, gid, sizeof(gid), NULL) >= 0;
	return sc_subid_range_from(have_uid ? uid : NULL, have_gid ? gid : NULL, r, err);
}

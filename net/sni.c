/* net/sni.c: the server_name of a TLS ClientHello, read without a TLS
 * library. Every length is checked against the one that encloses it. */
#include <string.h>

#include "net.h"

static int bad(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -1;
}

struct cur {
	const uint8_t *p;
	size_t n;
};

static bool take(struct cur *c, size_t k, struct cur *sub)
{
	if (c->n < k)
		return false;
	if (sub) {
		sub->p = c->p;
		sub->n = k;
	}
	c->p += k;
	c->n -= k;
	return true;
}

static bool u8(struct cur *c, size_t *v)
{
	if (c->n < 1)
		return false;
	*v = c->p[0];
	return take(c, 1, NULL);
}

static bool u16(struct cur *c, size_t *v)
{
	if (c->n < 2)
		return false;
	*v = ((size_t)c->p[0] << 8) | c->p[1];
	return take(c, 2, NULL);
}

static bool u24(struct cur *c, size_t *v)
{
	if (c->n < 3)
		return false;
	*v = ((size_t)c->p[0] << 16) | ((size_t)c->p[1] << 8) | c->p[2];
	return take(c, 3, NULL);
}

static int server_name(struct cur ext, char out[NET_NAME_MAX + 1], const char **why)
{
	size_t list_len, type, len;
	struct cur list, name;
	if (!u16(&ext, &list_len) || !take(&ext, list_len, &list) || ext.n != 0)
		return bad(why, "malformed server_name extension");
	bool found = false;
	while (list.n) {
		if (!u8(&list, &type) || !u16(&list, &len) || !take(&list, len, &name))
			return bad(why, "malformed server_name extension");
		if (type != 0)
			continue;
		if (found)
			return bad(why, "more than one host_name in the ClientHello");
		found = true;
		if (memchr(name.p, '\0', name.n))
			return bad(why, "NUL in the ClientHello's server name");
		const char *nwhy = NULL;
		if (sc_net_name_norm((const char *)name.p, name.n, out, &nwhy) < 0)
			return bad(why, nwhy);
	}
	if (!found)
		return bad(why, "no host_name in the ClientHello");
	return 1;
}

int net_tls_sni(const uint8_t *buf, size_t len, char out[NET_NAME_MAX + 1], const char **why)
{
	out[0] = '\0';
	if (len >= 1 && buf[0] != 0x16)
		return bad(why, "not a TLS handshake");
	if (len >= 2 && buf[1] != 0x03)
		return bad(why, "not a TLS handshake");
	if (len < 5)
		return 0;
	size_t rec_len = ((size_t)buf[3] << 8) | buf[4];
	if (rec_len == 0 || rec_len > 16384)
		return bad(why, "bad TLS record length");
	if (len < 5 + rec_len) {
		/* a handshake header that already says it cannot fit */
		if (len >= 9) {
			size_t hs_len = ((size_t)buf[6] << 16) | ((size_t)buf[7] << 8) | buf[8];
			if (buf[5] != 0x01)
				return bad(why, "not a ClientHello");
			if (hs_len + 4 > rec_len)
				return bad(why, "ClientHello fragmented over TLS records");
		}
		return 0;
	}
	struct cur rec = {buf + 5, rec_len}, hs, sid, cs, comp, exts;
	size_t type, hs_len, n;
	if (!u8(&rec, &type) || type != 0x01)
		return bad(why, "not a ClientHello");
	if (!u24(&rec, &hs_len) || hs_len > rec.n)
		return bad(why, "ClientHello fragmented over TLS records");
	if (!take(&rec, hs_len, &hs))
		return bad(why, "malformed ClientHello");
	if (!take(&hs, 2 + 32, NULL) || /* client_version, random */
	    !u8(&hs, &n) || n > 32 || !take(&hs, n, &sid) ||
	    !u16(&hs, &n) || n < 2 || (n & 1) || !take(&hs, n, &cs) ||
	    !u8(&hs, &n) || n < 1 || !take(&hs, n, &comp))
		return bad(why, "malformed ClientHello");
	if (hs.n == 0)
		return bad(why, "no server_name in the ClientHello");
	if (!u16(&hs, &n) || !take(&hs, n, &exts) || hs.n != 0)
		return bad(why, "malformed ClientHello extensions");
	int found = 0;
	while (exts.n) {
		size_t etype, elen;
		struct cur ext;
		if (!u16(&exts, &etype) || !u16(&exts, &elen) || !take(&exts, elen, &ext))
			return bad(why, "malformed ClientHello extensions");
		if (etype != 0)
			continue;
		if (found)
			return bad(why, "more than one server_name extension");
		if (server_name(ext, out, why) < 0) {
			out[0] = '\0';
			return -1;
		}
		found = 1;
	}
	if (!found)
		return bad(why, "no server_name in the ClientHello");
	return 1;
}

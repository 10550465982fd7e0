/* libFuzzer target for net/'s parsers of what a cell sends: the request
 * head, the TLS ClientHello and (as text) allow entries and names. Each
 * either refuses the input with a reason or gives a result that stays in
 * bounds and is itself a valid, normalised name; anything else aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_net: %s: %s\n", what, detail ? detail : "");
	abort();
}

static void check_name(const char *name, const char *what)
{
	char again[NET_NAME_MAX + 1];
	const char *why = NULL;
	size_t len = strnlen(name, NET_NAME_MAX + 1);
	if (len > NET_NAME_MAX || sc_net_name_norm(name, len, again, &why) < 0 ||
	    strcmp(again, name) != 0)
		die(what, name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct net_request req;
	const char *why = NULL;
	int rc = net_parse_head((const char *)data, size, &req, &why);
	if (rc < 0 && !why)
		die("head refused without a reason", "");
	if (rc == 1) {
		if (req.head_len > size || req.head_len > NET_HEAD_MAX)
			die("head_len out of bounds", "");
		check_name(req.host, "head host");
		if (req.port == 0)
			die("port 0", req.host);
		if (req.kind == NET_REQ_HTTP &&
		    (req.fwd_len >= sizeof(req.fwd) || strlen(req.fwd) != req.fwd_len ||
		     !strstr(req.fwd, "\r\nConnection: close\r\n\r\n")))
			die("forwarded head", req.fwd);
	}

	char sni[NET_NAME_MAX + 1];
	why = NULL;
	rc = net_tls_sni(data, size, sni, &why);
	if (rc < 0 && !why)
		die("ClientHello refused without a reason", "");
	if (rc == 1)
		check_name(sni, "sni");

	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct sc_net_allow a;
	if (sc_net_allow_parse(text, &a, &why) == 0) {
		check_name(a.name, "allow entry");
		if (a.port == 0)
			die("allow port 0", text);
		if (!a.suffix && !sc_net_allow_match(&a, a.name, a.port))
			die("entry does not match its own name", text);
	}
	int family;
	uint8_t addr[16];
	if (sc_net_addr_parse(text, &family, addr, &why) == 0)
		(void)net_addr_class_raw(family, addr);
	free(text);
	return 0;
}

/* net/: allow entries, hosts, address classes, request heads, SNI, the
 * decision line. Pure logic; the proxy over real sockets is in
 * test_net_proxy.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "net/net.h"

/* ---- allow entries ---- */

static void allow_entry_forms(void **state)
{
	struct sc_net_allow a;
	const char *why = NULL;
	assert_int_equal(sc_net_allow_parse("PyPI.org.", &a, &why), 0);
	assert_string_equal(a.name, "pypi.org");
	assert_int_equal(a.port, 443);
	assert_false(a.suffix);
	assert_int_equal(sc_net_allow_parse("mirror.example:8080", &a, &why), 0);
	assert_string_equal(a.name, "mirror.example");
	assert_int_equal(a.port, 8080);
	assert_int_equal(sc_net_allow_parse("*.Example.org:8443", &a, &why), 0);
	assert_true(a.suffix);
	assert_string_equal(a.name, "example.org");
	assert_int_equal(a.port, 8443);
}

static void allow_entry_refusals(void **state)
{
	struct sc_net_allow a;
	const char *why = NULL;
	assert_int_equal(sc_net_allow_parse("*", &a, &why), -1);
	assert_string_equal(why, "'*' alone is not allowed");
	assert_int_equal(sc_net_allow_parse("*:443", &a, &why), -1);
	assert_string_equal(why, "'*' alone is not allowed");
	const char *bad[] = {"", "*.", "*.org", "a.*.org", "*x.org", "pypi.org:0",
			     "pypi.org:65536", "pypi.org:", "pypi.org:44a", "1.2.3.4",
			     "1.2.3.4:443", "127.1", "0x7f000001", "[::1]:443", "::1",
			     "example.123", "a..b", ".a", "-a.org", "a-.org", "a b.org",
			     "a/b.org", "ex\xc3\xa4mple.org", "a.org:443:1"};
	for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
		why = NULL;
		if (sc_net_allow_parse(bad[i], &a, &why) != -1)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(why);
	}
	assert_int_equal(sc_net_allow_parse("1.2.3.4", &a, &why), -1);
	assert_non_null(strstr(why, "IP literal"));
}

static void allow_entry_bounds(void **state)
{
	struct sc_net_allow a;
	const char *why = NULL;
	char label[70];
	memset(label, 'a', 63);
	strcpy(label + 63, ".org");
	assert_int_equal(sc_net_allow_parse(label, &a, &why), 0);
	memset(label, 'a', 64);
	strcpy(label + 64, ".org");
	assert_int_equal(sc_net_allow_parse(label, &a, &why), -1);
	char name[300];
	size_t n = 0;
	while (n + 10 < 253) {
		memcpy(name + n, "abcdefghi.", 10);
		n += 10;
	}
	memcpy(name + n, "org", 4); /* 253 bytes with the NUL past */
	assert_int_equal(strlen(name), 253);
	assert_int_equal(sc_net_allow_parse(name, &a, &why), 0);
	name[253] = '.'; /* a trailing dot does not count */
	name[254] = '\0';
	assert_int_equal(sc_net_allow_parse(name, &a, &why), 0);
	memcpy(name + 250, "orgx", 5); /* 254 bytes */
	assert_int_equal(sc_net_allow_parse(name, &a, &why), -1);
	char huge[4096];
	memset(huge, 'a', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	assert_int_equal(sc_net_allow_parse(huge, &a, &why), -1);
}

static void allow_matching(void **state)
{
	struct net_rules r;
	struct sc_err err = {0};
	net_rules_init(&r);
	assert_int_equal(net_rules_allow(&r, "pypi.org", &err), 0);
	assert_int_equal(net_rules_allow(&r, "*.example.org:8443", &err), 0);
	assert_int_equal(net_rules_allow(&r, "plain.test:80", &err), 0);
	assert_true(net_rules_allows(&r, "pypi.org", 443));
	assert_false(net_rules_allows(&r, "pypi.org", 80));
	assert_false(net_rules_allows(&r, "xpypi.org", 443));
	assert_false(net_rules_allows(&r, "pypi.org.evil", 443));
	assert_true(net_rules_allows(&r, "a.example.org", 8443));
	assert_true(net_rules_allows(&r, "a.b.example.org", 8443));
	assert_false(net_rules_allows(&r, "example.org", 8443));
	assert_false(net_rules_allows(&r, "badexample.org", 8443));
	assert_false(net_rules_allows(&r, "a.example.org", 443));
	assert_true(net_rules_allows(&r, "plain.test", 80));
	assert_int_equal(net_rules_allow(&r, "*", &err), -1);
	assert_string_equal(err.msg, "'*': '*' alone is not allowed");
	for (int i = 0; i < NET_ALLOW_MAX + 1; i++) {
		char e[32];
		snprintf(e, sizeof(e), "h%d.test", i);
		int rc = net_rules_allow(&r, e, &err);
		if (r.nallow == NET_ALLOW_MAX && rc < 0)
			break;
		assert_int_equal(rc, 0);
	}
	assert_int_equal(net_rules_allow(&r, "one-more.test", &err), -1);
	/* a repeated entry is no new entry */
	assert_int_equal(net_rules_allow(&r, "PYPI.org", &err), 0);
}

static void hosts_map(void **state)
{
	struct net_rules r;
	struct sc_err err = {0};
	net_rules_init(&r);
	assert_int_equal(net_rules_host_arg(&r, "Mirror.Internal.=10.1.2.3", &err), 0);
	const struct net_host *h = net_rules_find_host(&r, "mirror.internal");
	assert_non_null(h);
	assert_int_equal(h->family, AF_INET);
	assert_memory_equal(h->addr, "\x0a\x01\x02\x03", 4);
	assert_int_equal(net_rules_host(&r, "v6.test", "::1", &err), 0);
	assert_int_equal(net_rules_find_host(&r, "v6.test")->family, AF_INET6);
	assert_int_equal(net_rules_host(&r, "mirror.internal", "127.0.0.1", &err), 0);
	assert_int_equal(r.nhosts, 2);
	assert_null(net_rules_find_host(&r, "other.test"));
	assert_int_equal(net_rules_host_arg(&r, "noequals", &err), -1);
	assert_int_equal(net_rules_host_arg(&r, "=1.2.3.4", &err), -1);
	assert_int_equal(net_rules_host_arg(&r, "a.test=", &err), -1);
	assert_int_equal(net_rules_host_arg(&r, "a.test=not-an-ip", &err), -1);
	assert_int_equal(net_rules_host_arg(&r, "a.test=1.2.3", &err), -1);
	assert_int_equal(net_rules_host_arg(&r, "1.2.3.4=1.2.3.4", &err), -1);
}

/* ---- addresses ---- */

static const char *cls(const char *s)
{
	uint8_t a[16];
	int fam = strchr(s, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(fam, s, a), 1);
	return net_addr_class_raw(fam, a);
}

static void address_classes(void **state)
{
	const char *nonpublic[] = {
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1",
		"100.127.255.255", "127.0.0.1", "127.255.0.1", "169.254.169.254",
		"172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.168.1.1",
		"198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255", "::", "::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
		"64:ff9b::a00:1", "64:ff9b::7f00:1", "64:ff9b:1::808:808", "100::1", "2001:db8::1", "2001::1", "2002:7f00:1::1",
		"fc00::1", "fd12:3456::1", "fe80::1", "febf::1", "fec0::1", "ff02::1",
		"4000::1", "3fff::1"};
	for (size_t i = 0; i < SC_ARRAY_LEN(nonpublic); i++)
		if (!cls(nonpublic[i]))
			fail_msg("%s taken as public", nonpublic[i]);
	const char *public[] = {"1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1",
				"172.15.255.255", "172.32.0.1", "192.167.1.1", "198.17.0.1",
				"198.20.0.1", "223.255.255.255", "151.101.0.223",
				"2a04:4e42::223", "2606:4700::1111", "::ffff:8.8.8.8",
				"64:ff9b::808:808"};
	for (size_t i = 0; i < SC_ARRAY_LEN(public); i++)
		if (cls(public[i]) && strcmp(cls(public[i]), "v4-mapped") != 0)
			fail_msg("%s refused as %s", public[i], cls(public[i]));
	assert_string_equal(cls("127.0.0.1"), "loopback");
	assert_string_equal(cls("10.0.0.1"), "private");
	assert_string_equal(cls("169.254.1.1"), "link-local");
	assert_string_equal(cls("100.64.0.1"), "shared (CGNAT)");
	assert_string_equal(cls("fd00::1"), "unique-local");
	assert_string_equal(cls("::ffff:127.0.0.1"), "v4-mapped loopback");
	/* a mapped public address is still not connected to: the proxy
	 * dials the plain IPv4 form getaddrinfo gives for it */
	assert_non_null(cls("::ffff:8.8.8.8"));
	struct sockaddr_in sin = {.sin_family = AF_INET};
	inet_pton(AF_INET, "192.168.0.1", &sin.sin_addr);
	assert_string_equal(net_addr_class((struct sockaddr *)&sin), "private");
	struct sockaddr sa = {.sa_family = AF_UNIX};
	assert_non_null(net_addr_class(&sa));
}

/* ---- request heads ---- */

static int head(const char *s, struct net_request *req, const char **why)
{
	return net_parse_head(s, strlen(s), req, why);
}

static void head_connect(void **state)
{
	struct net_request req;
	const char *why = NULL;
	assert_int_equal(head("CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
			      "User-Agent: x\r\n\r\n\x16\x03\x01",
			      &req, &why),
			 1);
	assert_int_equal(req.kind, NET_REQ_CONNECT);
	assert_string_equal(req.host, "pypi.org");
	assert_int_equal(req.port, 443);
	assert_int_equal(req.head_len, strlen("CONNECT PyPI.org:443 HTTP/1.1\r\nHost: "
					      "pypi.org:443\r\nUser-Agent: x\r\n\r\n"));
	assert_int_equal(head("CONNECT a.test:8443 HTTP/1.0\r\n\r\n", &req, &why), 1);
	assert_int_equal(req.port, 8443);
	/* incomplete */
	assert_int_equal(head("CONNECT a.test:443 HTTP/1.1\r\nHost: a", &req, &why), 0);
	assert_int_equal(head("", &req, &why), 0);
	const char *bad[] = {
		"CONNECT a.test HTTP/1.1\r\n\r\n",
		"CONNECT 1.2.3.4:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:0 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:99999 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:443 HTTP/2\r\n\r\n",
		"CONNECT  a.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:443\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\n\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nX\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\n folded: x\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nX: a\x01 b\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nX: a\nY: b\r\n\r\n",
		"CONNECT user@a.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\rX: y\r\n\r\n",
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
		why = NULL;
		if (head(bad[i], &req, &why) != -1)
			fail_msg("accepted head %zu", i);
		assert_non_null(why);
	}
	assert_int_equal(head("CONNECT 1.2.3.4:443 HTTP/1.1\r\n\r\n", &req, &why), -1);
	assert_non_null(strstr(why, "IP literal"));
	assert_string_equal(req.host, "1.2.3.4:443"); /* what was asked, for the log */
	assert_int_equal(head("CONNECT evil.test:443 HTTP/1.1\r\n\r\n", &req, &why), 1);
	assert_string_equal(req.host, "evil.test");
}

static void head_plain_http(void **state)
{
	struct net_request req;
	const char *why = NULL;
	assert_int_equal(head("GET http://Plain.Test/simple/pkg/?q=1 HTTP/1.1\r\n"
			      "Host: plain.test\r\nProxy-Connection: keep-alive\r\n"
			      "Connection: keep-alive\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n",
			      &req, &why),
			 1);
	assert_int_equal(req.kind, NET_REQ_HTTP);
	assert_string_equal(req.host, "plain.test");
	assert_int_equal(req.port, 80);
	assert_string_equal(req.fwd, "GET /simple/pkg/?q=1 HTTP/1.1\r\nHost: plain.test\r\n"
				     "Accept: */*\r\nConnection: close\r\n\r\n");
	assert_int_equal(req.fwd_len, strlen(req.fwd));
	assert_int_equal(head("POST http://a.test:8080?x HTTP/1.0\r\nHost: A.test:8080\r\n"
			      "Content-Length: 12\r\n\r\n",
			      &req, &why),
			 1);
	assert_int_equal(req.port, 8080);
	assert_int_equal(req.body_len, 12);
	assert_string_equal(req.fwd, "POST /?x HTTP/1.1\r\nHost: A.test:8080\r\n"
				     "Content-Length: 12\r\nConnection: close\r\n\r\n");
	const char *bad[] = {
		"GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test:81\r\n\r\n",
		"GET http://a.test:81/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: -1\r\n\r\n",
		"GET http://u:p@a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://10.0.0.1/ HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n",
		"G(T http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://a.test/\x7f HTTP/1.1\r\nHost: a.test\r\n\r\n",
	};
	for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
		why = NULL;
		if (head(bad[i], &req, &why) != -1)
			fail_msg("accepted head %zu", i);
		assert_non_null(why);
	}
	assert_int_equal(head(bad[3], &req, &why), -1);
	assert_string_equal(why, "Host header differs from the URL's host");
}

static void head_bounds(void **state)
{
	struct net_request req;
	const char *why = NULL;
	static char big[NET_HEAD_MAX * 2];
	size_t n = (size_t)snprintf(big, sizeof(big), "CONNECT a.test:443 HTTP/1.1\r\n");
	while (n < NET_HEAD_MAX + 100)
		big[n++] = 'x';
	assert_int_equal(net_parse_head(big, NET_HEAD_MAX - 1, &req, &why), 0);
	assert_int_equal(net_parse_head(big, NET_HEAD_MAX, &req, &why), -1);
	assert_string_equal(why, "request head too long");
	/* an end just past the bound is not seen */
	memcpy(big + NET_HEAD_MAX - 2, "\r\n\r\n", 4);
	assert_int_equal(net_parse_head(big, NET_HEAD_MAX + 2, &req, &why), -1);
	/* many headers */
	n = (size_t)snprintf(big, sizeof(big), "CONNECT a.test:443 HTTP/1.1\r\n");
	for (int i = 0; i < 150; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "X: y\r\n");
	n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\n");
	assert_int_equal(net_parse_head(big, n, &req, &why), -1);
	assert_string_equal(why, "too many headers");
	/* every prefix of a good head is "more" or complete, never a crash */
	const char *good = "GET http://a.test/p HTTP/1.1\r\nHost: a.test\r\n\r\n";
	for (size_t i = 0; i < strlen(good); i++)
		assert_int_equal(net_parse_head(good, i, &req, &why), 0);
	/* NUL bytes inside a head */
	char nul[] = "CONNECT a.test:443 HTTP/1.1\r\nX: a\0b\r\n\r\n";
	assert_int_equal(net_parse_head(nul, sizeof(nul) - 1, &req, &why), -1);
}

/* ---- TLS ClientHello ---- */

/* A ClientHello (TLS 1.2 record) carrying the given extensions. */
static size_t hello(uint8_t *out, const uint8_t *exts, size_t elen)
{
	uint8_t body[2048];
	size_t n = 0;
	body[n++] = 3, body[n++] = 3;
	memset(body + n, 0xab, 32), n += 32;
	body[n++] = 0;                                  /* session id */
	body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 0x01; /* suites */
	body[n++] = 1, body[n++] = 0;                   /* compression */
	body[n++] = (uint8_t)(elen >> 8), body[n++] = (uint8_t)elen;
	if (elen)
		memcpy(body + n, exts, elen), n += elen;
	size_t m = 0;
	out[m++] = 0x16, out[m++] = 3, out[m++] = 1;
	out[m++] = (uint8_t)((n + 4) >> 8), out[m++] = (uint8_t)(n + 4);
	out[m++] = 1, out[m++] = 0, out[m++] = (uint8_t)(n >> 8), out[m++] = (uint8_t)n;
	memcpy(out + m, body, n);
	return m + n;
}

static size_t sni_ext(uint8_t *out, const char *name)
{
	size_t l = strlen(name), n = 0;
	out[n++] = 0, out[n++] = 0;                                   /* type */
	out[n++] = (uint8_t)((l + 5) >> 8), out[n++] = (uint8_t)(l + 5); /* ext len */
	out[n++] = (uint8_t)((l + 3) >> 8), out[n++] = (uint8_t)(l + 3); /* list */
	out[n++] = 0;                                                 /* host_name */
	out[n++] = (uint8_t)(l >> 8), out[n++] = (uint8_t)l;
	memcpy(out + n, name, l);
	return n + l;
}

static void sni_extraction(void **state)
{
	uint8_t ext[600], msg[2100];
	char name[NET_NAME_MAX + 1];
	const char *why = NULL;
	/* another extension first, then server_name */
	size_t e = 0;
	ext[e++] = 0, ext[e++] = 0x0b, ext[e++] = 0, ext[e++] = 2, ext[e++] = 1, ext[e++] = 0;
	e += sni_ext(ext + e, "Files.PythonHosted.org");
	size_t n = hello(msg, ext, e);
	assert_int_equal(net_tls_sni(msg, n, name, &why), 1);
	assert_string_equal(name, "files.pythonhosted.org");
	/* every prefix asks for more, none passes */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(net_tls_sni(msg, i, name, &why), 0);
	/* every single-byte corruption is refused or still gives a name
	 * (never more than the buffer) */
	for (size_t i = 0; i < n; i++) {
		uint8_t c[2100];
		memcpy(c, msg, n);
		c[i] ^= 0xff;
		(void)net_tls_sni(c, n, name, &why);
	}
	/* no SNI */
	n = hello(msg, ext, 6);
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
	assert_string_equal(why, "no server_name in the ClientHello");
	n = hello(msg, NULL, 0);
	msg[3] = 0, msg[4] = 4 + 41; /* no extensions block at all */
	msg[8] = 41;
	assert_int_equal(net_tls_sni(msg, 5 + 4 + 41, name, &why), -1);
	/* two server_name extensions */
	e = sni_ext(ext, "a.test");
	e += sni_ext(ext + e, "b.test");
	n = hello(msg, ext, e);
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
	/* an IP literal as SNI */
	e = sni_ext(ext, "10.0.0.1");
	n = hello(msg, ext, e);
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
	/* NUL inside the name */
	e = sni_ext(ext, "a.test");
	ext[e - 3] = 0;
	n = hello(msg, ext, e);
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
	/* not TLS */
	assert_int_equal(net_tls_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name, &why), -1);
	/* the handshake claims more than its record: fragmented */
	e = sni_ext(ext, "a.test");
	n = hello(msg, ext, e);
	msg[7] = 0x10;
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
	assert_int_equal(net_tls_sni(msg, 9, name, &why), -1);
	/* record length over 16384 */
	n = hello(msg, ext, e);
	msg[3] = 0x40, msg[4] = 0x01;
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
	/* an extension longer than its block */
	e = sni_ext(ext, "a.test");
	n = hello(msg, ext, e);
	msg[n - e + 3] = 0x7f;
	assert_int_equal(net_tls_sni(msg, n, name, &why), -1);
}

/* ---- decisions ---- */

static void decision_line(void **state)
{
	char buf[1024];
	struct net_decision d = {.time = 1700000000.25, .cell = "c\"1", .host = "a\x01\xff.test",
				 .port = 443, .verdict = NET_DENY, .reason = "not in allowlist",
				 .up = 12, .down = 34};
	int n = net_decision_json(&d, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_int_equal(buf[n - 1], '\n');
	cJSON *j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "cell")->valuestring, "c\"1");
	assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, "deny");
	assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, "not in allowlist");
	assert_int_equal(cJSON_GetObjectItem(j, "port")->valueint, 443);
	assert_int_equal(cJSON_GetObjectItem(j, "up")->valueint, 12);
	assert_int_equal(cJSON_GetObjectItem(j, "down")->valueint, 34);
	assert_true(cJSON_GetObjectItem(j, "time")->valuedouble > 1700000000.0);
	cJSON_Delete(j);
	/* too small */
	assert_int_equal(net_decision_json(&d, buf, 40), -1);
	/* huge strings are cut, still one valid line */
	static char big[4000];
	memset(big, '\x01', sizeof(big) - 1);
	d.host = big, d.reason = big, d.cell = big;
	n = net_decision_json(&d, buf, sizeof(buf));
	assert_int_equal(n, -1);
	char huge[8192];
	n = net_decision_json(&d, huge, sizeof(huge));
	assert_true(n > 0);
	j = cJSON_Parse(huge);
	assert_non_null(j);
	cJSON_Delete(j);
}

static void summary_json(void **state)
{
	struct net_summary s = {.allowed = 3, .denied = 2, .ndenied = 2};
	strcpy(s.denied_list[0].host, "evil.test");
	strcpy(s.denied_list[0].reason, "not in allowlist");
	strcpy(s.denied_list[1].host, "x.test");
	strcpy(s.denied_list[1].reason, "private address");
	char buf[512];
	assert_true(net_summary_json(&s, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "{\"allowed\":3,\"denied\":[{\"host\":\"evil.test\",\"reason\":"
				 "\"not in allowlist\"},{\"host\":\"x.test\",\"reason\":"
				 "\"private address\"}]}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allow_entry_forms),  cmocka_unit_test(allow_entry_refusals),
		cmocka_unit_test(allow_entry_bounds), cmocka_unit_test(allow_matching),
		cmocka_unit_test(hosts_map),          cmocka_unit_test(address_classes),
		cmocka_unit_test(head_connect),       cmocka_unit_test(head_plain_http),
		cmocka_unit_test(head_bounds),        cmocka_unit_test(sni_extraction),
		cmocka_unit_test(decision_line),      cmocka_unit_test(summary_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

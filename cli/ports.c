/* -p [HOSTADDR:]HOSTPORT:CELLPORT for run and create. */
#include "ports.h"

#include <arpa/inet.h>
#include <string.h>

#include "../common/parse.h"

static int parse_publish(void *t, const char *opt, const char *v)
{
	struct cli_ports *o = t;
	if (o->n >= CELL_MAX_PORTS) {
		cli_error("too many %s options (at most %d)", opt, CELL_MAX_PORTS);
		return -1;
	}
	o->specs[o->n++] = v;
	return 0;
}

#define PO(member) CLI_FIELD(struct cli_ports, member)

const struct cli_option CLI_PORT_OPTIONS[] = {
	{"-p", "--publish", CLI_CUSTOM, .parse = parse_publish,
	 .metavar = "[HOSTADDR:]HOSTPORT:CELLPORT", .usage = "-p, --publish [ADDR:]HPORT:CPORT",
	 .help = "relay TCP from the host's HOSTADDR:HOSTPORT (default\n"
		 "127.0.0.1; HOSTPORT 0: a free port) to the cell's own\n"
		 "127.0.0.1:CELLPORT; the cell gets no other network"},
	{"--publish-any-address", NULL, CLI_FLAG, PO(any_address),
	 .help = "let -p listen on a HOSTADDR that is not loopback\n"
		 "(0.0.0.0, ::, a LAN address): reachable from others"},
	{0},
};

static int parse_port(const char *s, size_t len, uint64_t min, uint16_t *out)
{
	char buf[8];
	uint64_t v;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (sc_parse_uint(buf, min, 65535, &v) < 0)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static bool is_loopback(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, addr, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* HOSTADDR (maybe "[v6]") of len bytes into p->host_addr. */
static int parse_addr(const char *s, size_t len, struct cell_port *p)
{
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(p->host_addr))
		return -1;
	memcpy(p->host_addr, s, len);
	p->host_addr[len] = '\0';
	unsigned char tmp[16];
	return inet_pton(AF_INET, p->host_addr, tmp) == 1 ||
			       inet_pton(AF_INET6, p->host_addr, tmp) == 1
		       ? 0
		       : -1;
}

static int bad_spec(const char *v, const char *why)
{
	cli_error("-p %.80s: %s (usage: -p [HOSTADDR:]HOSTPORT:CELLPORT, e.g. -p 8080:80 or "
		  "-p 127.0.0.1:0:8000)", v, why);
	return -1;
}

int cli_port_parse(const char *v, bool any_address, struct cell_port *p)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	snprintf(p->host_addr, sizeof(p->host_addr), "127.0.0.1");
	const char *last = strrchr(v, ':');
	if (!last)
		return bad_spec(v, "expected HOSTPORT:CELLPORT");
	if (parse_port(last + 1, strlen(last + 1), 1, &p->cell_port) < 0)
		return bad_spec(v, "CELLPORT must be 1 to 65535");
	size_t head = (size_t)(last - v);
	const char *mid = NULL;
	for (size_t i = head; i > 0; i--)
		if (v[i - 1] == ':' || v[i - 1] == ']') {
			mid = v[i - 1] == ':' ? v + i - 1 : NULL;
			break;
		}
	const char *hp = mid ? mid + 1 : v;
	if (parse_port(hp, (size_t)(last - hp), 0, &p->host_port) < 0)
		return bad_spec(v, "HOSTPORT must be 0 (a free port) to 65535");
	if (mid && parse_addr(v, (size_t)(mid - v), p) < 0)
		return bad_spec(v, "HOSTADDR must be a numeric IPv4 or IPv6 address ([::1])");
	if (!any_address && !is_loopback(p->host_addr)) {
		cli_error("-p %.80s: %s is not a loopback address; add --publish-any-address to "
			  "let other machines reach the cell", v, p->host_addr);
		return -1;
	}
	return 0;
}

bool cli_port_was_free(const char *v)
{
	struct cell_port p;
	const char *last = strrchr(v, ':');
	return cli_port_parse(v, true, &p) == 0 && p.host_port == 0 && last;
}

int cli_ports_open(const struct cli_ports *o, struct cell_spec *spec)
{
	if (o->any_address && o->n == 0) {
		cli_error("--publish-any-address: no -p given");
		return CLI_EXIT_USAGE;
	}
	for (size_t i = 0; i < o->n; i++)
		if (cli_port_parse(o->specs[i], o->any_address, &spec->ports[i]) < 0)
			return CLI_EXIT_USAGE;
	spec->nports = o->n;
	struct sc_err err = {0};
	if (cell_ports_listen(spec->ports, spec->nports, &err) < 0) {
		spec->nports = 0;
		return cli_fail(&err);
	}
	return 0;
}

static const char *bracketed(const char *addr, char *buf, size_t size)
{
	if (!strchr(addr, ':'))
		return addr;
	snprintf(buf, size, "[%s]", addr);
	return buf;
}

void cli_ports_print(FILE *f, const struct cell_port *ports, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char b[64];
		fprintf(f, "%u/tcp -> %s:%u\n", ports[i].cell_port,
			bracketed(ports[i].host_addr, b, sizeof(b)), ports[i].host_port);
	}
}

void cli_ports_json(FILE *f, const struct cell_port *ports, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"host_addr\":" : "{\"host_addr\":", f);
		cli_json_string(f, ports[i].host_addr, strlen(ports[i].host_addr));
		fprintf(f, ",\"host_port\":%u,\"cell_port\":%u,\"protocol\":\"tcp\"}",
			ports[i].host_port, ports[i].cell_port);
	}
	fputc(']', f);
}

/* Sockets a cell must not get, and the host's services it must not reach.
 * usage: net alg|vsock|packet|raw|tcp PORT|abstract NAME|iface */
#include "attack.h"

#include <arpa/inet.h>
#include <linux/if_alg.h>
#include <linux/if_tun.h>
#include <linux/vm_sockets.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stddef.h>
#include <sys/un.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static const char *fam_name(long fam)
{
	switch (fam & 0xffffffff) {
	case AF_ALG: return "AF_ALG";
	case AF_VSOCK: return "AF_VSOCK";
	case AF_PACKET: return "AF_PACKET";
	case AF_INET: return "AF_INET";
	case AF_INET6: return "AF_INET6";
	default: return "?";
	}
}

/* socket() through syscall(), so that the high bits reach the filter. */
static int try_socket(long fam, long type, long proto)
{
	attempt("socket(%s%s, %ld, %ld)", fam_name(fam), fam >> 32 ? " | 1 << 32" : "", type, proto);
	int fd = (int)syscall(SYS_socket, fam, type, proto);
	expect_fail(fd);
	return fd;
}

static void case_alg(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	int fd = try_socket(AF_ALG, SOCK_SEQPACKET, 0);
	if (fd >= 0) {
		struct sockaddr_alg sa = {.salg_family = AF_ALG, .salg_type = "hash",
					  .salg_name = "sha256"};
		bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
	}
	try_socket(AF_ALG | (1L << 32), SOCK_SEQPACKET, 0);
	int sv[2];
	attempt("socketpair(AF_ALG)");
	expect_fail(socketpair(AF_ALG, SOCK_SEQPACKET, 0, sv));
}

static void case_vsock(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	int fd = try_socket(AF_VSOCK, SOCK_STREAM, 0);
	if (fd >= 0) {
		struct sockaddr_vm vm = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_HOST,
					 .svm_port = 22};
		attempt("connect to the hypervisor (vsock cid 2, port 22)");
		expect_fail(connect(fd, (struct sockaddr *)&vm, sizeof(vm)));
		close(fd);
	}
	try_socket(AF_VSOCK, SOCK_DGRAM, 0);
	try_socket(AF_VSOCK | (1L << 32), SOCK_STREAM, 0);
}

static void case_packet(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_socket(AF_PACKET, SOCK_RAW, htons(0x0003 /* ETH_P_ALL */));
	try_socket(AF_PACKET, SOCK_DGRAM, htons(0x0003));
	try_socket(AF_PACKET | (1L << 32), SOCK_RAW, htons(0x0003));
	try_socket(AF_INET, SOCK_PACKET, htons(0x0003));
}

static void case_raw(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	try_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	try_socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	try_socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
	try_socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	try_socket(AF_INET | (1L << 32), SOCK_RAW, IPPROTO_ICMP);
	try_socket(AF_INET, SOCK_RAW | (1L << 32), IPPROTO_ICMP);
}

/* The test listens on the host's 127.0.0.1:PORT; the cell's 127.0.0.1 is
 * its own loopback, so the connection must find nobody there. */
static void case_tcp(int argc, char **argv)
{
	if (argc < 2)
		setup_failed("tcp PORT");
	int port = atoi(argv[1]);
	static const char *const addrs[] = {"127.0.0.1", "127.0.0.2", "0.0.0.0"};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			setup_failed("socket(AF_INET, SOCK_STREAM)");
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		inet_pton(AF_INET, addrs[i], &sa.sin_addr);
		attempt("connect to the host's TCP server at %s:%d", addrs[i], port);
		if (expect_fail(connect(fd, (struct sockaddr *)&sa, sizeof(sa))) == 0)
			(void)!write(fd, "GET /from-the-cell HTTP/1.0\r\n\r\n", 31);
		close(fd);
	}
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
					  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		attempt("connect to [::1]:%d", port);
		expect_fail(connect(fd, (struct sockaddr *)&s6, sizeof(s6)));
		close(fd);
	}
}

/* Abstract unix sockets belong to the network namespace: a host service
 * listening on one (X11, dbus, containerd shims) must be out of reach. */
static void case_abstract(int argc, char **argv)
{
	if (argc < 2)
		setup_failed("abstract NAME");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		setup_failed("socket(AF_UNIX)");
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	size_t n = strlen(argv[1]);
	if (n + 1 > sizeof(su.sun_path))
		setup_failed("name too long");
	memcpy(su.sun_path + 1, argv[1], n);
	attempt("connect to the host's abstract unix socket @%s", argv[1]);
	if (expect_fail(connect(fd, (struct sockaddr *)&su,
				(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) == 0)
		(void)!write(fd, "from-the-cell\n", 14);
	close(fd);
}

/* A cell with a way out would need an interface other than lo. */
static void case_iface(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	attempt("open /dev/net/tun");
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	expect_fail(fd);
	attempt("find a network interface other than lo");
	struct if_nameindex *ifs = if_nameindex();
	int others = 0;
	for (struct if_nameindex *i = ifs; i && i->if_index; i++)
		if (strcmp(i->if_name, "lo")) {
			others++;
			printf("  interface %s\n", i->if_name);
		}
	if (ifs)
		if_freenameindex(ifs);
	if (others)
		escaped("%d interfaces besides lo", others);
	else
		blocked("only lo");
	attempt("take lo down (SIOCSIFFLAGS)");
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	ifr.ifr_flags = 0;
	/* Taking lo down needs CAP_NET_ADMIN; it must be refused. */
	expect_fail(ioctl(s, SIOCSIFFLAGS, &ifr));
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"alg", case_alg},	   {"vsock", case_vsock}, {"packet", case_packet},
		{"raw", case_raw},	   {"tcp", case_tcp},	   {"abstract", case_abstract},
		{"iface", case_iface}, {NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}

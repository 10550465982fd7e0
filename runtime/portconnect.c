/* The cell's side of a connection the host asks for (REQ_CONNECT, a
 * server's /cells/{id}/ports/{port}/ proxy): a worker of init connects to
 * 127.0.0.1:PORT in the cell's own network namespace and copies bytes both
 * ways between that connection and the stream socket the host passed,
 * passing each side's EOF on as shutdown(SHUT_WR). Its exit code is 0, or
 * the errno of a failed connect (ECONNREFUSED: nothing listens there). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fileops.h"

#define RELAY_BUF 65536

/* Copy what from has to to; false at EOF or an error (then to is
 * half-closed). */
static bool pump(int from, int to, char *buf)
{
	ssize_t n = read(from, buf, RELAY_BUF);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0 || sc_write_all(to, buf, (size_t)n) < 0) {
		shutdown(to, SHUT_WR);
		return false;
	}
	return true;
}

int rt_port_relay(int host_fd, uint16_t port)
{
	int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (tcp < 0)
		return errno;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(tcp, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return errno;
	static char up[RELAY_BUF], down[RELAY_BUF];
	bool host_open = true, cell_open = true;
	while (host_open || cell_open) {
		struct pollfd p[2] = {{.fd = host_open ? host_fd : -1, .events = POLLIN},
				      {.fd = cell_open ? tcp : -1, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (p[0].revents && !pump(host_fd, tcp, up))
			host_open = false;
		if (p[1].revents && !pump(tcp, host_fd, down))
			cell_open = false;
	}
	return 0;
}

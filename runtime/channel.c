#include "channel.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int rt_chan_recv_fd(int sock, int timeout_ms, char tag)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	int r;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	char byte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	int fd = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n == 1 && c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[4];
		memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
		for (size_t i = 0; i < nfds; i++) {
			if (fd < 0 && i == 0)
				fd = fds[i];
			else
				close(fds[i]);
		}
	}
	if (n == 1 && byte == tag && fd >= 0 && !(msg.msg_flags & MSG_CTRUNC))
		return fd;
	if (fd >= 0)
		close(fd);
	errno = EPROTO;
	return -1;
}

int rt_chan_send_fd(int sock, char tag, int fd)
{
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

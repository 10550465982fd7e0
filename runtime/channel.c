#include "channel.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t rt_chan_recvmsg(int sock, void *buf, size_t len, int room, int *fds, int max, int *nfds,
			int *flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * RT_CHAN_MAX_FDS)];
		struct cmsghdr align;
	} u;
	if (room < 1 || room > RT_CHAN_MAX_FDS)
		room = RT_CHAN_MAX_FDS;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)room)};
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	*nfds = 0;
	*flags = n < 0 ? 0 : msg.msg_flags;
	/* on failure msg is not filled in: no control data to read */
	for (struct cmsghdr *c = n < 0 ? NULL : CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t j = 0; j < k; j++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
	return n;
}

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
	int fd = -1, nfds, flags;
	ssize_t n;
	do
		n = rt_chan_recvmsg(sock, &byte, 1, RT_CHAN_MAX_FDS, &fd, 1, &nfds, &flags);
	while (n < 0 && errno == EINTR);
	if (n == 1 && byte == tag && fd >= 0 && !(flags & MSG_CTRUNC))
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

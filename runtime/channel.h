/* Private to runtime/: one fd handed over a unix socket, tagged with one
 * byte (SCM_RIGHTS), and the receiving side of any message with fds. The cell's setup gives its creator the pty master
 * and the egress listener this way on the go channel; both sides use
 * this file, so the child's code (child.c, egress.c) needs nothing of the
 * creator's (start.c). */
#pragma once

/* The tags of the fds the child hands over on the go channel. */
#define RT_CHAN_TAG_PTY 'T'    /* its pty's master (spec->tty) */
#define RT_CHAN_TAG_EGRESS 'L' /* its egress proxy's listener (spec->egress) */

/* 0, or -1 with errno. Safe in the post-clone child (no allocation). */
int rt_chan_send_fd(int sock, char tag, int fd);
/* Wait up to timeout_ms for an fd tagged `tag`: the fd (O_CLOEXEC), or -1
 * with errno: ETIMEDOUT, or EPROTO when something else came (another tag,
 * no fd, the peer gone). */
int rt_chan_recv_fd(int sock, int timeout_ms, char tag);

#include <sys/types.h>

#define RT_CHAN_MAX_FDS 4
/* One recvmsg (MSG_DONTWAIT; fds O_CLOEXEC) of up to len bytes into buf,
 * with control room for `room` fds (1..RT_CHAN_MAX_FDS): more than that
 * is MSG_CTRUNC. The first `max` fds that came go to fds[] (*nfds), the
 * others are closed. recvmsg's result (errno on -1); *flags: msg_flags. */
ssize_t rt_chan_recvmsg(int sock, void *buf, size_t len, int room, int *fds, int max, int *nfds,
			int *flags);

/* Private to runtime/: one fd handed over a unix socket, tagged with one
 * byte (SCM_RIGHTS). The cell's setup gives its creator the pty master
 * and the egress listener this way on the go channel; both sides use
 * this file, so the child's code (child.c, egress.c) needs nothing of the
 * creator's (start.c). */
#pragma once

/* 0, or -1 with errno. Safe in the post-clone child (no allocation). */
int rt_chan_send_fd(int sock, char tag, int fd);
/* Wait up to timeout_ms for an fd tagged `tag`: the fd (O_CLOEXEC), or -1
 * with errno: ETIMEDOUT, or EPROTO when something else came (another tag,
 * no fd, the peer gone). */
int rt_chan_recv_fd(int sock, int timeout_ms, char tag);

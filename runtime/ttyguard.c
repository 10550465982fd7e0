/* The caller's terminal when a cell has no pty of its own (see tty.h):
 * the cell gets a pipe for a terminal on stdin, fed from here, and a
 * write-only descriptor for one on stdout or stderr. The terminal fd
 * itself never enters the cell. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/sc.h"
#include "sigpipe.h"
#include "tty.h"

void rt_tty_in_init(struct rt_tty_in *r)
{
	memset(r, 0, sizeof(*r));
	r->term = r->wr = -1;
	r->i_term = r->i_wr = -1;
}

/* The terminal on `fd` opened again, non-blocking, read-only, for us
 * alone (O_NONBLOCK on the caller's own descriptor would be the shell's
 * too); -1 when that is refused (a terminal of another user's). */
static int reopen_nonblocking(int fd)
{
	char path[64];
	struct stat a, b;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int t = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (t < 0)
		return -1;
	if (!isatty(t) || fstat(t, &a) < 0 || fstat(fd, &b) < 0 || a.st_rdev != b.st_rdev) {
		close(t);
		return -1;
	}
	return t;
}

/* stdin: the read end of a pipe for the cell, the relay for us. */
static int relay_stdin(int fds[3], int ours[3], struct rt_tty_in *in, struct sc_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sc_fail(err, errno, "pipe");
	int fl = fcntl(p[1], F_GETFL);
	if (fl < 0 || fcntl(p[1], F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return sc_fail(err, e, "pipe");
	}
	in->term = reopen_nonblocking(fds[0]);
	in->own_term = in->term >= 0;
	if (in->term < 0)
		in->term = fds[0]; /* read only as much as is there (pump_term) */
	in->wr = p[1];
	fds[0] = ours[0] = p[0];
	return 0;
}

int rt_tty_guard_stdio(int fds[3], int ours[3], struct rt_tty_in *in, struct sc_err *err)
{
	/* An open directory handed over as stdio would be a way out of the
	 * cell's tree (/proc/self/fd/0/..). */
	static const char *const names[3] = {"stdin", "stdout", "stderr"};
	for (int k = 0; k < 3; k++) {
		struct stat st;
		if (fds[k] >= 0 && fstat(fds[k], &st) == 0 && S_ISDIR(st.st_mode))
			return sc_fail(err, 0, "%s is a directory; a cell is never given a host directory "
					       "(redirect %s from or to a file)", names[k], names[k]);
	}
	if (fds[0] >= 0 && isatty(fds[0]) && relay_stdin(fds, ours, in, err) < 0)
		return -1;
	for (int k = 1; k < 3; k++) {
		if (fds[k] < 0 || !isatty(fds[k]))
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[k]);
		int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 && !isatty(fd)) {
			close(fd);
			fd = -1;
			errno = ENOTTY;
		}
		if (fd < 0) {
			/* a terminal we may not open again (another user's) */
			sc_fail(err, errno, "cannot give the cell your terminal write-only (%s)",
				k == 1 ? "stdout" : "stderr");
			sc_err_hint(err, "use -t, or redirect the output to a file or pipe");
			return -1;
		}
		fds[k] = ours[k] = fd;
	}
	return 0;
}

int rt_tty_in_poll_add(struct rt_tty_in *r, struct pollfd *p)
{
	int n = 0;
	r->i_term = r->i_wr = -1;
	if (r->wr < 0)
		return 0;
	/* one buffer at a time: the terminal waits while the pipe is full;
	 * the pipe is always there, for its POLLERR (no reader left) */
	bool pending = r->len > r->off;
	p[r->i_wr = n++] = (struct pollfd){.fd = r->wr, .events = pending ? POLLOUT : 0};
	if (!pending)
		p[r->i_term = n++] = (struct pollfd){.fd = r->term, .events = POLLIN};
	return n;
}

/* terminal -> buf. false: the relay is over (EOF: ^D at the start of a
 * line, a hangup, or a terminal we may no longer read). */
static bool pump_term(struct rt_tty_in *r)
{
	size_t want = sizeof(r->buf);
	int avail = 0;
	/* a borrowed (blocking) descriptor: no more than what is waiting, so
	 * that a read never blocks the command's exit (0 waiting and
	 * readable: EOF, which a read returns at once) */
	if (!r->own_term && ioctl(r->term, FIONREAD, &avail) == 0 && avail > 0 &&
	    (size_t)avail < want)
		want = (size_t)avail;
	ssize_t n = read(r->term, r->buf, want);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	r->off = 0;
	r->len = (size_t)n;
	return true;
}

/* buf -> the pipe. false: the cell's side is closed. */
static bool pump_pipe(struct rt_tty_in *r)
{
	struct rt_sigpipe_guard g;
	rt_sigpipe_block(&g);
	ssize_t n = write(r->wr, r->buf + r->off, r->len - r->off);
	int e = errno;
	rt_sigpipe_restore(&g);
	if (n < 0)
		return e == EAGAIN || e == EINTR;
	r->off += (size_t)n;
	if (r->off >= r->len)
		r->off = r->len = 0;
	return true;
}

void rt_tty_in_poll_done(struct rt_tty_in *r, const struct pollfd *p)
{
	if (r->i_wr >= 0 && (p[r->i_wr].revents & POLLERR)) {
		/* nobody in the cell reads stdin any more: leave the keys alone */
		rt_tty_in_close(r);
		return;
	}
	bool go_on = true;
	if (r->i_term >= 0 && p[r->i_term].revents)
		go_on = pump_term(r);
	if (go_on && r->len > r->off)
		go_on = pump_pipe(r); /* most often the pipe has room at once */
	if (!go_on)
		rt_tty_in_close(r);
}

void rt_tty_in_close(struct rt_tty_in *r)
{
	sc_closep(&r->wr);
	if (r->own_term)
		sc_closep(&r->term);
	r->term = -1;
	r->own_term = false;
	r->len = r->off = 0;
}

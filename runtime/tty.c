/* The host side of a cell's own pty (see tty.h). The pty comes from the
 * host's devpts; the cell holds only its slave, nobody's controlling
 * terminal but the command's, and whatever it injects (TIOCSTI, were the
 * filter ever to allow it) lands in its own input queue. */
#include "tty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "../common/sc.h"

void rt_tty_init(struct rt_tty *t)
{
	memset(t, 0, sizeof(*t));
	t->master = t->slave = t->in = t->out = -1;
	t->i_in = t->i_master = -1;
}

int rt_tty_adopt(struct rt_tty *t, int master, int in, int out, struct sc_err *err)
{
	rt_tty_init(t);
	t->in = in;
	t->out = out;
	t->in_eof = in < 0;
	t->master = master;
	int fl = fcntl(master, F_GETFL);
	if (fl < 0 || fcntl(master, F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		rt_tty_close(t);
		return sc_fail(err, e, "pty");
	}
	rt_tty_winch(t);
	return 0;
}

int rt_tty_open(struct rt_tty *t, int in, int out, struct sc_err *err)
{
	rt_tty_init(t);
	t->in = in;
	t->out = out;
	t->in_eof = in < 0;
	t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->master < 0)
		return sc_fail(err, errno, "cannot open a pty (/dev/ptmx)");
	if (grantpt(t->master) < 0 || unlockpt(t->master) < 0) {
		int e = errno;
		sc_closep(&t->master);
		return sc_fail(err, e, "cannot unlock the pty");
	}
	/* the peer of this master, without a path lookup in /dev/pts */
	t->slave = ioctl(t->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->slave < 0) {
		int e = errno;
		sc_closep(&t->master);
		return sc_fail(err, e, "cannot open the pty's slave");
	}
	int fl = fcntl(t->master, F_GETFL);
	if (fl < 0 || fcntl(t->master, F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		rt_tty_close(t);
		return sc_fail(err, e, "pty");
	}
	rt_tty_winch(t);
	return 0;
}

#define DEVPTS_MAGIC 0x1cd1

static int open_cell_ptmx(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	_cleanup_fd_ int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -1;
	/* O_NONBLOCK: whatever the cell put there must not hang us */
	int m = sc_openat_beneath(root, "dev/pts/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK, 0, 0);
	struct stat st;
	struct statfs fs;
	if (m < 0 || fstat(m, &st) < 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 5 ||
	    minor(st.st_rdev) != 2 || fstatfs(m, &fs) < 0 || fs.f_type != DEVPTS_MAGIC) {
		if (m >= 0)
			close(m);
		return -1;
	}
	return m;
}

int rt_tty_open_in(struct rt_tty *t, pid_t init_pid, int in, int out, struct sc_err *err)
{
	int m = init_pid > 0 ? open_cell_ptmx(init_pid) : -1;
	if (m < 0)
		return rt_tty_open(t, in, out, err);
	int unlock = 0;
	int s = ioctl(m, TIOCSPTLCK, &unlock) == 0
		? ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (s < 0) {
		close(m);
		return rt_tty_open(t, in, out, err);
	}
	if (rt_tty_adopt(t, m, in, out, err) < 0) {
		close(s);
		return -1;
	}
	t->slave = s;
	return 0;
}

void rt_tty_winch(struct rt_tty *t)
{
	/* the caller's terminal: stdin, else stdout (exec -t without -i) */
	struct winsize ws;
	if (t->master < 0)
		return;
	if ((t->in >= 0 && ioctl(t->in, TIOCGWINSZ, &ws) == 0) ||
	    (t->out >= 0 && ioctl(t->out, TIOCGWINSZ, &ws) == 0))
		(void)ioctl(t->master, TIOCSWINSZ, &ws);
}

int rt_tty_poll_add(struct rt_tty *t, struct pollfd *p)
{
	int n = 0;
	t->i_in = t->i_master = -1;
	if (t->master < 0)
		return 0;
	short ev = t->master_eof ? 0 : POLLIN;
	if (t->pend_len > t->pend_off)
		ev |= POLLOUT;
	else if (!t->in_eof)
		p[t->i_in = n++] = (struct pollfd){.fd = t->in, .events = POLLIN};
	if (ev)
		p[t->i_master = n++] = (struct pollfd){.fd = t->master, .events = ev};
	return n;
}

/* master -> the caller's output; false at EOF (EIO: no slave left). */
static bool pump_out(struct rt_tty *t)
{
	char buf[8192];
	ssize_t n = read(t->master, buf, sizeof(buf));
	if (n > 0) {
		if (t->sink)
			t->sink(t->sink_ctx, buf, (size_t)n);
		else if (t->out >= 0)
			(void)sc_write_all(t->out, buf, (size_t)n);
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	t->master_eof = true;
	return false;
}

/* The caller's input -> master; at its EOF the pty gets its EOF
 * character, so that a reader in the cell sees the end too. */
static void pump_in(struct rt_tty *t)
{
	ssize_t n = read(t->in, t->pend, sizeof(t->pend));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		struct termios tio;
		t->in_eof = true;
		t->pend[0] = tcgetattr(t->master, &tio) == 0 ? (char)tio.c_cc[VEOF] : 4;
		n = 1;
	}
	t->pend_off = 0;
	t->pend_len = (size_t)n;
}

static void flush_pending(struct rt_tty *t)
{
	ssize_t n = write(t->master, t->pend + t->pend_off, t->pend_len - t->pend_off);
	if (n > 0)
		t->pend_off += (size_t)n;
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		t->pend_off = t->pend_len; /* the cell's side is gone */
	if (t->pend_off >= t->pend_len)
		t->pend_off = t->pend_len = 0;
}

void rt_tty_poll_done(struct rt_tty *t, const struct pollfd *p)
{
	if (t->i_master >= 0) {
		short r = p[t->i_master].revents;
		if (r & (POLLIN | POLLHUP | POLLERR))
			pump_out(t);
		if ((r & POLLOUT) && t->pend_len)
			flush_pending(t);
	}
	if (t->i_in >= 0 && p[t->i_in].revents)
		pump_in(t);
}

void rt_tty_drain(struct rt_tty *t, int grace_ms)
{
	if (t->master < 0)
		return;
	while (!t->master_eof) {
		struct pollfd p = {.fd = t->master, .events = POLLIN};
		int n = poll(&p, 1, grace_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pump_out(t);
	}
}

void rt_tty_close(struct rt_tty *t)
{
	sc_closep(&t->master);
	sc_closep(&t->slave);
}

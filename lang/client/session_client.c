/* The fast client of a kept Python session (lang/py/driver.py): a static
 * program, written into the cell by lang/ and exec'd for each `session
 * run` in place of lang/py/client.py, whose interpreter start was most of
 * a warm round trip. It does what `client.py run` does, in the same
 * order and with the same notes and status (written into stdin, the
 * host's memfd, after the code); when the supervisor is not there to
 * answer, it hands the run, stdin unread, to client.py (which starts the
 * supervisor). Everything here runs inside the cell.
 *
 *   client run KEY TIMEOUT CLEAR     as client.py run
 *   client probe                     exits 0 (the cell can run it) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_SRC (4u << 20)
#define MAX_MSG 65536u
#define MAX_PLOTS 64
#define GRACE_S 5.0
#define FLAG_CLEAR 1u
#define HELLO_WAIT_S 30.0 /* as client.py's */
#define KEY_LEN 32

static char dir[512];  /* the session directory: the scripts, plots/ */
static char kdir[600]; /* dir/KEY: the socket, locks, notes (client.py) */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	dprintf(2, "[sandcell] %.*s\n", n, line);
}

static int path_in(char *out, size_t size, const char *fmt, ...)
{
	char name[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(name))
		return -1;
	n = snprintf(out, size, "%s/%s", kdir, name);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Wait for fd to be readable until deadline (< 0: forever): 1 ready, 0
 * timed out, -1 error. */
static int wait_readable(int fd, double deadline)
{
	for (;;) {
		int ms = -1;
		if (deadline >= 0) {
			double left = deadline - now();
			if (left <= 0)
				return 0;
			ms = (int)(left * 1000) + 1;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n;
		return 1;
	}
}

/* n bytes, waiting until deadline: 1 read, 0 timed out, -1 EOF or error. */
static int recv_exact(int s, void *buf, size_t n, double deadline)
{
	size_t got = 0;
	while (got < n) {
		int w = wait_readable(s, deadline);
		if (w <= 0)
			return w;
		ssize_t r = recv(s, (char *)buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 1;
}

/* A driver message: "key=integer" lines, length first. Returns 1 with the
 * values of the keys asked for (-1 when absent), 0 timed out, -1 error. */
static int recv_msg(int s, double deadline, const char *const *keys, long *vals, size_t nkeys)
{
	unsigned char hdr[4];
	int r = recv_exact(s, hdr, 4, deadline);
	if (r <= 0)
		return r;
	uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	if (n > MAX_MSG)
		return -1;
	char *buf = malloc(n + 1);
	if (!buf)
		return -1;
	/* the rest of a message follows its length at once */
	r = recv_exact(s, buf, n, deadline < 0 ? -1 : deadline + 60);
	if (r <= 0) {
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	for (size_t k = 0; k < nkeys; k++)
		vals[k] = -1;
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		for (size_t k = 0; k < nkeys; k++)
			if (!strcmp(line, keys[k]))
				vals[k] = strtol(eq + 1, NULL, 10);
	}
	free(buf);
	return 1;
}

static int send_all(int s, const void *buf, size_t n)
{
	while (n) {
		ssize_t w = send(s, buf, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf = (const char *)buf + w;
		n -= (size_t)w;
	}
	return 0;
}

static int connect_driver(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/s.sock", kdir);
	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		s = -1;
	}
	return s;
}

static long read_long_file(const char *path)
{
	char buf[33];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	(void)!write(fd, text, strlen(text));
	close(fd);
}

/* The worker's exit code and why it died (its died-PID file), waiting up
 * to wait_s for it; (1, "died") when it does not come. */
static int read_died(long pid, double wait_s, char *why, size_t size)
{
	char path[700];
	double end = now() + wait_s;
	snprintf(why, size, "died");
	if (path_in(path, sizeof(path), "died-%ld", pid) < 0)
		return 1;
	for (;;) {
		char buf[201];
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
				buf[--n] = '\0';
			char *sp = strchr(buf, ' ');
			char *end_num;
			long code = strtol(buf, &end_num, 10);
			if (sp && end_num == sp) {
				snprintf(why, size, "%s", sp + 1);
				return (int)code;
			}
		}
		if (now() > end)
			return 1;
		usleep(50000);
	}
}

/* The plots there, MAX_PLOTS + 1 when more were made than kept (sc_plots
 * leaves plot-more). */
static int count_plots(void)
{
	int n = 0;
	char png[700], html[700];
	struct stat st;
	while (n < MAX_PLOTS) {
		if (snprintf(png, sizeof(png), "%s/plots/plot-%04d.png", dir, n + 1) >= (int)sizeof(png) ||
		    snprintf(html, sizeof(html), "%s/plots/plot-%04d.html", dir, n + 1) >= (int)sizeof(html) ||
		    (stat(png, &st) < 0 && stat(html, &st) < 0))
			break;
		n++;
	}
	if (n == MAX_PLOTS && snprintf(png, sizeof(png), "%s/plots/plot-more", dir) < (int)sizeof(png) &&
	    stat(png, &st) == 0)
		n++;
	return n;
}

/* stdin, up to MAX_SRC + 1 bytes (one more tells that it is too long) */
static char *read_source(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			cap = cap * 2 > MAX_SRC + 1 ? MAX_SRC + 1 : cap * 2;
			char *grown = n < cap ? realloc(buf, cap) : NULL;
			if (!grown)
				break;
			buf = grown;
		}
		ssize_t r = read(0, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

struct status {
	long exit, timeout, restarted, crashed, count;
};

/* The status goes into stdin (the host's memfd) after the code, where
 * the host reads it back once the client has exited. */
static int finish(size_t src_len, struct status *st, double timeout)
{
	if (st->timeout) {
		note("timed out after %gs%s", timeout,
		     st->crashed ? "" : ": interrupted (SIGINT), the session goes on");
		st->exit = 124;
	}
	char text[256];
	int n = snprintf(text, sizeof(text),
			 "exit=%ld\ntimeout=%ld\nrestarted=%ld\ncrashed=%ld\ncount=%ld\nplots=%d\n",
			 st->exit, st->timeout, st->restarted, st->crashed, st->count, count_plots());
	if (n > 0 && (size_t)n < sizeof(text))
		(void)!pwrite(0, text, (size_t)n, (off_t)src_len);
	return (int)(st->exit & 0xff);
}

/* Wait for the result, interrupting (SIGINT) at the timeout and killing
 * GRACE_S later; false when the worker went away without one. */
static bool await_result(int s, long pid, double timeout, struct status *st, bool *killed)
{
	static const char *const KEYS[] = {"exit", "count"};
	double deadline = timeout > 0 ? now() + timeout : -1;
	bool interrupted = false;
	for (;;) {
		long v[2];
		int r = recv_msg(s, deadline, KEYS, v, 2);
		if (r > 0 && v[0] >= 0) {
			st->exit = v[0];
			st->count = v[1] >= 0 ? v[1] : 0;
			return true;
		}
		if (r < 0 || r > 0)
			return false;
		if (!interrupted) {
			interrupted = true;
			st->timeout = 1;
			kill((pid_t)pid, SIGINT);
			deadline = now() + GRACE_S;
			continue;
		}
		note("the code did not stop within %gs of SIGINT: the interpreter is killed", GRACE_S);
		kill((pid_t)pid, SIGKILL);
		*killed = true;
		return false;
	}
}

/* Takes the run lock and waits for the driver's hello: 1 with the socket
 * (*s) and the worker's pid; 0 when no supervisor answered (the run goes
 * to client.py); -1 when the run cannot go on. *lock: the lock's fd. */
static int open_session(int *s, int *lock, long *pid)
{
	char path[700];
	*s = *lock = -1;
	*pid = -1;
	if (path_in(path, sizeof(path), "run.lock") < 0)
		return -1;
	/* no directory (the cell removed it): client.py makes it again */
	*lock = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (*lock >= 0 && flock(*lock, LOCK_EX) < 0)
		return -1;
	*s = *lock >= 0 ? connect_driver() : -1;
	static const char *const HELLO[] = {"pid"};
	int hello = *s < 0 ? -1 : recv_msg(*s, now() + HELLO_WAIT_S, HELLO, pid, 1);
	if (hello == 0) {
		note("the session's interpreter did not answer within %gs", HELLO_WAIT_S);
		return -1;
	}
	return hello < 0 || *pid <= 0 ? 0 : 1;
}

/* No supervisor: client.py starts one (stdin is still unread). */
static int hand_to_python(char **argv, int s, int lock)
{
	if (s >= 0)
		close(s);
	if (lock >= 0)
		close(lock);
	char script[700];
	if (snprintf(script, sizeof(script), "%s/client.py", dir) >= (int)sizeof(script))
		return 125;
	char *pargv[] = {"python3", "-S", "-E", "-u", script, "run", argv[2], argv[3], argv[4], NULL};
	execvp("python3", pargv);
	note("cannot start python3: %s", strerror(errno));
	return 125;
}

/* Notes a worker other than the one the last run saw (seen: its file). */
static void note_new_worker(const char *seen, long pid, struct status *st)
{
	long last = read_long_file(seen);
	if (last && last != pid) {
		char why[201];
		st->restarted = 1;
		read_died(last, 0, why, sizeof(why));
		note("the Python interpreter was restarted (it %s); earlier state is lost", why);
	}
	if (last != pid) {
		char text[32];
		snprintf(text, sizeof(text), "%ld", pid);
		write_file(seen, text);
	}
}

/* The code's length and flags, our stdout and stderr with them, then the code. */
static bool send_code(int s, const char *code, size_t len, bool clear)
{
	unsigned char hdr[8];
	uint32_t n = (uint32_t)len, flags = clear ? FLAG_CLEAR : 0;
	for (int i = 0; i < 4; i++) {
		hdr[i] = (unsigned char)(n >> (24 - 8 * i));
		hdr[4 + i] = (unsigned char)(flags >> (24 - 8 * i));
	}
	int fds[2] = {1, 2};
	char cbuf[CMSG_SPACE(sizeof(fds))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof(hdr)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	return sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(hdr) && send_all(s, code, len) == 0;
}

/* The worker went away without a result. */
static void worker_lost(const char *seen, long pid, bool killed, struct status *st)
{
	char why[201];
	int died = read_died(pid, 10, why, sizeof(why));
	st->exit = died ? died : 1;
	st->crashed = st->restarted = 1;
	write_file(seen, "0"); /* noted here, not again on the next run */
	if (!killed)
		note("the Python interpreter %s while running this code; it is restarted "
		     "and the session's state is lost", why);
	else
		note("the interpreter is restarted and the session's state is lost");
}

static int run(int argc, char **argv)
{
	double timeout = strtod(argv[3], NULL);
	bool clear = !strcmp(argv[4], "1");
	int s, lock;
	long pid;
	int opened = open_session(&s, &lock, &pid);
	if (opened < 0)
		return 125;
	if (opened == 0)
		return hand_to_python(argv, s, lock);
	(void)argc;
	size_t len;
	char *code = read_source(&len);
	if (!code)
		return 125;
	if (len > MAX_SRC) {
		note("source larger than %u bytes", MAX_SRC);
		return 125;
	}
	struct status st = {0};
	char seen[700];
	if (path_in(seen, sizeof(seen), "worker") < 0)
		return 125;
	note_new_worker(seen, pid, &st);
	bool killed = false;
	bool sent = send_code(s, code, len, clear);
	free(code);
	if (sent && await_result(s, pid, timeout, &st, &killed))
		return finish(len, &st, timeout);
	worker_lost(seen, pid, killed, &st);
	return finish(len, &st, timeout);
}

int main(int argc, char **argv)
{
	const char *d = getenv("SANDCELL_SESSION_DIR");
	snprintf(dir, sizeof(dir), "%s", d && *d ? d : "/tmp/.sandcell/session");
	if (argc == 2 && !strcmp(argv[1], "probe"))
		return 0;
	if (argc == 5 && !strcmp(argv[1], "run") && strlen(argv[2]) == KEY_LEN &&
	    strspn(argv[2], "0123456789abcdef") == KEY_LEN &&
	    snprintf(kdir, sizeof(kdir), "%s/%s", dir, argv[2]) < (int)sizeof(kdir))
		return run(argc, argv);
	fputs("usage: client run KEY TIMEOUT CLEAR | client probe\n", stderr);
	return 125;
}

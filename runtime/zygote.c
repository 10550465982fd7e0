/* The exec server's side of a pre-started interpreter (issue #39): an
 * exec marked PROTO_EXEC_PRESTARTED is offered to the interpreter waiting
 * on CELL_ZYGOTE_SOCKET in the cell (lang/py/sc_zygote.py), which clones
 * the command's process with CLONE_PARENT: it is init's child, as a
 * process init forked would be, so the usual wait, timeout, kill and
 * resource accounting apply. The interpreter is a process of the cell like
 * any other and is trusted with nothing: its answer names a pid that init
 * checks is its own child, and any failure, refusal or silence (a second
 * at most) leaves the command to the usual exec. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "internal.h"
#include "proto.h"

#define ZYGOTE_ANSWER_MS 1000

/* "SCZ1\0" argc\0 argv... envc\0 env... cwd\0 into a malloc'd buffer. */
static char *pack(char *const *argv, const char *const *env, const char *cwd, size_t *len)
{
	size_t argc = 0, envc = 0, size = 64 + strlen(cwd);
	for (; argv[argc]; argc++)
		size += strlen(argv[argc]) + 1;
	for (; env && env[envc]; envc++)
		size += strlen(env[envc]) + 1;
	if (size > PROTO_MAX_REQ + 4096)
		return NULL;
	char *buf = malloc(size), *p = buf;
	if (!buf)
		return NULL;
	p += sprintf(p, "SCZ1%c%zu%c", 0, argc, 0);
	for (size_t i = 0; i < argc; i++)
		p = stpcpy(p, argv[i]) + 1;
	p += sprintf(p, "%zu%c", envc, 0);
	for (size_t i = 0; i < envc; i++)
		p = stpcpy(p, env[i]) + 1;
	p = stpcpy(p, cwd) + 1;
	*len = (size_t)(p - buf);
	return buf;
}

static int connect_zygote(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_Static_assert(sizeof(CELL_ZYGOTE_SOCKET) <= sizeof(sa.sun_path), "socket path");
	memcpy(sa.sun_path, CELL_ZYGOTE_SOCKET, sizeof(CELL_ZYGOTE_SOCKET));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_command(int sock, const char *msg, size_t len, const int fds[3])
{
	union {
		char b[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			    .msg_controllen = sizeof(u.b)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len ? 0 : -1;
}

/* The pid in the answer "PID n", or 0. */
static pid_t read_answer(int sock)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	int n;
	do
		n = poll(&p, 1, ZYGOTE_ANSWER_MS);
	while (n < 0 && errno == EINTR);
	char ans[64];
	ssize_t got = n == 1 ? recv(sock, ans, sizeof(ans) - 1, MSG_DONTWAIT) : -1;
	if (got < 5 || memcmp(ans, "PID ", 4) != 0)
		return 0;
	ans[got] = '\0';
	char *end;
	long pid = strtol(ans + 4, &end, 10);
	return *end == '\0' && pid > 1 && pid < (1L << 22) ? (pid_t)pid : 0;
}

/* Whether pid is a child of this process (that has not been waited for). */
static bool own_child(pid_t pid)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

void rt_zygote_end(void)
{
	int sock = connect_zygote();
	if (sock < 0)
		return;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool found = getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 1 &&
		     own_child(cred.pid);
	close(sock);
	if (!found)
		return;
	kill(cred.pid, SIGKILL);
	while (waitpid(cred.pid, NULL, 0) < 0 && errno == EINTR)
		;
}

pid_t rt_zygote_exec(char *const *argv, const char *const *env, const char *cwd, const int fds[3])
{
	size_t len = 0;
	char *msg = pack(argv, env, cwd, &len);
	if (!msg)
		return 0;
	int sock = connect_zygote();
	pid_t pid = 0;
	if (sock >= 0 && send_command(sock, msg, len, fds) == 0)
		pid = read_answer(sock);
	free(msg);
	if (pid > 0 && !own_child(pid))
		pid = 0;
	/* the go: until it comes, the process waits (and exits on EOF), so
	 * that init knows its pid before it can end */
	if (pid > 0 && send(sock, "GO", 2, MSG_NOSIGNAL | MSG_DONTWAIT) != 2)
		pid = 0;
	if (sock >= 0)
		close(sock);
	return pid;
}

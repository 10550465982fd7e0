/* Egress by allowlist: the runtime's side (see egress.h). */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "cell_priv.h"
#include "cgroup.h"
#include "channel.h"
#include "egress.h"
#include "landlock.h"

#define PROXY_URL "http://127.0.0.1:3128"

/* What makes tools use the proxy: curl, wget, pip, Python's urllib, git,
 * cargo and apt read the *_proxy variables; npm its own config names. */
static const char *const EGRESS_ENV[] = {
	"HTTP_PROXY=" PROXY_URL,
	"HTTPS_PROXY=" PROXY_URL,
	"http_proxy=" PROXY_URL,
	"https_proxy=" PROXY_URL,
	"NO_PROXY=localhost,127.0.0.1,::1",
	"no_proxy=localhost,127.0.0.1,::1",
	"npm_config_proxy=" PROXY_URL,
	"npm_config_https_proxy=" PROXY_URL,
	"GIT_CONFIG_COUNT=1",
	"GIT_CONFIG_KEY_0=http.proxy",
	"GIT_CONFIG_VALUE_0=" PROXY_URL,
};

int cell_spec_set_egress(struct cell_spec *spec, const struct net_rules *rules,
			 struct sc_err *err)
{
	spec->egress = rules;
	if (!rules)
		return 0;
	for (size_t i = 0; i < SC_ARRAY_LEN(EGRESS_ENV); i++)
		if (cell_spec_setenv(spec, EGRESS_ENV[i], err) < 0)
			return -1;
	return 0;
}

int rt_egress_child_listen(const struct cell_plan *plan, struct sc_err *err)
{
	if (!plan->spec->egress)
		return 0;
	_cleanup_fd_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sc_fail(err, errno, "egress proxy socket");
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(NET_PROXY_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0)
		return sc_fail(err, errno, "egress proxy: listen on 127.0.0.1:%d", NET_PROXY_PORT);
	if (rt_chan_send_fd(plan->sync_fd, RT_CHAN_TAG_EGRESS, fd) < 0)
		return sc_fail(err, errno, "egress proxy: hand the socket to the host side");
	return 0;
}

/* ---- cell_run: a thread ---- */

static void *run_main(void *arg)
{
	struct egress_run *e = arg;
	e->rc = net_proxy_serve(&e->cfg, e->sum, &e->err);
	return NULL;
}

void rt_egress_run_init(struct egress_run *e)
{
	memset(e, 0, sizeof(*e));
	e->stop_rd = e->stop_wr = e->cfg.listen_fd = -1;
}

int rt_egress_run_start(struct egress_run *e, const struct cell_spec *spec, int listen_fd,
		     const char *cell, struct sc_err *err)
{
	e->cfg.listen_fd = listen_fd;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sc_fail(err, errno, "egress proxy: pipe");
	e->stop_rd = p[0];
	e->stop_wr = p[1];
	if (!(e->sum = calloc(1, sizeof(*e->sum))))
		return sc_fail(err, ENOMEM, "egress proxy");
	e->cfg.rules = spec->egress;
	e->cfg.cell = cell;
	e->cfg.log_fd = spec->egress_log_fd;
	e->cfg.stop_fd = e->stop_rd;
	/* The thread must not take the relayed signals cell_run blocked. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&e->thread, NULL, run_main, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return sc_fail(err, rc, "egress proxy: thread");
	e->running = true;
	return 0;
}

void rt_egress_run_finish(struct egress_run *e, struct cell_result *res)
{
	if (e->running) {
		sc_closep(&e->stop_wr); /* the read end stays readable: EOF */
		pthread_join(e->thread, NULL);
		e->running = false;
		if (res && e->sum) {
			res->network = e->sum;
			e->sum = NULL;
		}
	}
	sc_closep(&e->stop_wr);
	sc_closep(&e->stop_rd);
	sc_closep(&e->cfg.listen_fd);
	free(e->sum);
	e->sum = NULL;
}

/* ---- long-lived cells: a helper process ---- */

static int move_fd(int fd, int to)
{
	if (fd == to)
		return fcntl(fd, F_SETFD, 0) < 0 ? -1 : to;
	return dup2(fd, to);
}

/* The helper speaks to a hostile cell and to the network: it keeps only
 * what serving needs (its fds, connecting out). A root caller's helper
 * becomes nobody; every helper gets no_new_privs and is not dumpable. */
static int drop_helper_privileges(void)
{
	if (geteuid() == 0) {
		const uid_t nobody = 65534;
		if (setgroups(0, NULL) < 0 || setresgid(nobody, nobody, nobody) < 0 ||
		    setresuid(nobody, nobody, nobody) < 0)
			return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -1;
	return 0;
}

static void helper_main(const struct cell_spec *spec, int listen_fd, int pidfd, int log_fd,
			const char *cell, const char *cgroup)
{
	/* best effort: without it the helper still ends with the cell's init */
	rt_cgroup_join(cgroup);
	/* Known fds only: 3 listener, 4 the cell's pidfd, 5 the log. */
	int l = fcntl(listen_fd, F_DUPFD_CLOEXEC, 100), p = fcntl(pidfd, F_DUPFD_CLOEXEC, 100),
	    g = log_fd >= 0 ? fcntl(log_fd, F_DUPFD_CLOEXEC, 100) : -1;
	if (l < 0 || p < 0)
		_exit(1);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	if (move_fd(l, 3) < 0 || move_fd(p, 4) < 0 || (g >= 0 && move_fd(g, 5) < 0))
		_exit(1);
	syscall(SYS_close_range, 6u, ~0U, 0u);
	if (drop_helper_privileges() < 0)
		_exit(1);
	/* best effort, as everywhere: no Landlock, no second wall */
	struct sc_err lerr = {0};
	(void)rt_landlock_restrict_read_only(&lerr);
	struct net_proxy_config cfg = {.rules = spec->egress, .cell = cell, .listen_fd = 3,
				       .log_fd = g >= 0 ? 5 : -1, .stop_fd = 4};
	_exit(net_proxy_serve(&cfg, NULL, NULL) < 0 ? 1 : 0);
}

int rt_egress_spawn_helper(const struct cell_spec *spec, int listen_fd, int cell_pidfd,
			const char *dir, const char *cell, const char *cgroup, struct sc_err *err)
{
	char path[4096];
	if (sc_path(path, sizeof(path), "%s/egress.jsonl", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s/egress.jsonl", dir);
	_cleanup_fd_ int log_fd =
		open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (log_fd < 0)
		return sc_fail(err, errno, "open %s", path);
	pid_t pid = fork();
	if (pid < 0)
		return sc_fail(err, errno, "fork the egress proxy helper");
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_IGN);
		setsid();
		prctl(PR_SET_NAME, "sandcell-egress");
		pid_t inner = fork();
		if (inner != 0)
			_exit(inner < 0 ? 1 : 0);
		helper_main(spec, listen_fd, cell_pidfd, log_fd, cell, cgroup);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return sc_fail(err, 0, "the egress proxy helper did not start");
	return 0;
}

int cell_egress_log_open(const struct cell *c, bool at_end, struct sc_err *err)
{
	char path[PATH_MAX];
	if (sc_path(path, sizeof(path), "%s/egress.jsonl", c->dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "%s/egress.jsonl", c->dir);
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return sc_fail(err, errno, "open %s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return sc_fail(err, EINVAL, "%s is not a regular file", path);
	if (at_end && lseek(fd, 0, SEEK_END) < 0)
		return sc_fail(err, errno, "seek %s", path);
	return steal_fd(&fd);
}

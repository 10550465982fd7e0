/* `image build`: run a recipe and store the root filesystem it produces.
 *
 * The recipe contract (docs/images.md): sandcell runs `/bin/sh RECIPE` in
 * a work directory with a clean environment plus
 *   SANDCELL_OUT     a FIFO: write the root filesystem to it as one tar
 *                    stream (mmdebstrap --format=tar writes to it directly)
 *   SANDCELL_CONFIG  a file for image defaults, one per line:
 *                    "env KEY=VALUE", "workdir /DIR", "cmd WORD..."
 *   SANDCELL_IMAGE, SANDCELL_RECIPE_DIR, SANDCELL_ROOTLESS (1 or 0)
 * and reads the tar stream as it is written, through the same checked
 * extractor as imports (so the layer comes out owned by the caller, or by
 * the cell id range for root). The recipe's output goes to stderr. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/parse.h"
#include "internal.h"

#define CONFIG_MAX (64 * 1024)
#define TRAILER_MAX (64ULL << 20)
#define RECIPE_ENV_MAX 200

static char recipe_dir[PATH_MAX];

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Worked out once (pthread_once); the string never changes after. */
static void find_recipe_dir(void)
{
	const char *env = getenv("SANDCELL_RECIPES");
	if (env && env[0] == '/' && strlen(env) < sizeof(recipe_dir)) {
		snprintf(recipe_dir, sizeof(recipe_dir), "%s", env);
		return;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* Installed (PREFIX/bin -> PREFIX/share/sandcell/images) or a
		 * build directory inside the source tree. */
		static const char *const rel[] = {"../share/sandcell/images", "../scripts/images",
						  "../../scripts/images"};
		for (size_t i = 0; i < SC_ARRAY_LEN(rel); i++) {
			char cand[PATH_MAX];
			if (sc_path(cand, sizeof(cand), "%s/%s", exe, rel[i]) == 0 && is_dir(cand) &&
			    realpath(cand, recipe_dir))
				return;
		}
	}
#ifdef SC_SOURCE_DIR
	snprintf(recipe_dir, sizeof(recipe_dir), "%s/scripts/images", SC_SOURCE_DIR);
#else
	snprintf(recipe_dir, sizeof(recipe_dir), "/usr/share/sandcell/images");
#endif
	return;
}

const char *rootfs_recipe_dir(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, find_recipe_dir);
	return recipe_dir;
}

/* A recipe runs in a process group of its own (a terminal's ^C does not
 * reach it); the caller's hook hears of the group, to pass signals on. */
struct recipe_run {
	const struct rootfs_recipe_hook *hook;
	pid_t pid;
	int pidfd;
	int out;      /* read end of the FIFO */
	int status;   /* wait status, valid when exited */
	bool exited;
};

static void tell_group(const struct recipe_run *r, pid_t pgid)
{
	if (r->hook && r->hook->group)
		r->hook->group(r->hook->ctx, pgid);
}

static void child_exec(const char *recipe, const char *work, const char *name, int wfd)
{
	static const char *const pass[] = {"HOME", "TMPDIR", "USER", "LOGNAME", "http_proxy",
					   "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
					   "NO_PROXY", "SOURCE_DATE_EPOCH", "SANDCELL_MIRROR",
					   "SANDCELL_APT_CACHE", "SANDCELL_SECURITY_MIRROR",
					   "SANDCELL_BUILD_TMPDIR"};
	static char vars[32][PATH_MAX + 64];
	char *envp[33];
	size_t n = 0;
	snprintf(vars[n++], sizeof(vars[0]), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	snprintf(vars[n++], sizeof(vars[0]), "LC_ALL=C.UTF-8");
	snprintf(vars[n++], sizeof(vars[0]), "SANDCELL_OUT=%s/out.tar", work);
	snprintf(vars[n++], sizeof(vars[0]), "SANDCELL_CONFIG=%s/config", work);
	snprintf(vars[n++], sizeof(vars[0]), "SANDCELL_IMAGE=%s", name);
	snprintf(vars[n++], sizeof(vars[0]), "SANDCELL_ROOTLESS=%d", geteuid() != 0);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", recipe);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	snprintf(vars[n++], sizeof(vars[0]), "SANDCELL_RECIPE_DIR=%s", slash ? dir : ".");
	for (size_t i = 0; i < SC_ARRAY_LEN(pass) && n < 32; i++) {
		const char *v = getenv(pass[i]);
		if (v && strlen(v) < PATH_MAX)
			snprintf(vars[n++], sizeof(vars[0]), "%s=%s", pass[i], v);
	}
	for (size_t i = 0; i < n; i++)
		envp[i] = vars[i];
	envp[n] = NULL;
	/* The write end stays open in the recipe until it exits, so that a
	 * tool opening and closing the FIFO early does not end the stream. */
	if (dup2(wfd, 9) < 0 || dup2(2, 1) < 0 || chdir(work) < 0)
		_exit(127);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null >= 0)
		dup2(null, 0);
	char *argv[] = {"sh", (char *)recipe, NULL};
	execve("/bin/sh", argv, envp);
	_exit(127);
}

/* The recipe's process group leader: runs the recipe as its child and
 * passes on its exit status. If sandcell dies (even by SIGKILL), the
 * parent-death signal tells the leader, which kills the whole group, so
 * that nothing the recipe started (mmdebstrap, apt) runs on without us. */
static void recipe_guard(pid_t parent, const char *recipe, const char *work, const char *name,
			 int wfd)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(127);
	pid_t pid = fork();
	if (pid < 0)
		_exit(127);
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		child_exec(recipe, work, name, wfd);
	}
	close_range(3, ~0U, 0); /* the FIFO's ends are the recipe's */
	for (;;) {
		int status;
		pid_t done = waitpid(pid, &status, WNOHANG);
		if (done == pid) {
			if (WIFEXITED(status))
				_exit(WEXITSTATUS(status));
			signal(WTERMSIG(status), SIG_DFL);
			sigprocmask(SIG_SETMASK, &old, NULL);
			raise(WTERMSIG(status));
			_exit(128 + WTERMSIG(status));
		}
		if (getppid() != parent) /* sandcell is gone: so is the recipe */
			kill(0, SIGKILL);
		/* SIGTERM and friends that sandcell forwards reach the recipe
		 * too (the whole group): wait for it to act on them. */
		(void)sigwaitinfo(&set, NULL);
	}
}

static int recipe_start(const char *recipe, struct store_work *w, const char *name,
			const struct rootfs_recipe_hook *hook, struct recipe_run *r,
			struct sc_err *err)
{
	memset(r, 0, sizeof(*r));
	r->hook = hook;
	r->out = r->pidfd = -1;
	char fifo[sizeof(w->path) + 16];
	snprintf(fifo, sizeof(fifo), "%s/out.tar", w->path);
	if (mkfifo(fifo, 0600) < 0)
		return sc_fail(err, errno, "mkfifo %s", fifo);
	/* Open both ends here (read first, non-blocking, so neither waits). */
	r->out = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	_cleanup_fd_ int wfd = r->out >= 0 ? open(fifo, O_WRONLY | O_CLOEXEC) : -1;
	if (r->out < 0 || wfd < 0)
		return sc_fail(err, errno, "open %s", fifo);
	if (fcntl(r->out, F_SETFL, 0) < 0)
		return sc_fail(err, errno, "fcntl");
	fflush(NULL);
	pid_t self = getpid();
	r->pid = fork();
	if (r->pid < 0)
		return sc_fail(err, errno, "fork");
	if (r->pid == 0) {
		setpgid(0, 0);
		recipe_guard(self, recipe, w->path, name, wfd);
	}
	setpgid(r->pid, r->pid);
	tell_group(r, r->pid);
	r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	return 0;
}

static void recipe_wait(struct recipe_run *r)
{
	if (r->pid <= 0 || r->exited)
		return;
	/* Wait without reaping, so that the recipe's pid (its process group
	 * id) cannot be reused while what it left running is killed. */
	siginfo_t si;
	while (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	kill(-r->pid, SIGKILL);
	tell_group(r, 0); /* before the pid (the group's id) can be reused */
	while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
		;
	r->exited = true;
}

static void recipe_stop(struct recipe_run *r)
{
	if (r->pid > 0 && !r->exited) {
		kill(-r->pid, SIGTERM);
		recipe_wait(r);
	}
	sc_closep(&r->out);
	sc_closep(&r->pidfd);
}

/* After the end-of-archive blocks: take what the recipe still writes
 * (tar's record padding) until it closes the FIFO or exits. */
static int recipe_finish(struct recipe_run *r, struct sc_err *err)
{
	enum { SINK_SIZE = 64 * 1024 };
	_cleanup_free_ char *sink = malloc(SINK_SIZE);
	if (!sink)
		return sc_fail(err, ENOMEM, "read the recipe's output");
	uint64_t extra = 0;
	(void)fcntl(r->out, F_SETFL, O_NONBLOCK);
	for (;;) {
		struct pollfd p[2] = {{.fd = r->out, .events = POLLIN}, {.fd = r->pidfd, .events = POLLIN}};
		if (poll(p, r->pidfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return sc_fail(err, errno, "poll");
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(r->out, sink, SINK_SIZE);
			if (n == 0)
				break;
			if (n > 0 && (extra += (uint64_t)n) > TRAILER_MAX)
				return sc_fail(err, 0, "the recipe wrote more after the end of its archive");
			if (n > 0 || errno == EAGAIN || errno == EINTR)
				continue;
			return sc_fail(err, errno, "read the recipe's archive");
		}
		if (p[1].revents)
			break;
	}
	recipe_wait(r);
	return 0;
}

static int recipe_status(const struct recipe_run *r, struct sc_err *err)
{
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0)
		return 0;
	if (WIFEXITED(r->status))
		return sc_fail(err, 0, "the recipe failed with status %d (its output is above)",
			       WEXITSTATUS(r->status));
	return sc_fail(err, 0, "the recipe was killed by signal %d", WTERMSIG(r->status));
}

struct build_ctx {
	struct recipe_run *run;
	struct store_work *w;
	struct image_manifest *m;
};

static int read_config(struct store_work *w, struct image_manifest *m, struct sc_err *err);

static int build_open(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct build_ctx *c = ctx;
	return rootfs_stream_open(s, c->run->out, 0, UINT64_MAX, 0, err);
}

static int build_close(void *ctx, size_t i, struct stream *s, struct sc_err *err)
{
	struct build_ctx *c = ctx;
	if (recipe_finish(c->run, err) < 0 || recipe_status(c->run, err) < 0)
		return -1;
	/* The defaults file is complete now that the recipe has exited. */
	return read_config(c->w, c->m, err);
}

/* SANDCELL_CONFIG lines into the manifest's defaults. */
static int read_config(struct store_work *w, struct image_manifest *m, struct sc_err *err)
{
	_cleanup_free_ char *text = NULL;
	struct sc_err e = {0};
	if (sc_read_small_alloc(w->dir_fd, "config", SC_READ_NOFOLLOW | SC_READ_REGULAR, CONFIG_MAX, &text, NULL, &e) < 0)
		return e.errnum == ENOENT ? 0 : sc_fail(err, 0, "recipe config: %s", e.msg);
	char *env[RECIPE_ENV_MAX + 1] = {0}, *cmd[65] = {0};
	size_t nenv = 0, ncmd = 0;
	int rc = 0;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!line[0] || line[0] == '#')
			continue;
		if (!strncmp(line, "env ", 4) && rootfs_env_entry_valid(line + 4) && nenv < RECIPE_ENV_MAX) {
			env[nenv++] = strdup(line + 4);
		} else if (!strncmp(line, "workdir /", 9) && strlen(line) < 4096) {
			free(m->workdir);
			m->workdir = strdup(line + 8);
		} else if (!strncmp(line, "cmd ", 4)) {
			for (size_t i = 0; i < ncmd; i++)
				free(cmd[i]);
			ncmd = 0;
			for (char *s2 = NULL, *word = strtok_r(line + 4, " \t", &s2); word && ncmd < 64;
			     word = strtok_r(NULL, " \t", &s2))
				cmd[ncmd++] = strdup(word);
		} else {
			rc = sc_fail(err, 0, "recipe config: cannot use line '%.80s' (env KEY=VALUE, "
				     "workdir /DIR or cmd WORD...)", line);
		}
	}
	if (rc == 0) {
		m->env = nenv ? rootfs_strv_dup(env) : NULL;
		m->cmd = ncmd ? rootfs_strv_dup(cmd) : NULL;
	}
	for (size_t i = 0; i < nenv; i++)
		free(env[i]);
	for (size_t i = 0; i < ncmd; i++)
		free(cmd[i]);
	return rc;
}

int rootfs_image_build(const char *data_root, const struct rootfs_in_use *in_use, const char *name,
		       const char *recipe, const struct rootfs_limits *lim,
		       const struct rootfs_recipe_hook *hook, struct rootfs_report *rep,
		       struct sc_err *err)
{
	if (!sc_valid_name(name) || !strcmp(name, "host"))
		return sc_fail(err, 0, "bad image name '%.64s' (letters, digits, '.', '_', '-'; not 'host')", name);
	char path[PATH_MAX], abs[PATH_MAX];
	if (recipe)
		snprintf(path, sizeof(path), "%s", recipe);
	else if (sc_path(path, sizeof(path), "%s/%s.sh", rootfs_recipe_dir(), name) < 0)
		return sc_fail(err, ENAMETOOLONG, "recipe path");
	struct stat sb;
	if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode) || !realpath(path, abs)) {
		sc_fail(err, errno ? errno : EINVAL, "recipe %s", path);
		if (!recipe)
			sc_err_hint(err, "no such recipe; pass --recipe FILE or set SANDCELL_RECIPES");
		return -1;
	}
	struct store st;
	struct store_work w = {.dir_fd = -1};
	struct recipe_run run = {.out = -1, .pidfd = -1};
	struct image_manifest m = {0};
	int rc = -1;
	if (rootfs_store_open(&st, data_root, err) < 0)
		return -1;
	if (rootfs_store_work_begin(&st, &w, err) < 0 || recipe_start(abs, &w, name, hook, &run, err) < 0)
		goto out;
	struct build_ctx ctx = {.run = &run, .w = &w, .m = &m};
	struct layer_source src = {.open = build_open, .close = build_close, .ctx = &ctx,
				   .nlayers = 1, .whiteouts = false, .no_drain = true};
	snprintf(m.name, sizeof(m.name), "%s", name);
	size_t need = strlen(abs) + 8;
	if ((m.source = malloc(need)))
		snprintf(m.source, need, "build:%s", abs);
	rc = rootfs_image_make(&st, in_use, &w, &src, lim, &m, rep, err);
	if (rc < 0 && run.pid > 0 && !run.exited) {
		/* A recipe that failed ends its archive early: say why it failed
		 * rather than how the archive ended. */
		struct pollfd p = {.fd = run.pidfd, .events = POLLIN};
		bool gone = run.pidfd >= 0 && poll(&p, 1, 1000) == 1;
		recipe_stop(&run);
		struct sc_err why = {0};
		if (gone && recipe_status(&run, &why) < 0 && err)
			*err = why;
	}
out:
	recipe_stop(&run);
	rootfs_store_work_end(&w);
	rootfs_store_close(&st);
	rootfs_manifest_free(&m);
	return rc;
}

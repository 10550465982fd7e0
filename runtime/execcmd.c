/* Exec the command with PATH searched in the cell's environment, through
 * the exec trampoline (trampoline/trampoline.c) run from a sealed memfd, so
 * that the process exec'ing the command is never the host's sandcell
 * binary. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "internal.h"

extern const unsigned char rt_trampoline_blob[];
extern const size_t rt_trampoline_blob_size;

int rt_exec_trampoline_create(void)
{
	int fd = memfd_create("sandcell-exec", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (sc_write_all(fd, rt_trampoline_blob, rt_trampoline_blob_size) < 0 ||
	    fchmod(fd, 0555) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static const char *env_path(const char *const *env)
{
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], "PATH=", 5))
			return env[i] + 5;
	return "/usr/local/bin:/usr/bin:/bin";
}

/* The first PATH entry holding an executable `file`, into buf. Sets errno
 * (ENOENT, or EACCES when one exists but cannot be executed) on failure. */
static int search_path(const char *file, const char *const *env, char *buf, size_t size)
{
	int saved = ENOENT;
	for (const char *p = env_path(env); p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		const char *dir = len ? p : ".";
		if (!len)
			len = 1;
		if (len + 1 + strlen(file) + 1 <= size) {
			memcpy(buf, dir, len);
			buf[len] = '/';
			strcpy(buf + len + 1, file);
			if (access(buf, X_OK) == 0)
				return 0;
			if (errno != ENOENT && errno != ENOTDIR)
				saved = errno;
		}
		p = colon ? colon + 1 : NULL;
	}
	errno = saved;
	return -1;
}

/* The command starts as a fresh program would: every signal at its default
 * action and none blocked. Handlers fall back to the default at exec by
 * themselves; an ignored disposition survives it, and init (or the caller
 * of sandcell) may ignore SIGPIPE: a writer to a closed pipe must still
 * die of it. So only the ignored ones are reset: a syscall each, not 60
 * for every command. Safe after vfork: the child has its own handler
 * table. */
static void reset_signals(uint64_t ignored)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG && sig <= 64; sig++)
		if ((ignored >> (sig - 1)) & 1 && sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Written once under pthread_once, read-only after (see internal.h). */
static uint64_t realtime_ignored;
static pthread_once_t realtime_once = PTHREAD_ONCE_INIT;

static void probe_realtime(void)
{
	uint64_t set = 0;
	for (int sig = SIGRTMIN; sig <= SIGRTMAX && sig <= 64; sig++) {
		struct sigaction old;
		if (sigaction(sig, NULL, &old) < 0 || old.sa_handler == SIG_IGN)
			set |= UINT64_C(1) << (sig - 1);
	}
	realtime_ignored = set;
}

uint64_t rt_realtime_signals_ignored(void)
{
	pthread_once(&realtime_once, probe_realtime);
	return realtime_ignored;
}

void rt_ignore_signal(uint64_t *ignored, int sig)
{
	signal(sig, SIG_IGN);
	if (sig >= 1 && sig <= 64)
		*ignored |= UINT64_C(1) << (sig - 1);
}

void rt_exec_command(int tramp_fd, uint64_t ignored, char *const *argv, const char *const *env)
{
	reset_signals(ignored);
	char *const *envp = (char *const *)env;
	char path[4096];
	if (strchr(argv[0], '/')) {
		if (strlen(argv[0]) >= sizeof(path)) {
			errno = ENAMETOOLONG;
			return;
		}
		strcpy(path, argv[0]);
	} else if (search_path(argv[0], env, path, sizeof(path)) < 0) {
		return;
	}
	if (tramp_fd >= 0) {
		size_t argc = 0;
		while (argv[argc])
			argc++;
		char *targv[argc + 3];
		targv[0] = "sandcell-exec";
		targv[1] = path;
		memcpy(targv + 2, argv, (argc + 1) * sizeof(char *));
		syscall(SYS_execveat, tramp_fd, "", targv, envp, AT_EMPTY_PATH);
		/* A policy without execveat: exec directly (weaker, see above). */
		if (errno != ENOSYS && errno != EPERM)
			return;
	}
	execve(path, argv, envp);
}

int rt_exec_failure_status(int errnum)
{
	return errnum == ENOENT || errnum == ENOTDIR ? CELL_EXIT_NOTFOUND : CELL_EXIT_NOEXEC;
}

int rt_exec_become(bool switch_user, uint32_t uid, uint32_t gid)
{
	if (switch_user) {
		/* where setgroups is denied (a rootless cell maps only 0) there
		 * is no other user to become and the groups stay as they are */
		gid_t none[1];
		if (syscall(SYS_setgroups, 0, none) < 0 && errno != EPERM)
			return -1;
		if (syscall(SYS_setresgid, gid, gid, gid) < 0 ||
		    syscall(SYS_setresuid, uid, uid, uid) < 0)
			return -1;
	}
	/* SECBIT_NO_SETUID_FIXUP keeps the capabilities across the uid change:
	 * clear every set by hand (the bounding and ambient sets are empty
	 * since init's lockdown). */
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof(data));
	return (int)syscall(SYS_capset, &hdr, data);
}

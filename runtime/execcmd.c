/* Exec the command with PATH searched in the cell's environment. */
#include <string.h>

#include "internal.h"

static const char *env_path(const char *const *env)
{
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], "PATH=", 5))
			return env[i] + 5;
	return "/usr/local/bin:/usr/bin:/bin";
}

void exec_command(char *const *argv, const char *const *env)
{
	const char *file = argv[0];
	char *const *envp = (char *const *)env;
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return;
	}
	const char *path = env_path(env);
	int saved = ENOENT;
	char buf[4096];
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);
		if (len == 0) {
			len = 1;
			path = ".";
		}
		if (len + 1 + strlen(file) + 1 <= sizeof(buf)) {
			memcpy(buf, path, len);
			buf[len] = '/';
			strcpy(buf + len + 1, file);
			execve(buf, argv, envp);
			if (errno != ENOENT && errno != ENOTDIR)
				saved = errno;
		}
		if (!colon)
			break;
		path = colon + 1;
	}
	errno = saved;
}

int exec_failure_status(int errnum)
{
	return errnum == ENOENT ? CELL_EXIT_NOTFOUND : CELL_EXIT_NOEXEC;
}

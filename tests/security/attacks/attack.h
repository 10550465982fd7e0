/* Shared by the hostile programs of the security suite. Each program tries
 * one attack (or a few related ones), prints what it tried and how it
 * ended, and exits 0 when every attempt was blocked, 1 when any escaped,
 * 2 when it could not even set the attempt up.
 *
 *   ATTEMPT: <what>
 *   BLOCKED: <what>: <ERRNO> (<message>)
 *   ESCAPED: <what>: <detail>
 *
 * Built with `gcc -static` by the tests, so it runs in any image. */
#ifndef SC_ATTACK_H
#define SC_ATTACK_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ATTACK_API static __attribute__((unused))

static int attack_escaped;
static int attack_attempts;
static char attack_what[512];

ATTACK_API void attempt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ATTACK_API void attempt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(attack_what, sizeof(attack_what), fmt, ap);
	va_end(ap);
	attack_attempts++;
	printf("ATTEMPT: %s\n", attack_what);
	fflush(stdout);
}

ATTACK_API const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

ATTACK_API void blocked_errno(int e)
{
	printf("BLOCKED: %s: %s (%s)\n", attack_what, errname(e), strerror(e));
	fflush(stdout);
}

ATTACK_API void blocked(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ATTACK_API void blocked(const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("BLOCKED: %s: %s\n", attack_what, detail);
	fflush(stdout);
}

ATTACK_API void escaped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ATTACK_API void escaped(const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("ESCAPED: %s: %s\n", attack_what, detail);
	fflush(stdout);
	attack_escaped = 1;
}

/* The attempt's syscall result: < 0 with errno set means it was refused. */
ATTACK_API long expect_fail(long rc)
{
	if (rc < 0)
		blocked_errno(errno);
	else
		escaped("succeeded (returned %ld)", rc);
	return rc;
}

ATTACK_API void setup_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
ATTACK_API void setup_failed(const char *fmt, ...)
{
	char detail[512];
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("SETUP FAILED: %s: %s\n", detail, strerror(e));
	fflush(stdout);
	exit(2);
}

ATTACK_API int attack_report(void)
{
	if (!attack_attempts) {
		printf("SETUP FAILED: nothing was attempted\n");
		return 2;
	}
	printf("RESULT: %s (%d attempts)\n", attack_escaped ? "ESCAPED" : "BLOCKED", attack_attempts);
	fflush(stdout);
	return attack_escaped ? 1 : 0;
}

/* Dispatch on argv[1]: each program offers several named cases. */
struct attack_case {
	const char *name;
	void (*run)(int argc, char **argv);
};

ATTACK_API int attack_main(const struct attack_case *cases, int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		goto usage;
	for (const struct attack_case *c = cases; c->name; c++)
		if (!strcmp(c->name, argv[1])) {
			c->run(argc - 1, argv + 1);
			return attack_report();
		}
usage:
	fprintf(stderr, "usage: %s CASE [ARGS]; cases:", argv[0]);
	for (const struct attack_case *c = cases; c->name; c++)
		fprintf(stderr, " %s", c->name);
	fprintf(stderr, "\n");
	return 2;
}

/* Escape attempts take a host-only path as an argument: a file the cell must
 * never see. If it is reachable after the attempt, the attack got out; it
 * then tries to overwrite it, which the test detects from the host. */
ATTACK_API void probe_host_path(const char *host_path)
{
	if (!host_path)
		return;
	attempt("reach the host-only file %s", host_path);
	int fd = open(host_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "escaped\n", 8);
		close(fd);
		escaped("opened the host file for writing");
		return;
	}
	struct stat st;
	if (stat(host_path, &st) == 0)
		escaped("the host file is visible (open: %s)", strerror(errno));
	else
		blocked_errno(errno);
}

#endif

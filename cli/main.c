#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const char USAGE[] =
	"usage: sandcell COMMAND [OPTIONS] ...\n"
	"\n"
	"Commands:\n"
	"%s"
	"\n"
	"Run 'sandcell COMMAND --help' for a command's options.\n";

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

static void usage(FILE *f)
{
	char list[4096] = "";
	size_t used = 0;
	for (size_t i = 0; i < SC_ARRAY_LEN(COMMANDS); i++) {
		int n = snprintf(list + used, sizeof(list) - used, "  %-10s %s\n",
				 COMMANDS[i].name, COMMANDS[i].summary);
		if (n < 0 || (size_t)n >= sizeof(list) - used)
			break;
		used += (size_t)n;
	}
	fprintf(f, USAGE, list);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *verb = argv[1];
	if (cli_is_help(verb) || !strcmp(verb, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(verb, "--version"))
		verb = "version";
	for (size_t i = 0; i < SC_ARRAY_LEN(COMMANDS); i++)
		if (!strcmp(COMMANDS[i].name, verb))
			return COMMANDS[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (run 'sandcell --help' for the list)", verb);
	return CLI_EXIT_USAGE;
}

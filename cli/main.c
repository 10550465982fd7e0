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

/* sandcell policy show NAME | policy check FILE */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char USAGE[] =
	"usage: sandcell policy show NAME\n"
	"       sandcell policy check FILE\n"
	"\n"
	"  show NAME    print a built-in profile as JSON (valid input for --policy)\n"
	"  check FILE   validate a policy file (or a built-in NAME), compile its\n"
	"               seccomp filter, and print the effective policy as JSON;\n"
	"               an invalid policy prints one line and exits 125\n"
	"\n"
	"Built-in profiles:\n";

static void list_builtins(FILE *f)
{
	const char *name;
	for (size_t i = 0; (name = policy_builtin_name(i)); i++) {
		const char *json = policy_builtin_json(name);
		struct policy p;
		struct sc_err err = {0};
		if (policy_parse(json, strlen(json), name, &p, &err) == 0) {
			fprintf(f, "  %-10s %s\n", name, p.description ? p.description : "");
			policy_free(&p);
		}
	}
}

static void usage(FILE *f)
{
	fputs(USAGE, f);
	list_builtins(f);
	fputs("\nThe policy format is described in docs/policy.md.\n", f);
}

static bool is_help(const char *s) { return cli_is_help(s) || !strcmp(s, "help"); }

/* 'policy VERB ARG': -1 to go on with argv[1], else the exit status (0
 * after the help). */
static int one_operand(int argc, char **argv, const char *verb, const char *what)
{
	if (argc == 2 && is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	if (argc != 2) {
		cli_error("policy %s: expected one %s (see 'sandcell policy --help')", verb, what);
		return CLI_EXIT_USAGE;
	}
	return -1;
}

static int policy_show(int argc, char **argv)
{
	int done = one_operand(argc, argv, "show", "profile name");
	if (done >= 0)
		return done;
	const char *json = policy_builtin_json(argv[1]);
	if (!json) {
		char list[128] = "";
		const char *name;
		size_t o = 0;
		for (size_t i = 0; (name = policy_builtin_name(i)) && o < sizeof(list); i++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
					      name);
		cli_error("policy show: no built-in profile named '%s' (built-in: %s)", argv[1],
			  list);
		return CLI_EXIT_USAGE;
	}
	fputs(json, stdout);
	return fflush(stdout) == 0 ? 0 : CLI_EXIT_USAGE;
}

static int policy_check(int argc, char **argv)
{
	int done = one_operand(argc, argv, "check", "policy file");
	if (done >= 0)
		return done;
	struct policy p;
	struct policy_filter f;
	struct sc_err err = {0};
	if (policy_load(argv[1], &p, &err) < 0)
		return cli_fail(&err);
	/* A policy is valid only if its filter compiles and verifies. */
	if (policy_compile_filter(&p, NULL, &f, &err) < 0) {
		policy_free(&p);
		return cli_fail(&err);
	}
	policy_filter_free(&f);
	char *json = policy_to_json(&p);
	policy_free(&p);
	if (!json) {
		cli_error("policy check: out of memory");
		return CLI_EXIT_USAGE;
	}
	fputs(json, stdout);
	free(json);
	return fflush(stdout) == 0 ? 0 : CLI_EXIT_USAGE;
}

int cmd_policy(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	static const struct cli_subcommand subs[] = {{"show", policy_show}, {"check", policy_check}};
	return cli_run_subcommand("policy", subs, SC_ARRAY_LEN(subs), argc, argv);
}

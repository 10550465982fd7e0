/* One option parser for every command: a table (struct cli_option) holds
 * each option's names, value type, where the value goes and its help
 * line; the parser and the --help text both come from it. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../common/parse.h"
#include "cli.h"

const char *cli_option_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		cli_error("%s needs a value", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

int cli_parse_count(const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	if (sc_parse_uint(v, min, max, out) < 0) {
		cli_error("%s: expected a number from %llu to %llu, got '%.64s'", name,
			  (unsigned long long)min, (unsigned long long)max, v);
		return -1;
	}
	return 0;
}

static bool matches(const struct cli_option *o, const char *arg)
{
	if ((o->name && !strcmp(arg, o->name)) || (o->alias && !strcmp(arg, o->alias)))
		return true;
	/* "--name=..." where the table says so (an option refused in any form) */
	size_t n = o->name ? strlen(o->name) : 0;
	return o->eq_form && n && !strncmp(arg, o->name, n) && arg[n] == '=';
}

static void store_uint(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint32_t)) {
		uint32_t x = (uint32_t)v;
		memcpy(field, &x, sizeof(x));
	} else {
		memcpy(field, &v, sizeof(v));
	}
}

static int apply(const struct cli_option *o, void *target, const char *arg, const char *v)
{
	void *field = (char *)target + o->offset;
	uint64_t n;
	switch (o->type) {
	case CLI_FLAG:
		*(bool *)field = true;
		return 0;
	case CLI_STRING:
		*(const char **)field = v;
		return 0;
	case CLI_COUNT:
		if (cli_parse_count(arg, v, o->min, o->max, &n) < 0)
			return -1;
		store_uint(field, o->size, n);
		return 0;
	case CLI_SIZE:
		if (sc_parse_size(v, &n) < 0 || n == 0) {
			cli_error("%s: expected a size like 512M, got '%.64s'", arg, v);
			return -1;
		}
		*(uint64_t *)field = n;
		return 0;
	case CLI_SECONDS:
		if (sc_parse_seconds(v, (double *)field) < 0) {
			cli_error("%s: expected seconds like 30 or 0.5, got '%.64s'", arg, v);
			return -1;
		}
		return 0;
	case CLI_CUSTOM:
	case CLI_CUSTOM_FLAG:
		return o->parse(target, arg, v);
	case CLI_HELP:
		return 0;
	}
	return -1;
}

static bool takes_value(const struct cli_option *o)
{
	return o->type != CLI_FLAG && o->type != CLI_CUSTOM_FLAG && o->type != CLI_HELP;
}

int cli_parse_option(const struct cli_option *table, void *target, int argc, char **argv, int *i)
{
	const char *arg = argv[*i], *v = NULL;
	for (const struct cli_option *o = table; o->name || o->alias; o++) {
		if (!matches(o, arg))
			continue;
		if (takes_value(o) && !(v = cli_option_value(argc, argv, i)))
			return -1;
		return apply(o, target, arg, v) < 0 ? -1 : 1;
	}
	return 0;
}

int cli_parse_options(const struct cli_table *tables, size_t n, int argc, char **argv, int *i)
{
	for (size_t k = 0; k < n; k++) {
		int r = cli_parse_option(tables[k].options, tables[k].target, argc, argv, i);
		if (r != 0)
			return r;
	}
	return 0;
}

char *cli_options_help(const struct cli_option *table, int width)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	for (const struct cli_option *o = table; o->name || o->alias; o++) {
		if (!o->help)
			continue;
		char left[128];
		if (o->usage)
			snprintf(left, sizeof(left), "%s", o->usage);
		else
			snprintf(left, sizeof(left), "%s%s%s", o->name ? o->name : o->alias,
				 o->metavar ? " " : "", o->metavar ? o->metavar : "");
		/* a name too long for the column gets a line of its own */
		if ((int)strlen(left) >= width)
			fprintf(f, "  %s\n  %-*s", left, width, "");
		else
			fprintf(f, "  %-*s", width, left);
		/* continuation lines line up under the first */
		for (const char *p = o->help; *p; p++) {
			fputc(*p, f);
			if (*p == '\n')
				fprintf(f, "  %-*s", width, "");
		}
		fputc('\n', f);
	}
	if (ferror(f) | fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

static void print_command_help(const struct cli_command *c)
{
	if (c->print_help) {
		c->print_help();
		return;
	}
	char *h[3] = {NULL, NULL, NULL};
	for (size_t k = 0; k < c->ntables && k < SC_ARRAY_LEN(h); k++)
		h[k] = cli_options_help(c->tables[k].options,
					c->tables[k].help_width ? c->tables[k].help_width : 22);
	printf(c->help, h[0] ? h[0] : "", h[1] ? h[1] : "", h[2] ? h[2] : "");
	for (size_t k = 0; k < SC_ARRAY_LEN(h); k++)
		free(h[k]);
}

/* argv[*i] as an option of c: 1 taken (*i past its value), 0 an operand,
 * 2 the help printed, -1 an error printed. */
static int take_option(const struct cli_command *c, int argc, char **argv, int *i)
{
	const char *arg = argv[*i];
	if (cli_is_help(arg)) {
		print_command_help(c);
		return 2;
	}
	int r = cli_parse_options(c->tables, c->ntables, argc, argv, i);
	if (r != 0)
		return r;
	bool stdin_dash = !strcmp(arg, "-") && (c->flags & CLI_DASH_OPERAND);
	if (arg[0] == '-' && !stdin_dash) {
		cli_error("%s: unknown option '%.64s' (see 'sandcell %s --help')", c->name, arg,
			  c->see ? c->see : c->name);
		return -1;
	}
	return 0;
}

int cli_parse_args(const struct cli_command *c, int argc, char **argv, int *noperands, int *rest)
{
	int n = 0;
	bool only_operands = false;
	if (rest)
		*rest = argc;
	for (int i = 1; i < argc; i++) {
		if (!only_operands && (c->flags & CLI_DASHDASH) && !strcmp(argv[i], "--")) {
			if (c->flags & CLI_REST) {
				*rest = i + 1;
				break;
			}
			if (i + 1 >= argc) {
				cli_error("%s: nothing after '--' (see 'sandcell %s --help')", c->name,
					  c->see ? c->see : c->name);
				return CLI_EXIT_USAGE;
			}
			only_operands = true;
			continue;
		}
		int r = only_operands ? 0 : take_option(c, argc, argv, &i);
		if (r == 2)
			return 0;
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r == 1)
			continue;
		if (n < c->max_operands) {
			c->operands[n++] = argv[i];
			continue;
		}
		if (c->flags & CLI_REST) {
			*rest = i;
			break;
		}
		cli_error("%s: unexpected argument '%.64s' (see 'sandcell %s --help')", c->name, argv[i],
			  c->see ? c->see : c->name);
		return CLI_EXIT_USAGE;
	}
	*noperands = n;
	return -1;
}

bool cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

int cli_run_subcommand(const char *what, const struct cli_subcommand *subs, size_t n, int argc,
		       char **argv)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(argv[1], subs[i].name))
			return subs[i].run(argc - 1, argv + 1);
	cli_error("%s: unknown subcommand '%.64s' (see 'sandcell %s --help')", what, argv[1], what);
	return CLI_EXIT_USAGE;
}

struct plain_args {
	bool json;
};

int cli_parse_root(void *t, const char *opt, const char *v)
{
	(void)t, (void)opt;
	if (v[0] != '/') {
		cli_error("--root: expected an absolute path, got '%.64s'", v);
		return -1;
	}
	cell_set_root(v);
	return 0;
}

static const struct cli_option PLAIN_ROOT_OPTIONS[] = {CLI_ROOT_OPTION, {0}};
static const struct cli_option PLAIN_JSON_OPTIONS[] = {
	{"--json", NULL, CLI_FLAG, CLI_FIELD(struct plain_args, json)},
	{0},
};

int cli_plain_args(int argc, char **argv, const char *what, const char *help, bool *json)
{
	struct plain_args a = {0};
	const struct cli_table tables[] = {{PLAIN_ROOT_OPTIONS, NULL, 0}, {PLAIN_JSON_OPTIONS, &a, 0}};
	/* help names its options itself (and, a printf format, has no %) */
	const struct cli_command cmd = {.name = what, .help = help, .tables = tables,
					.ntables = json ? 2 : 1};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (json)
		*json = a.json;
	return done;
}

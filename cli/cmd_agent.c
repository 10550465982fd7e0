/* sandcell agent: parse options, run one episode (agent/), print the answer. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#include "../agent/agent.h"
#include "../agent/promptcfg.h"
#include "../common/parse.h"
#include "cli.h"

#define AGENT_EXIT_ERROR 1
#define AGENT_EXIT_UNFINISHED 2

#define AGENT_DEFAULT_MEMORY (4ULL << 30)
#define AGENT_DEFAULT_PIDS 512
#define AGENT_DEFAULT_DISK (2ULL << 30)

static const char USAGE[] =
	"usage: sandcell agent [OPTIONS] PROBLEM\n"
	"\n"
	"Let a model solve PROBLEM (text, '-' for stdin, or @FILE) in a fresh cell with\n"
	"three tools: execute_bash, str_replace_editor and submit. Prints the answer the\n"
	"model wrote to /testbed/answer.txt; the run is recorded in --out.\n"
	"\n"
	"Model:\n"
	"%s"
	"\n"
	"Episode:\n"
	"%s"
	"\n"
	"Cell (network none unless --allow-net):\n"
	"%s"
	"\n"
	"Exit status: 0 submitted, 1 error (model API or cell), 2 ended without submit\n"
	"(max steps or episode timeout), 125 bad options or no cell.\n";

static char *read_problem_fd(int fd, const char *what)
{
	char *buf = NULL;
	size_t len = 0;
	struct sc_err err = {0};
	if (sc_read_small_alloc_fd(fd, what, 0, AGENT_MAX_PROBLEM, &buf, &len, &err) < 0) {
		if (err.errnum == EFBIG)
			cli_error("%s: the problem is longer than %u bytes", what, AGENT_MAX_PROBLEM);
		else
			cli_error("%s", err.msg);
		return NULL;
	}
	if (strlen(buf) != len) {
		cli_error("%s: the problem contains NUL bytes", what);
		free(buf);
		return NULL;
	}
	return buf;
}

static char *load_problem(const char *arg)
{
	if (!strcmp(arg, "-"))
		return read_problem_fd(0, "stdin");
	if (arg[0] == '@') {
		_cleanup_fd_ int fd = open(arg + 1, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			cli_error("cannot open problem file %s: %s", arg + 1, strerror(errno));
			return NULL;
		}
		return read_problem_fd(fd, arg + 1);
	}
	return strdup(arg);
}

static void print_json(const struct agent_result *res)
{
	printf("{\"status\":");
	cli_json_string(stdout, agent_status_name(res->status), strlen(agent_status_name(res->status)));
	printf(",\"answer\":");
	if (res->answer)
		cli_json_string(stdout, res->answer, res->answer_len);
	else
		printf("null");
	printf(",\"steps\":%u,\"out_dir\":", res->steps);
	cli_json_string(stdout, res->out_dir, strlen(res->out_dir));
	if (res->cell_name[0]) {
		printf(",\"cell\":");
		cli_json_string(stdout, res->cell_name, strlen(res->cell_name));
	}
	printf(",\"input_tokens\":%llu,\"output_tokens\":%llu,\"wall_s\":%.3f",
	       (unsigned long long)res->input_tokens, (unsigned long long)res->output_tokens,
	       res->wall_s);
	if (res->answer_error[0]) {
		printf(",\"answer_error\":");
		cli_json_string(stdout, res->answer_error, strlen(res->answer_error));
	}
	if (res->files_truncated) {
		printf(",\"files_truncated\":true,\"files_note\":");
		cli_json_string(stdout, res->files_note, strlen(res->files_note));
	}
	if (res->status == AGENT_ERROR) {
		printf(",\"error\":");
		cli_json_string(stdout, res->error, strlen(res->error));
	}
	printf("}\n");
}

/* The first SIGINT/SIGTERM/SIGHUP ends the episode after the step in
 * flight (the answer is collected, the cell removed); SA_RESETHAND lets a
 * second one kill at once. */
static atomic_bool interrupted;

static void on_signal(int sig)
{
	static const char msg[] = "sandcell: agent: interrupted; finishing the current step "
				  "(again to quit now, leaving the cell for 'sandcell rm')\n";
	(void)sig;
	if (!atomic_exchange(&interrupted, true))
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

static int run_episode(struct agent_config *cfg, struct agent_result *res, struct sc_err *err)
{
	struct cli_log log = {0};
	cfg->log = cli_log_sink(&log);
	cfg->cancel = &interrupted;
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND}, old_int,
			 old_term, old_hup;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	int rc = agent_run(cfg, res, err);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	return rc;
}

struct agent_args {
	struct agent_config cfg;
	struct cli_cell_opts opts;
	const char *key_env;
	const char *problem_arg;
	const char *query; /* --query TEXT: the problem as it is */
	bool json;
};

static int parse_api(void *t, const char *o, const char *v)
{
	struct agent_args *a = t;
	if (!strcmp(v, "openai"))
		a->cfg.api = AGENT_API_OPENAI;
	else if (!strcmp(v, "anthropic"))
		a->cfg.api = AGENT_API_ANTHROPIC;
	else {
		cli_error("--api: expected openai or anthropic, got '%.64s'", v);
		return -1;
	}
	return 0;
}

static int parse_base_url(void *t, const char *o, const char *v)
{
	struct agent_args *a = t;
	if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) {
		cli_error("--base-url: expected an http:// or https:// URL, got '%.200s'", v);
		return -1;
	}
	a->cfg.base_url = v;
	return 0;
}

static int refuse_api_key(void *t, const char *o, const char *v)
{
	cli_error("--api-key: keys are not taken on the command line (they would show in ps); "
		  "put it in OPENAI_API_KEY / ANTHROPIC_API_KEY or name a variable with "
		  "--api-key-env");
	return -1;
}

static int refuse_llm_api_key(void *t, const char *o, const char *v)
{
	cli_error("--api_key: keys are not taken on the command line (they would show in ps); "
		  "put it in LLM_API_KEY (or OPENAI_API_KEY)");
	return -1;
}

/* --prompt-config FILE: loaded at once (one line naming what is wrong);
 * the config lives until the process ends, cli_agent_prompts_free. */
static int parse_prompt_config(void *t, const char *o, const char *v)
{
	struct agent_args *a = t;
	struct agent_prompt_config *pc = calloc(1, sizeof(*pc));
	struct sc_err err = {0};
	if (!pc) {
		cli_error("%s: out of memory", o);
		return -1;
	}
	if (agent_prompt_config_load(v, pc, &err) < 0) {
		cli_error("%s: %s", o, err.msg);
		free(pc);
		return -1;
	}
	cli_agent_prompts_free(&a->cfg);
	a->cfg.prompts = pc;
	return 0;
}

static int parse_temperature(void *t, const char *o, const char *v)
{
	struct agent_args *a = t;
	char *end;
	double x = strtod(v, &end);
	if (*end || !isfinite(x) || x < 0 || x > 2) {
		cli_error("--temperature: expected a number from 0 to 2, got '%.64s'", v);
		return -1;
	}
	a->cfg.temperature = x;
	return 0;
}

static int parse_input(void *t, const char *o, const char *v)
{
	struct agent_args *a = t;
	struct stat st;
	if (stat(v, &st) < 0 || !S_ISDIR(st.st_mode)) {
		cli_error("--input %.200s: not a directory", v);
		return -1;
	}
	a->cfg.input_dir = v;
	return 0;
}

static int parse_files_limit(void *t, const char *o, const char *v)
{
	struct agent_args *a = t;
	if (sc_parse_size(v, &a->cfg.files_limit) < 0) {
		cli_error("--files-limit: expected a size like 256M, got '%.64s'", v);
		return -1;
	}
	return 0;
}

#define AA(member) CLI_FIELD(struct agent_args, member)

static const struct cli_option MODEL_OPTIONS[] = {
	{"--api", NULL, CLI_CUSTOM, .parse = parse_api, .metavar = "openai|anthropic",
	 .help = "wire format (default openai: chat completions with tools)"},
	{"--base-url", "--llm_base_url", CLI_CUSTOM, .parse = parse_base_url, .metavar = "URL",
	 .help = "default $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the\nprovider's public URL"},
	{"--model", "--llm_name", CLI_STRING, AA(cfg.model), .metavar = "NAME",
	 .help = "model name (required)"},
	{"--api-key-env", NULL, CLI_STRING, AA(key_env), .metavar = "VAR",
	 .help = "read the API key from $VAR (default OPENAI_API_KEY or\nANTHROPIC_API_KEY); keys "
		 "are never taken on the command line"},
	{"--api-key", NULL, CLI_CUSTOM_FLAG, .parse = refuse_api_key, .eq_form = true},
	{"--api_key", NULL, CLI_CUSTOM_FLAG, .parse = refuse_llm_api_key, .eq_form = true},
	{"--temperature", NULL, CLI_CUSTOM, .parse = parse_temperature, .metavar = "T",
	 .help = "sampling temperature (default: the server's)"},
	{"--max-tokens", NULL, CLI_COUNT, AA(cfg.max_tokens), .min = 1, .max = 10000000,
	 .metavar = "N", .help = "completion tokens per reply (Anthropic default 4096)"},
	{"--extra-body", "--extra_body", CLI_STRING, AA(cfg.extra_body), .metavar = "JSON",
	 .help = "object merged into every request (e.g. vLLM options)"},
	{"--request-timeout", NULL, CLI_SECONDS, AA(cfg.request_timeout_s), .metavar = "S",
	 .help = "per model request (default 600)"},
	{"--max-attempts", NULL, CLI_COUNT, AA(cfg.attempts), .min = 1, .max = 100,
	 .metavar = "N", .help = "tries per request on 429/5xx/connection errors (default 5)"},
	{"--retry-base-ms", NULL, CLI_COUNT, AA(cfg.retry_base_ms), .min = 0, .max = 600000,
	 .metavar = "MS", .help = "first backoff delay, doubled each retry (default 1000)"},
	{0},
};

static const struct cli_option EPISODE_OPTIONS[] = {
	{"--max-steps", "--max_steps", CLI_COUNT, AA(cfg.max_steps), .min = 1, .max = 100000,
	 .metavar = "N", .help = "model turns (default 100)"},
	{"--command-timeout", NULL, CLI_SECONDS, AA(cfg.command_timeout_s), .metavar = "S",
	 .help = "per tool command (default 120)"},
	{"--episode-timeout", NULL, CLI_SECONDS, AA(cfg.episode_timeout_s), .metavar = "S",
	 .help = "whole episode (default 1800)"},
	{"--input", "--input_dir", CLI_CUSTOM, .parse = parse_input, .metavar = "DIR",
	 .help = "copied to /testbed/documents before the first step"},
	{"--out", "--output_dir", CLI_STRING, AA(cfg.out_dir), .metavar = "DIR",
	 .help = "output directory (default runs/<timestamp>-<id>)"},
	{"--prompt-config", "--prompt_config", CLI_CUSTOM, .parse = parse_prompt_config,
	 .metavar = "FILE",
	 .help = "the reference harness's YAML prompts (system_prompt,\ninstance_prompt, "
		 "working_dir, input_dir, output_dir)"},
	{"--query", NULL, CLI_STRING, AA(query), .metavar = "TEXT",
	 .help = "the problem as it is (instead of PROBLEM)"},
	{"--files-limit", NULL, CLI_CUSTOM, .parse = parse_files_limit, .metavar = "SIZE",
	 .help = "bytes copied out of /testbed/output (default 256M)"},
	{"--keep", NULL, CLI_FLAG, AA(cfg.keep),
	 .help = "keep the cell running and print its name on stderr"},
	{"--json", NULL, CLI_FLAG, AA(json),
	 .help = "print one JSON result object instead of the answer"},
	{"--quiet", "-q", CLI_FLAG, AA(cfg.quiet), .usage = "-q, --quiet",
	 .help = "no progress lines on stderr"},
	{0},
};

#define HELP_WIDTH 25

/* Returns 1 when consumed, 0 when unknown, -1 on a bad value. */
static int parse_agent_opt(struct agent_args *a, int argc, char **argv, int *i)
{
	const struct cli_table tables[] = {{MODEL_OPTIONS, a, 0}, {EPISODE_OPTIONS, a, 0}};
	return cli_parse_options(tables, SC_ARRAY_LEN(tables), argc, argv, i);
}

/* The cell options' help with the agent's own defaults (those of
 * cli_agent_cell_defaults) in place of run's, so that help names one
 * default per option. */
static char *agent_cell_help(void)
{
	static const struct {
		const char *name, *help;
	} agent_defaults[] = {
		{"--memory", "memory limit, 4M to 16T, e.g. 512M (default 4G;\n0 = unlimited)"},
		{"--pids", "process limit, 1 to 4194304 (default 512; 0 = unlimited)"},
		{"--disk", "size of the writable layer, 1M to 16T (default 2G)"},
	};
	size_t n = 0;
	while (CLI_CELL_OPTIONS[n].name || CLI_CELL_OPTIONS[n].alias)
		n++;
	_cleanup_free_ struct cli_option *t = calloc(n + 1, sizeof(*t));
	if (!t)
		return NULL;
	memcpy(t, CLI_CELL_OPTIONS, n * sizeof(*t));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < SC_ARRAY_LEN(agent_defaults); k++)
			if (t[i].name && !strcmp(t[i].name, agent_defaults[k].name))
				t[i].help = agent_defaults[k].help;
	return cli_options_help(t, 22);
}

static void print_usage(void)
{
	_cleanup_free_ char *model = cli_options_help(MODEL_OPTIONS, HELP_WIDTH);
	_cleanup_free_ char *episode = cli_options_help(EPISODE_OPTIONS, HELP_WIDTH);
	_cleanup_free_ char *cell = agent_cell_help();
	printf(USAGE, model ? model : "", episode ? episode : "", cell ? cell : cli_cell_opts_help());
}

static int parse_args(struct agent_args *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (cli_is_help(o)) {
			print_usage();
			return 1;
		}
		int r = parse_agent_opt(a, argc, argv, &i);
		if (r == 0)
			r = cli_cell_opts_parse(&a->opts, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		if (!strcmp(o, "--")) {
			if (i + 1 < argc)
				o = argv[++i];
			else
				o = NULL;
		} else if (o[0] == '-' && o[1]) {
			cli_error("agent: unknown option '%s' (see 'sandcell agent --help')", o);
			return -1;
		}
		if (!o || a->problem_arg || i + 1 < argc) {
			cli_error("agent: expected exactly one PROBLEM argument (text, '-' or @FILE) "
				  "after the options");
			return -1;
		}
		a->problem_arg = o;
	}
	if (a->query && a->problem_arg) {
		cli_error("agent: give either --query or a PROBLEM argument, not both");
		return -1;
	}
	if (!a->problem_arg && !a->query) {
		cli_error("agent: no PROBLEM given (text, '-' for stdin, or @FILE)");
		return -1;
	}
	return 0;
}

/* The agent's cell defaults, where neither the command line nor the policy
 * set a limit. */
void cli_agent_cell_defaults(const struct cli_cell_opts *o, struct cli_cell *c)
{
	const struct policy_limits *cli = &o->overrides.limits, *pl = &c->pol.limits;
	struct cell_spec *spec = &c->spec;
#ifndef __SANITIZE_ADDRESS__
	/* (An ASan build reserves terabytes of address space: where the
	 * runtime falls back to RLIMIT_AS for memory, a default limit would
	 * stop every cell from starting.) */
	if (!cli->memory && !pl->memory)
		spec->limits.memory = AGENT_DEFAULT_MEMORY;
#endif
	if (!cli->pids && !pl->pids)
		spec->limits.pids = AGENT_DEFAULT_PIDS;
	if (!cli->disk && !pl->disk)
		spec->limits.disk = AGENT_DEFAULT_DISK;
}

static void agent_args_free(struct agent_args *a)
{
	cli_cell_opts_free(&a->opts);
}

int cmd_agent(int argc, char **argv)
{
	__attribute__((cleanup(agent_args_free))) struct agent_args a = {0};
	agent_config_init(&a.cfg);
	int r = parse_args(&a, argc, argv);
	if (r != 0)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
	struct agent_config *cfg = &a.cfg;
	cli_agent_llm_env(cfg);
	if (!cfg->model) {
		cli_error("agent: --model NAME is required");
		cli_agent_prompts_free(cfg);
		return CLI_EXIT_USAGE;
	}
	if (cli_agent_endpoint(cfg, a.key_env) < 0 || cli_agent_llm_temperature(cfg) < 0) {
		cli_agent_prompts_free(cfg);
		return CLI_EXIT_USAGE;
	}
	_cleanup_free_ char *problem = a.query ? strdup(a.query) : load_problem(a.problem_arg);
	if (!problem) {
		cli_agent_prompts_free(cfg);
		return CLI_EXIT_USAGE;
	}
	cfg->problem = problem;

	_cleanup_cli_cell_ struct cli_cell cell;
	if (cli_cell_build(&cell, &a.opts) < 0) {
		cli_agent_prompts_free(cfg);
		return CLI_EXIT_USAGE;
	}
	cli_agent_cell_defaults(&a.opts, &cell);
	cfg->spec = &cell.spec;

	struct agent_result res;
	struct sc_err err = {0};
	int rc = run_episode(cfg, &res, &err);
	int exit_code;
	if (rc < 0) {
		cli_fail(&err);
		exit_code = CLI_EXIT_USAGE;
	} else {
		if (a.json)
			print_json(&res);
		else if (res.answer) {
			/* the model's text: escaped when it would reach a terminal */
			if (isatty(STDOUT_FILENO))
				cli_put_safe(stdout, res.answer, res.answer_len);
			else
				fwrite(res.answer, 1, res.answer_len, stdout);
			if (res.answer_len && res.answer[res.answer_len - 1] != '\n')
				putchar('\n');
		}
		if (res.status == AGENT_ERROR)
			cli_error("agent: %s (run recorded in %s)", res.error, res.out_dir);
		else if (!cfg->quiet)
			cli_error("agent: %s after %u steps; run recorded in %s",
				  agent_status_name(res.status), res.steps, res.out_dir);
		if (res.cell_name[0])
			fprintf(stderr, "sandcell: agent: kept cell %s\n", res.cell_name);
		exit_code = res.status == AGENT_SUBMITTED ? 0
			    : res.status == AGENT_ERROR   ? AGENT_EXIT_ERROR
							  : AGENT_EXIT_UNFINISHED;
	}
	fflush(stdout);
	agent_result_free(&res);
	cli_agent_prompts_free(cfg);
	return exit_code;
}

/* ---- shared with sandcell batch (cli/cmd_batch.c) ---- */

int cli_agent_opt(struct agent_config *cfg, const char **key_env, int argc, char **argv, int *i)
{
	struct agent_args a = {.cfg = *cfg, .key_env = *key_env};
	int r = parse_agent_opt(&a, argc, argv, i);
	*cfg = a.cfg;
	*key_env = a.key_env;
	if (r > 0 && a.query) {
		cli_error("batch: --query does not apply (the problems come from the task file or "
			  "--benchmark)");
		return -1;
	}
	return r;
}

int cli_agent_endpoint(struct agent_config *cfg, const char *key_env)
{
	bool anthropic = cfg->api == AGENT_API_ANTHROPIC;
	if (!cfg->base_url) {
		const char *env = getenv(anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL");
		if (env && *env)
			cfg->base_url = env;
	}
	const char *var = key_env ? key_env : anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
	cfg->api_key = getenv(var);
	if (!key_env && (!cfg->api_key || !*cfg->api_key))
		cfg->api_key = getenv("LLM_API_KEY"); /* the reference harness's */
	if (key_env && (!cfg->api_key || !*cfg->api_key)) {
		cli_error("--api-key-env %s: the variable is not set", key_env);
		return -1;
	}
	return 0;
}

/* The reference harness's environment, where nothing else set a value:
 * $LLM_NAME, $LLM_BASE_URL (after $OPENAI_BASE_URL, in cli_agent_endpoint's
 * order), $LLM_TEMPERATURE. */
void cli_agent_llm_env(struct agent_config *cfg)
{
	const char *v = getenv("LLM_NAME");
	if (!cfg->model && v && *v)
		cfg->model = v;
	v = getenv("LLM_BASE_URL");
	const char *std = getenv(cfg->api == AGENT_API_ANTHROPIC ? "ANTHROPIC_BASE_URL"
								 : "OPENAI_BASE_URL");
	if (!cfg->base_url && (!std || !*std) && v && *v)
		cfg->base_url = v;
}

int cli_agent_llm_temperature(struct agent_config *cfg)
{
	const char *v = getenv("LLM_TEMPERATURE");
	if (cfg->temperature >= 0 || !v || !*v)
		return 0;
	struct agent_args a = {.cfg = *cfg};
	if (parse_temperature(&a, "LLM_TEMPERATURE", v) < 0)
		return -1;
	cfg->temperature = a.cfg.temperature;
	return 0;
}

void cli_agent_prompts_free(struct agent_config *cfg)
{
	struct agent_prompt_config *pc = (struct agent_prompt_config *)cfg->prompts;
	if (pc) {
		agent_prompt_config_free(pc);
		free(pc);
	}
	cfg->prompts = NULL;
}

/* sandcell batch: parse options and hand over to batch/batch.h; summarize
 * and export read finished runs. */
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>

#include "../agent/promptcfg.h"
#include "../batch/batch.h"
#include "../common/parse.h"
#include "cli.h"

static const char USAGE[] =
	"usage: sandcell batch TASKS.jsonl [OPTIONS]\n"
	"       sandcell batch --benchmark DIR [--data FILE] [OPTIONS]\n"
	"       sandcell batch --swe FILE.jsonl [--swe-image TEMPLATE] [OPTIONS]\n"
	"       sandcell batch summarize [--json] DIR...\n"
	"       sandcell batch export [--format sft|rl|predictions] [-o FILE] DIR...\n"
	"       sandcell batch report [-o FILE.html] [OPTIONS] DIR...\n"
	"\n"
	"Run every task of TASKS.jsonl (one JSON object a line: {\"id\", \"problem\",\n"
	"\"input_dir\"?, \"answer\"?, \"scorer\"?, \"image\"?, \"setup\"?, \"metadata\"?};\n"
	"see docs/batch.md)\n"
	"as agent episodes, score each attempt and append one line per attempt to\n"
	"DIR/results.jsonl.\n"
	"Rerunning the same command resumes: attempts that have a result are skipped.\n"
	"--benchmark runs a benchmark folder of the LLM-in-Sandbox harness instead\n"
	"(config.yaml, reward.py, vanilla_llm_prompt.py; see docs/lis.md).\n"
	"--swe runs rows of SWE-bench's format, each in its image, and resolves a task\n"
	"when its FAIL_TO_PASS and PASS_TO_PASS tests pass on the model's patch\n"
	"(see docs/batch.md).\n"
	"A task's \"setup\" (a command, or {\"command\", \"files\", \"timeout\"}) runs once\n"
	"per group of --group-size G attempts (default 1), which run in forks of the\n"
	"set-up cell: with --group-size 8, `pip install` runs once for 8 attempts.\n"
	"e.g. sandcell batch tasks.jsonl --model M --group-size 8 --repeat 16\n"
	"\n"
	"Batch:\n"
	"%s"
	"\n"
	"Every `sandcell agent` option applies (model, episode and cell options; --input is\n"
	"the default input_dir); see 'sandcell agent --help'.\n"
	"\n"
	"Exit status: 0 every attempt has a result and none ended in error, 1 some ended in\n"
	"error (rerun with --retry-errors), 130 interrupted (rerun to resume), 125 bad\n"
	"options or nothing could run.\n";

struct batch_args {
	struct batch_options o;
	struct cli_cell_opts cell;
	const char *key_env;
	const char *shard;
	const char *data; /* --data */
	const char *swe;  /* --swe */
	uint64_t shards;
	bool shard_given;
	bool json;
};

static int parse_pull(void *t, const char *opt, const char *v)
{
	(void)opt;
	return cli_parse_pull(v, &((struct batch_args *)t)->o.pull);
}

static int parse_mode(void *t, const char *opt, const char *v)
{
	struct batch_args *a = t;
	/* llm-in-sandbox and llm: the reference harness's names */
	if (!strcmp(v, "sandbox") || !strcmp(v, "llm-in-sandbox"))
		a->o.mode = BATCH_SANDBOX;
	else if (!strcmp(v, "vanilla") || !strcmp(v, "llm"))
		a->o.mode = BATCH_VANILLA;
	else {
		cli_error("--mode: expected sandbox or vanilla, got '%.64s'", v);
		return -1;
	}
	return 0;
}

static int parse_shard(void *t, const char *opt, const char *v)
{
	struct batch_args *a = t;
	if (batch_shard_parse(v, &a->o.shard_index, &a->o.shard_count) < 0) {
		cli_error("--shard: expected I/N with 0 <= I < N, got '%.64s'", v);
		return -1;
	}
	a->shard_given = true;
	return 0;
}

static int parse_scorer(void *t, const char *opt, const char *v)
{
	struct batch_args *a = t;
	if (batch_scorer_kind_parse(v, &a->o.scorer.kind) < 0) {
		cli_error("--scorer: expected exact, numeric, choice, boxed, contains or command, "
			  "got '%.64s'", v);
		return -1;
	}
	return 0;
}

static int parse_tolerance(void *t, const char *opt, const char *v)
{
	struct batch_args *a = t;
	char *end;
	double x = strtod(v, &end);
	if (*end || end == v || !(x >= 0) || x > 1) {
		cli_error("--tolerance: expected a number from 0 to 1, got '%.64s'", v);
		return -1;
	}
	a->o.scorer.tolerance = x;
	return 0;
}

static int parse_checker_dir(void *t, const char *opt, const char *v)
{
	struct batch_args *a = t;
	struct stat st;
	if (stat(v, &st) < 0 || !S_ISDIR(st.st_mode)) {
		cli_error("--checker-dir %.200s: not a directory", v);
		return -1;
	}
	a->o.scorer.files = v;
	return 0;
}

static int parse_checker_timeout(void *t, const char *opt, const char *v)
{
	struct batch_args *a = t;
	if (sc_parse_seconds(v, &a->o.scorer.timeout_s) < 0 || a->o.scorer.timeout_s <= 0) {
		cli_error("--checker-timeout: expected seconds, got '%.64s'", v);
		return -1;
	}
	return 0;
}

static int refuse_keep(void *t, const char *opt, const char *v)
{
	cli_error("batch: --keep does not apply (cells come from a pool and are removed); run "
		  "one task with 'sandcell agent --keep' to look into its cell");
	return -1;
}

#define BA(member) CLI_FIELD(struct batch_args, member)

static const struct cli_option BATCH_OPTIONS[] = {
	{"--out", NULL, CLI_STRING, BA(o.out_dir), .metavar = "DIR",
	 .help = "run directory (default runs/batch-<TASKS name>)"},
	{"--benchmark", NULL, CLI_STRING, BA(o.benchmark), .metavar = "DIR",
	 .help = "a benchmark folder: DIR/config.yaml's prompts and data,\nscored by "
		 "DIR/reward.py's compute_score in a fresh cell"},
	{"--swe", NULL, CLI_STRING, BA(swe), .metavar = "FILE",
	 .help = "SWE-bench rows (JSONL: instance_id, problem_statement,\nimage, test_patch, "
		 "FAIL_TO_PASS, PASS_TO_PASS, eval_script?):\nthe model's patch is saved as "
		 "patch.diff and scored by\nthe tests in a fresh cell of the task's image"},
	{"--swe-image", NULL, CLI_STRING, BA(o.swe_image), .metavar = "TEMPLATE",
	 .help = "--swe: the image of a row that names none, with\n{instance_id} or {swebench_id} "
		 "(SWE-bench's own image\nnames: swebench/sweb.eval.x86_64.{swebench_id})"},
	{"--data", NULL, CLI_STRING, BA(data), .metavar = "FILE",
	 .help = "--benchmark: the problems (JSON array or JSONL) instead\nof config.yaml's "
		 "data_files"},
	{"--concurrency", NULL, CLI_COUNT, BA(o.concurrency), .min = 1,
	 .max = BATCH_MAX_CONCURRENCY, .metavar = "N", .help = "episodes at once (default 8)"},
	{"--repeat", NULL, CLI_COUNT, BA(o.repeat), .min = 1, .max = BATCH_MAX_REPEAT,
	 .metavar = "K", .help = "independent attempts per task (default 1)"},
	{"--group-size", NULL, CLI_COUNT, BA(o.group_size), .min = 1, .max = BATCH_MAX_GROUP,
	 .metavar = "G", .help = "a task with a \"setup\" runs it once per G of its attempts\n(a "
				 "GRPO group), each attempt in a fork of the\nset-up cell; "
				 "--repeat defaults to G"},
	{"--max-tasks", NULL, CLI_COUNT, BA(o.max_tasks), .min = 1, .max = 100000000,
	 .metavar = "N", .help = "only the first N tasks of the file"},
	{"--mode", NULL, CLI_CUSTOM, .parse = parse_mode, .metavar = "sandbox|vanilla",
	 .help = "sandbox (default): the agent with its cell and tools;\nvanilla: the same model "
		 "without tools, documents inlined"},
	{"--pull", NULL, CLI_CUSTOM, .parse = parse_pull, .metavar = "missing|never|always",
	 .help = "when a task's \"image\" reference is pulled: when not\nstored (default), never, "
		 "or once per run"},
	{"--pull-insecure", NULL, CLI_FLAG, BA(o.pull_insecure),
	 .help = "pull over plain HTTP (registries on loopback only)"},
	{"--store-max", NULL, CLI_SIZE, BA(o.store_max), .metavar = "SIZE",
	 .help = "after pulls, remove least recently used images no\ncell uses to keep the store "
		 "within SIZE\n(default: SANDCELL_STORE_MAX, else no cap)"},
	{"--retry-errors", NULL, CLI_FLAG, BA(o.retry_errors),
	 .help = "run again the attempts that ended in error"},
	{"--shard", NULL, CLI_CUSTOM, .parse = parse_shard, .metavar = "I/N",
	 .help = "only tasks whose id hashes to shard I of N (0-based); taken\nfrom "
		 "SLURM_ARRAY_TASK_ID/_COUNT when set; results go to\nDIR/shard-I-of-N"},
	{"--shards", NULL, CLI_COUNT, BA(shards), .min = 1, .max = 100000, .metavar = "N",
	 .help = "with JOB_COMPLETION_INDEX (Kubernetes Indexed Job): N shards"},
	{"--scorer", NULL, CLI_CUSTOM, .parse = parse_scorer, .metavar = "NAME",
	 .help = "for tasks without one: exact (default), numeric, choice,\nboxed, contains, command"},
	{"--tolerance", NULL, CLI_CUSTOM, .parse = parse_tolerance, .metavar = "X",
	 .help = "numeric: relative tolerance (default 1e-6)"},
	{"--checker", NULL, CLI_STRING, BA(o.scorer.command), .metavar = "CMD",
	 .help = "command: shell command run in a fresh cell in /testbed with\nanswer.txt, "
		 "expected.txt and output/ (exit 0 or a printed\nscore in [0, 1] decides)"},
	{"--checker-dir", NULL, CLI_CUSTOM, .parse = parse_checker_dir, .metavar = "DIR",
	 .help = "command: copied to /testbed/checker"},
	{"--checker-timeout", NULL, CLI_CUSTOM, .parse = parse_checker_timeout, .metavar = "S",
	 .help = "command and --swe: seconds (default 60)"},
	{"--pool-workers", NULL, CLI_COUNT, BA(o.pool_workers), .min = 1, .max = 16,
	 .metavar = "N", .help = "processes that make cells (default concurrency/4, 2..16)"},
	{"--no-reuse", NULL, CLI_FLAG, BA(o.no_reuse),
	 .help = "remove each episode's cell; by default it is\nrenewed to a fresh one for the next episode\n"
		 "(docs/security.md)"},
	{"--max-reuse", NULL, CLI_COUNT, BA(o.max_reuse), .min = 1, .max = 1000000, .metavar = "N",
	 .help = "renew a cell at most N times, then make a new\none (default: no bound)"},
	{"--json", NULL, CLI_FLAG, BA(json), .help = "print the summary as one JSON object"},
	{"--keep", NULL, CLI_CUSTOM_FLAG, .parse = refuse_keep},
	{0},
};

static int parse_run_args(struct batch_args *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (cli_is_help(opt)) {
			_cleanup_free_ char *help = cli_options_help(BATCH_OPTIONS, 25);
			printf(USAGE, help ? help : "");
			return 1;
		}
		int r = cli_parse_option(BATCH_OPTIONS, a, argc, argv, &i);
		if (r == 0)
			r = cli_agent_opt(&a->o.agent, &a->key_env, argc, argv, &i);
		if (r == 0)
			r = cli_cell_opts_parse(&a->cell, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		if (opt[0] == '-' && opt[1]) {
			cli_error("batch: unknown option '%s' (see 'sandcell batch --help')", opt);
			return -1;
		}
		if (a->o.tasks_path) {
			cli_error("batch: one TASKS file only (got '%.200s' and '%.200s')", a->o.tasks_path, opt);
			return -1;
		}
		a->o.tasks_path = opt;
	}
	if (!!a->o.benchmark + !!a->o.tasks_path + !!a->swe > 1) {
		cli_error("batch: give one of TASKS.jsonl, --benchmark DIR or --swe FILE");
		return -1;
	}
	if (a->o.swe_image && !a->swe) {
		cli_error("batch: --swe-image goes with --swe FILE");
		return -1;
	}
	if (a->swe) {
		a->o.tasks_path = a->swe;
		a->o.swe = true;
	}
	if (a->data && !a->o.benchmark) {
		cli_error("batch: --data goes with --benchmark DIR");
		return -1;
	}
	if (!a->o.tasks_path && !a->o.benchmark) {
		cli_error("batch: no TASKS.jsonl given (see 'sandcell batch --help')");
		return -1;
	}
	return 0;
}

/* runs/batch-<name of the task file without .jsonl> */
static char *default_out(const char *tasks)
{
	size_t len = strlen(tasks);
	while (len > 1 && tasks[len - 1] == '/') /* --benchmark bench/math/ */
		len--;
	const char *base = memrchr(tasks, '/', len);
	base = base ? base + 1 : tasks;
	size_t n = (size_t)(tasks + len - base);
	if (n > 6 && !memcmp(base + n - 6, ".jsonl", 6))
		n -= 6;
	else if (n > 5 && !memcmp(base + n - 5, ".json", 5))
		n -= 5;
	char *out = NULL;
	return asprintf(&out, "runs/batch-%.*s", (int)(n > 100 ? 100 : n), base) < 0 ? NULL : out;
}

static char *command_line(int argc, char **argv)
{
	size_t len = 16;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (len > 8192)
		return strdup("(long)");
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	p += sprintf(p, "sandcell");
	for (int i = 0; i < argc; i++)
		p += sprintf(p, " %s", argv[i]);
	return s;
}

/* The first SIGINT/SIGTERM/SIGHUP lets running episodes end (their
 * attempts get no result and run again next time), the second exits at
 * once. The signals are blocked from before batch_run (its pool's
 * processes and threads inherit that) and taken here, while it waits. */
struct stop_signals {
	sigset_t set;
	atomic_bool cancel;
};

static void wait_for_signal(void *ctx, double seconds)
{
	struct stop_signals *st = ctx;
	struct timespec ts = {.tv_sec = (time_t)seconds,
			      .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
	if (sigtimedwait(&st->set, NULL, &ts) <= 0)
		return;
	if (atomic_exchange(&st->cancel, true)) {
		fprintf(stderr, "\nsandcell: batch: stopped at once; rerun the same command to finish\n");
		_exit(130);
	}
}

/* Open files a running episode may hold at once: its model connection, its
 * cell's exec channel, the command's stdio pipes, its event log (about 3
 * measured at concurrency 32, with room for an exec in flight). */
#define FDS_PER_EPISODE 6
#define FDS_BASE 128

/* Thousands of episodes at once need more open files than the usual soft
 * limit of 1024: raise it towards the hard limit, and refuse up front, in
 * one line, when even that is too low (rather than failing episodes with
 * EMFILE half-way through). */
static int ensure_open_files(unsigned concurrency)
{
	uint64_t need = (uint64_t)concurrency * FDS_PER_EPISODE + FDS_BASE, have;
	if (cli_raise_open_files(need, &have) < 0) {
		cli_error("batch: --concurrency %u needs about %llu open files, but the limit is %llu "
			  "(raise it: ulimit -n %llu, or LimitNOFILE= for a service)",
			  concurrency, (unsigned long long)need, (unsigned long long)have,
			  (unsigned long long)need);
		return -1;
	}
	return 0;
}

/* The exit statuses the usage text above and docs/batch.md promise. */
static int exit_status(enum batch_end end)
{
	switch (end) {
	case BATCH_END_DONE:
		return 0;
	case BATCH_END_ERRORS:
		return 1;
	case BATCH_END_INTERRUPTED:
		return 130;
	}
	return CELL_EXIT_INTERNAL;
}

static int run_batch(struct batch_options *o, bool json, struct sc_err *err)
{
	struct stop_signals st = {0};
	struct cli_log log = {.live = isatty(STDERR_FILENO) == 1 && !o->quiet};
	sigset_t old;
	sigemptyset(&st.set);
	sigaddset(&st.set, SIGINT);
	sigaddset(&st.set, SIGTERM);
	sigaddset(&st.set, SIGHUP);
	o->log = cli_log_sink(&log);
	o->live_progress = log.live;
	o->cancel = &st.cancel;
	o->wait = wait_for_signal;
	o->wait_ctx = &st;
	/* a write to a closed pipe or socket is an error, not the end (the
	 * pool's cells serve their commands with SIGPIPE ignored as well) */
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &st.set, &old);
	struct batch_summary summary;
	enum batch_end end;
	int status = CELL_EXIT_INTERNAL;
	if (batch_run(o, &summary, &end, err) == 0) {
		if (json)
			batch_summary_json(stdout, &summary);
		else
			batch_summary_print(stdout, &summary, o->out_dir);
		fflush(stdout);
		status = exit_status(end);
	}
	/* a stop signal that came after the run ended has nothing left to
	 * stop: taken here, it cannot kill the process after its summary */
	struct timespec now = {0};
	while (sigtimedwait(&st.set, NULL, &now) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}

static void free_prompts(struct agent_config **cfg)
{
	cli_agent_prompts_free(*cfg);
}

/* --benchmark DIR: its data file as the task file, its config.yaml as the
 * prompt config (unless --prompt-config names another). */
static int benchmark_setup(struct batch_args *a, char **data_path)
{
	struct sc_err err = {0};
	struct agent_config *cfg = &a->o.agent;
	if (batch_benchmark_data_path(a->o.benchmark, a->data, data_path, &err) < 0) {
		cli_error("batch: %s", err.msg);
		return -1;
	}
	a->o.tasks_path = *data_path;
	if (cfg->prompts)
		return 0;
	char path[SC_PATH_BUF];
	struct agent_prompt_config *pc = calloc(1, sizeof(*pc));
	if (!pc || sc_path(path, sizeof(path), "%s/config.yaml", a->o.benchmark) < 0) {
		free(pc);
		cli_error("batch: --benchmark: out of memory");
		return -1;
	}
	if (agent_prompt_config_load(path, pc, &err) < 0) {
		free(pc);
		cli_error("batch: --benchmark: %s", err.msg);
		return -1;
	}
	cfg->prompts = pc;
	return 0;
}

static void batch_args_free(struct batch_args *a)
{
	cli_cell_opts_free(&a->cell);
}

static int run(int argc, char **argv)
{
	__attribute__((cleanup(batch_args_free))) struct batch_args a = {0};
	/* the prompt config is freed on every way out */
	__attribute__((cleanup(free_prompts), unused)) struct agent_config *prompts_owner = &a.o.agent;
	agent_config_init(&a.o.agent);
	a.o.concurrency = 8;
	a.o.repeat = 0; /* not given: 1, or the group size */
	a.o.scorer = (struct batch_scorer){.kind = BATCH_SCORER_EXACT, .tolerance = BATCH_DEFAULT_TOLERANCE,
				     .timeout_s = BATCH_DEFAULT_CHECKER_TIMEOUT};
	int r = parse_run_args(&a, argc, argv);
	if (r != 0)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
	struct batch_options *o = &a.o;
	struct agent_config *cfg = &o->agent;
	if (!o->repeat)
		o->repeat = o->group_size > 1 ? o->group_size : 1;
	o->quiet = cfg->quiet;
	o->default_input = cfg->input_dir;
	_cleanup_free_ char *data_path = NULL;
	if (o->benchmark && benchmark_setup(&a, &data_path) < 0)
		return CLI_EXIT_USAGE;
	cli_agent_llm_env(cfg);
	if (!cfg->model) {
		cli_error("batch: --model NAME is required");
		return CLI_EXIT_USAGE;
	}
	if (cli_agent_endpoint(cfg, a.key_env) < 0 || cli_agent_llm_temperature(cfg) < 0)
		return CLI_EXIT_USAGE;
	if (ensure_open_files(o->concurrency) < 0)
		return CLI_EXIT_USAGE;
	if (!a.shard_given) {
		struct sc_err err = {0};
		if (batch_shard_from_env((unsigned)a.shards, &o->shard_index, &o->shard_count, &err) < 0) {
			cli_error("batch: %s", err.msg);
			return CLI_EXIT_USAGE;
		}
	}
	_cleanup_free_ char *out_default = o->out_dir ? NULL
					   : default_out(o->benchmark ? o->benchmark : o->tasks_path);
	_cleanup_free_ char *out_shard = NULL;
	if (!o->out_dir)
		o->out_dir = out_default;
	if (o->out_dir && o->shard_count) {
		int w = snprintf(NULL, 0, "%u", o->shard_count - 1);
		if (asprintf(&out_shard, "%s/shard-%0*u-of-%u", o->out_dir, w, o->shard_index,
			     o->shard_count) < 0)
			out_shard = NULL;
		o->out_dir = out_shard;
	}
	if (!o->out_dir) {
		cli_error("batch: out of memory");
		return CLI_EXIT_USAGE;
	}
	_cleanup_free_ char *cmdline = command_line(argc, argv);
	o->command_line = cmdline;

	_cleanup_cli_cell_ struct cli_cell cell;
	if (cli_cell_build(&cell, &a.cell) < 0)
		return CLI_EXIT_USAGE;
	cli_agent_cell_defaults(&a.cell, &cell);
	cfg->spec = &cell.spec;
	o->image = a.cell.image;
	o->store_max = cli_store_max(o->store_max);

	struct sc_err err = {0};
	int status = run_batch(o, a.json, &err);
	if (status == CELL_EXIT_INTERNAL)
		cli_fail(&err);
	return status;
}

/* ---- summarize and export ---- */

/* summarize and export list their few options in their usage lines */
static const struct cli_option SUMMARIZE_OPTIONS[] = {
	{"--json", NULL, CLI_FLAG, .offset = 0, .size = sizeof(bool)},
	{0},
};

struct export_args {
	enum batch_export_format fmt;
	const char *out;
};

static const char *const EXPORT_FORMATS[] = {
	[BATCH_EXPORT_SFT] = "sft", [BATCH_EXPORT_RL] = "rl", [BATCH_EXPORT_PREDICTIONS] = "predictions"};

static int parse_format(void *t, const char *opt, const char *v)
{
	struct export_args *a = t;
	for (size_t i = 0; i < SC_ARRAY_LEN(EXPORT_FORMATS); i++)
		if (!strcmp(v, EXPORT_FORMATS[i])) {
			a->fmt = (enum batch_export_format)i;
			return 0;
		}
	cli_error("--format: expected sft, rl or predictions, got '%.64s'", v);
	return -1;
}

static const struct cli_option EXPORT_OPTIONS[] = {
	{"--format", NULL, CLI_CUSTOM, .parse = parse_format},
	{"-o", NULL, CLI_STRING, CLI_FIELD(struct export_args, out)},
	{0},
};

static int summarize(int argc, char **argv)
{
	bool json = false;
	const char **dirs = calloc((size_t)argc + 1, sizeof(char *));
	size_t n = 0;
	if (!dirs)
		return CLI_EXIT_USAGE;
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			printf("usage: sandcell batch summarize [--json] DIR...\n\n"
			       "Print the summary of finished or running batch runs. Shard\n"
			       "directories (DIR/shard-*) are merged, as are several DIRs; for one\n"
			       "(id, repeat) the last result read counts.\n");
			free(dirs);
			return 0;
		}
		int r = cli_parse_option(SUMMARIZE_OPTIONS, &json, argc, argv, &i);
		if (r > 0)
			continue;
		if (argv[i][0] == '-' && argv[i][1]) {
			cli_error("batch summarize: unknown option '%s'", argv[i]);
			free(dirs);
			return CLI_EXIT_USAGE;
		} else
			dirs[n++] = argv[i];
	}
	if (!n) {
		cli_error("batch summarize: name at least one run directory");
		free(dirs);
		return CLI_EXIT_USAGE;
	}
	struct batch_records *rs;
	size_t expected;
	struct sc_err err = {0};
	if (batch_collect(dirs, n, &rs, &expected, &err) < 0) {
		free(dirs);
		return cli_fail(&err);
	}
	struct batch_summary s;
	batch_summarize(rs, &s);
	s.expected_attempts = expected;
	if (json)
		batch_summary_json(stdout, &s);
	else
		batch_summary_print(stdout, &s, n == 1 ? dirs[0] : "merged");
	batch_records_destroy(rs);
	free(dirs);
	return 0;
}

static int export(int argc, char **argv)
{
	struct export_args ea = {.fmt = BATCH_EXPORT_SFT};
	const char **dirs = calloc((size_t)argc + 1, sizeof(char *));
	size_t n = 0;
	if (!dirs)
		return CLI_EXIT_USAGE;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (cli_is_help(o)) {
			printf("usage: sandcell batch export [--format sft|rl|predictions] [-o FILE] DIR...\n\n"
			       "sft (default): the attempts that scored 1 as OpenAI fine-tuning chat\n"
			       "JSONL ({\"messages\", \"tools\"} with tool calls); rl: every attempt with\n"
			       "its reward, prompt and ground truth; predictions: every attempt of a\n"
			       "--swe run with its patch.diff, as SWE-bench's harness reads them\n"
			       "({\"instance_id\", \"model_name_or_path\", \"model_patch\"}). See\n"
			       "docs/batch.md.\n");
			free(dirs);
			return 0;
		}
		int r = cli_parse_option(EXPORT_OPTIONS, &ea, argc, argv, &i);
		if (r < 0) {
			free(dirs);
			return CLI_EXIT_USAGE;
		}
		if (r > 0) {
			continue;
		} else if (o[0] == '-' && o[1]) {
			cli_error("batch export: unknown option '%s'", o);
			free(dirs);
			return CLI_EXIT_USAGE;
		} else {
			dirs[n++] = o;
		}
	}
	if (!n) {
		cli_error("batch export: name at least one run directory");
		free(dirs);
		return CLI_EXIT_USAGE;
	}
	struct batch_records *rs;
	size_t expected, skipped = 0;
	struct sc_err err = {0};
	if (batch_collect(dirs, n, &rs, &expected, &err) < 0) {
		free(dirs);
		return cli_fail(&err);
	}
	free(dirs);
	FILE *f = stdout;
	if (ea.out && !(f = fopen(ea.out, "we"))) {
		cli_error("cannot create %s: %s", ea.out, strerror(errno));
		batch_records_destroy(rs);
		return CLI_EXIT_USAGE;
	}
	long lines = batch_export(rs, ea.fmt, f, &skipped, &err);
	batch_records_destroy(rs);
	if (f != stdout && fclose(f) != 0 && lines >= 0)
		lines = sc_fail(&err, errno, "cannot write %s", ea.out);
	if (lines < 0)
		return cli_fail(&err);
	fprintf(stderr, "sandcell: batch export: %ld %s lines", lines, EXPORT_FORMATS[ea.fmt]);
	if (skipped)
		fprintf(stderr, " (%zu attempts without a %s skipped)", skipped,
			ea.fmt == BATCH_EXPORT_PREDICTIONS ? "patch.diff" : "conversation");
	fprintf(stderr, "\n");
	return 0;
}

/* ---- report ---- */

struct report_args {
	struct batch_report_options o;
	uint64_t max_observation, max_text, max_image, max_files;
	bool json;
};

static const struct cli_option REPORT_OPTIONS[] = {
	{"-o", "--output", CLI_STRING, CLI_FIELD(struct report_args, o.out)},
	{"--max-observation", NULL, CLI_SIZE, CLI_FIELD(struct report_args, max_observation)},
	{"--max-text", NULL, CLI_SIZE, CLI_FIELD(struct report_args, max_text)},
	{"--max-image", NULL, CLI_SIZE, CLI_FIELD(struct report_args, max_image)},
	{"--max-files", NULL, CLI_COUNT, CLI_FIELD(struct report_args, max_files), .min = 0, .max = 100000},
	{"--inline-limit", NULL, CLI_SIZE, CLI_FIELD(struct report_args, o.inline_limit)},
	{"--split", NULL, CLI_FLAG, CLI_FIELD(struct report_args, o.split)},
	{"--json", NULL, CLI_FLAG, CLI_FIELD(struct report_args, json)},
	{0},
};

static const char REPORT_USAGE[] =
	"usage: sandcell batch report [-o FILE.html] [OPTIONS] DIR...\n\n"
	"One self-contained HTML page of finished (or running) batch runs: the header\n"
	"of each run, charts, a sortable and filterable table of the attempts and each\n"
	"attempt's episode. It opens from disk in any browser and loads nothing. Shard\n"
	"directories (DIR/shard-*) are merged; several DIRs are merged when their\n"
	"attempts do not overlap and their mode and model agree, else compared.\n\n"
	"  -o, --output FILE        the page (default: DIR/report.html of the first DIR)\n"
	"  --max-observation SIZE   bytes of one observation shown (default 20000)\n"
	"  --max-text SIZE          bytes of one answer, argument, file or log (default 64K)\n"
	"  --max-image SIZE         bytes of one image shown inline (default 2M)\n"
	"  --max-files N            files listed per attempt (default 100)\n"
	"  --inline-limit SIZE      attempt details kept in the page (default 8M); the\n"
	"                           attempts past it get a page of their own in FILE.files/\n"
	"  --split                  every attempt's details in FILE.files/\n"
	"  --json                   say what was written as one JSON object\n";

static int report(int argc, char **argv)
{
	struct report_args ra = {.o = BATCH_REPORT_DEFAULTS};
	ra.max_observation = ra.o.max_observation;
	ra.max_text = ra.o.max_text;
	ra.max_image = ra.o.max_image;
	ra.max_files = ra.o.max_files;
	const char **dirs = calloc((size_t)argc + 1, sizeof(char *));
	size_t n = 0;
	if (!dirs)
		return CLI_EXIT_USAGE;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cli_is_help(a)) {
			fputs(REPORT_USAGE, stdout);
			free(dirs);
			return 0;
		}
		int r = cli_parse_option(REPORT_OPTIONS, &ra, argc, argv, &i);
		if (r < 0) {
			free(dirs);
			return CLI_EXIT_USAGE;
		}
		if (r > 0)
			continue;
		if (a[0] == '-' && a[1]) {
			cli_error("batch report: unknown option '%s'", a);
			free(dirs);
			return CLI_EXIT_USAGE;
		}
		dirs[n++] = a;
	}
	if (!n) {
		cli_error("batch report: name at least one run directory");
		free(dirs);
		return CLI_EXIT_USAGE;
	}
	ra.o.max_observation = (size_t)ra.max_observation;
	ra.o.max_text = (size_t)ra.max_text;
	ra.o.max_image = (size_t)ra.max_image;
	ra.o.max_files = (size_t)ra.max_files;
	char dflt[SC_PATH_BUF];
	if (!ra.o.out) {
		if (snprintf(dflt, sizeof(dflt), "%s/report.html", dirs[0]) >= (int)sizeof(dflt)) {
			cli_error("batch report: the directory name is too long");
			free(dirs);
			return CLI_EXIT_USAGE;
		}
		ra.o.out = dflt;
	}
	struct batch_report_stats st;
	struct sc_err err = {0};
	int rc = batch_report(dirs, n, &ra.o, &st, &err);
	free(dirs);
	if (rc < 0)
		return cli_fail(&err);
	if (ra.json) {
		fputs("{\"report\":", stdout);
		cli_json_string(stdout, ra.o.out, strlen(ra.o.out));
		fputs(",\"side_dir\":", stdout);
		if (st.side_files)
			cli_json_string(stdout, st.side_dir, strlen(st.side_dir));
		else
			fputs("null", stdout);
		printf(",\"bytes\":%llu,\"runs\":%zu,\"attempts\":%zu,\"side_files\":%zu,\"cut\":%zu}\n",
		       (unsigned long long)st.bytes, st.runs, st.attempts, st.side_files, st.cut);
	} else {
		fprintf(stderr, "sandcell: batch report: %s (%zu attempts, %zu %s, %.1f MiB)", ra.o.out,
			st.attempts, st.runs, st.runs == 1 ? "run" : "runs", (double)st.bytes / 1048576.0);
		if (st.side_files)
			fprintf(stderr, "; %zu attempts' details in %s/", st.side_files, st.side_dir);
		fputc('\n', stderr);
	}
	return 0;
}

int cmd_batch(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "summarize"))
		return summarize(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "export"))
		return export(argc - 1, argv + 1);
	return run(argc, argv);
}

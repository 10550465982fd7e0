/* sandcell batch: many agent episodes from a task file, scored, with one
 * result line per attempt that survives crashes (see docs/batch.md). Above
 * agent/ (cli -> batch -> agent -> runtime); uses agent/agent.h only.
 *
 *   score.c    the scorers (pure)
 *   task.c     the task file, stable hashes and shards
 *   keyset.c   sets of (id, repeat) keys
 *   results.c  results.jsonl: load, compact, append
 *   summary.c  statistics over results, for one run or merged shards
 *   export.c   fine-tuning (SFT) and RL data from finished attempts
 *   report.c   a self-contained HTML report of finished runs (its page
 *              script and style: report_page.js/.css, embedded)
 *   run.c      the runner: a pool of cells, worker threads, progress
 *
 * The rest of the module's declarations are in batch_priv.h. */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../agent/agent.h"
#include "../common/sc.h"
#include "../rootfs/rootfs.h"

#define BATCH_MAX_LINE (8U << 20)   /* bytes in one task or result line */
#define BATCH_MAX_ID 256            /* bytes in a task id */
#define BATCH_MAX_ANSWER (1U << 20) /* bytes of an answer kept in a result */
/* what the option takes; the open-file limit is checked against it at start */
#define BATCH_MAX_CONCURRENCY 65536
#define BATCH_MAX_REPEAT 10000
#define BATCH_MAX_GROUP 64          /* attempts forked from one task setup */
#define BATCH_DEFAULT_TOLERANCE 1e-6
#define BATCH_DEFAULT_CHECKER_TIMEOUT 60.0

/* ---- scorers ---- */

enum batch_scorer_kind {
	BATCH_SCORER_EXACT,    /* trimmed answer == trimmed expected */
	BATCH_SCORER_NUMERIC,  /* numbers equal within a relative tolerance */
	BATCH_SCORER_CHOICE,   /* multiple-choice letters; F1 for several */
	BATCH_SCORER_BOXED,    /* last \boxed{...}, normalised */
	BATCH_SCORER_CONTAINS, /* expected occurs in the answer */
	BATCH_SCORER_COMMAND,  /* a checker program in a fresh cell decides */
	BATCH_SCORER_REWARD,   /* a benchmark folder's reward.py in a fresh cell
				* (--benchmark only; not a name tasks can use) */
	BATCH_SCORER_SWE,      /* a SWE-bench row's tests on the model's patch
				* (--swe only; not a name tasks can use) */
};

struct batch_scorer {
	enum batch_scorer_kind kind;
	double tolerance;   /* numeric: relative */
	const char *command; /* command: run with /bin/sh -c in /testbed */
	const char *files;   /* command: host directory copied to /testbed/checker */
	double timeout_s;    /* command */
};

const char *batch_scorer_name(enum batch_scorer_kind k);
int batch_scorer_kind_parse(const char *name, enum batch_scorer_kind *out);

/* ---- shards ---- */

/* "I/N" with 0 <= I < N <= 100000. */
int batch_shard_parse(const char *s, unsigned *index, unsigned *count);
/* The shard from the environment: SLURM_ARRAY_TASK_ID (minus _MIN, over
 * _STEP) of SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX of `shards`
 * (a Kubernetes Indexed Job; shards 0 = not given). Returns 1 when found,
 * 0 when none applies, -1 with err filled. */
int batch_shard_from_env(unsigned shards, unsigned *index, unsigned *count, struct sc_err *err);

/* ---- finished runs: summary and export ---- */

/* The results of one or more run directories (opaque). */
struct batch_records;

/* Read results of each directory (and of its shard-* subdirectories),
 * merged: one record per (id, repeat), the last one read winning. *out is
 * for batch_records_destroy; expected: attempts the runs' batch.json
 * announce (0 when unknown). */
int batch_collect(const char *const *dirs, size_t ndirs, struct batch_records **out,
		  size_t *expected, struct sc_err *err);
void batch_records_destroy(struct batch_records *rs);

struct batch_summary {
	size_t attempts, tasks, scored, correct;
	unsigned repeats;          /* highest repeat + 1 */
	double mean;               /* over scored attempts */
	double repeat_mean[64];    /* per repeat (first 64) */
	size_t repeat_scored[64];
	unsigned npass;            /* pass@k for k = pass_k[i] */
	unsigned pass_k[16];
	double pass_at[16];
	size_t submitted, max_steps, episode_timeout, errors, checker_timeout, other;
	/* attempts, whatever their status, whose answer file was not kept
	 * (answer_error) or whose output was copied in part (files_truncated) */
	size_t answer_errors, files_truncated;
	double p50_s, p95_s, total_wall_s;
	uint64_t input_tokens, output_tokens;
	size_t expected_attempts;  /* from batch.json, 0 when unknown */
	/* task setups (groups): each counted once, however many attempts
	 * were forked from it */
	size_t grouped, setups;    /* attempts in groups; setups they came from */
	double setup_total_s, setup_max_s;
};

void batch_summarize(const struct batch_records *rs, struct batch_summary *s);
/* pass@k for one task with n attempts of which c correct (unbiased). */
double batch_pass_at_k(unsigned n, unsigned c, unsigned k);
void batch_summary_print(FILE *f, const struct batch_summary *s, const char *title);
void batch_summary_json(FILE *f, const struct batch_summary *s);

enum batch_export_format { BATCH_EXPORT_SFT, BATCH_EXPORT_RL, BATCH_EXPORT_PREDICTIONS };

/* One JSON line per attempt to f: sft = attempts that scored 1, as OpenAI
 * fine-tuning chat ({"messages", "tools"}); rl = every attempt with its
 * reward; predictions = every attempt of a --swe run with its patch.diff,
 * as SWE-bench's harness reads predictions ({"instance_id",
 * "model_name_or_path", "model_patch"}). Returns lines written, or -1. */
long batch_export(const struct batch_records *rs, enum batch_export_format fmt, FILE *f,
		  size_t *skipped, struct sc_err *err);

/* ---- benchmark folders (bench.c) ---- */

/* The data file of a benchmark folder: data when given, else DIR/config.yaml's
 * data_files (dataset "json"), relative to DIR's parent as the reference
 * resolves it. A hub dataset without data is an error saying to save it as
 * JSON first. *out is malloc'd. */
int batch_benchmark_data_path(const char *dir, const char *data, char **out, struct sc_err *err);

/* ---- report (report.c) ---- */

struct batch_report_options {
	const char *out;          /* FILE.html (written through FILE.html.tmp) */
	size_t max_observation;   /* bytes of one observation shown */
	size_t max_text;          /* bytes of one text: answer, argument, file, log */
	size_t max_image;         /* bytes of one image shown inline */
	size_t max_files;         /* files listed per attempt */
	uint64_t inline_limit;    /* bytes of attempt details inside FILE.html; the
				   * attempts past it get side files */
	bool split;               /* every attempt's details in a side file */
};
#define BATCH_REPORT_DEFAULTS                                                        \
	{.max_observation = 20000, .max_text = 65536, .max_image = 2U << 20,         \
	 .max_files = 100, .inline_limit = 8U << 20}

struct batch_report_stats {
	size_t runs, attempts;
	size_t side_files;        /* attempts whose details are in FILE.files/ */
	size_t cut;               /* texts, observations and files cut to a limit */
	uint64_t bytes;           /* of FILE.html */
	char side_dir[4096];      /* FILE.files when side_files */
};

/* One HTML page of the run directories (each with its shard-* merged):
 * directories whose attempts do not overlap and that name the same mode and
 * model are one run; otherwise each is a run of its own, compared. */
int batch_report(const char *const *dirs, size_t ndirs, const struct batch_report_options *o,
		 struct batch_report_stats *st, struct sc_err *err);

/* ---- the runner ---- */

enum batch_mode { BATCH_SANDBOX, BATCH_VANILLA };

struct batch_options {
	const char *tasks_path;    /* with benchmark: its data file */
	const char *benchmark;     /* a benchmark folder (config.yaml, reward.py,
				    * vanilla_llm_prompt.py), or NULL */
	bool swe;                  /* tasks_path holds SWE-bench rows */
	const char *swe_image;     /* their image when a row names none: a
				    * template with {instance_id}/{swebench_id} */
	const char *out_dir;       /* the run directory (a shard's own, when sharded) */
	unsigned concurrency;
	unsigned repeat;
	unsigned group_size;       /* a task with a setup: its repeats in groups
				    * of this many (0, 1: each on its own), each
				    * group forked from one set-up cell */
	size_t max_tasks;          /* 0: all */
	enum batch_mode mode;
	bool retry_errors;
	unsigned shard_index, shard_count; /* count 0: no sharding */
	struct batch_scorer scorer; /* for tasks without one */
	const char *default_input; /* for tasks without input_dir */
	const char *image;         /* the cell spec's image (recorded in results;
				    * NULL: "host"); a task's "image" replaces it */
	enum rootfs_pull_when pull; /* tasks' image references: when not stored
				     * yet, never, or once per run */
	bool pull_insecure;        /* plain HTTP to registries on loopback */
	uint64_t store_max;        /* the image store's cap after pulls (0: none) */
	bool quiet;
	size_t pool_workers;       /* 0: chosen from the concurrency */
	bool no_reuse;             /* remove each episode's cell instead of
				    * renewing it for the next (cell_renew) */
	size_t max_reuse;          /* renew a cell at most this often (0: no bound) */
	const char *command_line;  /* recorded in batch.json */
	struct agent_config agent; /* the episode template (problem, out_dir,
				    * log and cancel unset) */
	struct sc_log log;         /* notes and progress lines (SC_LOG_PROGRESS:
				    * the running figures); called from
				    * batch_run's thread only */
	bool live_progress;        /* progress every 0.5 s for a terminal (the
				    * lines replace each other), else every 5 s */
	const atomic_bool *cancel; /* NULL, or raised to stop: no new attempts,
				    * running episodes end as interrupted and get
				    * no result (a rerun runs them again) */
	/* Called by batch_run's thread while the episodes run, instead of
	 * sleeping: wait at most `seconds` (the caller may raise *cancel from
	 * here, e.g. on a signal). NULL: batch_run sleeps. */
	void (*wait)(void *ctx, double seconds);
	void *wait_ctx;
};

/* How a run that could run ended (the CLI makes its exit status of it). */
enum batch_end {
	BATCH_END_DONE,        /* every attempt has a result without error */
	BATCH_END_ERRORS,      /* every attempt has a result; some ended in error */
	BATCH_END_INTERRUPTED, /* cancel was raised */
};

/* Run every attempt of the task file that has no result yet. Installs no
 * signal handlers and changes no signal mask: a caller that wants signals
 * to stop the run blocks them before the call (the pool's processes and the
 * worker threads, made inside, inherit the mask) and turns them into
 * *cancel in wait. Returns 0 with *end saying how the run ended and
 * summary holding the run's summary (of the run directory, as summarize
 * would print it), or -1 when it could not run (err). */
int batch_run(const struct batch_options *o, struct batch_summary *summary, enum batch_end *end,
	      struct sc_err *err);

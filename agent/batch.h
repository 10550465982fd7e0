/* sandcell batch: many agent episodes from a task file, scored, with one
 * result line per attempt that survives crashes (see docs/batch.md).
 *
 *   batch_score.c    the scorers (pure)
 *   batch_task.c     the task file, stable hashes and shards
 *   batch_results.c  results.jsonl: load, compact, append
 *   batch_summary.c  statistics over results, for one run or merged shards
 *   batch_export.c   fine-tuning (SFT) and RL data from finished attempts
 *   batch_run.c      the runner: a pool of cells, worker threads, progress
 */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/sc.h"
#include "../common/strset.h"
#include "agent.h"

#define BATCH_MAX_LINE (8U << 20)   /* bytes in one task or result line */
#define BATCH_MAX_ID 256            /* bytes in a task id */
#define BATCH_MAX_ANSWER (1U << 20) /* bytes of an answer kept in a result */
#define BATCH_MAX_CONCURRENCY 1024
#define BATCH_MAX_REPEAT 10000
#define BATCH_DEFAULT_TOLERANCE 1e-6
#define BATCH_DEFAULT_CHECKER_TIMEOUT 60.0

/* ---- scorers (batch_score.c) ---- */

enum scorer_kind {
	SCORER_EXACT,    /* trimmed answer == trimmed expected */
	SCORER_NUMERIC,  /* numbers equal within a relative tolerance */
	SCORER_CHOICE,   /* multiple-choice letters; F1 for several */
	SCORER_BOXED,    /* last \boxed{...}, normalised */
	SCORER_CONTAINS, /* expected occurs in the answer */
	SCORER_COMMAND,  /* a checker program in a fresh cell decides */
};

struct scorer {
	enum scorer_kind kind;
	double tolerance;   /* numeric: relative */
	const char *command; /* command: run with /bin/sh -c in /testbed */
	const char *files;   /* command: host directory copied to /testbed/checker */
	double timeout_s;    /* command */
};

const char *scorer_name(enum scorer_kind k);
int scorer_kind_parse(const char *name, enum scorer_kind *out);

/* Each returns a score in [0, 1]; answer may be NULL (scores 0). */
double score_exact(const char *answer, const char *expected);
double score_numeric(const char *answer, const char *expected, double tolerance);
double score_choice(const char *answer, const char *expected);
double score_boxed(const char *answer, const char *expected);
double score_contains(const char *answer, const char *expected);
/* The pure scorers by kind (not SCORER_COMMAND: returns -1). */
double score_answer(const struct scorer *s, const char *answer, const char *expected);

/* Pieces exposed for tests. */
bool score_parse_number(const char *s, double *out);   /* the whole text, trimmed */
bool score_last_number(const char *s, double *out);    /* the last number in the text */
unsigned score_choice_letters(const char *s, bool letters[26]); /* how many */
char *score_boxed_extract(const char *s);   /* contents of the last \boxed{}/\fbox{}, or NULL */
char *score_math_normalize(const char *s);  /* for comparing two math answers */
/* A checker's verdict: the last line of its stdout when that is a number
 * (clamped to [0, 1]), else 1 for exit status 0 and 0 otherwise. */
double score_from_checker(int exit_code, const char *out, size_t len);

/* ---- tasks (batch_task.c) ---- */

struct batch_task {
	char *id;
	char *problem;
	char *input_dir;   /* resolved against the task file's directory, or NULL */
	char *expected;    /* the task's "answer" as text, or NULL */
	bool has_scorer;
	struct scorer scorer;
	char *scorer_command, *scorer_files; /* owned strings behind scorer */
	cJSON *metadata;   /* or NULL */
	cJSON *extra;      /* unknown fields, kept in results (an object) */
	unsigned line;
	uint64_t hash;     /* batch_hash(id) */
};

struct batch_tasks {
	struct batch_task *v;
	size_t n;
	size_t bad; /* lines reported and skipped */
};

/* A bad line: its number and why; the caller prints it. */
typedef void (*batch_bad_line_fn)(void *arg, unsigned line, const char *why);

/* Load a JSONL task file (see docs/batch.md for the schema). Bad lines go
 * to report and are skipped; -1 only when the file cannot be read. */
int batch_tasks_load(const char *path, struct batch_tasks *out, batch_bad_line_fn report,
		     void *arg, struct sc_err *err);
/* One line; -1 with why filled when it is not a valid task. */
int batch_task_parse(const char *line, size_t len, const char *base_dir, struct batch_task *t,
		     char *why, size_t whysize);
void batch_task_free(struct batch_task *t);
void batch_tasks_free(struct batch_tasks *ts);

/* FNV-1a, 64 bits: stable across hosts and versions (it decides shards). */
uint64_t batch_hash(const char *s);
/* "I/N" with 0 <= I < N <= 100000. */
int batch_shard_parse(const char *s, unsigned *index, unsigned *count);
/* The shard from the environment: SLURM_ARRAY_TASK_ID (minus _MIN, over
 * _STEP) of SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX of `shards`
 * (a Kubernetes Indexed Job; shards 0 = not given). Returns 1 when found,
 * 0 when none applies, -1 with why filled. */
int batch_shard_from_env(unsigned shards, unsigned *index, unsigned *count, char *why,
			 size_t whysize);
/* A file-system-safe name for an id: the id when it is [A-Za-z0-9._-]
 * (not . or ..) and at most 100 bytes, else a cleaned prefix plus -HASH. */
void batch_safe_name(const char *id, char *out, size_t size);

/* ---- results (batch_results.c) ---- */

struct batch_record {
	char *id;
	unsigned repeat;
	char status[24];
	bool scored;
	double score;
	unsigned steps;
	uint64_t input_tokens, output_tokens;
	double wall_s;
	char *dir;        /* attempt directory, relative to the run directory */
	char *run;        /* the run directory it came from (summaries), or NULL */
	cJSON *json;      /* the whole line */
};

struct batch_records {
	struct batch_record *v;
	size_t n, cap;
};

/* What compacting found. */
struct batch_compact_stats {
	size_t kept, partial, invalid, duplicate, superseded;
};

/* Parse one result line; -1 when it is not one. Takes nothing. */
int batch_record_parse(const char *line, size_t len, struct batch_record *r);
void batch_record_free(struct batch_record *r);
void batch_records_free(struct batch_records *rs);

/* Read DIR/results.jsonl as a user would: complete lines only, the later
 * line for an (id, repeat) superseding an earlier one. A missing file is
 * empty. */
int batch_results_read(const char *dir, struct batch_records *out, struct sc_err *err);
/* Make DIR/results.jsonl hold exactly one valid line per attempt: drop a
 * trailing partial line, invalid and duplicate lines and (drop_errors)
 * lines with status "error". Dropped lines are appended to
 * DIR/superseded.jsonl first; the file is replaced atomically, and only
 * when something changed. Then load what remains into out. */
int batch_results_compact(const char *dir, bool drop_errors, struct batch_records *out,
			  struct batch_compact_stats *st, struct sc_err *err);
/* Append one line (text without its newline) with a single write(). */
int batch_results_append(int fd, const char *line, size_t len, struct sc_err *err);

/* A set of (id, repeat) keys. */
struct batch_keyset {
	struct sc_strset set; /* "ID\x1fREPEAT" */
};
bool batch_keyset_has(const struct batch_keyset *s, const char *id, unsigned repeat);
int batch_keyset_add(struct batch_keyset *s, const char *id, unsigned repeat);
void batch_keyset_free(struct batch_keyset *s);

/* ---- summary (batch_summary.c) ---- */

struct batch_summary {
	size_t attempts, tasks, scored, correct;
	unsigned repeats;          /* highest repeat + 1 */
	double mean;               /* over scored attempts */
	double repeat_mean[64];    /* per repeat (first 64) */
	size_t repeat_scored[64];
	unsigned npass;            /* pass@k for k = pass_k[i] */
	unsigned pass_k[16];
	double pass_at[16];
	size_t submitted, max_steps, episode_timeout, errors, other;
	double p50_s, p95_s, total_wall_s;
	uint64_t input_tokens, output_tokens;
	size_t expected_attempts;  /* from batch.json, 0 when unknown */
};

/* Read results of each directory (and of its shard-* subdirectories),
 * merged: one record per (id, repeat), the last one read winning. */
int batch_collect(const char *const *dirs, size_t ndirs, struct batch_records *out,
		  size_t *expected, struct sc_err *err);
void batch_summarize(const struct batch_records *rs, struct batch_summary *s);
/* pass@k for one task with n attempts of which c correct (unbiased). */
double batch_pass_at_k(unsigned n, unsigned c, unsigned k);
void batch_summary_print(FILE *f, const struct batch_summary *s, const char *title);
void batch_summary_json(FILE *f, const struct batch_summary *s);

/* ---- export (batch_export.c) ---- */

enum batch_export_format { BATCH_EXPORT_SFT, BATCH_EXPORT_RL };

/* One JSON line per attempt to f: sft = attempts that scored 1, as OpenAI
 * fine-tuning chat ({"messages", "tools"}); rl = every attempt with its
 * reward. Returns lines written, or -1. */
long batch_export(const struct batch_records *rs, enum batch_export_format fmt, FILE *f,
		  size_t *skipped, struct sc_err *err);
/* An OpenAI-format message list from conversation.json (either API). */
cJSON *batch_conversation_openai(const cJSON *conv, cJSON **tools_out);

/* ---- the runner (batch_run.c) ---- */

enum batch_mode { BATCH_SANDBOX, BATCH_VANILLA };

struct batch_options {
	const char *tasks_path;
	const char *out_dir;       /* the run directory (a shard's own, when sharded) */
	unsigned concurrency;
	unsigned repeat;
	size_t max_tasks;          /* 0: all */
	enum batch_mode mode;
	bool retry_errors;
	unsigned shard_index, shard_count; /* count 0: no sharding */
	struct scorer scorer;      /* for tasks without one */
	const char *default_input; /* for tasks without input_dir */
	bool quiet;
	bool json;                 /* summary as JSON on stdout */
	size_t pool_workers;       /* 0: chosen from the concurrency */
	const char *command_line;  /* recorded in batch.json */
	struct agent_config agent; /* the episode template (problem, out_dir unset) */
};

/* Run every attempt of the task file that has no result yet. Returns the
 * exit status: 0 all attempts have a result without error, 1 some ended in
 * error, 130 interrupted, 125 could not run (err). */
int batch_run(const struct batch_options *o, struct sc_err *err);

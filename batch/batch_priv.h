/* batch/: what the module's files share (and what the unit tests look
 * into); cJSON stays in here. Everything public is in batch.h. */
#pragma once
#include <cjson/cJSON.h>

#include "../common/strset.h"
#include "../rootfs/rootfs.h"
#include "batch.h"

/* ---- scorers (score.c) ---- */

/* Each returns a score in [0, 1]; answer may be NULL (scores 0). */
double batch_score_exact(const char *answer, const char *expected);
double batch_score_numeric(const char *answer, const char *expected, double tolerance);
double batch_score_choice(const char *answer, const char *expected);
double batch_score_boxed(const char *answer, const char *expected);
double batch_score_contains(const char *answer, const char *expected);
/* The pure scorers by kind (not BATCH_SCORER_COMMAND: returns -1). */
double batch_score_answer(const struct batch_scorer *s, const char *answer, const char *expected);

/* Pieces exposed for tests. */
bool batch_score_parse_number(const char *s, double *out);   /* the whole text, trimmed */
bool batch_score_last_number(const char *s, double *out);    /* the last number in the text */
unsigned batch_score_choice_letters(const char *s, bool letters[26]); /* how many */
char *batch_score_boxed_extract(const char *s);   /* contents of the last \boxed{}/\fbox{}, or NULL */
char *batch_score_math_normalize(const char *s);  /* for comparing two math answers */
/* A checker's verdict: the last line of its stdout when that is a number
 * (clamped to [0, 1]), else 1 for exit status 0 and 0 otherwise. */
double batch_score_from_checker(int exit_code, const char *out, size_t len);

/* ---- tasks (task.c) ---- */

/* A task's "setup": files written, then a command run, once in a cell
 * that the group's attempts are forks of (group.c). */
#define BATCH_MAX_SETUP_FILES 256
#define BATCH_MAX_SETUP_BYTES (16U << 20) /* of the files together */
#define BATCH_MAX_SETUP_PATH 1024
#define BATCH_DEFAULT_SETUP_TIMEOUT 1800.0
struct batch_setup_file {
	char *path; /* absolute in the cell (a relative one is under /testbed) */
	char *data;
	size_t len;
};
struct batch_setup {
	char *command; /* /bin/sh -c in /testbed, or NULL */
	struct batch_setup_file *files;
	size_t nfiles;
	double timeout_s;
};

void batch_setup_free(struct batch_setup *s);

struct batch_task {
	char *id;
	char *problem;
	char *input_dir;   /* resolved against the task file's directory, or NULL */
	char *image;       /* "image": a store name or a registry reference, or NULL */
	char *expected;    /* the task's "answer" as text, or NULL */
	bool has_scorer;
	struct batch_scorer scorer;
	char *scorer_command, *scorer_files; /* owned strings behind scorer */
	cJSON *metadata;   /* or NULL */
	cJSON *extra;      /* unknown fields, kept in results (an object) */
	cJSON *record;     /* a benchmark problem as read (bench.c), or NULL */
	cJSON *input_files; /* its input_files: name -> text, or NULL */
	struct batch_swe *swe; /* a SWE-bench row's tests (swe.c), or NULL */
	struct batch_setup *setup; /* its "setup", or NULL */
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
/* The same for a file of SWE-bench rows (batch_swe_task_parse). */
int batch_swe_load(const char *path, const char *image_template, struct batch_tasks *out,
		   batch_bad_line_fn report, void *arg, struct sc_err *err);
/* One line; -1 with why filled when it is not a valid task. */
int batch_task_parse(const char *line, size_t len, const char *base_dir, struct batch_task *t,
		     char *why, size_t whysize);
/* ---- SWE-bench-shaped tasks (swe.c) ---- */

struct batch_swe {
	char *test_patch;    /* the diff that adds the task's tests */
	char **f2p, **p2p;   /* FAIL_TO_PASS, PASS_TO_PASS test names */
	size_t n_f2p, n_p2p;
	char *eval_script;   /* runs the tests instead of pytest, or NULL */
	char *base_commit;   /* hex, or NULL: HEAD */
};
void batch_swe_free(struct batch_swe *s);
/* One row of SWE-bench's format (instance_id, problem_statement, image or
 * image_template's image, test_patch, FAIL_TO_PASS, PASS_TO_PASS,
 * eval_script, base_commit) as a task scored by BATCH_SCORER_SWE. */
int batch_swe_task_parse(const char *line, size_t len, const char *image_template,
			 struct batch_task *t, char *why, size_t whysize);
/* tmpl with {instance_id} (as it is) and {swebench_id} (lower case, "__"
 * as "_1776_", as SWE-bench names its images) replaced; -1 when the
 * result is no valid image name or does not fit. */
int batch_swe_image_name(const char *tmpl, const char *id, char *out, size_t size);
/* Whether pytest's -rA summary in out says test passed (PASSED or XFAIL,
 * the last line naming it winning); a test it does not name did not. */
bool batch_swe_test_passed(const char *out, size_t len, const char *test);
/* SWE-bench's report of one run: {"FAIL_TO_PASS": {"success", "failure",
 * "passed", "failed"}, "PASS_TO_PASS": ..., "resolved"}, names cut at limit
 * per list (0: all). Resolved: every test of both lists passed; with no
 * test named, the eval script exited 0. */
cJSON *batch_swe_verdict(const struct batch_swe *s, int exit_code, const char *out, size_t len,
			 size_t limit, bool *resolved);
/* The episode's changes under /testbed (git diff against base_commit,
 * new files included) into DIR/patch.diff. */
int batch_swe_capture_patch(struct cell *c, const struct batch_task *t, const char *dir,
			    struct sc_err *err);
/* In a fresh cell of the task's image: DIR/patch.diff applied, the test
 * files reset and the test patch applied, the tests run (timeout_s);
 * DIR/eval.log and DIR/report.json written, *tests the report for the
 * result line. */
int batch_swe_evaluate(struct cell *c, const struct batch_task *t, double timeout_s,
		       const char *dir, cJSON **tests, bool *resolved, bool *timed_out,
		       struct sc_err *err);

/* The fields every task format shares, each refused with why filled:
 * "id" (a non-empty string or an integer; at most BATCH_MAX_ID bytes, no
 * control characters) as a malloc'd string, and the problem text under
 * key (non-empty, at most AGENT_MAX_PROBLEM bytes). */
int batch_task_id(const cJSON *task, const char *key, char **out, char *why, size_t whysize);
const cJSON *batch_task_problem(const cJSON *task, const char *key, char *why, size_t whysize);
void batch_task_free(struct batch_task *t);
void batch_tasks_free(struct batch_tasks *ts);

/* A task's "image" as text: 1 to BATCH_MAX_IMAGE bytes, no spaces or
 * control characters (what it names is checked when the run starts). */
#define BATCH_MAX_IMAGE 512
bool batch_image_name_valid(const char *s);

/* FNV-1a, 64 bits: stable across hosts and versions (it decides shards). */
uint64_t batch_hash(const char *s);
/* A file-system-safe name for an id: the id when it is [A-Za-z0-9._-]
 * (not . or ..) and at most 100 bytes, else a cleaned prefix plus -HASH. */
void batch_safe_name(const char *id, char *out, size_t size);

/* ---- tasks' images (images.c) ---- */

/* One image the tasks name, with its own cell spec and pool. */
struct batch_image {
	char *named;            /* as the tasks name it */
	char store[64];         /* the stored image (a reference's store name) */
	char error[1024];      /* set: the tasks that need it fail with it */
	bool opened;
	struct rootfs_image img;
	struct cell_spec spec;  /* the batch's spec on this image */
	struct cell_pool *pool;
	size_t wanted;          /* cells the attempts on it take */
};

struct batch_images {
	struct batch_image *v;
	size_t n, cap;
};

/* The index of image `named` in is (added when new), or -1 out of memory. */
long batch_images_add(struct batch_images *is, const char *named);
/* Make every image usable, once each, in this thread: a store name must
 * be stored; a reference is pulled under its store name (o->pull); then
 * the store is trimmed to o->store_max, keeping these images. An image
 * that cannot be had gets its error (the batch goes on without it); the
 * others get base's spec on their layers. Pulls and evictions are told to
 * o->log. */
void batch_images_resolve(struct batch_images *is, const struct batch_options *o,
			  const struct cell_spec *base);
/* Pools are freed (their cells removed) here too, newest first: free
 * any pool made after these before this call. */
void batch_images_free(struct batch_images *is);

/* ---- benchmark folders (bench.c) ---- */

/* The problems of a benchmark's data file (a JSON array or JSONL of {id,
 * problem_statement, ground_truth, input_files?, ...}) as tasks scored by
 * BATCH_SCORER_REWARD; bad problems go to report (numbered by line, or by
 * element from 1) and are skipped. */
int batch_bench_load(const char *path, struct batch_tasks *out, batch_bad_line_fn report,
		     void *arg, struct sc_err *err);
/* Write t's input_files under the host directory stage (made afresh). */
int batch_bench_stage_inputs(const struct batch_task *t, const char *stage, struct sc_err *err);
/* The Python helper run in a cell (python3 -c HELPER reward|prompt DIR). */
extern const char BATCH_BENCH_HELPER[];
/* The helper's verdict in its stdout (the last "SANDCELL-RESULT {...}"
 * line), or NULL. */
cJSON *batch_bench_parse_result(const char *out, size_t len);

/* A command's log (run.c): "exit N[ (timed out)]NOTE", its stdout and
 * its stderr (best effort: nothing fails for want of it). */
void batch_write_exec_log(const char *log, const struct cell_result *res, const char *note);

/* ---- setups and groups (group.c) ---- */

/* Write s's files into cell c, then run its command there (/bin/sh -c,
 * in /testbed, s->timeout_s), its output to log (when not NULL). -1 with
 * err saying why: a file that cannot be written, a command that exits
 * non-zero (its last line of stderr) or times out. Thread-safe. */
int batch_setup_run(struct cell *c, const struct batch_setup *s, const char *log,
		    struct sc_err *err);
/* The helper process that forks cells for a threaded runner: start it
 * before the first thread (it is forked), with the specs the children may
 * be made from (copied). A killed runner's helper removes what it made. */
struct batch_forker;
int batch_forker_start(const struct cell_spec *const *specs, size_t nspecs,
		       struct batch_forker **out, struct sc_err *err);
/* Fork cell `parent` into n (1 to BATCH_MAX_GROUP) cells of specs[spec]:
 * names[i] is the i-th child's name, or "" with errors[i] saying why it
 * failed. Returns how many were made, or -1 (err). Thread-safe (one fork
 * at a time). */
int batch_forker_fork(struct batch_forker *f, size_t spec, const char *parent, size_t n,
		      char (*names)[64], char (*errors)[192], struct sc_err *err);
/* End the helper: it removes the cells it made that are still there. */
void batch_forker_stop(struct batch_forker *f);

/* ---- results (results.c) ---- */

struct batch_record {
	char *id;
	unsigned repeat;
	char status[24];
	bool scored;
	double score;
	unsigned steps;
	uint64_t input_tokens, output_tokens;
	double wall_s;
	bool answer_error;    /* the answer file was not kept (answer_error) */
	bool files_truncated; /* output over --files-limit, copied in part */
	long group;           /* -1: none */
	double setup_s;
	char *setup_run;      /* or NULL */
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

/* One attempt's outcome, as its result line says it (results.c writes the
 * line and reads it back: batch_record_parse). Strings may be NULL. */
struct batch_outcome {
	const struct batch_task *task;
	unsigned repeat;
	const char *status;      /* "error", "checker_timeout" or the agent's */
	const char *answer;      /* cut to BATCH_MAX_ANSWER bytes in the line */
	bool scored;
	double score;
	const char *scorer;
	unsigned steps;
	uint64_t input_tokens, output_tokens;
	double wall_s;
	const char *error;       /* why it failed, or a note on its score */
	const char *reward_error, *answer_error;
	const char *files_note;  /* set: the output was copied in part */
	bool vanilla;
	const char *dir;         /* the attempt directory, relative */
	const char *image;       /* the image as the task or --image names it */
	const char *store_image; /* the stored image it ran on (a pulled
				  * reference's store name), or NULL */
	const cJSON *tests;      /* SWE: the tests' report, or NULL */
	long group;              /* its group (repeat / group size), or -1 */
	unsigned group_size;     /* the group's attempts */
	double setup_s;          /* the group's setup, once for all of them */
	const char *setup_run;   /* which setup made its cell (attempts that
				  * share one share its name), or NULL */
};
/* The result line (malloc'ed, no newline), or NULL out of memory. */
char *batch_record_format(const struct batch_outcome *o);
/* Parse one result line; -1 when it is not one. Takes nothing. */
int batch_record_parse(const char *line, size_t len, struct batch_record *r);
void batch_record_free(struct batch_record *r);
void batch_records_free(struct batch_records *rs);
/* Append a copy of *r (rs takes over what it points to); -1 out of memory. */
int batch_records_push(struct batch_records *rs, const struct batch_record *r);

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

/* ---- keys (keyset.c) ---- */

/* A set of (id, repeat) keys. */
struct batch_keyset {
	struct sc_strset set; /* "ID\x1fREPEAT" */
};
bool batch_keyset_has(const struct batch_keyset *s, const char *id, unsigned repeat);
int batch_keyset_add(struct batch_keyset *s, const char *id, unsigned repeat);
/* Append *t to ts (capacity *cap, grown as needed); -1 when out of memory. */
int batch_tasks_push(struct batch_tasks *ts, size_t *cap, struct batch_task *t);
void batch_keyset_free(struct batch_keyset *s);

/* ---- summary (summary.c) ---- */

/* batch_collect into a caller's records (free with batch_records_free). */
int batch_collect_into(const char *const *dirs, size_t ndirs, struct batch_records *out,
		       size_t *expected, struct sc_err *err);
/* A count for people: exact below 10000, then "12.3k", "45.6M" (the
 * summary and the progress line). */
void batch_human_count(char *buf, size_t size, uint64_t v);

/* ---- export (export.c) ---- */

/* An OpenAI-format message list from conversation.json (either API). */
cJSON *batch_conversation_openai(const cJSON *conv, cJSON **tools_out);
/* An attempt's conversation.json (RUN/DIR/conversation.json, not through a
 * symlink), or NULL when missing, not JSON or larger than max bytes. */
cJSON *batch_load_conversation(const struct batch_record *r, size_t max);

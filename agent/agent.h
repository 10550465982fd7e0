/* sandcell agent: the LLM-in-Sandbox loop. A model (OpenAI-compatible chat
 * completions or the Anthropic Messages API) solves a problem by driving a
 * long-lived cell through three tools (execute_bash, str_replace_editor,
 * submit); the run leaves events.jsonl, trajectory.json, answer.txt and
 * files/ in an output directory. Uses runtime/cell.h only. */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/sc.h"
#include "../runtime/cell.h"

struct agent_prompt_config;

enum agent_api { AGENT_API_OPENAI, AGENT_API_ANTHROPIC };

enum agent_status {
	AGENT_SUBMITTED,       /* the model called submit */
	AGENT_MAX_STEPS,       /* --max-steps model turns without submit */
	AGENT_EPISODE_TIMEOUT, /* --episode-timeout ran out */
	AGENT_ERROR,           /* the model API or the cell failed */
};

#define AGENT_DEFAULT_MAX_STEPS 100
#define AGENT_DEFAULT_COMMAND_TIMEOUT 120.0
#define AGENT_DEFAULT_EPISODE_TIMEOUT 1800.0
#define AGENT_DEFAULT_REQUEST_TIMEOUT 600.0
#define AGENT_DEFAULT_ATTEMPTS 5
#define AGENT_DEFAULT_RETRY_BASE_MS 1000
#define AGENT_DEFAULT_FILES_LIMIT (256ULL << 20)
#define AGENT_MAX_PROBLEM (1U << 20)

struct agent_config {
	/* model endpoint */
	enum agent_api api;
	const char *base_url;   /* NULL: the provider's public URL */
	const char *model;      /* required */
	const char *api_key;    /* NULL or "": no auth header; never logged */
	double temperature;     /* < 0: not sent */
	long max_tokens;        /* 0: not sent (Anthropic: 4096) */
	const char *extra_body; /* JSON object merged into every request, or NULL */
	double request_timeout_s;
	unsigned attempts;      /* per request, for retryable failures */
	unsigned retry_base_ms; /* first backoff delay */

	/* episode */
	const char *problem;
	const char *input_dir;  /* copied to /testbed/documents, or NULL */
	const char *out_dir;    /* NULL: runs/<timestamp>-<id> */
	unsigned max_steps;
	double command_timeout_s;
	double episode_timeout_s;
	uint64_t files_limit;   /* bytes copied out of /testbed/output */
	bool keep;              /* leave the cell running at the end */
	bool quiet;             /* no progress lines */
	struct sc_log log;      /* where progress lines and warnings go (the
				 * caller's sink; called from agent_run's thread) */
	const atomic_bool *cancel; /* NULL, or raised (by a signal handler or
				 * another thread) to end the episode after the
				 * step in flight as an error ("interrupted");
				 * agent_run installs no signal handlers */

	const struct cell_spec *spec; /* the cell to create */

	/* A prompt config in the reference harness's format (promptcfg.h), or
	 * NULL: the built-in prompts and /testbed/documents, /testbed/output,
	 * /testbed/answer.txt. With one, its system prompt and instance prompt
	 * ({problem_statement} replaced) are sent verbatim, input_dir is copied
	 * to its input_dir and the answer read from {output_dir}/answer.txt. */
	const struct agent_prompt_config *prompts;
	/* agent_run_vanilla: the problem is the one message, sent as it is:
	 * no system prompt, no <problem> wrapper, no documents (the reference's
	 * benchmark vanilla mode, with create_prompt's text as the problem) */
	bool vanilla_verbatim;

	/* For batch runs (batch/batch.h): */
	struct cell *cell;      /* a ready cell (e.g. from a pool) used instead of
				 * creating one; agent_run neither creates nor
				 * destroys it. spec may be NULL, but give the
				 * spec the cell was made from: the system prompt
				 * says what its network allows */
};

struct agent_result {
	enum agent_status status;
	char *answer;           /* contents of /testbed/answer.txt, or NULL */
	size_t answer_len;
	char out_dir[4096];
	char cell_name[80];     /* set with keep */
	unsigned steps;
	uint64_t input_tokens, output_tokens;
	double wall_s;
	char error[SC_ERR_MAX]; /* with AGENT_ERROR */
	/* The answer file could not be kept (over 4 MiB, ...): why, and what to
	 * do; "" when it was read or there was none. The status stays. */
	char answer_error[320];
	/* The output directory was larger than files_limit: only part of it
	 * was copied out; files_note says so and what to do. */
	bool files_truncated;
	char files_note[320];
};

void agent_config_init(struct agent_config *cfg);
const char *agent_status_name(enum agent_status s);

/* Run one episode. Returns 0 when an episode ran (its outcome, including a
 * model or cell error mid-way, is in res and on disk), -1 when it could not
 * start (bad configuration, no output directory, no cell: err). */
int agent_run(const struct agent_config *cfg, struct agent_result *res, struct sc_err *err);
/* The directories an agent's cell starts with (cell_spec.make_dirs):
 * /testbed/output and /testbed/documents. A cell given in
 * agent_config.cell must have been made with them. */
extern const char *const AGENT_CELL_DIRS[];
void agent_result_free(struct agent_result *res);

/* The vanilla baseline (sandcell batch --mode vanilla): the same model
 * without a cell or tools, one call with the files of input_dir inlined in
 * the prompt; the reply's text is the answer. spec, cell and keep are not
 * used. Returns as agent_run. */
int agent_run_vanilla(const struct agent_config *cfg, struct agent_result *res,
		      struct sc_err *err);

/* The reference harness's prompt configs (LLM-in-Sandbox YAML): a mapping
 * with system_prompt and instance_prompt (required) and working_dir,
 * input_dir, output_dir (cell paths; defaults /testbed, /testbed/input,
 * /testbed/output as the reference's `run`). Parsed with libyaml into a plain struct. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "../common/sc.h"

#define AGENT_PROMPT_CONFIG_MAX (1U << 20)

struct agent_prompt_config {
	char *system_prompt;   /* directories replaced, then rendered as
				* str.format(command_docs="", demo="") */
	char *instance_prompt; /* directories replaced; rendered with
				* agent_prompt_format(problem_statement) per problem */
	char *working_dir, *input_dir, *output_dir;
	char *answer_path;     /* {output_dir}/answer.txt */
	/* a benchmark folder's config.yaml: its dataset and data_files when
	 * they are strings (not checked here), else NULL */
	char *dataset, *data_files;
};

/* Parse text (len bytes, from a file named `name` in messages). On -1, err
 * is one line naming the file and what is wrong (not YAML, not a mapping,
 * a missing field, a placeholder typo) and nothing is left allocated. */
int agent_prompt_config_parse(const char *name, const char *text, size_t len,
			      struct agent_prompt_config *pc, struct sc_err *err);
int agent_prompt_config_load(const char *path, struct agent_prompt_config *pc,
			     struct sc_err *err);
void agent_prompt_config_free(struct agent_prompt_config *pc);

/* tmpl with every "{key}" replaced by value (plain replacement, no format
 * syntax: other braces stay); malloc'd, NULL when out of memory. */
char *agent_prompt_replace(const char *tmpl, const char *key, const char *value);
/* tmpl as Python's str.format(key=value, ...) renders it, which is what the
 * reference does after its plain replacements: "{{" and "}}" become single
 * braces and "{key}" the value, in one pass (a value is not looked into);
 * any other "{name}" is left as written (str.format would raise). malloc'd,
 * NULL when out of memory. */
char *agent_prompt_format(const char *tmpl, const char *const *keys, const char *const *values,
			  size_t n);
/* The name of the first single-braced placeholder in tmpl that looks like
 * a typo of a known one ("{input_dri}", "{Problem_statement}"), copied into
 * buf; false when there is none. */
bool agent_prompt_find_typo(const char *tmpl, char *buf, size_t size);

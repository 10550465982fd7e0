/* The model behind one small interface: a conversation kept in the wire
 * format of one API (OpenAI-compatible chat completions or Anthropic
 * Messages), one request per turn, replies parsed into a neutral shape.
 * openai.c and anthropic.c implement llm_ops; llm.c holds the shared part
 * (HTTP, headers, retries). */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/sc.h"
#include "agent.h"
#include "../common/http.h"

#define LLM_MAX_TOOL_CALLS 64
#define LLM_MAX_HEADERS 8 /* request headers */
#define LLM_MAX_TEXT (4U << 20) /* content/reasoning/arguments kept */
#define LLM_MAX_TOKENS ((uint64_t)1 << 40) /* per reply: a count above it is clamped */

struct llm_tool_call {
	char *id;
	char *name;
	char *arguments; /* the arguments as text, as received */
	cJSON *args;     /* parsed object, NULL when arguments are not one */
	char *args_error; /* why args is NULL */
};

struct llm_reply {
	char *content;   /* text of the reply, "" when none */
	char *reasoning; /* reasoning_content / thinking, "" when none */
	struct llm_tool_call calls[LLM_MAX_TOOL_CALLS];
	size_t ncalls;
	size_t dropped_calls; /* asked for beyond LLM_MAX_TOOL_CALLS: not run, not in the history */
	char *finish_reason;
	uint64_t input_tokens, output_tokens;
	cJSON *message;  /* the assistant message, wire format (already in the history) */
	double latency_s; /* of the request that succeeded */
	long http_status;
	unsigned attempt; /* which attempt succeeded */
};

struct llm;

struct llm_ops {
	const char *name;
	/* endpoint path appended to the base URL; default base URL */
	const char *default_base, *path, *base_env, *key_env;
	int (*add_auth)(struct llm *m, struct sc_err *err); /* llm_add_header */
	/* the request body for the conversation so far */
	cJSON *(*request)(struct llm *m);
	/* parse a 2xx body and add the reply to the history; -1 with err for a
	 * malformed reply */
	int (*parse)(struct llm *m, const cJSON *root, struct llm_reply *r, struct sc_err *err);
	/* history */
	int (*add_user)(struct llm *m, const char *text);
	int (*add_tool_result)(struct llm *m, const struct llm_tool_call *call, const char *text,
			       bool is_error);
	/* append a line to the last message the model will read */
	int (*append_note)(struct llm *m, const char *text);
};

/* Told about every attempt: a request about to go out, and every attempt
 * that did not give a usable reply (with what went wrong). */
struct llm_event_sink {
	void (*request)(void *arg, unsigned attempt, size_t bytes);
	void (*failure)(void *arg, unsigned attempt, const struct sc_http_resp *resp,
			double retry_after_s, const char *problem);
	void *arg;
};

struct llm {
	const struct llm_ops *ops;
	const struct agent_config *cfg;
	char *url;
	cJSON *extra_body;  /* object, or NULL */
	cJSON *system;      /* string */
	cJSON *messages;    /* array */
	cJSON *tools;       /* in this API's shape */
	char *headers[LLM_MAX_HEADERS + 1]; /* NULL-terminated; wiped when freed */
	size_t nheaders;
	struct sc_http http;
	const atomic_bool *abort_flag; /* raised: give up now */
	struct llm_event_sink sink;
	unsigned tool_ids;  /* for calls that came without an id */
	double deadline;    /* sc_now() time after which no request starts */
};

extern const struct llm_ops llm_openai_ops;
extern const struct llm_ops llm_anthropic_ops;

/* The URL for base + the API's path ("/chat/completions" after an OpenAI
 * base ending in /v1; "/v1/messages" after an Anthropic base, or
 * "/messages" when the base already ends in /v1). Returns a new string. */
char *llm_endpoint(enum agent_api api, const char *base);

/* tools: offer the model the tools (the vanilla baseline does not);
 * abort_flag: NULL, or raised to give up (also a transfer in flight). */
int llm_init(struct llm *m, const struct agent_config *cfg, const char *system_prompt,
	     bool tools, const atomic_bool *abort_flag, struct sc_err *err);
void llm_free(struct llm *m);

enum llm_outcome {
	LLM_REPLY,        /* r is filled */
	LLM_FAILED,       /* err says why: fatal status, malformed reply, retries exhausted */
	LLM_OUT_OF_TIME,  /* the deadline passed while waiting */
	LLM_INTERRUPTED,  /* the abort flag was raised */
};

/* One model turn with retries. */
enum llm_outcome llm_complete(struct llm *m, struct llm_reply *r, struct sc_err *err);
void llm_reply_free(struct llm_reply *r);

/* Helpers for the API modules. */
/* Add the request header "<prefix><value>" (e.g. "x-api-key: ", key);
 * -1 when out of memory or room. */
int llm_add_header(struct llm *m, const char *prefix, const char *value);
/* A short, printable, quoted excerpt of a body ("'...'..." when cut). */
void llm_excerpt(const char *body, size_t len, char *out, size_t outsize);
char *llm_strndup_capped(const char *s, size_t max);
/* usage[key] as a token count: 0 unless a positive number, whole tokens,
 * at most LLM_MAX_TOKENS (a server may send 1e300 or 1e999, which no
 * integer holds). */
uint64_t llm_token_count(const cJSON *usage, const char *key);
/* Parse a tool-call argument text into call->args or call->args_error. */
void llm_parse_arguments(struct llm_tool_call *call);
/* Set call->arguments from the text s (len bytes) and parse it; arguments
 * over LLM_MAX_TEXT are cut and reported as too large (not as bad JSON). */
void llm_set_arguments(struct llm_tool_call *call, const char *s, size_t len);
/* The server's error message from an error body ({"error":{"message"}} or
 * {"error":"..."} or {"message":...}), else an excerpt of the body. */
void llm_error_message(const char *body, size_t len, const char *secret, char *out,
		       size_t outsize);
/* The three tools as JSON schemas in the OpenAI function shape. */
cJSON *llm_tool_schemas(void);

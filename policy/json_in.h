/* policy/ internals: reading JSON values with errors that name the JSON
 * path and the expected form ("policy.json: limits.memory: expected a size
 * like "512M" (4M to 16T), got "lots""). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "policy_priv.h"

#define PJ_PATH_MAX 160 /* a JSON path in an error message */

#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)
#define TiB (1024ULL * GiB)

struct pj_ctx {
	const char *origin; /* file path or built-in name */
	struct sc_err *err;
};

/* Fill the error: "<origin>: <path>: <message>"; returns -1. */
int policy_json_perr(struct pj_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "expected <what>, got <the value>" (or "missing" when it is NULL). */
int policy_json_expected(struct pj_ctx *c, const char *path, const char *what, const cJSON *it);
/* A printable, bounded, quoted copy of untrusted text. */
void policy_json_quote(char *buf, size_t size, const char *s, size_t max);
/* snprintf for text that may be cut (paths and notes in messages). */
void policy_json_bprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "parent.key" (key sanitized) and "parent[i]". */
void policy_json_path_key(char *buf, size_t size, const char *parent, const char *key);
void policy_json_path_idx(char *buf, size_t size, const char *parent, size_t i);

/* Every key of obj is one of `keys` (at most 32), each at most once. */
int policy_json_check_keys(struct pj_ctx *c, const cJSON *obj, const char *path,
		  const char *const *keys, size_t nkeys);
int policy_json_need_object(struct pj_ctx *c, const cJSON *it, const char *path);
int policy_json_need_array(struct pj_ctx *c, const cJSON *it, const char *path, size_t max,
		  size_t *n);

/* Typed values; each replaces *out only on success. */
int policy_json_get_string(struct pj_ctx *c, const cJSON *it, const char *path, size_t maxlen,
		  const char *what, char **out);
int policy_json_get_bool(struct pj_ctx *c, const cJSON *it, const char *path, bool *out);
bool policy_json_uint(const cJSON *it, uint64_t min, uint64_t max, uint64_t *out);
int policy_json_get_uint(struct pj_ctx *c, const cJSON *it, const char *path, uint64_t min,
		uint64_t max, uint64_t *out);
/* "512M"-style string or a whole number of bytes, in [min, max]. */
int policy_json_get_size(struct pj_ctx *c, const cJSON *it, const char *path, uint64_t min,
		uint64_t max, const char *range, uint64_t *out);
/* A JSON number or a string, checked by `parse` (sc_parse_seconds...). */
int policy_json_get_decimal(struct pj_ctx *c, const cJSON *it, const char *path,
		   int (*parse)(const char *, double *), const char *what, double *out);
/* A whole number below 2^53 (larger doubles are inexact), or a decimal or
 * 0x-hex string up to 2^64-1. */
int policy_json_get_u64(struct pj_ctx *c, const cJSON *it, const char *path, uint64_t *out);
/* "EPERM" or 1..4095. */
int policy_json_get_errno(struct pj_ctx *c, const cJSON *it, const char *path, int *out);

/* Paths: absolute, no "." or ".." component, at most POL_MAX_PATH bytes. */
bool policy_json_valid_abs_path(const char *s);
int policy_json_get_abs_path(struct pj_ctx *c, const cJSON *it, const char *path, char **out);
bool policy_json_path_under(const char *p, const char *dir);
/* Equal, ignoring repeated and trailing slashes. */
bool policy_json_same_path(const char *a, const char *b);

/* policy/parse_seccomp.c: the "seccomp" member (null: no filter). */
int policy_json_parse_seccomp(struct pj_ctx *c, const cJSON *obj, struct policy_seccomp **out);

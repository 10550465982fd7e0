/* Typed reads of one member of a cJSON object, for the modules that parse
 * JSON (policy, rootfs, agent, batch, api; never runtime). The plain reads
 * take a member that is absent or of another type as NULL or the default;
 * the _opt reads, for input that must be refused when a member has the
 * wrong type, say so (false) and take only an absent member or a JSON
 * null as "not given". Pure, thread-safe. */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>

/* The string member k of o, or NULL. */
const char *sc_json_str(const cJSON *o, const char *k);
/* The number member k of o, or dflt. */
double sc_json_num(const cJSON *o, const char *k, double dflt);
/* The member k of o is true (a JSON true, nothing else). */
bool sc_json_true(const cJSON *o, const char *k);

/* k absent or null: *out NULL, true; a string: *out it, true; anything
 * else: *out NULL, false. */
bool sc_json_opt_str(const cJSON *o, const char *k, const char **out);
/* k absent or null: *out dflt, true; a finite number: *out it, true;
 * anything else (NaN and infinities included): *out dflt, false. */
bool sc_json_opt_num(const cJSON *o, const char *k, double dflt, double *out);

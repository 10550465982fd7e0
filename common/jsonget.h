/* Typed reads of one member of a cJSON object, for the modules that parse
 * JSON (policy, rootfs, agent, batch, api; never runtime). A member that
 * is absent or of another type reads as NULL or the default. */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>

/* The string member k of o, or NULL. */
const char *sc_json_str(const cJSON *o, const char *k);
/* The number member k of o, or dflt. */
double sc_json_num(const cJSON *o, const char *k, double dflt);
/* The member k of o is true (a JSON true, nothing else). */
bool sc_json_true(const cJSON *o, const char *k);

#include <math.h>

#include "jsonget.h"

const char *sc_json_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

double sc_json_num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

bool sc_json_true(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

bool sc_json_opt_str(const cJSON *o, const char *k, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = cJSON_IsString(v) ? v->valuestring : NULL;
	return !v || cJSON_IsNull(v) || cJSON_IsString(v);
}

bool sc_json_opt_num(const cJSON *o, const char *k, double dflt, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = dflt;
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

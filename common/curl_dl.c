/* See curl_dl.h: libcurl is resolved at run time, never linked. */
#include "curl_dl.h"

#include "dl.h"

static struct curl_dl table;
static CURLcode (*global_init)(long flags);

static bool curl_init(char *why, size_t why_size)
{
	CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
	if (rc == CURLE_OK)
		return true;
	snprintf(why, why_size, "curl_global_init failed: %s", table.easy_strerror(rc));
	return false;
}

static const struct sc_dl_sym curl_syms[] = {
	{"curl_global_init", (void **)&global_init},
	{"curl_easy_init", (void **)&table.easy_init},
	{"curl_easy_setopt", (void **)&table.easy_setopt},
	{"curl_easy_perform", (void **)&table.easy_perform},
	{"curl_easy_getinfo", (void **)&table.easy_getinfo},
	{"curl_easy_reset", (void **)&table.easy_reset},
	{"curl_easy_cleanup", (void **)&table.easy_cleanup},
	{"curl_easy_strerror", (void **)&table.easy_strerror},
	{"curl_slist_append", (void **)&table.slist_append},
	{"curl_slist_free_all", (void **)&table.slist_free_all},
	{"curl_version_info", (void **)&table.version_info},
};

static struct sc_dl curl_lib = {
	.sonames = {"libcurl.so.4", "libcurl-gnutls.so.4"},
	.what = "libcurl",
	.package = "libcurl4",
	.syms = curl_syms,
	.nsyms = SC_ARRAY_LEN(curl_syms),
	.init = curl_init,
	SC_DL_STATE,
};

const struct curl_dl *sc_curl_load(struct sc_err *err)
{
	return sc_dl_load(&curl_lib, err) < 0 ? NULL : &table;
}

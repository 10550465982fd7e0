/* libcurl loaded on demand. Linking libcurl costs ~5 ms at every process
 * start (it pulls in ~30 shared libraries), and `sandcell run` is the hot
 * path, so the binary never links it: the few commands that speak HTTP
 * (agent, image pull) call sc_curl_load() and go through the table it
 * returns. The types and constants come from libcurl4-openssl-dev's headers. */
#pragma once
#include <curl/curl.h>

#include "sc.h"

struct curl_dl {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	void (*easy_reset)(CURL *h);
	void (*easy_cleanup)(CURL *h);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
	curl_version_info_data *(*version_info)(CURLversion age);
};

/* dlopen libcurl.so.4 (else libcurl-gnutls.so.4) once per process, resolve
 * the functions above and run curl_global_init. Thread-safe. Returns the
 * table, or NULL with err filled ("install libcurl4"). */
const struct curl_dl *sc_curl_load(struct sc_err *err);

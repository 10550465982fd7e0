/* See curl_dl.h: libcurl is resolved at run time, never linked. */
#include "curl_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

static struct curl_dl table;
static const struct curl_dl *loaded;
static char load_error[SC_ERR_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool resolve(void *lib, const char *sym, void **slot)
{
	*slot = dlsym(lib, sym);
	if (*slot)
		return true;
	snprintf(load_error, sizeof(load_error), "libcurl lacks %s (libcurl too old?)", sym);
	return false;
}

static void load_once(void)
{
	static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};
	void *lib = NULL;
	for (size_t i = 0; i < SC_ARRAY_LEN(names) && !lib; i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(load_error, sizeof(load_error),
			 "cannot load libcurl.so.4: %s (install the libcurl4 package)", dlerror());
		return;
	}
	CURLcode (*global_init)(long flags) = NULL;
	/* Function pointers through void **: POSIX guarantees dlsym's result
	 * converts to a function pointer. */
	if (!resolve(lib, "curl_global_init", (void **)&global_init) ||
	    !resolve(lib, "curl_easy_init", (void **)&table.easy_init) ||
	    !resolve(lib, "curl_easy_setopt", (void **)&table.easy_setopt) ||
	    !resolve(lib, "curl_easy_perform", (void **)&table.easy_perform) ||
	    !resolve(lib, "curl_easy_getinfo", (void **)&table.easy_getinfo) ||
	    !resolve(lib, "curl_easy_reset", (void **)&table.easy_reset) ||
	    !resolve(lib, "curl_easy_cleanup", (void **)&table.easy_cleanup) ||
	    !resolve(lib, "curl_easy_strerror", (void **)&table.easy_strerror) ||
	    !resolve(lib, "curl_slist_append", (void **)&table.slist_append) ||
	    !resolve(lib, "curl_slist_free_all", (void **)&table.slist_free_all) ||
	    !resolve(lib, "curl_version_info", (void **)&table.version_info)) {
		dlclose(lib);
		return;
	}
	CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		snprintf(load_error, sizeof(load_error), "curl_global_init failed: %s",
			 table.easy_strerror(rc));
		dlclose(lib);
		return;
	}
	/* The library stays loaded for the life of the process. */
	loaded = &table;
}

const struct curl_dl *sc_curl_load(struct sc_err *err)
{
	pthread_once(&once, load_once);
	if (!loaded)
		sc_fail(err, 0, "%s", load_error);
	return loaded;
}

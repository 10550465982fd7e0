/* See dl.h. */
#include "dl.h"

#include <dlfcn.h>

static bool dl_resolve(struct sc_dl *dl, void *lib)
{
	for (size_t i = 0; i < dl->nsyms; i++) {
		*dl->syms[i].slot = dlsym(lib, dl->syms[i].name);
		if (!*dl->syms[i].slot) {
			snprintf(dl->error, sizeof(dl->error), "%s lacks %s (%s too old?)", dl->what,
				 dl->syms[i].name, dl->what);
			return false;
		}
	}
	return !dl->init || dl->init(dl->error, sizeof(dl->error));
}

static void dl_open(struct sc_dl *dl)
{
	void *lib = NULL;
	for (size_t i = 0; i < SC_ARRAY_LEN(dl->sonames) && dl->sonames[i] && !lib; i++)
		lib = dlopen(dl->sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(dl->error, sizeof(dl->error), "cannot load %s: %s (install the %s package)",
			 dl->sonames[0], dlerror(), dl->package);
		return;
	}
	if (!dl_resolve(dl, lib)) {
		dlclose(lib);
		return;
	}
	dl->loaded = true; /* never closed: the table points into it */
}

int sc_dl_load(struct sc_dl *dl, struct sc_err *err)
{
	pthread_mutex_lock(&dl->mu);
	if (!dl->tried) {
		dl->tried = true;
		dl_open(dl);
	}
	bool ok = dl->loaded;
	pthread_mutex_unlock(&dl->mu);
	return ok ? 0 : sc_fail(err, 0, "%s", dl->error);
}

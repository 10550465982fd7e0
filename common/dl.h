/* A shared library loaded on demand: dlopen it once per process and
 * resolve a table of its functions (the binary never links libraries that
 * are slow to load or only some commands need: libcurl, libmicrohttpd). */
#pragma once
#include <pthread.h>

#include "sc.h"

/* One function to resolve: its name and where its address goes. */
struct sc_dl_sym {
	const char *name;
	void **slot; /* POSIX: dlsym's result converts to a function pointer */
};

/* What to load, filled in by the owner (a file-scope object: the library
 * stays loaded for the life of the process), and the load's outcome, kept
 * by sc_dl_load (start it with SC_DL_STATE). */
struct sc_dl {
	const char *sonames[2]; /* tried in order; the first is named in errors */
	const char *what;       /* "libcurl", for messages */
	const char *package;    /* the Debian package that brings it */
	const struct sc_dl_sym *syms;
	size_t nsyms;
	/* Run once all symbols are resolved; false (with why filled) fails the load. */
	bool (*init)(char *why, size_t why_size);

	pthread_mutex_t mu;
	bool tried, loaded;
	char error[SC_ERR_MAX];
};
#define SC_DL_STATE .mu = PTHREAD_MUTEX_INITIALIZER

/* Load the library and fill every slot, the first time it is called; later
 * calls give the same outcome. Thread-safe. Returns 0, or -1 with err
 * filled ("cannot load ...: ... (install the ... package)"). */
int sc_dl_load(struct sc_dl *dl, struct sc_err *err);

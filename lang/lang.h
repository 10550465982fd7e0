/* sandcell lang: run source code of a named language in a cell — write the
 * source, compile where the language needs it, run, and hand back a plain C
 * result shaped like SandboxFusion's (compile_result, run_result, status).
 * Above runtime/, below agent/: cli/, the agent, the server and MCP all call
 * this one implementation. No JSON here: callers encode the result.
 *
 * Typical use:
 *   const struct lang_def *l = lang_find("cpp");
 *   struct lang_run_req req; lang_run_req_init(&req);
 *   req.lang = l; req.source = src; req.source_len = n;
 *   struct lang_result res;
 *   lang_run(&spec, &req, &res, &err);   // a fresh cell, removed after
 *   ... lang_result_free(&res);
 *
 * Threads. The language table is constant; lang_find, lang_available,
 * lang_status_name, lang_exec_status_name and lang_result_free are
 * thread-safe. lang_run_in is thread-safe on distinct cells (one cell, one
 * thread at a time, as cell_exec). lang_run makes and removes a cell with
 * cell_create, so it has cell_create's rule: not from a multi-threaded
 * process (a threaded caller takes a cell from a pool and calls
 * lang_run_in). Events reach the caller's sink from the calling thread;
 * with stream set, a helper thread runs cell_exec meanwhile (joined before
 * the call returns). Sessions: lang_session_run_in, _run, _is and _rm as
 * lang_run_in; lang_session_start as lang_run (it calls cell_create).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc.h"
#include "../runtime/cell.h"

#define LANG_MAX_SOURCE (4u << 20) /* bytes of source */
#define LANG_MAX_FETCH 32          /* --fetch paths per run */
#define LANG_MAX_PATH 1024         /* a cell path given by the caller */
#define LANG_DEFAULT_FETCH_LIMIT (10ULL << 20)
#define LANG_DEFAULT_COMPILE_TIMEOUT 30.0
#define LANG_DEFAULT_RUN_TIMEOUT 30.0
#define LANG_DEFAULT_INSTALL_TIMEOUT 300.0
#define LANG_MAX_LIBRARIES 32
#define LANG_MAX_LIBRARY_NAME 128
#define LANG_PY_LIBS "/tmp/.sandcell/pylib" /* pip --target of --libraries */
#define LANG_R_LIBS "/tmp/.sandcell/rlib"   /* R's --libraries (on R_LIBS_USER) */
/* Is name a library name (and version spec) the install tools may be
 * given: 1-127 bytes of [A-Za-z0-9._+-=<>!~@/], not starting with '-'? */
bool lang_library_name_ok(const char *name);

/* One row of the language table. */
struct lang_def {
	const char *name;          /* "python", "cpp", ... */
	const char *aliases[4];    /* SandboxFusion's and common names, NULL-ended */
	const char *source_file;   /* file the source is written to ("main.cpp");
				    * java: the class name decides it */
	const char *compiler;      /* tool that must exist to compile, NULL: none */
	const char *runner;        /* tool that must exist to run, NULL: the build */
	const char *how;           /* one line for `code languages` */
};

/* The table (constant, in docs/code.md order) and its length. */
const struct lang_def *lang_table(size_t *n);
/* A language by name or alias (exact, then ignoring case), or NULL. */
const struct lang_def *lang_find(const char *name);
/* Are the language's tools in one of roots (a root filesystem's
 * directories, e.g. an image's layers top first; NULL/0: the host's "/")
 * under /usr/local/bin, /usr/bin or /bin? Links count as present; nothing
 * is executed. */
bool lang_available(const struct lang_def *l, const char *const *roots, size_t nroots);
/* The Debian packages an image has installed, for `code languages`: its
 * dpkg status, from the top one of roots (as lang_available) that has
 * one. Nothing is executed and no link followed; an image without one
 * has none (not an error). */
struct lang_dpkg;
int lang_dpkg_open(const char *const *roots, size_t nroots, struct lang_dpkg **out,
		   struct sc_err *err);
void lang_dpkg_free(struct lang_dpkg *d);
/* The language's version: that of the first of its Debian packages d has
 * installed (its name into package, a buffer of psize bytes), or NULL. */
const char *lang_version(const struct lang_def *l, const struct lang_dpkg *d, char *package,
			 size_t psize);
/* Does the language take --libraries (an install step of its own)? */
bool lang_has_libraries(const struct lang_def *l);
/* Java: the class name a source declares public (or its first class), in
 * out (size >= 2); "Main" when none is found. Only [A-Za-z0-9_$]. */
void lang_java_class(const char *src, size_t len, char *out, size_t size);
/* Scala: the first object the source declares (what `scala` runs), in out
 * (size >= 2); "Main" when none is found. Only [A-Za-z0-9_]. */
void lang_scala_object(const char *src, size_t len, char *out, size_t size);

/* SandboxFusion's statuses. */
enum lang_status { LANG_SUCCESS, LANG_FAILED, LANG_SANDBOX_ERROR };
enum lang_exec_status { LANG_EXEC_FINISHED, LANG_EXEC_ERROR, LANG_EXEC_TIME_LIMIT };
/* "Success", "Failed", "SandboxError"; "Finished", "Error", "TimeLimitExceeded". */
const char *lang_status_name(enum lang_status s);
const char *lang_exec_status_name(enum lang_exec_status s);

/* One step (compile or run). Output is the program's bytes as they came
 * (NUL-terminated, may hold NULs or invalid UTF-8: encoders replace). */
struct lang_exec {
	bool present;              /* false: the step did not happen (JSON null) */
	enum lang_exec_status status;
	int return_code;           /* as cell_exec: status, 128+N, 124, ... */
	char *out, *err;           /* malloc'd, never NULL when present */
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
	double execution_time;     /* seconds */
	const char *limit_hit;     /* "memory", "pids", "timeout" or NULL */
	uint64_t peak_memory;
	bool prestarted;           /* it ran in the cell's pre-started interpreter */
};

struct lang_file {
	char path[LANG_MAX_PATH];  /* as the caller asked for it */
	char *data;                /* malloc'd */
	size_t len;
	bool truncated;            /* larger than the fetch limit */
};

#define LANG_MAX_PLOTS 64
#define LANG_MAX_PLOT_BYTES (16u << 20)     /* one plot */
#define LANG_MAX_PLOTS_TOTAL (64u << 20)    /* all plots of one result */

struct lang_plot {
	const char *format;        /* "png", or "html" (a plotly figure) */
	char *data;                /* malloc'd */
	size_t len;
};

struct lang_result {
	enum lang_status status;
	struct lang_exec compile, run;
	struct lang_file files[LANG_MAX_FETCH];
	size_t nfiles;
	const char *limit_hit;     /* the first step's limit hit, or NULL */
	uint64_t peak_memory;      /* bytes, the largest step's; 0 unknown */
	double wall_s;             /* the whole run, cell included */
	char message[SC_ERR_MAX];  /* SandboxError: what failed; else "" */
	/* Python: matplotlib figures shown, saved or left open, as PNG
	 * (checked to start with the PNG signature), plotly figures shown, as
	 * HTML; R: pages of the default device, as PNG; a session returns all
	 * of its plots since the last clear. */
	struct lang_plot plots[LANG_MAX_PLOTS];
	size_t nplots;
	bool plots_truncated;      /* more than LANG_MAX_PLOTS, or over the bytes */
	/* sessions: the interpreter was restarted (it crashed, or was killed
	 * after a timeout), its state is lost; the note is on stderr */
	bool session_restarted;
};

/* Events, in order: each step's stdout and stderr (after the step; as
 * they come when the request asks to stream), then one LANG_EV_PLOT per
 * plot (data/len: the PNG or HTML, format says which), then one result. data/result are valid during
 * the call. */
enum lang_event_type { LANG_EV_STDOUT, LANG_EV_STDERR, LANG_EV_PLOT, LANG_EV_RESULT };
struct lang_event {
	enum lang_event_type type;
	const char *data;              /* stdout/stderr bytes */
	size_t len;
	const struct lang_result *result; /* LANG_EV_RESULT */
	const char *format;            /* LANG_EV_PLOT: "png" or "html" */
};
struct lang_sink {
	void (*fn)(void *ctx, const struct lang_event *ev); /* NULL: no events */
	void *ctx;
};

struct lang_run_req {
	const struct lang_def *lang;
	const char *source;
	size_t source_len;             /* at most LANG_MAX_SOURCE */
	int stdin_fd;                  /* the program's stdin, -1: /dev/null */
	const char *files_dir;         /* host directory copied into the work
				        * directory first, or NULL */
	const char *fetch[LANG_MAX_FETCH]; /* cell paths read back after the run
					    * (relative: to the work directory) */
	size_t nfetch;
	bool fetch_files_only;         /* a fetch path that is missing or no
				        * regular file is left out (as
				        * SandboxFusion does), not an error */
	uint64_t fetch_limit;          /* bytes per fetched file (and the
				        * --files copy); 0: default */
	double compile_timeout_s, run_timeout_s; /* 0: none */
	uint64_t output_limit;         /* per stream; 0: CELL_DEFAULT_OUTPUT */
	const char *workdir;           /* absolute cell path for the source and
				        * the commands; NULL: /testbed */
	struct lang_sink sink;
	bool stream;                   /* stdout/stderr events as they come, on
				        * the caller's thread (cell_exec's
				        * on_output) */
	/* has_cancel: cancel_fd becoming readable (its peer closed, or a
	 * byte written: a client that went away) kills the step running and
	 * ends the run with a SandboxError, as cell_exec's cancel does. */
	bool has_cancel;
	int cancel_fd;
	/* Libraries installed first with the language's tool (python: pip
	 * into LANG_PY_LIBS; javascript: npm into the work directory; ruby:
	 * gem). Python libraries that already import are not installed. The
	 * tool needs the cell's egress allowlist: without network (lang_run:
	 * spec->egress NULL; lang_run_in: has_network false) a library that
	 * is missing is a SandboxError saying so. */
	const char *libraries[LANG_MAX_LIBRARIES];
	size_t nlibraries;
	bool has_network;
	double install_timeout_s;      /* 0: LANG_DEFAULT_INSTALL_TIMEOUT */
	bool prepared;                 /* lang_run_in: the cell has the support
				        * files (made with lang_seed_files, or by
				        * lang_prepare_cell): not written again */
	bool prestarted;               /* lang_run_in, Python: the run may take the
				        * cell's pre-started interpreter
				        * (lang_prep_cache.prestart) */
	const char *extra_env;         /* one more KEY=VAL for the compile and
				        * run steps (a request's TRACEPARENT),
				        * or NULL */
};
void lang_run_req_init(struct lang_run_req *req);

/* Run in an existing cell. Returns 0 with res filled (status says how the
 * program did, SandboxError with message when a step could not be run),
 * or -1 (err) for bad requests (no language, source too large, bad path)
 * and when nothing could be done at all; res is then zeroed. */
int lang_run_in(struct cell *c, const struct lang_run_req *req, struct lang_result *res,
		struct sc_err *err);
/* The support files every run expects in its cell (Python's plot backend
 * and hook, R's profile), as cell_spec.seed_files: a cell made with them
 * needs no writes before a run. lang_run seeds its cells; a pool's spec
 * should carry them too (and its lang_prep_cache say so), and its runs set
 * req->prepared. */
#define LANG_SEED_FILES 4
size_t lang_seed_files(struct cell_seed_file out[LANG_SEED_FILES]);

/* What lang_prepare_cell keeps between the cells of one pool (one spec,
 * so one image): the bytecode of the support module every Python start
 * loads (sitecustomize), compiled by the image's own python3 in the first
 * cell, before anything else runs there, and written into the next cells
 * beside its source. Runs write no bytecode, so without it each start
 * compiles the module again (~2 ms). Start zeroed; one per process that
 * prepares cells (a pool worker's copy is its own); not thread-safe. */
struct lang_prep_cache {
	bool seeded;     /* set by the owner: the pool's spec has lang_seed_files */
	/* set by the owner: each cell gets a Python interpreter started ahead
	 * (lang/py/sc_zygote.py), with these modules imported (NULL-ended,
	 * or NULL), in which a run with lang_run_req.prestarted runs */
	bool prestart;
	const char *const *preimport;
	bool tried;      /* the compile was tried (once, however it went) */
	char tag[40];    /* the interpreter's cache tag, e.g. "cpython-311" */
	char *pyc;       /* malloc'd, NULL: none */
	size_t pyc_len;
};
void lang_prep_cache_free(struct lang_prep_cache *pc);
#define LANG_MAX_PREIMPORT 16 /* modules a pre-started interpreter imports */

/* Write the support files that runs of every language need (Python's
 * plot backend) into a fresh cell ahead of time, e.g. as a cell pool's
 * cell_prepare_fn; ctx: NULL, or a struct lang_prep_cache for the pool's
 * cells. A run in the cell then sets req->prepared. */
int lang_prepare_cell(struct cell *c, void *ctx, struct sc_err *err);
/* The same in a fresh cell of spec (removed after); see Threads above. */
int lang_run(const struct cell_spec *spec, const struct lang_run_req *req,
	     struct lang_result *res, struct sc_err *err);
void lang_result_free(struct lang_result *res);

/* ---- sessions: a kept Python interpreter in a long-lived cell ----
 * A stdlib driver (lang/py/driver.py) is written into the cell under
 * LANG_SESSION_DIR: a supervisor holding a unix socket there forks the
 * interpreter, and forks a fresh one when it dies. The socket's directory
 * is named by a key derived from the cell's token (cell_derive_secret),
 * which the cell cannot know before the session starts. Each run execs the
 * driver's client in the cell, which passes its stdout/stderr to the
 * interpreter and reads the exit code back over that socket; a timeout
 * is a SIGINT to the interpreter (SIGKILL after 5 s more). Everything
 * the driver does is inside the cell; the host only execs, reads the
 * client's status from the source's memfd, and reads bounded files (the
 * plots) with cell_read_file. One run at a time per session (the client
 * takes a lock in the cell). Only Python keeps state. */
#define LANG_SESSION_DIR "/tmp/.sandcell/session"

struct lang_session_req {
	const char *source;
	size_t source_len;             /* at most LANG_MAX_SOURCE */
	double timeout_s;              /* 0: none */
	bool clear_plots;              /* forget earlier plots first */
	uint64_t output_limit;         /* per stream; 0: CELL_DEFAULT_OUTPUT */
	struct lang_sink sink;
	bool stream;                   /* as lang_run_req's */
	bool has_cancel;               /* as lang_run_req's */
	int cancel_fd;
	/* installed first, as lang_run_req's (pip, into LANG_PY_LIBS); the
	 * network is the session cell's (recorded by lang_session_start) */
	const char *libraries[LANG_MAX_LIBRARIES];
	size_t nlibraries;
	/* NULL or "": the cell's session. Else another interpreter in the
	 * same cell (its own directory and state; the cell's session must be
	 * installed), started by its first run: at most
	 * LANG_SESSION_CONTEXT_MAX of [A-Za-z0-9_-]. The contexts share the
	 * session's plot directory (runs at the same time in two contexts may
	 * see each other's plots) and its history (a fork's replay runs every
	 * context's code, in order, in the child's one session). */
	const char *context;
};
#define LANG_SESSION_CONTEXT_MAX 64
void lang_session_req_init(struct lang_session_req *req);

/* Write the driver into an existing cell and start the interpreter
 * (waits until it answers). l must be python. */
int lang_session_install(struct cell *c, const struct lang_def *l, struct sc_err *err);
/* A new long-lived cell NAME of spec with a session installed (the cell
 * is removed again when that fails). As cell_create: not threaded. */
int lang_session_start(const struct cell_spec *spec, const char *name, const struct lang_def *l,
		       struct sc_err *err);
/* Is c a session's cell (its driver is there)? */
bool lang_session_is(struct cell *c);
/* Run source in the session. As lang_run_in: 0 with res filled (run only,
 * compile null; plots: every plot since the last clear), or -1 (err) for
 * bad requests and when c is not a session. */
int lang_session_run_in(struct cell *c, const struct lang_session_req *req,
			struct lang_result *res, struct sc_err *err);
/* The same for the session's name. */
int lang_session_run(const char *name, const struct lang_session_req *req,
		     struct lang_result *res, struct sc_err *err);
/* A fork's child c (cell_fork) whose parent was a session: start a
 * session in c and run again, in order, the code the parent's session
 * ran (its history, kept in the cell and copied with its files; one
 * that passed LANG_HISTORY_MAX bytes is refused). Each run gets
 * LANG_REPLAY_RUN_TIMEOUT seconds and
 * its output is dropped. r says what happened: 0 when every run that
 * succeeded in the parent succeeded again (r->runs: how many ran); 1
 * when one did not (r->runs: its number, from 1; r->why: which and its
 * stderr's end); -1 (r->why too) when no session could be started or
 * the history cannot be read. Not a session's child: 0, nothing
 * started, r->tried false. */
#define LANG_HISTORY_MAX (16u << 20)
#define LANG_REPLAY_RUN_TIMEOUT 300.0
struct lang_replay {
	bool tried, ok;
	size_t runs;
	char why[512];
};
int lang_session_replay(struct cell *c, struct lang_replay *r);
/* Stop and remove a session's cell; refuses a cell that is not one. */
int lang_session_rm(const char *name, struct sc_err *err);

/* ---- notebooks: cells run as a Jupyter kernel runs them ----
 * SandboxFusion's /run_jupyter over a session: lang/py/sc_jupyter.py is
 * written into the session's cell, and each cell is one session run that
 * leaves, besides its stdout, stderr and plots, a record: JSON text
 * {"display": [{MIME: data}, ...], "error": [{"ename", "evalue",
 * "traceback": [lines]}]} (the value of the cell's last expression and its
 * display() calls; the exception that ended it). lang does not decode the
 * record: the caller does, and must treat it as the cell's own words (the
 * cell's code could have written anything there). Threads: as the
 * session calls. */
#define LANG_NOTEBOOK_MAX_CELL ((LANG_MAX_SOURCE - 256) / 2) /* bytes of one cell */
#define LANG_NOTEBOOK_MAX_RECORD (96u << 20)                 /* bytes of one record */

/* Start a Python session in c (lang_session_install) with the notebook's
 * runner, its working directory workdir (absolute; the cells' files). */
int lang_notebook_start(struct cell *c, const char *workdir, struct sc_err *err);
/* Run cell number n (from 1, once each) of req->source (clear_plots is
 * implied: res has this cell's plots). As lang_session_run_in; *record:
 * malloc'd NUL-terminated JSON text of *record_len bytes, or NULL when the
 * cell left none (its interpreter died, or it was stopped before). */
int lang_notebook_cell(struct cell *c, unsigned n, const struct lang_session_req *req,
		       struct lang_result *res, char **record, size_t *record_len,
		       struct sc_err *err);

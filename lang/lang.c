/* Languages: the table, and one run (write, compile, run, fetch). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* How each language compiles and runs: argv templates where "{src}" is the
 * source file and "{cls}" the Java class. No shell anywhere. */
struct lang_steps {
	const char *compile[12]; /* NULL-ended; empty: interpreted */
	const char *run[8];
	const char *env[8];      /* KEY=VAL for both steps */
};

#define GO_ENV "GOCACHE=/tmp/.sandcell-go/cache", "GOPATH=/tmp/.sandcell-go/path", \
	"GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "CGO_ENABLED=0"

static const struct lang_def TABLE[] = {
	{"python", {"python3", "py", NULL}, "main.py", NULL, "python3", "python3 main.py"},
	{"javascript", {"nodejs", "node", "js", NULL}, "main.js", NULL, "node", "node main.js"},
	{"typescript", {"ts", NULL}, "main.ts", "tsc", "node", "tsc, then node main.js"},
	{"java", {NULL}, "Main.java", "javac", "java",
	 "javac CLASS.java; java CLASS (public class of the source, default Main)"},
	{"cpp", {"c++", "cxx", NULL}, "main.cpp", "g++", NULL, "g++ -O2 -std=c++17, then ./main"},
	{"c", {NULL}, "main.c", "gcc", NULL, "gcc -O2 -lm, then ./main"},
	{"go", {"golang", NULL}, "main.go", "go", NULL, "go build (offline, module cache in the cell), then ./main"},
	{"rust", {"rs", NULL}, "main.rs", "rustc", NULL, "rustc -O, then ./main"},
	{"r", {"R", "rscript", NULL}, "main.R", NULL, "Rscript", "Rscript main.R"},
	{"ruby", {"rb", NULL}, "main.rb", NULL, "ruby", "ruby main.rb"},
	{"bash", {"sh", "shell", NULL}, "main.sh", NULL, "bash", "bash main.sh"},
};

static const struct lang_steps STEPS[SC_ARRAY_LEN(TABLE)] = {
	{.run = {"python3", "-u", "{src}"}, .env = {"PYTHONDONTWRITEBYTECODE=1"}},
	{.run = {"node", "{src}"}},
	{.compile = {"tsc", "--outDir", ".", "{src}"}, .run = {"node", "main.js"}},
	{.compile = {"javac", "-encoding", "UTF-8", "-d", ".", "{src}"},
	 .run = {"java", "-cp", ".", "{cls}"}},
	{.compile = {"g++", "-O2", "-std=c++17", "-o", "main", "{src}"}, .run = {"./main"}},
	{.compile = {"gcc", "-O2", "-o", "main", "{src}", "-lm"}, .run = {"./main"}},
	{.compile = {"go", "build", "-o", "main", "{src}"}, .run = {"./main"}, .env = {GO_ENV}},
	{.compile = {"rustc", "-O", "-o", "main", "{src}"}, .run = {"./main"}},
	{.run = {"Rscript", "{src}"}, .env = {LANG_R_ENV_LIBS}},
	{.run = {"ruby", "{src}"}},
	{.run = {"bash", "{src}"}},
};

const struct lang_def *lang_table(size_t *n)
{
	*n = SC_ARRAY_LEN(TABLE);
	return TABLE;
}

const struct lang_def *lang_find(const char *name)
{
	if (!name)
		return NULL;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < SC_ARRAY_LEN(TABLE); i++) {
			const struct lang_def *l = &TABLE[i];
			if (pass ? !strcasecmp(l->name, name) : !strcmp(l->name, name))
				return l;
			for (size_t k = 0; k < SC_ARRAY_LEN(l->aliases) && l->aliases[k]; k++)
				if (pass ? !strcasecmp(l->aliases[k], name) : !strcmp(l->aliases[k], name))
					return l;
		}
	return NULL;
}

static bool tool_in(const char *tool, const char *const *roots, size_t nroots)
{
	static const char *const dirs[] = {"usr/local/bin", "usr/bin", "bin"};
	const char *host[] = {"/"};
	if (!roots || !nroots) {
		roots = host;
		nroots = 1;
	}
	for (size_t r = 0; r < nroots; r++)
		for (size_t d = 0; d < SC_ARRAY_LEN(dirs); d++) {
			char path[4096];
			int n = snprintf(path, sizeof(path), "%s/%s/%s", roots[r], dirs[d], tool);
			struct stat st;
			if (n > 0 && (size_t)n < sizeof(path) && lstat(path, &st) == 0 &&
			    (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
				return true;
		}
	return false;
}

bool lang_available(const struct lang_def *l, const char *const *roots, size_t nroots)
{
	if (l->compiler && !tool_in(l->compiler, roots, nroots))
		return false;
	return !l->runner || tool_in(l->runner, roots, nroots);
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* The identifier after the word "class" at p (which starts a word), or 0. */
static size_t class_after(const char *s, size_t len, size_t p, size_t *start)
{
	if (p + 5 >= len || memcmp(s + p, "class", 5) != 0 || ident_char(s[p + 5]) ||
	    (p > 0 && ident_char(s[p - 1])))
		return 0;
	size_t q = p + 5;
	while (q < len && isspace((unsigned char)s[q]))
		q++;
	size_t b = q;
	while (q < len && ident_char(s[q]))
		q++;
	*start = b;
	return q - b;
}

void lang_java_class(const char *src, size_t len, char *out, size_t size)
{
	size_t first = 0, first_len = 0, pub = 0, pub_len = 0;
	for (size_t p = 0; p < len && !pub_len; p++) {
		size_t b, n = class_after(src, len, p, &b);
		if (!n)
			continue;
		if (!first_len) {
			first = b;
			first_len = n;
		}
		/* "public [final|abstract|static ]*class X" */
		size_t k = p;
		while (k > 0 && isspace((unsigned char)src[k - 1]))
			k--;
		for (int guard = 0; guard < 4; guard++) {
			static const char *const mods[] = {"final", "abstract", "static", "strictfp"};
			bool hit = false;
			for (size_t m = 0; m < SC_ARRAY_LEN(mods); m++) {
				size_t ml = strlen(mods[m]);
				if (k >= ml && !memcmp(src + k - ml, mods[m], ml) &&
				    (k == ml || !ident_char(src[k - ml - 1]))) {
					k -= ml;
					while (k > 0 && isspace((unsigned char)src[k - 1]))
						k--;
					hit = true;
				}
			}
			if (!hit)
				break;
		}
		if (k >= 6 && !memcmp(src + k - 6, "public", 6) && (k == 6 || !ident_char(src[k - 7]))) {
			pub = b;
			pub_len = n;
		}
	}
	size_t b = pub_len ? pub : first, n = pub_len ? pub_len : first_len;
	if (!n || n >= size || isdigit((unsigned char)src[b])) {
		snprintf(out, size, "%s", "Main");
		return;
	}
	memcpy(out, src + b, n);
	out[n] = '\0';
}

const char *lang_status_name(enum lang_status s)
{
	switch (s) {
	case LANG_SUCCESS: return "Success";
	case LANG_FAILED: return "Failed";
	case LANG_SANDBOX_ERROR: return "SandboxError";
	}
	return "SandboxError";
}

const char *lang_exec_status_name(enum lang_exec_status s)
{
	switch (s) {
	case LANG_EXEC_FINISHED: return "Finished";
	case LANG_EXEC_ERROR: return "Error";
	case LANG_EXEC_TIME_LIMIT: return "TimeLimitExceeded";
	}
	return "Error";
}

void lang_run_req_init(struct lang_run_req *req)
{
	*req = (struct lang_run_req){
		.stdin_fd = -1,
		.compile_timeout_s = LANG_DEFAULT_COMPILE_TIMEOUT,
		.run_timeout_s = LANG_DEFAULT_RUN_TIMEOUT,
	};
}

double lang_i_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void lang_i_emit(const struct lang_sink *sink, enum lang_event_type t, const char *data,
		 size_t len, const struct lang_result *res)
{
	if (!sink || !sink->fn)
		return;
	struct lang_event ev = {.type = t, .data = data, .len = len, .result = res};
	sink->fn(sink->ctx, &ev);
}

static void emit(const struct lang_run_req *req, enum lang_event_type t, const char *data,
		 size_t len, const struct lang_result *res)
{
	lang_i_emit(&req->sink, t, data, len, res);
}

static char *dup_or_empty(char *s, size_t *len)
{
	if (s)
		return s;
	*len = 0;
	return calloc(1, 1);
}

/* ---- one command as a step, its output streamed or not ---- */

/* A streamed step's output, piece by piece, as cell_exec reads it. */
static void emit_output(void *ctx, int stream, const char *data, size_t len)
{
	lang_i_emit(ctx, stream == 2 ? LANG_EV_STDERR : LANG_EV_STDOUT, data, len, NULL);
}

int lang_i_exec(struct cell *c, const struct lang_i_exec *x, struct lang_exec *ex,
		struct sc_err *err)
{
	struct cell_exec_req er = {
		.argv = x->argv,
		.env = x->env,
		.cwd = x->cwd,
		.timeout_s = x->timeout_s,
		.output_limit = x->output_limit,
		.stdin_fd = x->stdin_fd,
		.stdout_fd = -1,
		.stderr_fd = -1,
		.has_cancel = x->has_cancel,
		.cancel_fd = x->cancel_fd,
	};
	bool stream = x->stream && x->sink && x->sink->fn;
	if (stream) {
		er.on_output = emit_output;
		er.output_ctx = (void *)x->sink;
	}
	struct cell_result cr;
	ex->present = true;
	if (cell_exec(c, &er, &cr, err) < 0) {
		ex->status = LANG_EXEC_ERROR;
		ex->return_code = CELL_EXIT_INTERNAL;
		ex->out = calloc(1, 1);
		ex->err = calloc(1, 1);
		return sc_err_wrap(err, "%s", x->argv[0]);
	}
	ex->status = cr.timed_out ? LANG_EXEC_TIME_LIMIT : LANG_EXEC_FINISHED;
	ex->return_code = cr.exit_code;
	ex->out = dup_or_empty(cr.out, &cr.out_len);
	ex->out_len = cr.out_len;
	ex->err = dup_or_empty(cr.err, &cr.err_len);
	ex->err_len = cr.err_len;
	cr.out = cr.err = NULL;
	ex->out_truncated = cr.out_truncated;
	ex->err_truncated = cr.err_truncated;
	ex->execution_time = cr.wall_s;
	ex->limit_hit = cr.limit_hit ? cr.limit_hit : cr.timed_out ? "timeout" : NULL;
	ex->peak_memory = cr.peak_memory;
	cell_result_free(&cr);
	if (!ex->out || !ex->err)
		return sc_fail(err, ENOMEM, "%s: out of memory", x->argv[0]);
	if (!stream) {
		lang_i_emit(x->sink, LANG_EV_STDOUT, ex->out, ex->out_len, NULL);
		lang_i_emit(x->sink, LANG_EV_STDERR, ex->err, ex->err_len, NULL);
	}
	return 0;
}

bool lang_library_name_ok(const char *name)
{
	size_t n = strnlen(name, LANG_MAX_LIBRARY_NAME);
	if (!n || n >= LANG_MAX_LIBRARY_NAME || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._+-=<>!~@/", name[i]))
			return false;
	return true;
}

int lang_i_check_libraries(const char *const *libs, size_t n, struct sc_err *err)
{
	if (n > LANG_MAX_LIBRARIES)
		return sc_fail(err, EINVAL, "more than %d libraries", LANG_MAX_LIBRARIES);
	for (size_t i = 0; i < n; i++)
		if (!libs[i] || !lang_library_name_ok(libs[i]))
			return sc_fail(err, EINVAL, "library name '%.64s': expected up to %d bytes of "
						    "letters, digits and ._+-=<>!~@/", libs[i] ? libs[i] : "",
				       LANG_MAX_LIBRARY_NAME - 1);
	return 0;
}

/* How a language installs libraries: a check printing the missing ones
 * (one a line; NULL: all count as missing), the install command before
 * the names, and what an allowlist must let through. */
struct lang_install {
	const char *lang;
	const char *check[6];
	const char *install[14];
	const char *allow;
	const char *unset; /* "KEY=": that variable of the steps' env is not given to the install */
};

static const char PY_CHECK[] =
	"import importlib.util, sys\n"
	"M = {'scikit-learn': 'sklearn', 'pillow': 'PIL', 'beautifulsoup4': 'bs4',\n"
	"     'opencv-python': 'cv2', 'pyyaml': 'yaml', 'python-dateutil': 'dateutil'}\n"
	"for a in sys.argv[1:]:\n"
	"    n = a\n"
	"    for ch in '=<>!~[;@ ':\n"
	"        n = n.split(ch)[0]\n"
	"    n = n.strip().lower()\n"
	"    try:\n"
	"        ok = importlib.util.find_spec(M.get(n, n.replace('-', '_'))) is not None\n"
	"    except Exception:\n"
	"        ok = False\n"
	"    if not ok:\n"
	"        print(a)\n";
static const char JS_CHECK[] =
	"for (const a of process.argv.slice(1)) {\n"
	"  try { require.resolve(a.replace(/(.)@.*$/, '$1'), {paths: [process.cwd()]}); }\n"
	"  catch (e) { console.log(a); }\n"
	"}\n";
static const char RB_CHECK[] =
	"ARGV.each { |a| begin; gem a.split(/[=<>~ ]/)[0]; rescue LoadError; puts a; end }";

/* Go: a library is a module path, optionally @version. It is there when
 * the run's go.mod requires it (at that version), asked offline (the
 * steps' GOPROXY=off); "go get" then takes the cell's own GOPROXY (the
 * policy's env, else proxy.golang.org) and fills the cell's module cache,
 * which the offline build uses. Fixed script, the names as its arguments. */
static const char GO_CHECK[] =
	"for a; do m=${a%%@*}; v=; case $a in *@*) v=${a#*@};; esac\n"
	"  h=$(go list -m -f '{{.Version}}' \"$m\" 2>/dev/null) || { echo \"$a\"; continue; }\n"
	"  [ -z \"$v\" ] || [ \"$v\" = latest ] || [ \"$h\" = \"$v\" ] || echo \"$a\"\n"
	"done\n";
/* R: a library is a CRAN package name; installed into LANG_R_LIBS (on
 * R_LIBS_USER of R's steps) from $SANDCELL_CRAN, else cloud.r-project.org.
 * install.packages only warns when it fails: the names are checked after. */
static const char R_CHECK[] =
	"for (a in commandArgs(TRUE)) if (!suppressWarnings(requireNamespace(a, quietly = TRUE))) "
	"cat(a, \"\\n\", sep = \"\")";
static const char R_INSTALL[] =
	"L <- '" LANG_R_LIBS "'; dir.create(L, recursive = TRUE, showWarnings = FALSE)\n"
	"r <- Sys.getenv('SANDCELL_CRAN', 'https://cloud.r-project.org')\n"
	"a <- commandArgs(TRUE)\n"
	"install.packages(a, lib = L, repos = r, quiet = TRUE)\n"
	"bad <- a[!vapply(a, function(p) requireNamespace(p, lib.loc = c(L, .libPaths()), quietly = TRUE), TRUE)]\n"
	"if (length(bad)) { message('not installed from ', r, ': ', paste(bad, collapse = ', ')); quit(status = 1) }\n";

static const struct lang_install INSTALLS[] = {
	{"python", {"python3", "-c", PY_CHECK},
	 {"python3", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet",
	  "--target", LANG_PY_LIBS},
	 "--allow-net pypi.org --allow-net files.pythonhosted.org", NULL},
	{"javascript", {"node", "-e", JS_CHECK},
	 {"npm", "install", "--no-save", "--no-audit", "--no-fund", "--no-package-lock"},
	 "--allow-net registry.npmjs.org", NULL},
	{"typescript", {"node", "-e", JS_CHECK},
	 {"npm", "install", "--no-save", "--no-audit", "--no-fund", "--no-package-lock"},
	 "--allow-net registry.npmjs.org", NULL},
	{"ruby", {"ruby", "-e", RB_CHECK}, {"gem", "install", "--no-document", "--user-install"},
	 "--allow-net rubygems.org --allow-net index.rubygems.org", NULL},
	{"go", {"sh", "-c", GO_CHECK, "sh"}, {"go", "get"},
	 "--allow-net proxy.golang.org --allow-net sum.golang.org (or a GOPROXY of your own in the policy's env)",
	 "GOPROXY="},
	{"r", {"Rscript", "-e", R_CHECK}, {"Rscript", "-e", R_INSTALL},
	 "--allow-net cloud.r-project.org (or a repository of your own as SANDCELL_CRAN in the policy's env)", NULL},
};

bool lang_has_libraries(const struct lang_def *l)
{
	for (size_t i = 0; l && i < SC_ARRAY_LEN(INSTALLS); i++)
		if (!strcmp(INSTALLS[i].lang, l->name))
			return true;
	return false;
}

/* The languages that take --libraries, comma-separated, in out. */
static void install_langs(char *out, size_t size)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < SC_ARRAY_LEN(INSTALLS); i++) {
		int w = snprintf(out + used, size - used, "%s%s", i ? ", " : "", INSTALLS[i].lang);
		if (w < 0 || (size_t)w >= size - used)
			break;
		used += (size_t)w;
	}
}

/* Go's libraries need a module: the run's go.mod, made when the work
 * directory has none (a --files go.mod stays). */
static int go_module(struct cell *c, const struct lang_run_req *req, struct sc_err *err)
{
	static const char mod[] = "module sandcell.run/main\n\ngo 1.19\n";
	char path[LANG_MAX_PATH + 16];
	int n = snprintf(path, sizeof(path), "%s/go.mod", req->workdir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return sc_fail(err, ENAMETOOLONG, "work directory '%.64s': too long", req->workdir);
	struct sc_err e = {0};
	if (cell_write_file(c, path, mod, sizeof(mod) - 1, CELL_FILE_CREATE, 30, &e) < 0 &&
	    e.errnum != EEXIST) {
		sc_err_set(err, e.errnum, e.msg);
		return sc_err_wrap(err, "--libraries: writing %s", path);
	}
	return 0;
}

/* The tail of a step's output for a one-line message: at most 300 bytes,
 * its line breaks (and other control bytes) as "; ". */
static void tail_of(const struct lang_exec *ex, char *out, size_t size)
{
	const char *s = ex->err_len ? ex->err : ex->out;
	size_t len = ex->err_len ? ex->err_len : ex->out_len;
	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	if (len > 300) {
		s += len - 300;
		len = 300;
	}
	size_t o = 0;
	for (size_t i = 0; i < len && o + 3 < size; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\n') {
			out[o++] = ';';
			out[o++] = ' ';
		} else if (ch != '\r') {
			out[o++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
		}
	}
	out[o] = '\0';
}

int lang_i_install_libraries(struct cell *c, const struct lang_run_req *req,
			     const char *const *env, struct sc_err *err)
{
	const struct lang_install *in = NULL;
	for (size_t i = 0; i < SC_ARRAY_LEN(INSTALLS); i++)
		if (!strcmp(INSTALLS[i].lang, req->lang->name))
			in = &INSTALLS[i];
	if (!in) {
		char langs[128];
		install_langs(langs, sizeof(langs));
		return sc_fail(err, 0, "--libraries is not supported for %s (%s)", req->lang->name, langs);
	}
	if (!strcmp(in->lang, "go") && go_module(c, req, err) < 0)
		return -1;
	const char *missing[LANG_MAX_LIBRARIES];
	size_t nmissing = 0;
	char *argv[LANG_MAX_LIBRARIES + 16];
	size_t n = 0;
	for (; in->check[n]; n++)
		argv[n] = (char *)in->check[n];
	for (size_t i = 0; i < req->nlibraries; i++)
		argv[n++] = (char *)req->libraries[i];
	argv[n] = NULL;
	struct lang_i_exec x = {.argv = argv, .env = env, .cwd = req->workdir, .timeout_s = 60,
				.output_limit = 65536, .stdin_fd = -1};
	struct lang_exec ex = {0};
	if (lang_i_exec(c, &x, &ex, err) < 0) {
		free(ex.out);
		free(ex.err);
		return sc_err_wrap(err, "--libraries: checking what is installed");
	}
	/* only names that were asked for count */
	for (size_t i = 0; i < req->nlibraries; i++) {
		size_t l = strlen(req->libraries[i]);
		bool miss = ex.status != LANG_EXEC_FINISHED || ex.return_code != 0;
		for (const char *p = ex.out; !miss && p && *p;) {
			const char *nl = strchr(p, '\n');
			size_t ll = nl ? (size_t)(nl - p) : strlen(p);
			if (ll == l && !memcmp(p, req->libraries[i], l))
				miss = true;
			p = nl ? nl + 1 : NULL;
		}
		if (miss)
			missing[nmissing++] = req->libraries[i];
	}
	free(ex.out);
	free(ex.err);
	if (!nmissing)
		return 0;
	if (!req->has_network) {
		char names[256] = "";
		size_t used = 0;
		for (size_t i = 0; i < nmissing && used + 1 < sizeof(names); i++) {
			int w = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", missing[i]);
			if (w < 0)
				break;
			used += (size_t)w < sizeof(names) - used ? (size_t)w : sizeof(names) - used - 1;
		}
		return sc_fail(err, 0,
			       "--libraries: %s not installed in the cell, and the cell has no network "
			       "(--net none): give it %s, or a policy with network: allowlist naming those hosts",
			       names, in->allow);
	}
	n = 0;
	for (; in->install[n]; n++)
		argv[n] = (char *)in->install[n];
	for (size_t i = 0; i < nmissing; i++)
		argv[n++] = (char *)missing[i];
	argv[n] = NULL;
	x.argv = argv;
	const char *ienv[24];
	if (in->unset && env) {
		size_t k = 0, ul = strlen(in->unset);
		for (size_t i = 0; env[i] && k + 1 < SC_ARRAY_LEN(ienv); i++)
			if (strncmp(env[i], in->unset, ul))
				ienv[k++] = env[i];
		ienv[k] = NULL;
		x.env = ienv;
	}
	x.timeout_s = req->install_timeout_s > 0 ? req->install_timeout_s : LANG_DEFAULT_INSTALL_TIMEOUT;
	memset(&ex, 0, sizeof(ex));
	int rc = lang_i_exec(c, &x, &ex, err);
	if (rc == 0 && (ex.status != LANG_EXEC_FINISHED || ex.return_code != 0)) {
		char t[640];
		tail_of(&ex, t, sizeof(t));
		rc = sc_fail(err, 0, "--libraries: %s install %s (exit %d)%s%s",
			     !strcmp(in->install[0], "python3") ? "pip" :
			     !strcmp(in->install[0], "Rscript") ? "R" :
			     !strcmp(in->install[0], "go") ? "go get" : in->install[0],
			     ex.status == LANG_EXEC_TIME_LIMIT ? "timed out" : "failed", ex.return_code,
			     t[0] ? ": " : "", t);
	} else if (rc < 0) {
		sc_err_wrap(err, "--libraries: installing");
	}
	free(ex.out);
	free(ex.err);
	return rc;
}

/* Run argv (templates expanded) in the cell as one step. */
static int step(struct cell *c, const struct lang_run_req *req, const char *const *tmpl,
		const char *const *env, const char *src, const char *cls, double timeout,
		int stdin_fd, struct lang_exec *ex, struct sc_err *err)
{
	char *argv[16];
	size_t n = 0;
	for (; tmpl[n] && n < SC_ARRAY_LEN(argv) - 1; n++) {
		const char *t = tmpl[n];
		argv[n] = (char *)(!strcmp(t, "{src}") ? src : !strcmp(t, "{cls}") ? cls : t);
	}
	argv[n] = NULL;
	struct lang_i_exec x = {
		.argv = argv,
		.env = env[0] ? env : NULL,
		.cwd = req->workdir,
		.timeout_s = timeout,
		.output_limit = req->output_limit,
		.stdin_fd = stdin_fd,
		.sink = &req->sink,
		.stream = req->stream,
		.has_cancel = req->has_cancel,
		.cancel_fd = req->cancel_fd,
	};
	return lang_i_exec(c, &x, ex, err);
}

static void note_step(struct lang_result *res, const struct lang_exec *ex)
{
	if (!res->limit_hit && ex->limit_hit)
		res->limit_hit = ex->limit_hit;
	if (ex->peak_memory > res->peak_memory)
		res->peak_memory = ex->peak_memory;
}

static bool step_ok(const struct lang_exec *ex)
{
	return ex->status == LANG_EXEC_FINISHED && ex->return_code == 0;
}

static int cell_path(const struct lang_run_req *req, const char *p, char *out, size_t size,
		     struct sc_err *err)
{
	size_t len = strnlen(p, LANG_MAX_PATH);
	if (!len || len >= LANG_MAX_PATH)
		return sc_fail(err, EINVAL, "path '%.64s': empty or longer than %d bytes", p,
			       LANG_MAX_PATH - 1);
	int n = p[0] == '/' ? snprintf(out, size, "%s", p) : snprintf(out, size, "%s/%s", req->workdir, p);
	if (n < 0 || (size_t)n >= size)
		return sc_fail(err, ENAMETOOLONG, "path '%.64s': too long", p);
	return 0;
}

static int check_req(const struct lang_run_req *req, struct sc_err *err)
{
	if (!req->lang)
		return sc_fail(err, EINVAL, "no language given");
	if (!req->source && req->source_len)
		return sc_fail(err, EINVAL, "no source given");
	if (req->source_len > LANG_MAX_SOURCE)
		return sc_fail(err, EFBIG, "source of %zu bytes is larger than the limit of %u bytes",
			       req->source_len, LANG_MAX_SOURCE);
	if (req->nfetch > LANG_MAX_FETCH)
		return sc_fail(err, EINVAL, "more than %d files to fetch", LANG_MAX_FETCH);
	if (lang_i_check_libraries(req->libraries, req->nlibraries, err) < 0)
		return -1;
	if (req->workdir && req->workdir[0] != '/')
		return sc_fail(err, EINVAL, "work directory '%.64s' is not absolute", req->workdir);
	return 0;
}

static void set_sandbox_error(struct lang_result *res, const struct sc_err *e)
{
	res->status = LANG_SANDBOX_ERROR;
	snprintf(res->message, sizeof(res->message), "%s", e->msg);
}

int lang_run_in(struct cell *c, const struct lang_run_req *given, struct lang_result *res,
		struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	double t0 = lang_i_now();
	if (check_req(given, err) < 0)
		return -1;
	struct lang_run_req req = *given;
	if (!req.workdir)
		req.workdir = "/testbed";
	if (!req.fetch_limit)
		req.fetch_limit = LANG_DEFAULT_FETCH_LIMIT;
	const struct lang_def *l = req.lang;
	const struct lang_steps *st = &STEPS[l - TABLE];

	char cls[128], srcname[160], srcpath[LANG_MAX_PATH + 200];
	snprintf(cls, sizeof(cls), "Main");
	if (!strcmp(l->name, "java")) {
		lang_java_class(req.source ? req.source : "", req.source_len, cls, sizeof(cls));
		snprintf(srcname, sizeof(srcname), "%s.java", cls);
	} else {
		snprintf(srcname, sizeof(srcname), "%s", l->source_file);
	}
	int n = snprintf(srcpath, sizeof(srcpath), "%s/%s", req.workdir, srcname);
	if (n < 0 || (size_t)n >= sizeof(srcpath))
		return sc_fail(err, ENAMETOOLONG, "work directory '%.64s': too long", req.workdir);

	struct sc_err e = {0};
	if (req.files_dir && cell_copy_in_as(c, req.files_dir, req.workdir, req.fetch_limit, &e) < 0) {
		sc_err_wrap(&e, "--files %s", req.files_dir);
		set_sandbox_error(res, &e);
		goto done;
	}
	if (cell_write_file(c, srcpath, req.source ? req.source : "", req.source_len,
			    CELL_FILE_CREATE, 30, &e) < 0) {
		/* a file of that name from --files: replace it */
		struct sc_err e2 = {0};
		if (e.errnum != EEXIST ||
		    cell_write_file(c, srcpath, req.source, req.source_len, 0, 30, &e2) < 0) {
			if (e.errnum == EEXIST)
				e = e2;
			sc_err_wrap(&e, "writing the source to %s", srcpath);
			set_sandbox_error(res, &e);
			goto done;
		}
	}
	if (req.nlibraries) {
		const char *ienv[SC_ARRAY_LEN(st->env) + 2];
		size_t k = 0;
		for (; k < SC_ARRAY_LEN(st->env) && st->env[k]; k++)
			ienv[k] = st->env[k];
		ienv[k++] = LANG_PY_ENV_PATH;
		ienv[k] = NULL;
		if (lang_i_install_libraries(c, &req, ienv, &e) < 0) {
			set_sandbox_error(res, &e);
			goto done;
		}
	}
	if (st->compile[0]) {
		if (step(c, &req, st->compile, st->env, srcname, cls, req.compile_timeout_s, -1,
			 &res->compile, &e) < 0) {
			set_sandbox_error(res, &e);
			goto done;
		}
		note_step(res, &res->compile);
		if (!step_ok(&res->compile)) {
			res->status = LANG_FAILED;
			goto done;
		}
	}
	/* Python's matplotlib figures (lang/py/sc_backend.py) and R's default
	 * graphics device (lang/r/profile.R) come back as plots */
	const char *env[SC_ARRAY_LEN(st->env) + 6];
	size_t ne = 0;
	for (; ne < SC_ARRAY_LEN(st->env) && st->env[ne]; ne++)
		env[ne] = st->env[ne];
	char plots_env[128] = "", *plots_dir = NULL;
	bool python = !strcmp(l->name, "python"), r_lang = !strcmp(l->name, "r");
	bool plots = python || r_lang;
	if (plots) {
		uint64_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			rnd = (uint64_t)(lang_i_now() * 1e6);
		snprintf(plots_env, sizeof(plots_env), "SANDCELL_PLOTS=/tmp/.sandcell/plots-%016llx",
			 (unsigned long long)rnd);
		plots_dir = plots_env + strlen("SANDCELL_PLOTS=");
		/* a cell whose /tmp cannot take the support file runs without plots */
		struct sc_err pe = {0};
		if (!req.prepared &&
		    (python ? lang_i_install_py(c, &pe) : lang_i_install_r(c, &pe)) < 0) {
			plots = false;
		} else if (python) {
			env[ne++] = LANG_PY_ENV_PATH;
			env[ne++] = LANG_PY_ENV_BACKEND;
			env[ne++] = LANG_PY_ENV_MPLCONFIG;
			env[ne++] = plots_env;
		} else {
			env[ne++] = LANG_R_ENV_PROFILE;
			env[ne++] = plots_env;
		}
	}
	env[ne] = NULL;
	if (step(c, &req, st->run, env, srcname, cls, req.run_timeout_s, req.stdin_fd,
		 &res->run, &e) < 0) {
		set_sandbox_error(res, &e);
		goto done;
	}
	if (plots && lang_i_read_plots(c, plots_dir, -1, &req.sink, res, &e) < 0) {
		set_sandbox_error(res, &e);
		goto done;
	}
	note_step(res, &res->run);
	res->status = step_ok(&res->run) ? LANG_SUCCESS : LANG_FAILED;
	for (size_t i = 0; i < req.nfetch; i++) {
		struct lang_file *f = &res->files[res->nfiles];
		char path[LANG_MAX_PATH + 200];
		struct cell_file cf;
		if (cell_path(&req, req.fetch[i], path, sizeof(path), &e) < 0 ||
		    cell_read_file(c, path, req.fetch_limit, 30, &cf, &e) < 0) {
			sc_err_wrap(&e, "--fetch %.200s", req.fetch[i]);
			set_sandbox_error(res, &e);
			goto done;
		}
		snprintf(f->path, sizeof(f->path), "%s", req.fetch[i]);
		f->data = cf.data;
		f->len = cf.len;
		f->truncated = cf.truncated;
		res->nfiles++;
	}
done:
	res->wall_s = lang_i_now() - t0;
	emit(&req, LANG_EV_RESULT, NULL, 0, res);
	return 0;
}

/* The image's python3 compiles the support module in place, as an
 * unchecked-hash pyc (valid whatever the source file's time: each cell
 * writes its own copy), and says its cache tag. -I -S: no site, no
 * environment, so nothing else of the image's runs. */
static const char PY_COMPILE[] =
	"import py_compile, sys\n"
	"py_compile.compile(sys.argv[1], doraise=True,\n"
	"    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
	"sys.stdout.write(sys.implementation.cache_tag)\n";
#define PY_PYC_MAX (256u << 10)

static bool cache_tag_ok(const char *t, size_t n)
{
	if (n == 0 || n >= sizeof(((struct lang_prep_cache *)0)->tag))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '-' ||
		      t[i] == '_'))
			return false;
	return true;
}

static void pyc_path(const struct lang_prep_cache *pc, char *out, size_t size)
{
	snprintf(out, size, "%s/__pycache__/sitecustomize.%s.pyc", LANG_PY_DIR, pc->tag);
}

/* The first cell: compile, read the bytecode back (bounded). Any failure
 * (no python3 in the image, ...) leaves the cache empty: runs compile. */
static void compile_support(struct cell *c, struct lang_prep_cache *pc)
{
	pc->tried = true;
	char *argv[] = {"python3", "-I", "-S", "-c", (char *)PY_COMPILE,
			LANG_PY_DIR "/sitecustomize.py", NULL};
	struct cell_exec_req er = {.argv = argv, .timeout_s = 30, .output_limit = 4096,
				   .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	struct cell_result cr;
	struct sc_err e = {0};
	if (cell_exec(c, &er, &cr, &e) < 0)
		return;
	bool ok = cr.exit_code == 0 && cr.out && cache_tag_ok(cr.out, cr.out_len);
	if (ok) {
		memcpy(pc->tag, cr.out, cr.out_len);
		pc->tag[cr.out_len] = '\0';
	}
	cell_result_free(&cr);
	char path[LANG_MAX_PATH];
	struct cell_file cf;
	if (!ok)
		return;
	pyc_path(pc, path, sizeof(path));
	if (cell_read_file(c, path, PY_PYC_MAX, 30, &cf, &e) < 0)
		return;
	if (cf.truncated || cf.len == 0) {
		free(cf.data);
		return;
	}
	pc->pyc = cf.data;
	pc->pyc_len = cf.len;
}

int lang_prepare_cell(struct cell *c, void *ctx, struct sc_err *err)
{
	struct lang_prep_cache *pc = ctx;
	if ((!pc || !pc->seeded) && lang_i_install_py(c, err) < 0)
		return -1;
	if (!pc)
		return 0;
	if (!pc->tried) {
		compile_support(c, pc);
		return 0;
	}
	if (!pc->pyc)
		return 0;
	char path[LANG_MAX_PATH];
	pyc_path(pc, path, sizeof(path));
	return cell_write_file(c, path, pc->pyc, pc->pyc_len, CELL_FILE_CREATE, 30, err) < 0
		       ? sc_err_wrap(err, "writing %s in the cell", path)
		       : 0;
}

void lang_prep_cache_free(struct lang_prep_cache *pc)
{
	free(pc->pyc);
	*pc = (struct lang_prep_cache){0};
}

int lang_run(const struct cell_spec *spec, const struct lang_run_req *req,
	     struct lang_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	if (check_req(req, err) < 0)
		return -1;
	double t0 = lang_i_now();
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rnd = (uint64_t)t0 ^ ((uint64_t)getpid() << 20);
	char name[64];
	snprintf(name, sizeof(name), "code-%d-%012llx", (int)getpid(),
		 (unsigned long long)(rnd & 0xffffffffffffULL));
	struct cell_spec s = *spec;
	s.die_with_creator = true;
	struct lang_run_req r = *req;
	r.has_network = spec->egress != NULL;
	struct cell_seed_file seeds[LANG_SEED_FILES];
	if (!s.nseed_files) {
		s.seed_files = seeds;
		s.nseed_files = lang_seed_files(seeds);
		r.prepared = true;
	}
	if (!r.workdir)
		r.workdir = spec->workdir ? spec->workdir : "/testbed";
	struct cell *c;
	if (cell_create(&s, name, &c, err) < 0)
		return sc_err_wrap(err, "code cell");
	int rc = lang_run_in(c, &r, res, err);
	struct sc_err e2 = {0};
	if (cell_destroy(c, &e2) < 0 && rc == 0 && res->status != LANG_SANDBOX_ERROR) {
		/* the program's result stands; say that cleanup failed */
		snprintf(res->message, sizeof(res->message), "removing cell %.63s: %.400s", name, e2.msg);
	}
	res->wall_s = lang_i_now() - t0;
	return rc;
}

static void exec_free(struct lang_exec *ex)
{
	free(ex->out);
	free(ex->err);
	ex->out = ex->err = NULL;
}

void lang_result_free(struct lang_result *res)
{
	exec_free(&res->compile);
	exec_free(&res->run);
	for (size_t i = 0; i < res->nfiles; i++)
		free(res->files[i].data);
	res->nfiles = 0;
	for (size_t i = 0; i < res->nplots; i++)
		free(res->plots[i].data);
	res->nplots = 0;
}

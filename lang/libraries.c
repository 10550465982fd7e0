/* --libraries: names checked, and what a cell lacks installed with the
 * language's own tool (pip, npm, gem, go modules, R's install). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

/* argv = head (NULL-ended) followed by names[0..n). */
static void join_argv(char **argv, const char *const *head, const char *const *names, size_t n)
{
	size_t k = 0;
	for (; head[k]; k++)
		argv[k] = (char *)head[k];
	for (size_t i = 0; i < n; i++)
		argv[k++] = (char *)names[i];
	argv[k] = NULL;
}

/* Is name one of the lines of out? */
static bool has_line(const char *out, const char *name)
{
	size_t l = strlen(name);
	for (const char *p = out; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		if (ll == l && !memcmp(p, name, l))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* Runs the language's check on the asked-for libraries: missing[] gets
 * those it names (all of them when the check itself failed). */
static int find_missing(struct cell *c, const struct lang_run_req *req,
			const struct lang_install *in, const char *const *env,
			const char **missing, size_t *nmissing, struct sc_err *err)
{
	char *argv[LANG_MAX_LIBRARIES + 16];
	join_argv(argv, in->check, req->libraries, req->nlibraries);
	struct lang_i_exec x = {.argv = argv, .env = env, .cwd = req->workdir, .timeout_s = 60,
				.output_limit = 65536, .stdin_fd = -1};
	struct lang_exec ex = {0};
	*nmissing = 0;
	if (lang_i_exec(c, &x, &ex, err) < 0) {
		free(ex.out);
		free(ex.err);
		return sc_err_wrap(err, "--libraries: checking what is installed");
	}
	/* only names that were asked for count */
	bool failed = ex.status != LANG_EXEC_FINISHED || ex.return_code != 0;
	for (size_t i = 0; i < req->nlibraries; i++)
		if (failed || has_line(ex.out, req->libraries[i]))
			missing[(*nmissing)++] = req->libraries[i];
	free(ex.out);
	free(ex.err);
	return 0;
}

/* "a, b, c" into names (cut at size). */
static void join_names(const char *const *missing, size_t nmissing, char *names, size_t size)
{
	size_t used = 0;
	names[0] = '\0';
	for (size_t i = 0; i < nmissing && used + 1 < size; i++) {
		int w = snprintf(names + used, size - used, "%s%s", i ? ", " : "", missing[i]);
		if (w < 0)
			break;
		used += (size_t)w < size - used ? (size_t)w : size - used - 1;
	}
}

/* Installs missing[] with the language's installer; the environment
 * less the variable the installer must not see. */
static int install_missing(struct cell *c, const struct lang_run_req *req,
			   const struct lang_install *in, const char *const *env,
			   const char *const *missing, size_t nmissing, struct sc_err *err)
{
	char *argv[LANG_MAX_LIBRARIES + 16];
	join_argv(argv, in->install, missing, nmissing);
	struct lang_i_exec x = {.argv = argv, .env = env, .cwd = req->workdir, .output_limit = 65536,
				.stdin_fd = -1};
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
	struct lang_exec ex = {0};
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
	size_t nmissing;
	if (find_missing(c, req, in, env, missing, &nmissing, err) < 0)
		return -1;
	if (!nmissing)
		return 0;
	if (!req->has_network) {
		char names[256];
		join_names(missing, nmissing, names, sizeof(names));
		return sc_fail(err, 0,
			       "--libraries: %s not installed in the cell, and the cell has no network "
			       "(--net none): give it %s, or a policy with network: allowlist naming those hosts",
			       names, in->allow);
	}
	return install_missing(c, req, in, env, missing, nmissing, err);
}

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
	const char *debian;      /* the Debian package(s) that bring the tools */
	const char *install;     /* how to get them where Debian has none */
	const char *versioned;   /* the packages whose version is the tools'
				  * (Debian 12's), asked before debian's */
	bool class_named;        /* the source file is named by its public
				  * class (java) */
	bool object_named;       /* {cls} is the source's first object (scala) */
	const char *open_tag;    /* leading blanks dropped, then this put first
				  * when the code does not start with it; or
				  * NULL (as SandboxFusion does for php) */
	const char *prelude;     /* put before the source's first line, on it
				  * (line numbers stay), unless that line is
				  * a '#' directive; or NULL */
	const char *postlude;    /* put after the source's last line; or NULL */
	const char *side_name;   /* a file written next to the source, */
	const char *side_text;   /* with this text; or NULL */
};

/* The work directory, its jars, and javatuples (Debian's
 * libjavatuples-java), which SandboxFusion's Java runtime carries */
#define JAVA_CP ".:*:/usr/share/java/javatuples.jar"

/* JUnit 5 from Debian's junit5, and every jar of the work directory (a
 * "*" entry of a class path is the directory's jars). */
#define JUNIT_CP ".:*:/usr/share/java/junit-platform-console-standalone.jar"

/* TypeScript as SandboxFusion's tsx runs it: transpiled without a type
 * check (CommonJS, ES2020, esModuleInterop), by Debian's node-typescript;
 * a syntax error is a compile error, as tsc reports it. */
#define TS_TRANSPILE \
	"let ts;try{ts=require('typescript')}catch(e){process.stderr.write(" \
	"'typescript: the typescript module (Debian: node-typescript) is not installed\\n');" \
	"process.exit(1)}const fs=require('fs'),f=process.argv[1];" \
	"const r=ts.transpileModule(fs.readFileSync(f,'utf8'),{fileName:f,reportDiagnostics:true," \
	"compilerOptions:{module:ts.ModuleKind.CommonJS,target:ts.ScriptTarget.ES2020," \
	"esModuleInterop:true}});const d=r.diagnostics||[];for(const x of d){" \
	"const p=x.file&&x.start!==undefined?x.file.getLineAndCharacterOfPosition(x.start):null;" \
	"process.stderr.write(f+(p?'('+(p.line+1)+','+(p.character+1)+')':'')+': error TS'+" \
	"x.code+': '+ts.flattenDiagnosticMessageText(x.messageText,'\\n')+'\\n')}" \
	"if(d.length)process.exit(1);fs.writeFileSync(f.replace(/\\.ts$/,'.js'),r.outputText)"

/* go_test in GOPATH mode over Debian's Go sources (/usr/share/gocode:
 * golang-github-stretchr-testify-dev and the like), as SandboxFusion's
 * tests import testify; offline */
#define GO_TEST_ENV "GOCACHE=/tmp/.sandcell-go/cache", \
	"GOPATH=/tmp/.sandcell-go/path:/usr/share/gocode", "GO111MODULE=off", "GOPROXY=off", \
	"GOTOOLCHAIN=local", "CGO_ENABLED=0"

/* .NET's Debug.Assert and Trace.Assert end the program when they fail
 * ("Process terminated. Assertion failed." and the stack on stderr, then
 * an abort); Mono's print nothing and go on. The source is compiled with
 * DEBUG defined (as `dotnet run` builds), and a listener appended to it,
 * named in main.exe.config (which Mono reads), does what .NET does. */
#define CS_ASSERT_LISTENER \
	"\npublic sealed class SandcellAssertListener : System.Diagnostics.TraceListener {" \
	" public override void Write(string m) {} public override void WriteLine(string m) {}" \
	" public override void Fail(string m, string d) { System.Console.Out.Flush();" \
	" System.Console.Error.WriteLine(\"Process terminated. Assertion failed.\" +" \
	" System.Environment.NewLine + m + (string.IsNullOrEmpty(d) ? \"\" :" \
	" System.Environment.NewLine + d) + System.Environment.NewLine +" \
	" System.Environment.StackTrace); System.Environment.Exit(134); } }\n"
#define CS_ASSERT_CONFIG \
	"<?xml version=\"1.0\"?>\n<configuration><system.diagnostics><trace><listeners>" \
	"<add name=\"sandcell\" type=\"SandcellAssertListener, main\"/>" \
	"</listeners></trace></system.diagnostics></configuration>\n"

/* SandboxFusion's C# is a .NET 6+ console project, whose implicit usings
 * Mono's mcs lacks (a using twice is a warning only) */
#define CS_IMPLICIT_USINGS \
	"using System; using System.IO; using System.Collections.Generic; using System.Linq; " \
	"using System.Threading; using System.Threading.Tasks; "

#define GO_ENV "GOCACHE=/tmp/.sandcell-go/cache", "GOPATH=/tmp/.sandcell-go/path", \
	"GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "CGO_ENABLED=0"

static const struct lang_def TABLE[] = {
	{"python", {"python3", "py", NULL}, "main.py", NULL, "python3", "python3 main.py"},
	{"javascript", {"nodejs", "node", "js", NULL}, "main.js", NULL, "node", "node main.js"},
	{"typescript", {"ts", NULL}, "main.ts", "tsc", "node",
	 "TypeScript's transpileModule (syntax errors only, no type check, as tsx), then node main.js"},
	{"java", {NULL}, "Main.java", "javac", "java",
	 "javac CLASS.java; java -ea CLASS (public class of the source, default Main; "
	 "jars of the work directory and javatuples on the class path)"},
	{"cpp", {"c++", "cxx", NULL}, "main.cpp", "g++", NULL, "g++ -O2 -std=c++17, then ./main"},
	{"c", {NULL}, "main.c", "gcc", NULL, "gcc -O2 -lm, then ./main"},
	{"go", {"golang", NULL}, "main.go", "go", NULL, "go build (offline, module cache in the cell), then ./main"},
	{"rust", {"rs", NULL}, "main.rs", "rustc", NULL, "rustc -O, then ./main"},
	{"r", {"R", "rscript", NULL}, "main.R", NULL, "Rscript", "Rscript main.R"},
	{"ruby", {"rb", NULL}, "main.rb", NULL, "ruby", "ruby main.rb"},
	{"bash", {"sh", "shell", NULL}, "main.sh", NULL, "bash", "bash main.sh"},
	{"perl", {"pl", NULL}, "main.pl", NULL, "perl", "perl main.pl"},
	{"lua", {NULL}, "main.lua", NULL, "lua", "lua main.lua"},
	{"php", {NULL}, "main.php", NULL, "php", "php -f main.php (<?php added when the code lacks it)"},
	{"csharp", {"cs", "c#", NULL}, "main.cs", "mcs", "mono", "mcs (Mono), then mono main.exe"},
	{"d", {"dlang", NULL}, "main.d", "gdc", NULL, "gdc -O2, then ./main"},
	{"d_ut", {"D_ut", NULL}, "main.d", "gdc", NULL,
	 "gdc -O2 -funittest, then ./main: the unittest blocks run, not main"},
	{"verilog", {"systemverilog", NULL}, "main.sv", "iverilog", "vvp",
	 "iverilog -g2012 -s tb, then vvp -n (the top module is tb)"},
	{"pytest", {NULL}, "test_main.py", NULL, "pytest", "pytest test_main.py: the verdict is the tests'"},
	{"go_test", {NULL}, "main_test.go", NULL, "go", "go test main_test.go (offline): the verdict is the tests'"},
	{"junit", {NULL}, "Main.java", "javac", "java",
	 "javac with JUnit 5 on the class path, then its console launcher scans the classes"},
	{"scala", {NULL}, "main.scala", "scalac", "scala",
	 "scalac, then scala OBJECT (the first object of the source)"},
	{"racket", {"rkt", NULL}, "main.rkt", NULL, "racket", "racket main.rkt"},
	{"kotlin_script", {"kts", NULL}, "main.kts", NULL, "kotlinc",
	 "kotlinc -script main.kts"},
	{"jest", {NULL}, "main.test.ts", NULL, "sandcell-jest",
	 "jest 29 (from npm) on main.test.ts, TypeScript by babel: the verdict is the tests'"},
};

static const struct lang_steps STEPS[SC_ARRAY_LEN(TABLE)] = {
	{.run = {"python3", "-u", "{src}"}, .env = {LANG_PY_ENV_NO_PYC},
	 .debian = "python3"},
	{.run = {"node", "{src}"}, .env = {"NODE_PATH=/usr/share/nodejs"}, /* Debian's node-* */
	 .debian = "nodejs"},
	{.compile = {"node", "-e", TS_TRANSPILE, "{src}"}, .run = {"node", "main.js"},
	 .env = {"NODE_PATH=/usr/share/nodejs"}, .debian = "node-typescript nodejs"},
	{.compile = {"javac", "-encoding", "UTF-8", "-cp", JAVA_CP, "-d", ".", "{src}"},
	 .run = {"java", "-cp", JAVA_CP, "-ea", "{cls}"}, .class_named = true,
	 .debian = "default-jdk-headless", .versioned = "openjdk-17-jdk-headless"},
	{.compile = {"g++", "-O2", "-std=c++17", "-o", "main", "{src}"}, .run = {"./main"},
	 .debian = "g++"},
	{.compile = {"gcc", "-O2", "-o", "main", "{src}", "-lm"}, .run = {"./main"}, .debian = "gcc"},
	{.compile = {"go", "build", "-o", "main", "{src}"}, .run = {"./main"}, .env = {GO_ENV},
	 .debian = "golang-go"},
	{.compile = {"rustc", "-O", "-o", "main", "{src}"}, .run = {"./main"}, .debian = "rustc"},
	{.run = {"Rscript", "{src}"}, .env = {LANG_R_ENV_LIBS}, .debian = "r-base-core"},
	{.run = {"ruby", "{src}"}, .debian = "ruby", .versioned = "ruby3.1"},
	{.run = {"bash", "{src}"}, .debian = "bash"},
	{.run = {"perl", "{src}"}, .debian = "perl"},
	{.run = {"lua", "{src}"}, .debian = "lua5.4"},
	{.run = {"php", "-f", "{src}"}, .open_tag = "<?php", .debian = "php-cli",
	 .versioned = "php8.2-cli"},
	{.compile = {"mcs", "-d:DEBUG", "-out:main.exe", "{src}"}, .run = {"mono", "main.exe"},
	 .prelude = CS_IMPLICIT_USINGS, .postlude = CS_ASSERT_LISTENER,
	 .side_name = "main.exe.config", .side_text = CS_ASSERT_CONFIG,
	 .debian = "mono-mcs mono-runtime"},
	{.compile = {"gdc", "-O2", "-o", "main", "{src}"}, .run = {"./main"}, .debian = "gdc"},
	{.compile = {"gdc", "-O2", "-funittest", "-o", "main", "{src}"}, .run = {"./main"},
	 .debian = "gdc"},
	{.compile = {"iverilog", "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb", "-o",
		     "main.vvp", "{src}"},
	 .run = {"vvp", "-n", "main.vvp"}, .debian = "iverilog"},
	{.run = {"pytest", "-p", "no:cacheprovider", "{src}"}, .env = {"PYTHONDONTWRITEBYTECODE=1"},
	 .debian = "python3-pytest"},
	{.run = {"go", "test", "{src}"}, .env = {GO_TEST_ENV},
	 .debian = "golang-go golang-github-stretchr-testify-dev"},
	{.compile = {"javac", "-encoding", "UTF-8", "-cp", JUNIT_CP, "-d", ".", "{src}"},
	 .run = {"java", "-cp", JUNIT_CP, "org.junit.platform.console.ConsoleLauncher",
		 "--disable-banner", "--scan-class-path"},
	 .class_named = true, .debian = "junit5 default-jdk-headless"},
	{.compile = {"scalac", "-d", ".", "{src}"}, .run = {"scala", "-cp", ".", "{cls}"},
	 .object_named = true, .debian = "scala"},
	{.run = {"racket", "{src}"}, .debian = "racket"},
	{.run = {"kotlinc", "-script", "{src}"},
	 /* kotlinc's script passes -noverify, which JDK 17 warns about on
	  * stderr; the launcher's default heap */
	 .env = {"JAVA_OPTS=-Xmx256M -Xms32M -XX:-PrintWarnings"}, .debian = "kotlin"},
	/* Debian 12's jest cannot be installed (node-jest-worker depends on a
	 * node-types-node it lacks): scripts/setup.sh and the code image's
	 * recipe put it in from npm (scripts/images/jest) */
	{.run = {"sandcell-jest"}, .env = {"FORCE_COLOR=0"},
	 .install = "scripts/setup.sh installs it from npm, as scripts/images/code.sh does in the "
		    "code image"},
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
	bool found = false;
	for (size_t r = 0; r < nroots && !found; r++) {
		/* an image's links (a /bin -> /usr/bin) are never followed on
		 * the host: "usr/bin" is there in every image that has "bin" */
		int root = open(roots[r], O_PATH | O_DIRECTORY | O_CLOEXEC);
		for (size_t d = 0; root >= 0 && d < SC_ARRAY_LEN(dirs) && !found; d++) {
			char path[512];
			int n = snprintf(path, sizeof(path), "%s/%s", dirs[d], tool);
			int fd = n > 0 && (size_t)n < sizeof(path)
					 ? sc_openat_beneath(root, path, O_PATH | O_NOFOLLOW, 0, 0)
					 : -1;
			struct stat st;
			found = fd >= 0 && fstat(fd, &st) == 0 &&
				(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
			if (fd >= 0)
				close(fd);
		}
		if (root >= 0)
			close(root);
	}
	return found;
}

bool lang_available(const struct lang_def *l, const char *const *roots, size_t nroots)
{
	if (l->compiler && !tool_in(l->compiler, roots, nroots))
		return false;
	return !l->runner || tool_in(l->runner, roots, nroots);
}

const char *lang_version(const struct lang_def *l, const struct lang_dpkg *d, char *package,
			 size_t psize)
{
	const struct lang_steps *st = &STEPS[l - TABLE];
	const char *lists[] = {st->versioned, st->debian};
	for (size_t i = 0; i < SC_ARRAY_LEN(lists); i++)
		for (const char *p = lists[i]; p && *p;) {
			size_t n = strcspn(p, " ");
			const char *v = n ? lang_dpkg_version(d, p, n) : NULL;
			if (v) {
				snprintf(package, psize, "%.*s", (int)n, p);
				return v;
			}
			p += n + (p[n] == ' ');
		}
	return NULL;
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

/* Run argv (templates expanded) in the cell as one step. */
static void emit(const struct lang_run_req *req, enum lang_event_type t, const char *data,
		 size_t len, const struct lang_result *res)
{
	lang_i_emit(&req->sink, t, data, len, res);
}

static int step(struct cell *c, const struct lang_run_req *req, const char *const *tmpl,
		const char *const *env, const char *src, const char *cls, double timeout,
		int stdin_fd, bool prestarted, struct lang_exec *ex, struct sc_err *err)
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
		.prestarted = prestarted,
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

/* Did the step not start because its tool (argv[0], found on PATH) is not
 * in the cell? The cell says so in one line on stderr and exits 127
 * (CELL_EXEC_FAILED_FMT); a program that ran and exited 127 is not this. */
static bool tool_missing(const struct lang_exec *ex, const char *tool)
{
	if (strchr(tool, '/') || ex->status != LANG_EXEC_FINISHED ||
	    ex->return_code != CELL_EXIT_NOTFOUND || ex->err_truncated)
		return false;
	const int why[] = {ENOENT, ENOTDIR};
	for (size_t i = 0; i < SC_ARRAY_LEN(why); i++) {
		char line[600];
		int n = snprintf(line, sizeof(line), CELL_EXEC_FAILED_FMT, tool, strerror(why[i]));
		if (n > 0 && (size_t)n < sizeof(line) && ex->err_len == (size_t)n &&
		    !memcmp(ex->err, line, (size_t)n))
			return true;
	}
	return false;
}

/* The step looked like a missing tool: is it? The tool alone, with no
 * arguments and an empty stdin (a real tool prints its usage or reads
 * nothing and ends), must fail the same way; a program that printed the
 * line and exited 127 itself does not make the tool go away. */
static bool tool_absent(struct cell *c, const struct lang_run_req *req, const char *tool,
			const char *const *env)
{
	char *argv[] = {(char *)tool, NULL};
	struct lang_i_exec x = {
		.argv = argv,
		.env = env && env[0] ? env : NULL,
		.cwd = req->workdir,
		.timeout_s = 10,
		.output_limit = 4096,
		.stdin_fd = -1,
		.has_cancel = req->has_cancel,
		.cancel_fd = req->cancel_fd,
	};
	struct lang_exec probe = {0};
	struct sc_err e = {0};
	bool absent = lang_i_exec(c, &x, &probe, &e) == 0 && tool_missing(&probe, tool);
	free(probe.out);
	free(probe.err);
	return absent;
}

/* A missing tool is the sandbox's failure, not the program's (as
 * SandboxFusion answers): SandboxError, naming the tool and its package. */
static bool note_missing_tool(struct cell *c, const struct lang_run_req *req,
			      const struct lang_steps *st, const char *tool,
			      const char *const *env, const struct lang_exec *ex,
			      struct lang_result *res)
{
	if (!tool_missing(ex, tool) || !tool_absent(c, req, tool, env))
		return false;
	res->status = LANG_SANDBOX_ERROR;
	char how[200];
	if (st->debian)
		snprintf(how, sizeof(how), "Debian/Ubuntu: apt-get install %s", st->debian);
	else
		snprintf(how, sizeof(how), "%s", st->install);
	snprintf(res->message, sizeof(res->message),
		 "%s: '%s' was not found in the cell (not in its image, or not on its PATH): "
		 "install it (%s) or use an image that has it (see 'sandcell code languages')",
		 req->lang->name, tool, how);
	return true;
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

/* The source file's name, and Java's class (the public class of the
 * source names both; other languages: the table's file, class "Main"). */
static void source_name(const struct lang_run_req *req, char *cls, size_t cls_size, char *name,
			size_t name_size)
{
	snprintf(cls, cls_size, "Main");
	if (STEPS[req->lang - TABLE].object_named)
		lang_scala_object(req->source ? req->source : "", req->source_len, cls, cls_size);
	if (!STEPS[req->lang - TABLE].class_named) {
		snprintf(name, name_size, "%s", req->lang->source_file);
		return;
	}
	lang_java_class(req->source ? req->source : "", req->source_len, cls, cls_size);
	snprintf(name, name_size, "%s.java", cls);
}

/* --files into the work directory, then the source (over a file of that
 * name from --files). -ENAMETOOLONG for a work directory too long, else
 * -1 with e filled (a SandboxError). */
static int write_sources(struct cell *c, const struct lang_run_req *req, const char *srcname,
			 struct sc_err *e)
{
	char srcpath[LANG_MAX_PATH + 200];
	int n = snprintf(srcpath, sizeof(srcpath), "%s/%s", req->workdir, srcname);
	if (n < 0 || (size_t)n >= sizeof(srcpath))
		return -ENAMETOOLONG;
	if (req->files_dir && cell_copy_in_as(c, req->files_dir, req->workdir, req->fetch_limit, e) < 0)
		return sc_err_wrap(e, "--files %s", req->files_dir);
	const struct lang_steps *st = &STEPS[req->lang - TABLE];
	const char *tag = st->open_tag;
	const char *src = req->source ? req->source : "";
	_cleanup_free_ char *tagged = NULL;
	size_t len = req->source_len;
	while (tag && len && isspace((unsigned char)*src)) {
		src++; /* text before the tag would be output (php) */
		len--;
	}
	if (tag && (len < strlen(tag) || memcmp(src, tag, strlen(tag)))) {
		size_t tl = strlen(tag);
		if (!(tagged = malloc(tl + 1 + len)))
			return sc_fail(e, ENOMEM, "the source");
		memcpy(tagged, tag, tl);
		tagged[tl] = '\n';
		memcpy(tagged + tl + 1, src, len);
		src = tagged;
		len += tl + 1;
	}
	const char *pre = st->prelude;
	size_t lead = 0; /* a directive ("#nullable", "#define") must start its line */
	while (lead < len && (src[lead] == ' ' || src[lead] == '\t'))
		lead++;
	if (pre && !tagged && !(lead < len && src[lead] == '#')) {
		size_t pl = strlen(pre);
		if (!(tagged = malloc(pl + len)))
			return sc_fail(e, ENOMEM, "the source");
		memcpy(tagged, pre, pl);
		memcpy(tagged + pl, src, len);
		src = tagged;
		len += pl;
	}
	_cleanup_free_ char *whole = NULL;
	if (st->postlude) {
		size_t pl = strlen(st->postlude);
		if (!(whole = malloc(len + pl)))
			return sc_fail(e, ENOMEM, "the source");
		memcpy(whole, src, len);
		memcpy(whole + len, st->postlude, pl);
		src = whole;
		len += pl;
	}
	if (cell_write_file(c, srcpath, src, len, CELL_FILE_CREATE | CELL_FILE_REPLACE, 30, e) < 0)
		return sc_err_wrap(e, "writing the source to %s", srcpath);
	if (st->side_name) {
		n = snprintf(srcpath, sizeof(srcpath), "%s/%s", req->workdir, st->side_name);
		if (n < 0 || (size_t)n >= sizeof(srcpath))
			return -ENAMETOOLONG;
		if (cell_write_file(c, srcpath, st->side_text, strlen(st->side_text),
				    CELL_FILE_CREATE | CELL_FILE_REPLACE, 30, e) < 0)
			return sc_err_wrap(e, "writing %s", srcpath);
	}
	return 0;
}

/* env (n slots, NULL-terminated when shorter) and extra (when not NULL)
 * into out, of n + 2 slots. */
static void with_extra_env(const char *const *env, size_t n, const char *extra, const char **out)
{
	size_t k = 0;
	for (; k < n && env[k]; k++)
		out[k] = env[k];
	if (extra)
		out[k++] = extra;
	out[k] = NULL;
}

/* The run step's environment (env: SC_ARRAY_LEN(st->env) + 7 slots): the
 * language's, the request's extra_env, and for Python and R what brings
 * their figures back as plots (lang/py/sc_backend.py, R's default graphics
 * device in lang/r/profile.R) into a directory of this run's own
 * (plots_env, "SANDCELL_PLOTS=DIR"). Returns whether plots are collected;
 * a cell whose /tmp cannot take the support file runs without. */
static bool run_env(struct cell *c, const struct lang_run_req *req, const struct lang_steps *st,
		    const char **env, char *plots_env, size_t plots_size)
{
	with_extra_env(st->env, SC_ARRAY_LEN(st->env), req->extra_env, env);
	size_t ne = 0;
	while (env[ne])
		ne++;
	bool python = !strcmp(req->lang->name, "python"), r_lang = !strcmp(req->lang->name, "r");
	if (!python && !r_lang)
		return false;
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rnd = (uint64_t)(sc_now() * 1e6);
	snprintf(plots_env, plots_size, "SANDCELL_PLOTS=/tmp/.sandcell/plots-%016llx",
		 (unsigned long long)rnd);
	struct sc_err pe = {0};
	if (!req->prepared && (python ? lang_i_install_py(c, &pe) : lang_i_install_r(c, &pe)) < 0)
		return false;
	if (python) {
		static const char *const support[] = {LANG_PY_ENV_SUPPORT};
		for (size_t i = 0; i < SC_ARRAY_LEN(support); i++) {
			size_t k = 0;
			while (k < ne && strcmp(env[k], support[i]))
				k++;
			if (k == ne) /* the step's own env has some */
				env[ne++] = support[i];
		}
	} else {
		env[ne++] = LANG_R_ENV_PROFILE;
	}
	env[ne++] = plots_env;
	env[ne] = NULL;
	return true;
}

static bool not_a_file(int errnum)
{
	return errnum == ENOENT || errnum == ENOTDIR || errnum == EISDIR || errnum == EINVAL;
}

/* --fetch: each file read back into res->files. */
static int fetch_files(struct cell *c, const struct lang_run_req *req, struct lang_result *res,
		       struct sc_err *e)
{
	for (size_t i = 0; i < req->nfetch; i++) {
		struct lang_file *f = &res->files[res->nfiles];
		char path[LANG_MAX_PATH + 200];
		struct cell_file cf;
		if (cell_path(req, req->fetch[i], path, sizeof(path), e) < 0)
			return sc_err_wrap(e, "--fetch %.200s", req->fetch[i]);
		if (cell_read_file(c, path, req->fetch_limit, 30, &cf, e) < 0) {
			if (req->fetch_files_only && not_a_file(e->errnum)) {
				*e = (struct sc_err){0};
				continue;
			}
			return sc_err_wrap(e, "--fetch %.200s", req->fetch[i]);
		}
		snprintf(f->path, sizeof(f->path), "%s", req->fetch[i]);
		f->data = cf.data;
		f->len = cf.len;
		f->truncated = cf.truncated;
		res->nfiles++;
	}
	return 0;
}

int lang_run_in(struct cell *c, const struct lang_run_req *given, struct lang_result *res,
		struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	double t0 = sc_now();
	if (check_req(given, err) < 0)
		return -1;
	struct lang_run_req req = *given;
	if (!req.workdir)
		req.workdir = "/testbed";
	if (!req.fetch_limit)
		req.fetch_limit = LANG_DEFAULT_FETCH_LIMIT;
	const struct lang_def *l = req.lang;
	const struct lang_steps *st = &STEPS[l - TABLE];

	char cls[128], srcname[160];
	source_name(&req, cls, sizeof(cls), srcname, sizeof(srcname));
	struct sc_err e = {0};
	int w = write_sources(c, &req, srcname, &e);
	if (w == -ENAMETOOLONG)
		return sc_fail(err, ENAMETOOLONG, "work directory '%.64s': too long", req.workdir);
	if (w < 0) {
		set_sandbox_error(res, &e);
		goto done;
	}
	if (req.nlibraries) {
		const char *ienv[SC_ARRAY_LEN(st->env) + 2];
		with_extra_env(st->env, SC_ARRAY_LEN(st->env), LANG_PY_ENV_PATH, ienv);
		if (lang_i_install_libraries(c, &req, ienv, &e) < 0) {
			set_sandbox_error(res, &e);
			goto done;
		}
	}
	if (st->compile[0]) {
		const char *cenv[SC_ARRAY_LEN(st->env) + 2];
		with_extra_env(st->env, SC_ARRAY_LEN(st->env), req.extra_env, cenv);
		if (step(c, &req, st->compile, cenv, srcname, cls, req.compile_timeout_s, -1, false,
			 &res->compile, &e) < 0) {
			set_sandbox_error(res, &e);
			goto done;
		}
		note_step(res, &res->compile);
		if (note_missing_tool(c, &req, st, st->compile[0], st->env, &res->compile, res))
			goto done;
		if (!step_ok(&res->compile)) {
			res->status = LANG_FAILED;
			goto done;
		}
	}
	const char *env[SC_ARRAY_LEN(st->env) + 7];
	char plots_env[128];
	bool plots = run_env(c, &req, st, env, plots_env, sizeof(plots_env));
	const char *plots_dir = plots_env + strlen("SANDCELL_PLOTS=");
	bool prestarted = req.prestarted && !strcmp(l->name, "python");
	if (step(c, &req, st->run, env, srcname, cls, req.run_timeout_s, req.stdin_fd, prestarted,
		 &res->run, &e) < 0) {
		set_sandbox_error(res, &e);
		goto done;
	}
	if (plots && lang_i_read_plots(c, plots_dir, -1, &req.sink, res, &e) < 0) {
		set_sandbox_error(res, &e);
		goto done;
	}
	note_step(res, &res->run);
	if (note_missing_tool(c, &req, st, st->run[0], env, &res->run, res))
		goto done;
	res->status = step_ok(&res->run) ? LANG_SUCCESS : LANG_FAILED;
	if (fetch_files(c, &req, res, &e) < 0)
		set_sandbox_error(res, &e);
done:
	res->wall_s = sc_now() - t0;
	emit(&req, LANG_EV_RESULT, NULL, 0, res);
	return 0;
}

int lang_run(const struct cell_spec *spec, const struct lang_run_req *req,
	     struct lang_result *res, struct sc_err *err)
{
	memset(res, 0, sizeof(*res));
	if (check_req(req, err) < 0)
		return -1;
	double t0 = sc_now();
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
	res->wall_s = sc_now() - t0;
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

/* sandcell code: run source code of a language in a cell (lang/). The
 * JSON encoding of lang's results (SandboxFusion's shape) is api/json.c's,
 * shared with the server. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../api/api.h"
#include "../lang/lang.h"
#include "cli.h"

static const char CODE_HELP[] =
	"usage: sandcell code languages [--image NAME] [--root DIR] [--json]\n"
	"       sandcell code run --lang L [OPTIONS] [FILE|-]\n"
	"       sandcell code session start [--lang python] [CELL OPTIONS] NAME\n"
	"       sandcell code session run NAME [--timeout S] [--clear-plots] [--libraries A,B]\n"
	"                                 [--json|--stream] [--out DIR] [FILE|-]\n"
	"       sandcell code session rm NAME\n"
	"       sandcell code session ls [--json]\n"
	"\n"
	"Run a program given as source in a fresh cell: write it, compile it\n"
	"where the language needs it, run it. 'languages' lists the languages,\n"
	"which of them the image has, and their versions (its Debian packages').\n"
	"A session keeps a Python interpreter alive in a long-lived cell: state,\n"
	"imports and functions persist from one 'session run' to the next.\n";

static const char RUN_HELP[] =
	"usage: sandcell code run --lang L [OPTIONS] [FILE|-]\n"
	"\n"
	"Write the source (FILE, or stdin with '-' or nothing) into a fresh cell,\n"
	"compile it where the language needs it and run it. Without --json the\n"
	"program's output is passed on and the exit status is the program's (or\n"
	"the compiler's when it failed; 124 on a timeout, 125 when sandcell failed).\n"
	"With --json one SandboxFusion-shaped result object is printed.\n"
	"\n"
	"Options:\n"
	"%s"
	"\n"
	"Cell options:\n"
	"%s";

struct code_opts {
	const char *lang;
	const char *stdin_file;
	const char *files_dir;
	const char *fetch[LANG_MAX_FETCH];
	size_t nfetch;
	double compile_timeout, run_timeout;
	uint64_t files_limit;
	const char *out_dir;
	const char *libraries;
	bool json;
	bool stream;
};

static int parse_fetch(void *t, const char *opt, const char *v)
{
	struct code_opts *o = t;
	if (o->nfetch >= LANG_MAX_FETCH) {
		cli_error("too many %s options (at most %d)", opt, LANG_MAX_FETCH);
		return -1;
	}
	if (!v[0] || strnlen(v, LANG_MAX_PATH) >= LANG_MAX_PATH) {
		cli_error("%s: expected a path in the cell (at most %d bytes)", opt, LANG_MAX_PATH - 1);
		return -1;
	}
	o->fetch[o->nfetch++] = v;
	return 0;
}

#define CD(member) CLI_FIELD(struct code_opts, member)

static const struct cli_option CODE_OPTIONS[] = {
	{"--lang", "-l", CLI_STRING, CD(lang), .metavar = "L",
	 .help = "language (see 'sandcell code languages')"},
	{"--stdin", NULL, CLI_STRING, CD(stdin_file), .metavar = "FILE",
	 .help = "the program's stdin (default: empty)"},
	{"--files", NULL, CLI_STRING, CD(files_dir), .metavar = "DIR",
	 .help = "copy DIR's contents into the work directory first"},
	{"--fetch", NULL, CLI_CUSTOM, .parse = parse_fetch, .metavar = "PATH",
	 .help = "return this file of the cell after the run (repeatable)"},
	{"--files-limit", NULL, CLI_SIZE, CD(files_limit), .metavar = "SIZE",
	 .help = "bytes per fetched file and of --files (default 10M)"},
	{"--compile-timeout", NULL, CLI_SECONDS, CD(compile_timeout), .metavar = "SECS",
	 .help = "stop the compiler after SECS (default 30)"},
	{"--run-timeout", NULL, CLI_SECONDS, CD(run_timeout), .metavar = "SECS",
	 .help = "stop the program after SECS (default 30)"},
	{"--libraries", NULL, CLI_STRING, CD(libraries), .metavar = "A,B",
	 .help = "install these with the language's tool first (needs --allow-net)"},
	{"--out", NULL, CLI_STRING, CD(out_dir), .metavar = "DIR",
	 .help = "also write the plots as DIR/plot-0001.png (.html), ... and the\n"
		 "--fetch files under their paths; each is named on stderr"},
	{"--json", NULL, CLI_FLAG, CD(json), .help = "print one JSON result object"},
	{"--stream", NULL, CLI_FLAG, CD(stream),
	 .help = "print NDJSON events (stdout, stderr, plot, result) as they come"},
	CLI_HELP_OPTION,
	{0},
};

/* ---- languages ---- */

struct languages_args {
	const char *image;
	bool json;
};
#define LA(member) CLI_FIELD(struct languages_args, member)

static const struct cli_option LANGUAGES_OPTIONS[] = {
	{"--image", NULL, CLI_STRING, LA(image), .metavar = "NAME", .help = "image (default: host)"},
	{"--json", NULL, CLI_FLAG, LA(json), .help = "print one JSON array"},
	CLI_ROOT_OPTION,
	CLI_HELP_OPTION,
	{0},
};

/* A Debian version's upstream part ("2:1.17-74" -> "1.17"), or "-". */
static const char *upstream_version(const char *v, char *buf, size_t size)
{
	if (!v)
		return "-";
	const char *colon = strchr(v, ':');
	if (colon && strspn(v, "0123456789") == (size_t)(colon - v))
		v = colon + 1;
	const char *dash = strrchr(v, '-');
	size_t n = dash ? (size_t)(dash - v) : strlen(v);
	snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), v);
	return buf;
}

static int cmd_languages(int argc, char **argv)
{
	struct languages_args a = {0};
	const struct cli_table tables[] = {{LANGUAGES_OPTIONS, &a, 0}};
	const struct cli_command cmd = {.name = "code languages", .see = "code", .help = CODE_HELP,
					.tables = tables, .ntables = 1};
	int nop;
	int done = cli_parse_args(&cmd, argc, argv, &nop, NULL);
	if (done >= 0)
		return done;
	bool json = a.json;
	struct rootfs_image img;
	struct sc_err err = {0};
	if (rootfs_image_open(cell_data_root(), a.image, &img, &err) < 0)
		return cli_fail(&err);
	struct lang_dpkg *dpkg;
	if (lang_dpkg_open((const char *const *)img.layers, img.nlayers, &dpkg, &err) < 0) {
		rootfs_image_free(&img);
		return cli_fail(&err);
	}
	size_t n;
	const struct lang_def *t = lang_table(&n);
	if (json)
		fputs("[", stdout);
	for (size_t i = 0; i < n; i++) {
		bool have = lang_available(&t[i], (const char *const *)img.layers, img.nlayers);
		char pkg[64];
		const char *version = lang_version(&t[i], dpkg, pkg, sizeof(pkg));
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			cli_json_string(stdout, t[i].name, strlen(t[i].name));
			fputs(",\"aliases\":[", stdout);
			for (size_t k = 0; k < SC_ARRAY_LEN(t[i].aliases) && t[i].aliases[k]; k++) {
				if (k)
					fputc(',', stdout);
				cli_json_string(stdout, t[i].aliases[k], strlen(t[i].aliases[k]));
			}
			fputs("],\"how\":", stdout);
			cli_json_string(stdout, t[i].how, strlen(t[i].how));
			printf(",\"compiled\":%s,\"available\":%s,\"libraries\":%s",
			       t[i].compiler ? "true" : "false", have ? "true" : "false",
			       lang_has_libraries(&t[i]) ? "true" : "false");
			if (version) {
				fputs(",\"package\":", stdout);
				cli_json_string(stdout, pkg, strlen(pkg));
				fputs(",\"version\":", stdout);
				cli_json_string(stdout, version, strlen(version));
			} else {
				fputs(",\"package\":null,\"version\":null", stdout);
			}
			fputc('}', stdout);
		} else {
			char aliases[64] = "";
			size_t used = 0;
			for (size_t k = 0; k < SC_ARRAY_LEN(t[i].aliases) && t[i].aliases[k]; k++) {
				int w = snprintf(aliases + used, sizeof(aliases) - used, "%s%s", k ? "," : "",
						 t[i].aliases[k]);
				if (w < 0 || (size_t)w >= sizeof(aliases) - used)
					break;
				used += (size_t)w;
			}
			char upstream[32];
			printf("%-13s %-16s %-4s %-4s %-14s %s\n", t[i].name, used ? aliases : "-",
			       have ? "yes" : "no", lang_has_libraries(&t[i]) ? "yes" : "no",
			       upstream_version(version, upstream, sizeof(upstream)), t[i].how);
		}
	}
	if (json)
		fputs("]\n", stdout);
	lang_dpkg_free(dpkg);
	rootfs_image_free(&img);
	return 0;
}

/* ---- run ---- */

/* The source: FILE or stdin, at most LANG_MAX_SOURCE bytes. */
static int read_source(const char *path, char **out, size_t *len)
{
	int fd = 0;
	if (path && strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			cli_error("code run: cannot open %.200s: %s", path, strerror(errno));
			return -1;
		}
	}
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		if (n == cap) {
			if (cap > LANG_MAX_SOURCE)
				break;
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			cli_error("code run: reading the source: %s", strerror(errno));
			free(buf);
			if (fd)
				close(fd);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	if (!buf) {
		cli_error("code run: out of memory reading the source");
		return -1;
	}
	if (n > LANG_MAX_SOURCE) {
		cli_error("code run: source is larger than the limit of %u bytes", LANG_MAX_SOURCE);
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* --stream: one NDJSON line per event, flushed at once. */
struct stream_ctx {
	bool session;
};

static void stream_sink(void *ctx, const struct lang_event *ev)
{
	const struct stream_ctx *sc = ctx;
	switch (ev->type) {
	case LANG_EV_STDOUT:
	case LANG_EV_STDERR:
		if (!ev->len)
			return;
		printf("{\"type\":\"%s\",\"data\":", ev->type == LANG_EV_STDOUT ? "stdout" : "stderr");
		cli_json_string(stdout, ev->data, ev->len);
		fputs("}\n", stdout);
		break;
	case LANG_EV_PLOT:
		printf("{\"type\":\"plot\",\"format\":\"%s\",\"content_base64\":",
		       ev->format ? ev->format : "png");
		api_json_base64(stdout, (const unsigned char *)ev->data, ev->len);
		fputs("}\n", stdout);
		break;
	case LANG_EV_RESULT:
		fputs("{\"type\":\"result\",\"result\":", stdout);
		api_json_lang_result(stdout, ev->result, NULL, sc->session);
		fputs("}\n", stdout);
		break;
	}
	fflush(stdout);
}

/* One file of --out: name (relative, no '.' or '..' part) under dfd, its
 * parent directories made, no link followed; said on stderr. */
static int write_out_file(int dfd, const char *dir, const char *name, const void *data, size_t len,
			  bool truncated)
{
	_cleanup_fd_ int fd = sc_create_beneath(dfd, name);
	if (fd < 0 || sc_write_all(fd, data, len) < 0) {
		cli_error("--out %.200s/%s: %s", dir, name, strerror(errno));
		return -1;
	}
	fprintf(stderr, "sandcell: wrote %s/%s (%zu bytes%s)\n", dir, name, len,
		truncated ? ", cut at --files-limit" : "");
	return 0;
}

/* A --fetch path as a name under --out: its leading '/' dropped; NULL
 * when a part of it is empty, '.' or '..'. */
static const char *out_name(const char *path)
{
	while (*path == '/')
		path++;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return NULL;
		p += n + (p[n] == '/');
	}
	return *path ? path : NULL;
}

/* --out DIR: the plots as DIR/plot-0001.png, plot-0002.html, ... (names
 * of our own, the format's extension) and the --fetch files under their
 * paths; each said on stderr. No link is followed under DIR. */
static int write_outputs(const char *dir, const struct lang_result *r)
{
	if (!dir || (!r->nplots && !r->nfiles))
		return 0;
	struct sc_err err = {0};
	if (sc_mkdir_p(dir, 0755, &err) < 0)
		return cli_fail(&err), -1;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		cli_error("--out %.200s: %s", dir, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < r->nplots; i++) {
		char name[32];
		snprintf(name, sizeof(name), "plot-%04zu.%s", i + 1,
			 !strcmp(r->plots[i].format, "html") ? "html" : "png");
		rc |= write_out_file(dfd, dir, name, r->plots[i].data, r->plots[i].len, false);
	}
	for (size_t i = 0; i < r->nfiles; i++) {
		const char *name = out_name(r->files[i].path);
		if (!name) {
			cli_error("--out: '%.200s' is no path to write under %.200s", r->files[i].path, dir);
			rc = -1;
			continue;
		}
		rc |= write_out_file(dfd, dir, name, r->files[i].data, r->files[i].len,
				     r->files[i].truncated);
	}
	close(dfd);
	return rc;
}

/* Without --json: pass each step's output on as it comes back. */
static void plain_sink(void *ctx, const struct lang_event *ev)
{
	(void)ctx;
	if (ev->type == LANG_EV_STDOUT)
		write_all(1, ev->data, ev->len);
	else if (ev->type == LANG_EV_STDERR)
		write_all(2, ev->data, ev->len);
}

static int result_rc(const struct lang_result *res)
{
	if (res->status == LANG_SANDBOX_ERROR)
		return CLI_EXIT_USAGE;
	if (res->run.present)
		return res->run.return_code;
	return res->compile.return_code ? res->compile.return_code : 1;
}

/* --libraries A,B into libs[] (pointing into *copy, malloc'd; free it
 * either way): 0, or -1 after a one-line error. */
static int split_libraries(const char *list, char **copy, const char **libs, size_t *n)
{
	*copy = NULL;
	if (!list)
		return 0;
	if (!(*copy = strdup(list))) {
		cli_error("--libraries: out of memory");
		return -1;
	}
	for (char *save = NULL, *t = strtok_r(*copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n >= LANG_MAX_LIBRARIES) {
			cli_error("--libraries: at most %d libraries", LANG_MAX_LIBRARIES);
			return -1;
		}
		if (!lang_library_name_ok(t)) {
			cli_error("--libraries: '%.64s' is not a library name", t);
			return -1;
		}
		libs[(*n)++] = t;
	}
	return 0;
}

/* The sink for --stream (NDJSON events) or, without --json, the plain
 * output; returns whether output streams (else it comes in the result). */
static bool pick_sink(bool json, bool stream, struct stream_ctx *sctx, struct lang_sink *sink)
{
	if (stream)
		*sink = (struct lang_sink){.fn = stream_sink, .ctx = sctx};
	else if (!json)
		*sink = (struct lang_sink){.fn = plain_sink};
	return stream || !json;
}

/* How a run's result is shown, and where its plots go. */
struct show {
	bool json, stream, session;
	const char *out_dir;
};

/* Print res as asked, write its plots and free it: the exit status. */
static int show_result(const struct show *sh, struct lang_result *res)
{
	if (sh->json) {
		api_json_lang_result(stdout, res, NULL, sh->session);
		fputc('\n', stdout);
	} else if (sh->stream) {
		/* the result was an event */
	} else if (res->status == LANG_SANDBOX_ERROR) {
		cli_error("%s", res->message);
	} else if (!sh->session && res->message[0]) {
		cli_warn("%s", res->message);
	}
	int rc = result_rc(res);
	if (write_outputs(sh->out_dir, res) < 0)
		rc = CLI_EXIT_USAGE;
	lang_result_free(res);
	return rc;
}

/* What code run reads before the cell: the source, --stdin and the
 * --libraries list (libs: the copy the request points into). */
struct run_inputs {
	char *src;
	size_t src_len;
	int stdin_fd;
	char *libs;
};

static void run_inputs_free(struct run_inputs *in)
{
	if (in->stdin_fd >= 0)
		close(in->stdin_fd);
	free(in->src);
	free(in->libs);
}

static int run_inputs_read(const struct code_opts *o, const char *file, struct run_inputs *in)
{
	if (read_source(file, &in->src, &in->src_len) < 0)
		return -1;
	if (!o->stdin_file)
		return 0;
	in->stdin_fd = open(o->stdin_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in->stdin_fd < 0) {
		cli_error("--stdin: cannot open %.200s: %s", o->stdin_file, strerror(errno));
		return -1;
	}
	return 0;
}

/* code run's command line: -1 to go on, else the exit status. */
static int code_run_args(struct code_opts *o, struct cli_cell_opts *co, int argc, char **argv,
			 const char **file, const struct lang_def **l)
{
	const struct cli_table tables[] = {{CODE_OPTIONS, o, 0}, {CLI_CELL_OPTIONS, co, 0}};
	const struct cli_command cmd = {.name = "code run", .help = RUN_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables), .operands = file,
					.max_operands = 1, .flags = CLI_DASH_OPERAND};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!o->lang) {
		cli_error("code run: no language given (--lang L; see 'sandcell code languages')");
		return CLI_EXIT_USAGE;
	}
	if (!(*l = lang_find(o->lang))) {
		cli_error("code run: unknown language '%.64s' (see 'sandcell code languages')", o->lang);
		return CLI_EXIT_USAGE;
	}
	if (o->nfetch && !o->json && !o->stream && !o->out_dir) {
		cli_error("code run: --fetch needs --out DIR (to write the files) or --json or "
			  "--stream (to print them)");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

static int fill_run_req(struct lang_run_req *req, const struct lang_def *l,
			const struct code_opts *o, const struct cli_cell_opts *co,
			struct run_inputs *in)
{
	lang_run_req_init(req);
	req->lang = l;
	req->source = in->src;
	req->source_len = in->src_len;
	req->stdin_fd = in->stdin_fd;
	req->files_dir = o->files_dir;
	for (size_t i = 0; i < o->nfetch; i++)
		req->fetch[i] = o->fetch[i];
	req->nfetch = o->nfetch;
	req->fetch_limit = o->files_limit;
	req->compile_timeout_s = o->compile_timeout;
	req->run_timeout_s = o->run_timeout;
	req->output_limit = co->overrides.limits.output;
	return split_libraries(o->libraries, &in->libs, req->libraries, &req->nlibraries);
}

static int cmd_code_run(int argc, char **argv)
{
	struct code_opts o = {.compile_timeout = LANG_DEFAULT_COMPILE_TIMEOUT,
			      .run_timeout = LANG_DEFAULT_RUN_TIMEOUT};
	_cleanup_cli_cell_opts_ struct cli_cell_opts co = {0};
	const char *file = NULL;
	const struct lang_def *l;
	int done = code_run_args(&o, &co, argc, argv, &file, &l);
	if (done >= 0)
		return done;
	__attribute__((cleanup(run_inputs_free))) struct run_inputs in = {.stdin_fd = -1};
	if (run_inputs_read(&o, file, &in) < 0)
		return CLI_EXIT_USAGE;
	_cleanup_cli_cell_ struct cli_cell cell;
	struct lang_run_req req;
	if (cli_cell_build(&cell, &co) < 0 || fill_run_req(&req, l, &o, &co, &in) < 0)
		return CLI_EXIT_USAGE;
	struct stream_ctx sctx = {.session = false};
	req.stream = pick_sink(o.json, o.stream, &sctx, &req.sink);
	struct lang_result res;
	struct sc_err err = {0};
	if (lang_run(&cell.spec, &req, &res, &err) < 0)
		return cli_fail(&err);
	const struct show sh = {.json = o.json, .stream = o.stream, .out_dir = o.out_dir};
	return show_result(&sh, &res);
}

/* ---- sessions ---- */

static const char SESSION_HELP[] =
	"usage: sandcell code session start [--lang python] [CELL OPTIONS] NAME\n"
	"       sandcell code session run NAME [OPTIONS] [FILE|-]\n"
	"       sandcell code session rm NAME\n"
	"       sandcell code session ls [--json]\n"
	"\n"
	"A session is a long-lived cell NAME with a Python interpreter kept\n"
	"alive in it. Each 'run' executes the source (FILE, or stdin) in that\n"
	"interpreter: variables, imports and functions persist; a bare last\n"
	"expression is shown as 'Out[N]: value'; an exception prints its\n"
	"traceback (exit status 1) and the session goes on; --timeout interrupts\n"
	"the code with SIGINT (status 124; killed 5 s later if it does not stop)\n"
	"and the session goes on. When the interpreter dies it is restarted and\n"
	"a note on stderr says that its state was lost. matplotlib figures come\n"
	"back as plots and accumulate until --clear-plots. Only Python keeps\n"
	"state: for other languages use 'code run' (each run is fresh).\n"
	"\n"
	"Run options:\n"
	"%s"
	"\n"
	"Cell options (start):\n"
	"%s";

struct session_run_args {
	double timeout;
	const char *out_dir, *libraries;
	bool json, stream, clear;
};
#define SR(member) CLI_FIELD(struct session_run_args, member)

/* 0 (none) or seconds up to 1e7: a session's code may run long */
static int parse_session_timeout(void *t, const char *opt, const char *v)
{
	struct session_run_args *a = t;
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= 0) || x > 1e7) {
		cli_error("%s: expected seconds like 30 or 0.5, got '%.64s'", opt, v);
		return -1;
	}
	a->timeout = x;
	return 0;
}

static const struct cli_option SESSION_RUN_OPTIONS[] = {
	{"--timeout", NULL, CLI_CUSTOM, .parse = parse_session_timeout, .metavar = "SECS",
	 .help = "interrupt the code after SECS (default: none)"},
	{"--clear-plots", NULL, CLI_FLAG, SR(clear),
	 .help = "forget the session's earlier plots first"},
	{"--libraries", NULL, CLI_STRING, SR(libraries), .metavar = "A,B",
	 .help = "pip-install these first unless they import (needs the\n"
		 "session started with --allow-net)"},
	{"--out", NULL, CLI_STRING, SR(out_dir), .metavar = "DIR",
	 .help = "also write the plots as DIR/plot-0001.png (.html), ..."},
	{"--json", NULL, CLI_FLAG, SR(json), .help = "print one JSON result object"},
	{"--stream", NULL, CLI_FLAG, SR(stream),
	 .help = "print NDJSON events (stdout, stderr, plot, result)"},
	{0},
};

static void print_session_help(FILE *f)
{
	_cleanup_free_ char *h = cli_options_help(SESSION_RUN_OPTIONS, 22);
	fprintf(f, SESSION_HELP, h ? h : "", cli_cell_opts_help());
}

static void session_help(void) { print_session_help(stdout); }

struct session_start_args {
	const char *lang;
};

static const struct cli_option SESSION_START_OPTIONS[] = {
	{"--lang", "-l", CLI_STRING, CLI_FIELD(struct session_start_args, lang), .metavar = "L"},
	{0},
};

/* The command line of 'code session VERB': -1 to go on, else the exit
 * status (0 after the session help). */
static int session_args(const char *name, const struct cli_table *tables, size_t ntables,
			int argc, char **argv, const char **operands, int max, int *n)
{
	/* run's FILE may be "-" (stdin) */
	unsigned flags = !strcmp(name, "code session run") ? CLI_DASH_OPERAND : 0;
	const struct cli_command cmd = {.name = name, .see = "code session",
					.print_help = session_help, .tables = tables,
					.ntables = ntables, .operands = operands,
					.max_operands = max, .flags = flags};
	return cli_parse_args(&cmd, argc, argv, n, NULL);
}

static int session_start(int argc, char **argv)
{
	_cleanup_cli_cell_opts_ struct cli_cell_opts co = {0};
	struct session_start_args a = {.lang = "python"};
	const struct cli_table tables[] = {{SESSION_START_OPTIONS, &a, 0}, {CLI_CELL_OPTIONS, &co, 0}};
	const char *name = NULL;
	const struct cli_command cmd = {.name = "code session start", .see = "code session",
					.print_help = session_help, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables), .operands = &name,
					.max_operands = 1};
	int n;
	int done = cli_parse_args(&cmd, argc, argv, &n, NULL);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("code session start: no session name given (usage: sandcell code session start [OPTIONS] NAME)");
		return CLI_EXIT_USAGE;
	}
	const struct lang_def *l = lang_find(a.lang);
	if (!l) {
		cli_error("code session start: unknown language '%.64s' (see 'sandcell code languages')", a.lang);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(l->name, "python") != 0) {
		cli_error("code session start: sessions keep state for python only; for %s use 'sandcell code run' (each run is fresh)",
			  l->name);
		return CLI_EXIT_USAGE;
	}
	_cleanup_cli_cell_ struct cli_cell cell;
	if (cli_cell_build(&cell, &co) < 0)
		return CLI_EXIT_USAGE;
	struct sc_err err = {0};
	if (lang_session_start(&cell.spec, name, l, &err) < 0)
		return cli_fail(&err);
	printf("%s\n", name);
	return 0;
}

/* session run's command line: -1 to go on, else the exit status. */
static int session_run_args(struct session_run_args *a, int argc, char **argv, const char **pos)
{
	const struct cli_table tables[] = {{SESSION_RUN_OPTIONS, a, 0}};
	int n;
	int done = session_args("code session run", tables, 1, argc, argv, pos, 2, &n);
	if (done >= 0)
		return done;
	if (!n) {
		cli_error("code session run: no session name given (usage: sandcell code session run NAME [FILE|-])");
		return CLI_EXIT_USAGE;
	}
	if (a->json && a->stream) {
		cli_error("code session run: --json and --stream do not go together");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

static int session_run(int argc, char **argv)
{
	struct session_run_args a = {0};
	const char *pos[2] = {NULL, NULL}; /* NAME [FILE] */
	int done = session_run_args(&a, argc, argv, pos);
	if (done >= 0)
		return done;
	_cleanup_free_ char *src = NULL;
	size_t src_len = 0;
	if (read_source(pos[1], &src, &src_len) < 0)
		return CLI_EXIT_USAGE;
	struct lang_session_req req;
	lang_session_req_init(&req);
	_cleanup_free_ char *libs = NULL;
	if (split_libraries(a.libraries, &libs, req.libraries, &req.nlibraries) < 0)
		return CLI_EXIT_USAGE;
	req.source = src;
	req.source_len = src_len;
	req.timeout_s = a.timeout;
	req.clear_plots = a.clear;
	struct stream_ctx sctx = {.session = true};
	req.stream = pick_sink(a.json, a.stream, &sctx, &req.sink);
	struct lang_result res;
	struct sc_err err = {0};
	if (lang_session_run(pos[0], &req, &res, &err) < 0)
		return cli_fail(&err);
	const struct show sh = {.json = a.json, .stream = a.stream, .session = true,
				.out_dir = a.out_dir};
	return show_result(&sh, &res);
}

static int session_rm(int argc, char **argv)
{
	const char *name = NULL;
	int n;
	int done = session_args("code session rm", NULL, 0, argc, argv, &name, 1, &n);
	if (done >= 0)
		return done;
	if (!name) {
		cli_error("code session rm: expected one session name (usage: sandcell code session rm NAME)");
		return CLI_EXIT_USAGE;
	}
	struct sc_err err = {0};
	if (lang_session_rm(name, &err) < 0)
		return cli_fail(&err);
	return 0;
}

struct session_ls_args {
	bool json;
};

static const struct cli_option SESSION_LS_OPTIONS[] = {
	{"--json", NULL, CLI_FLAG, CLI_FIELD(struct session_ls_args, json)},
	{0},
};

static int session_ls(int argc, char **argv)
{
	struct session_ls_args a = {0};
	const struct cli_table tables[] = {{SESSION_LS_OPTIONS, &a, 0}};
	int nop;
	int done = session_args("code session ls", tables, 1, argc, argv, NULL, 0, &nop);
	if (done >= 0)
		return done;
	bool json = a.json;
	struct cell_status *st = NULL;
	size_t n = 0;
	struct sc_err err = {0};
	if (cell_list(&st, &n, &err) < 0)
		return cli_fail(&err);
	if (json)
		fputs("[", stdout);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct cell *c;
		struct sc_err e = {0};
		if (!st[i].alive || cell_open(st[i].name, &c, &e) < 0)
			continue;
		bool is = lang_session_is(c);
		cell_close(c);
		if (!is)
			continue;
		if (json) {
			fputs(k ? ",{\"name\":" : "{\"name\":", stdout);
			cli_json_string(stdout, st[i].name, strlen(st[i].name));
			fputs(",\"lang\":\"python\",\"image\":", stdout);
			cli_json_string(stdout, st[i].image, strlen(st[i].image));
			fputs("}", stdout);
		} else {
			printf("%s\tpython\t%s\n", st[i].name, st[i].image);
		}
		k++;
	}
	if (json)
		fputs("]\n", stdout);
	free(st);
	return 0;
}

static int cmd_session(int argc, char **argv)
{
	static const struct cli_subcommand subs[] = {
		{"start", session_start}, {"run", session_run}, {"rm", session_rm}, {"ls", session_ls}};
	if (argc < 2 || cli_is_help(argv[1])) {
		print_session_help(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	return cli_run_subcommand("code session", subs, SC_ARRAY_LEN(subs), argc, argv);
}

int cmd_code(int argc, char **argv)
{
	static const struct cli_subcommand subs[] = {
		{"languages", cmd_languages}, {"run", cmd_code_run}, {"session", cmd_session}};
	if (argc < 2 || cli_is_help(argv[1])) {
		fputs(CODE_HELP, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	return cli_run_subcommand("code", subs, SC_ARRAY_LEN(subs), argc, argv);
}

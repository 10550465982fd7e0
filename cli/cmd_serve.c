/* sandcell serve: the HTTP API (api/) in the foreground. Parsing, the
 * signals and the log lines only. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../api/api.h"
#include "cli.h"

static const char SERVE_HELP[] =
	"usage: sandcell serve [--listen ADDR] [--token-file FILE] [OPTIONS]\n"
	"\n"
	"Serve the HTTP API (docs/api.md) in the foreground: SandboxFusion's\n"
	"/run_code and /v1/ping, /cells for long-lived cells, and E2B's API\n"
	"(/v2/sandboxes, envd; docs/e2b.md: the E2B SDKs' key is the token,\n"
	"given as X-API-KEY). Requests run in ready cells of a pool (the cell\n"
	"options below are their defaults); a cell serves one /run_code request\n"
	"and is then destroyed. One JSON line per request goes to stdout.\n"
	"SIGTERM or SIGINT: stop listening, let the requests in flight finish\n"
	"(for --drain-timeout; then stop what still runs), remove every cell\n"
	"made, exit 0. Killed (SIGKILL), it leaves the cells of POST /cells to\n"
	"the next server on the state root, which adopts them (same ids, token\n"
	"and timeouts) and removes the others; one server per state root but\n"
	"--ephemeral ones (docs/api.md, \"Restarts\").\n"
	"\n"
	"A TCP listener needs --token-file (clients send 'Authorization: Bearer\n"
	"TOKEN' or ?token=TOKEN; GET /v1/ping, a health probe, needs none); an\n"
	"address other than loopback also needs --tls-cert/--tls-key or\n"
	"--insecure-plaintext. A unix socket (mode 0600) needs no token.\n"
	"\n"
	"Options:\n"
	"%s"
	"\n"
	"Cell options (defaults of the cells it makes):\n"
	"%s";

struct serve_opts {
	const char *listen;
	const char *token_file;
	const char *port_file;
	const char *tls_cert, *tls_key;
	const char *pod_name;
	const char *node_name;
	const char *domain;
	const char *e2b_image_key;
	const char *allow_pull;
	uint64_t store_max;
	bool allow_images;
	size_t image_pool;
	const char *metrics_listen;
	bool insecure_plaintext, metrics_public, ephemeral, prestart, no_reuse;
	const char *preimport;
	size_t max_reuse;
	size_t pool, max_concurrency, max_cells;
	uint64_t max_body, max_header, max_connections, max_per_peer;
	double cell_idle, max_timeout, connection_timeout, head_timeout, request_deadline, drain;
};

#define SV(member) CLI_FIELD(struct serve_opts, member)

static const struct cli_option SERVE_OPTIONS[] = {
	{"--listen", NULL, CLI_STRING, SV(listen), .metavar = "ADDR",
	 .help = "127.0.0.1:PORT (0: any free port), [::1]:PORT or\nunix:PATH (default 127.0.0.1:8080)"},
	{"--token-file", NULL, CLI_STRING, SV(token_file), .metavar = "FILE",
	 .help = "the bearer token (first line of FILE)"},
	{"--port-file", NULL, CLI_STRING, SV(port_file), .metavar = "FILE",
	 .help = "write the port listened on to FILE once up"},
	{"--pool", NULL, CLI_COUNT, SV(pool), .min = 1, .max = 256, .metavar = "N",
	 .help = "ready cells kept (default 4)"},
	{"--max-concurrency", NULL, CLI_COUNT, SV(max_concurrency), .min = 1, .max = 4096,
	 .metavar = "N", .help = "requests at once; more get 503 (504 on\n/run_code) (default 16)"},
	{"--max-cells", NULL, CLI_COUNT, SV(max_cells), .min = 1, .max = 4096, .metavar = "N",
	 .help = "cells of POST /cells alive at once (default 64)"},
	{"--cell-idle-timeout", NULL, CLI_SECONDS, SV(cell_idle), .metavar = "SECS",
	 .help = "remove such a cell idle this long (default 600)"},
	{"--max-timeout", NULL, CLI_SECONDS, SV(max_timeout), .metavar = "SECS",
	 .help = "the longest timeout a request may ask for (default 300)"},
	{"--max-body", NULL, CLI_SIZE, SV(max_body), .metavar = "SIZE",
	 .help = "largest request body (default 16M)"},
	{"--max-header", NULL, CLI_SIZE, SV(max_header), .metavar = "SIZE",
	 .help = "memory for a request's head (default 32K)"},
	{"--max-connections", NULL, CLI_COUNT, SV(max_connections), .min = 1, .max = 65536,
	 .metavar = "N", .help = "open connections at once (default 256; the soft open-file\nlimit is raised to fit them)"},
	{"--max-connections-per-peer", NULL, CLI_COUNT, SV(max_per_peer), .min = 1, .max = 65536,
	 .metavar = "N", .help = "connections of one client address (IPv6: /64)\n"
				 "at once; beyond, the peer's oldest connection\n"
				 "still sending its request head is dropped, or\n"
				 "else the new one is refused (default: half of\n"
				 "--max-connections; loopback clients, or all\n"
				 "behind one proxy, are one peer)"},
	{"--connection-timeout", NULL, CLI_SECONDS, SV(connection_timeout), .metavar = "SECS",
	 .help = "drop a connection idle this long (default 30)"},
	{"--head-timeout", NULL, CLI_SECONDS, SV(head_timeout), .metavar = "SECS",
	 .help = "a request's head must arrive within SECS of\nthe connection (default 10)"},
	{"--request-deadline", NULL, CLI_SECONDS, SV(request_deadline), .metavar = "SECS",
	 .help = "a request's body must arrive within SECS of\nits head (default 60)"},
	{"--drain-timeout", NULL, CLI_SECONDS, SV(drain), .metavar = "SECS",
	 .help = "on SIGTERM, wait this long for requests, then\nstop them (default 30)"},
	{"--tls-cert", NULL, CLI_STRING, SV(tls_cert), .metavar = "FILE", .help = "TLS certificate (PEM)"},
	{"--tls-key", NULL, CLI_STRING, SV(tls_key), .metavar = "FILE", .help = "TLS private key (PEM)"},
	{"--insecure-plaintext", NULL, CLI_FLAG, SV(insecure_plaintext),
	 .help = "allow a non-loopback address without TLS"},
	{"--metrics-listen", NULL, CLI_STRING, SV(metrics_listen), .metavar = "ADDR",
	 .help = "also serve GET /metrics (Prometheus) on ADDR,\nwithout a token: 127.0.0.1:PORT, [::1]:PORT or\n"
		 "unix:PATH (GET /metrics on --listen needs the\ntoken)"},
	{"--metrics-public", NULL, CLI_FLAG, SV(metrics_public),
	 .help = "allow a non-loopback --metrics-listen (anyone\nwho reaches it reads the metrics)"},
	{"--pod-name", NULL, CLI_STRING, SV(pod_name), .metavar = "NAME",
	 .help = "executor_pod_name in results (default $HOSTNAME or null)"},
	{"--node-name", NULL, CLI_STRING, SV(node_name), .metavar = "NAME",
	 .help = "this server's name, the prefix of its cell ids\n"
		 "(NAME-HEX), which a load balancer routes by:\n"
		 "1 to 32 of a-z, 0-9 and '-', starting and\n"
		 "ending with a letter or digit (default: the\n"
		 "host name up to its first '.', lower-cased)"},
	{"--domain", NULL, CLI_STRING, SV(domain), .metavar = "DOMAIN",
	 .help = "also reach a cell's port by host name:\n"
		 "PORT-ID.DOMAIN (E2B's getHost(port)); DOMAIN\n"
		 "is what clients put after the dot, e.g.\n"
		 "sandcell.localhost:8080 (docs/api.md)"},
	{"--e2b-image-key", NULL, CLI_STRING, SV(e2b_image_key), .metavar = "KEY",
	 .help = "the E2B create's metadata key that names the\n"
		 "sandbox's image, as a template id does (with\n"
		 "--allow-images; slime's E2BSandbox; default\n"
		 "sandcell/image)"},
	{"--allow-images", NULL, CLI_FLAG, SV(allow_images),
	 .help = "POST /cells may name another image (\"image\":\n"
		 "a stored image or a reference the store holds);\n"
		 "each gets a pool of its own on first use"},
	{"--allow-pull", NULL, CLI_STRING, SV(allow_pull), .metavar = "REG[,REG...]",
	 .help = "with --allow-images: pull a missing reference\n"
		 "from these registries (HOST[:PORT], docker.io,\n"
		 "or * for any); never from others"},
	{"--store-max", NULL, CLI_SIZE, SV(store_max), .metavar = "SIZE",
	 .help = "after a pull, remove images no cell uses and\nno pool holds, least recently used first,\n"
		 "until the store fits SIZE (default\n$SANDCELL_STORE_MAX, else no cap)"},
	{"--image-pool", NULL, CLI_COUNT, SV(image_pool), .min = 1, .max = 64, .metavar = "N",
	 .help = "cells kept ready per other image (default 1)"},
	{"--prestart", NULL, CLI_FLAG, SV(prestart),
	 .help = "each pool cell starts python3 ahead; a Python\nprogram of /run_code runs in a clone of it\n"
		 "(docs/api.md)"},
	{"--preimport", NULL, CLI_STRING, SV(preimport), .metavar = "MOD[,MOD...]",
	 .help = "--prestart, with these modules imported ahead\n(e.g. numpy): programs find them imported"},
	{"--no-reuse", NULL, CLI_FLAG, SV(no_reuse),
	 .help = "remove every released pool cell; by default a\n"
		 "cell that served /run_code or a DELETEd /cells\n"
		 "cell is renewed to a fresh one and used again\n"
		 "(docs/security.md)"},
	{"--max-reuse", NULL, CLI_COUNT, SV(max_reuse), .min = 1, .max = 1000000, .metavar = "N",
	 .help = "renew a pool cell at most N times, then make a\nnew one (default: no bound)"},
	{"--ephemeral", NULL, CLI_FLAG, SV(ephemeral),
	 .help = "a server of its own (a client's private one):\n"
		 "no lock on the state root, which it may share,\n"
		 "and its cells die with it, never adopted"},
	CLI_HELP_OPTION,
	{0},
};

/* Request lines (JSON) to stdout, everything else as sandcell: lines. */
static void serve_log(void *ctx, enum sc_log_level level, const char *msg)
{
	(void)ctx;
	if (level == SC_LOG_INFO) {
		fprintf(stdout, "%s\n", msg); /* one locked call per line */
		fflush(stdout);
	} else {
		fprintf(stderr, "sandcell: %s%s\n", level == SC_LOG_ERROR ? "" : "warning: ", msg);
	}
}

static void on_listen(void *ctx, const char *addr)
{
	const char *port_file = ctx;
	fprintf(stderr, "sandcell: listening on %s\n", addr);
	if (!port_file)
		return;
	const char *colon = strrchr(addr, ':');
	char tmp[4096];
	if (!colon || snprintf(tmp, sizeof(tmp), "%s.tmp", port_file) >= (int)sizeof(tmp))
		return;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		cli_warn("--port-file: %s: %s", tmp, strerror(errno));
		return;
	}
	char line[32];
	int n = snprintf(line, sizeof(line), "%s\n", strncmp(addr, "unix:", 5) ? colon + 1 : "0");
	bool ok = sc_write_all(fd, line, (size_t)n) == 0;
	close(fd);
	if (!ok || rename(tmp, port_file) < 0)
		cli_warn("--port-file: cannot write %s", port_file);
}

static void on_metrics_listen(void *ctx, const char *addr)
{
	(void)ctx;
	fprintf(stderr, "sandcell: metrics on %s/metrics\n", addr);
}

static atomic_bool stop_flag;

static void *signal_thread(void *arg)
{
	sigset_t *set = arg;
	int sig;
	while (sigwait(set, &sig) != 0)
		;
	atomic_store(&stop_flag, true);
	return NULL;
}

static int read_token(const char *path, char **out)
{
	struct sc_err err = {0};
	char *t = NULL;
	size_t len = 0;
	if (sc_read_small_alloc(AT_FDCWD, path, SC_READ_REGULAR, 4096, &t, &len, &err) < 0) {
		cli_error("--token-file: %s", err.msg);
		return -1;
	}
	t[strcspn(t, "\r\n")] = '\0';
	if (strlen(t) < 8) {
		cli_error("--token-file %.200s: the token must be at least 8 characters", path);
		explicit_bzero(t, len);
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

/* Open files the server may hold at once: per connection its socket and,
 * while an exec runs, the cell's channel, two pipes and stdin; per API
 * cell the pidfd its init is watched by. */
#define FDS_PER_CONNECTION 6
#define FDS_BASE 128

/* Raise the open-file limit for the configured maxima, after the pool's
 * workers are forked (cells keep the limit they had). Unreachable: a
 * warning, since the maxima are bounds a server may never reach. */
static void raise_open_files(const struct api_http_opts *http, const struct api_config *cfg)
{
	uint64_t need = (uint64_t)http->max_connections * FDS_PER_CONNECTION + cfg->max_cells + FDS_BASE;
	uint64_t have;
	if (cli_raise_open_files(need, &have) < 0)
		cli_warn("serve: --max-connections %zu and --max-cells %zu may need about %llu open files, "
			 "but the limit is %llu (raise it: ulimit -n %llu, or LimitNOFILE= for a service)",
			 http->max_connections, cfg->max_cells, (unsigned long long)need,
			 (unsigned long long)have, (unsigned long long)need);
}

/* -1 to go on, else the exit status (0 after the help). */
static int serve_args(struct serve_opts *o, struct cli_cell_opts *co, int argc, char **argv)
{
	const struct cli_table tables[] = {{SERVE_OPTIONS, o, 24}, {CLI_CELL_OPTIONS, co, 0}};
	const struct cli_command cmd = {.name = "serve", .help = SERVE_HELP, .tables = tables,
					.ntables = SC_ARRAY_LEN(tables)};
	int n;
	return cli_parse_args(&cmd, argc, argv, &n, NULL);
}

/* The listener's options: the library's defaults where not given. */
static void http_opts_from(struct api_http_opts *http, const struct serve_opts *o)
{
	api_http_opts_init(http);
	if (o->listen)
		http->listen = o->listen;
	http->tls_cert = o->tls_cert;
	http->tls_key = o->tls_key;
	http->insecure_plaintext = o->insecure_plaintext;
	if (o->connection_timeout > 0)
		http->connection_timeout_s = o->connection_timeout;
	if (o->head_timeout > 0)
		http->head_timeout_s = o->head_timeout;
	if (o->request_deadline > 0)
		http->request_deadline_s = o->request_deadline;
	if (o->drain > 0)
		http->drain_s = o->drain;
	if (o->max_header)
		http->max_header = o->max_header;
	if (o->max_connections)
		http->max_connections = o->max_connections;
	if (o->max_per_peer)
		http->max_connections_per_peer = o->max_per_peer;
	http->metrics_listen = o->metrics_listen;
	http->metrics_public = o->metrics_public;
	http->on_metrics_listen = on_metrics_listen;
	http->on_listen = on_listen;
	http->on_listen_ctx = (void *)o->port_file;
}

/* --node-name, else the host name up to its first '.', lower-cased, into
 * buf; -1 after a one-line error when it is no node name. */
static int node_name_of(const struct serve_opts *o, char *buf, size_t size)
{
	if (o->node_name) {
		snprintf(buf, size, "%s", o->node_name);
	} else {
		char host[256] = "";
		if (gethostname(host, sizeof(host) - 1) < 0)
			host[0] = '\0';
		host[strcspn(host, ".")] = '\0';
		for (char *c = host; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		snprintf(buf, size, "%s", host);
	}
	if (api_node_name_ok(buf))
		return 0;
	cli_error("serve: %s '%.64s' is not a node name: 1 to %d of a-z, 0-9 and '-', starting "
		  "and ending with a letter or digit%s",
		  o->node_name ? "--node-name" : "the host name", buf, API_NODE_NAME_MAX,
		  o->node_name ? "" : " (pass --node-name NAME)");
	return -1;
}

/* The server's options: the library's defaults where not given. */
static void api_config_from(struct api_config *cfg, const struct serve_opts *o,
			    const struct cell_spec *spec, const char *token)
{
	api_config_init(cfg);
	cfg->spec = spec;
	if (o->pool)
		cfg->pool = o->pool;
	if (o->max_concurrency)
		cfg->max_concurrency = o->max_concurrency;
	if (o->max_cells)
		cfg->max_cells = o->max_cells;
	if (o->cell_idle > 0)
		cfg->cell_idle_s = o->cell_idle;
	if (o->max_timeout > 0)
		cfg->max_timeout_s = o->max_timeout;
	if (o->max_body)
		cfg->max_body = o->max_body > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)o->max_body;
	cfg->token = token;
	cfg->ephemeral = o->ephemeral;
	cfg->prestart = o->prestart || (o->preimport && *o->preimport);
	cfg->preimport = o->preimport;
	cfg->no_reuse = o->no_reuse;
	cfg->max_reuse = (unsigned)o->max_reuse;
	cfg->allow_images = o->allow_images || o->allow_pull;
	cfg->allow_pull = o->allow_pull;
	cfg->image_pool = o->image_pool;
	cfg->store_max = cli_store_max(o->store_max);
	cfg->pod_name = o->pod_name ? o->pod_name : getenv("HOSTNAME");
	cfg->log = (struct sc_log){.fn = serve_log};
}

/* SIGTERM, SIGINT and SIGHUP go to one thread that sets stop_flag; the
 * server's threads inherit the mask. 0, or -1 after a one-line error. */
static int start_signal_thread(void)
{
	static sigset_t set; /* the signal thread's, for the process */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	pthread_t sig_thread;
	if (pthread_create(&sig_thread, NULL, signal_thread, &set) != 0) {
		cli_error("serve: cannot start the signal thread");
		return -1;
	}
	pthread_detach(sig_thread);
	return 0;
}

static void token_free(char **token)
{
	if (*token) {
		explicit_bzero(*token, strlen(*token));
		free(*token);
	}
}

static void api_freep(struct api **a) { api_free(*a); /* removes every cell it made */ }

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o = {0};
	_cleanup_cli_cell_opts_ struct cli_cell_opts co = {0};
	int done = serve_args(&o, &co, argc, argv);
	if (done >= 0)
		return done;
	struct api_http_opts http;
	http_opts_from(&http, &o);
	__attribute__((cleanup(token_free))) char *token = NULL;
	if (o.token_file && read_token(o.token_file, &token) < 0)
		return CLI_EXIT_USAGE;
	_cleanup_cli_cell_ struct cli_cell cell;
	if (cli_cell_build(&cell, &co) < 0)
		return CLI_EXIT_USAGE;
	char node[API_NODE_NAME_MAX + 1];
	if (node_name_of(&o, node, sizeof(node)) < 0)
		return CLI_EXIT_USAGE;
	struct api_config cfg;
	api_config_from(&cfg, &o, &cell.spec, token);
	cfg.node_name = node;
	if (o.domain && !api_domain_ok(o.domain)) {
		cli_error("--domain %.200s: expected a host name (letters, digits, '-' and '.') "
			  "and an optional :PORT, e.g. sandcell.localhost:8080",
			  o.domain);
		return CLI_EXIT_USAGE;
	}
	cfg.domain = o.domain;
	cfg.e2b_image_key = o.e2b_image_key;
	cfg.pull_insecure = co.pull_insecure;
	struct sc_err err = {0};
	/* The checks first, so that a refused listener makes no cell. */
	if (api_http_check(&cfg, &http, &err) < 0)
		return cli_fail(&err);
	/* The pool's workers are forked here: before any thread. */
	__attribute__((cleanup(api_freep))) struct api *a = NULL;
	if (api_new(&cfg, &a, &err) < 0)
		return cli_fail(&err);
	raise_open_files(&http, &cfg);
	if (start_signal_thread() < 0)
		return CLI_EXIT_USAGE;
	int rc = api_http_serve(a, &http, &stop_flag, &err) < 0 ? cli_fail(&err) : 0;
	fprintf(stderr, "sandcell: stopped; removing cells\n");
	return rc;
}

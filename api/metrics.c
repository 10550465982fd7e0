/* The server's metrics: see metrics.h. Counters are relaxed atomics
 * (a scrape may see one request's counter before its histogram: fine
 * for a monitor, and nothing on the request path waits); the rendering
 * reads them once each. */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "api_priv.h"

#ifndef SANDCELL_VERSION
#define SANDCELL_VERSION "0.1.0"
#endif

#define RLX memory_order_relaxed

static const double BUCKETS[API_METRICS_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025,
						    0.05,  0.1,    0.25,  0.5,  1,
						    2.5,   5,      10,    30};
/* the status codes counted by value; any other is "other" (the last) */
static const int CODES[API_METRICS_CODES - 1] = {200, 201, 400, 401, 404, 405, 409, 410,
						 413, 422, 429, 500, 502, 503, 504};
static const char *const LIMIT_NAMES[API_LIMIT_KINDS] = {"memory", "pids", "timeout", "disk"};
static const char *const RUN_STATUS[3] = {"Success", "Failed", "SandboxError"};

void api_metrics_init(struct api_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->started = sc_now();
}

static size_t code_index(int status)
{
	for (size_t i = 0; i < SC_ARRAY_LEN(CODES); i++)
		if (CODES[i] == status)
			return i;
	return API_METRICS_CODES - 1;
}

void api_metrics_observe(struct api_hist *h, double seconds)
{
	size_t b = 0;
	while (b < API_METRICS_BUCKETS && seconds > BUCKETS[b])
		b++;
	atomic_fetch_add_explicit(&h->bucket[b], 1, RLX);
	atomic_fetch_add_explicit(&h->count, 1, RLX);
	atomic_fetch_add_explicit(&h->sum_us, seconds > 0 ? (uint64_t)(seconds * 1e6) : 0, RLX);
}

void api_metrics_cell_start(struct api_metrics *m, bool ready, double seconds)
{
	api_metrics_observe(&m->cell_acquire[ready ? API_START_POOLED : API_START_COLD], seconds);
}

void api_metrics_request(struct api_metrics *m, size_t route, int status, double seconds)
{
	if (route >= API_METRICS_ROUTES)
		route = API_METRICS_ROUTES - 1;
	atomic_fetch_add_explicit(&m->requests[route][code_index(status)], 1, RLX);
	api_metrics_observe(&m->latency[route], seconds);
}

void api_metrics_run_code(struct api_metrics *m, const void *lang, int status)
{
	size_t n;
	const struct lang_def *t = lang_table(&n);
	const struct lang_def *l = lang;
	if (!l || l < t || l >= t + n || (size_t)(l - t) >= API_METRICS_LANGS || status < 0 ||
	    status > 2)
		return;
	atomic_fetch_add_explicit(&m->run_code[l - t][status], 1, RLX);
}

void api_metrics_limit_hit(struct api_metrics *m, const char *what)
{
	for (size_t i = 0; what && i < API_LIMIT_KINDS; i++)
		if (!strcmp(what, LIMIT_NAMES[i]))
			atomic_fetch_add_explicit(&m->limit_hits[i], 1, RLX);
}

void api_metrics_egress(struct api_metrics *m, uint64_t allowed, uint64_t denied)
{
	if (allowed)
		atomic_fetch_add_explicit(&m->egress[0], allowed, RLX);
	if (denied)
		atomic_fetch_add_explicit(&m->egress[1], denied, RLX);
}

/* ---- rendering ---- */

struct out {
	char *buf;
	size_t size, len;
	bool full;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	if (o->full)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->size - o->len) {
		o->full = true;
		return;
	}
	o->len += (size_t)n;
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static uint64_t ld(const atomic_uint_fast64_t *v)
{
	return atomic_load_explicit(v, RLX);
}

/* One histogram's series; labels: "" or `route="...",` style (with a
 * trailing comma) */
static void hist(struct out *o, const char *name, const char *labels, const struct api_hist *h)
{
	uint64_t cum = 0;
	for (size_t b = 0; b < API_METRICS_BUCKETS; b++) {
		cum += ld(&h->bucket[b]);
		put(o, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, BUCKETS[b],
		    (unsigned long long)cum);
	}
	cum += ld(&h->bucket[API_METRICS_BUCKETS]);
	/* +Inf and _count from the same sum, so that they agree even while
	 * requests are counted during the scrape */
	put(o, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)cum);
	size_t ll = strlen(labels);
	put(o, "%s_sum%s%.*s%s %.6f\n", name, ll ? "{" : "", ll ? (int)ll - 1 : 0, labels,
	    ll ? "}" : "", (double)ld(&h->sum_us) / 1e6);
	put(o, "%s_count%s%.*s%s %llu\n", name, ll ? "{" : "", ll ? (int)ll - 1 : 0, labels,
	    ll ? "}" : "", (unsigned long long)cum);
}

static void code_label(char *buf, size_t size, size_t c)
{
	if (c < SC_ARRAY_LEN(CODES))
		snprintf(buf, size, "%d", CODES[c]);
	else
		snprintf(buf, size, "other");
}

static void render_requests(struct out *o, const struct api_metrics *m)
{
	size_t nroutes = api_route_count();
	head(o, "sandcell_http_requests_total", "counter",
	     "HTTP requests answered, by method, route template and status code");
	for (size_t r = 0; r < nroutes; r++)
		for (size_t c = 0; c < API_METRICS_CODES; c++) {
			uint64_t v = ld(&m->requests[r][c]);
			if (!v)
				continue;
			const char *meth, *route;
			char code[16];
			api_route_label(r, &meth, &route);
			code_label(code, sizeof(code), c);
			put(o, "sandcell_http_requests_total{method=\"%s\",route=\"%s\",code=\"%s\"} %llu\n",
			    meth, route, code, (unsigned long long)v);
		}
	head(o, "sandcell_http_requests_refused_total", "counter",
	     "requests refused for want of room: 429 (cells), 503 and 504 (busy or stopping)");
	static const int refused[] = {429, 503, 504};
	for (size_t k = 0; k < SC_ARRAY_LEN(refused); k++) {
		uint64_t v = 0;
		for (size_t r = 0; r < nroutes; r++)
			v += ld(&m->requests[r][code_index(refused[k])]);
		put(o, "sandcell_http_requests_refused_total{code=\"%d\"} %llu\n", refused[k],
		    (unsigned long long)v);
	}
	head(o, "sandcell_http_request_duration_seconds", "histogram",
	     "seconds from a request's head to its answer's last byte, by route template");
	for (size_t r = 0; r < nroutes; r++) {
		if (!ld(&m->latency[r].count))
			continue;
		const char *meth, *route;
		char labels[160];
		api_route_label(r, &meth, &route);
		snprintf(labels, sizeof(labels), "method=\"%s\",route=\"%s\",", meth, route);
		hist(o, "sandcell_http_request_duration_seconds", labels, &m->latency[r]);
	}
}

static void render_runs(struct out *o, const struct api_metrics *m)
{
	size_t n;
	const struct lang_def *t = lang_table(&n);
	head(o, "sandcell_run_code_prestarted_total", "counter",
	     "/run_code programs run in a process of the cell's pre-started interpreter");
	put(o, "sandcell_run_code_prestarted_total %llu\n",
	    (unsigned long long)ld(&m->run_code_prestarted));
	head(o, "sandcell_run_code_total", "counter", "/run_code results by language and status");
	for (size_t l = 0; l < n && l < API_METRICS_LANGS; l++)
		for (size_t s = 0; s < 3; s++) {
			uint64_t v = ld(&m->run_code[l][s]);
			if (v)
				put(o, "sandcell_run_code_total{language=\"%s\",status=\"%s\"} %llu\n",
				    t[l].name, RUN_STATUS[s], (unsigned long long)v);
		}
	head(o, "sandcell_limit_hits_total", "counter",
	     "commands stopped by a limit (exec, /run_code, /run, /code), by kind");
	for (size_t k = 0; k < API_LIMIT_KINDS; k++)
		put(o, "sandcell_limit_hits_total{kind=\"%s\"} %llu\n", LIMIT_NAMES[k],
		    (unsigned long long)ld(&m->limit_hits[k]));
	head(o, "sandcell_egress_decisions_total", "counter",
	     "egress proxy decisions seen in the results of exec and /run_code");
	put(o, "sandcell_egress_decisions_total{decision=\"allowed\"} %llu\n",
	    (unsigned long long)ld(&m->egress[0]));
	put(o, "sandcell_egress_decisions_total{decision=\"denied\"} %llu\n",
	    (unsigned long long)ld(&m->egress[1]));
	head(o, "sandcell_cell_acquire_seconds", "histogram",
	     "seconds to take a cell from the pool, by start: pooled (one was ready), cold (made "
	     "for the request)");
	hist(o, "sandcell_cell_acquire_seconds", "start=\"pooled\",",
	     &m->cell_acquire[API_START_POOLED]);
	hist(o, "sandcell_cell_acquire_seconds", "start=\"cold\",", &m->cell_acquire[API_START_COLD]);
}

static void render_gauges(struct out *o, const struct api_metrics_gauges *g)
{
	head(o, "sandcell_cells", "gauge",
	     "cells by state: pooled (ready, waiting for a request), busy and idle cells of "
	     "POST /cells, run_code: pool cells a /run_code holds");
	put(o, "sandcell_cells{state=\"pooled\"} %zu\n", g->cells_pooled);
	put(o, "sandcell_cells{state=\"busy\"} %zu\n", g->cells_busy);
	put(o, "sandcell_cells{state=\"idle\"} %zu\n", g->cells_idle);
	put(o, "sandcell_cells{state=\"run_code\"} %zu\n", g->run_code_cells);
	head(o, "sandcell_pool_target", "gauge", "ready cells the pool keeps (--pool)");
	put(o, "sandcell_pool_target %zu\n", g->pool_target);
	head(o, "sandcell_pool_renewals_total", "counter",
	     "cells released to the pool by result: renewed (fresh again, reused) or removed "
	     "(not renewable: replaced)");
	put(o, "sandcell_pool_renewals_total{result=\"renewed\"} %llu\n",
	    (unsigned long long)g->renewed);
	put(o, "sandcell_pool_renewals_total{result=\"removed\"} %llu\n",
	    (unsigned long long)g->not_renewed);
	head(o, "sandcell_cells_max", "gauge", "cells of POST /cells allowed at once (--max-cells)");
	put(o, "sandcell_cells_max %zu\n", g->max_cells);
	head(o, "sandcell_http_requests_in_flight", "gauge",
	     "requests holding a concurrency slot now");
	put(o, "sandcell_http_requests_in_flight %zu\n", g->in_flight);
	head(o, "sandcell_http_max_concurrency", "gauge", "concurrency slots (--max-concurrency)");
	put(o, "sandcell_http_max_concurrency %zu\n", g->max_concurrency);
}

/* Resident bytes (statm) and open fds (/proc/self/fd), or -1 each. */
static void process_stats(long long *rss, long long *fds)
{
	*rss = *fds = -1;
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		long long size, res;
		if (n > 0) {
			buf[n] = '\0';
			if (sscanf(buf, "%lld %lld", &size, &res) == 2)
				*rss = res * sysconf(_SC_PAGESIZE);
		}
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		long long k = 0;
		while (readdir(d))
			k++;
		closedir(d);
		*fds = k - 3; /* ".", ".." and the directory's own fd */
	}
}

static void render_process(struct out *o, const struct api_metrics *m)
{
	long long rss, fds;
	process_stats(&rss, &fds);
	if (rss >= 0) {
		head(o, "process_resident_memory_bytes", "gauge", "resident memory of the server");
		put(o, "process_resident_memory_bytes %lld\n", rss);
	}
	if (fds >= 0) {
		head(o, "process_open_fds", "gauge", "open file descriptors of the server");
		put(o, "process_open_fds %lld\n", fds);
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	head(o, "process_start_time_seconds", "gauge", "when the server started (Unix time)");
	put(o, "process_start_time_seconds %.3f\n",
	    (double)now.tv_sec + now.tv_nsec / 1e9 - (sc_now() - m->started));
	head(o, "sandcell_build_info", "gauge", "the build serving: always 1");
	put(o, "sandcell_build_info{version=\"%s\"} 1\n", SANDCELL_VERSION);
}

long api_metrics_render(const struct api_metrics *m, const struct api_metrics_gauges *g,
			char *buf, size_t size)
{
	struct out o = {.buf = buf, .size = size};
	if (!size)
		return -1;
	render_requests(&o, m);
	render_runs(&o, m);
	render_gauges(&o, g);
	render_process(&o, m);
	return o.full ? -1 : (long)o.len;
}

/* ---- the server's exposition ---- */

static void gauges_of(struct api *a, struct api_metrics_gauges *g)
{
	*g = (struct api_metrics_gauges){
		.pool_target = a->cfg.pool,
		.max_cells = a->cfg.max_cells,
		.max_concurrency = a->cfg.max_concurrency,
		.in_flight = api_in_flight(a),
		.run_code_cells = ld(&a->metrics.run_code_in_flight),
		.cells_pooled = a->pool ? cell_pool_ready_count(a->pool) : 0,
	};
	if (a->pool)
		cell_pool_renewals(a->pool, &g->renewed, &g->not_renewed);
	/* at most --max-cells entries, a few ns each */
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->ncells; i++)
		if (a->cells[i].id[0])
			*(a->cells[i].busy ? &g->cells_busy : &g->cells_idle) += 1;
	pthread_mutex_unlock(&a->mu);
}

char *api_metrics_text(struct api *a, size_t *len)
{
	struct api_metrics_gauges g;
	gauges_of(a, &g);
	char *buf = malloc(API_METRICS_OUT_MAX);
	if (!buf)
		return NULL;
	long n = api_metrics_render(&a->metrics, &g, buf, API_METRICS_OUT_MAX);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

void api_metrics_get(struct api *a, const struct api_call *call, struct api_response *resp)
{
	(void)call;
	size_t len;
	char *s = api_metrics_text(a, &len);
	if (!s) {
		api_response_error(resp, 500, "cannot render the metrics");
		return;
	}
	api_set_body(resp, 200, "text/plain; version=0.0.4; charset=utf-8", s, len);
}

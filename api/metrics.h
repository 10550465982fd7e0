/* The server's metrics (private to api/): counters and histograms that
 * the request path bumps with relaxed atomics (no lock, no allocation),
 * and one function that renders them, with the gauges read at scrape
 * time, in Prometheus' text exposition format (version 0.0.4) into a
 * bounded buffer. The registry is a plain struct that struct api owns:
 * no global state. Label values come from fixed sets only (route
 * templates such as /cells/{id}/exec, a fixed list of status codes, the
 * language table, four limit kinds), so the output's size is bounded
 * whatever the clients send and however many cells are alive.
 *
 * Threads: every api_metrics_* call but init is thread-safe. */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define API_METRICS_ROUTES 64  /* route rows + /metrics + "unmatched" */
#define API_METRICS_CODES 16   /* the fixed status codes + "other" */
#define API_METRICS_LANGS 48   /* languages of lang's table */
#define API_METRICS_BUCKETS 14 /* finite buckets of a latency histogram */
#define API_METRICS_OUT_MAX (128u << 10) /* bytes of one rendering, at most */

enum api_start_kind { API_START_POOLED, API_START_COLD };

enum api_limit_kind { API_LIMIT_MEMORY, API_LIMIT_PIDS, API_LIMIT_TIMEOUT, API_LIMIT_DISK,
		      API_LIMIT_KINDS };

/* A histogram of seconds: the buckets (not cumulative here: the
 * rendering adds them up), the count and the sum in microseconds. */
struct api_hist {
	atomic_uint_fast64_t bucket[API_METRICS_BUCKETS + 1]; /* the last: above all */
	atomic_uint_fast64_t count, sum_us;
};

struct api_metrics {
	double started;                                   /* sc_now() at init */
	atomic_uint_fast64_t requests[API_METRICS_ROUTES][API_METRICS_CODES];
	struct api_hist latency[API_METRICS_ROUTES];
	atomic_uint_fast64_t run_code[API_METRICS_LANGS][3]; /* by lang_status */
	atomic_uint_fast64_t limit_hits[API_LIMIT_KINDS];
	atomic_uint_fast64_t egress[2];                   /* allowed, denied */
	struct api_hist cell_acquire[2];                  /* a cell from the pool:
							   * [API_START_POOLED], [API_START_COLD] */
	atomic_uint_fast64_t run_code_in_flight;
	atomic_uint_fast64_t run_code_prestarted; /* runs in a pre-started interpreter */
};

void api_metrics_init(struct api_metrics *m);
/* One request answered (or dropped: status 0): route is a row of
 * api_route_index, seconds from its head to its last byte. */
void api_metrics_request(struct api_metrics *m, size_t route, int status, double seconds);
/* A /run_code's result: lang (an entry of lang_table, or NULL) and its
 * lang_status. */
void api_metrics_run_code(struct api_metrics *m, const void *lang, int status);
/* A command's limit_hit ("memory", "pids", "timeout", "disk"; NULL or
 * another word: nothing). */
void api_metrics_limit_hit(struct api_metrics *m, const char *what);
void api_metrics_egress(struct api_metrics *m, uint64_t allowed, uint64_t denied);
void api_metrics_observe(struct api_hist *h, double seconds);
/* A cell taken from the pool (cell_pool_acquire_how): seconds, and
 * whether one was ready. */
void api_metrics_cell_start(struct api_metrics *m, bool ready, double seconds);

/* What is read at scrape time (gauges). */
struct api_metrics_gauges {
	size_t cells_busy, cells_idle; /* cells of POST /cells */
	size_t cells_pooled;           /* ready in the pool */
	size_t run_code_cells;         /* pool cells a /run_code holds now */
	size_t pool_target, max_cells, max_concurrency;
	size_t in_flight;              /* requests holding a concurrency slot */
	uint64_t renewed, not_renewed; /* the pool's (cell_pool_renewals) */
};

/* The text exposition into buf (size bytes, at least a few KiB): its
 * length, or -1 when it did not fit (the caller answers 500). */
long api_metrics_render(const struct api_metrics *m, const struct api_metrics_gauges *g,
			char *buf, size_t size);

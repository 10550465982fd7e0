/* GET /sandboxes/{id}/metrics: what a sandbox uses now, as E2B's
 * SandboxMetric list. E2B samples every few seconds and answers the
 * samples between ?start= and ?end=; this server samples when asked: one
 * entry, taken now (none when now is outside start..end). cpuUsedPct is
 * the CPU time used since the previous call (or since the sandbox was
 * made) over that wall time and cpuCount cores. */
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "e2b_priv.h"

/* ?start= / ?end= (Unix seconds): false when given and not a number. */
static bool query_time(const struct api_request *req, const char *name, double *out)
{
	const char *v = req->query ? req->query(req->ctx, name) : NULL;
	*out = NAN;
	if (!v)
		return true;
	char *end;
	double t = strtod(v, &end);
	if (end == v || *end || !isfinite(t))
		return false;
	*out = t;
	return true;
}

int api_e2b_cores(const struct api *a)
{
	double cpus = a->cfg.spec->limits.cpus;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > 0 ? (int)ceil(cpus) : online > 0 ? (int)online : 1;
}

uint64_t api_e2b_memory(const struct api *a, const struct api_cell *c)
{
	if (c->memory_mb > 0)
		return api_memory_bytes(&a->lim, c->memory_mb);
	if (a->lim.memory)
		return a->lim.memory;
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* The CPU share since the sandbox's previous call, in percent of cores;
 * this call's figures kept for the next. -1: no such sandbox now. */
static double cpu_percent(struct api *a, const char *id, double cpu_s, double cores)
{
	double now = sc_now(), pct = -1;
	pthread_mutex_lock(&a->mu);
	struct api_cell *e = api_cell_find_locked(a, id);
	if (e && e->e2b) {
		double since = e->e2b->metrics_at > 0 ? e->e2b->metrics_at : e->created;
		double used = cpu_s - (e->e2b->metrics_at > 0 ? e->e2b->metrics_cpu_s : 0);
		pct = now > since ? used / (now - since) / cores * 100 : 0;
		pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
		e->e2b->metrics_at = now;
		e->e2b->metrics_cpu_s = cpu_s;
	}
	pthread_mutex_unlock(&a->mu);
	return pct;
}

void api_e2b_metrics(struct api *a, const struct api_call *call, struct api_response *resp)
{
	double start, end;
	if (!query_time(call->req, "start", &start) || !query_time(call->req, "end", &end)) {
		api_e2b_error(resp, 400, "start, end: Unix seconds");
		return;
	}
	struct api_cell e;
	struct cell *c;
	struct api_response inner = {0};
	int rc = api_cell_begin_entry(a, call->id, &c, &e, &inner);
	api_response_free(&inner);
	if (rc == 0 && !e.e2b) { /* a cell of /cells, not a sandbox */
		api_cell_end(a, call->id, c);
		rc = -1;
	}
	if (rc < 0) {
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
		return;
	}
	struct cell_usage u;
	struct sc_err err = {0};
	rc = cell_usage_get(c, &u, &err);
	api_cell_end(a, call->id, c);
	if (rc < 0) {
		api_e2b_error(resp, 502, "the sandbox's cell: %s", err.msg);
		return;
	}
	int cores = api_e2b_cores(a);
	double pct = cpu_percent(a, call->id, u.cpu_s, cores);
	if (pct < 0) {
		api_e2b_error(resp, 404, "sandbox %s not found", call->id);
		return;
	}
	uint64_t mem_total = api_e2b_memory(a, &e);
	time_t now = time(NULL);
	struct api_jbuf jb;
	if (!api_jb_open(&jb)) {
		api_e2b_error(resp, 500, "out of memory");
		return;
	}
	fputc('[', jb.f);
	if (!((!isnan(start) && (double)now < start) || (!isnan(end) && (double)now > end))) {
		struct tm tm;
		char ts[32];
		gmtime_r(&now, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
		fprintf(jb.f, "{\"timestamp\":\"%s\",\"timestampUnix\":%lld,\"cpuCount\":%d,"
			"\"cpuUsedPct\":%.2f,\"memUsed\":%llu,\"memTotal\":%llu,\"memCache\":%llu,"
			"\"diskUsed\":%llu,\"diskTotal\":%llu}", ts, (long long)now, cores, pct,
			(unsigned long long)u.memory, (unsigned long long)mem_total,
			(unsigned long long)u.memory_cache, (unsigned long long)u.disk,
			(unsigned long long)u.disk_size);
	}
	fputc(']', jb.f);
	api_jb_send(&jb, resp, 200);
}

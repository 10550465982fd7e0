/* The server's lifecycle: its configuration, the pool its cells come
 * from, the concurrency gate, the token, housekeeping and the stop.
 *
 * Cells come from one pool of the configured spec (a threaded process
 * never calls cell_create: the pool's single-threaded workers do). A pool
 * cell serves one /run_code request and is then released (destroyed in the
 * background, a fresh one takes its place); a cell of POST /cells lives
 * until DELETE, idleness or the server's end. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_priv.h"

void api_config_init(struct api_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->pool = API_DEFAULT_POOL;
	cfg->max_concurrency = API_DEFAULT_MAX_CONCURRENCY;
	cfg->max_cells = API_DEFAULT_MAX_CELLS;
	cfg->cell_idle_s = API_DEFAULT_CELL_IDLE;
	cfg->max_timeout_s = API_DEFAULT_MAX_TIMEOUT;
	cfg->max_body = API_DEFAULT_MAX_BODY;
}

#define PREIMPORT_MAX_LEN 511

/* --preimport: module names (letters, digits, '_', dotted) separated by
 * ',', at most LANG_MAX_PREIMPORT and PREIMPORT_MAX_LEN bytes; NULL or
 * "" is none. */
static bool preimport_ok(const char *s)
{
	if (!s || !*s)
		return true;
	size_t n = 1, len = strlen(s);
	if (len > PREIMPORT_MAX_LEN || s[0] == ',' || s[0] == '.' || s[len - 1] == ',' ||
	    s[len - 1] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
			    (ch >= '0' && ch <= '9' && i && s[i - 1] != ',' && s[i - 1] != '.');
		if (ch == ',' || ch == '.') {
			if (s[i + 1] == ',' || s[i + 1] == '.')
				return false;
			n += ch == ',';
		} else if (!word) {
			return false;
		}
	}
	return n <= LANG_MAX_PREIMPORT;
}

/* a->preimport: cfg's names (preimport_ok), pointing into a copy */
static void split_preimport(struct api *a, const char *s)
{
	_Static_assert(sizeof(a->preimport_buf) > PREIMPORT_MAX_LEN, "preimport buffer");
	size_t n = 0;
	snprintf(a->preimport_buf, sizeof(a->preimport_buf), "%s", s ? s : "");
	for (char *save = NULL, *t = strtok_r(a->preimport_buf, ",", &save);
	     t && n < LANG_MAX_PREIMPORT; t = strtok_r(NULL, ",", &save))
		a->preimport[n++] = t;
	a->preimport[n] = NULL;
}

int api_new(const struct api_config *cfg, struct api **out, struct sc_err *err)
{
	if (!cfg->spec)
		return sc_fail(err, EINVAL, "api: no cell spec");
	if (!cfg->max_concurrency || !cfg->max_cells || !cfg->max_body)
		return sc_fail(err, EINVAL, "api: limits must be at least 1");
	if (!preimport_ok(cfg->preimport))
		return sc_fail(err, EINVAL,
			       "--preimport '%.60s': module names (letters, digits, '_', dotted) "
			       "separated by ',', at most %d", cfg->preimport, LANG_MAX_PREIMPORT);
	if (!api_node_name_ok(cfg->node_name))
		return sc_fail(err, EINVAL,
			       "api: node name '%.40s' is not 1 to %d of a-z, 0-9 and '-' "
			       "(starting and ending with a letter or digit)",
			       cfg->node_name ? cfg->node_name : "", API_NODE_NAME_MAX);
	struct api *a = calloc(1, sizeof(*a));
	if (!a)
		return sc_fail(err, ENOMEM, "api");
	a->cfg = *cfg;
	snprintf(a->node, sizeof(a->node), "%s", cfg->node_name);
	a->cfg.node_name = a->node;
	api_metrics_init(&a->metrics);
	api_limits_of(&a->lim, cfg->spec, cfg->max_timeout_s);
	if (cfg->token && !(a->token = strdup(cfg->token))) {
		free(a);
		return sc_fail(err, ENOMEM, "api");
	}
	a->cfg.token = a->token;
	a->cells = calloc(cfg->max_cells, sizeof(*a->cells));
	if (!a->cells) {
		free(a->token);
		free(a);
		return sc_fail(err, ENOMEM, "api");
	}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->session_cv, NULL);
	pthread_cond_init(&a->orphans_cv, NULL);
	pthread_mutex_init(&a->host_mu, NULL);
	pthread_mutex_init(&a->images_mu, NULL);
	pthread_cond_init(&a->images_cv, NULL);
	a->host_sock = -1;
	a->lim.other_images = cfg->allow_images || cfg->allow_pull;
	if (!a->cfg.image_pool)
		a->cfg.image_pool = 1;
	a->lock_fd = -1;
	/* the root is ours before anything in it is read or made */
	if (!cfg->ephemeral && (api_restart_lock(a, err) < 0 || api_restart_adopt(a, err) < 0)) {
		a->stop_pipe[0] = a->stop_pipe[1] = -1;
		api_free(a);
		return -1;
	}
	if (pipe2(a->stop_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		a->stop_pipe[0] = a->stop_pipe[1] = -1;
		api_free(a);
		return sc_fail(err, e, "api: pipe");
	}
	size_t workers = cfg->pool < 4 ? cfg->pool : 4;
	a->pool_spec = *cfg->spec;
	/* E2B's working directory in every cell (e2b.c): made with the
	 * cell, not by an exec at each create */
	size_t nd = 0;
	for (const char *const *d = cfg->spec->make_dirs; d && *d && nd + 2 < SC_ARRAY_LEN(a->dirs); d++)
		a->dirs[nd++] = *d;
	a->dirs[nd++] = API_E2B_HOME;
	a->dirs[nd] = NULL;
	a->pool_spec.make_dirs = a->dirs;
	a->pool_spec.seed_files = a->seeds;
	a->pool_spec.nseed_files = lang_seed_files(a->seeds);
	a->prep.seeded = true;
	a->prep.prestart = cfg->prestart;
	split_preimport(a, cfg->preimport);
	a->prep.preimport = a->preimport;
	/* forked before the pool, which it then holds no socket of */
	if (a->lim.other_images && api_pool_host_start(a, err) < 0) {
		api_free(a);
		return sc_err_wrap(err, "the pool host");
	}
	/* keepable: a server killed leaves the cells of POST /cells for the
	 * next one on its root (restart.c) */
	const struct cell_pool_opts po = {.size = cfg->pool, .workers = workers ? workers : 1,
					  .prepare = lang_prepare_cell, .prepare_ctx = &a->prep,
					  .prefix = cfg->ephemeral ? "pool" : API_POOL_PREFIX,
					  .keepable = !cfg->ephemeral, .reuse = !cfg->no_reuse,
					  .max_renewals = cfg->max_reuse};
	if (cell_pool_new_opts(&a->pool_spec, &po, &a->pool, err) < 0) {
		api_free(a);
		return sc_err_wrap(err, "the cell pool");
	}
	*out = a;
	return 0;
}

void api_free(struct api *a)
{
	if (!a)
		return;
	/* the commands that outlived their streams use the cells and a */
	api_stream_orphans_wait(a);
	if (a->pool) {
		/* Each table cell goes back to be destroyed; freeing the pool
		 * waits until its workers removed everything they made. */
		for (size_t i = 0; i < a->ncells; i++)
			if (a->cells[i].handle) {
				api_e2b_free(a->cells[i].e2b);
				free(a->cells[i].volumes);
				if (!a->cfg.ephemeral)
					api_record_drop(a->cells[i].id);
				cell_pool_release(a->pool, a->cells[i].handle);
			}
		cell_pool_free(a->pool);
		api_image_pools_free(a);
	} else {
		for (size_t i = 0; i < a->ncells; i++) /* adopted before the pool failed */
			if (a->cells[i].handle)
				cell_close(a->cells[i].handle);
	}
	api_pool_host_stop(a);
	sc_closep(&a->lock_fd);
	lang_prep_cache_free(&a->prep);
	sc_closep(&a->stop_pipe[0]);
	sc_closep(&a->stop_pipe[1]);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->session_cv);
	pthread_cond_destroy(&a->orphans_cv);
	pthread_mutex_destroy(&a->host_mu);
	pthread_mutex_destroy(&a->images_mu);
	pthread_cond_destroy(&a->images_cv);
	free(a->cells);
	if (a->token)
		explicit_bzero(a->token, strlen(a->token));
	free(a->token);
	free(a);
}

const struct api_config *api_get_config(const struct api *a)
{
	return &a->cfg;
}

size_t api_in_flight(const struct api *a)
{
	return atomic_load(&a->in_flight);
}

bool api_enter(struct api *a)
{
	size_t n = atomic_fetch_add(&a->in_flight, 1);
	if (n >= a->cfg.max_concurrency) {
		atomic_fetch_sub(&a->in_flight, 1);
		return false;
	}
	return true;
}

void api_leave(struct api *a)
{
	atomic_fetch_sub(&a->in_flight, 1);
}

void api_cancel(struct api *a)
{
	pthread_mutex_lock(&a->mu);
	a->cancelled = true;
	/* Every run's cancel fd becomes readable for good: a byte nobody
	 * reads (closing the write end alone would not do: the pool's
	 * workers, forked after it was made, hold copies). */
	if (a->stop_pipe[1] >= 0)
		(void)!write(a->stop_pipe[1], "x", 1);
	sc_closep(&a->stop_pipe[1]);
	api_stream_orphans_cancel_locked(a);
	/* (a release is one message to the pool's workers: fine under mu) */
	for (struct api_hold *h = a->holds; h; h = h->next)
		if (h->dup) {
			cell_pool_release(a->pool, h->dup);
			h->dup = NULL;
		}
	for (size_t i = a->ncells; i-- > 0;)
		if (a->cells[i].id[0]) /* not a slot a create has reserved */
			cell_pool_release(a->pool, api_cell_drop_locked(a, i));
	pthread_mutex_unlock(&a->mu);
}

bool api_secret_equal(const char *want, const char *given)
{
	if (!given)
		return false;
	/* Every byte of want is looked at whatever was given. */
	size_t wl = strlen(want), gl = strlen(given);
	unsigned char diff = wl != gl;
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? given[i] : 0);
	return diff == 0;
}

bool api_token_ok(const struct api *a, const char *given)
{
	return !a->token || api_secret_equal(a->token, given);
}

void api_tick(struct api *a)
{
	struct cell *gone[8];
	size_t n = 0;
	double now = sc_now();
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->ncells && n < SC_ARRAY_LEN(gone);) {
		struct api_cell *e = &a->cells[i];
		bool expired = e->e2b && now >= api_e2b_end_at(e->e2b);
		if (e->id[0] && !e->changing &&
		    ((!e->busy && now - e->last_used > e->idle_s) || expired)) {
			sc_log(&a->cfg.log, SC_LOG_INFO,
			       "{\"event\":\"%s\",\"id\":\"%s\"}",
			       expired ? "e2b_sandbox_timeout" : "cell_idle_removed", e->id);
			gone[n++] = api_cell_drop_locked(a, i);
			continue; /* entry i is now another cell */
		}
		i++;
	}
	pthread_mutex_unlock(&a->mu);
	for (size_t i = 0; i < n; i++)
		cell_pool_release(a->pool, gone[i]);
}

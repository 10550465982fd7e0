/* Cells of images other than the server's (serve --allow-images): POST
 * /cells names one by store name or registry reference. A reference not
 * in the store is pulled when its registry is one --allow-pull names (a
 * request must not make the server fetch from anywhere it likes), once
 * however many requests wait for it. Each image gets a pool of its own,
 * made by the pool host (poolhost.c) on first use and kept while the
 * server runs, at most API_IMAGE_POOLS_MAX of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rootfs/rootfs.h"
#include "api_priv.h"

const struct rootfs_in_use api_cells_in_use = {.fn = cell_image_in_use};

/* Is ref's registry one the server may pull from? */
static bool pull_allowed(const struct api *a, const char *ref)
{
	char reg[256];
	struct sc_err ignored;
	if (!a->cfg.allow_pull || rootfs_ref_registry(ref, reg, sizeof(reg), &ignored) < 0)
		return false;
	size_t rl = strlen(reg);
	for (const char *s = a->cfg.allow_pull; *s;) {
		size_t n = strcspn(s, ",");
		if ((n == rl && !strncmp(s, reg, n)) || (n == 1 && *s == '*'))
			return true;
		s += n + (s[n] == ',');
	}
	return false;
}

bool api_image_stored(const char *store)
{
	struct rootfs_image img;
	struct sc_err ignored;
	if (rootfs_image_open(cell_data_root(), store, &img, &ignored) < 0)
		return false;
	rootfs_image_free(&img);
	return true;
}

/* One line of the server's JSON log: {"event": "pulled", ...}. */
static void log_pulled(const struct api *a, const char *named, const struct rootfs_resolved *r)
{
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);
	if (!f)
		return;
	fputs("{\"event\":\"pulled\",\"image\":", f);
	api_json_string(f, named, strlen(named));
	fputs(",\"store\":", f);
	api_json_string(f, r->store, strlen(r->store));
	fprintf(f, ",\"bytes\":%llu,\"s\":%.3f}", (unsigned long long)r->report.size, r->pull_s);
	if (fclose(f) == 0)
		sc_log(&a->cfg.log, SC_LOG_INFO, "%s", line);
	free(line);
}

/* serve --store-max: after a pull, images no cell uses, that have no
 * pool and are not the server's, least recently used first, until the
 * store fits; one JSON log line when any went. */
static void trim_store(struct api *a, const char *pulled)
{
	if (!a->cfg.store_max)
		return;
	const char *keep[API_IMAGE_POOLS_MAX + 3];
	size_t k = 0;
	keep[k++] = pulled;
	if (a->lim.image && strcmp(a->lim.image, "host") != 0)
		keep[k++] = a->lim.image;
	pthread_mutex_lock(&a->images_mu);
	char stores[API_IMAGE_POOLS_MAX][64];
	for (size_t i = 0; i < a->nimages && i < API_IMAGE_POOLS_MAX; i++) {
		snprintf(stores[i], sizeof(stores[i]), "%s", a->images[i].store);
		if (stores[i][0])
			keep[k++] = stores[i];
	}
	pthread_mutex_unlock(&a->images_mu);
	keep[k] = NULL;
	struct rootfs_trim_report rep = {0};
	struct sc_err err = {0};
	if (rootfs_store_trim(cell_data_root(), &api_cells_in_use, a->cfg.store_max, keep, NULL, &rep,
			      &err) < 0)
		sc_log(&a->cfg.log, SC_LOG_WARN, "--store-max: %s", err.msg);
	else if (rep.evicted)
		sc_log(&a->cfg.log, SC_LOG_INFO,
		       "{\"event\":\"store_trimmed\",\"evicted\":%zu,\"bytes_before\":%llu,"
		       "\"bytes_after\":%llu}",
		       rep.evicted, (unsigned long long)rep.before, (unsigned long long)rep.after);
}

/* The image's store name, pulled if it may be: 0, or -1 with a status. */
static int resolve(struct api *a, const char *named, char store[64], int *status,
		   struct sc_err *err)
{
	bool ref = rootfs_is_reference(named);
	bool may_pull = ref && pull_allowed(a, named);
	struct rootfs_pull_opts po = {.insecure = a->cfg.pull_insecure};
	struct rootfs_resolved r;
	*status = 422;
	if (ref && !may_pull) {
		if (rootfs_ref_store_name(named, store, 64, err) < 0)
			return -1;
		*status = 403;
		if (!api_image_stored(store))
			return sc_fail(err, EPERM,
				       "not stored, and this server may not pull from its registry "
				       "(serve --allow-pull)");
	}
	*status = 502;
	if (cell_ensure_private_dir(cell_data_root(), err) < 0 ||
	    rootfs_image_resolve(cell_data_root(), &api_cells_in_use, named,
				 may_pull ? ROOTFS_PULL_MISSING : ROOTFS_PULL_NEVER, &po,
				 NULL, &r, err) < 0)
		return -1;
	*status = 404;
	if (!api_image_stored(r.store))
		return sc_fail(err, ENOENT, "no such image in the store");
	if (r.pulled) {
		log_pulled(a, named, &r);
		trim_store(a, r.store);
	}
	snprintf(store, 64, "%s", r.store);
	return 0;
}

/* The entry for `named` (under images_mu), or a new one, or NULL: full. */
static struct api_image_pool *entry_locked(struct api *a, const char *named, bool *fresh)
{
	*fresh = false;
	for (size_t i = 0; i < a->nimages; i++)
		if (!strcmp(a->images[i].named, named) ||
		    (!a->images[i].making && !strcmp(a->images[i].store, named)))
			return &a->images[i];
	if (a->nimages == API_IMAGE_POOLS_MAX)
		return NULL;
	struct api_image_pool *e = &a->images[a->nimages++];
	memset(e, 0, sizeof(*e));
	snprintf(e->named, sizeof(e->named), "%s", named);
	e->making = true;
	*fresh = true;
	return e;
}

/* Make e's pool (its image resolved, pulled if need be), off the lock. */
static void make_entry(struct api *a, const char *named, int *status, struct sc_err *err,
		       struct cell_pool **pool, char store[64])
{
	*pool = NULL;
	if (resolve(a, named, store, status, err) < 0)
		return;
	/* its store name is known (so a --store-max trim keeps it) */
	pthread_mutex_lock(&a->images_mu);
	for (size_t i = 0; i < a->nimages; i++)
		if (!strcmp(a->images[i].named, named))
			snprintf(a->images[i].store, sizeof(a->images[i].store), "%s", store);
	pthread_mutex_unlock(&a->images_mu);
	if (api_pool_host_make(a, store, pool, err) < 0)
		*status = 503;
}

struct cell_pool *api_image_pool(struct api *a, const char *named, char out_store[64],
				 struct api_response *resp)
{
	out_store[0] = '\0';
	if (!named || !named[0])
		return a->pool;
	pthread_mutex_lock(&a->images_mu);
	bool fresh;
	struct api_image_pool *e = entry_locked(a, named, &fresh);
	while (e && !fresh && e->making) {
		pthread_cond_wait(&a->images_cv, &a->images_mu);
		e = entry_locked(a, named, &fresh); /* it may have failed and gone */
	}
	if (!e) {
		pthread_mutex_unlock(&a->images_mu);
		api_errorf(resp, 503, "this server holds pools of %d images already",
			   API_IMAGE_POOLS_MAX);
		return NULL;
	}
	if (!fresh) {
		struct cell_pool *p = e->pool;
		snprintf(out_store, 64, "%s", e->store);
		pthread_mutex_unlock(&a->images_mu);
		return p;
	}
	pthread_mutex_unlock(&a->images_mu);
	int status = 500;
	struct sc_err err = {0};
	struct cell_pool *p;
	char store[64] = "";
	make_entry(a, named, &status, &err, &p, store);
	pthread_mutex_lock(&a->images_mu);
	for (size_t i = 0; i < a->nimages; i++) {
		if (strcmp(a->images[i].named, named) != 0)
			continue;
		if (p) {
			a->images[i].pool = p;
			a->images[i].making = false;
		} else {
			/* a failure is not kept: the next request tries again */
			a->images[i] = a->images[--a->nimages];
		}
		break;
	}
	pthread_cond_broadcast(&a->images_cv);
	pthread_mutex_unlock(&a->images_mu);
	if (!p)
		api_errorf(resp, status, "image %.255s: %.400s", named, err.msg);
	else
		snprintf(out_store, 64, "%s", store);
	return p;
}

struct cell_pool *api_pool_of(struct api *a, const struct api_cell *e, struct api_response *resp)
{
	char store[64];
	return api_image_pool(a, e->image, store, resp);
}

void api_image_pools_free(struct api *a)
{
	for (size_t i = 0; i < a->nimages; i++)
		cell_pool_free(a->images[i].pool);
	a->nimages = 0;
}

void api_image_pool_drop(struct api *a, const char *store)
{
	struct cell_pool *p = NULL;
	pthread_mutex_lock(&a->images_mu);
	for (size_t i = 0; i < a->nimages; i++)
		if (!a->images[i].making && !strcmp(a->images[i].store, store)) {
			p = a->images[i].pool;
			a->images[i] = a->images[--a->nimages];
			break;
		}
	pthread_mutex_unlock(&a->images_mu);
	cell_pool_free(p);
}

bool api_image_in_table(struct api *a, const char *store)
{
	bool used = false;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->ncells && !used; i++)
		used = a->cells[i].id[0] && !strcmp(a->cells[i].image, store);
	pthread_mutex_unlock(&a->mu);
	return used;
}

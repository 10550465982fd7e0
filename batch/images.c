/* Tasks that name their own image: each image the attempts to run need is
 * made usable once, before any episode starts and before any thread
 * exists (the pools fork their workers, and a cell is never cloned from a
 * multi-threaded process): a store name is looked up, a registry
 * reference is pulled (once, however many tasks need it) under its store
 * name. The images' pools are made by run.c. */
#include <string.h>

#include "../common/parse.h"
#include "batch_priv.h"

long batch_images_add(struct batch_images *is, const char *named)
{
	for (size_t i = 0; i < is->n; i++)
		if (!strcmp(is->v[i].named, named))
			return (long)i;
	if (is->n == is->cap) {
		size_t cap = is->cap ? is->cap * 2 : 8;
		struct batch_image *v = realloc(is->v, cap * sizeof(*v));
		if (!v)
			return -1;
		is->v = v;
		is->cap = cap;
	}
	struct batch_image *im = &is->v[is->n];
	memset(im, 0, sizeof(*im));
	if (!(im->named = strdup(named)))
		return -1;
	return (long)is->n++;
}

static const struct rootfs_in_use CELLS_IN_USE = {.fn = cell_image_in_use};

/* Its store name, pulled when o->pull says so; the error set otherwise. */
static void fetch(struct batch_image *im, const struct batch_options *o)
{
	struct sc_err err = {0};
	struct rootfs_pull_opts po = {.insecure = o->pull_insecure};
	struct rootfs_resolved r;
	if (cell_ensure_private_dir(cell_data_root(), &err) < 0 ||
	    rootfs_image_resolve(cell_data_root(), &CELLS_IN_USE, im->named, o->pull, &po, &o->log,
				 &r, &err) < 0) {
		snprintf(im->error, sizeof(im->error), "%s", err.msg);
		sc_log(&o->log, SC_LOG_WARN, "batch: %s; the tasks that need it fail", im->error);
		return;
	}
	snprintf(im->store, sizeof(im->store), "%s", r.store);
	if (r.pulled)
		sc_log(&o->log, SC_LOG_INFO, "batch: pulled %s as image '%s' (%.1f MB) in %.1fs",
		       im->named, im->store, (double)r.report.size / 1e6, r.pull_s);
}

/* The batch's spec on the image's layers, its env and workdir. */
static void open_spec(struct batch_image *im, const struct cell_spec *base)
{
	struct sc_err err = {0};
	if (rootfs_image_open(cell_data_root(), im->store, &im->img, &err) < 0) {
		snprintf(im->error, sizeof(im->error), "%.520s", err.msg);
		return;
	}
	im->opened = true;
	im->spec = *base;
	cell_spec_set_layers(&im->spec, &im->img);
	im->spec.image_name = im->store;
	for (char **e = im->img.env; e && *e; e++)
		if (cell_spec_setenv(&im->spec, *e, &err) < 0) {
			snprintf(im->error, sizeof(im->error), "image '%s': %.520s", im->store, err.msg);
			return;
		}
	if (im->img.workdir)
		im->spec.workdir = im->img.workdir;
}

void batch_images_resolve(struct batch_images *is, const struct batch_options *o,
			  const struct cell_spec *base)
{
	for (size_t i = 0; i < is->n; i++)
		fetch(&is->v[i], o);
	if (o->store_max) {
		const char **keep = calloc(is->n + 2, sizeof(*keep));
		struct sc_err err = {0};
		size_t k = 0;
		for (size_t i = 0; keep && i < is->n; i++)
			if (is->v[i].store[0])
				keep[k++] = is->v[i].store;
		if (keep && o->image)
			keep[k++] = o->image;
		if (!keep || rootfs_store_trim(cell_data_root(), &CELLS_IN_USE, o->store_max, keep,
					       &o->log, NULL, &err) < 0)
			sc_log(&o->log, SC_LOG_WARN, "batch: --store-max: %s",
			       keep ? err.msg : "out of memory");
		free(keep);
	}
	for (size_t i = 0; i < is->n; i++)
		if (!is->v[i].error[0])
			open_spec(&is->v[i], base);
}

void batch_images_free(struct batch_images *is)
{
	/* Newest pool first: a pool's workers, forked after the older pools
	 * were made, hold those pools' ends too, and an older pool's workers
	 * only see their end close once every later worker is gone. */
	for (size_t i = is->n; i-- > 0;)
		if (is->v[i].pool)
			cell_pool_free(is->v[i].pool);
	for (size_t i = 0; i < is->n; i++) {
		if (is->v[i].opened)
			rootfs_image_free(&is->v[i].img);
		free(is->v[i].named);
	}
	free(is->v);
	memset(is, 0, sizeof(*is));
}

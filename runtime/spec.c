#include <string.h>

#include "../rootfs/rootfs.h"
#include "cell.h"

static const char *const DEFAULT_ENV[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"TERM=xterm",
	"LANG=C.UTF-8",
};

void cell_spec_init(struct cell_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->workdir = "/testbed";
	spec->hostname = "sandcell";
	spec->limits.disk = CELL_DEFAULT_DISK;
	spec->limits.output = CELL_DEFAULT_OUTPUT;
	for (size_t i = 0; i < SC_ARRAY_LEN(DEFAULT_ENV); i++)
		spec->env[spec->nenv++] = DEFAULT_ENV[i];
	spec->env[spec->nenv] = NULL;
	spec->stdin_fd = 0;
	spec->stdout_fd = 1;
	spec->stderr_fd = 2;
	spec->egress_log_fd = -1;
}

void cell_spec_set_layers(struct cell_spec *spec, const struct rootfs_image *img)
{
	spec->nlayers = 0;
	for (size_t i = 0; i < img->nlayers && i < CELL_MAX_LAYERS; i++)
		spec->layers[spec->nlayers++] = img->layers[i];
	spec->idmap_layers = img->idmap;
}

int cell_spec_setenv(struct cell_spec *spec, const char *kv, struct sc_err *err)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return sc_fail(err, 0, "environment entry '%.64s' is not KEY=VALUE", kv);
	size_t klen = (size_t)(eq - kv) + 1;
	for (size_t i = 0; i < spec->nenv; i++) {
		if (strncmp(spec->env[i], kv, klen) == 0) {
			spec->env[i] = kv;
			return 0;
		}
	}
	if (spec->nenv >= CELL_MAX_ENV)
		return sc_fail(err, 0, "too many environment entries (at most %d)", CELL_MAX_ENV);
	spec->env[spec->nenv++] = kv;
	spec->env[spec->nenv] = NULL;
	return 0;
}

static void merge_limit_u64(uint64_t *dst, uint64_t v)
{
	if (v)
		*dst = v;
}

static void merge_limits(struct policy_limits *dst, const struct policy_limits *src)
{
	merge_limit_u64(&dst->memory, src->memory);
	merge_limit_u64(&dst->pids, src->pids);
	merge_limit_u64(&dst->disk, src->disk);
	merge_limit_u64(&dst->output, src->output);
	merge_limit_u64(&dst->nofile, src->nofile);
	merge_limit_u64(&dst->fsize, src->fsize);
	if (src->cpus > 0)
		dst->cpus = src->cpus;
	if (src->timeout_s > 0)
		dst->timeout_s = src->timeout_s;
}

int cell_spec_apply_policy(struct cell_spec *spec, const struct policy *p,
			   struct sc_err *err)
{
	merge_limits(&spec->limits, &p->limits);
	if (p->hostname)
		spec->hostname = p->hostname;
	if (p->workdir)
		spec->workdir = p->workdir;
	if (p->require_cgroups)
		spec->require_cgroups = true;
	/* applied twice (the policy, then the command line's overrides):
	 * what either turns off stays off */
	spec->landlock.no_filesystem |= p->landlock.no_filesystem;
	spec->landlock.no_scope |= p->landlock.no_scope;
	if (p->landlock.connect != POLICY_CONNECT_ANY)
		spec->landlock.connect = p->landlock.connect;
	for (size_t i = 0; i < p->nenv; i++)
		if (cell_spec_setenv(spec, p->env[i], err) < 0)
			return -1;
	for (size_t i = 0; i < p->nmounts; i++) {
		const struct policy_mount *m = &p->mounts[i];
		if (spec->nbinds >= CELL_MAX_BINDS)
			return sc_fail(err, 0, "too many mounts (at most %d)", CELL_MAX_BINDS);
		if (p->no_writable_binds && m->host && !m->readonly)
			return sc_fail(err, 0, "policy '%s' allows no writable binds: add :ro to %s",
				       p->name ? p->name : "?", m->cell);
		spec->binds[spec->nbinds++] = (struct cell_bind){
			.host = m->host, .cell = m->cell, .readonly = m->readonly, .size = m->size};
	}
	return 0;
}

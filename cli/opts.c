/* The options shared by run, create, agent and batch. */
#include <string.h>

#include "../common/parse.h"
#include "cli.h"

const char CELL_OPTS_HELP[] =
	"  --image NAME          image (default: host)\n"
	"  --policy NAME|FILE    policy: built-in name or JSON file (default: default)\n"
	"  --memory SIZE         memory limit, e.g. 512M\n"
	"  --pids N              process limit\n"
	"  --cpus N              CPU limit in cores, e.g. 0.5\n"
	"  --timeout SECS        kill the whole cell after SECS (exit 124)\n"
	"  --disk SIZE           size of the writable layer (default 1G)\n"
	"  --output-limit SIZE   with --json: bytes kept of stdout and of stderr (default 1M)\n"
	"  --net none|allowlist  network: none = loopback only (default); allowlist =\n"
	"                        egress through sandcell's proxy to --allow-net names\n"
	"  --allow-net ENTRY     allow NAME, NAME:PORT or *.SUFFIX[:PORT] (default port\n"
	"                        443; repeatable; implies --net allowlist)\n"
	"  --net-host NAME=ADDR  send NAME to ADDR, never looked up (a trusted mirror)\n"
	"  -v HOST:CELL[:ro]     bind a host path into the cell (read-only with :ro)\n"
	"  -w DIR                working directory in the cell (default /testbed)\n"
	"  -e KEY=VAL            add to the clean environment (PATH HOME TERM LANG)\n"
	"  --hostname NAME       hostname (default sandcell)\n"
	"  --require-cgroups     fail (125) instead of falling back to rlimits\n"
	"  --root DIR            keep state, data and cache under DIR (or SANDCELL_ROOT)\n";

const char *cli_option_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		cli_error("%s needs a value", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

int cli_parse_count(const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	if (sc_parse_uint(v, min, max, out) < 0) {
		cli_error("%s: expected a number from %llu to %llu, got '%.64s'", name,
			  (unsigned long long)min, (unsigned long long)max, v);
		return -1;
	}
	return 0;
}

static int parse_size_opt(const char *name, const char *v, uint64_t *out)
{
	if (sc_parse_size(v, out) < 0 || *out == 0) {
		cli_error("%s: expected a size like 512M, got '%.64s'", name, v);
		return -1;
	}
	return 1;
}

static int parse_net_opt(struct cell_opts *o, const char *a, const char *v)
{
	struct sc_err err = {0};
	if (!o->net_rules && !(o->net_rules = calloc(1, sizeof(*o->net_rules)))) {
		cli_error("%s: out of memory", a);
		return -1;
	}
	bool host = !strcmp(a, "--net-host");
	if ((host ? net_rules_host_arg(o->net_rules, v, &err)
		  : net_rules_allow(o->net_rules, v, &err)) < 0) {
		cli_error("%s %s", a, err.msg);
		return -1;
	}
	o->net_hosts_given |= host;
	return 1;
}

/* Egress rules for spec: allowlist mode when --net allowlist, --allow-net
 * or the policy (unless --net none) says so. */
static int build_net(struct cell_opts *o, const struct policy *pol, struct cell_spec *spec)
{
	struct sc_err err = {0};
	bool cli_allow = o->net_rules && o->net_rules->nallow;
	bool explicit_none = o->net && !strcmp(o->net, "none");
	if (explicit_none && cli_allow) {
		cli_error("--allow-net: not with --net none");
		return -1;
	}
	bool allowlist = cli_allow || (o->net && !strcmp(o->net, "allowlist")) ||
			 (!explicit_none && pol->network && !strcmp(pol->network, "allowlist"));
	if (!allowlist) {
		if (o->net_hosts_given) {
			cli_error("--net-host: needs --allow-net or a policy in allowlist mode");
			return -1;
		}
		return 0;
	}
	if (!o->net_rules && !(o->net_rules = calloc(1, sizeof(*o->net_rules)))) {
		cli_error("network rules: out of memory");
		return -1;
	}
	for (size_t i = 0; i < pol->nnet_allow; i++)
		if (net_rules_allow(o->net_rules, pol->net_allow[i], &err) < 0) {
			cli_error("policy network.allow[%zu]: %s", i, err.msg);
			return -1;
		}
	for (size_t i = 0; i < pol->nnet_hosts; i++) {
		/* the command line's mapping of a name wins */
		if (net_rules_find_host(o->net_rules, pol->net_hosts[i].name))
			continue;
		if (net_rules_host(o->net_rules, pol->net_hosts[i].name, pol->net_hosts[i].addr,
				   &err) < 0) {
			cli_error("policy network.hosts: %s", err.msg);
			return -1;
		}
	}
	if (cell_spec_set_egress(spec, o->net_rules, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	return 0;
}

int cell_opts_parse(struct cell_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	struct policy_limits *l = &o->overrides.limits;
	uint64_t n;
#define VALUE()                                                                                \
	do {                                                                                   \
		if (!(v = cli_option_value(argc, argv, i)))                                         \
			return -1;                                                             \
	} while (0)
	if (!strcmp(a, "--image")) {
		VALUE();
		o->image = v;
	} else if (!strcmp(a, "--policy")) {
		VALUE();
		o->policy = v;
	} else if (!strcmp(a, "--memory")) {
		VALUE();
		return parse_size_opt(a, v, &l->memory);
	} else if (!strcmp(a, "--disk")) {
		VALUE();
		return parse_size_opt(a, v, &l->disk);
	} else if (!strcmp(a, "--output-limit")) {
		VALUE();
		return parse_size_opt(a, v, &l->output);
	} else if (!strcmp(a, "--pids")) {
		VALUE();
		if (sc_parse_uint(v, 1, 4194304, &n) < 0) {
			cli_error("--pids: expected a number from 1 to 4194304, got '%.64s'", v);
			return -1;
		}
		l->pids = n;
	} else if (!strcmp(a, "--cpus")) {
		VALUE();
		if (sc_parse_cpus(v, &l->cpus) < 0) {
			cli_error("--cpus: expected a number of cores like 0.5 or 2, got '%.64s'", v);
			return -1;
		}
	} else if (!strcmp(a, "--timeout")) {
		VALUE();
		if (sc_parse_seconds(v, &l->timeout_s) < 0) {
			cli_error("--timeout: expected seconds like 30 or 0.5, got '%.64s'", v);
			return -1;
		}
	} else if (!strcmp(a, "--net")) {
		VALUE();
		if (strcmp(v, "none") != 0 && strcmp(v, "allowlist") != 0) {
			cli_error("--net: expected 'none' (loopback only) or 'allowlist', got '%.64s'", v);
			return -1;
		}
		o->net = v;
	} else if (!strcmp(a, "--allow-net") || !strcmp(a, "--net-host")) {
		VALUE();
		return parse_net_opt(o, a, v);
	} else if (!strcmp(a, "-v") || !strcmp(a, "--volume")) {
		VALUE();
		if (o->nbinds >= CELL_MAX_BINDS) {
			cli_error("too many -v options (at most %d)", CELL_MAX_BINDS);
			return -1;
		}
		o->bind_args[o->nbinds++] = (char *)v;
	} else if (!strcmp(a, "-w") || !strcmp(a, "--workdir")) {
		VALUE();
		if (v[0] != '/') {
			cli_error("-w: expected an absolute path in the cell, got '%.64s'", v);
			return -1;
		}
		o->overrides.workdir = (char *)v;
	} else if (!strcmp(a, "-e") || !strcmp(a, "--env")) {
		VALUE();
		if (!sc_valid_env(v)) {
			cli_error("-e: expected KEY=VALUE, got '%.64s'", v);
			return -1;
		}
		if (o->nenv >= CELL_MAX_ENV) {
			cli_error("too many -e options (at most %d)", CELL_MAX_ENV);
			return -1;
		}
		o->env[o->nenv++] = v;
	} else if (!strcmp(a, "--hostname")) {
		VALUE();
		if (!sc_valid_name(v)) {
			cli_error("--hostname: expected letters, digits, '.', '_' or '-' (at most 63), got '%.64s'", v);
			return -1;
		}
		o->overrides.hostname = (char *)v;
	} else if (!strcmp(a, "--require-cgroups")) {
		o->require_cgroups = true;
	} else if (!strcmp(a, "--root")) {
		VALUE();
		if (v[0] != '/') {
			cli_error("--root: expected an absolute path, got '%.64s'", v);
			return -1;
		}
		cell_set_root(v);
	} else {
		return 0;
	}
#undef VALUE
	return 1;
}

static int add_binds(struct cell_opts *o, const struct policy *pol, struct cell_spec *spec)
{
	for (size_t i = 0; i < o->nbinds; i++) {
		size_t len = strlen(o->bind_args[i]);
		char *copy = malloc(len + 1);
		if (!copy)
			return -1;
		memcpy(copy, o->bind_args[i], len + 1);
		const char *given = o->bind_args[i];
		o->bind_args[i] = copy; /* owned from here on */
		o->nbinds_owned = i + 1;
		struct sc_bind_arg b;
		if (sc_parse_bind(copy, &b) < 0) {
			cli_error("-v: expected /HOST/PATH:/CELL/PATH[:ro], got '%.200s'", given);
			return -1;
		}
		if (pol->no_writable_binds && !b.readonly) {
			cli_error("-v %s: policy '%s' allows no writable binds (add :ro)", b.cell,
				  pol->name ? pol->name : "?");
			return -1;
		}
		if (spec->nbinds >= CELL_MAX_BINDS) {
			cli_error("too many binds (at most %d)", CELL_MAX_BINDS);
			return -1;
		}
		spec->binds[spec->nbinds++] =
			(struct cell_bind){.host = b.host, .cell = b.cell, .readonly = b.readonly};
	}
	return 0;
}

int cell_opts_build(struct cell_opts *o, struct policy *pol, struct policy_filter *filter,
		    struct cell_spec *spec)
{
	struct sc_err err = {0};
	const char *name = o->policy ? o->policy : "default";
	if (policy_load_deferred(name, pol, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	/* The image's env and workdir are defaults: the policy and then the
	 * command line override them. */
	const char *image = o->image ? o->image : pol->image;
	if (rootfs_image_open(cell_data_root(), image, &o->img, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	for (size_t i = 0; i < o->img.nlayers; i++)
		spec->layers[spec->nlayers++] = o->img.layers[i];
	for (char **e = o->img.env; e && *e; e++)
		if (cell_spec_setenv(spec, *e, &err) < 0) {
			cli_fail(&err);
			return -1;
		}
	if (o->img.workdir)
		spec->workdir = o->img.workdir;
	/* Command-line options override the policy's fields. */
	if (cell_spec_apply_policy(spec, pol, &err) < 0 ||
	    cell_spec_apply_policy(spec, &o->overrides, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	if (o->require_cgroups)
		spec->require_cgroups = true;
	for (size_t i = 0; i < o->nenv; i++)
		if (cell_spec_setenv(spec, o->env[i], &err) < 0) {
			cli_fail(&err);
			return -1;
		}
	if (add_binds(o, pol, spec) < 0 || build_net(o, pol, spec) < 0)
		return -1;
	if (cell_ensure_private_dir(cell_cache_root(), &err) < 0 ||
	    policy_compile_filter(pol, cell_cache_root(), filter, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	spec->filter = filter->count ? filter : NULL;
	return 0;
}

void cell_opts_free(struct cell_opts *o)
{
	for (size_t i = 0; i < o->nbinds_owned; i++)
		free(o->bind_args[i]);
	o->nbinds_owned = 0;
	free(o->net_rules);
	o->net_rules = NULL;
	rootfs_image_free(&o->img);
}

/* The options shared by run, create, agent and batch. */
#include <string.h>

#include "../common/parse.h"
#include "cli.h"

/* --memory, --pids, --cpus, --timeout, --disk, --output-limit: the
 * policy's validator and ranges (0 lifts the memory and pids defaults). */
int cli_limit_parse(const char *opt, const char *v, struct policy_limits *l)
{
	const char *key = !strcmp(opt, "--output-limit") ? "output" : opt + 2;
	struct sc_err err = {0};
	if (policy_limit_parse(key, v, l, &err) < 0) {
		cli_error("%s: %s", opt, err.msg);
		return -1;
	}
	return 0;
}

static int parse_limit(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	return cli_limit_parse(opt, v, &o->overrides.limits);
}

static int parse_net(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	if (strcmp(v, "none") != 0 && strcmp(v, "allowlist") != 0) {
		cli_error("--net: expected 'none' (loopback only) or 'allowlist', got '%.64s'", v);
		return -1;
	}
	o->net = v;
	return 0;
}

static struct net_rules *net_rules_of(struct cli_cell_opts *o)
{
	if (!o->net_rules)
		o->net_rules = calloc(1, sizeof(*o->net_rules));
	return o->net_rules;
}

/* --allow-net ENTRY, --net-host NAME=ADDR */
static int parse_net_rule(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	struct sc_err err = {0};
	struct net_rules *rules = net_rules_of(o);
	if (!rules) {
		cli_error("%s: out of memory", opt);
		return -1;
	}
	bool host = !strcmp(opt, "--net-host");
	if ((host ? net_rules_host_arg(rules, v, &err) : net_rules_allow(rules, v, &err)) < 0) {
		cli_error("%s %s", opt, err.msg);
		return -1;
	}
	o->net_hosts_given |= host;
	return 0;
}

static int parse_bind(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	if (o->nbinds >= CELL_MAX_BINDS) {
		cli_error("too many -v options (at most %d)", CELL_MAX_BINDS);
		return -1;
	}
	o->bind_args[o->nbinds++] = (char *)v;
	return 0;
}

int cli_check_cell_dir(const char *opt, const char *v)
{
	if (v[0] != '/') {
		cli_error("%s: expected an absolute path in the cell, got '%.64s'", opt, v);
		return -1;
	}
	return 0;
}

int cli_add_env(const char *opt, const char *v, const char **env, size_t *n)
{
	if (!sc_valid_env(v)) {
		cli_error("%s: expected KEY=VALUE, got '%.64s'", opt, v);
		return -1;
	}
	if (*n >= CELL_MAX_ENV) {
		cli_error("too many %s options (at most %d)", opt, CELL_MAX_ENV);
		return -1;
	}
	env[(*n)++] = v;
	return 0;
}

static int parse_workdir(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	if (cli_check_cell_dir(opt, v) < 0)
		return -1;
	o->overrides.workdir = (char *)v;
	return 0;
}

int cli_parse_pull(const char *v, enum rootfs_pull_when *out)
{
	if (!strcmp(v, "missing"))
		*out = ROOTFS_PULL_MISSING;
	else if (!strcmp(v, "never"))
		*out = ROOTFS_PULL_NEVER;
	else if (!strcmp(v, "always"))
		*out = ROOTFS_PULL_ALWAYS;
	else {
		cli_error("--pull: expected missing, never or always, got '%.64s'", v);
		return -1;
	}
	return 0;
}

static int parse_pull(void *t, const char *opt, const char *v)
{
	(void)opt;
	return cli_parse_pull(v, &((struct cli_cell_opts *)t)->pull);
}

static int parse_env(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	return cli_add_env(opt, v, o->env, &o->nenv);
}

static int parse_hostname(void *t, const char *opt, const char *v)
{
	struct cli_cell_opts *o = t;
	if (!policy_valid_hostname(v)) {
		cli_error("--hostname: expected letters, digits, '.' or '-' (at most 64, not starting "
			  "with '.' or '-'), got '%.64s'", v);
		return -1;
	}
	o->overrides.hostname = (char *)v;
	return 0;
}

const struct rootfs_in_use CLI_CELLS_IN_USE = {.fn = cell_image_in_use};

#define CO(member) CLI_FIELD(struct cli_cell_opts, member)

const struct cli_option CLI_CELL_OPTIONS[] = {
	{"--image", NULL, CLI_STRING, CO(image), .metavar = "NAME|REF",
	 .help = "image: a stored one, or a registry reference such as\n"
		 "python:3.11-slim, pulled as --pull says (default: host)"},
	{"--pull", NULL, CLI_CUSTOM, .parse = parse_pull, .metavar = "missing|never|always",
	 .help = "when an --image reference is pulled: when not stored\n(default), never, always"},
	{"--pull-insecure", NULL, CLI_FLAG, CO(pull_insecure),
	 .help = "pull over plain HTTP (registries on loopback only)"},
	{"--policy", NULL, CLI_STRING, CO(policy), .metavar = "NAME|FILE",
	 .help = "policy: built-in name or JSON file (default: default)"},
	{"--memory", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "SIZE",
	 .help = "memory limit, 4M to 16T, e.g. 512M (default 4G where a\n"
		 "cgroup enforces it; 0 = unlimited)"},
	{"--pids", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "N",
	 .help = "process limit, 1 to 4194304 (default 1024; 0 = unlimited)"},
	{"--cpus", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "N",
	 .help = "CPU limit in cores, 0.01 to 4096, e.g. 0.5"},
	{"--timeout", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "SECS",
	 .help = "kill the whole cell after SECS, at most one year (exit 124)"},
	{"--disk", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "SIZE",
	 .help = "size of the writable layer, 1M to 16T (default 1G)"},
	{"--output-limit", NULL, CLI_CUSTOM, .parse = parse_limit, .metavar = "SIZE",
	 .help = "with --json: bytes kept of stdout and of stderr (default 1M)"},
	{"--net", NULL, CLI_CUSTOM, .parse = parse_net, .metavar = "none|allowlist",
	 .help = "network: none = loopback only (default); allowlist =\n"
		 "egress through sandcell's proxy to --allow-net names"},
	{"--allow-net", NULL, CLI_CUSTOM, .parse = parse_net_rule, .metavar = "ENTRY",
	 .help = "allow NAME, NAME:PORT or *.SUFFIX[:PORT] (default port\n"
		 "443; repeatable; implies --net allowlist)"},
	{"--net-host", NULL, CLI_CUSTOM, .parse = parse_net_rule, .metavar = "NAME=ADDR",
	 .help = "send NAME to ADDR, never looked up (a trusted mirror)"},
	{"-v", "--volume", CLI_CUSTOM, .parse = parse_bind, .metavar = "SRC:CELL[:ro]",
	 .help = "bind a host path (/SRC) or named volume (SRC, see 'sandcell\n"
		 "volume') into the cell (read-only with :ro)"},
	{"-w", "--workdir", CLI_CUSTOM, .parse = parse_workdir, .metavar = "DIR",
	 .help = "working directory in the cell (default /testbed)"},
	{"-e", "--env", CLI_CUSTOM, .parse = parse_env, .metavar = "KEY=VAL",
	 .help = "add to the clean environment (PATH HOME TERM LANG)"},
	{"--user", "-u", CLI_STRING, CO(user), .metavar = "UID[:GID]",
	 .help = "run the commands as this user (GID defaults to UID; or\n"
		 "NAME[:GROUP] from the image's /etc/passwd, /etc/group);\n"
		 "default: the image's USER, else root; --user 0 is root"},
	{"--hostname", NULL, CLI_CUSTOM, .parse = parse_hostname, .metavar = "NAME",
	 .help = "hostname (default sandcell)"},
	{"--require-cgroups", NULL, CLI_FLAG, CO(require_cgroups),
	 .help = "fail (125) instead of falling back to rlimits"},
	{"--require-landlock", NULL, CLI_FLAG, CO(require_landlock),
	 .help = "fail (125) where Landlock cannot wall the cell in"},
	{"--root", NULL, CLI_CUSTOM, .parse = cli_parse_root, .metavar = "DIR",
	 .help = "keep state, data and cache under DIR (or SANDCELL_ROOT)"},
	{0},
};

int cli_cell_opts_parse(struct cli_cell_opts *o, int argc, char **argv, int *i)
{
	return cli_parse_option(CLI_CELL_OPTIONS, o, argc, argv, i);
}

const char *cli_cell_opts_help(void)
{
	static char *help;
	if (!help)
		help = cli_options_help(CLI_CELL_OPTIONS, 22);
	return help ? help : "";
}

/* -v NAME:/CELL: the source is named volume NAME, whose directory (its
 * filesystem mounted, for root) replaces it; the path is kept in o. */
static int add_volume_source(struct cli_cell_opts *o, struct sc_bind_arg *b,
			     const char **volume)
{
	struct sc_err err = {0};
	char path[4096];
	if (o->nvolume_paths >= CELL_MAX_VOLUMES) {
		cli_error("too many volumes (at most %d)", CELL_MAX_VOLUMES);
		return -1;
	}
	if (cell_volume_source(b->host, path, sizeof(path), &err) < 0) {
		cli_error("-v %s:%s: %s", b->host, b->cell, err.msg);
		return -1;
	}
	char *copy = strdup(path);
	if (!copy) {
		cli_error("-v: out of memory");
		return -1;
	}
	o->volume_paths[o->nvolume_paths++] = copy;
	*volume = b->host;
	b->host = copy;
	return 0;
}

static int add_binds(struct cli_cell_opts *o, const struct policy *pol, struct cell_spec *spec)
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
			cli_error("-v: expected /HOST/PATH:/CELL/PATH[:ro] or VOLUME:/CELL/PATH[:ro], "
				  "got '%.200s'", given);
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
		const char *volume = NULL;
		if (b.volume && add_volume_source(o, &b, &volume) < 0)
			return -1;
		spec->binds[spec->nbinds++] = (struct cell_bind){
			.host = b.host, .cell = b.cell, .readonly = b.readonly, .volume = volume};
	}
	return 0;
}

/* Egress rules for spec: allowlist mode when --net allowlist, --allow-net
 * or the policy (unless --net none) says so. */
static int build_net(struct cli_cell_opts *o, const struct policy *pol, struct cell_spec *spec)
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
	struct net_rules *rules = net_rules_of(o);
	if (!rules) {
		cli_error("network rules: out of memory");
		return -1;
	}
	for (size_t i = 0; i < pol->nnet_allow; i++)
		if (net_rules_allow(rules, pol->net_allow[i], &err) < 0) {
			cli_error("policy network.allow[%zu]: %s", i, err.msg);
			return -1;
		}
	for (size_t i = 0; i < pol->nnet_hosts; i++) {
		/* the command line's mapping of a name wins */
		if (net_rules_find_host(rules, pol->net_hosts[i].name))
			continue;
		if (net_rules_host(rules, pol->net_hosts[i].name, pol->net_hosts[i].addr, &err) < 0) {
			cli_error("policy network.hosts: %s", err.msg);
			return -1;
		}
	}
	if (cell_spec_set_egress(spec, rules, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	return 0;
}

/* --user, else the image's USER. An image's user that this caller's cells
 * cannot map (a rootless cell maps only 0) gives way to the cell's root,
 * which is no more than the caller on the host, with a warning: the image
 * stays usable. An explicit --user must be mapped. */
static int set_user(struct cli_cell_opts *o, const char *image, struct cell_spec *spec)
{
	struct sc_err err = {0};
	const char *user = o->user ? o->user : o->img.user;
	if (!user)
		return 0;
	if (cell_resolve_user(user, spec->layers, spec->nlayers, &spec->uid, &spec->gid, &err) < 0) {
		if (o->user)
			cli_error("--user: %s", err.msg);
		else
			cli_error("image '%s' has USER %.64s: %s", image ? image : "host", user, err.msg);
		return -1;
	}
	if (cell_user_check(spec->uid, spec->gid, &err) < 0) {
		if (o->user) {
			cli_fail(&err);
			return -1;
		}
		cli_warn("image '%s' runs as USER %.64s, but %s; running as the cell's root",
			 image ? image : "host", user, err.msg);
		return 0;
	}
	spec->has_user = true;
	return 0;
}

/* An image reference as its store name, pulled as --pull says (its
 * progress on stderr). */
static int resolve_reference(const struct cli_cell_opts *o, const char *image,
			     struct rootfs_resolved *ref)
{
	struct cli_pull_view view;
	cli_pull_view_init(&view);
	struct rootfs_pull_opts po = {.insecure = o->pull_insecure};
	cli_pull_view_set(&view, &po);
	struct sc_err err = {0};
	if (cell_ensure_private_dir(cell_data_root(), &err) < 0 ||
	    rootfs_image_resolve(cell_data_root(), &CLI_CELLS_IN_USE, image, o->pull, &po, po.log, ref,
				 &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	return 0;
}

static int build_spec(struct cli_cell_opts *o, struct policy *pol, struct policy_filter *filter,
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
	struct rootfs_resolved ref;
	if (image && rootfs_is_reference(image)) {
		if (resolve_reference(o, image, &ref) < 0)
			return -1;
		image = ref.store;
	}
	if (rootfs_image_open(cell_data_root(), image, &o->img, &err) < 0) {
		cli_fail(&err);
		return -1;
	}
	cell_spec_set_layers(spec, &o->img);
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
	if (o->require_landlock)
		spec->require_landlock = true;
	if (set_user(o, image, spec) < 0)
		return -1;
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
	spec->image_name = o->img.name;
	return 0;
}

int cli_cell_build(struct cli_cell *c, struct cli_cell_opts *o)
{
	memset(c, 0, sizeof(*c));
	cell_spec_init(&c->spec);
	return build_spec(o, &c->pol, &c->filter, &c->spec);
}

void cli_cell_free(struct cli_cell *c)
{
	policy_filter_free(&c->filter);
	policy_free(&c->pol);
}

void cli_cell_opts_free(struct cli_cell_opts *o)
{
	for (size_t i = 0; i < o->nbinds_owned; i++)
		free(o->bind_args[i]);
	o->nbinds_owned = 0;
	for (size_t i = 0; i < o->nvolume_paths; i++)
		free(o->volume_paths[i]);
	o->nvolume_paths = 0;
	free(o->net_rules);
	o->net_rules = NULL;
	rootfs_image_free(&o->img);
}

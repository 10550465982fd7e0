#include "state.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "../common/parse.h"
#include "pidinfo.h"

int rt_state_dir_of(const char *name, char *buf, size_t size, struct sc_err *err)
{
	if (!sc_valid_name(name)) {
		/* shown with control bytes as '?': the error stays one line */
		char shown[65];
		size_t k = 0;
		for (; name[k] && k + 1 < sizeof(shown); k++)
			shown[k] = (unsigned char)name[k] < 0x20 || name[k] == 0x7f ? '?' : name[k];
		shown[k] = '\0';
		return sc_fail(err, 0, "bad cell name '%s': use letters, digits, '.', '_' and '-' (at most 63)",
			       shown);
	}
	if (sc_path(buf, size, "%s/%s", cell_state_root(), name) < 0)
		return sc_fail(err, ENAMETOOLONG, "state directory for %s", name);
	return 0;
}

int rt_state_write_info(const char *dir, const struct cell_info *in, struct sc_err *err)
{
	char tmp[SC_PATH_BUF], path[SC_PATH_BUF];
	if (sc_path(tmp, sizeof(tmp), "%s/info.tmp", dir) < 0 ||
	    sc_path(path, sizeof(path), "%s/info", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "info path");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_fail(err, errno, "write %s", tmp);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return sc_fail(err, errno, "write %s", tmp);
	}
	const struct policy_limits *l = &in->limits;
	fprintf(f, "name=%s\npid=%d\nstarttime=%llu\ncreated=%.3f\nimage=%s\ncgroup=%s\npersist=%s\n",
		in->name, (int)in->pid, (unsigned long long)in->starttime, in->created, in->image,
		in->cgroup, in->persist_dir);
	if (in->snapshot[0])
		fprintf(f, "snapshot=%s\n", in->snapshot);
	fprintf(f, "memory=%llu\npids=%llu\ncpus=%.3f\ntimeout=%.3f\ndisk=%llu\n",
		(unsigned long long)l->memory, (unsigned long long)l->pids, l->cpus, l->timeout_s,
		(unsigned long long)l->disk);
	/* port=CELLPORT HOSTPORT HOSTADDR: an IPv6 address holds ':' */
	for (size_t i = 0; i < in->nports && i < CELL_MAX_PORTS; i++)
		fprintf(f, "port=%u %u %s\n", in->ports[i].cell_port, in->ports[i].host_port,
			in->ports[i].host_addr);
	for (size_t i = 0; i < in->nvolumes && i < CELL_MAX_VOLUMES; i++)
		fprintf(f, "volume=%s\n", in->volumes[i]);
	if (in->renewals)
		fprintf(f, "renewals=%u\n", in->renewals);
	if (in->has_token) {
		fputs("token=", f);
		for (size_t i = 0; i < RT_TOKEN_LEN; i++)
			fprintf(f, "%02x", in->token[i]);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		return sc_fail(err, errno, "write %s", tmp);
	if (rename(tmp, path) < 0)
		return sc_fail(err, errno, "rename %s", tmp);
	return 0;
}

int rt_state_make_token(uint8_t token[RT_TOKEN_LEN], struct sc_err *err)
{
	size_t got = 0;
	while (got < RT_TOKEN_LEN) {
		ssize_t n = getrandom(token + got, RT_TOKEN_LEN - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return sc_fail(err, n < 0 ? errno : EIO, "random bytes for the cell's token");
		got += (size_t)n;
	}
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* 2 * RT_TOKEN_LEN lowercase hex digits at hex (more may follow). */
static bool parse_token(const char *hex, size_t n, uint8_t token[RT_TOKEN_LEN])
{
	if (n < 2 * RT_TOKEN_LEN)
		return false;
	for (size_t i = 0; i < RT_TOKEN_LEN; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		token[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

int rt_state_read_token(const char *dir, uint8_t token[RT_TOKEN_LEN], struct sc_err *err)
{
	char path[SC_PATH_BUF], hex[2 * RT_TOKEN_LEN + 8];
	if (sc_path(path, sizeof(path), "%s/token", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "token path");
	ssize_t n = sc_read_small(AT_FDCWD, path, SC_READ_NOFOLLOW | SC_READ_REGULAR, hex,
				  sizeof(hex), err);
	if (n < 0)
		return -1;
	if (!parse_token(hex, (size_t)n, token))
		return sc_fail(err, 0, "%s: not a cell token", path);
	return 0;
}

static void copy_value(char *dst, size_t size, const char *v)
{
	snprintf(dst, size, "%s", v);
}

static void read_port(const char *v, struct cell_info *in)
{
	unsigned cell, host;
	char addr[48];
	if (in->nports >= CELL_MAX_PORTS ||
	    sscanf(v, "%5u %5u %47s", &cell, &host, addr) != 3 || cell > 65535 || host > 65535)
		return;
	struct cell_port *p = &in->ports[in->nports++];
	p->cell_port = (uint16_t)cell;
	p->host_port = (uint16_t)host;
	p->fd = -1;
	snprintf(p->host_addr, sizeof(p->host_addr), "%s", addr);
}

int rt_state_read_info(const char *dir, struct cell_info *in, struct sc_err *err)
{
	char path[SC_PATH_BUF], line[SC_PATH_BUF];
	memset(in, 0, sizeof(*in));
	if (sc_path(path, sizeof(path), "%s/info", dir) < 0)
		return sc_fail(err, ENAMETOOLONG, "info path");
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sc_fail(err, errno, "%s", path);
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return sc_fail(err, errno, "%s", path);
	}
	for (int n = 0; n < 64 + CELL_MAX_PORTS + CELL_MAX_VOLUMES && fgets(line, sizeof(line), f); n++) {
		line[strcspn(line, "\n")] = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		uint64_t u = 0;
		if (!strcmp(k, "name"))
			copy_value(in->name, sizeof(in->name), v);
		else if (!strcmp(k, "pid") && sc_parse_uint(v, 1, 1 << 30, &u) == 0)
			in->pid = (pid_t)u;
		else if (!strcmp(k, "starttime"))
			in->starttime = strtoull(v, NULL, 10);
		else if (!strcmp(k, "created"))
			in->created = strtod(v, NULL);
		else if (!strcmp(k, "image"))
			copy_value(in->image, sizeof(in->image), v);
		else if (!strcmp(k, "cgroup"))
			copy_value(in->cgroup, sizeof(in->cgroup), v);
		else if (!strcmp(k, "persist"))
			copy_value(in->persist_dir, sizeof(in->persist_dir), v);
		else if (!strcmp(k, "snapshot"))
			copy_value(in->snapshot, sizeof(in->snapshot), v);
		else if (!strcmp(k, "memory"))
			in->limits.memory = strtoull(v, NULL, 10);
		else if (!strcmp(k, "pids"))
			in->limits.pids = strtoull(v, NULL, 10);
		else if (!strcmp(k, "cpus"))
			in->limits.cpus = strtod(v, NULL);
		else if (!strcmp(k, "timeout"))
			in->limits.timeout_s = strtod(v, NULL);
		else if (!strcmp(k, "disk"))
			in->limits.disk = strtoull(v, NULL, 10);
		else if (!strcmp(k, "port"))
			read_port(v, in);
		else if (!strcmp(k, "renewals") && sc_parse_uint(v, 0, UINT32_MAX, &u) == 0)
			in->renewals = (unsigned)u;
		else if (!strcmp(k, "volume") && in->nvolumes < CELL_MAX_VOLUMES &&
			 sc_valid_name(v))
			copy_value(in->volumes[in->nvolumes++], sizeof(in->volumes[0]), v);
		else if (!strcmp(k, "token") && strlen(v) == 2 * RT_TOKEN_LEN)
			in->has_token = parse_token(v, strlen(v), in->token);
	}
	fclose(f);
	return 0;
}

bool rt_state_alive(const struct cell_info *info)
{
	return info->pid > 0 && info->starttime != 0 &&
	       rt_pid_starttime(info->pid) == info->starttime;
}

int rt_state_init_entry(const char *dir, pid_t pid, uint64_t starttime, char *buf, size_t size)
{
	const char *slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	return sc_path(buf, size, "%.*s/.inits/%d-%llu", (int)(slash - dir), dir, (int)pid,
		       (unsigned long long)starttime);
}

int rt_state_register_init(const char *dir, const struct cell_info *info, struct sc_err *err)
{
	char path[SC_PATH_BUF];
	if (rt_state_init_entry(dir, info->pid, info->starttime, path, sizeof(path)) < 0)
		return sc_fail(err, ENAMETOOLONG, "init register path");
	char *slash = strrchr(path, '/');
	/* rt_teardown_remove takes the directory away when it empties: again */
	for (int tries = 0; tries < 8; tries++) {
		*slash = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return sc_fail(err, errno, "mkdir %s", path);
		*slash = '/';
		_cleanup_fd_ int fd =
			open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || sc_write_all(fd, info->name, strlen(info->name)) < 0)
			return sc_fail(err, errno, "write %s", path);
		return 0;
	}
	return sc_fail(err, ENOENT, "write %s", path);
}


int rt_state_paused_path(const char *dir, char *buf, size_t size)
{
	return sc_path(buf, size, "%s/paused", dir);
}

bool rt_state_paused(const char *dir)
{
	char path[SC_PATH_BUF];
	return rt_state_paused_path(dir, path, sizeof(path)) == 0 && access(path, F_OK) == 0;
}

#include <string.h>
#include <time.h>

#include "ports.h"

static const char PS_HELP[] =
	"usage: sandcell ps [--json] [--root DIR]\n"
	"\n"
	"List long-lived cells: name, state (running, paused, or gone when its init\n"
	"died), age, image, limits and the number of processes (--json: also the\n"
	"published ports, the named volumes mounted and how many times a pool\n"
	"renewed the cell to a fresh one: \"renewals\"). The limits are\n"
	"those the cell has, defaults included; one that does not apply (lifted\n"
	"with 0, or memory where only rlimits hold limits and none was asked)\n"
	"shows as unlimited (null in --json).\n";

static void fmt_size(char *buf, size_t n, uint64_t v)
{
	if (v == POLICY_UNLIMITED)
		snprintf(buf, n, "unlimited");
	else if (!v)
		snprintf(buf, n, "-");
	else if (v % (1ULL << 30) == 0)
		snprintf(buf, n, "%lluG", (unsigned long long)(v >> 30));
	else
		snprintf(buf, n, "%lluM", (unsigned long long)(v >> 20));
}

/* Seconds since creation, never below 0 (the clock's second and the
 * creation's fraction, or a clock set back). */
static double age_of(const struct cell_status *s, double now)
{
	double age = now - s->created;
	return age > 0 ? age : 0;
}

static const char *cli_ps_state(const struct cell_status *s)
{
	return !s->alive ? "gone" : s->paused ? "paused" : "running";
}

/* A limit in JSON: the number, or null for an explicit "no limit". */
static void json_limit(char *buf, size_t n, uint64_t v)
{
	if (v == POLICY_UNLIMITED)
		snprintf(buf, n, "null");
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

static void print_json(const struct cell_status *c, size_t n, double now)
{
	fputs("[", stdout);
	for (size_t i = 0; i < n; i++) {
		const struct cell_status *s = &c[i];
		fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
		cli_json_string(stdout, s->name, strlen(s->name));
		printf(",\"state\":\"%s\",\"age_s\":%.0f,\"image\":", cli_ps_state(s),
		       age_of(s, now));
		cli_json_string(stdout, s->image, strlen(s->image));
		char mem[32], pids[32];
		json_limit(mem, sizeof(mem), s->limits.memory);
		json_limit(pids, sizeof(pids), s->limits.pids);
		fputs(",\"ports\":", stdout);
		cli_ports_json(stdout, s->ports, s->nports);
		fputs(",\"volumes\":[", stdout);
		for (size_t v = 0; v < s->nvolumes; v++) {
			if (v)
				fputc(',', stdout);
			cli_json_string(stdout, s->volumes[v], strlen(s->volumes[v]));
		}
		fputc(']', stdout);
		printf(",\"pid\":%d,\"processes\":%u,\"running_commands\":%u,\"persist\":%s,"
		       "\"renewals\":%u,\"limits\":{\"memory\":%s,\"pids\":%s,\"cpus\":%g,\"disk\":%llu}}",
		       (int)s->pid, s->nprocs, s->nexecs, s->persist ? "true" : "false", s->renewals,
		       mem, pids,
		       s->limits.cpus, (unsigned long long)s->limits.disk);
	}
	fputs("]\n", stdout);
}

int cmd_ps(int argc, char **argv)
{
	bool json = false;
	int done = cli_plain_args(argc, argv, "ps", PS_HELP, &json);
	if (done >= 0)
		return done;
	struct cell_status *cells;
	size_t n;
	struct sc_err err = {0};
	if (cell_list(&cells, &n, &err) < 0)
		return cli_fail(&err);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	if (json) {
		print_json(cells, n, now);
	} else {
		printf("%-20s %-8s %8s %-12s %7s %6s %5s %6s\n", "NAME", "STATE", "AGE", "IMAGE",
		       "MEMORY", "PIDS", "CPUS", "PROCS");
		for (size_t i = 0; i < n; i++) {
			const struct cell_status *s = &cells[i];
			char mem[32], pids[32], cpus[32];
			fmt_size(mem, sizeof(mem), s->limits.memory);
			if (s->limits.pids == POLICY_UNLIMITED)
				snprintf(pids, sizeof(pids), "unlimited");
			else
				snprintf(pids, sizeof(pids), s->limits.pids ? "%llu" : "-",
					 (unsigned long long)s->limits.pids);
			snprintf(cpus, sizeof(cpus), s->limits.cpus > 0 ? "%g" : "-", s->limits.cpus);
			printf("%-20s %-8s %7.0fs %-12s %7s %6s %5s %6u\n", s->name,
			       cli_ps_state(s), age_of(s, now), s->image, mem, pids, cpus,
			       s->nprocs);
		}
	}
	free(cells);
	return 0;
}

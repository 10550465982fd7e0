/* Pool throughput for scripts/bench.sh: acquire a cell, exec /bin/true in
 * it, release it; N times in all, from WORKERS processes at once (each with
 * a pool of its own, SIZE/WORKERS cells made by one worker), the same way
 * the machine floor (`floor -n N -j J`) starts its bare cells from J
 * processes. Prints cells per second and the median acquire+exec+release
 * time.  usage: pool_bench N [SIZE [WORKERS [reuse]]]
 * With "reuse" the pools renew released cells (cell_renew) instead of
 * removing them.
 *
 * usage: pool_bench renew N
 * One cell renewed N times, then N cells made and removed one after the
 * other: prints the median renewal and the median create + remove (ms).
 *
 * What the clock holds: every pool is full before it starts (no cell in
 * flight), and it stops when every pool is full again and every cell that
 * was used has been deleted. So exactly N cells are made and N deleted
 * inside it, and none outside it is counted. Each process has its own
 * state directory, so that the count of its cells is exact. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cell.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void pause_ms(long ms)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* Until this process's state directory holds `size` live cells (the pool
 * full, nothing in flight) and none of the `ngone` cells named in `gone`;
 * with reuse, until its cells were renewed `renewals` times in all (the
 * renewals in flight done). -1 when a renewed pool made a new cell (a
 * renewal failed). */
static int wait_full(size_t size, char (*gone)[64], size_t ngone, bool reuse, unsigned renewals,
		     char (*first)[64], size_t nfirst)
{
	for (;;) {
		struct cell_status *st = NULL;
		size_t n = 0, alive = 0;
		unsigned renewed = 0;
		bool any = false, replaced = false;
		struct sc_err err;
		if (cell_list(&st, &n, &err) == 0) {
			for (size_t i = 0; i < n; i++) {
				alive += st[i].alive;
				renewed += st[i].renewals;
				for (size_t k = 0; k < ngone && !any; k++)
					any = !strcmp(st[i].name, gone[k]);
				bool known = !reuse || !nfirst;
				for (size_t k = 0; k < nfirst && !known; k++)
					known = !strcmp(st[i].name, first[k]);
				replaced |= !known;
			}
			free(st);
			if (replaced)
				return -1;
			if (!any && alive == size && (!reuse || renewed >= renewals))
				return 0;
		}
		pause_ms(1);
	}
}

/* The names of this process's cells (the full pool's) into names. */
static size_t list_names(char (*names)[64], size_t max)
{
	struct cell_status *st = NULL;
	size_t n = 0, k = 0;
	struct sc_err err;
	if (cell_list(&st, &n, &err) < 0)
		return 0;
	for (size_t i = 0; i < n && k < max; i++)
		snprintf(names[k++], 64, "%s", st[i].name);
	free(st);
	return k;
}

static int rd_byte(int fd)
{
	char b;
	ssize_t r;
	do
		r = read(fd, &b, 1);
	while (r < 0 && errno == EINTR);
	return r == 1 ? 0 : -1;
}

/* A state root of this process's own, made current: 0, or -1. */
static int own_root(char root[64])
{
	snprintf(root, 64, "/tmp/sandcell-pool-bench.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	cell_set_root(root);
	return 0;
}

/* rc, or 1 when the root could not be removed. */
static int remove_root(const char *root, int rc)
{
	char rm[128];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", root);
	return system(rm) != 0 ? 1 : rc;
}

/* One consumer: its own root, pool and share of the rounds. */
static int consumer(int j, int rounds, size_t size, bool reuse, int ready_fd, int go_fd,
		    double *times)
{
	char root[64];
	if (own_root(root) < 0)
		return 1;
	struct cell_spec spec;
	cell_spec_init(&spec);
	struct sc_err err = {0};
	struct cell_pool *pool;
	int rc = 1;
	char(*used)[64] = calloc((size_t)rounds + 1, 64);
	char(*first)[64] = calloc(size + 1, 64);
	const struct cell_pool_opts po = {.size = size, .workers = 1, .reuse = reuse};
	if (!used || !first || cell_pool_new_opts(&spec, &po, &pool, &err) < 0) {
		fprintf(stderr, "pool %d: %s\n", j, err.msg);
		goto out;
	}
	(void)wait_full(size, NULL, 0, false, 0, NULL, 0);
	size_t nfirst = list_names(first, size);
	if (write(ready_fd, "r", 1) != 1 || rd_byte(go_fd) < 0)
		goto out_pool;
	char *argv_true[] = {"/bin/true", NULL};
	struct cell_exec_req req = {.argv = argv_true, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	for (int i = 0; i < rounds; i++) {
		double s = sc_now();
		struct cell *c;
		struct cell_result res;
		if (cell_pool_acquire(pool, &c, &err) < 0 || cell_exec(c, &req, &res, &err) < 0) {
			fprintf(stderr, "pool %d round %d: %s\n", j, i, err.msg);
			goto out_pool;
		}
		if (res.exit_code != 0) {
			fprintf(stderr, "pool %d round %d: exit %d\n", j, i, res.exit_code);
			goto out_pool;
		}
		cell_result_free(&res);
		snprintf(used[i], 64, "%s", cell_name(c));
		cell_pool_release(pool, c);
		times[i] = sc_now() - s;
	}
	/* refilled, and every used cell deleted (or renewed) */
	if (reuse ? wait_full(size, NULL, 0, true, (unsigned)rounds, first, nfirst) < 0
		  : wait_full(size, used, (size_t)rounds, false, 0, NULL, 0) < 0) {
		fprintf(stderr, "pool %d: a renewal failed (the pool made a new cell)\n", j);
		goto out_pool;
	}
	rc = 0;
out_pool:
	if (write(ready_fd, rc ? "f" : "d", 1) != 1)
		rc = 1;
	cell_pool_free(pool);
out:
	free(used);
	free(first);
	return remove_root(root, rc);
}

/* pool_bench renew N: the median renewal against create + remove. */
static int renew_vs_create(int n)
{
	char root[64];
	if (own_root(root) < 0)
		return 1;
	struct cell_spec spec;
	cell_spec_init(&spec);
	struct sc_err err = {0};
	double *renew = calloc((size_t)n, sizeof(double)), *fresh = calloc((size_t)n, sizeof(double));
	struct cell *c = NULL;
	int rc = 1;
	if (!renew || !fresh || cell_create(&spec, "bench-renew", &c, &err) < 0)
		goto out;
	cell_close(c);
	for (int i = 0; i < n; i++) {
		double s = sc_now();
		if (cell_renew("bench-renew", &spec, 0, &err) < 0)
			goto out;
		renew[i] = sc_now() - s;
	}
	if (cell_remove("bench-renew", true, &err) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		double s = sc_now();
		if (cell_create(&spec, "bench-fresh", &c, &err) < 0 || cell_destroy(c, &err) < 0)
			goto out;
		fresh[i] = sc_now() - s;
	}
	qsort(renew, (size_t)n, sizeof(double), cmp);
	qsort(fresh, (size_t)n, sizeof(double), cmp);
	printf("%.3f %.3f\n", renew[n / 2] * 1e3, fresh[n / 2] * 1e3);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "pool_bench renew: %s\n", err.msg);
	free(renew);
	free(fresh);
	return remove_root(root, rc);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "renew"))
		return renew_vs_create(argc > 2 ? atoi(argv[2]) : 100);
	int n = argc > 1 ? atoi(argv[1]) : 300;
	size_t size = argc > 2 ? (size_t)atoi(argv[2]) : 16;
	int jobs = argc > 3 ? atoi(argv[3]) : 2;
	bool reuse = argc > 4 && !strcmp(argv[4], "reuse");
	if (n < 1 || jobs < 1 || size < (size_t)jobs) {
		fprintf(stderr, "usage: pool_bench N [SIZE [WORKERS [reuse]]] (SIZE >= WORKERS >= 1)\n"
				"       pool_bench renew N\n");
		return 2;
	}
	double *times = mmap(NULL, sizeof(double) * (size_t)n, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int ready[2], go[2];
	if (times == MAP_FAILED || pipe(ready) < 0 || pipe(go) < 0)
		return 1;
	pid_t pids[256];
	if (jobs > 256)
		jobs = 256;
	for (int j = 0; j < jobs; j++) {
		int first = n * j / jobs, last = n * (j + 1) / jobs;
		pids[j] = fork();
		if (pids[j] < 0)
			return 1;
		if (pids[j] == 0) {
			close(ready[0]);
			close(go[1]);
			_exit(consumer(j, last - first, size / (size_t)jobs, reuse, ready[1], go[0],
				       times + first));
		}
	}
	close(ready[1]);
	close(go[0]);
	int failed = 0;
	for (int j = 0; j < jobs; j++) /* every pool full */
		if (rd_byte(ready[0]) < 0)
			failed = 1;
	double t0 = sc_now();
	for (int j = 0; j < jobs; j++)
		if (write(go[1], "g", 1) != 1)
			failed = 1;
	for (int j = 0; j < jobs; j++) { /* every pool full again, used cells deleted */
		char b;
		if (read(ready[0], &b, 1) != 1 || b != 'd')
			failed = 1;
	}
	double total = sc_now() - t0;
	for (int j = 0; j < jobs; j++) {
		int st;
		while (waitpid(pids[j], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	if (failed)
		return 1;
	qsort(times, (size_t)n, sizeof(double), cmp);
	printf("%.1f %.3f\n", n / total, times[n / 2] * 1e3);
	return 0;
}

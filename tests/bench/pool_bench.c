/* Pool throughput for scripts/bench.sh: acquire a cell, exec /bin/true in
 * it, release it; N times. Prints cells per second and the median
 * acquire+exec+release time.  usage: pool_bench N [SIZE [WORKERS]] */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/cell.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;
	size_t size = argc > 2 ? (size_t)atoi(argv[2]) : 16;
	size_t workers = argc > 3 ? (size_t)atoi(argv[3]) : 2;
	struct cell_spec spec;
	cell_spec_init(&spec);
	struct sc_err err = {0};
	struct cell_pool *pool;
	if (cell_pool_new(&spec, size, workers, &pool, &err) < 0) {
		fprintf(stderr, "pool: %s\n", err.msg);
		return 1;
	}
	/* let the pool fill once, as a server would before taking tasks */
	struct cell *warm;
	if (cell_pool_acquire(pool, &warm, &err) < 0) {
		fprintf(stderr, "acquire: %s\n", err.msg);
		return 1;
	}
	cell_pool_release(pool, warm);
	double *t = calloc((size_t)n, sizeof(double));
	char *argv_true[] = {"/bin/true", NULL};
	struct cell_exec_req req = {.argv = argv_true, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
	double t0 = sc_now();
	for (int i = 0; i < n; i++) {
		double s = sc_now();
		struct cell *c;
		struct cell_result res;
		if (cell_pool_acquire(pool, &c, &err) < 0 || cell_exec(c, &req, &res, &err) < 0) {
			fprintf(stderr, "round %d: %s\n", i, err.msg);
			return 1;
		}
		if (res.exit_code != 0) {
			fprintf(stderr, "round %d: exit %d\n", i, res.exit_code);
			return 1;
		}
		cell_result_free(&res);
		cell_pool_release(pool, c);
		t[i] = sc_now() - s;
	}
	double total = sc_now() - t0;
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.1f %.3f\n", n / total, t[n / 2] * 1e3);
	cell_pool_free(pool);
	return 0;
}

/* Alternating command timer for scripts/bench.sh: runs each command in
 * turn, N rounds, and prints each one's median and p90 wall time in ms,
 * and its median CPU time (user + system of it and every descendant it
 * waited for) in ms, which a loaded machine disturbs less than the wall.
 * usage: alt ROUNDS ::: CMD1 ... ::: CMD2 ... [::: CMD3 ...] */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], ":::") != 0) {
		fprintf(stderr, "usage: alt ROUNDS ::: CMD... [::: CMD...]\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	char **cmds[16];
	int ncmd = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], ":::")) {
			argv[i] = NULL;
			if (i + 1 < argc && ncmd < 16)
				cmds[ncmd++] = &argv[i + 1];
		}
	}
	double *t = calloc((size_t)(ncmd * rounds), sizeof(double));
	double *cpu = calloc((size_t)(ncmd * rounds), sizeof(double));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	for (int r = -5; r < rounds; r++) { /* 5 warm-up rounds */
		for (int c = 0; c < ncmd; c++) {
			pid_t pid;
			double t0 = now_ms();
			if (posix_spawnp(&pid, cmds[c][0], &fa, NULL, cmds[c], environ) != 0) {
				perror(cmds[c][0]);
				return 1;
			}
			int st;
			struct rusage ru;
			wait4(pid, &st, 0, &ru);
			double dt = now_ms() - t0;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "command %d failed (status %d)\n", c + 1, st);
				return 1;
			}
			if (r >= 0) {
				t[c * rounds + r] = dt;
				cpu[c * rounds + r] = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
						      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
			}
		}
	}
	for (int c = 0; c < ncmd; c++) {
		qsort(t + c * rounds, (size_t)rounds, sizeof(double), cmp);
		qsort(cpu + c * rounds, (size_t)rounds, sizeof(double), cmp);
		printf("%d %.3f %.3f %.3f\n", c + 1, t[c * rounds + rounds / 2],
		       t[c * rounds + (rounds * 9) / 10], cpu[c * rounds + rounds / 2]);
	}
	return 0;
}

/* spin SECONDS: a busy loop for SECONDS of wall-clock time. */
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3.0);
	volatile unsigned long n = 0;
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			n++;
	return 0;
}

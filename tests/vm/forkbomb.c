/* forkbomb: every process forks forever; a failed fork is retried after a
 * short pause, so the bomb keeps pressing on the pids limit until the cell
 * is killed from outside. */
#include <time.h>
#include <unistd.h>

int main(void)
{
	const struct timespec pause = {0, 10 * 1000 * 1000};
	for (;;)
		if (fork() < 0)
			nanosleep(&pause, NULL);
}

/* memhog: allocate and touch memory 1 MiB at a time, forever; a memory
 * limit must stop it (the VM test expects an OOM kill). After each MiB it
 * writes the count so far to stderr, so that the test can tell how far it
 * got without trusting sandcell's own report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	setvbuf(stderr, NULL, _IONBF, 0);
	for (unsigned long mib = 1;; mib++) {
		char *p = malloc(1 << 20);
		if (!p) {
			printf("memhog: malloc failed at %lu MiB\n", mib);
			return 1;
		}
		memset(p, (int)mib, 1 << 20);
		fprintf(stderr, "%lu\n", mib);
	}
}

/* memhog: allocate and touch memory 1 MiB at a time, forever; a memory
 * limit must stop it (the VM test expects an OOM kill). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	for (unsigned long mib = 1;; mib++) {
		char *p = malloc(1 << 20);
		if (!p) {
			printf("memhog: malloc failed at %lu MiB\n", mib);
			return 1;
		}
		memset(p, (int)mib, 1 << 20);
	}
}

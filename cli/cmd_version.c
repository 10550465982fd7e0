#include "cli.h"

#ifndef SANDCELL_VERSION
#define SANDCELL_VERSION "0.1.0"
#endif

int cmd_version(int argc, char **argv)
{
	printf("sandcell %s\n", SANDCELL_VERSION);
	return 0;
}

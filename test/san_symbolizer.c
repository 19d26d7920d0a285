/* TSan's external symbolizer for `make sanitize`, built static so that the LD_PRELOAD it
 * inherits (the TSan-built shim, which cannot load without the runtime linked into the
 * probes) is ignored: drops LD_PRELOAD and runs the real llvm-symbolizer. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	(void)argc;
	unsetenv("LD_PRELOAD");
	execv(SYMBOLIZER, argv);
	perror(SYMBOLIZER);
	return 127;
}

/* What the shim left behind in this process: prints single_threaded=<glibc's
 * __libc_single_threaded> threads=<Threads: from /proc/self/status> active=<shim> and,
 * with an argument, the shim's reason. */
#define _GNU_SOURCE
#include "tscshim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/single_threaded.h>

int main(int argc, char **argv)
{
	(void)argv;
	int threads = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &threads) == 1)
			break;
	if (f)
		fclose(f);
	struct tscshim_status st = {0};
	int (*status)(struct tscshim_status *) =
		(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	if (status)
		status(&st);
	printf("single_threaded=%d threads=%d active=%d from_cache=%d\n", (int)__libc_single_threaded,
	       threads, st.active, st.from_cache);
	if (argc > 1)
		printf("reason=%s\n", st.reason);
	return 0;
}

/* The status line of the shim in this process, as bench's worker and ab's decision probe
 * print it: "shim LOADED ACTIVE FENCED RATE_MILLIHZ REASON" (bench_parse_status reads it). */
#define _GNU_SOURCE
#include "bench.h"

#include "tscshim.h"

#include <dlfcn.h>

void bench_write_status(FILE *out)
{
	int (*status)(struct tscshim_status *) =
		(int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	struct tscshim_status st = {0};
	if (status)
		status(&st);
	else
		snprintf(st.reason, sizeof st.reason, "the shim is not loaded");
	/* The reason is free text: last on the line, newlines flattened. */
	for (char *p = st.reason; *p; p++)
		if (*p == '\n')
			*p = ' ';
	fprintf(out, "shim %d %d %d %llu %s\n", status != NULL, st.active, st.fenced,
		(unsigned long long)st.rate_millihz, st.reason);
}

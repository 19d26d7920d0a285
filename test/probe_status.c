/* The sized status query as callers built against each version of <tscshim.h> call it:
 * the version it returns is the one it filled for the size given, and it writes no byte
 * past that size (nor any, for a size below version 1's fields).
 *
 *   LD_PRELOAD=libtscshim.so probe_status
 * prints one line per case, "NAME=RETURN untouched_after=0|1", then "alias=0|1" (the
 * first name, tscshim_status_v2, is the same function). Exit 2 without the shim. */
#define _GNU_SOURCE
#include "tscshim.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int sized_fn(struct tscshim_status *, size_t);

/* What a caller built against version 1 passes: the fields up to version 2's first. */
#define VERSION_1_SIZE offsetof(struct tscshim_status, version)
#define FILL 0xa5

/* Room for a caller built against a later version, larger than this header's struct. */
static unsigned char buffer[sizeof(struct tscshim_status) + 64];

static int untouched_from(size_t offset)
{
	for (size_t i = offset; i < sizeof buffer; i++)
		if (buffer[i] != FILL)
			return 0;
	return 1;
}

/* untouched_after: whether every byte from the size given (from the start, where the
 * query refused), or from the end of the structure this library knows where the size is
 * larger, kept its fill. */
static void query(sized_fn *sized, const char *name, size_t size)
{
	memset(buffer, FILL, sizeof buffer);
	int version = sized((struct tscshim_status *)(void *)buffer, size);
	size_t end = version < 0 ? 0 : size < sizeof(struct tscshim_status) ? size : sizeof(struct tscshim_status);
	printf("%s=%d untouched_after=%d\n", name, version, untouched_from(end));
}

int main(void)
{
	sized_fn *sized = (sized_fn *)dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	sized_fn *first_name = (sized_fn *)dlsym(RTLD_DEFAULT, "tscshim_status_v2");
	if (!sized || !first_name) {
		puts("no shim");
		return 2;
	}
	query(sized, "below_version_1", VERSION_1_SIZE - 1);
	query(sized, "version_1", VERSION_1_SIZE);
	query(sized, "version_1_and_part_of_2", VERSION_1_SIZE + sizeof(uint32_t));
	query(sized, "version_2", offsetof(struct tscshim_status, read_plan));
	query(sized, "version_3", offsetof(struct tscshim_status, stopped_clocks));
	query(sized, "this_header", sizeof(struct tscshim_status));
	query(sized, "a_later_header", sizeof buffer);
	query(first_name, "first_name_version_1", VERSION_1_SIZE);
	printf("alias=%d\n", sized == first_name);
	return 0;
}

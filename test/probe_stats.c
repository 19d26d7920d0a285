/* Programs that make life hard for TSCSHIM_STATS, run under the shim by bats/install.bats:
 *   probe_stats close-stderr   reads the clock, prints its pid, closes stderr, exits
 *   probe_stats drop-to UID    reads the clock, prints its pid, becomes UID (as a server's
 *                              worker does), reads the clock again, exits
 *   probe_stats failures       prints tscshim_status()'s stats_write_failures
 * Each reads CLOCK_MONOTONIC 10 times in all. */
#define _GNU_SOURCE
#include "tscshim.h"

#include <dlfcn.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void read_clock(int times)
{
	struct timespec ts;
	for (int i = 0; i < times; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
}

static int failures(void)
{
	int (*fn)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
	if (!fn) {
		printf("not loaded\n");
		return 1;
	}
	struct tscshim_status s;
	fn(&s);
	printf("stats_write_failures=%llu\n", (unsigned long long)s.stats_write_failures);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "close-stderr") == 0) {
		read_clock(10);
		printf("%d\n", (int)getpid());
		fclose(stderr);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "drop-to") == 0) {
		uid_t uid = (uid_t)strtoul(argv[2], NULL, 10);
		read_clock(5);
		printf("%d\n", (int)getpid());
		fflush(stdout);
		if (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid(uid) != 0) {
			perror("probe_stats: cannot change user");
			return 2;
		}
		read_clock(5);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "failures") == 0)
		return failures();
	fprintf(stderr, "usage: probe_stats close-stderr | drop-to UID | failures\n");
	return 2;
}

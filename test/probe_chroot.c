/* Starts a program in a scratch root the way a container runtime does, for the container
 * tests of bats/musl.bats:
 *   probe_chroot ROOT [VAR=VALUE...] -- PROGRAM [ARGS...]
 * chroot(ROOT), chdir("/"), then PROGRAM with exactly the environment given (an image's
 * ENV lines). The environment is handed to PROGRAM only, so that no tool on the way (a
 * shell, chroot(1)) loads the LD_PRELOAD it names, which exists only inside ROOT. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int dashes = 2;
	while (dashes < argc && strcmp(argv[dashes], "--") != 0)
		dashes++;
	if (argc < 4 || dashes >= argc - 1) {
		fprintf(stderr, "usage: probe_chroot ROOT [VAR=VALUE...] -- PROGRAM [ARGS...]\n");
		return 2;
	}
	if (chroot(argv[1]) != 0 || chdir("/") != 0) {
		fprintf(stderr, "probe_chroot: %s: %s\n", argv[1], strerror(errno));
		return 126;
	}
	argv[dashes] = NULL; /* the environment: argv[2] .. argv[dashes - 1] */
	execve(argv[dashes + 1], argv + dashes + 1, argv + 2);
	fprintf(stderr, "probe_chroot: %s: %s\n", argv[dashes + 1], strerror(errno));
	return 127;
}

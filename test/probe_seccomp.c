/* Runs a program under a seccomp filter that forbids sched_setaffinity, as a sandbox may:
 *   probe_seccomp eperm|kill PROGRAM [ARGS...]
 * eperm: the call fails with EPERM; kill: the calling process is killed (SIGSYS). Every
 * other system call is allowed. No libseccomp: a four-instruction BPF program. */
#define _GNU_SOURCE
#include "seccomp_one_call.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "eperm") != 0 && strcmp(argv[1], "kill") != 0)) {
		fprintf(stderr, "usage: probe_seccomp eperm|kill PROGRAM [ARGS...]\n");
		return 2;
	}
	unsigned action = strcmp(argv[1], "kill") == 0 ? SECCOMP_RET_KILL_PROCESS
						       : SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
	if (seccomp_one_call(__NR_sched_setaffinity, action) != 0) {
		perror("probe_seccomp: installing the filter");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror("probe_seccomp: exec");
	return 127;
}

/* Runs a program under a seccomp filter that forbids sched_setaffinity, as a sandbox may:
 *   probe_seccomp eperm|kill PROGRAM [ARGS...]
 * eperm: the call fails with EPERM; kill: the calling process is killed (SIGSYS). Every
 * other system call is allowed. No libseccomp: a four-instruction BPF program. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "eperm") != 0 && strcmp(argv[1], "kill") != 0)) {
		fprintf(stderr, "usage: probe_seccomp eperm|kill PROGRAM [ARGS...]\n");
		return 2;
	}
	unsigned action = strcmp(argv[1], "kill") == 0 ? SECCOMP_RET_KILL_PROCESS
						       : SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_setaffinity, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("probe_seccomp: installing the filter");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror("probe_seccomp: exec");
	return 127;
}

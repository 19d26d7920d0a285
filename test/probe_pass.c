/* Calls the shim does not serve, once the decision is made by each of its triggers: they
 * reach the kernel's clock through the pass target the decision set (the test build's
 * tscshim_test_pass_target says which), and say failures as the C library does.
 *   probe_pass read      the decision at the first read (TSCSHIM_DECIDE_AFTER=1)
 *   probe_pass load      a cold start: the decision at load
 *   probe_pass status    the decision from a status query, with no read due
 *   probe_pass fork      decided in the parent; the child checks its inherited target
 *   probe_pass none      no decision (the read count not reached): the undecided target
 *   probe_pass novdso    the vDSO hidden from the auxiliary vector first (as with the
 *                        kernel's vdso=0), so that looking for it sets errno: a read that
 *                        decides, and the unserved ones after it, leave errno alone
 *   probe_pass never [novdso|served]
 *                        no decision, and only clocks the counter never serves read, 10,000
 *                        times each (with novdso, the vDSO hidden first: errno kept): they
 *                        go to the target the decision would set without asking the gate;
 *                        with served, MONOTONIC and REALTIME too (for TSCSHIM_CLOCKS=none)
 * Prints "target=N" (0 undecided, 1 vDSO, 2 real, 3 counted), with never, also
 * "never_served=N gate_asked=N" (the test build's hooks), and exits 0 when every check
 * held, else 1 after a line naming the one that did not. */
#define _GNU_SOURCE
#include "tscshim.h"

#include "kernel_ns.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failed(const char *what)
{
	printf("FAILED: %s\n", what);
	return 1;
}

/* Unserved and invalid calls, through whatever target is set now. */
static int pass_through_calls(void)
{
	struct timespec ts;
	int64_t lo = kernel_ns(CLOCK_MONOTONIC_COARSE);
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return failed("CLOCK_MONOTONIC_COARSE");
	int64_t hi = kernel_ns(CLOCK_MONOTONIC_COARSE);
	if (ns_of(&ts) < lo || ns_of(&ts) > hi)
		return failed("CLOCK_MONOTONIC_COARSE outside the kernel's bracket");
	errno = 0;
	if (clock_gettime((clockid_t)12345, &ts) != -1 || errno != EINVAL)
		return failed("an invalid clock id: not -1 and EINVAL");
	errno = 0;
	if (clock_gettime(CLOCK_TAI, &ts) != 0 || errno != 0)
		return failed("CLOCK_TAI");
	struct timeval tv;
	struct timezone tz;
	if (gettimeofday(&tv, &tz) != 0)
		return failed("gettimeofday with a timezone");
	if (timespec_get(&ts, TIME_UTC) != TIME_UTC || timespec_get(&ts, 12345) != 0)
		return failed("timespec_get");
	return 0;
}

/* The auxiliary vector's vDSO entry made AT_IGNORE: getauxval(AT_SYSINFO_EHDR) then fails
 * with ENOENT, as in a process the kernel gave no vDSO. */
static void hide_vdso(void)
{
	extern char **environ;
	char **e = environ;
	while (*e)
		e++;
	for (Elf64_auxv_t *av = (Elf64_auxv_t *)(e + 1); av->a_type != AT_NULL; av++)
		if (av->a_type == AT_SYSINFO_EHDR)
			av->a_type = AT_IGNORE;
}

/* Each call succeeds and leaves errno as it was. */
static int errno_kept(void)
{
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_TAI, CLOCK_REALTIME};
	for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
		struct timespec ts;
		errno = 777;
		if (clock_gettime(clocks[i], &ts) != 0 || errno != 777)
			return failed("a successful call changed errno");
	}
	return 0;
}

static int target(void)
{
	int (*fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "tscshim_test_pass_target");
	return fn ? fn() : -1;
}

/* Clocks the counter never serves, read often before any decision, errno kept; with
 * served, the clocks it serves by default too. */
static int never_served_reads(bool served)
{
	static const clockid_t clocks[] = {CLOCK_MONOTONIC_COARSE, CLOCK_REALTIME_COARSE, CLOCK_TAI,
					   CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
					   CLOCK_MONOTONIC, CLOCK_REALTIME};
	unsigned count = sizeof clocks / sizeof clocks[0] - (served ? 0 : 2);
	for (unsigned i = 0; i < count; i++)
		for (int n = 0; n < 10000; n++) {
			struct timespec ts;
			errno = 777;
			if (clock_gettime(clocks[i], &ts) != 0 || errno != 777)
				return failed("a clock never served: failed, or changed errno");
		}
	int (*never)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "tscshim_test_never_served_target");
	uint64_t (*asked)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "tscshim_test_gate_asked");
	if (pass_through_calls() != 0)
		return 1;
	printf("target=%d never_served=%d gate_asked=%llu\n", target(), never ? never() : -1,
	       asked ? (unsigned long long)asked() : 0ULL);
	return 0;
}

static int check_and_say(void)
{
	if (pass_through_calls() != 0)
		return 1;
	printf("target=%d\n", target());
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc >= 2 ? argv[1] : "";
	struct timespec ts;
	if (strcmp(mode, "read") == 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} else if (strcmp(mode, "status") == 0) {
		struct tscshim_status s;
		int (*fn)(struct tscshim_status *) = (int (*)(struct tscshim_status *))dlsym(RTLD_DEFAULT, "tscshim_status");
		if (!fn || fn(&s) != 0)
			return failed("tscshim_status");
	} else if (strcmp(mode, "fork") == 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* the parent's target set */
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			int rc = check_and_say();
			fflush(stdout);
			_exit(rc);
		}
		int status;
		if (child < 0 || waitpid(child, &status, 0) != child)
			return failed("fork");
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	} else if (strcmp(mode, "never") == 0) {
		if (argc >= 3 && strcmp(argv[2], "novdso") == 0)
			hide_vdso();
		return never_served_reads(argc >= 3 && strcmp(argv[2], "served") == 0);
	} else if (strcmp(mode, "novdso") == 0) {
		hide_vdso();
		if (errno_kept() != 0)
			return 1;
	} else if (strcmp(mode, "load") != 0 && strcmp(mode, "none") != 0) {
		fprintf(stderr, "usage: probe_pass read|load|status|fork|none|novdso|never [novdso]\n");
		return 2;
	}
	return check_and_say();
}

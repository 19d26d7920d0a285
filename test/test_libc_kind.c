/* calib/libc_kind.c, built and run under one C library (make test: glibc; make musl:
 * build-musl/test/test_libc_kind, under musl). The wrong-library cases need a program of
 * the other library and are in bats/musl.bats. */
#define _GNU_SOURCE
#include "libc_kind.h"
#include "unit.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef TSCSHIM_LIBC_MUSL
#define EXPECTED LIBC_MUSL
#else
#define EXPECTED LIBC_GLIBC
#endif

static void built_for_and_running_on_the_same(void)
{
	CHECK(libc_built_for() == EXPECTED);
	CHECK(libc_running() == EXPECTED);
	char why[200] = "untouched";
	CHECK(libc_check(why, sizeof why) == 0);
}

static void names(void)
{
	CHECK(strcmp(libc_kind_name(LIBC_GLIBC), "glibc") == 0);
	CHECK(strcmp(libc_kind_name(LIBC_MUSL), "musl") == 0);
	CHECK(strcmp(libc_kind_name(LIBC_OTHER), "another C library") == 0);
}

static volatile int child_ran;
static void in_child(void)
{
	child_ran = 1;
}

/* The handler runs in the child only, under either library's way of registering it. */
static void atfork_child_runs_in_the_child_only(void)
{
	CHECK(libc_atfork_child(in_child) == 0);
	pid_t pid = fork();
	if (pid == 0)
		_exit(child_ran == 1 ? 0 : 1);
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(child_ran == 0);
}

/* glibc pins through the attribute; musl has none, and says so with ENOSYS. */
static void attribute_affinity_where_the_library_has_it(void)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	struct cpu_mask one;
	memset(&one, 0, sizeof one);
	cpu_set_t now;
	CHECK(sched_getaffinity(0, sizeof now, &now) == 0);
	int cpu = 0;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &now))
		cpu++;
	cpu_mask_add(&one, (unsigned)cpu);
	int rc = libc_attr_setaffinity(&attr, &one);
	CHECK(rc == (EXPECTED == LIBC_MUSL ? ENOSYS : 0));
	pthread_attr_destroy(&attr);
}

int main(void)
{
	RUN(built_for_and_running_on_the_same);
	RUN(names);
	RUN(atfork_child_runs_in_the_child_only);
	RUN(attribute_affinity_where_the_library_has_it);
	return unit_finish();
}

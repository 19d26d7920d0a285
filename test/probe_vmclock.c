/* A live migration, staged: a file in the vmclock device's layout stands for
 * /dev/vmclock0 (TSCSHIM_TEST_VMCLOCK, read by build/test/libtscshim-hooks.so only) and
 * the reference double (test/lib_refclock.c) for the kernel's clock, whose rate the
 * "migration" changes against the counter.
 *
 *   probe_vmclock make FILE
 *       writes the page: the magic, version 1, the TSC as its counter, marker 1.
 *   probe_vmclock run FILE PPM JUMP_NS SECONDS LIMIT_NS [nobump]
 *       two threads read the four served clocks, each value checked (test/hostile_check.h)
 *       against the double's readings around it within LIMIT_NS, and no monotonic value
 *       below an earlier one; after 0.1 s the first "migrates": from then the double's
 *       clocks run PPM fast (negative: slow) and JUMP_NS ahead, and, unless nobump, the
 *       page's disruption marker changes (under its sequence count, as a hypervisor
 *       writes it), while both readers stand still (a paused guest); then SECONDS more. Prints one line per clock, the status, and
 *       "vmclock: watched=W disruptions=D resumes=R served_late=S" (S: served reads in
 *       the last third). Exits 1 where a promise was broken, 2 on a usage or setup error.
 *       TSCTEST_FIRST_READ_AFTER_US=U: the new rate starts U us before the readers read
 *       again (by default at their first read).
 *       TSCTEST_LINGER_FILE=PATH: once done, creates PATH and waits up to 10 s, for
 *       `tscshim ps` to read the process.
 *       TSCTEST_PAUSE_STOP_US=U (the hooks build): the first writer after the move, the
 *       one that stops the line, is paused U us once it has its anchor, so that the other
 *       reader reads for that long before the stop is published. */
#define _GNU_SOURCE
#include "hostile_check.h"
#include "test_points.h"
#include "tscshim.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

static struct hostile_double dbl;
static struct hostile_limits limits = {.reads_around = 1, .reference_tries = 8};
static _Atomic int phase; /* 0 before the move, 1 after, 2 the last third, 3 stop, 4 moving */
static _Atomic int parked;  /* readers standing still while the guest "moves" */

static _Atomic int64_t pause_stop_ns; /* taken by the first writer after the move */

static void pause_stop_writer(int point)
{
	if (point != TEST_POINT_ANCHORED || atomic_load(&phase) == 0 || atomic_load(&phase) == 4)
		return;
	int64_t ns = atomic_exchange(&pause_stop_ns, 0);
	if (ns > 0) {
		int64_t until = kernel_ns(CLOCK_MONOTONIC) + ns;
		while (kernel_ns(CLOCK_MONOTONIC) < until)
			;
	}
}

struct reader {
	pthread_t thread;
	struct hostile_tally t[HOSTILE_CLOCKS];
	long served_late;
};

static void *reader_main(void *p)
{
	struct reader *r = p;
	int64_t previous[HOSTILE_CLOCKS] = {0};
	bool previous_served[HOSTILE_CLOCKS] = {false};
	int now;
	while ((now = atomic_load_explicit(&phase, memory_order_relaxed)) != 3) {
		if (now == 4) {
			/* The guest is paused: no read straddles the move. Yielding, so that the
			 * move takes microseconds, not a scheduler tick: a guest's counter does not
			 * run on over the pause (its TSC is restored), so the line it resumes on has
			 * not expired, and only the marker says it moved. */
			atomic_fetch_add(&parked, 1);
			while (atomic_load(&phase) == 4)
				sched_yield();
			continue;
		}
		for (int k = 0; k < HOSTILE_CLOCKS; k++) {
			long served = r->t[k].served;
			hostile_read_one(&dbl, &limits, k, &r->t[k], &previous[k], &previous_served[k]);
			if (now == 2 && r->t[k].served > served)
				r->served_late++;
		}
	}
	return NULL;
}

static int make_page(const char *path)
{
	unsigned char page[4096] = {0};
	uint32_t magic = 0x4b4c4356, size = 104, seq = 0;
	uint16_t version = 1;
	uint64_t marker = 1;
	memcpy(page, &magic, 4);
	memcpy(page + 4, &size, 4);
	memcpy(page + 8, &version, 2);
	page[10] = 1; /* VMCLOCK_COUNTER_X86_TSC */
	memcpy(page + 12, &seq, 4);
	memcpy(page + 16, &marker, 8);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, page, sizeof page) != (ssize_t)sizeof page || close(fd) != 0) {
		perror("probe_vmclock: make");
		return 2;
	}
	return 0;
}

static void nap(double seconds)
{
	struct timespec ts = {.tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "make") == 0)
		return make_page(argv[2]);
	if (argc < 7 || argc > 8 || strcmp(argv[1], "run") != 0 || (argc == 8 && strcmp(argv[7], "nobump") != 0)) {
		fprintf(stderr, "usage: see the comment at the top of test/probe_vmclock.c\n");
		return 2;
	}
	int64_t ppm = atoll(argv[3]), jump_ns = atoll(argv[4]);
	double seconds = atof(argv[5]);
	limits.limit_ns = atoll(argv[6]);
	bool bump = argc == 7;
	void (*set_rate)(int64_t) = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "tsctest_set_rate_ppm");
	void (*arm_rate)(int64_t) = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "tsctest_arm_rate_ppm");
	const char *late = getenv("TSCTEST_FIRST_READ_AFTER_US");
	int64_t first_read_after_ns = late ? atoll(late) * 1000 : 0;
	void (*set_jump)(int64_t) = (void (*)(int64_t))dlsym(RTLD_DEFAULT, "tsctest_set_jump");
	int (*sized)(struct tscshim_status *, size_t) =
		(int (*)(struct tscshim_status *, size_t))dlsym(RTLD_DEFAULT, "tscshim_status_sized");
	if (!hostile_double_find(&dbl) || !set_rate || !arm_rate || !set_jump || !sized) {
		fprintf(stderr, "probe_vmclock: needs the shim and build/test/librefclock.so preloaded\n");
		return 2;
	}
	const char *pause = getenv("TSCTEST_PAUSE_STOP_US");
	if (pause && atoll(pause) > 0) {
		void (**hook)(int) = (void (**)(int))dlsym(RTLD_DEFAULT, "tscshim_test_hook");
		if (!hook) {
			fprintf(stderr, "probe_vmclock: TSCTEST_PAUSE_STOP_US needs build/test/libtscshim-hooks.so\n");
			return 2;
		}
		atomic_store(&pause_stop_ns, atoll(pause) * 1000);
		*hook = pause_stop_writer;
	}
	int fd = open(argv[2], O_RDWR);
	volatile unsigned char *page =
		fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED) {
		perror("probe_vmclock: the page");
		return 2;
	}
	struct tscshim_status s;
	memset(&s, 0, sizeof s);
	sized(&s, sizeof s); /* decides, if the first read has not */
	limits.decided_at_ns = kernel_ns(CLOCK_MONOTONIC);
	struct reader r[2];
	memset(r, 0, sizeof r);
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i].thread, NULL, reader_main, &r[i]);
	nap(0.1);
	/* The move, with every reader standing still (a paused guest): the pause, the
	 * marker, and the host's rate, all done before the guest runs again. A paused guest's
	 * counter does not run on (its TSC is restored), so the new rate starts at the
	 * guest's first clock read after the move (arm_rate); with
	 * TSCTEST_FIRST_READ_AFTER_US it starts now and the readers wait that long, as a
	 * process that reads its clock only some time after the guest resumed. */
	atomic_store(&phase, 4);
	while (atomic_load(&parked) < 2)
		sched_yield();
	if (jump_ns)
		set_jump(jump_ns);
	if (bump) {
		volatile uint32_t *seq = (volatile uint32_t *)(page + 12);
		volatile uint64_t *marker = (volatile uint64_t *)(page + 16);
		*seq = *seq + 1;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		*marker = *marker * 6364136223846793005ull + 1442695040888963407ull;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		*seq = *seq + 1;
	}
	if (first_read_after_ns > 0) {
		set_rate(ppm);
		int64_t until = kernel_ns(CLOCK_MONOTONIC) + first_read_after_ns;
		while (kernel_ns(CLOCK_MONOTONIC) < until)
			;
	} else {
		arm_rate(ppm);
	}
	atomic_store(&phase, 1);
	nap(seconds * 2 / 3);
	atomic_store(&phase, 2);
	nap(seconds / 3);
	atomic_store(&phase, 3);
	struct hostile_tally all[HOSTILE_CLOCKS];
	memset(all, 0, sizeof all);
	long served_late = 0;
	for (int i = 0; i < 2; i++) {
		pthread_join(r[i].thread, NULL);
		for (int k = 0; k < HOSTILE_CLOCKS; k++)
			hostile_tally_add(&all[k], &r[i].t[k]);
		served_late += r[i].served_late;
	}
	bool broken = hostile_tally_print(all);
	memset(&s, 0, sizeof s);
	sized(&s, sizeof s);
	printf("status: active=%d served_clocks=%u stopped_clocks=%u causes=%u,%u,%u,%u resyncs=%llu reanchors=%llu "
	       "stops=%llu held_reads=%llu reason=%s\n",
	       s.active, s.served_clocks, s.stopped_clocks, s.stop_cause[0], s.stop_cause[1], s.stop_cause[2],
	       s.stop_cause[3], (unsigned long long)s.resyncs, (unsigned long long)s.reanchors,
	       (unsigned long long)s.stops, (unsigned long long)s.held_reads, s.reason);
	printf("vmclock: watched=%u disruptions=%llu resumes=%llu served_late=%ld\n", s.disruption_watched,
	       (unsigned long long)s.disruptions, (unsigned long long)s.resumes, served_late);
	const char *linger = getenv("TSCTEST_LINGER_FILE");
	if (linger && *linger) {
		int lf = open(linger, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (lf >= 0 && close(lf) == 0)
			nap(10);
	}
	return broken;
}

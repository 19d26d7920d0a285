/* The timed loops of tscshim bench. Calls are timed in batches of BATCH between two
 * ordered counter reads, so the timer costs under 1 ns per call and each batch gives one
 * per-call sample: the distribution is of batch means (a single slow call shows as
 * 1/BATCH of its excess in its batch). A shim variant's floor is timed in the same loop,
 * a batch of the floor after each of the shim's. */
#define _GNU_SOURCE
#include "bench.h"
#include "floor.h"
#include "shim_status.h"

#include "counter.h"
#include "kernel_clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { BATCH = 64 };

static const clockid_t clock_ids[BENCH_CLOCKS] = {
	[C_MONOTONIC] = CLOCK_MONOTONIC, [C_MONOTONIC_RAW] = CLOCK_MONOTONIC_RAW,
	[C_BOOTTIME] = CLOCK_BOOTTIME,   [C_REALTIME] = CLOCK_REALTIME,
	[C_GETTIMEOFDAY] = CLOCK_REALTIME, [C_TIMESPEC_GET] = CLOCK_REALTIME,
	[C_MONOTONIC_COARSE] = CLOCK_MONOTONIC_COARSE, [C_TAI] = CLOCK_TAI,
};

static struct bench_real real;

/* One batch of CALL, timed: ns per call into DEST. */
#define TIMED_BATCH(CALL, FIELD, DEST)                                                   \
	do {                                                                             \
		uint64_t t0 = counter_read_ordered();                                    \
		for (int k = 0; k < BATCH; k++) {                                        \
			CALL;                                                            \
			sink += (long)FIELD;                                             \
		}                                                                        \
		DEST = bench_ticks_to_ns(counter_read_ordered() - t0) / BATCH;           \
	} while (0)

/* One batch loop per call expression: a switch inside the timed loop would be timed too.
 * With floor_out, each batch of CALL is followed by one of the floor's (FLOOR_CALL), its
 * form renewed before it as the shim's line is renewed, outside the timing. */
#define BATCHES(CALL, FIELD, FLOOR_CALL, FLOOR_FIELD)                                    \
	for (long b = 0; b < batches; b++) {                                             \
		TIMED_BATCH(CALL, FIELD, out[b]);                                        \
		if (floor_out) {                                                         \
			floor_renew();                                                   \
			TIMED_BATCH(FLOOR_CALL, FLOOR_FIELD, floor_out[b]);              \
		}                                                                        \
	}

/* The system call timed as the kernel's clock: a failed call costs what it costs, and
 * its value is not used (the batch reads tv_nsec only to keep the call). */
static inline void syscall_clock(clockid_t id, struct timespec *ts)
{
	if (kernel_clock_gettime(id, ts) != 0)
		ts->tv_nsec = 0;
}

/* The variant's batches into out, and with floor_out, the floor's (read with floor_plan)
 * alternating with them. */
static void run_batches(int variant, int clock, long batches, double *out, int floor_plan, double *floor_out)
{
	struct timespec ts = {0};
	struct timeval tv = {0};
	volatile long sink = 0;
	clockid_t id = clock_ids[clock];
	floor_fn *floor_ts = floor_reader(floor_plan);
	floor_tv_fn *floor_tv = floor_reader_tv(floor_plan);
	if (!floor_ts)
		floor_out = NULL;
	if (clock == C_GETTIMEOFDAY) {
		switch (variant) {
		case V_REAL: BATCHES(real.gettimeofday(&tv, NULL), tv.tv_usec, floor_tv(&tv), tv.tv_usec); break;
		case V_SYSCALL: BATCHES(syscall(SYS_gettimeofday, &tv, NULL), tv.tv_usec, floor_tv(&tv), tv.tv_usec); break;
		default: BATCHES(gettimeofday(&tv, NULL), tv.tv_usec, floor_tv(&tv), tv.tv_usec); break;
		}
	} else if (clock == C_TIMESPEC_GET) {
		switch (variant) {
		case V_REAL: BATCHES(real.timespec_get(&ts, TIME_UTC), ts.tv_nsec, floor_ts(&ts), ts.tv_nsec); break;
		case V_SYSCALL: BATCHES(syscall_clock(id, &ts), ts.tv_nsec, floor_ts(&ts), ts.tv_nsec); break;
		default: BATCHES(timespec_get(&ts, TIME_UTC), ts.tv_nsec, floor_ts(&ts), ts.tv_nsec); break;
		}
	} else {
		switch (variant) {
		case V_REAL: BATCHES(real.clock_gettime(id, &ts), ts.tv_nsec, floor_ts(&ts), ts.tv_nsec); break;
		case V_SYSCALL: BATCHES(syscall_clock(id, &ts), ts.tv_nsec, floor_ts(&ts), ts.tv_nsec); break;
		default: BATCHES(clock_gettime(id, &ts), ts.tv_nsec, floor_ts(&ts), ts.tv_nsec); break;
		}
	}
}

/* The start of one clock's threads. The creator holds `creating` until every thread
 * exists, and each thread takes it before anything else: if one could not be created, the
 * others learn it there and return, where they would otherwise wait at the barrier for it
 * forever. The barrier then lines up the timed loops after each thread's warm-up. */
struct start {
	pthread_mutex_t creating;
	bool called_off;
	pthread_barrier_t timed_loops;
};

struct thread_job {
	pthread_t thread;
	struct start *start;
	int variant, clock;
	long batches;
	double *samples;
	int floor_plan;
	double *floor_samples; /* NULL: no floor beside */
};

static void *thread_main(void *p)
{
	struct thread_job *j = p;
	pthread_mutex_lock(&j->start->creating);
	bool called_off = j->start->called_off;
	pthread_mutex_unlock(&j->start->creating);
	if (called_off)
		return NULL;
	double warm[16], floor_warm[16];
	/* Fault in code, data and the vDSO. */
	run_batches(j->variant, j->clock, 16, warm, j->floor_plan, j->floor_samples ? floor_warm : NULL);
	pthread_barrier_wait(&j->start->timed_loops);
	run_batches(j->variant, j->clock, j->batches, j->samples, j->floor_plan, j->floor_samples);
	return NULL;
}

/* Runs jobs[0..threads-1] on one clock, jobs[0] on this thread: 0, or -1 after one line
 * when a thread could not be created (the others are joined, nothing is timed). */
static int run_threads(struct thread_job *jobs, int threads)
{
	struct start start = {.creating = PTHREAD_MUTEX_INITIALIZER};
	pthread_barrier_init(&start.timed_loops, NULL, (unsigned)threads);
	pthread_mutex_lock(&start.creating);
	int started = 0;
	/* Thread 0 is this one: with --threads 1 nothing is spawned. */
	for (int t = 1; t < threads; t++) {
		jobs[t].start = &start;
		if (pthread_create(&jobs[t].thread, NULL, thread_main, &jobs[t]) != 0) {
			fprintf(stderr, "tscshim bench: cannot start thread %d\n", t);
			start.called_off = true;
			break;
		}
		started++;
	}
	pthread_mutex_unlock(&start.creating);
	jobs[0].start = &start;
	if (!start.called_off)
		thread_main(&jobs[0]);
	for (int t = 1; t <= started; t++)
		pthread_join(jobs[t].thread, NULL);
	pthread_barrier_destroy(&start.timed_loops);
	return start.called_off ? -1 : 0;
}

static int setup_done;

static int setup(void)
{
	if (setup_done)
		return 0;
	bench_real_functions(&real);
	if (!real.clock_gettime || !real.gettimeofday || !real.timespec_get) {
		fprintf(stderr, "tscshim bench: cannot find libc's clock_gettime, gettimeofday and timespec_get\n");
		return -1;
	}
	if (bench_timing_setup() != 0)
		return -1;
	/* The floor converts with a typical rate: its cost does not depend on the value. */
	floor_setup(2000000000000ull);
	setup_done = 1;
	return 0;
}

int bench_floor_variant(int shim_variant)
{
	return shim_variant == V_SHIM_FENCED ? V_FLOOR_FENCED : shim_variant == V_SHIM_UNFENCED ? V_FLOOR_UNFENCED : -1;
}

void bench_floor_choose(int variant, struct bench_floor *out)
{
	out->plan = out->shim_plan = FLOOR_NO_PLAN;
	if (bench_floor_variant(variant) < 0 || setup() != 0)
		return;
	out->shim_plan = shim_status_read_plan();
	out->plan = floor_plan_for(variant == V_SHIM_FENCED, out->shim_plan);
}

void bench_floor_write(FILE *out, const struct bench_floor *f)
{
	fprintf(out, "floor %d %d\n", f->plan, f->shim_plan);
}

int bench_floor_parse(const char *line, struct bench_floor *out)
{
	return sscanf(line, "floor %d %d", &out->plan, &out->shim_plan) == 2 ? 0 : -1;
}

/* The cells of one variant's samples: each thread's (with more than one), then all. */
static void emit_cells(bench_emit_fn *emit, void *ctx, int variant, int clock, const double *samples,
		       double *copy, size_t per_thread, int threads)
{
	memcpy(copy, samples, sizeof(double) * per_thread * (size_t)threads);
	struct bench_cell cell;
	for (int t = 0; t < threads && threads > 1; t++) {
		bench_summarize(copy + per_thread * (size_t)t, per_thread, &cell);
		cell.calls = (long)per_thread * BATCH;
		emit(ctx, variant, clock, t, &cell);
	}
	bench_summarize(copy, per_thread * (size_t)threads, &cell);
	cell.calls = (long)per_thread * BATCH * threads;
	emit(ctx, variant, clock, -1, &cell);
}

int bench_run_variant(int variant, const struct bench_work *w, bench_emit_fn *emit, void *ctx)
{
	if (setup() != 0)
		return -1;
	long batches = (w->calls + BATCH - 1) / BATCH;
	size_t per_thread = (size_t)batches, total = per_thread * (size_t)w->threads;
	int floor_variant = floor_reader(w->floor_plan) ? bench_floor_variant(variant) : -1;
	double *all = malloc(sizeof(double) * total);
	double *floor_all = floor_variant >= 0 ? malloc(sizeof(double) * total) : NULL;
	double *copy = malloc(sizeof(double) * total);
	struct thread_job *jobs = calloc((size_t)w->threads, sizeof *jobs);
	if (!all || !copy || !jobs || (floor_variant >= 0 && !floor_all)) {
		fprintf(stderr, "tscshim bench: out of memory\n");
		free(all), free(floor_all), free(copy), free(jobs);
		return -1;
	}
	int rc = 0;
	for (int clock = 0; clock < BENCH_CLOCKS && rc == 0; clock++) {
		if (!bench_measures(variant, clock))
			continue;
		bool floored = floor_variant >= 0 && bench_measures(floor_variant, clock);
		for (int t = 0; t < w->threads; t++)
			jobs[t] = (struct thread_job){
				.variant = variant, .clock = clock, .batches = batches,
				.samples = all + per_thread * (size_t)t, .floor_plan = w->floor_plan,
				.floor_samples = floored ? floor_all + per_thread * (size_t)t : NULL};
		if ((rc = run_threads(jobs, w->threads)) != 0)
			break;
		emit_cells(emit, ctx, variant, clock, all, copy, per_thread, w->threads);
		if (floored)
			emit_cells(emit, ctx, floor_variant, clock, floor_all, copy, per_thread, w->threads);
	}
	free(all), free(floor_all), free(copy), free(jobs);
	return rc;
}

void bench_write_cell(FILE *out, int variant, int clock, int thread, const struct bench_cell *c)
{
	fprintf(out, "cell %d %d %d %ld %.4f %.4f %.4f %.4f %.4f %.4f", variant, clock, thread,
		c->calls, c->mean, c->p50, c->p90, c->p99, c->p999, c->max);
	for (int i = 0; i < BENCH_QUANTILES; i++)
		fprintf(out, " %.3f", c->q[i]);
	fputc('\n', out);
}

/* tscshim bench, internal: the cells of its table, the worker and its protocol, drift.
 * Internal to the command. */
#ifndef CLI_BENCH_H
#define CLI_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

/* What is timed. The shim variants run in a child with the shim preloaded; the others in
 * the command itself, which is not preloaded. */
enum bench_variant { V_REAL, V_SYSCALL, V_SHIM_FENCED, V_SHIM_UNFENCED, V_SHIM_PASSING,
		     V_FLOOR_FENCED, V_FLOOR_UNFENCED, BENCH_VARIANTS };
/* The served clocks and entry points, then two clocks the shim does not serve (their
 * rows show what the shim costs a call it passes through while it serves others). */
enum bench_clock { C_MONOTONIC, C_MONOTONIC_RAW, C_BOOTTIME, C_REALTIME, C_GETTIMEOFDAY,
		   C_TIMESPEC_GET, C_MONOTONIC_COARSE, C_TAI, BENCH_CLOCKS };

/* The shim's children: served fenced, served unfenced, and decided to pass through (with
 * the default settings but a margin no counter meets: the benefit gate's pass-through). */
enum bench_child { CHILD_UNFENCED, CHILD_FENCED, CHILD_PASSING, BENCH_CHILDREN };

/* Whether a variant has a row for a clock: the floor only where a counter read stands in
 * for the clock. */
bool bench_measures(int variant, int clock);

extern const char *const bench_variant_names[BENCH_VARIANTS];
extern const char *const bench_clock_names[BENCH_CLOCKS];

/* Quantiles kept per cell for the CDF plots: 0, 0.5 %, ..., 100 %. */
enum { BENCH_QUANTILES = 201 };

/* One (variant, clock, thread) cell; thread -1 is all threads together. */
struct bench_cell {
	bool present;
	long calls;
	double mean, p50, p90, p99, p999, max; /* ns per call */
	double q[BENCH_QUANTILES];
};

/* Sorts v (n > 0) and fills the summary of a cell from it. */
void bench_summarize(double *v, size_t n, struct bench_cell *out);

/* Worker settings shared by the parent (in-process variants) and the child. */
struct bench_work {
	long calls;   /* per thread, per clock */
	int threads;
	/* The floor's read plan (floor.h) where the shim's variant is timed with its floor
	 * beside it, FLOOR_NO_PLAN (-1) for none. */
	int floor_plan;
};

/* The floor a shim variant's rows are compared with. It is timed in the shim's child,
 * its batches alternating with the shim's (so that whatever slows the machine for a
 * while slows both alike), with the read plan that shim serves with. */
struct bench_floor {
	int plan;      /* the floor's read plan, -1: none (the passing child) */
	int shim_plan; /* the plan the shim serves with, -1: it does not serve */
};
/* In the child, for one shim variant: the floor beside it. Measures only where the shim
 * does not serve with a plan of the row's kind (about 100 us). */
void bench_floor_choose(int variant, struct bench_floor *out);
/* On the worker's pipe after the shim's status line: "floor PLAN SHIM_PLAN". */
void bench_floor_write(FILE *out, const struct bench_floor *f);
/* 0, or -1 if line is not one. */
int bench_floor_parse(const char *line, struct bench_floor *out);
/* The floor's variant beside a shim variant, or -1 (the passing shim has none). */
int bench_floor_variant(int shim_variant);

/* Runs `variant` on every clock with w->threads threads, and calls emit for each cell
 * (thread 0..threads-1, then -1); with a floor plan, the floor's cells too (its variant
 * bench_floor_variant()'s), timed alternately with the variant's. Returns 0 or -1 with
 * one line on stderr. */
typedef void bench_emit_fn(void *ctx, int variant, int clock, int thread, const struct bench_cell *cell);
int bench_run_variant(int variant, const struct bench_work *w, bench_emit_fn *emit, void *ctx);

/* The protocol on the worker's pipe, one cell a line:
 *   cell VARIANT CLOCK THREAD CALLS MEAN P50 P90 P99 P999 MAX Q0 .. Q200
 * after the shim's status line (shim_status.h) and, from a shim served fenced or
 * unfenced, the floor's line (bench_floor_write): its cells follow the shim's. */
void bench_write_cell(FILE *out, int variant, int clock, int thread, const struct bench_cell *c);

/* The worker's subcommand, command_bench_worker(), is declared with the others (cli.h). */

/* Ticks to ns for batch timing: the shim's calibrated rate when it is loaded, else a short
 * calibration. Returns 0 or -1. */
int bench_timing_setup(void);
double bench_ticks_to_ns(uint64_t ticks);

/* libc's own clock_gettime, gettimeofday and timespec_get (never the shim's). NULL if
 * not found. */
typedef int bench_cgt_fn(int, struct timespec *);
typedef int bench_gtod_fn(struct timeval *, void *);
typedef int bench_tsg_fn(struct timespec *, int);
struct bench_real {
	bench_cgt_fn *clock_gettime;
	bench_gtod_fn *gettimeofday;
	bench_tsg_fn *timespec_get;
};
void bench_real_functions(struct bench_real *out);

/* The library the workers preload (cli_find_library); -1 after one line on stderr. */
int bench_find_library(const char *explicit_path);

/* bench_startup.c: --startup against the library found above, the floor object at
 * floor_path (NULL: libtscshim-floor.so beside the library), over `rounds` rounds. */
int bench_startup_with(const char *floor_path, int rounds);
int bench_startup(const char *library, const char *floor_path, int rounds);
/* Starts `tscshim __bench-worker ARGS...` with the shim preloaded, set up as `child` says
 * (-1: the user's settings, serving forced), its stdout on *out. Returns 0, or -1 after
 * one line. */
int bench_spawn_worker(char *const *args, int child, FILE **out, int *pid);
/* Waits for the worker; 0 if it exited with status 0, else -1 after one line. */
int bench_wait_worker(int pid);

/* Drift (bench --drift): the child's sampling loop and the parent's report. */
int bench_drift_worker(double seconds);
int bench_drift(double seconds, bool json, const char *plot);

#endif

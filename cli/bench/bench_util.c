/* Pieces of bench: a cell's summary, batch timing and the real clock functions. */
#define _GNU_SOURCE
#include "bench.h"
#include "samples.h"
#include "shim_status.h"

#include "calibrate.h"
#include "convert.h"
#include "tscshim.h"

#include <dlfcn.h>

const char *const bench_variant_names[BENCH_VARIANTS] = {
	"real", "syscall", "shim-fenced", "shim-unfenced", "shim-passing", "floor-fenced", "floor-unfenced"};
const char *const bench_clock_names[BENCH_CLOCKS] = {
	"monotonic", "monotonic_raw", "boottime", "realtime", "gettimeofday", "timespec_get",
	"monotonic_coarse", "tai"};

bool bench_measures(int variant, int clock)
{
	bool floor = variant == V_FLOOR_FENCED || variant == V_FLOOR_UNFENCED;
	return !floor || (clock != C_MONOTONIC_COARSE && clock != C_TAI);
}

void bench_summarize(double *v, size_t n, struct bench_cell *out)
{
	samples_sort(v, n);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	out->present = true;
	out->mean = sum / (double)n;
	out->p50 = samples_quantile(v, n, 0.50);
	out->p90 = samples_quantile(v, n, 0.90);
	out->p99 = samples_quantile(v, n, 0.99);
	out->p999 = samples_quantile(v, n, 0.999);
	out->max = v[n - 1];
	for (int i = 0; i < BENCH_QUANTILES; i++)
		out->q[i] = samples_quantile(v, n, (double)i / (BENCH_QUANTILES - 1));
}

static double ns_per_tick;

/* The shim's own rate when it is loaded and active (no need to calibrate twice); else
 * 50 ms against the kernel: batch timings need ~0.1 % at most. */
int bench_timing_setup(void)
{
	struct tscshim_status st;
	shim_status_query(&st);
	uint64_t rate = st.active ? st.rate_millihz : 0;
	if (!rate) {
		struct rate_estimate est;
		char err[256];
		if (calibrate_rate(50000000, &est, err, sizeof err) != 0) {
			fprintf(stderr, "tscshim bench: calibration failed: %s\n", err);
			return -1;
		}
		rate = est.rate_millihz;
	}
	ns_per_tick = (double)ns_per_tick_at(rate);
	return 0;
}

/* In double, not the shim's integer conversion: a batch's total is divided by its calls,
 * and the fraction of a ns matters there. */
double bench_ticks_to_ns(uint64_t ticks)
{
	return (double)ticks * ns_per_tick;
}

/* dlsym(RTLD_NEXT) from here would find the preloaded shim; libc's own handle cannot. */
void bench_real_functions(struct bench_real *out)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	out->clock_gettime = libc ? (bench_cgt_fn *)dlsym(libc, "clock_gettime") : NULL;
	out->gettimeofday = libc ? (bench_gtod_fn *)dlsym(libc, "gettimeofday") : NULL;
	out->timespec_get = libc ? (bench_tsg_fn *)dlsym(libc, "timespec_get") : NULL;
}

/* What test/check-hot-path.sh must reject: entry points with the names the shim exports
 * but the shape it must never have (a call, a stack frame, a GOT load, no inline counter
 * read). Never preloaded: only disassembled. */
#include <sys/time.h>
#include <time.h>

__attribute__((visibility("default"))) int bad_shape_counter; /* default visibility: reached through the GOT */
void bad_shape_helper(struct timespec *ts);

__attribute__((noinline, visibility("default"))) void bad_shape_helper(struct timespec *ts)
{
	ts->tv_sec = bad_shape_counter++;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t clock, struct timespec *ts)
{
	volatile long keep[8] = {clock};
	bad_shape_helper(ts);
	return (int)keep[0] + bad_shape_counter;
}

__attribute__((visibility("default"))) int gettimeofday(struct timeval *tv, void *tz)
{
	(void)tz;
	struct timespec ts;
	bad_shape_helper(&ts);
	tv->tv_sec = ts.tv_sec;
	return bad_shape_counter;
}

__attribute__((visibility("default"))) int timespec_get(struct timespec *ts, int base)
{
	bad_shape_helper(ts);
	return base + bad_shape_counter;
}

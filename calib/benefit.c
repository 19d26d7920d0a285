/* Whether reading the counter pays (calib/benefit.h): pure judgements of measured costs. */
#include "benefit.h"
#include "absdiff.h"

#include <math.h>
#include <stdio.h>

static bool usable(double ns)
{
	return isfinite(ns) && ns > 0;
}

enum kernel_path benefit_kernel_path(const struct cost *c)
{
	/* A vDSO read is a few percent of a system call; a kernel clock that is a system call
	 * costs at least the call itself. Half is far from both. */
	if (usable(c->kernel_ns) && usable(c->syscall_ns) && c->kernel_ns >= 0.5 * c->syscall_ns)
		return KERNEL_PATH_SYSCALL;
	return KERNEL_PATH_VDSO;
}

bool benefit_same_kernel_path(double now_ns, const struct cost *then)
{
	enum kernel_path was = benefit_kernel_path(then);
	/* Where the set was the vDSO, its kernel figure is a vDSO read; where it was a system
	 * call, a fenced counter read stands in for one (they cost about the same). */
	double vdso_ns = was == KERNEL_PATH_VDSO ? then->kernel_ns : then->fenced_ns;
	if (!usable(now_ns) || !usable(vdso_ns) || !usable(then->syscall_ns) || vdso_ns >= then->syscall_ns) {
		struct cost now = {.kernel_ns = now_ns, .syscall_ns = then->syscall_ns};
		return benefit_kernel_path(&now) == was;
	}
	/* The geometric mean of the two: as many times a vDSO read as a system call is times
	 * it. Half the system call is not: a busy moment inflates the set's median system call
	 * (13x seen), and the cheapest of a few timed now falls under half of it. Nor is the
	 * mean alone where a system call costs a few vDSO reads (Intel Xeon, clocksource tsc:
	 * 28.5 ns against 132 ns): inflated 13x, the set put the mean at 8 vDSO reads, above
	 * the call itself. So BENEFIT_VDSO_NOW_MOST vDSO reads are a system call whatever the set
	 * says. */
	bool past_mean = now_ns * now_ns >= vdso_ns * then->syscall_ns;
	bool past_vdso = now_ns >= BENEFIT_VDSO_NOW_MOST * vdso_ns;
	enum kernel_path is = past_mean || past_vdso ? KERNEL_PATH_SYSCALL : KERNEL_PATH_VDSO;
	return is == was;
}

const char *kernel_path_name(enum kernel_path path)
{
	return path == KERNEL_PATH_SYSCALL ? "syscall" : "vdso";
}

bool benefit_pays(double kernel_ns, double counter_ns, unsigned min_gain_pct)
{
	if (!usable(kernel_ns) || !usable(counter_ns) || min_gain_pct >= 100)
		return false;
	return counter_ns <= kernel_ns * (100.0 - min_gain_pct) / 100.0;
}

/* "2.0x cheaper" or "no gain here (...)": one mode's half of the recommendation. */
static int judge(char *out, size_t size, const char *mode, double kernel_ns, double counter_ns,
		 unsigned min_gain_pct, const char *kernel_what, const char *condition)
{
	if (!usable(counter_ns) || !usable(kernel_ns))
		return snprintf(out, size, "%s: not measured", mode);
	if (benefit_pays(kernel_ns, counter_ns, min_gain_pct))
		return snprintf(out, size, "%s: %.1fx cheaper than the kernel's clock%s%s", mode,
				kernel_ns / counter_ns, kernel_what, condition);
	char gain[48];
	benefit_gain_words(kernel_ns, counter_ns, gain, sizeof gain);
	return snprintf(out, size, "%s: no gain here, %s (the kernel's clock %.1f ns, the counter %.1f ns)",
			mode, gain, kernel_ns, counter_ns);
}

void benefit_gain_words(double kernel_ns, double counter_ns, char *out, size_t size)
{
	double pct = 100.0 * (kernel_ns - counter_ns) / kernel_ns;
	if (pct < 0)
		snprintf(out, size, "%.1f%% dearer", -pct);
	else
		snprintf(out, size, "%.1f%% cheaper", pct);
}

void benefit_recommendation(const struct cost *c, unsigned min_gain_pct, char *out, size_t size)
{
	if (size == 0)
		return;
	const char *what = benefit_kernel_path(c) == KERNEL_PATH_SYSCALL ? ", a system call here" : "";
	int n = judge(out, size, "fenced", c->kernel_ns, c->fenced_ns, min_gain_pct, what, "");
	if (n < 0 || (size_t)n >= size)
		return;
	n += snprintf(out + n, size - (size_t)n, "; ");
	if ((size_t)n >= size)
		return;
	judge(out + n, size - (size_t)n, "unfenced", c->kernel_ns, c->unfenced_ns, min_gain_pct, what,
	      ", if order within each thread is enough");
}

bool benefit_kernel_cost_agrees(double now_ps, double recorded_ps)
{
	if (!(now_ps > 0) || !(recorded_ps > 0) || !isfinite(now_ps) || !isfinite(recorded_ps))
		return false;
	double apart = abs_diff_double(now_ps, recorded_ps);
	return apart * 100 <= recorded_ps * BENEFIT_KERNEL_AGREE_PCT;
}

/* Whether reading the counter pays here: the benefit gate's and the reports' pure
 * decisions over measured per-call costs. The measurements themselves are elsewhere (the
 * shim's gate at load, `tscshim calib`, `tscshim bench`); these functions only judge them,
 * so that unit tests drive them with synthetic figures. */
#ifndef CALIB_BENEFIT_H
#define CALIB_BENEFIT_H

#include <stdbool.h>
#include <stddef.h>

/* How the kernel's clock is read on this host. */
enum kernel_path {
	KERNEL_PATH_VDSO,    /* in user space (the vDSO): tens of ns */
	KERNEL_PATH_SYSCALL, /* a system call (Xen, HPET, acpi_pm, an unstable TSC): ~1 us */
};

/* Per-call costs in ns, each a median of interleaved blocks measured in one run. */
struct cost {
	double kernel_ns;   /* the real clock_gettime(CLOCK_MONOTONIC) */
	double syscall_ns;  /* the clock_gettime system call itself */
	double fenced_ns;   /* the counter path, ordered reads */
	double unfenced_ns; /* the counter path, unfenced reads */
};

/* The kernel's clock is a system call when it costs most of what the system call costs. */
enum kernel_path benefit_kernel_path(const struct cost *c);
const char *kernel_path_name(enum kernel_path path); /* "vdso" or "syscall" */

/* Whether a kernel clock timed now at now_ns a call (the cheapest of a few blocks) is read
 * the way the costs `then` say, vDSO or system call: on which side it falls of the
 * geometric mean of a vDSO read and then's system call, or of BENEFIT_VDSO_NOW_MOST vDSO
 * reads where that is less. The cheapest of a few blocks of vDSO reads comes within 1.3x
 * of a set's (another clocksource: tsc against kvm-clock, 16-27 %); a system call costs
 * 4.6x a vDSO read on Intel Xeon (tsc) and 42x on the AMD EPYC microVM (kvm-clock). Where
 * it costs less than 9 vDSO reads (bare metal: 3-5x) the mean is the lesser and decides. */
#define BENEFIT_VDSO_NOW_MOST 3
bool benefit_same_kernel_path(double now_ns, const struct cost *then);

/* Whether a kernel clock that costs now_ps per call now is the one a record measured at
 * recorded_ps: within BENEFIT_KERNEL_AGREE_PCT percent. Read a few calls at the decision,
 * it stands in for the clocksource's name (a path under /sys, three system calls): the
 * clocksources a host offers differ by more (tsc against kvm-clock: 16 % on AMD EPYC, 27 %
 * on Intel Xeon), and where none agrees, the name decides. */
#define BENEFIT_KERNEL_AGREE_PCT 10
bool benefit_kernel_cost_agrees(double now_ps, double recorded_ps);

/* True when the counter path costs at least min_gain_pct percent less than the kernel's
 * clock. Figures that are not positive and finite never pay. */
bool benefit_pays(double kernel_ns, double counter_ns, unsigned min_gain_pct);

/* "12.3% cheaper" or, where the counter costs more, "11.1% dearer": the counter against the
 * kernel's clock, as people read it. */
void benefit_gain_words(double kernel_ns, double counter_ns, char *out, size_t size);

/* One line for people, without a newline, e.g. "fenced: no gain here, the vDSO reads the
 * clock as cheaply (23.4 ns against 27.6 ns); unfenced: 2.0x cheaper, if order within
 * each thread is enough". */
void benefit_recommendation(const struct cost *c, unsigned min_gain_pct, char *out, size_t size);

#endif

/* CPUID queries behind counter_identify(): x86-64 only. */
#include "counter.h"

#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

enum {
	LEAF_BASIC_FEATURES = 0x1,
	LEAF_EXT_MAX = 0x80000000u,
	LEAF_EXT_FEATURES = 0x80000001u,
	LEAF_BRAND_FIRST = 0x80000002u,
	LEAF_BRAND_LAST = 0x80000004u,
	LEAF_POWER_MGMT = 0x80000007u,
};

static void trim_brand(char *s)
{
	size_t start = 0, len = strlen(s);
	while (s[start] == ' ')
		start++;
	while (len > start && s[len - 1] == ' ')
		len--;
	memmove(s, s + start, len - start);
	s[len - start] = '\0';
}

void counter_identify(struct counter_identity *out)
{
	unsigned a, b, c, d;
	memset(out, 0, sizeof *out);

	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	memcpy(out->vendor + 0, &b, 4);
	memcpy(out->vendor + 4, &d, 4);
	memcpy(out->vendor + 8, &c, 4);

	__cpuid(LEAF_BASIC_FEATURES, a, b, c, d);
	out->signature = a;
	out->present = (d >> 4) & 1;
	out->hypervisor = (c >> 31) & 1;

	/* Extended leaves exist only up to the advertised maximum; reading past it returns
	 * the highest basic leaf's data on Intel, i.e. garbage. */
	__cpuid(LEAF_EXT_MAX, a, b, c, d);
	unsigned ext_max = a;
	out->ordered_read = ext_max >= LEAF_EXT_FEATURES && counter_has_rdtscp();
	if (ext_max >= LEAF_POWER_MGMT) {
		__cpuid(LEAF_POWER_MGMT, a, b, c, d);
		out->invariant = (d >> 8) & 1;
	}
	if (ext_max >= LEAF_BRAND_LAST) {
		unsigned regs[12];
		for (unsigned leaf = LEAF_BRAND_FIRST; leaf <= LEAF_BRAND_LAST; leaf++) {
			unsigned *r = regs + 4 * (leaf - LEAF_BRAND_FIRST);
			__cpuid(leaf, r[0], r[1], r[2], r[3]);
		}
		memcpy(out->model, regs, 48);
		out->model[48] = '\0';
		trim_brand(out->model);
	}
}

void counter_identify_basic(struct counter_identity *out)
{
	unsigned a, b, c, d;
	memset(out, 0, sizeof *out);
	__cpuid(LEAF_BASIC_FEATURES, a, b, c, d);
	out->signature = a;
	out->present = (d >> 4) & 1;
	out->hypervisor = (c >> 31) & 1;
	__cpuid(LEAF_EXT_MAX, a, b, c, d);
	if (a >= LEAF_POWER_MGMT) {
		__cpuid(LEAF_POWER_MGMT, a, b, c, d);
		out->invariant = (d >> 8) & 1;
	}
}

bool counter_has_rdtscp(void)
{
	unsigned a, b, c, d;
	__cpuid(LEAF_EXT_MAX, a, b, c, d);
	if (a < LEAF_EXT_FEATURES)
		return false;
	__cpuid(LEAF_EXT_FEATURES, a, b, c, d);
	return (d >> 27) & 1;
}

static sigjmp_buf rdtscp_fault;

static void on_rdtscp_fault(int sig)
{
	(void)sig;
	siglongjmp(rdtscp_fault, 1);
}

bool counter_rdtscp_runs(void)
{
	if (!counter_has_rdtscp())
		return false;
	struct sigaction fault = {.sa_handler = on_rdtscp_fault}, saved;
	sigemptyset(&fault.sa_mask);
	if (sigaction(SIGILL, &fault, &saved) != 0)
		return false;
	volatile bool runs = false;
	if (sigsetjmp(rdtscp_fault, 1) == 0) {
		unsigned aux;
		(void)__builtin_ia32_rdtscp(&aux);
		runs = true;
	}
	sigaction(SIGILL, &saved, NULL);
	return runs;
}

/* Per-process counters, written at exit. Each thread counts in a slot of its own (one
 * cache line, found through a thread-local pointer), so counting writes no shared line;
 * past SLOTS threads, the last slot is shared and counted atomically. */
#include "shim.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { SLOTS = 256 };

struct slot {
	_Alignas(64) uint64_t count[STAT_CLOCKS][2]; /* [clock][served] */
};

static struct slot slots[SLOTS];
static _Atomic uint32_t slots_taken;
static __thread struct slot *my_slot __attribute__((tls_model("initial-exec")));

bool stats_enabled;
static char destination[OPTION_TEXT_MAX];

void stats_count(unsigned clock, bool served)
{
	struct slot *s = my_slot;
	if (!s) {
		uint32_t i = atomic_fetch_add_explicit(&slots_taken, 1, memory_order_relaxed);
		s = my_slot = &slots[i < SLOTS ? i : SLOTS - 1];
	}
	if (s == &slots[SLOTS - 1])
		__atomic_fetch_add(&s->count[clock][served], 1, __ATOMIC_RELAXED);
	else
		s->count[clock][served]++;
}

static void write_stats(void)
{
	uint64_t total[STAT_CLOCKS][2] = {{0}};
	for (int i = 0; i < SLOTS; i++)
		for (int c = 0; c < STAT_CLOCKS; c++)
			for (int s = 0; s < 2; s++)
				total[c][s] += __atomic_load_n(&slots[i].count[c][s], __ATOMIC_RELAXED);

	struct clock_counters cc;
	clock_counters(&cc);
	char text[1024];
	int len = snprintf(text, sizeof text, "tscshim stats pid=%d active=%d", (int)getpid(), cc.active);
	for (int c = 0; c < STAT_CLOCKS && len < (int)sizeof text; c++)
		len += snprintf(text + len, sizeof text - (size_t)len, " %s=%llu/%llu",
				c == STAT_OTHER ? "other" : clock_table[c].name,
				(unsigned long long)total[c][1],
				(unsigned long long)(total[c][0] + total[c][1]));
	if (len < (int)sizeof text)
		len += snprintf(text + len, sizeof text - (size_t)len,
				" resyncs=%llu reanchors=%llu fallbacks=%llu largest_error_ns=%llu"
				" kernel_reads=%llu lost_writes=%llu\n",
				(unsigned long long)cc.resyncs, (unsigned long long)cc.reanchors,
				(unsigned long long)cc.fallbacks,
				(unsigned long long)cc.largest_error_ns,
				(unsigned long long)cc.kernel_reads, (unsigned long long)cc.lost_writes);
	if (len > (int)sizeof text - 1)
		len = (int)sizeof text - 1;

	int fd = 2;
	if (strcmp(destination, "stderr") != 0)
		fd = open(destination, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	ssize_t ignored = write(fd, text, (size_t)len);
	(void)ignored;
	if (fd != 2)
		close(fd);
}

__attribute__((destructor)) static void stats_at_exit(void)
{
	if (stats_enabled)
		write_stats();
}

void stats_setup(const char *where)
{
	if (!where[0])
		return;
	/* The option parser bounds the text to OPTION_TEXT_MAX, the size of destination. */
	memcpy(destination, where, strlen(where) + 1);
	stats_enabled = true;
}

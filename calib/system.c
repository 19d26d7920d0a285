/* Facts the kernel publishes about time, identity, CPUs and confinement (calib/system.h). */
#define _GNU_SOURCE
#include "system.h"

#include "raw_syscall.h"

#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

/* Reads up to size - 1 bytes of a small kernel file. Returns the length, or -1. The system
 * calls themselves, not libc's open, read and close: the decision reads the clocksource's
 * name where the kernel's clock costs another figure than its record's, and libc's open is
 * a page of text the program has seldom touched (a page fault of its own, seen on Intel
 * Xeon, where the vDSO's cost wanders by more than the 10 % that asks for the name). */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -1;
	buf[0] = '\0';
	long fd = raw_syscall4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	long n = raw_syscall4(SYS_read, fd, (long)buf, (long)(size - 1), 0);
	if (raw_syscall4(SYS_close, fd, 0, 0, 0) != 0) {
		/* Nothing to do: a close that fails has still released the descriptor. */
	}
	if (n <= 0) {
		buf[0] = '\0';
		return -1;
	}
	buf[n] = '\0';
	return n;
}

static int read_line(const char *path, char *buf, size_t size)
{
	if (read_small(path, buf, size) < 0)
		return -1;
	/* Not strcspn: the shim reads the boot id at its first clock read, and that is a page
	 * of libc no other code of a typical program touches. */
	char *end = buf;
	while (*end && *end != '\n')
		end++;
	*end = '\0';
	/* trailing blanks (available_clocksource ends with a space) */
	for (size_t len = strlen(buf); len > 0 && buf[len - 1] == ' '; len--)
		buf[len - 1] = '\0';
	return 0;
}

int read_current_clocksource(char *buf, size_t size)
{
	return read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", buf, size);
}

int read_available_clocksources(char *buf, size_t size)
{
	return read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource", buf, size);
}

int read_boot_id(char *buf, size_t size)
{
	return read_line("/proc/sys/kernel/random/boot_id", buf, size);
}

int cpu_mask_allowed_of(int tid, struct cpu_mask *out)
{
	memset(out, 0, sizeof *out);
	/* The kernel copies its whole mask (nr_cpu_ids bits) or refuses with EINVAL. */
	_Static_assert(sizeof(struct cpu_mask) * 8 == CPU_MASK_BITS, "mask size");
	/* The system call itself (raw_syscall.h): the shim asks at its first clock read, and
	 * libc's wrapper is one more page of libc to touch. It returns the bytes copied. */
	long rc = raw_syscall4(SYS_sched_getaffinity, tid, sizeof out->word, (long)out->word, 0);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	int n = (int)cpu_mask_count(out);
	return n > 0 ? n : -1;
}

int cpu_mask_allowed(struct cpu_mask *out)
{
	return cpu_mask_allowed_of(0, out);
}

int cpu_mask_next(const struct cpu_mask *m, int after)
{
	unsigned cpu = (unsigned)(after + 1);
	while (cpu < CPU_MASK_BITS) {
		uint64_t w = m->word[cpu / 64] >> (cpu % 64);
		if (w)
			return (int)(cpu + (unsigned)__builtin_ctzll(w));
		cpu = (cpu / 64 + 1) * 64;
	}
	return -1;
}

uint32_t cpu_mask_count(const struct cpu_mask *m)
{
	uint32_t n = 0;
	for (int i = 0; i < CPU_MASK_WORDS; i++)
		n += (uint32_t)__builtin_popcountll(m->word[i]);
	return n;
}

bool cpu_mask_is_subset(const struct cpu_mask *part, const struct cpu_mask *whole)
{
	for (int i = 0; i < CPU_MASK_WORDS; i++)
		if (part->word[i] & ~whole->word[i])
			return false;
	return true;
}

bool cpu_mask_equal(const struct cpu_mask *a, const struct cpu_mask *b)
{
	return memcmp(a->word, b->word, sizeof a->word) == 0;
}

size_t cpu_mask_to_hex(const struct cpu_mask *m, char *buf, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = 0;
	for (int nibble = CPU_MASK_BITS / 4 - 1; nibble >= 0; nibble--) {
		unsigned d = (unsigned)(m->word[nibble / 16] >> (nibble % 16 * 4)) & 15;
		if (d == 0 && len == 0 && nibble > 0)
			continue;
		if (len + 1 < size)
			buf[len] = digits[d];
		len++;
	}
	if (size)
		buf[len < size ? len : size - 1] = '\0';
	return len;
}

int cpu_mask_from_hex(const char *s, size_t len, struct cpu_mask *out)
{
	if (len == 0 || len > CPU_MASK_HEX_MAX || (len > 1 && s[0] == '0'))
		return -1;
	struct cpu_mask m;
	memset(&m, 0, sizeof m);
	for (size_t i = 0; i < len; i++) {
		unsigned d;
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -1;
		size_t nibble = len - 1 - i;
		m.word[nibble / 16] |= (uint64_t)d << (nibble % 16 * 4);
	}
	*out = m;
	return 0;
}

/* "0-3,8,10-11\n": the kernel's list format. */
/* A kernel CPU list ("0-3,8,10-11") from path into out. Returns the count, or -1. */
static int cpu_mask_from_list_file(const char *path, struct cpu_mask *out)
{
	char buf[512];
	memset(out, 0, sizeof *out);
	if (read_small(path, buf, sizeof buf) < 0)
		return -1;
	const char *p = buf;
	while (*p >= '0' && *p <= '9') {
		unsigned long lo = 0, hi;
		while (*p >= '0' && *p <= '9' && lo < CPU_MASK_BITS)
			lo = lo * 10 + (unsigned long)(*p++ - '0');
		hi = lo;
		if (*p == '-') {
			p++;
			hi = 0;
			while (*p >= '0' && *p <= '9' && hi < CPU_MASK_BITS)
				hi = hi * 10 + (unsigned long)(*p++ - '0');
		}
		if (hi < lo || hi >= CPU_MASK_BITS)
			return -1;
		for (unsigned long c = lo; c <= hi; c++)
			cpu_mask_add(out, (unsigned)c);
		if (*p == ',')
			p++;
	}
	return (int)cpu_mask_count(out);
}

int cpu_mask_online(struct cpu_mask *out)
{
	return cpu_mask_from_list_file("/sys/devices/system/cpu/online", out);
}

int cpu_mask_possible(struct cpu_mask *out)
{
	return cpu_mask_from_list_file("/sys/devices/system/cpu/possible", out);
}

bool cpu_mask_holds_every_possible(const struct cpu_mask *set)
{
	struct cpu_mask possible;
	return cpu_mask_possible(&possible) >= 1 && cpu_mask_is_subset(&possible, set);
}

int read_seccomp_mode(void)
{
	/* /proc/self/status is about 1.5 KB; it is scanned in small pieces (this runs on the
	 * shim's load path, where stack is scarce), each starting with the previous one's
	 * last bytes so that the key is found across a boundary. */
	static const char key[] = "\nSeccomp:";
	enum { KEEP = sizeof key + 2 };
	char buf[256];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t have = 0;
	int mode = -1;
	for (int reads = 0; reads < 64; reads++) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		const char *line = strstr(buf, key);
		if (line) {
			line += sizeof key - 1;
			while (*line == '\t' || *line == ' ')
				line++;
			if (*line >= '0' && *line <= '2') {
				mode = *line - '0';
				break;
			}
			if (*line != '\0')
				break;
		}
		if (have > KEEP) {
			memmove(buf, buf + have - KEEP, KEEP);
			have = KEEP;
		}
	}
	close(fd);
	return mode;
}

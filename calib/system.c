#include "system.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int read_line(const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -1;
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = '\0';
		return -1;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
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

/* A server for ab's tests: listens on 127.0.0.1:PORT and answers each line with the
 * monotonic clock it read (so that a preloaded shim serves its calls); appends its pid to
 * PIDFILE, so a test can check it is gone afterwards; exits 0 on SIGTERM, so the shim
 * writes its stats.
 *   probe_ab_server PORT PIDFILE [--ready-file F] [--delay-ms N] [--ignore-term]
 *                   [--exit-after-ms N] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: probe_ab_server PORT PIDFILE [--ready-file F] [--delay-ms N] [--ignore-term] [--exit-after-ms N]\n");
		return 2;
	}
	const char *ready_file = NULL;
	long delay_ms = 0, exit_after_ms = -1;
	int ignore_term = 0;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc)
			ready_file = argv[++i];
		else if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc)
			delay_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--exit-after-ms") == 0 && i + 1 < argc)
			exit_after_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--ignore-term") == 0)
			ignore_term = 1;
		else {
			fprintf(stderr, "probe_ab_server: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	FILE *pf = fopen(argv[2], "a");
	if (!pf)
		return 1;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	struct sigaction sa = {.sa_handler = ignore_term ? SIG_IGN : on_term};
	sigaction(SIGTERM, &sa, NULL);
	long long started = now_ms();
	if (delay_ms > 0)
		usleep((useconds_t)delay_ms * 1000);

	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa_in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	inet_pton(AF_INET, "127.0.0.1", &sa_in.sin_addr);
	if (bind(ls, (struct sockaddr *)&sa_in, sizeof sa_in) != 0 || listen(ls, 64) != 0) {
		fprintf(stderr, "probe_ab_server: port %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (ready_file) {
		FILE *r = fopen(ready_file, "w");
		if (r)
			fclose(r);
	}
	fprintf(stderr, "probe_ab_server: listening on 127.0.0.1:%s\n", argv[1]);
	enum { MAX = 64 };
	struct pollfd fds[MAX] = {{.fd = ls, .events = POLLIN}};
	int n = 1;
	while (!stop) {
		if (exit_after_ms >= 0 && now_ms() - started >= exit_after_ms)
			return 3;
		if (poll(fds, (nfds_t)n, 20) <= 0)
			continue;
		if ((fds[0].revents & POLLIN) && n < MAX) {
			int c = accept(ls, NULL, NULL);
			if (c >= 0)
				fds[n++] = (struct pollfd){.fd = c, .events = POLLIN};
		}
		for (int i = 1; i < n; i++) {
			if (!fds[i].revents)
				continue;
			char buf[4096];
			ssize_t got = read(fds[i].fd, buf, sizeof buf);
			if (got <= 0) {
				close(fds[i].fd);
				fds[i--] = fds[--n];
				continue;
			}
			for (ssize_t k = 0; k < got; k++)
				if (buf[k] == '\n') {
					char reply[64];
					int len = snprintf(reply, sizeof reply, "%lld\n", now_ms());
					if (write(fds[i].fd, reply, (size_t)len) != len)
						break;
				}
		}
	}
	fprintf(stderr, "probe_ab_server: stopped\n");
	return 0;
}

/* A driver for ab's tests: sends REQUESTS lines to 127.0.0.1:PORT, one at a time, and
 * prints its throughput as a benchmark would ("throughput: N requests per second").
 *   probe_ab_client PORT REQUESTS [--exit N] [--sleep-ms N] [--no-metric] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: probe_ab_client PORT REQUESTS [--exit N] [--sleep-ms N] [--no-metric]\n");
		return 2;
	}
	int exit_status = 0, metric = 1;
	long sleep_ms = 0, requests = atol(argv[2]);
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc)
			exit_status = atoi(argv[++i]);
		else if (strcmp(argv[i], "--sleep-ms") == 0 && i + 1 < argc)
			sleep_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--no-metric") == 0)
			metric = 0;
		else {
			fprintf(stderr, "probe_ab_client: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
		perror("probe_ab_client: connect");
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char buf[128];
	for (long i = 0; i < requests; i++) {
		if (write(s, "x\n", 2) != 2 || read(s, buf, sizeof buf) <= 0) {
			fprintf(stderr, "probe_ab_client: the server went away after %ld requests\n", i);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (sleep_ms > 0)
		usleep((useconds_t)sleep_ms * 1000);
	double s_elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* Noise of the kind a real benchmark prints, around the figure. */
	printf("{\"not\": \"json\"\n\"quote\" \\ done\n");
	if (metric)
		printf("throughput: %.1f requests per second\n", (double)requests / (s_elapsed > 0 ? s_elapsed : 1e-9));
	return exit_status;
}

/* --server: the server of each run, started under the variant, waited for until it is
 * ready, and stopped after the command. */
#define _GNU_SOURCE
#include "ab_server.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int ab_ready_parse(struct ab_ready *r, char *err, size_t err_size)
{
	if (!r->tcp_spec)
		return 0;
	const char *spec = r->tcp_spec;
	if (strncmp(spec, "tcp:", 4) != 0) {
		snprintf(err, err_size, "--ready '%.64s': expected tcp:PORT or tcp:ADDRESS:PORT", spec);
		return -1;
	}
	spec += 4;
	const char *colon = strrchr(spec, ':');
	snprintf(r->host, sizeof r->host, "127.0.0.1");
	if (colon) {
		snprintf(r->host, sizeof r->host, "%.*s", (int)(colon - spec), spec);
		spec = colon + 1;
	}
	struct in_addr a;
	char *end;
	long port = strtol(spec, &end, 10);
	if (inet_pton(AF_INET, r->host, &a) != 1 || !*spec || *end || port < 1 || port > 65535) {
		snprintf(err, err_size, "--ready '%.64s': expected tcp:PORT or tcp:ADDRESS:PORT (numeric IPv4, port 1..65535)",
			 r->tcp_spec);
		return -1;
	}
	r->port = (int)port;
	return 0;
}

bool ab_is_ready(const struct ab_ready *r)
{
	if (r->file)
		return access(r->file, F_OK) == 0;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->port)};
	inet_pton(AF_INET, r->host, &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return ok;
}

/* Waits for readiness while the server lives: 0 ready, -1 with why in err, 2 interrupted. */
static int wait_ready(const struct ab_ready *r, struct ab_child *server, char *err, size_t err_size)
{
	double deadline = cli_seconds_now() + r->timeout;
	for (;;) {
		if (ab_is_ready(r))
			return 0;
		int rc = ab_wait(server, 0.01, NULL);
		if (rc == 2)
			return 2;
		if (rc == 0) {
			char how[32];
			ab_exit_text(how, sizeof how, server->status);
			snprintf(err, err_size, "the server exited before it was ready (%s)", how);
			return -1;
		}
		if (cli_seconds_now() >= deadline) {
			snprintf(err, err_size, "the server was not ready (%s%s) after %g s", r->file ? "file " : "",
				 r->file ? r->file : r->tcp_spec, r->timeout);
			return -1;
		}
	}
}

int ab_server_start(const struct ab_spawn *s, const struct ab_ready *ready, double grace, const char *run,
		    struct ab_child *server)
{
	char why[256];
	if (ready->file)
		unlink(ready->file);
	else if (ab_is_ready(ready)) {
		fprintf(stderr, "tscshim ab: %s: something listens there already, before the server of run %s started\n",
			ready->tcp_spec, run);
		return -1;
	}
	if (ab_start(s, server) != 0)
		return -1;
	int rc = wait_ready(ready, server, why, sizeof why);
	if (rc == 0)
		return 0;
	bool killed;
	ab_stop(server, grace, &killed);
	if (rc == 2)
		return 2;
	fprintf(stderr, "tscshim ab: run %s: %s; its output is in %s\n", run, why, s->err);
	return -1;
}

/* Its leader is often the shell that started it, which SIGTERM ends by signal; what
 * counts is whether SIGTERM sufficed. */
bool ab_server_stop(struct ab_child *server, double grace, char *how, size_t how_size)
{
	bool early = ab_wait(server, 0, NULL) == 0;
	bool killed;
	ab_stop(server, grace, &killed);
	char status[32];
	ab_exit_text(status, sizeof status, server->status);
	if (killed)
		snprintf(how, how_size, "killed after %g s", grace);
	else
		snprintf(how, how_size, "%s (%s)", early ? "ended by itself" : "terminated", status);
	return early;
}

/* --server CMD: a server started under the variant before each run, waited for until it
 * is ready (a TCP port accepts, or a file exists), stopped after the run. Internal to the
 * command. */
#ifndef CLI_AB_SERVER_H
#define CLI_AB_SERVER_H

#include "ab_process.h"

#include <stdbool.h>
#include <stddef.h>

/* Readiness: "tcp:PORT" (127.0.0.1) or "tcp:ADDR:PORT" (numeric IPv4), or a file. */
struct ab_ready {
	const char *tcp_spec, *file;
	char host[64];
	int port;
	double timeout;
};
int ab_ready_parse(struct ab_ready *r, char *err, size_t err_size);
bool ab_is_ready(const struct ab_ready *r);

/* Starts the server as s says and waits until it is ready. 0 ready; -1 after one line on
 * stderr naming run (the server is stopped); 2 if a signal asked ab to stop. */
int ab_server_start(const struct ab_spawn *s, const struct ab_ready *ready, double grace, const char *run,
		    struct ab_child *server);

/* Stops the server after a run: into how, how it ended ("terminated (signal 15)", "ended
 * by itself (exit 0)", "killed after 5 s"). Returns true if it had ended before it was
 * asked to stop, which fails the run. */
bool ab_server_stop(struct ab_child *server, double grace, char *how, size_t how_size);

#endif

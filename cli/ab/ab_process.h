/* The processes `tscshim ab` starts (the command, a server, the setup, prepare and
 * cleanup commands, the decision probe): started under a variant's environment as the
 * leader of a process group of their own, waited for on a pidfd, stopped group and all.
 * Internal to the command. */
#ifndef CLI_AB_PROCESS_H
#define CLI_AB_PROCESS_H

#include "ab_variant.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

/* Set by the signal handler: the signal that asked ab to stop (SIGINT, SIGTERM, SIGHUP). */
extern volatile sig_atomic_t ab_interrupted;
void ab_catch_signals(void);

struct ab_spawn {
	char *const *argv;             /* the program, or NULL with shell */
	const char *shell;             /* run as /bin/sh -c SHELL */
	const char *out, *err;         /* files for stdout and stderr (truncated) */
	const struct ab_variant *variant; /* NULL: the environment as it is, no shim */
	const char *library;           /* libtscshim.so, preloaded when variant->shim */
	const char *stats;             /* TSCSHIM_STATS of a shim process */
};

/* A started process, leader of a process group of its own (so that what it starts is
 * stopped with it); stdin is /dev/null. */
struct ab_child {
	pid_t pid;
	int pidfd;
	bool reaped;
	int status;
};

/* Returns 0, or -1 with one line on stderr. */
int ab_start(const struct ab_spawn *s, struct ab_child *c);
/* Waits until the child exits (0; status, rusage), timeout seconds pass (1; timeout < 0:
 * none) or a signal asks ab to stop (2). */
int ab_wait(struct ab_child *c, double timeout, struct rusage *ru);
/* SIGTERM to the group, SIGKILL to what is left after grace seconds; reaps the child.
 * *killed: SIGKILL was needed. */
void ab_stop(struct ab_child *c, double grace, bool *killed);

/* "exit N" or "signal N" (else "status 0xN") for a status as wait4 gave it. */
void ab_exit_text(char *buf, size_t size, int status);

#endif

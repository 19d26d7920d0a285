/* The runs of `tscshim ab`: one run of the command under a variant (prepare, server,
 * command, stop) and what it left (status, times, metrics, the TSC's counts); the setup
 * and cleanup commands; what ab learns before the first run (the shim's decision under
 * each variant, the machine). Internal to the command. */
#ifndef CLI_AB_RUN_H
#define CLI_AB_RUN_H

#include "ab_config.h"
#include "ab_tsc.h"

#include <stdbool.h>
#include <stddef.h>

struct ab_run {
	int variant, pair; /* pair: the round, from 1 */
	double wall, user, sys; /* s */
	int status;             /* as wait4 gave it */
	bool timed_out;
	char failure[192];      /* why it failed beyond its status (a missing metric...); "" if not */
	double metric[AB_MAX_METRICS];
	bool has_metric[AB_MAX_METRICS];
	struct ab_tsc tsc, server_tsc;
	char server_stop[64];   /* how the server ended: "terminated (signal 15)", "killed after 5 s" */
};
bool ab_run_ok(const struct ab_run *r);
/* "exit N", "signal N" or "timeout". */
void ab_status_text(char *buf, size_t size, const struct ab_run *r);

/* Runs one run of the command under variant v (prepare, server, command, stop), fills r.
 * Returns 0; -1 if ab must stop (one line said why); 2 if interrupted. */
int ab_run_once(const struct ab_config *c, int v, int pair, bool warmup, struct ab_run *r);
/* --setup or --cleanup ("setup", "cleanup"): 0 or -1 after one line; 2 if interrupted. */
int ab_run_hook(const struct ab_config *c, const char *what, const char *command);

/* Runs `tscshim __ab-decision` under each shim variant into c->decision. */
void ab_learn_decisions(struct ab_config *c);
void ab_machine_read(struct ab_machine *m);

#endif

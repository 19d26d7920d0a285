/* tscshim ps [--json | --prometheus] [-p PID[,PID...]]...: the processes that have the
 * shim loaded, what each is doing, and a summary (ps.h). The output is made whole in
 * memory, then written at once: a reader (a cron job's file for node_exporter) gets all
 * of it or, where the write fails, an exit status that says so. */
#include "ps.h"
#include "cli.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum ps_format { PS_TABLE, PS_JSON, PS_PROMETHEUS };

static void usage(FILE *out)
{
	fprintf(out, "usage: tscshim ps [--json | --prometheus] [-p PID[,PID...]]...\n"
		     "One line per running process that has the shim loaded: its state (serving, passing\n"
		     "through and why, undecided and its reads so far), where its verdict came from, when it\n"
		     "decided and what that cost, re-synchronizations, fallbacks and the reads served where\n"
		     "it counts them; then a summary. Read from outside: the processes are not stopped,\n"
		     "signalled or traced. As root every process; as a user, those the kernel lets it read.\n"
		     "--json: one document. --prometheus: node_exporter's textfile format.\n"
		     "-p PID[,PID...]: only these processes (exit status 1 if one has no shim loaded).\n");
}

/* "12,345": appended to pids. 0, or -1 after one line on stderr. */
static int parse_pids(const char *text, int **pids, size_t *n)
{
	const char *p = text;
	do {
		size_t len = strcspn(p, ",");
		char one[16];
		long pid;
		if (len == 0 || len >= sizeof one) {
			fprintf(stderr, "tscshim ps: -p '%s': need process ids, comma-separated\n", text);
			return -1;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		if (cli_parse_long(one, 1, INT_MAX, &pid) != 0) {
			fprintf(stderr, "tscshim ps: -p '%s': '%s' is not a process id\n", text, one);
			return -1;
		}
		/* Each process once, however often it is named. */
		bool named = false;
		for (size_t i = 0; i < *n; i++)
			named = named || (*pids)[i] == (int)pid;
		p += len;
		if (named)
			continue;
		int *bigger = realloc(*pids, (*n + 1) * sizeof **pids);
		if (!bigger) {
			fprintf(stderr, "tscshim ps: out of memory\n");
			return -1;
		}
		*pids = bigger;
		(*pids)[(*n)++] = (int)pid;
	} while (*p++ == ',');
	return 0;
}

/* The output to stdout, flushed: true, or false after one line on stderr (a full disk, a
 * closed pipe: the reader has not got it all). */
static bool written_out(const char *text, size_t len)
{
	errno = 0;
	bool ok = fwrite(text, 1, len, stdout) == len;
	ok = fflush(stdout) == 0 && ok && !ferror(stdout);
	if (!ok)
		fprintf(stderr, "tscshim ps: cannot write the output: %s\n", errno ? strerror(errno) : "write error");
	return ok;
}

int command_ps(int argc, char **argv)
{
	enum ps_format format = PS_TABLE;
	int *pids = NULL;
	size_t npids = 0;
	int status = EXIT_USAGE;
	struct ps_process *list = NULL;
	size_t n = 0;
	for (int i = 1; i < argc; i++) {
		const char *value;
		int m = cli_option_text("ps", argc, argv, &i, "-p", &value);
		if (m == 0)
			m = cli_option_text("ps", argc, argv, &i, "--pid", &value);
		if (m < 0)
			goto out;
		if (m > 0) {
			if (parse_pids(value, &pids, &npids) != 0)
				goto out;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			status = 0;
			goto out;
		} else if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--prometheus") == 0) {
			enum ps_format f = argv[i][2] == 'j' ? PS_JSON : PS_PROMETHEUS;
			if (format != PS_TABLE && format != f) {
				fprintf(stderr, "tscshim ps: --json and --prometheus exclude each other\n");
				goto out;
			}
			format = f;
		} else {
			fprintf(stderr, "tscshim ps: unknown argument '%s' (try tscshim ps --help)\n", argv[i]);
			goto out;
		}
	}
	struct ps_scan_totals totals;
	int missing = ps_scan(pids, npids, &list, &n, &totals);
	if (missing < 0) {
		status = 1;
		goto out;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out) {
		fprintf(stderr, "tscshim ps: out of memory\n");
		status = 1;
		goto out;
	}
	if (format == PS_JSON)
		ps_write_json(out, list, n, &totals);
	else if (format == PS_PROMETHEUS)
		ps_write_prometheus(out, list, n, &totals);
	else
		ps_write_table(out, list, n, &totals);
	bool made = !ferror(out);
	made = fclose(out) == 0 && made;
	status = !made ? 1 : written_out(text, len) ? (missing ? 1 : 0) : 1;
	if (!made)
		fprintf(stderr, "tscshim ps: out of memory\n");
	free(text);
out:
	free(pids);
	free(list);
	return status;
}

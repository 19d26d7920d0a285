/* `tscshim ps`: the processes that have the shim loaded, each read from outside through
 * its state block (calib/state_block.h): the process is not stopped, signalled, traced or
 * asked anything. One module a job:
 *   ps_cmd.c     the command: its options, the scan, which output
 *   ps_scan.c    /proc: the processes, their maps, their memory (the system calls)
 *   ps_image.c   pure: a maps line, the shim's name, the image's notes, the block's fields
 *   ps_reason.c  pure: a decision's reason code (or an earlier block's text) to its short,
 *                stable key (one table)
 *   ps_report.c  pure: the table, --json and --prometheus, and the summary they share;
 *                the texts a process chose (its name, its library's path, its reason)
 *                made safe for each reader there, and nowhere else (they are kept raw) */
#ifndef CLI_PS_H
#define CLI_PS_H

#include "state_block.h"
#include "tscshim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a process that has the shim loaded is doing, as ps reports it. */
enum ps_state {
	PS_SERVING,       /* the counter serves its clocks */
	PS_PASSING,       /* decided, and every call goes to the kernel's clock (reason_key) */
	PS_UNDECIDED,     /* not decided yet: its reads so far */
	PS_OTHER_VERSION, /* a shim without a block this reader knows (note says which) */
	PS_UNREADABLE,    /* its memory may not be read by this user (denied says why) */
	PS_SKIPPED,       /* not read: reading would wait on a file system (note says why) */
	PS_STATES
};

/* Why the kernel would not let this user look into a process. */
enum ps_denied {
	PS_DENIED_OTHER_USER,   /* another user's process */
	PS_DENIED_PTRACE_SCOPE, /* Yama's ptrace_scope: only a process's ancestors may read it */
	PS_DENIED_NOT_PERMITTED, /* any other refusal: not dumpable (setuid, or it said so), another user namespace */
	PS_DENIEDS
};

/* When the decision was made. */
enum ps_when { PS_AT_READ, PS_AT_LOAD, PS_AT_QUERY };

struct ps_process {
	int pid;
	unsigned uid;             /* effective */
	/* Texts as the process (or the password database) gave them, any bytes but NUL: each
	 * output makes them safe for its reader (ps_report.c). */
	char user[33];            /* the name, or the number */
	char command[17];         /* /proc/PID/comm (the kernel cuts it at 15 bytes, maybe
	                           * mid-character: an incomplete last character dropped) */
	char library[256];        /* the shim's path as the process mapped it, cut at a
	                           * character's boundary */
	char build_id[41];        /* its GNU build-id in hex, "" where it has none */
	enum ps_state state;
	char note[96];            /* PS_OTHER_VERSION: which ("no state block", "state layout 3");
	                           * PS_SKIPPED: why */
	enum ps_denied denied;    /* PS_UNREADABLE */
	/* PS_UNDECIDED: reads of served clocks so far, each thread's shared 64 at a time. */
	uint64_t reads_before_decision;
	/* PS_SERVING and PS_PASSING: the decision. */
	bool serving, not_worth_it, fenced;
	uint32_t served;          /* bit c: enum served_clock c */
	int source;               /* enum tscshim_source */
	enum ps_when when;
	uint64_t at_read, decide_ns;
	char reason[TSCSHIM_REASON_SIZE]; /* the text, for people: raw */
	bool reason_code_known;   /* a block of layout 2: reason_code says why */
	uint32_t reason_code;     /* enum state_reason */
	const char *reason_key;   /* PS_PASSING: ps_reason_key's */
	/* What the clock counted so far (every state that read a block). */
	uint64_t resyncs, reanchors, stops, kernel_reads, lost_writes, largest_error_ns;
	bool stopped_uncovered;
	/* Per-clock stops, where the block has them (stops_known; an earlier build's does
	 * not): bit c, enum served_clock c stopped, at the start or since (ps_classify keeps
	 * only the decision's served clocks); why, per clock (enum tscshim_stop); reads of a
	 * stopped clock held at what it had served. */
	bool stops_known;
	uint32_t stopped_clocks;
	uint64_t stop_cause[32];
	uint64_t held_reads;
	/* Times a stopped clock served again (resumes_known: a block of layout 2). */
	bool resumes_known;
	uint64_t resumes;
	/* Times the hypervisor's vmclock marker stopped the counter (disruptions_known: a
	 * block that says where the count lies). */
	bool disruptions_known;
	uint64_t disruptions;
	/* Calls counted where TSCSHIM_STATS is set (counted): served from the counter, all. */
	bool counted;
	uint64_t served_reads, calls;
};

/* ---- ps_image.c ---- */

/* One line of /proc/PID/maps. path points into the line ("" for an anonymous mapping),
 * without a trailing " (deleted)", which sets deleted. */
struct ps_mapping {
	uint64_t start, end, offset, inode;
	unsigned dev_major, dev_minor;
	bool readable, writable;
	bool deleted;
	const char *path;
};
/* Parses line (NUL-terminated, no newline; changed in place): 0, or -1 if malformed. */
int ps_maps_parse(char *line, struct ps_mapping *out);

/* True for the shim's own names: libtscshim.so, libtscshim.so.N[.N...] (installed) and
 * the test build's libtscshim-hooks.so; not for other objects named libtscshim-*. */
bool ps_is_shim_path(const char *path);

/* Reads a process's memory: 0 with len bytes at address in buf, or -1 (errno: ESRCH the
 * process is gone, EIO nothing mapped there, EAGAIN not in memory: reading it could wait
 * on the file system that holds it, so it is not read). */
struct ps_memory {
	int (*read)(void *ctx, uint64_t address, void *buf, size_t len);
	void *ctx;
};

/* The shim's image in a process: the load bias, the span its segments take, where its
 * writable segment's file-backed part lies, the block (0: no note), the build-id. */
struct ps_image {
	uint64_t bias, low, high;
	uint64_t data_low, data_high; /* writable PT_LOAD, file-backed part, in the process */
	uint64_t block;
	char build_id[41];
};
/* The image whose first page (the ELF header) is mapped at first_page: 0, or -1 when the
 * memory is not an ELF image of this machine's kind (errno 0: not the shim, whatever its
 * name) or could not be read (errno set by the read). */
int ps_image_read(const struct ps_memory *m, uint64_t first_page, struct ps_image *out);

/* What reading the block gave. */
enum ps_block_result {
	PS_BLOCK_READ,       /* p's state and fields filled */
	PS_BLOCK_NONE,       /* no note: a shim from before the block (p->note says so) */
	PS_BLOCK_OTHER,      /* a block of another layout, or not one at all (p->note says so) */
	PS_BLOCK_FAILED,     /* a read failed (errno): the process may be gone */
};
/* Reads the block of image into p (state, decision, tally, counts): layout 2, or an
 * earlier build's layout 1. Every address the block holds is checked to lie in the
 * image, every offset within its object. */
enum ps_block_result ps_block_read(const struct ps_memory *m, const struct ps_image *image, struct ps_process *p);

/* The state of a process whose decision was read (serving and the fields after it set):
 * serving while the decision serves some clock that has not stopped, else passing through,
 * with its reason_key. Where the block says which clocks stopped (stops_known),
 * stopped_clocks is cut to the decision's served clocks; where it does not (an earlier
 * build of layout 1), any stop at all (`stops`, `stopped_uncovered`) is taken for the
 * whole line's, as that build's watchdog stopped it. */
void ps_classify(struct ps_process *p);

/* Reads len bytes until two reads in a row agree (at most a few tries): counters that a
 * process updates while they are read are never torn. 0, or -1 (errno). */
int ps_read_settled(const struct ps_memory *m, uint64_t address, void *buf, size_t len);

/* The effective uid on the "Uid:" line of /proc/PID/status text: 0, or -1. */
int ps_status_uid(const char *status_text, unsigned *uid);

/* Why access was denied: another user's process, else ptrace_scope (>= 1), else not
 * dumpable. */
enum ps_denied ps_denied_why(unsigned process_uid, unsigned my_uid, int ptrace_scope);

/* ---- ps_reason.c ---- */

/* The short, stable key of a decided process's state: for a process that passes through,
 * of its reason (the table in ps_reason.c: by its code where the block has one, else by
 * its text, an earlier build's; "other" for one it does not know), and for
 * one whose serving stopped, its stop's: MONOTONIC's cause (ps_stop_key), else the first
 * stopped clock's; for an earlier build's block, which has no causes, "watchdog" or
 * "affinity". */
const char *ps_reason_key(const struct ps_process *p);
/* Every key, in the table's order, then NULL: for the summary and the metrics. */
const char *ps_reason_key_at(size_t i);
/* The key of a reason code (enum state_reason); "other" for one this reader does not
 * know, or STATE_REASON_UNKNOWN. */
const char *ps_reason_code_key(uint32_t code);
/* The key a layout-1 block's reason text begins with: the table's `starts`. */
const char *ps_reason_text_key(const char *text);
/* Why a served clock stopped (enum tscshim_stop), as a key of the same table:
 * "unreadable", "noisy", "behind", "jumps", "affinity", "corrupt", "disrupted"; "other" for a cause
 * this reader does not know. */
const char *ps_stop_key(uint64_t cause);

/* ---- ps_report.c ---- */

/* What one scan found beyond the processes listed. */
struct ps_scan_totals {
	unsigned not_inspected[PS_DENIEDS]; /* processes whose maps this user may not read */
	unsigned exited;                    /* processes that exited while being read */
};

/* A denial in the table's words: "another user's", "ptrace_scope", "not permitted". */
const char *ps_denied_words(enum ps_denied d);

/* The outputs. Whatever bytes the processes' texts hold, the table holds no control
 * character (C0, DEL, C1 as one byte or as UTF-8: escaped as \xNN) and --json is valid
 * UTF-8 (control characters escaped, invalid bytes U+FFFD); sums saturate, and a count no
 * process can have reached (PS_COUNT_NOT_REAL and above) is left out of them, said so. */
#define PS_COUNT_NOT_REAL (UINT64_C(1) << 62)
void ps_write_table(FILE *out, const struct ps_process *p, size_t n, const struct ps_scan_totals *t);
void ps_write_json(FILE *out, const struct ps_process *p, size_t n, const struct ps_scan_totals *t);
void ps_write_prometheus(FILE *out, const struct ps_process *p, size_t n, const struct ps_scan_totals *t);

/* Text made safe for a terminal into buf (NUL-terminated, cut at a character's boundary
 * to fit): valid UTF-8 passes, a control character or a byte that is not part of a valid
 * character becomes \xNN for each byte, a backslash \\. */
void ps_terminal_text(char *buf, size_t size, const char *text);
/* text as a JSON string, quoted: valid UTF-8 whatever text holds. */
void ps_json_string(FILE *out, const char *text);
/* Cuts text (NUL-terminated) to at most max bytes, at a character's boundary, and drops an
 * incomplete character at its end (a cut made elsewhere, as the kernel's of a name). */
void ps_utf8_cut(char *text, size_t max);

/* "38 us", "2.4 us", "25.1 ms": a decision's duration. */
void ps_format_duration(char *buf, size_t size, uint64_t ns);

/* ---- ps_scan.c ---- */

/* The processes to look at (pids, or every process where count is 0), each looked into:
 * those with the shim loaded appended to *list (grown with realloc, *n of them). For each
 * requested pid that is not listed, one line on stderr (no such process, not loaded,
 * could not look into it). Returns the number of requested pids not listed, or -1 with
 * one line on stderr when /proc cannot be read. */
int ps_scan(const int *pids, size_t count, struct ps_process **list, size_t *n, struct ps_scan_totals *t);

#endif

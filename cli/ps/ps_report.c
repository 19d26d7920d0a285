/* What `tscshim ps` prints, from the processes read and the scan's totals: the table with
 * its summary line, --json (one document) and --prometheus (the text exposition format
 * that node_exporter's textfile collector reads). Pure: the unit tests drive it with
 * made-up processes.
 *
 * Every text a process chose (its name, its library's path, its decision's reason) and
 * every count it holds may be forged by its owner, any user of the machine: each output
 * holds for its reader whatever they are. The table escapes every control character (an
 * operator's terminal obeys them), --json is valid UTF-8, and the sums neither wrap nor
 * take in a count no process could have reached. Prometheus labels are this file's own
 * words, never a process's. */
#include "ps.h"

#include "clocks.h"
#include "report.h"

#include <string.h>

static const char *const state_names[PS_STATES] = {
	[PS_SERVING] = "serving",
	[PS_PASSING] = "passing_through",
	[PS_UNDECIDED] = "undecided",
	[PS_OTHER_VERSION] = "other_version",
	[PS_UNREADABLE] = "unreadable",
	[PS_SKIPPED] = "skipped",
};

/* A denial's name (the outputs' keys and labels) and words (the table's). */
static const struct {
	const char *name, *words;
} denials[PS_DENIEDS] = {
	[PS_DENIED_OTHER_USER] = {"another_user", "another user's"},
	[PS_DENIED_PTRACE_SCOPE] = {"ptrace_scope", "ptrace_scope"},
	[PS_DENIED_NOT_PERMITTED] = {"not_permitted", "not permitted"},
};

const char *ps_denied_words(enum ps_denied d)
{
	return denials[d].words;
}

/* ---- texts a process chose, made safe ---- */

/* The length of the valid UTF-8 character at s (1 to 4: no overlong form, no surrogate,
 * nothing beyond U+10FFFF), or 0 where s does not begin one (the NUL ends any). */
static size_t utf8_char_length(const unsigned char *s)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned char low = 0x80, high = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		low = c == 0xe0 ? 0xa0 : 0x80;
		high = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		low = c == 0xf0 ? 0x90 : 0x80;
		high = c == 0xf4 ? 0x8f : 0xbf;
	} else
		return 0;
	if (s[1] < low || s[1] > high)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* True where s, to its end, is the start of a character cut short: a lead byte and fewer
 * continuation bytes than it needs. */
static bool utf8_cut_short(const unsigned char *s)
{
	size_t need = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	size_t have = 1;
	while (s[have] >= 0x80 && s[have] <= 0xbf)
		have++;
	return need && s[have] == '\0' && have < need;
}

/* A C0 control, DEL, or a C1 control (U+0080-U+009F) as the character of n bytes at s. */
static bool control_character(const unsigned char *s, size_t n)
{
	return (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

void ps_utf8_cut(char *text, size_t max)
{
	unsigned char *s = (unsigned char *)text;
	for (size_t i = 0; s[i];) {
		size_t n = utf8_char_length(s + i);
		if (n == 0 && utf8_cut_short(s + i)) {
			s[i] = '\0';
			return;
		}
		n = n ? n : 1; /* a byte of no character: a unit of its own */
		if (i + n > max) {
			s[i] = '\0';
			return;
		}
		i += n;
	}
}

void ps_terminal_text(char *buf, size_t size, const char *text)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)text;
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; s[i];) {
		size_t n = utf8_char_length(s + i);
		bool escape = n == 0 || control_character(s + i, n);
		n = n ? n : 1;
		char piece[16];
		size_t plen = 0;
		if (escape) {
			for (size_t k = 0; k < n; k++) {
				piece[plen++] = '\\';
				piece[plen++] = 'x';
				piece[plen++] = hex[s[i + k] >> 4];
				piece[plen++] = hex[s[i + k] & 15];
			}
		} else if (s[i] == '\\') {
			piece[plen++] = '\\';
			piece[plen++] = '\\';
		} else {
			memcpy(piece, s + i, n);
			plen = n;
		}
		if (len + plen >= size)
			break;
		memcpy(buf + len, piece, plen);
		buf[len += plen] = '\0';
		i += n;
	}
}

void ps_json_string(FILE *out, const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	fputc('"', out);
	for (size_t i = 0; s[i];) {
		size_t n = utf8_char_length(s + i);
		if (n == 0) {
			fputs("\\ufffd", out); /* a byte of no character */
			i++;
			continue;
		}
		if (control_character(s + i, n))
			fprintf(out, "\\u%04x", n == 1 ? s[i] : s[i + 1]);
		else if (s[i] == '"' || s[i] == '\\')
			fprintf(out, "\\%c", s[i]);
		else
			fwrite(s + i, 1, n, out);
		i += n;
	}
	fputc('"', out);
}

/* Where the verdict came from: the table's word and the outputs' name. */
static const char *source_word(int source, bool long_name)
{
	switch (source) {
	case TSCSHIM_SOURCE_NONE: return long_name ? "none" : "-";
	case TSCSHIM_SOURCE_SYSTEM_RECORD: return long_name ? "system_record" : "record";
	case TSCSHIM_SOURCE_USER_CACHE: return long_name ? "user_cache" : "cache";
	case TSCSHIM_SOURCE_MEASURED: return "measured";
	default: return "unknown";
	}
}

static const char *when_name(enum ps_when w)
{
	return w == PS_AT_LOAD ? "load" : w == PS_AT_READ ? "read" : "query";
}

static bool decided(const struct ps_process *p)
{
	return p->state == PS_SERVING || p->state == PS_PASSING;
}

static bool block_read(const struct ps_process *p)
{
	return decided(p) || p->state == PS_UNDECIDED;
}

void ps_format_duration(char *buf, size_t size, uint64_t ns)
{
	if (ns >= 10000000)
		snprintf(buf, size, "%llu ms", (unsigned long long)((ns + 500000) / 1000000));
	else if (ns >= 1000000)
		snprintf(buf, size, "%.1f ms", (double)ns / 1e6);
	else if (ns >= 10000)
		snprintf(buf, size, "%llu us", (unsigned long long)((ns + 500) / 1000));
	else
		snprintf(buf, size, "%.1f us", (double)ns / 1e3);
}

/* Served clock c's name (clock_table's), or "clockN" for one this reader does not know. */
static const char *clock_name(unsigned c, char unknown[16])
{
	if (c < SERVED_CLOCK_COUNT)
		return clock_table[c].name;
	snprintf(unknown, 16, "clock%u", c);
	return unknown;
}

/* The served clocks' names, comma-separated. */
static void clock_names(char *buf, size_t size, uint32_t served)
{
	size_t len = 0;
	buf[0] = '\0';
	for (unsigned c = 0; c < 32 && len < size; c++) {
		char unknown[16];
		if ((served >> c) & 1)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", clock_name(c, unknown));
	}
}

/* The stopped clocks with their causes' keys: "realtime (unreadable), boottime (behind)". */
static void stopped_names(char *buf, size_t size, const struct ps_process *p)
{
	size_t len = 0;
	buf[0] = '\0';
	for (unsigned c = 0; c < 32 && len < size; c++) {
		char unknown[16];
		if ((p->stopped_clocks >> c) & 1)
			len += (size_t)snprintf(buf + len, size - len, "%s%s (%s)", len ? ", " : "", clock_name(c, unknown),
						ps_stop_key(p->stop_cause[c]));
	}
}

/* A stop's cause as a bucket of the counts: 1 and up, each cause with a key of its own
 * (ps_stop_key); 0, "other", for any other. */
enum { STOP_BUCKETS = 16 };
static size_t stop_bucket(uint64_t cause)
{
	return cause < STOP_BUCKETS && strcmp(ps_stop_key(cause), "other") != 0 ? (size_t)cause : 0;
}

/* ---- the summary ---- */

enum { MAX_KEYS = 64 };
struct summary {
	unsigned processes, state[PS_STATES], unreadable[PS_DENIEDS];
	unsigned passing[MAX_KEYS]; /* by ps_reason_key_at's index */
	uint64_t resyncs, fallbacks, resumes, disruptions, served_reads; /* saturating */
	unsigned counting;
	unsigned stopped[32][STOP_BUCKETS]; /* clocks stopped, by clock and stop_bucket */
	unsigned left_out; /* counts left out of the sums: PS_COUNT_NOT_REAL or more */
};

/* *sum += v, at most UINT64_MAX, where v is a count a process could have reached; else
 * left out, and counted so (a forged block must not move the machine's sums). */
static void add_count(uint64_t *sum, uint64_t v, struct summary *s)
{
	if (v >= PS_COUNT_NOT_REAL) {
		s->left_out++;
		return;
	}
	*sum = *sum > UINT64_MAX - v ? UINT64_MAX : *sum + v;
}

/* A process's fallbacks (re-anchors and stops), at most UINT64_MAX. */
static uint64_t fallbacks_of(const struct ps_process *p)
{
	return p->reanchors > UINT64_MAX - p->stops ? UINT64_MAX : p->reanchors + p->stops;
}

/* The key's index among ps_reason_key_at's; "other"'s for a key not among them. */
static size_t key_index(const char *key)
{
	size_t other = 0;
	for (size_t i = 0; i < MAX_KEYS && ps_reason_key_at(i); i++) {
		if (key && strcmp(ps_reason_key_at(i), key) == 0)
			return i;
		if (strcmp(ps_reason_key_at(i), "other") == 0)
			other = i;
	}
	return other;
}

static void summarize(const struct ps_process *p, size_t n, struct summary *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < n; i++) {
		s->processes++;
		s->state[p[i].state]++;
		if (p[i].state == PS_UNREADABLE)
			s->unreadable[p[i].denied]++;
		if (p[i].state == PS_PASSING)
			s->passing[key_index(p[i].reason_key)]++;
		if (block_read(&p[i])) {
			add_count(&s->resyncs, p[i].resyncs, s);
			add_count(&s->fallbacks, fallbacks_of(&p[i]), s);
			add_count(&s->resumes, p[i].resumes, s);
			add_count(&s->disruptions, p[i].disruptions, s);
		}
		for (unsigned c = 0; decided(&p[i]) && c < 32; c++)
			if ((p[i].stopped_clocks >> c) & 1)
				s->stopped[c][stop_bucket(p[i].stop_cause[c])]++;
		if (p[i].counted) {
			s->counting++;
			add_count(&s->served_reads, p[i].served_reads, s);
		}
	}
}

/* "(key N, key N)" of the non-zero counts, or nothing. */
static void write_counts_by(FILE *out, const unsigned *count, size_t n, const char *(*name)(size_t))
{
	const char *sep = " (";
	for (size_t i = 0; i < n; i++)
		if (count[i]) {
			fprintf(out, "%s%s %u", sep, name(i), count[i]);
			sep = ", ";
		}
	if (sep[0] == ',')
		fputc(')', out);
}

static const char *denial_words(size_t i)
{
	return denials[i].words;
}

static unsigned not_inspected_total(const struct ps_scan_totals *t)
{
	unsigned n = 0;
	for (int d = 0; d < PS_DENIEDS; d++)
		n += t->not_inspected[d];
	return n;
}

static void write_summary_line(FILE *out, const struct summary *s, const struct ps_scan_totals *t)
{
	fprintf(out, "%u process%s with the shim loaded: %u serving, %u passing through", s->processes,
		s->processes == 1 ? "" : "es", s->state[PS_SERVING], s->state[PS_PASSING]);
	write_counts_by(out, s->passing, MAX_KEYS, ps_reason_key_at);
	fprintf(out, ", %u undecided", s->state[PS_UNDECIDED]);
	if (s->state[PS_OTHER_VERSION])
		fprintf(out, ", %u another version", s->state[PS_OTHER_VERSION]);
	if (s->state[PS_UNREADABLE]) {
		fprintf(out, ", %u not readable", s->state[PS_UNREADABLE]);
		write_counts_by(out, s->unreadable, PS_DENIEDS, denial_words);
	}
	if (s->state[PS_SKIPPED])
		fprintf(out, ", %u skipped", s->state[PS_SKIPPED]);
	unsigned not_inspected = not_inspected_total(t);
	if (not_inspected) {
		fprintf(out, "; could not look into %u other process%s", not_inspected, not_inspected == 1 ? "" : "es");
		write_counts_by(out, t->not_inspected, PS_DENIEDS, denial_words);
	}
	if (t->exited)
		fprintf(out, "; %u exited while being read", t->exited);
	if (s->left_out)
		fprintf(out, "; %u count%s left out of the sums (beyond any a process reaches)", s->left_out,
			s->left_out == 1 ? "" : "s");
	fputc('\n', out);
}

/* ---- the table ---- */

static void state_words(char *buf, size_t size, const struct ps_process *p)
{
	char clocks[128], stopped[256], resumed[96] = "", note[sizeof p->note * 4];
	ps_terminal_text(note, sizeof note, p->note); /* this reader's words, escaped all the same */
	if (p->resumes && p->disruptions)
		snprintf(resumed, sizeof resumed, "; resumed %llu; disrupted %llu", (unsigned long long)p->resumes,
			 (unsigned long long)p->disruptions);
	else if (p->resumes || p->disruptions)
		snprintf(resumed, sizeof resumed, "; %s %llu", p->resumes ? "resumed" : "disrupted",
			 (unsigned long long)(p->resumes ? p->resumes : p->disruptions));
	switch (p->state) {
	case PS_SERVING:
		/* The clocks it serves now; those the decision served that stopped, after. */
		clock_names(clocks, sizeof clocks, p->served & ~p->stopped_clocks);
		stopped_names(stopped, sizeof stopped, p);
		snprintf(buf, size, "serving, %s: %s%s%s%s", p->fenced ? "fenced" : "unfenced", clocks,
			 stopped[0] ? "; stopped: " : "", stopped, resumed);
		break;
	case PS_PASSING: snprintf(buf, size, "passing through: %s%s", p->reason_key, resumed); break;
	case PS_UNDECIDED:
		snprintf(buf, size, "undecided, %llu read%s", (unsigned long long)p->reads_before_decision,
			 p->reads_before_decision == 1 ? "" : "s");
		break;
	case PS_OTHER_VERSION: snprintf(buf, size, "loaded, another version (%s)", note); break;
	case PS_SKIPPED: snprintf(buf, size, "skipped (%s)", note); break;
	default: snprintf(buf, size, "loaded, not readable (%s)", denials[p->denied].words); break;
	}
}

static void u64_or_dash(char *buf, size_t size, bool known, uint64_t v)
{
	if (known)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else
		snprintf(buf, size, "-");
}

void ps_write_table(FILE *out, const struct ps_process *p, size_t n, const struct ps_scan_totals *t)
{
	fprintf(out, "%7s %-10s %-16s %-8s %-14s %8s %8s %9s %10s  %s\n", "PID", "USER", "COMMAND", "SOURCE",
		"DECIDED", "COST", "RESYNCS", "FALLBACKS", "SERVED", "STATE");
	for (size_t i = 0; i < n; i++) {
		const struct ps_process *q = &p[i];
		char when[32] = "-", cost[16] = "-", resyncs[24], fallbacks[24], served[24], state[640];
		if (decided(q)) {
			if (q->when == PS_AT_READ)
				snprintf(when, sizeof when, "at read %llu", (unsigned long long)q->at_read);
			else
				snprintf(when, sizeof when, q->when == PS_AT_LOAD ? "at load" : "at a query");
			ps_format_duration(cost, sizeof cost, q->decide_ns);
		}
		u64_or_dash(resyncs, sizeof resyncs, decided(q), q->resyncs);
		u64_or_dash(fallbacks, sizeof fallbacks, decided(q), fallbacks_of(q));
		u64_or_dash(served, sizeof served, q->counted, q->served_reads);
		state_words(state, sizeof state, q);
		/* The user's name in its column's 10 bytes, cut where a character ends; both
		 * names with every control character escaped. */
		char user_cut[sizeof q->user], user[64], command[80];
		snprintf(user_cut, sizeof user_cut, "%s", q->user);
		ps_utf8_cut(user_cut, 10);
		ps_terminal_text(user, sizeof user, user_cut);
		ps_terminal_text(command, sizeof command, q->command);
		fprintf(out, "%7d %-10s %-16s %-8s %-14s %8s %8s %9s %10s  %s\n", q->pid, user, command,
			decided(q) ? source_word(q->source, false) : "-", when, cost, resyncs, fallbacks, served, state);
	}
	struct summary s;
	summarize(p, n, &s);
	write_summary_line(out, &s, t);
}

/* ---- --json ---- */

/* An object being written: each field after the first is preceded by a comma. */
struct json_object {
	FILE *out;
	bool started;
};

static FILE *json_key(struct json_object *o, const char *name)
{
	fprintf(o->out, "%s\"%s\": ", o->started ? ", " : "", name);
	o->started = true;
	return o->out;
}

static void json_u64(struct json_object *o, const char *name, uint64_t v)
{
	fprintf(json_key(o, name), "%llu", (unsigned long long)v);
}

static void json_text(struct json_object *o, const char *name, const char *v)
{
	ps_json_string(json_key(o, name), v);
}

static void json_bool(struct json_object *o, const char *name, bool v)
{
	fputs(v ? "true" : "false", json_key(o, name));
}

/* {"name": N, ...} of the non-zero counts. */
static void json_counts_by(struct json_object *o, const char *name, const unsigned *count, size_t n,
			   const char *(*key)(size_t))
{
	struct json_object by = {json_key(o, name), false};
	fputc('{', by.out);
	for (size_t i = 0; i < n; i++)
		if (count[i])
			json_u64(&by, key(i), count[i]);
	fputc('}', by.out);
}

static const char *denial_name(size_t i)
{
	return denials[i].name;
}

static void write_json_decision(struct json_object *o, const struct ps_process *q)
{
	json_bool(o, "fenced", q->fenced);
	FILE *out = json_key(o, "clocks");
	fputc('[', out);
	for (unsigned c = 0, n = 0; c < 32; c++) {
		char unknown[16];
		if (!((q->served >> c) & 1))
			continue;
		fputs(n++ ? ", " : "", out);
		ps_json_string(out, clock_name(c, unknown));
	}
	fputc(']', out);
	json_text(o, "reason", q->reason);
	if (q->reason_code_known)
		json_u64(o, "reason_code", q->reason_code);
	if (q->state == PS_PASSING)
		json_text(o, "reason_key", q->reason_key);
	json_text(o, "source", source_word(q->source, true));
	struct json_object when = {json_key(o, "decided"), false};
	fputc('{', when.out);
	json_text(&when, "at", when_name(q->when));
	if (q->when == PS_AT_READ)
		json_u64(&when, "read", q->at_read);
	json_u64(&when, "cost_ns", q->decide_ns);
	fputc('}', when.out);
	json_u64(o, "resyncs", q->resyncs);
	json_u64(o, "reanchors", q->reanchors);
	json_u64(o, "stops", q->stops);
	json_u64(o, "kernel_reads", q->kernel_reads);
	json_u64(o, "lost_writes", q->lost_writes);
	json_u64(o, "largest_error_ns", q->largest_error_ns);
	if (q->resumes_known)
		json_u64(o, "resumes", q->resumes);
	else
		fputs("null", json_key(o, "resumes"));
	if (q->disruptions_known)
		json_u64(o, "disruptions", q->disruptions);
	else
		fputs("null", json_key(o, "disruptions"));
	/* The decision's clocks that stopped, and why; null where the block does not say (an
	 * earlier build's). */
	if (!q->stops_known) {
		fputs("null", json_key(o, "stopped"));
		fputs("null", json_key(o, "held_reads"));
		return;
	}
	struct json_object stopped = {json_key(o, "stopped"), false};
	fputc('{', stopped.out);
	for (unsigned c = 0; c < 32; c++) {
		char unknown[16];
		if ((q->stopped_clocks >> c) & 1)
			json_text(&stopped, clock_name(c, unknown), ps_stop_key(q->stop_cause[c]));
	}
	fputc('}', stopped.out);
	json_u64(o, "held_reads", q->held_reads);
}

static void write_json_process(FILE *out, const struct ps_process *q)
{
	struct json_object o = {out, false};
	fputc('{', out);
	json_u64(&o, "pid", (uint64_t)q->pid);
	json_text(&o, "user", q->user);
	json_u64(&o, "uid", q->uid);
	json_text(&o, "command", q->command);
	json_text(&o, "library", q->library);
	json_text(&o, "build_id", q->build_id);
	json_text(&o, "state", state_names[q->state]);
	if (q->state == PS_OTHER_VERSION || q->state == PS_SKIPPED)
		json_text(&o, "note", q->note);
	if (q->state == PS_UNREADABLE)
		json_text(&o, "why", denials[q->denied].name);
	if (q->state == PS_UNDECIDED)
		json_u64(&o, "reads_before_decision", q->reads_before_decision);
	if (decided(q))
		write_json_decision(&o, q);
	if (block_read(q) && q->counted) {
		json_u64(&o, "served_reads", q->served_reads);
		json_u64(&o, "calls", q->calls);
	} else if (block_read(q)) {
		fputs("null", json_key(&o, "served_reads"));
		fputs("null", json_key(&o, "calls"));
	}
	fputc('}', out);
}

void ps_write_json(FILE *out, const struct ps_process *p, size_t n, const struct ps_scan_totals *t)
{
	fputs("{\"processes\": [", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n  " : "\n  ", out);
		write_json_process(out, &p[i]);
	}
	fputs(n ? "\n],\n" : "],\n", out);
	struct summary s;
	summarize(p, n, &s);
	struct json_object sum = {out, false};
	fputs(" \"summary\": {", out);
	json_u64(&sum, "processes", s.processes);
	for (int st = 0; st < PS_STATES; st++)
		json_u64(&sum, state_names[st], s.state[st]);
	json_counts_by(&sum, "passing_through_by_reason", s.passing, MAX_KEYS, ps_reason_key_at);
	json_counts_by(&sum, "unreadable_by_why", s.unreadable, PS_DENIEDS, denial_name);
	json_u64(&sum, "resyncs", s.resyncs);
	json_u64(&sum, "fallbacks", s.fallbacks);
	json_u64(&sum, "resumes", s.resumes);
	json_u64(&sum, "disruptions", s.disruptions);
	json_u64(&sum, "counting", s.counting);
	json_u64(&sum, "served_reads", s.served_reads);
	json_u64(&sum, "counts_left_out", s.left_out);
	fputs("},\n", out);
	struct json_object rest = {out, false};
	fputs(" \"not_inspected\": {", out);
	json_u64(&rest, "processes", not_inspected_total(t));
	json_counts_by(&rest, "by_why", t->not_inspected, PS_DENIEDS, denial_name);
	fputs("},\n", out);
	fprintf(out, " \"exited_while_read\": %u\n}\n", t->exited);
}

/* ---- --prometheus ---- */

/* One metric family's HELP and TYPE lines (every family here is a gauge: the processes
 * come and go, so even the sums may fall). */
static void family(FILE *out, const char *name, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void ps_write_prometheus(FILE *out, const struct ps_process *p, size_t n, const struct ps_scan_totals *t)
{
	struct summary s;
	summarize(p, n, &s);
	family(out, "tscshim_processes", "Processes that have the tscshim library loaded, by state.");
	for (int st = 0; st < PS_STATES; st++)
		fprintf(out, "tscshim_processes{state=\"%s\"} %u\n", state_names[st], s.state[st]);
	family(out, "tscshim_passing_through_processes",
	       "Processes whose tscshim passes every clock call to the kernel, by reason.");
	for (size_t k = 0; k < MAX_KEYS && ps_reason_key_at(k); k++)
		fprintf(out, "tscshim_passing_through_processes{reason=\"%s\"} %u\n", ps_reason_key_at(k), s.passing[k]);
	family(out, "tscshim_unreadable_processes",
	       "Processes with tscshim loaded whose state this scan was not allowed to read, by why.");
	for (int d = 0; d < PS_DENIEDS; d++)
		fprintf(out, "tscshim_unreadable_processes{why=\"%s\"} %u\n", denials[d].name, s.unreadable[d]);
	family(out, "tscshim_not_inspected_processes",
	       "Processes this scan was not allowed to look into at all (tscshim loaded or not), by why.");
	for (int d = 0; d < PS_DENIEDS; d++)
		fprintf(out, "tscshim_not_inspected_processes{why=\"%s\"} %u\n", denials[d].name, t->not_inspected[d]);
	family(out, "tscshim_stopped_clocks",
	       "Served clocks the counter stopped serving (their kernel clock misbehaved), counted over the "
	       "processes read, by clock and cause.");
	for (unsigned c = 0; c < 32; c++) {
		/* Every clock this reader knows with every cause, always; a clock it does not
		 * (a newer shim's) where one stopped. */
		unsigned any = 0;
		for (size_t k = 0; k < STOP_BUCKETS; k++)
			any += s.stopped[c][k];
		if (c >= SERVED_CLOCK_COUNT && !any)
			continue;
		char unknown[16];
		for (size_t k = 1; k <= STOP_BUCKETS; k++) {
			size_t bucket = k % STOP_BUCKETS; /* "other", bucket 0, last */
			if (bucket != 0 && stop_bucket(bucket) == 0)
				continue;
			fprintf(out, "tscshim_stopped_clocks{clock=\"%s\",cause=\"%s\"} %u\n", clock_name(c, unknown),
				bucket ? ps_stop_key(bucket) : "other", s.stopped[c][bucket]);
		}
	}
	family(out, "tscshim_resyncs", "Re-synchronizations with the kernel's clock so far, summed over the processes read.");
	fprintf(out, "tscshim_resyncs %llu\n", (unsigned long long)s.resyncs);
	family(out, "tscshim_fallbacks", "Watchdog re-anchors and stops so far, summed over the processes read.");
	fprintf(out, "tscshim_fallbacks %llu\n", (unsigned long long)s.fallbacks);
	family(out, "tscshim_resumes", "Stopped clocks that served again so far, summed over the processes read.");
	fprintf(out, "tscshim_resumes %llu\n", (unsigned long long)s.resumes);
	family(out, "tscshim_disruptions",
	       "Times the hypervisor's vmclock marker stopped the counter (a migration), summed over the processes read.");
	fprintf(out, "tscshim_disruptions %llu\n", (unsigned long long)s.disruptions);
	family(out, "tscshim_counts_left_out",
	       "Counts left out of the sums above: beyond any a process reaches (a forged state block).");
	fprintf(out, "tscshim_counts_left_out %u\n", s.left_out);
	family(out, "tscshim_counting_processes", "Processes that count their calls (TSCSHIM_STATS set).");
	fprintf(out, "tscshim_counting_processes %u\n", s.counting);
	family(out, "tscshim_served_reads",
	       "Clock reads served from the counter so far, summed over the processes that count them.");
	fprintf(out, "tscshim_served_reads %llu\n", (unsigned long long)s.served_reads);
}

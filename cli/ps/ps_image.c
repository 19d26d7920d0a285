/* Pure parts of reading a process from outside: a maps line, the shim's names, the
 * image's program headers and notes, and the state block's fields, through a reader of
 * the process's memory (ps.h) that the unit tests stand in for. Nothing here trusts the
 * process: every address the block holds must lie in the shim's image, every offset
 * within its object, every text within its size. */
#include "ps.h"

#include "clocks.h"
#include "stats_line.h"
#include "text.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- maps ---- */

/* Each field parser takes NULL (an earlier field failed) and gives NULL back. */
static const char *hex_field(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = s;
	for (; s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else
			break;
		if (v >> 60)
			return NULL;
		v = v << 4 | d;
	}
	*out = v;
	return s == start ? NULL : s;
}

static const char *decimal_field(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = s;
	for (; s && *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return NULL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return s == start ? NULL : s;
}

static const char *expect(const char *s, char c)
{
	return s && *s == c ? s + 1 : NULL;
}

static const char *spaces(const char *s)
{
	while (s && *s == ' ')
		s++;
	return s;
}

/* "start-end perms offset major:minor inode [path]" */
int ps_maps_parse(char *line, struct ps_mapping *out)
{
	memset(out, 0, sizeof *out);
	uint64_t major = 0, minor = 0;
	const char *s = hex_field(line, &out->start);
	s = s ? hex_field(expect(s, '-'), &out->end) : NULL;
	s = expect(s, ' ');
	if (!s || strlen(s) < 4 || out->end <= out->start)
		return -1;
	out->readable = s[0] == 'r';
	out->writable = s[1] == 'w';
	s = expect(s + 4, ' ');
	s = s ? hex_field(s, &out->offset) : NULL;
	s = s ? hex_field(expect(s, ' '), &major) : NULL;
	s = s ? hex_field(expect(s, ':'), &minor) : NULL;
	s = s ? decimal_field(expect(s, ' '), &out->inode) : NULL;
	if (!s || (*s != ' ' && *s != '\0') || major > UINT32_MAX || minor > UINT32_MAX)
		return -1;
	out->dev_major = (unsigned)major;
	out->dev_minor = (unsigned)minor;
	char *path = (char *)spaces(s);
	static const char deleted[] = " (deleted)";
	size_t len = strlen(path), dlen = sizeof deleted - 1;
	if (len > dlen && strcmp(path + len - dlen, deleted) == 0) {
		path[len - dlen] = '\0';
		out->deleted = true;
	}
	out->path = path;
	return 0;
}

bool ps_is_shim_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	static const char stem[] = "libtscshim.so";
	if (strcmp(name, "libtscshim-hooks.so") == 0)
		return true;
	if (strncmp(name, stem, sizeof stem - 1) != 0)
		return false;
	/* libtscshim.so, or its installed names: .so.1, .so.0.2.0 */
	const char *v = name + sizeof stem - 1;
	if (*v == '\0')
		return true;
	for (; *v == '.'; ) {
		v++;
		if (!(*v >= '0' && *v <= '9'))
			return false;
		while (*v >= '0' && *v <= '9')
			v++;
	}
	return *v == '\0';
}

/* ---- the image ---- */

static int read_exact(const struct ps_memory *m, uint64_t address, void *buf, size_t len)
{
	return m->read(m->ctx, address, buf, len);
}

/* The notes of one PT_NOTE segment read into buf (size bytes, at `address` in the
 * process): the build-id and the block's address into out. */
static void scan_notes(const unsigned char *buf, size_t size, uint64_t address, size_t align, struct ps_image *out)
{
	size_t at = 0;
	while (size - at >= 12) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, buf + at, 4);
		memcpy(&descsz, buf + at + 4, 4);
		memcpy(&type, buf + at + 8, 4);
		size_t name_at = at + 12;
		size_t name_room = (namesz + align - 1) / align * align;
		size_t desc_room = (descsz + align - 1) / align * align;
		if (namesz > size || descsz > size || name_room > size - name_at || desc_room > size - name_at - name_room)
			return;
		size_t desc_at = name_at + name_room;
		const char *name = (const char *)buf + name_at;
		if (namesz == 4 && memcmp(name, "GNU", 4) == 0 && type == NT_GNU_BUILD_ID && descsz <= 20) {
			static const char hex[] = "0123456789abcdef";
			for (uint32_t i = 0; i < descsz; i++) {
				out->build_id[2 * i] = hex[buf[desc_at + i] >> 4];
				out->build_id[2 * i + 1] = hex[buf[desc_at + i] & 15];
			}
			out->build_id[2 * descsz] = '\0';
		}
		if (namesz == sizeof STATE_NOTE_NAME && memcmp(name, STATE_NOTE_NAME, sizeof STATE_NOTE_NAME) == 0 &&
		    type == STATE_NOTE_TYPE && descsz == 8) {
			int64_t relative;
			memcpy(&relative, buf + desc_at, 8);
			out->block = address + desc_at + (uint64_t)relative;
		}
		at = desc_at + desc_room;
	}
}

int ps_image_read(const struct ps_memory *m, uint64_t first_page, struct ps_image *out)
{
	memset(out, 0, sizeof *out);
	Elf64_Ehdr eh;
	errno = 0;
	if (read_exact(m, first_page, &eh, sizeof eh) != 0)
		return -1;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_DYN || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64 || eh.e_phoff > 65536) {
		errno = 0;
		return -1;
	}
	Elf64_Phdr ph[64];
	if (read_exact(m, first_page + eh.e_phoff, ph, eh.e_phnum * sizeof *ph) != 0)
		return -1;
	/* The segment that maps the file's first page was mapped at first_page. */
	const Elf64_Phdr *first = NULL;
	uint64_t high = 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_offset == 0 && !first)
			first = &ph[i];
		if (ph[i].p_vaddr + ph[i].p_memsz > high)
			high = ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (!first) {
		errno = 0;
		return -1;
	}
	uint64_t page = 4096;
	out->bias = first_page - (first->p_vaddr & ~(page - 1));
	out->low = first_page;
	out->high = out->bias + high;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W) && !out->data_high) {
			out->data_low = out->bias + ph[i].p_vaddr;
			out->data_high = out->data_low + ph[i].p_filesz;
		}
		if (ph[i].p_type != PT_NOTE)
			continue;
		unsigned char notes[4096];
		size_t size = ph[i].p_filesz < sizeof notes ? ph[i].p_filesz : sizeof notes;
		uint64_t address = out->bias + ph[i].p_vaddr;
		if (read_exact(m, address, notes, size) != 0)
			return -1;
		scan_notes(notes, size, address, ph[i].p_align == 8 ? 8 : 4, out);
	}
	return 0;
}

/* ---- the block ---- */

int ps_read_settled(const struct ps_memory *m, uint64_t address, void *buf, size_t len)
{
	unsigned char again[4096];
	if (len > sizeof again) {
		errno = EINVAL;
		return -1;
	}
	if (read_exact(m, address, buf, len) != 0)
		return -1;
	for (int tries = 0; tries < 8; tries++) {
		if (read_exact(m, address, again, len) != 0)
			return -1;
		if (memcmp(buf, again, len) == 0)
			return 0;
		memcpy(buf, again, len);
	}
	return 0; /* still moving: the last read, each word of it whole on this machine */
}

static bool inside(uint64_t address, uint64_t len, uint64_t low, uint64_t high)
{
	return address >= low && address <= high && len <= high - address;
}

static enum ps_block_result other(struct ps_process *p, const char *what)
{
	snprintf(p->note, sizeof p->note, "%s", what);
	p->state = PS_OTHER_VERSION;
	return PS_BLOCK_OTHER;
}

static uint64_t u64_at(const unsigned char *buf, size_t at)
{
	uint64_t v;
	memcpy(&v, buf + at, 8);
	return v;
}

/* The block's own checks: every address in the image, every offset within its object,
 * at the width the layout gives it (calib/state_block.h). */
static const char *block_fault(const struct state_block *b, const struct ps_image *img)
{
	uint64_t lo = img->low, hi = img->high;
	uint64_t slots = (uint64_t)b->in_stats.slot_count * b->in_stats.slot_size;
	if (!inside(b->reads_before_decision, 8, lo, hi) || !inside(b->stats_enabled, 1, lo, hi) ||
	    !inside(b->tally, b->in_tally.size, lo, hi) || !inside(b->stats_slots, slots, lo, hi) ||
	    (b->decision && !inside(b->decision, b->in_decision.size, lo, hi)))
		return "an address outside the image";
	if (b->in_decision.size > 4096 || b->in_tally.size > 4096 || slots > (1u << 20))
		return "an object larger than any of this layout";
	const struct {
		uint16_t at, width;
	} decision[] = {
		{b->in_decision.serving, 1}, {b->in_decision.not_worth_it, 1}, {b->in_decision.fenced, 1},
		{b->in_decision.served, 4},  {b->in_decision.source, 4},       {b->in_decision.decide_ns, 8},
		{b->in_decision.at_read, 8}, {b->in_decision.reason, b->in_decision.reason_size},
	};
	for (size_t i = 0; i < sizeof decision / sizeof *decision; i++)
		if (decision[i].width == 0 || (uint32_t)decision[i].at + decision[i].width > b->in_decision.size)
			return "a decision field outside the decision";
	const uint16_t counter[] = {b->in_tally.resyncs,      b->in_tally.reanchors,        b->in_tally.stops,
				    b->in_tally.kernel_reads, b->in_tally.lost_writes,      b->in_tally.largest_error_ns,
				    b->in_tally.stopped_uncovered};
	for (size_t i = 0; i < sizeof counter / sizeof *counter; i++)
		if ((uint32_t)counter[i] + 8 > b->in_tally.size)
			return "a counter outside the tally";
	/* The per-clock stops, where the block has them: a cause per clock, at most one per
	 * bit of the decision's served clocks. */
	if (b->size >= STATE_BLOCK_STOPS_SIZE &&
	    ((uint32_t)b->in_stops.stopped_clocks + 8 > b->in_tally.size ||
	     (uint32_t)b->in_stops.held_reads + 8 > b->in_tally.size || b->in_stops.stop_causes == 0 ||
	     b->in_stops.stop_causes > 32 ||
	     (uint32_t)b->in_stops.stop_cause + b->in_stops.stop_causes * 8u > b->in_tally.size))
		return "a counter outside the tally";
	/* Layout 2's reason code in the decision, resumes in the tally. */
	if (b->layout >= STATE_BLOCK_LAYOUT && (uint32_t)b->in_reason.code + 4 > b->in_decision.size)
		return "a decision field outside the decision";
	if (b->layout >= STATE_BLOCK_LAYOUT && (uint32_t)b->in_reason.resumes + 8 > b->in_tally.size)
		return "a counter outside the tally";
	if (b->layout >= STATE_BLOCK_LAYOUT && (uint32_t)b->in_vmclock.disruptions + 8 > b->in_tally.size)
		return "a counter outside the tally";
	if (b->in_stats.clocks == 0 || b->in_stats.clocks > 16 ||
	    (uint32_t)b->in_stats.counts + b->in_stats.clocks * 16u > b->in_stats.slot_size)
		return "a count outside its slot";
	return NULL;
}

/* True while any of the block's addresses is still the file's (an offset in the image,
 * below its span): the loader relocates them one by one as it loads the shim. */
static bool unrelocated(const struct state_block *b, const struct ps_image *img)
{
	uint64_t span = img->high - img->bias;
	const uint64_t address[] = {b->reads_before_decision, b->tally, b->stats_enabled, b->stats_slots};
	for (size_t i = 0; i < sizeof address / sizeof *address; i++)
		if (img->bias != 0 && address[i] < span)
			return true;
	return false;
}

/* a + b, at most UINT64_MAX: a forged count must not wrap a sum back to a small one. */
static uint64_t add_saturating(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The decision, published whole (never changed after): its fields into p. */
static int read_decision(const struct ps_memory *m, const struct state_block *b, struct ps_process *p)
{
	unsigned char d[4096];
	if (read_exact(m, b->decision, d, b->in_decision.size) != 0)
		return -1;
	p->serving = d[b->in_decision.serving] != 0;
	p->not_worth_it = d[b->in_decision.not_worth_it] != 0;
	p->fenced = d[b->in_decision.fenced] != 0;
	memcpy(&p->served, d + b->in_decision.served, 4);
	int32_t source;
	memcpy(&source, d + b->in_decision.source, 4);
	p->source = source;
	p->decide_ns = u64_at(d, b->in_decision.decide_ns);
	p->at_read = u64_at(d, b->in_decision.at_read);
	/* The text, cut at its size whether or not it holds a NUL (at a character's boundary);
	 * kept raw: each output makes it safe for its reader. */
	size_t n = b->in_decision.reason_size < sizeof p->reason ? b->in_decision.reason_size : sizeof p->reason;
	memcpy(p->reason, d + b->in_decision.reason, n);
	p->reason[n - 1] = '\0';
	ps_utf8_cut(p->reason, n - 1);
	if (b->layout >= STATE_BLOCK_LAYOUT) {
		p->reason_code_known = true;
		memcpy(&p->reason_code, d + b->in_reason.code, 4);
	}
	p->when = b->decided_at_load ? PS_AT_LOAD : p->at_read ? PS_AT_READ : PS_AT_QUERY;
	return 0;
}

/* The stats' per-thread slots, summed: calls served from the counter, and all calls. */
static int read_counts(const struct ps_memory *m, const struct state_block *b, struct ps_process *p)
{
	unsigned char enabled;
	if (read_exact(m, b->stats_enabled, &enabled, 1) != 0)
		return -1;
	p->counted = enabled != 0;
	if (!p->counted)
		return 0;
	size_t slot = b->in_stats.slot_size, len = (size_t)b->in_stats.slot_count * slot;
	unsigned char *all = malloc(len ? len : 1);
	if (!all)
		return -1;
	int rc = read_exact(m, b->stats_slots, all, len);
	for (size_t s = 0; rc == 0 && s < b->in_stats.slot_count; s++)
		for (unsigned c = 0; c < b->in_stats.clocks; c++) {
			uint64_t passed = u64_at(all, s * slot + b->in_stats.counts + c * 16);
			uint64_t served = u64_at(all, s * slot + b->in_stats.counts + c * 16 + 8);
			p->served_reads = add_saturating(p->served_reads, served);
			p->calls = add_saturating(p->calls, add_saturating(passed, served));
		}
	free(all);
	return rc;
}

enum ps_block_result ps_block_read(const struct ps_memory *m, const struct ps_image *img, struct ps_process *p)
{
	if (!img->block) {
		other(p, "no state block");
		return PS_BLOCK_NONE;
	}
	struct state_block b;
	memset(&b, 0, sizeof b);
	if (!inside(img->block, 16, img->data_low, img->data_high))
		return other(p, "state block outside the image's data");
	if (read_exact(m, img->block, &b, 16) != 0)
		return PS_BLOCK_FAILED;
	if (memcmp(b.magic, STATE_BLOCK_MAGIC, sizeof b.magic) != 0)
		return other(p, "state block not recognized");
	if (b.layout != STATE_BLOCK_LAYOUT && b.layout != STATE_BLOCK_LAYOUT_1) {
		char what[48];
		snprintf(what, sizeof what, "state layout %u", b.layout);
		return other(p, what);
	}
	uint32_t least = b.layout == STATE_BLOCK_LAYOUT ? STATE_BLOCK_V2_SIZE : STATE_BLOCK_V1_SIZE;
	if (b.size < least || !inside(img->block, b.size, img->data_low, img->data_high))
		return other(p, "state block of a wrong size");
	/* The fields this reader knows, as far as the block has them (the rest stay 0); a
	 * newer block's appended ones are not read. */
	if (read_exact(m, img->block, &b, b.size < sizeof b ? b.size : sizeof b) != 0)
		return PS_BLOCK_FAILED;
	/* A process still being loaded: the loader has not relocated the block's addresses
	 * yet (they hold the image's own, from its file). Nothing decided, nothing read. */
	if (unrelocated(&b, img)) {
		p->state = PS_UNDECIDED;
		return PS_BLOCK_READ;
	}
	const char *fault = block_fault(&b, img);
	if (fault) {
		char what[96];
		snprintf(what, sizeof what, "state block not recognized: %s", fault);
		return other(p, what);
	}
	unsigned char tally[4096];
	if (ps_read_settled(m, b.reads_before_decision, &p->reads_before_decision, 8) != 0 ||
	    ps_read_settled(m, b.tally, tally, b.in_tally.size) != 0 || read_counts(m, &b, p) != 0)
		return PS_BLOCK_FAILED;
	p->resyncs = u64_at(tally, b.in_tally.resyncs);
	p->reanchors = u64_at(tally, b.in_tally.reanchors);
	p->stops = u64_at(tally, b.in_tally.stops);
	p->kernel_reads = u64_at(tally, b.in_tally.kernel_reads);
	p->lost_writes = u64_at(tally, b.in_tally.lost_writes);
	p->largest_error_ns = u64_at(tally, b.in_tally.largest_error_ns);
	p->stopped_uncovered = u64_at(tally, b.in_tally.stopped_uncovered) != 0;
	p->stops_known = b.size >= STATE_BLOCK_STOPS_SIZE;
	if (p->stops_known) {
		p->stopped_clocks = (uint32_t)u64_at(tally, b.in_stops.stopped_clocks);
		for (unsigned c = 0; c < b.in_stops.stop_causes; c++)
			p->stop_cause[c] = u64_at(tally, b.in_stops.stop_cause + c * 8u);
		p->held_reads = u64_at(tally, b.in_stops.held_reads);
	}
	p->resumes_known = b.layout >= STATE_BLOCK_LAYOUT;
	if (p->resumes_known)
		p->resumes = u64_at(tally, b.in_reason.resumes);
	p->disruptions_known = b.layout >= STATE_BLOCK_LAYOUT && b.in_vmclock.disruptions != 0;
	if (p->disruptions_known)
		p->disruptions = u64_at(tally, b.in_vmclock.disruptions);
	if (!b.decision) {
		p->state = PS_UNDECIDED;
		return PS_BLOCK_READ;
	}
	if (read_decision(m, &b, p) != 0)
		return PS_BLOCK_FAILED;
	ps_classify(p);
	return PS_BLOCK_READ;
}

void ps_classify(struct ps_process *p)
{
	bool serves;
	if (p->stops_known) {
		/* Bits of clocks the decision did not serve mean nothing; a process that passes
		 * through from the start never opened a clock. */
		p->stopped_clocks = p->serving ? p->stopped_clocks & p->served : 0;
		serves = p->serving && (p->served & ~p->stopped_clocks) != 0;
	} else {
		/* An earlier build: its watchdog (or a widened affinity) stopped every clock. */
		serves = p->serving && p->stops == 0 && !p->stopped_uncovered;
	}
	p->state = serves ? PS_SERVING : PS_PASSING;
	p->reason_key = serves ? NULL : ps_reason_key(p);
}

/* ---- /proc/PID/status, and why access was denied ---- */

int ps_status_uid(const char *text, unsigned *uid)
{
	const char *line = strstr(text, "\nUid:");
	line = strncmp(text, "Uid:", 4) == 0 ? text : line ? line + 1 : NULL;
	if (!line)
		return -1;
	uint64_t real, effective;
	const char *s = line + 4;
	while (*s == '\t' || *s == ' ')
		s++;
	s = decimal_field(s, &real);
	while (s && (*s == '\t' || *s == ' '))
		s++;
	s = s ? decimal_field(s, &effective) : NULL;
	if (!s || effective > UINT32_MAX)
		return -1;
	*uid = (unsigned)effective;
	return 0;
}

enum ps_denied ps_denied_why(unsigned process_uid, unsigned my_uid, int ptrace_scope)
{
	if (process_uid != my_uid)
		return PS_DENIED_OTHER_USER;
	return ptrace_scope >= 1 ? PS_DENIED_PTRACE_SCOPE : PS_DENIED_NOT_PERMITTED;
}

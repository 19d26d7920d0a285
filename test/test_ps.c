/* tscshim ps's pure parts (cli/ps/ps_image.c, ps_reason.c, ps_report.c) on made-up input: a
 * maps line, the shim's names, an image with its notes and block in a made-up process
 * memory (and blocks of other layouts, bad ones and reads that fail), the reasons' keys,
 * and the three outputs. */
#include "ps.h"
#include "rng.h"
#include "unit.h"

#include "clocks.h"
#include "stats_line.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- maps and names ---- */

static void test_maps_line(void)
{
	char line[] = "7f1c2a000000-7f1c2a021000 r-xp 00000000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libtscshim.so.1";
	struct ps_mapping m;
	CHECK(ps_maps_parse(line, &m) == 0);
	CHECK_EQ_U64(m.start, 0x7f1c2a000000ull);
	CHECK_EQ_U64(m.end, 0x7f1c2a021000ull);
	CHECK_EQ_U64(m.offset, 0);
	CHECK_EQ_U64(m.dev_major, 0xfd);
	CHECK_EQ_U64(m.dev_minor, 1);
	CHECK_EQ_U64(m.inode, 1234567);
	CHECK(m.readable && !m.writable && !m.deleted);
	CHECK(strcmp(m.path, "/usr/lib/x86_64-linux-gnu/libtscshim.so.1") == 0);

	char deleted[] = "55d0c0a19000-55d0c0a1a000 rw-p 00019000 08:11 42 /work/build/libtscshim.so (deleted)";
	CHECK(ps_maps_parse(deleted, &m) == 0);
	CHECK(m.writable && m.deleted && m.offset == 0x19000);
	CHECK(strcmp(m.path, "/work/build/libtscshim.so") == 0);

	char anonymous[] = "7ffd1c9e5000-7ffd1ca06000 rw-p 00000000 00:00 0";
	CHECK(ps_maps_parse(anonymous, &m) == 0);
	CHECK(m.path[0] == '\0');

	char bad[][64] = {"", "7f00-7e00 r-xp 00000000 fd:01 1 /x", "zz-7f00 r-xp 0 fd:01 1 /x",
			  "7e00-7f00 r-xp 00000000 fd01 1 /x", "7e00-7f00 r-xp 00000000 fd:01 x /x", "7e00-7f00"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK(ps_maps_parse(bad[i], &m) != 0);
}

static void test_shim_names(void)
{
	const char *yes[] = {"/work/build/libtscshim.so", "libtscshim.so", "/usr/lib/libtscshim.so.1",
			     "/usr/local/lib/libtscshim.so.0.2.0", "/work/build/test/libtscshim-hooks.so"};
	const char *no[] = {"/work/build/libtscshim-floor.so", "/usr/lib/libtscshim.so.x", "/usr/lib/libtscshim.so.",
			    "/usr/lib/libtscshim.sox", "/lib/libc.so.6", "/usr/lib/libtscshim.so.1/", "libtscshim",
			    "/tmp/libtscshim.so.1.a", "/libtscshim.so-hooks"};
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
		CHECK(ps_is_shim_path(yes[i]));
	for (size_t i = 0; i < sizeof no / sizeof *no; i++)
		if (ps_is_shim_path(no[i]))
			CHECK(!no[i]);
}

/* ---- a made-up process ---- */

/* The process's memory: one image, mapped at BASE. Reads outside it fail (EIO); after
 * fail_after reads, every read fails (ESRCH: the process exited). */
enum { IMAGE_SIZE = 0x6000, DATA_AT = 0x2000, DATA_FILE_SIZE = 0x1000, BLOCK_AT = 0x2100 };
#define BASE 0x7f0000000000ull
struct fake {
	unsigned char image[IMAGE_SIZE];
	int reads, fail_after;
	int changing; /* the count at COUNT_AT reads differently this many times */
};
enum { NOTES_AT = 0x200, COUNT_AT = 0x2300, TALLY_AT = 0x2400, DECISION_AT = 0x2800, ENABLED_AT = 0x2340,
       SLOTS_AT = 0x3000 };

static int fake_read(void *ctx, uint64_t address, void *buf, size_t len)
{
	struct fake *f = ctx;
	if (f->fail_after >= 0 && f->reads++ >= f->fail_after) {
		errno = ESRCH;
		return -1;
	}
	if (address < BASE || address - BASE > IMAGE_SIZE || len > IMAGE_SIZE - (address - BASE)) {
		errno = EIO;
		return -1;
	}
	memcpy(buf, f->image + (address - BASE), len);
	if (f->changing > 0 && address <= BASE + COUNT_AT && address + len > BASE + COUNT_AT) {
		f->changing--;
		uint64_t moving = 1000 + (uint64_t)f->changing;
		memcpy((unsigned char *)buf + (BASE + COUNT_AT - address), &moving, 8);
	}
	return 0;
}

/* The layout of a made-up shim's objects: its own, unlike the real one's, as a build of
 * another tree may have (the block says where each field is). */
struct fake_decision {
	char reason[64];
	uint64_t decide_ns, at_read;
	int32_t source;
	uint32_t served;
	uint32_t code; /* enum state_reason */
	bool fenced, not_worth_it, serving;
};
struct fake_tally {
	uint64_t stopped_uncovered, largest_error_ns, lost_writes, kernel_reads, stops, reanchors, resyncs, appended;
	uint64_t held_reads, stop_cause[SERVED_CLOCK_COUNT], stopped_clocks, resumes, disruptions;
};
struct fake_slot {
	uint64_t pad;
	uint64_t count[STAT_CLOCKS][2];
};

static void put(struct fake *f, size_t at, const void *v, size_t len)
{
	memcpy(f->image + at, v, len);
}

static void put32(struct fake *f, size_t at, uint32_t v)
{
	put(f, at, &v, 4);
}

/* An ELF header, three program headers (the text and the data PT_LOADs, the notes), the
 * GNU build-id and the block's note, and a block with its objects, undecided. */
static void fake_image(struct fake *f)
{
	memset(f, 0, sizeof *f);
	f->fail_after = -1;
	Elf64_Ehdr eh = {.e_type = ET_DYN, .e_machine = EM_X86_64, .e_phoff = sizeof eh,
			 .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 3};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	put(f, 0, &eh, sizeof eh);
	Elf64_Phdr ph[3] = {
		{.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0, .p_filesz = DATA_AT,
		 .p_memsz = DATA_AT},
		{.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = DATA_AT, .p_vaddr = DATA_AT,
		 .p_filesz = DATA_FILE_SIZE, .p_memsz = IMAGE_SIZE - DATA_AT},
		{.p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTES_AT, .p_vaddr = NOTES_AT, .p_filesz = 0x40,
		 .p_memsz = 0x40, .p_align = 4},
	};
	put(f, sizeof eh, ph, sizeof ph);
	/* GNU build-id: namesz 4, descsz 20, type 3. */
	put32(f, NOTES_AT, 4);
	put32(f, NOTES_AT + 4, 20);
	put32(f, NOTES_AT + 8, NT_GNU_BUILD_ID);
	put(f, NOTES_AT + 12, "GNU", 4);
	for (int i = 0; i < 20; i++)
		f->image[NOTES_AT + 16 + i] = (unsigned char)(0xa0 + i);
	/* Ours: namesz 8, descsz 8, the block less the descriptor's address. */
	size_t note = NOTES_AT + 36;
	put32(f, note, 8);
	put32(f, note + 4, 8);
	put32(f, note + 8, STATE_NOTE_TYPE);
	put(f, note + 12, STATE_NOTE_NAME, 8);
	int64_t relative = (int64_t)BLOCK_AT - (int64_t)(note + 20);
	put(f, note + 20, &relative, 8);

	struct state_block b = {
		.layout = STATE_BLOCK_LAYOUT,
		.size = sizeof b,
		.reads_before_decision = BASE + COUNT_AT,
		.tally = BASE + TALLY_AT,
		.stats_enabled = BASE + ENABLED_AT,
		.stats_slots = BASE + SLOTS_AT,
		.in_decision = {sizeof(struct fake_decision), offsetof(struct fake_decision, serving),
				offsetof(struct fake_decision, not_worth_it), offsetof(struct fake_decision, fenced),
				offsetof(struct fake_decision, served), offsetof(struct fake_decision, source),
				offsetof(struct fake_decision, decide_ns), offsetof(struct fake_decision, at_read),
				offsetof(struct fake_decision, reason), 64},
		.in_tally = {sizeof(struct fake_tally), offsetof(struct fake_tally, resyncs),
			     offsetof(struct fake_tally, reanchors), offsetof(struct fake_tally, stops),
			     offsetof(struct fake_tally, kernel_reads), offsetof(struct fake_tally, lost_writes),
			     offsetof(struct fake_tally, largest_error_ns), offsetof(struct fake_tally, stopped_uncovered)},
		.in_stats = {4, sizeof(struct fake_slot), STAT_CLOCKS, offsetof(struct fake_slot, count)},
		.in_stops = {offsetof(struct fake_tally, stopped_clocks), offsetof(struct fake_tally, stop_cause),
			     SERVED_CLOCK_COUNT, offsetof(struct fake_tally, held_reads)},
		.in_reason = {offsetof(struct fake_decision, code), offsetof(struct fake_tally, resumes)},
		.in_vmclock = {offsetof(struct fake_tally, disruptions), 0},
	};
	memcpy(b.magic, STATE_BLOCK_MAGIC, 8);
	put(f, BLOCK_AT, &b, sizeof b);
	uint64_t count = 640;
	put(f, COUNT_AT, &count, 8);
	struct fake_tally t = {.resyncs = 35, .reanchors = 1, .kernel_reads = 2, .lost_writes = 3, .largest_error_ns = 41,
			       .disruptions = 2};
	put(f, TALLY_AT, &t, sizeof t);
}

static struct state_block *block_of(struct fake *f)
{
	return (struct state_block *)(f->image + BLOCK_AT);
}

/* A decision: serving (its code STATE_REASON_RELIABLE), or passing through for code. */
static void fake_decide_code(struct fake *f, bool serving, uint32_t code, const char *reason)
{
	struct fake_decision d = {.decide_ns = 38441, .at_read = 1000, .source = TSCSHIM_SOURCE_USER_CACHE,
				  .served = 1u << SERVED_MONOTONIC | 1u << SERVED_REALTIME, .fenced = true,
				  .serving = serving, .code = serving ? STATE_REASON_RELIABLE : code};
	snprintf(d.reason, sizeof d.reason, "%s", reason);
	put(f, DECISION_AT, &d, sizeof d);
	block_of(f)->decision = BASE + DECISION_AT;
}

static void fake_decide(struct fake *f, bool serving, const char *reason)
{
	fake_decide_code(f, serving, STATE_REASON_UNKNOWN, reason);
}

/* The block made an earlier build's: layout 1, of size bytes (its reason has no code). */
static void layout_1(struct fake *f, uint32_t size)
{
	block_of(f)->layout = STATE_BLOCK_LAYOUT_1;
	block_of(f)->size = size;
}

static enum ps_block_result read_fake(struct fake *f, struct ps_process *p)
{
	struct ps_memory m = {fake_read, f};
	struct ps_image image;
	memset(p, 0, sizeof *p);
	if (ps_image_read(&m, BASE, &image) != 0)
		return PS_BLOCK_FAILED;
	return ps_block_read(&m, &image, p);
}

static void test_image(void)
{
	struct fake *f = malloc(sizeof *f);
	fake_image(f);
	struct ps_memory m = {fake_read, f};
	struct ps_image image;
	CHECK(ps_image_read(&m, BASE, &image) == 0);
	CHECK_EQ_U64(image.bias, BASE);
	CHECK_EQ_U64(image.block, BASE + BLOCK_AT);
	CHECK_EQ_U64(image.data_low, BASE + DATA_AT);
	CHECK_EQ_U64(image.data_high, BASE + DATA_AT + DATA_FILE_SIZE);
	CHECK_EQ_U64(image.high, BASE + IMAGE_SIZE);
	CHECK(strcmp(image.build_id, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3") == 0);
	/* Not an ELF image, or one of another machine. */
	f->image[1] = 'X';
	CHECK(ps_image_read(&m, BASE, &image) != 0);
	fake_image(f);
	((Elf64_Ehdr *)f->image)->e_machine = EM_AARCH64;
	CHECK(ps_image_read(&m, BASE, &image) != 0);
	/* No note of ours: a shim from before the block. */
	fake_image(f);
	put32(f, NOTES_AT + 36 + 8, 0x1234);
	CHECK(ps_image_read(&m, BASE, &image) == 0 && image.block == 0);
	struct ps_process p;
	CHECK(ps_block_read(&m, &image, &p) == PS_BLOCK_NONE);
	CHECK(p.state == PS_OTHER_VERSION && strcmp(p.note, "no state block") == 0);
	/* A note whose sizes run past its segment is not read. */
	fake_image(f);
	put32(f, NOTES_AT + 36 + 4, 4000);
	CHECK(ps_image_read(&m, BASE, &image) == 0 && image.block == 0);
	free(f);
}

static void test_block_undecided(void)
{
	struct fake *f = malloc(sizeof *f);
	fake_image(f);
	struct ps_process p;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ);
	CHECK(p.state == PS_UNDECIDED);
	CHECK_EQ_U64(p.reads_before_decision, 640);
	CHECK_EQ_U64(p.resyncs, 35);
	CHECK_EQ_U64(p.reanchors, 1);
	CHECK_EQ_U64(p.lost_writes, 3);
	CHECK(!p.counted);
	/* A count that moves while it is read (1002, 1001, 1000, then 640 for good): the value
	 * two reads in a row agree on. */
	f->changing = 3;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ);
	CHECK_EQ_U64(p.reads_before_decision, 640);
	CHECK(f->changing == 0);
	free(f);
}

static void test_block_decided(void)
{
	struct fake *f = malloc(sizeof *f);
	fake_image(f);
	fake_decide(f, true, "invariant TSC, monotonic, same rate");
	struct ps_process p;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ);
	CHECK(p.state == PS_SERVING && p.fenced && p.served == 9 && p.source == TSCSHIM_SOURCE_USER_CACHE);
	CHECK(p.when == PS_AT_READ && p.at_read == 1000 && p.decide_ns == 38441);
	CHECK(strcmp(p.reason, "invariant TSC, monotonic, same rate") == 0);
	CHECK(p.reason_key == NULL);
	block_of(f)->decided_at_load = 1;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.when == PS_AT_LOAD);
	/* At a status query: not at load, no read number. */
	block_of(f)->decided_at_load = 0;
	uint64_t zero = 0;
	put(f, DECISION_AT + offsetof(struct fake_decision, at_read), &zero, 8);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.when == PS_AT_QUERY);
	/* An earlier build's block, which says only that serving stopped: its watchdog stopped
	 * it since, passing through, "watchdog"; the affinity widened, "affinity". */
	layout_1(f, STATE_BLOCK_V1_SIZE);
	uint64_t one = 1;
	put(f, TALLY_AT + offsetof(struct fake_tally, stops), &one, 8);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING && strcmp(p.reason_key, "watchdog") == 0);
	put(f, TALLY_AT + offsetof(struct fake_tally, stopped_uncovered), &one, 8);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING && strcmp(p.reason_key, "affinity") == 0);
	/* Passing through from the start, with its reason's key: from the code, whatever the
	 * text says (layout 2); from the text in an earlier build's block (layout 1). */
	fake_image(f);
	fake_decide_code(f, false, STATE_REASON_DISABLED, "a text that begins like no row's");
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING && strcmp(p.reason_key, "disabled") == 0);
	CHECK(p.reason_code_known && p.reason_code == STATE_REASON_DISABLED);
	fake_decide_code(f, false, STATE_REASON_MAX_SHIFT, "TSCSHIM_DISABLE=1");
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && strcmp(p.reason_key, "max-shift") == 0);
	fake_decide_code(f, false, 9999, "TSCSHIM_DISABLE=1");
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && strcmp(p.reason_key, "other") == 0);
	layout_1(f, STATE_BLOCK_STOPS_SIZE);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING && strcmp(p.reason_key, "disabled") == 0);
	CHECK(!p.reason_code_known && !p.resumes_known);
	/* A reason that fills its room without a NUL, with a control character: cut, kept as
	 * the process wrote it (each output escapes it). */
	fake_image(f);
	fake_decide(f, false, "");
	memset(f->image + DECISION_AT, 'x', 64);
	f->image[DECISION_AT + 3] = '\n';
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && strlen(p.reason) == 63 && p.reason[3] == '\n');
	CHECK(strcmp(p.reason_key, "other") == 0);
	/* Cut where a character ends: a two-byte character across the room's last byte. */
	f->image[DECISION_AT + 62] = (char)0xc3;
	f->image[DECISION_AT + 63] = (char)0xa9;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && strlen(p.reason) == 62);
	free(f);
}

/* Sets the fake tally's field at `at` (offsetof(struct fake_tally, ...)). */
static void put_tally(struct fake *f, size_t at, uint64_t v)
{
	put(f, TALLY_AT + at, &v, 8);
}

static void put_stop(struct fake *f, unsigned clock, uint64_t cause)
{
	uint64_t stopped;
	memcpy(&stopped, f->image + TALLY_AT + offsetof(struct fake_tally, stopped_clocks), 8);
	put_tally(f, offsetof(struct fake_tally, stopped_clocks), stopped | 1u << clock);
	put_tally(f, offsetof(struct fake_tally, stop_cause) + clock * 8, cause);
}

/* The per-clock stops, read by the block's offsets: a process serves while some clock
 * the decision served has not stopped, and passes through once all have, with the
 * MONOTONIC stop's cause (the whole line's). The decision serves MONOTONIC and REALTIME. */
static void test_block_stops(void)
{
	struct fake *f = malloc(sizeof *f);
	struct ps_process p;
	fake_image(f);
	fake_decide(f, true, "reliable");
	/* REALTIME stopped (unreadable), and BOOTTIME's bit, a clock the decision did not
	 * serve, means nothing; `stops` counts the publication that stopped REALTIME. */
	put_stop(f, SERVED_REALTIME, TSCSHIM_STOP_UNREADABLE);
	put_stop(f, SERVED_BOOTTIME, TSCSHIM_STOP_BEHIND);
	put_tally(f, offsetof(struct fake_tally, stops), 1);
	put_tally(f, offsetof(struct fake_tally, held_reads), 12);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ);
	CHECK(p.stops_known && p.state == PS_SERVING && p.reason_key == NULL);
	CHECK_EQ_U64(p.stopped_clocks, 1u << SERVED_REALTIME);
	CHECK_EQ_U64(p.stop_cause[SERVED_REALTIME], TSCSHIM_STOP_UNREADABLE);
	CHECK_EQ_U64(p.held_reads, 12);
	/* MONOTONIC stopped too (the whole line, behind): passing through, "behind", though
	 * REALTIME's own cause differs. */
	put_stop(f, SERVED_MONOTONIC, TSCSHIM_STOP_BEHIND);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING);
	CHECK(strcmp(p.reason_key, "behind") == 0);
	CHECK_EQ_U64(p.stopped_clocks, 1u << SERVED_MONOTONIC | 1u << SERVED_REALTIME);
	/* A cause this reader does not know: "other". */
	put_tally(f, offsetof(struct fake_tally, stop_cause) + SERVED_MONOTONIC * 8, 99);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING && strcmp(p.reason_key, "other") == 0);
	/* An earlier build of layout 1 (a block without in_stops): whatever lies past its
	 * end is not read, and a stop is the whole line's, "watchdog". */
	layout_1(f, STATE_BLOCK_V1_SIZE);
	block_of(f)->in_stops.stop_causes = 0xffff;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && !p.stops_known && p.stopped_clocks == 0 && p.held_reads == 0);
	CHECK(p.state == PS_PASSING && strcmp(p.reason_key, "watchdog") == 0);
	put_tally(f, offsetof(struct fake_tally, stops), 0);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_SERVING);
	/* A newer block, with fields after in_stops: the stops read as this reader knows them. */
	fake_image(f);
	fake_decide(f, true, "reliable");
	put_stop(f, SERVED_REALTIME, TSCSHIM_STOP_JUMPS);
	block_of(f)->size = STATE_BLOCK_STOPS_SIZE + 64;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_SERVING && p.stop_cause[SERVED_REALTIME] == 4);
	/* A process that passes through from the start has no stopped clocks, whatever the bits. */
	fake_decide_code(f, false, STATE_REASON_DISABLED, "TSCSHIM_DISABLE=1");
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_PASSING && p.stopped_clocks == 0);
	CHECK(strcmp(p.reason_key, "disabled") == 0);
	/* Offsets outside the tally, and a count of causes beyond one per clock bit: refused. */
	const struct {
		size_t field;
		uint16_t value;
	} bad[] = {
		{offsetof(struct state_block, in_stops.stopped_clocks), sizeof(struct fake_tally) - 4},
		{offsetof(struct state_block, in_stops.held_reads), sizeof(struct fake_tally)},
		{offsetof(struct state_block, in_stops.stop_cause), sizeof(struct fake_tally) - 8},
		{offsetof(struct state_block, in_stops.stop_causes), 0},
		{offsetof(struct state_block, in_stops.stop_causes), 33},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		fake_image(f);
		memcpy((unsigned char *)block_of(f) + bad[i].field, &bad[i].value, 2);
		CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a counter outside the tally"));
	}
	free(f);
}

/* ps_classify on made-up decisions: which clocks count, and the key of a process whose
 * every served clock stopped. */
static void test_classify(void)
{
	struct ps_process p;
	memset(&p, 0, sizeof p);
	p.serving = true;
	p.stops_known = true;
	p.served = 0xf;
	ps_classify(&p);
	CHECK(p.state == PS_SERVING && p.reason_key == NULL);
	/* Three of four stopped (by publications `stops` counts): serving. */
	p.stops = 2;
	p.stopped_clocks = 0x7;
	p.stop_cause[0] = p.stop_cause[1] = p.stop_cause[2] = TSCSHIM_STOP_NOISY;
	ps_classify(&p);
	CHECK(p.state == PS_SERVING && p.stopped_clocks == 0x7);
	/* The fourth: passing through, MONOTONIC's cause. */
	p.stopped_clocks = 0xf;
	p.stop_cause[SERVED_REALTIME] = TSCSHIM_STOP_UNREADABLE;
	ps_classify(&p);
	CHECK(p.state == PS_PASSING && strcmp(p.reason_key, "noisy") == 0);
	/* Without MONOTONIC served: the first stopped clock's cause. Bits of clocks not served
	 * (MONOTONIC's here) are dropped. */
	p.served = 1u << SERVED_BOOTTIME | 1u << SERVED_REALTIME;
	p.stopped_clocks = 0xf;
	p.stop_cause[SERVED_BOOTTIME] = TSCSHIM_STOP_UNCOVERED;
	ps_classify(&p);
	CHECK(p.state == PS_PASSING && strcmp(p.reason_key, "affinity") == 0);
	CHECK_EQ_U64(p.stopped_clocks, p.served);
	/* A clock this reader does not know (bit 5) still serving: serving. */
	p.served |= 1u << 5;
	ps_classify(&p);
	CHECK(p.state == PS_SERVING);
	/* An earlier build's block: any stop is the line's; a widened affinity says "affinity". */
	memset(&p, 0, sizeof p);
	p.serving = true;
	p.served = 0xf;
	p.stopped_clocks = 0x8; /* not read from such a block; ignored if set */
	ps_classify(&p);
	CHECK(p.state == PS_SERVING);
	p.stops = 2;
	ps_classify(&p);
	CHECK(p.state == PS_PASSING && strcmp(p.reason_key, "watchdog") == 0);
	p.stopped_uncovered = true;
	ps_classify(&p);
	CHECK(p.state == PS_PASSING && strcmp(p.reason_key, "affinity") == 0);
}

static void test_block_counts(void)
{
	struct fake *f = malloc(sizeof *f);
	fake_image(f);
	fake_decide(f, true, "reliable");
	f->image[ENABLED_AT] = 1;
	struct fake_slot s[2] = {0};
	s[0].count[SERVED_MONOTONIC][1] = 1000;
	s[0].count[SERVED_MONOTONIC][0] = 1;
	s[1].count[SERVED_REALTIME][1] = 500;
	s[1].count[STAT_OTHER][0] = 7;
	put(f, SLOTS_AT, s, sizeof s);
	struct ps_process p;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ);
	CHECK(p.counted);
	CHECK_EQ_U64(p.served_reads, 1500);
	CHECK_EQ_U64(p.calls, 1508);
	free(f);
}

/* Every block that is not one this reader knows is "another version", with what it is,
 * and nothing else of it is reported. */
static void test_block_refused(void)
{
	struct fake *f = malloc(sizeof *f);
	struct ps_process p;
	fake_image(f);
	block_of(f)->layout = 3;
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && p.state == PS_OTHER_VERSION);
	CHECK(strcmp(p.note, "state layout 3") == 0);
	/* Layout 2 smaller than its own fields, or their offsets outside their objects. */
	fake_image(f);
	block_of(f)->size = STATE_BLOCK_STOPS_SIZE;
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strcmp(p.note, "state block of a wrong size") == 0);
	fake_image(f);
	block_of(f)->in_reason.code = (uint16_t)(sizeof(struct fake_decision) - 2);
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a decision field outside the decision"));
	fake_image(f);
	block_of(f)->in_reason.resumes = (uint16_t)(sizeof(struct fake_tally) - 4);
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a counter outside the tally"));
	fake_image(f);
	block_of(f)->in_vmclock.disruptions = (uint16_t)(sizeof(struct fake_tally) - 4);
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a counter outside the tally"));
	/* The disruptions where the block says, and not known where it says nothing (0: an
	 * earlier build's reserved word). */
	fake_image(f);
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.disruptions_known && p.disruptions == 2);
	block_of(f)->in_vmclock.disruptions = 0;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && !p.disruptions_known && p.disruptions == 0);
	fake_image(f);
	block_of(f)->magic[0] = 'X';
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strcmp(p.note, "state block not recognized") == 0);
	fake_image(f);
	block_of(f)->size = 64;
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strcmp(p.note, "state block of a wrong size") == 0);
	fake_image(f);
	block_of(f)->tally = BASE + IMAGE_SIZE - 8;
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "an address outside the image"));
	fake_image(f);
	fake_decide(f, true, "reliable");
	block_of(f)->decision = 0x1000;
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "an address outside the image"));
	fake_image(f);
	block_of(f)->in_decision.at_read = (uint16_t)(sizeof(struct fake_decision) - 4);
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a decision field outside the decision"));
	fake_image(f);
	block_of(f)->in_tally.resyncs = (uint16_t)sizeof(struct fake_tally);
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a counter outside the tally"));
	fake_image(f);
	block_of(f)->in_stats.clocks = 40;
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strstr(p.note, "a count outside its slot"));
	/* The note points outside the data segment's file-backed part. */
	fake_image(f);
	int64_t far = (int64_t)(SLOTS_AT - (NOTES_AT + 56));
	put(f, NOTES_AT + 56, &far, 8);
	CHECK(read_fake(f, &p) == PS_BLOCK_OTHER && strcmp(p.note, "state block outside the image's data") == 0);
	/* A process still being loaded: its block's addresses not relocated yet (some or all):
	 * undecided, nothing read through them. */
	fake_image(f);
	block_of(f)->tally -= BASE;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_UNDECIDED);
	CHECK(p.reads_before_decision == 0 && p.resyncs == 0);
	/* A newer block with fields appended: read as far as this reader knows. */
	fake_image(f);
	block_of(f)->size = STATE_BLOCK_V1_SIZE + 64;
	CHECK(read_fake(f, &p) == PS_BLOCK_READ && p.state == PS_UNDECIDED);
	free(f);
}

/* A process that exits while it is read: every read from the Nth of the block's on fails,
 * and the block is either read whole before it or not at all. */
static void test_block_exit(void)
{
	struct fake *f = malloc(sizeof *f);
	struct ps_process p;
	for (int n = 0; n < 12; n++) {
		fake_image(f);
		fake_decide(f, true, "reliable");
		struct ps_memory m = {fake_read, f};
		struct ps_image image;
		CHECK(ps_image_read(&m, BASE, &image) == 0);
		f->reads = 0;
		f->fail_after = n;
		enum ps_block_result r = ps_block_read(&m, &image, &p);
		CHECK(r == PS_BLOCK_FAILED || (r == PS_BLOCK_READ && p.state == PS_SERVING && f->reads <= n));
		if (n == 0)
			CHECK(r == PS_BLOCK_FAILED);
	}
	free(f);
}

/* ---- /proc/PID/status, denials ---- */

static void test_status_and_denial(void)
{
	unsigned uid = 0;
	CHECK(ps_status_uid("Name:\tsleep\nUmask:\t0022\nState:\tS\nUid:\t1000\t1001\t1001\t1001\nGid:\t0\n", &uid) == 0);
	CHECK_EQ_U64(uid, 1001);
	CHECK(ps_status_uid("Uid:\t7\t8\t8\t8\n", &uid) == 0 && uid == 8);
	CHECK(ps_status_uid("Name:\tx\nGid:\t0\t0\n", &uid) != 0);
	CHECK(ps_status_uid("Name:\tx\nUid:\tzz\n", &uid) != 0);
	CHECK(ps_denied_why(1000, 0, 0) == PS_DENIED_OTHER_USER);
	CHECK(ps_denied_why(1000, 1001, 1) == PS_DENIED_OTHER_USER);
	CHECK(ps_denied_why(1000, 1000, 1) == PS_DENIED_PTRACE_SCOPE);
	CHECK(ps_denied_why(1000, 1000, 0) == PS_DENIED_NOT_PERMITTED);
}

/* ---- reasons ---- */

static void test_reason_keys(void)
{
	/* A text of each kind the decision writes, and its key. */
	static const struct {
		const char *text, *key;
	} cases[] = {
		{"TSCSHIM_DISABLE=1", "disabled"},
		{"TSCSHIM_CLOCKS=none", "no-clocks"},
		{"TSCSHIM_FENCE: invalid value '7': expected 0 or 1", "invalid-setting"},
		{"secure execution: environment and cache ignored, passing through", "secure-execution"},
		{"built for glibc, but the program runs on musl: preload the library built for musl", "other-libc"},
		{"cannot read /proc/sys/kernel/random/boot_id (no /proc?): no record can be trusted", "no-proc"},
		{"cannot read the CPU affinity (more than 1024 CPUs?)", "no-affinity"},
		{"no record answers this process at its read (another boot, CPU or CPU set, or unusable)", "no-record"},
		{"another process was measuring and left no answer within the budget", "measurer-gone"},
		{"seccomp strict mode: the estimator cannot run; passing through", "seccomp"},
		{"pass-through: the record holds no costs of this build under this clocksource", "no-costs"},
		{"pass-through: the kernel's clock costs 23.4 ns here, the counter 23.0 ns (fenced), not 5% cheaper",
		 "not-worth-it"},
		{"the CPU has no time-stamp counter", "no-counter"},
		{"the CPU does not report an invariant TSC (CPUID 0x80000007 EDX bit 8)", "not-invariant"},
		{"the kernel's clocksource is 'kvm-clock', not tsc (TSCSHIM_REQUIRE_TSC_CLOCKSOURCE=1)", "clocksource"},
		{"the counter's rate is unknown", "rate-unknown"},
		{"the estimator did not run", "no-estimate"},
		{"estimate inconclusive: 3 loops, at least 2 ranges per CPU pair (need 10 each); measured again in 10 s",
		 "inconclusive"},
		{"counters not monotonic across CPUs: 2 steps back, largest 40 ticks", "not-monotonic"},
		{"counters inconsistent: stuck (CPU index 1)", "inconsistent"},
		{"maximum shift bound 2000 ns exceeds TSCSHIM_MAX_SKEW_NS=1", "max-shift"},
		{"could not publish the first line", "clock-start"},
		{"the re-synchronization interval rounds to zero ticks", "clock-start"},
		{"the thread deciding died mid-decision (killed by a seccomp filter?)", "decider-died"},
		{"a reason no row knows", "other"},
		{"", "other"},
	};
	struct ps_process p;
	memset(&p, 0, sizeof p);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(p.reason, sizeof p.reason, "%s", cases[i].text);
		const char *key = ps_reason_key(&p);
		if (strcmp(key, cases[i].key) != 0) {
			printf("# '%s': key %s, expected %s\n", cases[i].text, key, cases[i].key);
			CHECK(!"the reason's key");
		}
	}
	/* Every key once, then NULL; each key a label value a dashboard can key on. */
	size_t n = 0;
	for (; ps_reason_key_at(n); n++) {
		for (size_t j = 0; j < n; j++)
			CHECK(strcmp(ps_reason_key_at(j), ps_reason_key_at(n)) != 0);
		CHECK(strspn(ps_reason_key_at(n), "abcdefghijklmnopqrstuvwxyz-") == strlen(ps_reason_key_at(n)));
	}
	CHECK(n >= 20 && n < 64);
	/* The stops' causes: each public cause a key of the table, any other "other". */
	static const struct {
		uint64_t cause;
		const char *key;
	} stops[] = {
		{TSCSHIM_STOP_UNREADABLE, "unreadable"}, {TSCSHIM_STOP_NOISY, "noisy"},     {TSCSHIM_STOP_BEHIND, "behind"},
		{TSCSHIM_STOP_JUMPS, "jumps"},           {TSCSHIM_STOP_UNCOVERED, "affinity"}, {TSCSHIM_STOP_CORRUPT, "corrupt"},
		{TSCSHIM_STOP_DISRUPTED, "disrupted"},   {TSCSHIM_STOP_NONE, "other"},
		{TSCSHIM_STOP_DISRUPTED + 1, "other"},   {UINT64_MAX, "other"},
	};
	for (size_t i = 0; i < sizeof stops / sizeof *stops; i++) {
		CHECK(strcmp(ps_stop_key(stops[i].cause), stops[i].key) == 0);
		bool listed = false;
		for (size_t j = 0; j < n; j++)
			listed = listed || strcmp(ps_reason_key_at(j), stops[i].key) == 0;
		CHECK(listed);
	}
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		bool listed = false;
		for (size_t j = 0; j < n; j++)
			listed = listed || strcmp(ps_reason_key_at(j), cases[i].key) == 0;
		CHECK(listed);
	}
}

/* ---- the outputs ---- */

static void three_processes(struct ps_process p[4])
{
	memset(p, 0, 4 * sizeof *p);
	p[0] = (struct ps_process){.pid = 101, .user = "root", .command = "server", .state = PS_SERVING,
				   .fenced = true, .served = 0xf, .source = TSCSHIM_SOURCE_SYSTEM_RECORD,
				   .when = PS_AT_READ, .at_read = 1000, .decide_ns = 41200, .resyncs = 35,
				   .counted = true, .served_reads = 4000, .calls = 4010};
	p[1] = (struct ps_process){.pid = 102, .user = "alice", .uid = 1000, .command = "date",
				   .state = PS_PASSING, .source = TSCSHIM_SOURCE_NONE, .when = PS_AT_LOAD,
				   .decide_ns = 400, .reason = "TSCSHIM_DISABLE=1", .reason_key = "disabled"};
	p[2] = (struct ps_process){.pid = 103, .user = "root", .command = "sh", .state = PS_UNDECIDED,
				   .reads_before_decision = 64};
	p[3] = (struct ps_process){.pid = 104, .user = "root", .command = "old", .state = PS_OTHER_VERSION,
				   .note = "no state block"};
}

static char *written(void (*write)(FILE *, const struct ps_process *, size_t, const struct ps_scan_totals *),
		     const struct ps_process *p, size_t n, const struct ps_scan_totals *t)
{
	static char text[16384];
	FILE *out = fmemopen(text, sizeof text, "w");
	write(out, p, n, t);
	fclose(out);
	return text;
}

static void test_table(void)
{
	struct ps_process p[4];
	three_processes(p);
	struct ps_scan_totals t = {.not_inspected = {[PS_DENIED_OTHER_USER] = 12}, .exited = 1};
	char *text = written(ps_write_table, p, 4, &t);
	CHECK(strstr(text, "    PID USER       COMMAND "));
	CHECK(strstr(text, "\n    101 root       server           record   at read 1000      41 us       35         0 "
			   "      4000  serving, fenced: monotonic,monotonic_raw,boottime,realtime\n"));
	CHECK(strstr(text, "\n    102 alice      date             -        at load          0.4 us        0         0 "
			   "         -  passing through: disabled\n"));
	CHECK(strstr(text, "  undecided, 64 reads\n"));
	CHECK(strstr(text, "  loaded, another version (no state block)\n"));
	CHECK(strstr(text, "\n4 processes with the shim loaded: 1 serving, 1 passing through (disabled 1), 1 undecided, "
			   "1 another version; could not look into 12 other processes (another user's 12); 1 exited "
			   "while being read\n"));
	/* Nothing: the header and a summary of none. */
	struct ps_scan_totals none = {0};
	text = written(ps_write_table, p, 0, &none);
	CHECK(strstr(text, "\n0 processes with the shim loaded: 0 serving, 0 passing through, 0 undecided\n"));
}

static void test_json(void)
{
	struct ps_process p[4];
	three_processes(p);
	struct ps_scan_totals t = {.not_inspected = {[PS_DENIED_PTRACE_SCOPE] = 2}};
	char *text = written(ps_write_json, p, 4, &t);
	CHECK(strstr(text, "\"state\": \"serving\", \"fenced\": true, \"clocks\": [\"monotonic\", \"monotonic_raw\", "
			   "\"boottime\", \"realtime\"]"));
	CHECK(strstr(text, "\"source\": \"system_record\", \"decided\": {\"at\": \"read\", \"read\": 1000, "
			   "\"cost_ns\": 41200}"));
	CHECK(strstr(text, "\"served_reads\": 4000, \"calls\": 4010}"));
	CHECK(strstr(text, "\"reason\": \"TSCSHIM_DISABLE=1\", \"reason_key\": \"disabled\", \"source\": \"none\", "
			   "\"decided\": {\"at\": \"load\", \"cost_ns\": 400}"));
	CHECK(strstr(text, "\"state\": \"undecided\", \"reads_before_decision\": 64, \"served_reads\": null"));
	CHECK(strstr(text, "\"state\": \"other_version\", \"note\": \"no state block\"}"));
	CHECK(strstr(text, "\"summary\": {\"processes\": 4, \"serving\": 1, \"passing_through\": 1, \"undecided\": 1, "
			   "\"other_version\": 1, \"unreadable\": 0, \"skipped\": 0, \"passing_through_by_reason\": {\"disabled\": 1}"));
	CHECK(strstr(text, "\"not_inspected\": {\"processes\": 2, \"by_why\": {\"ptrace_scope\": 2}}"));
	CHECK(strstr(text, "\"exited_while_read\": 0\n}\n"));
}

static void test_prometheus(void)
{
	struct ps_process p[4];
	three_processes(p);
	struct ps_scan_totals t = {.not_inspected = {[PS_DENIED_OTHER_USER] = 3}};
	char *text = written(ps_write_prometheus, p, 4, &t);
	CHECK(strstr(text, "# HELP tscshim_processes "));
	CHECK(strstr(text, "\n# TYPE tscshim_processes gauge\ntscshim_processes{state=\"serving\"} 1\n"
			   "tscshim_processes{state=\"passing_through\"} 1\ntscshim_processes{state=\"undecided\"} 1\n"
			   "tscshim_processes{state=\"other_version\"} 1\ntscshim_processes{state=\"unreadable\"} 0\n"));
	CHECK(strstr(text, "\ntscshim_passing_through_processes{reason=\"disabled\"} 1\n"));
	CHECK(strstr(text, "\ntscshim_passing_through_processes{reason=\"watchdog\"} 0\n"));
	CHECK(strstr(text, "\ntscshim_not_inspected_processes{why=\"another_user\"} 3\n"));
	CHECK(strstr(text, "\ntscshim_resyncs 35\n"));
	CHECK(strstr(text, "\ntscshim_served_reads 4000\n"));
	/* Every sample's family has its HELP and TYPE lines before it. */
	char copy[16384];
	snprintf(copy, sizeof copy, "%s", text);
	char family[128] = "";
	for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "# HELP ", 7) == 0) {
			snprintf(family, sizeof family, "%.*s", (int)strcspn(line + 7, " "), line + 7);
			continue;
		}
		if (line[0] == '#')
			continue;
		size_t len = strcspn(line, "{ ");
		CHECK(strlen(family) == len && strncmp(line, family, len) == 0);
	}
}

/* Processes with clocks stopped: one whose REALTIME stopped while the rest serve, one
 * whose whole line stopped (behind), one read from an earlier build's block (no causes),
 * and one with a stopped clock this reader does not know. */
static void stopped_processes(struct ps_process p[4])
{
	memset(p, 0, 4 * sizeof *p);
	p[0] = (struct ps_process){.pid = 201, .user = "root", .command = "server", .serving = true, .fenced = true,
				   .served = 0xf, .source = TSCSHIM_SOURCE_USER_CACHE, .when = PS_AT_READ, .at_read = 1,
				   .decide_ns = 30000, .stops_known = true, .stopped_clocks = 1u << SERVED_REALTIME,
				   .held_reads = 3};
	p[0].stop_cause[SERVED_REALTIME] = TSCSHIM_STOP_UNREADABLE;
	p[1] = (struct ps_process){.pid = 202, .user = "root", .command = "frozen", .serving = true, .fenced = true,
				   .served = 0xf, .source = TSCSHIM_SOURCE_USER_CACHE, .when = PS_AT_READ, .at_read = 1,
				   .decide_ns = 30000, .stops = 1, .stops_known = true, .stopped_clocks = 0xf};
	for (int c = 0; c < SERVED_CLOCK_COUNT; c++)
		p[1].stop_cause[c] = TSCSHIM_STOP_BEHIND;
	p[2] = (struct ps_process){.pid = 203, .user = "root", .command = "older", .serving = true, .served = 0xf,
				   .when = PS_AT_LOAD, .stops = 1};
	p[3] = (struct ps_process){.pid = 204, .user = "root", .command = "newer", .serving = true, .served = 0x21,
				   .when = PS_AT_LOAD, .stops_known = true, .stopped_clocks = 0x20};
	p[3].stop_cause[5] = 99;
	for (int i = 0; i < 4; i++)
		ps_classify(&p[i]);
}

static void test_outputs_stopped(void)
{
	struct ps_process p[4];
	stopped_processes(p);
	struct ps_scan_totals t = {0};
	char *text = written(ps_write_table, p, 4, &t);
	CHECK(strstr(text, "  serving, fenced: monotonic,monotonic_raw,boottime; stopped: realtime (unreadable)\n"));
	CHECK(strstr(text, "  passing through: behind\n"));
	CHECK(strstr(text, "  passing through: watchdog\n"));
	CHECK(strstr(text, "  serving, unfenced: monotonic; stopped: clock5 (other)\n"));
	/* A process with some clocks stopped is serving; one with all, passing through. */
	CHECK(strstr(text, "\n4 processes with the shim loaded: 2 serving, 2 passing through (behind 1, watchdog 1), "
			   "0 undecided\n"));

	text = written(ps_write_json, p, 4, &t);
	CHECK(strstr(text, "\"largest_error_ns\": 0, \"resumes\": null, \"disruptions\": null, \"stopped\": {\"realtime\": "
			   "\"unreadable\"}, \"held_reads\": 3"));
	CHECK(strstr(text, "\"reason_key\": \"behind\""));
	CHECK(strstr(text, "\"stopped\": {\"monotonic\": \"behind\", \"monotonic_raw\": \"behind\", "
			   "\"boottime\": \"behind\", \"realtime\": \"behind\"}, \"held_reads\": 0"));
	CHECK(strstr(text, "\"reason_key\": \"watchdog\""));
	CHECK(strstr(text, "\"stopped\": null, \"held_reads\": null"));
	CHECK(strstr(text, "\"stopped\": {\"clock5\": \"other\"}"));

	text = written(ps_write_prometheus, p, 4, &t);
	CHECK(strstr(text, "\n# TYPE tscshim_stopped_clocks gauge\n"
			   "tscshim_stopped_clocks{clock=\"monotonic\",cause=\"unreadable\"} 0\n"));
	CHECK(strstr(text, "\ntscshim_stopped_clocks{clock=\"realtime\",cause=\"unreadable\"} 1\n"));
	CHECK(strstr(text, "\ntscshim_stopped_clocks{clock=\"realtime\",cause=\"behind\"} 1\n"));
	CHECK(strstr(text, "\ntscshim_stopped_clocks{clock=\"monotonic\",cause=\"behind\"} 1\n"));
	CHECK(strstr(text, "\ntscshim_stopped_clocks{clock=\"boottime\",cause=\"corrupt\"} 0\n"
			   "tscshim_stopped_clocks{clock=\"boottime\",cause=\"disrupted\"} 0\n"
			   "tscshim_stopped_clocks{clock=\"boottime\",cause=\"other\"} 0\n"));
	CHECK(strstr(text, "\ntscshim_stopped_clocks{clock=\"clock5\",cause=\"other\"} 1\n"));
	/* Every clock this reader knows with every cause (8), and the unknown one's. */
	size_t samples = 0;
	for (const char *at = text; (at = strstr(at, "\ntscshim_stopped_clocks{")); at++)
		samples++;
	CHECK_EQ_U64(samples, (SERVED_CLOCK_COUNT + 1) * 8);
	/* An unknown clock with nothing stopped has no samples. */
	p[3].stopped_clocks = 0;
	text = written(ps_write_prometheus, p, 4, &t);
	CHECK(!strstr(text, "clock5"));
}

/* ---- outputs whatever the processes hold ---- */

/* Strict UTF-8 (no overlong form, no surrogate, nothing past U+10FFFF), checked here apart
 * from ps_report.c's own. */
static bool valid_utf8(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned c = s[i];
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (n == 0 || i + n > len)
			return false;
		uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

/* No control character but the line ends: C0, DEL, C1 as one byte or as UTF-8. */
static bool no_controls(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if ((s[i] < 0x20 && s[i] != '\n') || s[i] == 0x7f)
			return false;
		if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
			return false;
	}
	return valid_utf8(s, len); /* a lone 0x80-0x9f byte is no valid UTF-8 */
}

static void test_text_safety(void)
{
	char b[256];
	/* Valid UTF-8 passes; every control character and every byte of no character is
	 * escaped, each byte as \xNN; a backslash doubled. */
	ps_terminal_text(b, sizeof b, "caf\xc3\xa9 \xe2\x82\xac");
	CHECK(strcmp(b, "caf\xc3\xa9 \xe2\x82\xac") == 0);
	ps_terminal_text(b, sizeof b, "a\x1b[2Jb\x7f\x9b\xc2\x9b\\\xff\xc0\xaf\xed\xa0\x80");
	CHECK(strcmp(b, "a\\x1b[2Jb\\x7f\\x9b\\xc2\\x9b\\\\\\xff\\xc0\\xaf\\xed\\xa0\\x80") == 0);
	/* Cut to fit at a piece's end, never inside an escape or a character. */
	ps_terminal_text(b, 6, "ab\x1b\xc3\xa9");
	CHECK(strcmp(b, "ab") == 0);
	ps_terminal_text(b, 5, "ab\xc3\xa9x");
	CHECK(strcmp(b, "ab\xc3\xa9") == 0);

	static char json[256];
	FILE *out = fmemopen(json, sizeof json, "w");
	ps_json_string(out, "q\"\\\n\x01\x7f\x85\xc2\x85\xff\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xa8");
	fclose(out);
	CHECK(strcmp(json, "\"q\\\"\\\\\\u000a\\u0001\\u007f\\ufffd\\u0085\\ufffd\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xa8\"") == 0);
	CHECK(valid_utf8((const unsigned char *)json, strlen(json)));

	/* A cut where a character ends; an incomplete last character dropped. */
	char t[32];
	snprintf(t, sizeof t, "ab\xc3\xa9\xe2\x82\xac");
	ps_utf8_cut(t, 6);
	CHECK(strcmp(t, "ab\xc3\xa9") == 0);
	snprintf(t, sizeof t, "probe\xe2\x82");
	ps_utf8_cut(t, 31);
	CHECK(strcmp(t, "probe") == 0);
	snprintf(t, sizeof t, "x\xffy\x80");
	ps_utf8_cut(t, 31);
	CHECK(strcmp(t, "x\xffy\x80") == 0); /* bytes of no character stay, for the outputs to escape */
}

/* A process named and laid out by a hostile user: controls and bytes of no character in
 * its name, path and reason; in the table none reaches the terminal, --json stays UTF-8. */
static void test_hostile_names(void)
{
	struct ps_process p[1];
	memset(p, 0, sizeof p);
	p[0] = (struct ps_process){.pid = 7, .user = "eve\x9b", .command = "\x1b]0;x\x07\xc2\x9b\xff", .state = PS_PASSING,
				   .library = "/tmp/\x1b[1m/libtscshim.so", .reason = "\x9b\n\"", .reason_key = "other"};
	struct ps_scan_totals t = {0};
	static char text[16384];
	for (int k = 0; k < 3; k++) {
		FILE *out = fmemopen(text, sizeof text, "w");
		(k == 0 ? ps_write_table : k == 1 ? ps_write_json : ps_write_prometheus)(out, p, 1, &t);
		fclose(out);
		if (k == 0)
			CHECK(no_controls((const unsigned char *)text, strlen(text)));
		CHECK(valid_utf8((const unsigned char *)text, strlen(text)));
	}
}

/* One forged block's counts near 2^64 must not wrap the machine's sums: left out, said so;
 * counts that can be real still saturate rather than wrap. */
static void test_sums_not_real(void)
{
	struct ps_process p[3];
	memset(p, 0, sizeof p);
	for (int i = 0; i < 3; i++)
		p[i] = (struct ps_process){.pid = 300 + i, .user = "root", .command = "x", .state = PS_SERVING,
					   .serving = true, .fenced = true, .served = 1, .stops_known = true, .resumes_known = true,
					   .resyncs = 10, .resumes = 1, .counted = true, .served_reads = 5,
					   .disruptions_known = true, .disruptions = 1};
	p[2].resyncs = UINT64_MAX - 9; /* with the others' 20: 10 after a wrap */
	p[2].served_reads = UINT64_MAX;
	struct ps_scan_totals t = {0};
	char *text = written(ps_write_prometheus, p, 3, &t);
	CHECK(strstr(text, "\ntscshim_resyncs 20\n"));
	CHECK(strstr(text, "\ntscshim_served_reads 10\n"));
	CHECK(strstr(text, "\ntscshim_resumes 3\n"));
	CHECK(strstr(text, "\ntscshim_disruptions 3\n"));
	CHECK(strstr(text, "\ntscshim_counts_left_out 2\n"));
	text = written(ps_write_table, p, 3, &t);
	CHECK(strstr(text, "; 2 counts left out of the sums (beyond any a process reaches)\n"));
	CHECK(strstr(text, "  serving, fenced: monotonic; resumed 1; disrupted 1\n"));
	text = written(ps_write_json, p, 3, &t);
	CHECK(strstr(text, "\"resyncs\": 20, \"fallbacks\": 0, \"resumes\": 3, \"disruptions\": 3, \"counting\": 3, "
			   "\"served_reads\": 10, "
			   "\"counts_left_out\": 2"));
	/* Large counts that may be real: the sum saturates. */
	p[2].resyncs = PS_COUNT_NOT_REAL - 1;
	p[1].resyncs = PS_COUNT_NOT_REAL - 1;
	p[0].resyncs = PS_COUNT_NOT_REAL - 1;
	p[0].reanchors = UINT64_MAX;
	p[0].stops = 5; /* fallbacks: saturated, then not real */
	text = written(ps_write_prometheus, p, 3, &t);
	CHECK(strstr(text, "\ntscshim_resyncs 13835058055282163709\n"));
	struct ps_process six[6];
	for (int i = 0; i < 6; i++)
		six[i] = p[1];
	text = written(ps_write_prometheus, six, 6, &t);
	CHECK(strstr(text, "\ntscshim_resyncs 18446744073709551615\n"));
}

/* A process skipped (its memory not resident): said in each output. */
static void test_skipped(void)
{
	struct ps_process p[1];
	memset(p, 0, sizeof p);
	p[0] = (struct ps_process){.pid = 9, .user = "nobody", .command = "x", .state = PS_SKIPPED,
				   .note = "its state is not in memory: reading it could wait on its file system"};
	struct ps_scan_totals t = {0};
	char *text = written(ps_write_table, p, 1, &t);
	CHECK(strstr(text, "  skipped (its state is not in memory: reading it could wait on its file system)\n"));
	CHECK(strstr(text, "\n1 process with the shim loaded: 0 serving, 0 passing through, 0 undecided, 1 skipped\n"));
	text = written(ps_write_json, p, 1, &t);
	CHECK(strstr(text, "\"state\": \"skipped\", \"note\": \"its state is not in memory"));
	text = written(ps_write_prometheus, p, 1, &t);
	CHECK(strstr(text, "\ntscshim_processes{state=\"skipped\"} 1\n"));
}

/* Random processes (any bytes in their texts, any counts and states) through the three
 * outputs: the table free of controls, every output valid UTF-8. Where TSCTEST_PS_FUZZ_DIR
 * is set, some of them are kept there (table.N, json.N, prom.N) for bats/ps.bats to parse
 * with strict parsers. */
static void random_text(uint64_t *rng, char *buf, size_t size)
{
	size_t len = xorshift64(rng) % size;
	for (size_t i = 0; i < len; i++) {
		uint64_t r = xorshift64(rng);
		/* Mostly the bytes that matter: controls, C1, UTF-8 leads and continuations. */
		static const unsigned char pick[] = {0x01, 0x07, 0x0a, 0x1b, 0x22, 0x5c, 0x7f, 0x80, 0x85, 0x9b, 0x9f, 0xa0,
						     0xbf, 0xc0, 0xc2, 0xc3, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 'a'};
		unsigned char c = (r & 1) ? pick[(r >> 8) % sizeof pick] : (unsigned char)(r >> 16);
		buf[i] = c ? (char)c : 'z';
	}
	buf[len] = '\0';
}

static void random_process(uint64_t *rng, struct ps_process *p)
{
	memset(p, 0, sizeof *p);
	p->pid = (int)(xorshift64(rng) % 4000000);
	p->uid = (unsigned)xorshift64(rng);
	random_text(rng, p->user, sizeof p->user);
	random_text(rng, p->command, sizeof p->command);
	random_text(rng, p->library, sizeof p->library);
	random_text(rng, p->build_id, sizeof p->build_id);
	random_text(rng, p->reason, sizeof p->reason);
	random_text(rng, p->note, sizeof p->note);
	p->state = (enum ps_state)(xorshift64(rng) % PS_STATES);
	p->denied = (enum ps_denied)(xorshift64(rng) % PS_DENIEDS);
	uint64_t *counts[] = {&p->reads_before_decision, &p->at_read, &p->decide_ns, &p->resyncs, &p->reanchors,
			      &p->stops, &p->kernel_reads, &p->lost_writes, &p->largest_error_ns, &p->held_reads,
			      &p->resumes, &p->disruptions, &p->served_reads, &p->calls};
	for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
		uint64_t r = xorshift64(rng);
		*counts[i] = (r & 3) == 0 ? UINT64_MAX - (r >> 60) : (r & 3) == 1 ? r >> 40 : r;
	}
	p->serving = xorshift64(rng) & 1;
	p->fenced = xorshift64(rng) & 1;
	p->served = (uint32_t)xorshift64(rng);
	p->source = (int)(xorshift64(rng) % 6) - 1;
	p->when = (enum ps_when)(xorshift64(rng) % 3);
	p->stops_known = xorshift64(rng) & 1;
	p->stopped_clocks = (uint32_t)xorshift64(rng);
	for (int c = 0; c < 32; c++)
		p->stop_cause[c] = xorshift64(rng) % 10;
	p->resumes_known = xorshift64(rng) & 1;
	p->disruptions_known = xorshift64(rng) & 1;
	p->reason_code_known = xorshift64(rng) & 1;
	p->reason_code = (uint32_t)(xorshift64(rng) % 40);
	p->counted = xorshift64(rng) & 1;
	p->stopped_uncovered = xorshift64(rng) & 1;
	if (p->state == PS_SERVING || p->state == PS_PASSING)
		ps_classify(p);
}

static void test_fuzz_outputs(void)
{
	const char *dir = getenv("TSCTEST_PS_FUZZ_DIR");
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	static struct ps_process p[8];
	static char text[65536];
	int rounds = 3000, kept = 0;
	for (int round = 0; round < rounds; round++) {
		size_t n = xorshift64(&rng) % 8;
		for (size_t i = 0; i < n; i++)
			random_process(&rng, &p[i]);
		struct ps_scan_totals t = {{(unsigned)xorshift64(&rng) % 5, 0, 1}, (unsigned)xorshift64(&rng) % 3};
		for (int k = 0; k < 3; k++) {
			FILE *out = fmemopen(text, sizeof text, "w");
			(k == 0 ? ps_write_table : k == 1 ? ps_write_json : ps_write_prometheus)(out, p, n, &t);
			long len = ftell(out);
			fclose(out);
			if (k == 0 && !no_controls((const unsigned char *)text, (size_t)len)) {
				printf("# round %d: a control character in the table:\n%s\n", round, text);
				CHECK(!"the table holds no control character");
				return;
			}
			if (!valid_utf8((const unsigned char *)text, (size_t)len)) {
				printf("# round %d, output %d: not UTF-8\n", round, k);
				CHECK(!"every output valid UTF-8");
				return;
			}
			if (dir && round % 10 == 0) {
				char path[4096];
				snprintf(path, sizeof path, "%s/%s.%d", dir, k == 0 ? "table" : k == 1 ? "json" : "prom", round);
				FILE *f = fopen(path, "w");
				CHECK(f && fwrite(text, 1, (size_t)len, f) == (size_t)len && fclose(f) == 0);
				kept += k == 0;
			}
		}
	}
	if (dir)
		printf("# %d rounds, %d kept in %s\n", rounds, kept, dir);
}

static void test_duration(void)
{
	char b[16];
	ps_format_duration(b, sizeof b, 400);
	CHECK(strcmp(b, "0.4 us") == 0);
	ps_format_duration(b, sizeof b, 9949);
	CHECK(strcmp(b, "9.9 us") == 0);
	ps_format_duration(b, sizeof b, 38441);
	CHECK(strcmp(b, "38 us") == 0);
	ps_format_duration(b, sizeof b, 9300000);
	CHECK(strcmp(b, "9.3 ms") == 0);
	ps_format_duration(b, sizeof b, 25400000);
	CHECK(strcmp(b, "25 ms") == 0);
}

int main(void)
{
	RUN(test_maps_line);
	RUN(test_shim_names);
	RUN(test_image);
	RUN(test_block_undecided);
	RUN(test_block_decided);
	RUN(test_block_stops);
	RUN(test_classify);
	RUN(test_block_counts);
	RUN(test_block_refused);
	RUN(test_block_exit);
	RUN(test_status_and_denial);
	RUN(test_reason_keys);
	RUN(test_table);
	RUN(test_json);
	RUN(test_prometheus);
	RUN(test_outputs_stopped);
	RUN(test_duration);
	RUN(test_text_safety);
	RUN(test_hostile_names);
	RUN(test_sums_not_real);
	RUN(test_skipped);
	RUN(test_fuzz_outputs);
	return unit_finish();
}

/* The vmclock page's checks and its marker read (calib/vmclock.h), on synthetic pages. */
#include "unit.h"
#include "vmclock.h"

#include <string.h>

static void page_with(unsigned char *page, uint32_t magic, uint16_t version, uint32_t size, uint32_t seq,
		      uint64_t marker)
{
	memset(page, 0, VMCLOCK_PAGE_SIZE);
	memcpy(page, &magic, 4);
	memcpy(page + 4, &size, 4);
	memcpy(page + 8, &version, 2);
	page[10] = 1; /* the TSC */
	memcpy(page + VMCLOCK_SEQ_OFFSET, &seq, 4);
	memcpy(page + VMCLOCK_MARKER_OFFSET, &marker, 8);
}

static _Alignas(4096) unsigned char page[VMCLOCK_PAGE_SIZE];

static void a_page_is_read_only_when_it_is_a_vmclock(void)
{
	page_with(page, VMCLOCK_MAGIC, 1, 104, 0, 7);
	CHECK(vmclock_page_usable(page));
	page_with(page, VMCLOCK_MAGIC, 1, VMCLOCK_SIZE_LEAST, 0, 7);
	CHECK(vmclock_page_usable(page)); /* just the marker */
	page_with(page, VMCLOCK_MAGIC + 1, 1, 104, 0, 7);
	CHECK(!vmclock_page_usable(page));
	page_with(page, VMCLOCK_MAGIC, 2, 104, 0, 7);
	CHECK(!vmclock_page_usable(page)); /* a version this code does not know */
	page_with(page, VMCLOCK_MAGIC, 1, VMCLOCK_SIZE_LEAST - 1, 0, 7);
	CHECK(!vmclock_page_usable(page)); /* no marker */
	page_with(page, VMCLOCK_MAGIC, 1, VMCLOCK_PAGE_SIZE + 1, 0, 7);
	CHECK(!vmclock_page_usable(page));
	memset(page, 0, sizeof page);
	CHECK(!vmclock_page_usable(page));
}

static void the_marker_is_read_between_even_counts(void)
{
	uint64_t m = 0;
	page_with(page, VMCLOCK_MAGIC, 1, 104, 4, 0x1234567890abcdefull);
	CHECK(vmclock_marker_read(page, &m));
	CHECK_EQ_U64(m, 0x1234567890abcdefull);
	CHECK(*vmclock_marker_at(page) == 0x1234567890abcdefull);
	/* Being written (odd) at every try: no marker, and *marker untouched. */
	page_with(page, VMCLOCK_MAGIC, 1, 104, 5, 99);
	m = 1;
	CHECK(!vmclock_marker_read(page, &m));
	CHECK_EQ_U64(m, 1);
}

int main(void)
{
	RUN(a_page_is_read_only_when_it_is_a_vmclock);
	RUN(the_marker_is_read_between_even_counts);
	return unit_finish();
}

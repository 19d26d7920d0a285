/* libFuzzer target: cache_parse (`make fuzz`).
 * Each input is parsed twice: as it is, and with its checksum line replaced by the right
 * one (a fuzzer almost never guesses an FNV-1a checksum, and without this it would never
 * reach the field parsers). Properties: parsing never crashes or reads out of bounds (ASan);
 * a rejection leaves the record untouched and says why; whatever is accepted is a valid
 * record that formats, and re-parses to the same record and formats to the same bytes. */
#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                           \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "fuzz_cache: %s failed\n", #cond);      \
			abort();                                                \
		}                                                               \
	} while (0)

static bool same_file(const struct cache_file *a, const struct cache_file *b)
{
	if (a->count != b->count)
		return false;
	for (uint32_t i = 0; i < a->count; i++) {
		const struct cache_record *x = &a->record[i], *y = &b->record[i];
		if (strcmp(x->boot_id, y->boot_id) != 0 || x->cpu_signature != y->cpu_signature ||
		    !cpu_mask_equal(&x->cpus, &y->cpus) || x->estimate_verdict != y->estimate_verdict ||
		    x->max_shift_ticks != y->max_shift_ticks || x->rate_millihz != y->rate_millihz ||
		    x->retry_at_ns != y->retry_at_ns || x->retry_interval_ms != y->retry_interval_ms)
			return false;
	}
	return true;
}

static void check(const char *data, size_t len)
{
	struct cache_file rec, untouched;
	memset(&rec, 0xa5, sizeof rec);
	untouched = rec;
	char why[256] = "";
	int rc = cache_parse(data, len, &rec, why, sizeof why);
	if (rc != CACHE_OK) {
		REQUIRE(rc == CACHE_CORRUPT);
		REQUIRE(memcmp(&rec, &untouched, sizeof rec) == 0);
		REQUIRE(why[0] != '\0' && memchr(why, '\0', sizeof why));
		return;
	}
	REQUIRE(rec.count >= 1 && rec.count <= CACHE_RECORDS_MAX);
	for (uint32_t i = 0; i < rec.count; i++)
		REQUIRE(cache_record_check(&rec.record[i], why, sizeof why) == 0);
	static char text[CACHE_MAX_SIZE + 1], again[CACHE_MAX_SIZE + 1];
	int n = cache_format(&rec, text, sizeof text, why, sizeof why);
	REQUIRE(n > 0 && (size_t)n == strlen(text));
	struct cache_file back;
	REQUIRE(cache_parse(text, (size_t)n, &back, why, sizeof why) == CACHE_OK);
	REQUIRE(same_file(&rec, &back));
	int m = cache_format(&back, again, sizeof again, why, sizeof why);
	REQUIRE(m == n && memcmp(text, again, (size_t)n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: ASan then catches any read past the end. */
	char *raw = malloc(size ? size : 1);
	REQUIRE(raw);
	memcpy(raw, data, size);
	check(raw, size);

	/* Drop every checksum= line, then append the right one. */
	char *fixed = malloc(size + 64);
	REQUIRE(fixed);
	size_t len = 0;
	for (size_t i = 0; i < size;) {
		const char *nl = memchr(raw + i, '\n', size - i);
		size_t end = nl ? (size_t)(nl - raw) + 1 : size;
		if (!(end - i >= 9 && memcmp(raw + i, "checksum=", 9) == 0)) {
			memcpy(fixed + len, raw + i, end - i);
			len += end - i;
		}
		i = end;
	}
	if (len == 0 || fixed[len - 1] == '\n') {
		char line[40];
		int k = snprintf(line, sizeof line, "checksum=%016llx\n",
				 (unsigned long long)fnv1a64(fixed, len));
		memcpy(fixed + len, line, (size_t)k);
		len += (size_t)k;
		char *exact = malloc(len);
		REQUIRE(exact);
		memcpy(exact, fixed, len);
		check(exact, len);
		free(exact);
	}
	free(fixed);
	free(raw);
	return 0;
}

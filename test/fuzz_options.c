/* libFuzzer target: option_parse over every option id (`make fuzz`).
 * Input: the first byte picks the option, the rest is the value (made a C string, so an
 * embedded NUL just ends it early, as the environment would).
 * Properties: a rejected value leaves the values untouched and yields one non-empty line
 * that names the variable; an accepted one is what the type says it is: a bool 0 or 1, an
 * integer within range whose decimal form re-parses to the same number, a clock set within
 * the known clocks, a string stored exactly. */
#include "options.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                           \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "fuzz_options: %s failed\n", #cond);    \
			abort();                                                \
		}                                                               \
	} while (0)

static struct option_values before, after;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum option_id id = (enum option_id)(data[0] % OPTION_COUNT);
	char *text = malloc(size);
	REQUIRE(text);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';

	options_set_defaults(&before);
	after = before;
	char err[256];
	memset(err, 0, sizeof err);
	const struct option_spec *spec = &option_table[id];
	int rc = option_parse(&after, id, text, err, sizeof err);
	REQUIRE(rc == 0 || rc == -1);
	if (rc != 0) {
		REQUIRE(memcmp(&before, &after, sizeof before) == 0);
		REQUIRE(err[0] != '\0');
		REQUIRE(strncmp(err, spec->name, strlen(spec->name)) == 0);
		REQUIRE(memchr(err, '\0', sizeof err) != NULL);
		/* One printable line whatever the value holds: it is echoed with its control
		 * characters shown as '?'. */
		for (const char *p = err; *p; p++)
			REQUIRE((unsigned char)*p >= 0x20 && *p != 0x7f);
		free(text);
		return 0;
	}
	switch (spec->type) {
	case OPTION_BOOL:
		REQUIRE(after.num[id] <= 1);
		REQUIRE(strcmp(text, after.num[id] ? "1" : "0") == 0);
		break;
	case OPTION_UINT: {
		REQUIRE(after.num[id] >= spec->min && after.num[id] <= spec->max);
		char again[32];
		snprintf(again, sizeof again, "%" PRIu64, after.num[id]);
		struct option_values round = before;
		REQUIRE(option_parse(&round, id, again, NULL, 0) == 0);
		REQUIRE(round.num[id] == after.num[id]);
		/* Leading zeros are the only other spelling of the same number. */
		const char *digits = text;
		while (digits[0] == '0' && digits[1] != '\0')
			digits++;
		REQUIRE(strcmp(digits, again) == 0);
		break;
	}
	case OPTION_CLOCKS:
		REQUIRE(after.num[id] < (1u << SERVED_CLOCK_COUNT));
		REQUIRE((after.num[id] == 0) == (strcmp(text, "none") == 0));
		break;
	case OPTION_CHOICE:
		REQUIRE(strstr(spec->keyword, text) != NULL && text[0] && !strchr(text, ','));
		break;
	case OPTION_PATH:
		REQUIRE(strlen(text) < OPTION_TEXT_MAX);
		REQUIRE(after.text[id] == text);
		REQUIRE(text[0] == '\0' || text[0] == '/' ||
			(spec->keyword && strcmp(text, spec->keyword) == 0));
		break;
	}
	/* Nothing but the parsed option changed. */
	for (int other = 0; other < OPTION_COUNT; other++)
		if (other != (int)id)
			REQUIRE(after.num[other] == before.num[other] &&
				strcmp(after.text[other], before.text[other]) == 0);
	free(text);
	return 0;
}

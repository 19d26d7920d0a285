# tscshim: `make` builds, `make test` runs every suite, `make clean` removes build/.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
BASE    := -std=gnu11 -fPIC -fvisibility=hidden -pthread -Icalib -Iinclude
ALL_CFLAGS = $(BASE) $(WARN) $(CFLAGS)
LDLIBS  := -pthread -lm

B := build
CALIB_SRC := $(wildcard calib/*.c)
CLI_SRC   := $(wildcard cli/*.c)
SHIM_SRC  := $(wildcard shim/*.c)
TEST_SRC  := $(wildcard test/test_*.c)
CALIB_OBJ := $(CALIB_SRC:%.c=$(B)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(B)/%.o)
SHIM_OBJ  := $(SHIM_SRC:%.c=$(B)/%.o)
TEST_BIN  := $(TEST_SRC:test/%.c=$(B)/test/%)

TARGETS := $(B)/tscshim $(B)/libtsccalib.a
ifneq ($(SHIM_SRC),)
TARGETS += $(B)/libtscshim.so
endif

all: $(TARGETS)

$(B)/%.o: %.c $(wildcard calib/*.h include/*.h cli/*.h shim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/libtsccalib.a: $(CALIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/tscshim: $(CLI_OBJ) $(B)/libtsccalib.a
	$(CC) $(ALL_CFLAGS) $(CLI_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS)

# The shim exports only what shim/exports.map names; calib is linked in privately.
$(B)/libtscshim.so: $(SHIM_OBJ) $(B)/libtsccalib.a shim/exports.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,--version-script=shim/exports.map -Wl,-z,now \
		$(SHIM_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS) -ldl

$(B)/test/%: test/%.c test/unit.h $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(B)/libtsccalib.a -o $@ $(LDLIBS)

test: all $(TEST_BIN)
	@bash test/run-all.sh $(TEST_BIN)

clean:
	rm -rf $(B)

.PHONY: all test clean

figures-calib: all
	test/figures-calib.sh 20
.PHONY: figures-calib

# tscshim: `make` builds, `make test` runs every suite, `make clean` removes build/.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
BASE    := -std=gnu11 -fno-math-errno -fPIC -fvisibility=hidden -pthread -Icalib -Iinclude
ALL_CFLAGS = $(BASE) $(WARN) $(CFLAGS)
LDLIBS  := -pthread

B := build
CALIB_SRC := $(wildcard calib/*.c)
CLI_SRC   := $(wildcard cli/*.c)
SHIM_SRC  := $(wildcard shim/*.c)
TEST_SRC  := $(wildcard test/test_*.c)
CALIB_OBJ := $(CALIB_SRC:%.c=$(B)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(B)/%.o)
SHIM_OBJ  := $(SHIM_SRC:%.c=$(B)/%.o)
TEST_BIN  := $(TEST_SRC:test/%.c=$(B)/test/%)
PROBE_SRC := $(wildcard test/probe_*.c) test/bench_clock.c
PROBE_BIN := $(PROBE_SRC:test/%.c=$(B)/test/%)
TESTLIB_SRC := $(wildcard test/lib_*.c)
TESTLIB_BIN := $(TESTLIB_SRC:test/lib_%.c=$(B)/test/lib%.so)

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

# Programs run under the shim by the bats tests and benchmarks: plain executables (the
# benchmark uses calib's inline counter and conversion headers for its floor).
$(B)/test/probe_%: test/probe_%.c include/tscshim.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -pthread -ldl
$(B)/test/bench_clock: test/bench_clock.c $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(B)/libtsccalib.a -o $@ -pthread -ldl

$(B)/test/lib%.so: test/lib_%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared $< -o $@ -ldl

test: all $(TEST_BIN) $(PROBE_BIN) $(TESTLIB_BIN)
	@bash test/run-all.sh $(TEST_BIN)

clean:
	rm -rf $(B)

.PHONY: all test clean

figures-calib: all
	test/figures-calib.sh 20

# Speed: every variant in one run, fenced then unfenced; start-up: paired /bin/true runs.
bench: all $(B)/test/bench_clock
	LD_PRELOAD=$(CURDIR)/$(B)/libtscshim.so $(B)/test/bench_clock
	TSCSHIM_FENCE=0 LD_PRELOAD=$(CURDIR)/$(B)/libtscshim.so $(B)/test/bench_clock
	test/bench-startup.sh 50

.PHONY: figures-calib bench

# Opt-in, as root: slews the kernel's frequency by +/-500 ppm and steps the wall clock,
# restoring both on every exit path. Never part of `make test`.
$(B)/test/clock_adjust: test/clock_adjust.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@
test-clock-adjust: all $(B)/test/clock_adjust
	LD_PRELOAD=$(CURDIR)/$(B)/libtscshim.so $(B)/test/clock_adjust 3 1000
.PHONY: test-clock-adjust

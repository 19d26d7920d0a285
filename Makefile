# tscshim: `make` builds, `make test` runs every suite, `make clean` removes build/.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
# -fno-plt: calls into libc go through the GOT, which the loader fills at load (-z now), not
# through PLT stubs: those stubs sit on a page of code of their own, which the shim's load
# path would otherwise touch in every process (calib/load_page.h).
BASE    := -std=gnu11 -fno-math-errno -fPIC -fno-plt -fvisibility=hidden -ffunction-sections -fdata-sections -pthread \
	   -Icalib -Iinclude
ALL_CFLAGS = $(BASE) $(WARN) $(CPPFLAGS) $(CFLAGS)
LDLIBS  := -pthread

# Where `make install` puts things (DESTDIR is prepended when copying, not compiled in).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
VERSION    := $(shell sed -n 's/^\#define TSCSHIM_VERSION "\(.*\)"/\1/p' include/tscshim.h)
SONAME     := libtscshim.so.1
# The command finds the installed library relative to itself, so a staged or moved tree works.
LIBDIR_FROM_BINDIR := $(shell realpath -m --relative-to=$(BINDIR) $(LIBDIR))

B := build
CALIB_SRC := $(wildcard calib/*.c)
# cli/: what the subcommands share, and a wing of its own for each large one (cli/ab/, ...).
CLI_SRC   := $(wildcard cli/*.c cli/*/*.c)
SHIM_SRC  := $(wildcard shim/*.c)
TEST_SRC  := $(wildcard test/test_*.c)
CALIB_OBJ := $(CALIB_SRC:%.c=$(B)/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(B)/%.o)
SHIM_OBJ  := $(SHIM_SRC:%.c=$(B)/%.o)
TEST_BIN  := $(TEST_SRC:test/%.c=$(B)/test/%)
# shim/build_id.c at a fixed address as well as position-independent (test_build_id.c).
TEST_BIN  += $(B)/test/test_build_id_fixed
PROBE_SRC := $(wildcard test/probe_*.c)
PROBE_BIN := $(PROBE_SRC:test/%.c=$(B)/test/%)
TESTLIB_SRC := $(wildcard test/lib_*.c)
TESTLIB_BIN := $(TESTLIB_SRC:test/lib_%.c=$(B)/test/lib%.so)

TARGETS := $(B)/tscshim $(B)/libtsccalib.a
ifneq ($(SHIM_SRC),)
TARGETS += $(B)/libtscshim.so
endif

all: $(TARGETS)

$(B)/%.o: %.c $(wildcard calib/*.h include/*.h cli/*.h cli/*/*.h shim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
# A wing's files include what the subcommands share (cli/util.h, ...) by its bare name.
$(CLI_OBJ): ALL_CFLAGS += -Icli

$(B)/libtsccalib.a: $(CALIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/tscshim: $(CLI_OBJ) $(B)/libtsccalib.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(CLI_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS)

# Rewritten only when the directories change, so that util.o (which includes it) is rebuilt only then.
$(B)/install-dirs.h: FORCE
	@mkdir -p $(B)
	@echo '#define LIBDIR_FROM_BINDIR "$(LIBDIR_FROM_BINDIR)"' >$@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
$(B)/cli/util.o: $(B)/install-dirs.h
$(B)/cli/util.o: ALL_CFLAGS += -I$(B)

# The shim exports only what shim/exports.map names; calib is linked in privately. It is
# installed as $(SONAME); build/libtscshim.so is the same file. Its build-id keys the
# costs it caches (shim/build_id.c).
# -z noseparate-code: the headers, code and constants in one mapping, not three, so that
# every process it is preloaded into maps two segments fewer and one fault brings in the
# load path's code and constants together (calib/load_page.h). The price: the read-only
# data is mapped executable too, as it was before binutils 2.31 made separate-code the
# default; `make SHIM_SEPARATE_CODE=1` links the other way.
SHIM_CODE_LAYOUT = -Wl,-z,$(if $(SHIM_SEPARATE_CODE),separate-code,noseparate-code)
# -nostartfiles: no crti/crtn/crtbegin/crtend. Their _init, _fini, frame_dummy and
# __do_global_dtors_aux run in every process, at load and at exit, each on a page of code
# the shim's own load path does not use (_fini after all of .text); a page first touched
# costs a process 10-25 us on the hosts measured (calib/load_page.h). The loader runs
# .init_array and .fini_array without them; unwinding finds the code through
# .eh_frame_hdr. What they did besides: __cxa_finalize at dlclose, to drop the fork
# handler registered with this object's __dso_handle. -z nodelete instead: the shim is
# never unloaded, so that handler, and any pointer a program took to an interposed
# function, stays valid (calib/libc_kind.c registers with no object, then).
SHIM_LINK_RUNTIME = -nostartfiles -Wl,-z,nodelete
# The load path's code right after the loader's tables (shim/load_path.ld,
# calib/load_page.h). The relative relocations are not packed (-z pack-relative-relocs,
# DT_RELR): that would save 1.9 KB of tables, but a C library that does not read DT_RELR
# (musl before 1.2.4, glibc before 2.36) loads the object with its pointers unrelocated,
# and the glibc build must pass through, not crash, when preloaded into a musl program.
# The decision's code right after it, on as few pages as it needs (shim/decision_path.ld).
SHIM_LAYOUT = -Wl,-T,shim/load_path.ld -Wl,-T,shim/decision_path.ld -Wl,-T,shim/data_layout.ld
$(B)/libtscshim.so: $(SHIM_OBJ) $(B)/libtsccalib.a shim/exports.map shim/load_path.ld shim/decision_path.ld shim/data_layout.ld
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=shim/exports.map \
		-Wl,-z,now $(SHIM_CODE_LAYOUT) $(SHIM_LINK_RUNTIME) $(SHIM_LAYOUT) -Wl,--gc-sections \
		-Wl,--build-id $(SHIM_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS) -ldl

# The same shim with test hooks (shim/test_points.h): tests pause, signal or jump out of a
# writer at a chosen point through it. Never installed; exports one more symbol.
HOOKS_OBJ := $(SHIM_SRC:%.c=$(B)/hooks/%.o)
$(B)/hooks/%.o: %.c $(wildcard calib/*.h include/*.h shim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DTSCSHIM_TEST_HOOKS -c $< -o $@
$(B)/test/libtscshim-hooks.so: $(HOOKS_OBJ) $(B)/libtsccalib.a test/hooks.map shim/load_path.ld shim/decision_path.ld shim/data_layout.ld
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -Wl,--version-script=test/hooks.map -Wl,-z,now $(SHIM_CODE_LAYOUT) \
		$(SHIM_LINK_RUNTIME) $(SHIM_LAYOUT) -Wl,--build-id \
		$(HOOKS_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS) -ldl

# The same shim with step notes (calib/steps.h): where the start-up and the decision spend
# their time, and a host whose system calls and page faults are dear, staged. Never
# installed; test/steps.py reads its notes.
STEPS_OBJ := $(SHIM_SRC:%.c=$(B)/steps/%.o) $(CALIB_SRC:%.c=$(B)/steps/%.o)
$(B)/steps/%.o: %.c $(wildcard calib/*.h include/*.h shim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DTSCTEST_STEPS_BUILD -c $< -o $@
$(B)/test/libtscshim-steps.so: $(STEPS_OBJ) shim/exports.map shim/load_path.ld shim/decision_path.ld shim/data_layout.ld
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -Wl,--version-script=shim/exports.map -Wl,-z,now \
		$(SHIM_CODE_LAYOUT) $(SHIM_LINK_RUNTIME) $(SHIM_LAYOUT) -Wl,--gc-sections -Wl,--build-id \
		$(STEPS_OBJ) -o $@ $(LDLIBS) -ldl

$(B)/test/%: test/%.c test/unit.h $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(B)/libtsccalib.a -o $@ $(LDLIBS)

# The shim's load-path helpers, each unit-tested with its own object (they are not in calib).
SHIM_UNIT_TESTS := $(B)/test/test_next_symbol $(B)/test/test_environment $(B)/test/test_vdso
$(SHIM_UNIT_TESTS): $(B)/test/test_%: test/test_%.c test/unit.h $(B)/shim/%.o $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim $< $(B)/shim/$*.o $(B)/libtsccalib.a -o $@ $(LDLIBS)

# ab's pure modules, unit-tested without the rest of the command.
AB_PURE_OBJ := $(B)/cli/ab/ab_stats.o $(B)/cli/ab/ab_variant.o $(B)/cli/ab/ab_metric.o $(B)/cli/samples.o
# The hot path over synthetic lines: shim/line.h with the test's own globals.
$(B)/test/test_hot_path: test/test_hot_path.c test/unit.h $(wildcard shim/*.h) $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim $< $(B)/libtsccalib.a -o $@ $(LDLIBS)

# shim/build_id.c in a program of its own, which it then identifies.
$(B)/test/test_build_id: test/test_build_id.c test/unit.h shim/build_id.c shim/build_id.h $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim -Wl,--build-id $< shim/build_id.c $(B)/libtsccalib.a -o $@ $(LDLIBS)
$(B)/test/test_build_id_fixed: test/test_build_id.c test/unit.h shim/build_id.c shim/build_id.h $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fno-pie -no-pie -Ishim -Wl,--build-id $< shim/build_id.c $(B)/libtsccalib.a -o $@ $(LDLIBS)

$(B)/test/test_ab_stats: test/test_ab_stats.c test/unit.h $(AB_PURE_OBJ) $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Icli/ab -Icli $< $(AB_PURE_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS)

# ps's pure modules (cli/ps/ps.h), unit-tested on made-up processes without the rest of the command.
PS_PURE_OBJ := $(B)/cli/ps/ps_image.o $(B)/cli/ps/ps_reason.o $(B)/cli/ps/ps_report.o
$(B)/test/test_ps: test/test_ps.c test/unit.h $(PS_PURE_OBJ) $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Icli/ps -Icli $< $(PS_PURE_OBJ) $(B)/libtsccalib.a -o $@ $(LDLIBS)

# The floor (cli/floor.c) in a program of its own.
$(B)/test/test_floor: test/test_floor.c test/unit.h cli/floor.h $(B)/cli/floor.o $(B)/cli/samples.o $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Icli $< $(B)/cli/floor.o $(B)/cli/samples.o $(B)/libtsccalib.a -o $@ $(LDLIBS)

# Programs run under the shim by the bats tests: plain executables.
$(B)/test/probe_%: test/probe_%.c include/tscshim.h test/kernel_ns.h test/checked_read.h test/seccomp_one_call.h test/hostile_check.h shim/test_points.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim $< -o $@ -pthread -ldl

$(B)/test/lib%.so: test/lib_%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared $< -o $@ $(TESTLIB_LDFLAGS) -ldl
# Bound at load: a call it binds lazily looks the name up in every object, the shim's hash
# table among them, which would count as a page the shim touched.
$(B)/test/libpage_touch.so: TESTLIB_LDFLAGS := -Wl,-z,now

# What the bats suites run besides the command and the shim. bats/setup_suite.bash builds
# it first, so that a suite run alone (bats bats/shim.bats) after `make` finds its probes.
test-programs: all $(TEST_BIN) $(PROBE_BIN) $(TESTLIB_BIN) $(B)/test/libtscshim-hooks.so $(B)/test/libtscshim-steps.so

test: test-programs
	@bash test/run-all.sh $(TEST_BIN)

# The C unit tests alone (pure: no measurement of this machine), as the package build runs them.
unit: $(TEST_BIN)
	@for t in $(TEST_BIN); do $$t >$$t.log || { cat $$t.log; echo "$$t failed"; exit 1; }; done
	@echo "unit tests: $(words $(TEST_BIN)) programs passed"

clean:
	rm -rf $(B)

# The layers: shim/ on the floors of shim/LAYERS, calib/ below it, cli/ beside it, by the
# sources' includes and the objects' symbols (test/check-layers.sh).
lint: all
	@bash test/check-layers.sh $(B)
	@bash test/check-hot-path.sh $(B)/libtscshim.so

.PHONY: all test test-programs unit clean lint FORCE
include mk/musl.mk

# ---- Install (doc/INSTALL.md) ----

# Below the prefix, the paths are written relative to it (pkg-config --define-prefix).
PC_LIBDIR := $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCLUDEDIR := $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
$(B)/tscshim.pc: tscshim.pc.in include/tscshim.h FORCE
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' tscshim.pc.in >$@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

INSTALLED := $(BINDIR)/tscshim $(LIBDIR)/$(SONAME) $(LIBDIR)/libtscshim.so $(INCLUDEDIR)/tscshim.h \
	$(PKGCONFIGDIR)/tscshim.pc $(MANDIR)/man1/tscshim.1 $(MANDIR)/man7/libtscshim.7

install: all $(B)/tscshim.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m 0755 $(B)/tscshim $(DESTDIR)$(BINDIR)/tscshim
	install -m 0644 $(B)/libtscshim.so $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libtscshim.so
	install -m 0644 include/tscshim.h $(DESTDIR)$(INCLUDEDIR)/tscshim.h
	install -m 0644 $(B)/tscshim.pc $(DESTDIR)$(PKGCONFIGDIR)/tscshim.pc
	install -m 0644 man/tscshim.1 $(DESTDIR)$(MANDIR)/man1/tscshim.1
	install -m 0644 man/libtscshim.7 $(DESTDIR)$(MANDIR)/man7/libtscshim.7

# Files only: the directories may hold other software's files.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

# Splices `tscshim options --man` into the man pages (a test checks they match).
man: $(B)/tscshim
	man/splice-options.sh $(B)/tscshim man/tscshim.1 man/libtscshim.7

# The Debian packages, built from a copy of the tree (dpkg-buildpackage writes beside its
# source directory) into DEB_OUT.
DEB_OUT ?= $(B)/deb
deb:
	rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)/tscshim-$(VERSION)
	tar -c --exclude='./build*' --exclude=./.git --exclude='./$(DEB_OUT)' . | tar -x -C $(DEB_OUT)/tscshim-$(VERSION)
	cd $(DEB_OUT)/tscshim-$(VERSION) && dpkg-buildpackage -us -uc -b
	@ls $(DEB_OUT)/*.deb

.PHONY: install uninstall man deb

figures-calib: all
	test/figures-calib.sh 20

# Speed: `tscshim bench` (every clock and variant in one run, the shim fenced and unfenced,
# the floor, and a verdict; TSCSHIM_SERVE=always, so that the counter path is measured
# even where the benefit gate would pass through); start-up: paired /bin/true runs.
bench: all
	TSCSHIM_SERVE=always $(B)/tscshim bench --library $(CURDIR)/$(B)/libtscshim.so
	test/bench-startup.sh 50

# Start-up: the shim's own cost per process over an empty preloaded object, and a whole
# machine's shell workload with the shim in every process (doc/BENEFIT.md).
bench-startup: all
	$(B)/tscshim bench --startup --library $(CURDIR)/$(B)/libtscshim.so
bench-machine: all
	test/bench-machine.sh 5 300
# Real programs plain, with the shim by default and unfenced, interleaved (doc/BENEFIT.md):
# fio's null engine, PostgreSQL's EXPLAIN ANALYZE, node's hrtime, a JVM's nanoTime.
bench-programs: all
	test/bench-programs.sh 6
# Several libraries' start-up in one rotation, for before/after comparisons (doc/BENEFIT.md):
# $(B)/test/startup_rotation ROUNDS /bin/true EMPTY.so OLD.so NEW.so NEW.so,TSCSHIM_DISABLE=1
$(B)/test/startup_rotation: test/startup_rotation.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@

.PHONY: figures-calib bench bench-startup bench-machine bench-programs

# The estimator at 1..256 CPUs: the analysis measured, the collection modelled.
$(B)/test/bench_estimate_scale: test/bench_estimate_scale.c $(B)/libtsccalib.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(B)/libtsccalib.a -o $@ -pthread
bench-estimate-scale: $(B)/test/bench_estimate_scale
	$(B)/test/bench_estimate_scale
.PHONY: bench-estimate-scale

# The shim constructor's static stack use (gcc -fcallgraph-info), at most 4 KiB.
stack-usage:
	@python3 test/stack-usage.py 4096
.PHONY: stack-usage

# Opt-in, as root: slews the kernel's frequency by +/-500 ppm and steps the wall clock,
# restoring both on every exit path. Never part of `make test`.
$(B)/test/clock_adjust: test/clock_adjust.c test/kernel_ns.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@
test-clock-adjust: all $(B)/test/clock_adjust
	TSCSHIM_SERVE=always TSCSHIM_DECIDE_AFTER=1 LD_PRELOAD=$(CURDIR)/$(B)/libtscshim.so $(B)/test/clock_adjust 3 1000
.PHONY: test-clock-adjust

# ---- Sanitizers, soak and fuzzing. None of these touch build/ (but `all`). ----

# `make sanitize`: calib, the unit tests, the shim and the probes rebuilt by this same
# Makefile into build-asan/ (gcc, AddressSanitizer + UndefinedBehaviorSanitizer, every
# finding fatal) and build-tsan/ (clang, ThreadSanitizer: gcc 12's libtsan crashes inside
# its own runtime, SyncClock::Resize, once threads re-synchronize the preloaded shim);
# then test/sanitize.sh runs the unit tests and a short stress run of the preloaded shim
# under each, and valgrind memcheck on the command. About 25 s here (plus the builds).
# Without clang's TSan runtime or valgrind, those steps are skipped, naming the packages.
SAN_CFLAGS_asan := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
# Warnings are errors in the gcc builds; clang's extra ones (it warns where gcc does not)
# are shown but must not stop the TSan build.
SAN_CFLAGS_tsan := -O1 -g -fsanitize=thread -Wno-error
san_goals = $(1)/libtsccalib.a $(1)/libtscshim.so $(1)/tscshim $(TEST_SRC:test/%.c=$(1)/test/%) \
	$(1)/test/probe_stress $(1)/test/probe_clock $(1)/test/probe_ps \
	$(1)/test/libtscshim-hooks.so $(1)/test/librefclock.so $(1)/test/probe_vmclock $(1)/test/probe_hostile

# build-tsan/.compiler names the compiler of the objects there: another one's are not reused.
sanitize-build:
	@grep -qx clang build-tsan/.compiler 2>/dev/null || { rm -rf build-tsan; mkdir -p build-tsan; echo clang >build-tsan/.compiler; }
	$(MAKE) --no-print-directory B=build-asan CFLAGS="$(SAN_CFLAGS_asan)" $(call san_goals,build-asan)
	@if why=$$(bash test/clang-sanitizer.sh thread); then \
		$(MAKE) --no-print-directory B=build-tsan CC=clang CFLAGS="$(SAN_CFLAGS_tsan)" $(call san_goals,build-tsan); \
	else echo "sanitize-build: the TSan build is skipped: $$why"; fi

sanitize: all $(B)/test/probe_ps sanitize-build
	@bash test/sanitize.sh

# `make soak`: the load, ordering, migration and signal tests, the trust probes and the
# hostile kernel clock's modes for minutes (about 25 min in all); not in CI.
soak: all test-programs
	@bash test/soak.sh

# `make fuzz FUZZ_SECONDS=60`: libFuzzer targets (clang, with ASan and UBSan) built into
# build-fuzz/, each run for FUZZ_SECONDS; prints executions and findings, fails on any.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FZ := build-fuzz
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_BIN := $(FZ)/fuzz_options $(FZ)/fuzz_cache

$(FZ)/fuzz_%: test/fuzz_%.c $(CALIB_SRC) $(wildcard calib/*.h)
	@mkdir -p $(FZ)
	$(FUZZ_CC) $(BASE) $(WARN) $(FUZZ_CFLAGS) $< $(CALIB_SRC) -o $@ -pthread

# Skipped, with the packages to install, where clang cannot build libFuzzer targets.
fuzz:
	@if why=$$(bash test/clang-sanitizer.sh fuzzer,address,undefined $(FUZZ_CC)); then \
		$(MAKE) --no-print-directory fuzz-run; \
	else echo "fuzz: skipped: $$why"; fi
fuzz-run: $(FUZZ_BIN)
	@bash test/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

.PHONY: sanitize sanitize-build soak fuzz fuzz-run

# The empty object `tscshim bench --startup` preloads as the dynamic loader's floor.
$(B)/libtscshim-floor.so: test/floor_object.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared $< -o $@
all: $(B)/libtscshim-floor.so

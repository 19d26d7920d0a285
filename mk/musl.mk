# The musl build, included by the Makefile (its last line).
#
# `make musl` builds the shim, the command, the C unit tests and the test programs against
# musl (musl-gcc, Debian's musl-tools) into build-musl/, by running this same Makefile with
# B=build-musl: the same sources, rules and flags. `make test` does it first wherever
# musl-gcc is found, and bats/musl.bats runs the musl suites (it skips them, naming the
# package, where it is not). `make clean` removes build-musl/ too.
#
# Not tried: a build on Alpine itself, where cc is musl's (TSCSHIM_LIBC_MUSL must then be
# given by hand, since musl defines no macro of its own; calib/libc_kind.h).

MUSL_CC ?= musl-gcc
export MUSL_CC # to bats/musl.bats, which skips where it is not found
MUSL_B  := build-musl
HAVE_MUSL_CC := $(shell command -v $(MUSL_CC) 2>/dev/null)

# What bats/musl.bats runs: besides the shim and the command, the C unit tests and the
# programs run under the shim (probe_threads and probe_seccomp need glibc's headers:
# test/musl_probe.c stands in for the first, glibc's probe_seccomp wraps musl programs).
MUSL_PROBE_SRC := $(filter-out test/probe_threads.c test/probe_seccomp.c,$(PROBE_SRC)) \
	$(wildcard test/musl_*.c)
MUSL_GOALS = $(MUSL_B)/libtscshim.so $(MUSL_B)/tscshim $(TEST_SRC:test/%.c=$(MUSL_B)/test/%) \
	$(MUSL_PROBE_SRC:test/%.c=$(MUSL_B)/test/%) $(TESTLIB_SRC:test/lib_%.c=$(MUSL_B)/test/lib%.so)

musl:
	@[ -n "$(HAVE_MUSL_CC)" ] || { echo "make musl: $(MUSL_CC) not found: install musl-tools (apt-get install musl-tools)" >&2; exit 2; }
	@$(MAKE) --no-print-directory B=$(MUSL_B) CC=$(MUSL_CC) CPPFLAGS="$(CPPFLAGS) -DTSCSHIM_LIBC_MUSL" \
		TSCSHIM_MUSL_BUILD=1 musl-goals

# One goal for them all, so that an up-to-date build says nothing.
musl-goals: $(MUSL_GOALS)
	@:

clean-musl:
	rm -rf $(MUSL_B)

clean: clean-musl

# make test builds the musl side too, where it can.
ifneq ($(HAVE_MUSL_CC),)
test: musl
endif

.PHONY: musl musl-goals clean-musl

# Test programs of musl's own: the musl side of bats/musl.bats.
$(B)/test/musl_%: test/musl_%.c include/tscshim.h test/kernel_ns.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -pthread

ifdef TSCSHIM_MUSL_BUILD
# The shim names no library (no DT_NEEDED): musl's libc.so has no SONAME, so a musl-linked
# object needs "libc.so", which glibc's loader looks for in its own directories and cannot
# load (on Debian it finds the linker script /usr/lib/x86_64-linux-gnu/libc.so: "invalid
# ELF header", exit 127), however the preload was meant. Without it, both loaders bind
# the shim's references in the program's global scope, where their own libc is; under
# glibc the shim then finds it runs on the wrong library and passes every call through
# (calib/libc_kind.h). libgcc is static: named by hand, as -nodefaultlibs drops it.
$(B)/libtscshim.so: LDLIBS := -nodefaultlibs -lgcc
$(B)/libtscshim.so: mk/musl.mk
endif

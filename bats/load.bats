#!/usr/bin/env bats
# Load: what every process pays for having the shim preloaded. The real functions come
# from the loader's tables, never from dlsym, unless a wrapper of them sits between the
# shim and the C library; TSCSHIM_DISABLE=1 alone parses nothing; the load path's small
# buffers defer, never break. The costs themselves are figures (make bench-startup), not
# assertions: the machine is shared.
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_clock"
REFCLOCK="$ROOT/build/test/librefclock.so"

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
}

# What the loader looked up after the shim's constructor began: with every binding of the
# program made at load (LD_BIND_NOW), a look-up of these names there is a dlsym.
lookups_after_init() {
	sed -n '/calling init: .*libtscshim/,$p' <<<"$output" |
		grep -E 'symbol=(clock_gettime|gettimeofday|timespec_get);' || true
}

@test "load: the real functions come from the loader's tables: no dlsym at load nor at the first calls" {
	require_reliable
	LD_PRELOAD="$SHIM" "$PROBE" loop 1 >/dev/null # a warm cache: the decision at the first read
	run env LD_BIND_NOW=1 LD_DEBUG=symbols,libs TSCSHIM_VERBOSE=2 LD_PRELOAD="$SHIM" "$PROBE" passthrough
	[ "$status" -eq 0 ]
	[[ "$output" == *"passthrough ok"* ]]
	[[ "$output" == *"real functions read from the loader's tables"* ]]
	[[ "$output" == *"calling init: "*"libtscshim"* ]]
	after=$(lookups_after_init)
	[ -z "$after" ] || { echo "looked up after init: $after"; false; }
}

@test "load: a wrapper preloaded after the shim is what the shim calls (dlsym's exact answer)" {
	run env LD_BIND_NOW=1 LD_DEBUG=symbols,libs TSCSHIM_VERBOSE=2 TSCSHIM_CLOCKS=monotonic \
		LD_PRELOAD="$SHIM:$REFCLOCK" "$PROBE" passthrough
	[ "$status" -eq 0 ]
	[[ "$output" == *"passthrough ok"* ]]
	[[ "$output" == *"real functions found with dlsym: a library between the shim and the C library may define one"* ]]
	# dlsym from the shim starts after it: at the wrapper.
	after=$(lookups_after_init)
	[[ "$after" == *"symbol=clock_gettime;  lookup in file=$REFCLOCK"* ]]
}

@test "load: a wrapper preloaded before the shim: no loop, the shim's next is the C library" {
	require_reliable
	run env TSCSHIM_VERBOSE=2 LD_PRELOAD="$REFCLOCK:$SHIM" "$PROBE" compare 200 1063
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"real functions read from the loader's tables"* ]]
	run env LD_PRELOAD="$REFCLOCK:$SHIM" "$PROBE" passthrough
	[ "$status" -eq 0 ]
}

@test "load: TSCSHIM_DISABLE=1 alone passes every call through, with nothing parsed or looked for" {
	require_command strace strace
	unset TSCSHIM_CACHE
	run env TSCSHIM_DISABLE=1 LD_PRELOAD="$SHIM" strace -f -e trace=newfstatat,stat,openat,access,faccessat \
		"$PROBE" loop 10
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"+++ exited with 0 +++"* ]]
	# No record or cache looked at, at load or at the first read.
	[[ "$output" != *"/run/tscshim"* && "$output" != *"tscshim-"*".cache"* && "$output" != *"tscshim.cache"* ]]
	# What the status says after a first read is what it says when the variables were
	# parsed (another variable beside it): the defaults of the clocks served and the fence.
	run env TSCSHIM_DISABLE=1 LD_PRELOAD="$SHIM" "$PROBE" status read
	[ "$status" -eq 0 ]
	alone=$output
	run env TSCSHIM_DISABLE=1 TSCSHIM_VERBOSE=0 LD_PRELOAD="$SHIM" "$PROBE" status read
	[ "$status" -eq 0 ]
	[[ "$alone" == *"active=0"*"reason=TSCSHIM_DISABLE=1"* ]]
	[ "$(grep -E '^(active|reason|served|fenced)=' <<<"$alone")" = "$(grep -E '^(active|reason|served|fenced)=' <<<"$output")" ] ||
		{ echo "alone: $alone"; echo "beside another: $output"; false; }
}

@test "load: TSCSHIM_DISABLE=1 beside another variable: a bad value is still reported" {
	run --separate-stderr env TSCSHIM_DISABLE=1 TSCSHIM_FENCE=7 LD_PRELOAD="$SHIM" "$PROBE" loop 1
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"TSCSHIM_FENCE"* ]]
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
}

@test "load: a default cache path too long for the load path's buffer defers the decision, and it still decides" {
	require_reliable
	unset TSCSHIM_CACHE
	long="$BATS_TEST_TMPDIR/$(printf 'd%.0s' {1..120})/$(printf 'e%.0s' {1..120})"
	mkdir -p "$long"
	chmod 700 "$long"
	run env XDG_RUNTIME_DIR="$long" TSCSHIM_VERBOSE=1 TSCSHIM_SYSTEM_RECORD=off LD_PRELOAD="$SHIM" \
		"$PROBE" compare 200 1063
	echo "$output"
	[ "$status" -eq 0 ]
	# Nothing recorded, yet no cold start at load: the decision came at the first read.
	[[ "$output" == *"at the first clock read"* ]]
	[ -s "$long/tscshim.cache" ]
}

@test "load: a library linked at a high base and loaded below it, between the shim and the C library" {
	require_command cc gcc
	cd "$BATS_TEST_TMPDIR"
	# Two libraries linked at the same fixed base: the loader puts the second one
	# elsewhere, below its link base, so its load bias wraps around.
	printf 'int one(void) { return 1; }\n' >one.c
	printf 'int two(void) { return 2; }\n' >two.c
	printf '#include <stdio.h>\n#include <time.h>\nint one(void); int two(void);\nint main(void) { struct timespec ts; int r = clock_gettime(CLOCK_MONOTONIC, &ts); printf("%%d %%d\\n", one() + two(), r); return 0; }\n' >main.c
	cc -shared -fPIC -Wl,-Ttext-segment=0x7ff000000000 -o libone.so one.c
	cc -shared -fPIC -Wl,-Ttext-segment=0x7ff000000000 -o libtwo.so two.c
	cc -o main main.c -L. -lone -ltwo -Wl,-rpath,"$BATS_TEST_TMPDIR"
	run ./main
	[ "$status" -eq 0 ] && [ "$output" = "3 0" ]
	run env TSCSHIM_VERBOSE=2 LD_PRELOAD="$SHIM" ./main
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 0"* ]]
	[[ "$output" == *"real functions read from the loader's tables"* ]]
}

#!/usr/bin/env bats
# Calls the shim does not serve: once the decision is made, by whichever trigger (the due
# read, load, a status query, a fork child's inheritance), they go through the target the
# decision set, the kernel's vDSO function itself where glibc's clock_gettime only wraps
# it, and say failures as the C library does (-1, errno). The test build names the
# target (test/probe_pass.c); speed is the benchmark's business (tscshim bench's
# shim-passing rows).
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_pass"
REFCLOCK="$ROOT/build/test/librefclock.so"

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
}

@test "pass: without the shim the probe's calls hold (the reference for the rest)" {
	run "$PROBE" read
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=-1" ]
}

@test "pass: each trigger of the decision sets the vDSO target, and unserved calls behave as libc's" {
	# A cold start decides at load, and leaves the cache the other cases start from.
	run env LD_PRELOAD="$HOOKS" "$PROBE" load
	echo "load: $output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=1" ]
	for serve in always auto; do
		run env TSCSHIM_SERVE=$serve LD_PRELOAD="$HOOKS" "$PROBE" read
		echo "read ($serve): $output"
		[ "$status" -eq 0 ]
		[ "$output" = "target=1" ]
		run env TSCSHIM_SERVE=$serve TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS" "$PROBE" status
		echo "status ($serve): $output"
		[ "$status" -eq 0 ]
		[ "$output" = "target=1" ]
		run env TSCSHIM_SERVE=$serve LD_PRELOAD="$HOOKS" "$PROBE" fork
		echo "fork ($serve): $output"
		[ "$status" -eq 0 ]
		[ "$output" = "target=1" ]
	done
	run env TSCSHIM_DISABLE=1 LD_PRELOAD="$HOOKS" "$PROBE" status
	echo "disabled: $output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=1" ]
}

@test "pass: before the decision the calls count and pass through, with the same results" {
	run env LD_PRELOAD="$HOOKS" "$PROBE" load # the cache: no decision at load below
	[ "$status" -eq 0 ]
	run env TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS" "$PROBE" none
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0" ]
}

@test "pass: with TSCSHIM_STATS every call is counted; a wrapper preloaded after the shim is called, not the vDSO" {
	run --separate-stderr env TSCSHIM_STATS=stderr LD_PRELOAD="$HOOKS" "$PROBE" read
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=3" ]
	# The double stands between the shim and libc: it is the real function, and with
	# TSCTEST_SYSCALL it answers by the system call (still the kernel's clock).
	run env TSCTEST_SYSCALL=1 LD_PRELOAD="$HOOKS:$REFCLOCK" "$PROBE" read
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=2" ]
}

@test "pass: without a vDSO, the read that decides and the unserved ones after it leave errno alone" {
	run env LD_PRELOAD="$HOOKS" "$PROBE" load # the cache: the decision comes at a read below
	[ "$status" -eq 0 ]
	run env LD_PRELOAD="$HOOKS" "$PROBE" novdso
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=2" ] # no vDSO to call: the real function
	run "$PROBE" novdso # the reference: the C library alone
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "pass: before the decision, clocks the counter never serves go to the decided target without asking the gate" {
	# A process that reads only such clocks (MONOTONIC_COARSE, the CPU-time clocks, TAI)
	# never decides: each call must cost what a decided one's does, not the gate's
	# questions for life. No decision here: the read count is never reached.
	run env LD_PRELOAD="$HOOKS" "$PROBE" load # the cache: no decision at load below
	[ "$status" -eq 0 ]
	run env TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS" "$PROBE" never
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0 never_served=1 gate_asked=0" ]
	# Without a vDSO (looking for it sets errno): the real function, errno kept.
	run env TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS" "$PROBE" never novdso
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0 never_served=2 gate_asked=0" ]
	# With TSCSHIM_STATS: counted, as every call is.
	run --separate-stderr env TSCSHIM_STATS=stderr TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS" "$PROBE" never
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0 never_served=3 gate_asked=0" ]
	[[ "$stderr" == *"other=0/50003"* ]]
}

@test "pass: a clock never served, first read by a constructor that runs before the shim's, waits for the shim's load to choose" {
	# Preloaded after the shim, libearly's constructor runs first and reads
	# MONOTONIC_COARSE while the shim knows neither its C library nor TSCSHIM_STATS: a
	# target chosen then would skip the vDSO and the counting for life.
	early="$ROOT/build/test/libearly.so"
	run env LD_PRELOAD="$HOOKS" "$PROBE" load # the cache: no decision at load below
	[ "$status" -eq 0 ]
	run --separate-stderr env TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS:$early" "$PROBE" never
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"early ok"* ]]
	# The constructor's two clock_gettime calls, before the load, asked (MONOTONIC, a
	# served clock, and the COARSE one); none after it.
	[ "$output" = "target=0 never_served=1 gate_asked=2" ]
	run --separate-stderr env TSCSHIM_STATS=stderr TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS:$early" "$PROBE" never
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0 never_served=3 gate_asked=2" ]
	[[ "$stderr" == *"other=0/50003"* ]]
}

@test "pass: with TSCSHIM_CLOCKS=none no clock is served, so none asks the gate" {
	# Such a process never decides: its MONOTONIC and REALTIME reads go where a decided
	# pass-through's would, as the never-served clocks' do (before: the gate at every call).
	run env LD_PRELOAD="$HOOKS" "$PROBE" load
	[ "$status" -eq 0 ]
	run --separate-stderr env TSCSHIM_CLOCKS=none TSCSHIM_STATS=stderr LD_PRELOAD="$HOOKS" "$PROBE" never served
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0 never_served=3 gate_asked=0" ]
	[[ "$stderr" == *"monotonic=0/10000 "*"realtime=0/10003 "* ]] # and gettimeofday, timespec_get twice
	# Narrowed to MONOTONIC: REALTIME is never served; MONOTONIC still counts.
	run env TSCSHIM_CLOCKS=monotonic TSCSHIM_DECIDE_AFTER=1000000 LD_PRELOAD="$HOOKS" "$PROBE" never served
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "target=0 never_served=1 gate_asked=10000" ]
}

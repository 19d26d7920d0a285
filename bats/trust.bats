#!/usr/bin/env bats
# The served clock's promises under hostile conditions, short versions (`make soak` runs
# them for minutes): more threads than CPUs and CPU hogs, writers paused, jumped out of
# and signalled at chosen points (the hooks build of the same shim), a time-namespace
# fork, and noisy, slow and jumping references (test/lib_refclock.c). The probe checks
# every reading against a kernel bracket and exits 1 on a step back or an error beyond
# the limit given; each test also proves that the counter served the calls.
load helpers

TRUST="$ROOT/build/test/probe_trust"
REFCLOCK="$ROOT/build/test/librefclock.so"
# The default error bound is 1000 ns; a kernel read may stand still one step (1/16) more.
LIMIT=1500

setup_file() {
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
	export TSCSHIM_STATS=stderr
}

# The probe's own line says active=1, and the stats line shows every MONOTONIC call
# served by the counter but those that other threads passed to the kernel while one
# thread decided (the decision is made at the first read, and nobody waits for it). A
# call that found the path still closed and was preempted until the decision had ended
# is counted as a plain pass-through: at most one per thread, so the count may fall short
# by fewer than the probe's threads (the thread count is the probe's "threads=").
counter_served() {
	[[ "$output" == *" active=1 "* ]] || { echo "the shim did not serve"; return 1; }
	local pair deciding threads
	pair=$(sed -n 's/.* monotonic=\([0-9]*\/[0-9]*\) .*/\1/p' <<<"$output" | tail -1)
	deciding=$(sed -n 's/.* passed_while_deciding=\([0-9]*\).*/\1/p' <<<"$output" | tail -1)
	threads=$(sed -n 's/.*threads=\([0-9]*\).*/\1/p' <<<"$output" | head -1)
	local short=$(( ${pair#*/} - ${pair%/*} - deciding ))
	[ -n "$pair" ] && [ -n "$deciding" ] && [ "${pair%/*}" -gt 1000 ] &&
		[ "$short" -ge 0 ] && [ "$short" -lt "${threads:-1}" ] ||
		{ echo "monotonic served/total: '$pair', passed while deciding: '$deciding', threads: '$threads'"; return 1; }
}

stat_of() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$output" | tail -1; }

@test "trust: 16 threads on $(nproc) CPUs: never back, never beyond the bound, never frozen" {
	require_reliable
	run timeout 60 env LD_PRELOAD="$SHIM" "$TRUST" load 16 1 0 $LIMIT
	echo "$output"
	[ "$status" -eq 0 ]
	counter_served
}

@test "trust: 64 threads beside two CPU hogs" {
	require_reliable
	run timeout 60 env LD_PRELOAD="$SHIM" "$TRUST" load 64 1 2 $LIMIT
	echo "$output"
	[ "$status" -eq 0 ]
	counter_served
}

@test "trust: 1000 threads" {
	require_reliable
	run timeout 90 env LD_PRELOAD="$SHIM" "$TRUST" load 1000 2 0 $LIMIT
	echo "$output"
	[ "$status" -eq 0 ]
	counter_served
}

# A writer paused for 200 ms at each point of its work (as a preempted one would be):
# the others keep publishing, nobody's clock stands still.
@test "trust: a writer paused after its anchor, holding a slot, or before freeing one" {
	require_reliable
	for point in anchored claimed published; do
		run timeout 60 env LD_PRELOAD="$HOOKS" "$TRUST" hook pause-first $point 200 8 1 $LIMIT
		echo "$output"
		[ "$status" -eq 0 ]
		counter_served
	done
}

# Every writer paused in turn while holding a slot: the slots run out and readers past
# the hard end answer from the kernel's clock, held monotonic (kernel_reads counts them).
@test "trust: every writer paused holding a slot: readers fall back, time flows" {
	require_reliable
	run timeout 60 env LD_PRELOAD="$HOOKS" "$TRUST" hook pause-all claimed 50 8 1 $LIMIT
	echo "$output"
	[ "$status" -eq 0 ]
	counter_served
	[ "$(stat_of kernel_reads)" -gt 0 ]
}

@test "trust: siglongjmp out of a writer, 50 times, at two points" {
	require_reliable
	for point in anchored claimed; do
		run timeout 60 env LD_PRELOAD="$HOOKS" "$TRUST" hook longjmp $point 0 8 1 $LIMIT
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"jumps=50 "* ]]
		counter_served
	done
}

@test "trust: a signal handler that waits 1 ms of served time inside its own thread's writer" {
	require_reliable
	run timeout 60 env LD_PRELOAD="$HOOKS" "$TRUST" hook signal-wait anchored 0 8 1 $LIMIT
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"handler_runs=20 handler_hangs=0"* || "$output" == *"handler_runs=21 handler_hangs=0"* ]]
	counter_served
}

# unshare(CLONE_NEWTIME), offsets of 1000 s, fork: the child serves its own clocks.
@test "trust: a fork child in a time namespace re-anchors before serving" {
	require_reliable
	for which in both boottime; do
		run timeout 60 env LD_PRELOAD="$SHIM" "$TRUST" timens $which 2000
		echo "$output"
		[ "$status" -ne 3 ] || skip "no time namespaces here (needs root and CONFIG_TIME_NS)"
		[ "$status" -eq 0 ]
		child=$(grep '^timens: child' <<<"$output")
		[[ "$child" == *" active=1 "* ]]
		[ "$(sed -n 's/.* resyncs=\([0-9]*\).*/\1/p' <<<"$child")" -gt 0 ]
	done
}

@test "trust: a reference jittered by +/-200 ns: within 1 us" {
	require_reliable
	run timeout 60 env LD_PRELOAD="$SHIM $REFCLOCK" TSCTEST_JITTER_NS=200 "$TRUST" accuracy 2 1000
	echo "$output"
	[ "$status" -eq 0 ]
	counter_served
}

@test "trust: a reference that is a system call: within 300 ns" {
	require_reliable
	run timeout 60 env LD_PRELOAD="$SHIM $REFCLOCK" TSCTEST_SYSCALL=1 "$TRUST" accuracy 2 300
	echo "$output"
	[ "$status" -eq 0 ]
	counter_served
}

@test "trust: the kernel's clock jumps ahead 2 and 100 ms: no step back, back within the bound" {
	require_reliable
	for ms in 2 100; do
		run timeout 60 env LD_PRELOAD="$SHIM $REFCLOCK" "$TRUST" jump $ms 1000
		echo "$output"
		[ "$status" -eq 0 ]
		counter_served
	done
}

#!/usr/bin/env bats
# The verdict covers the CPUs the process was allowed at load. A process that widens its
# affinity afterwards may run where no counter was compared: the shim stops serving at
# the next re-synchronization and says why, instead of trusting an unchecked counter.
load helpers

PROBE="$ROOT/build/test/probe_affinity"

@test "affinity: a process pinned to one CPU at load that widens its affinity stops serving, and says why" {
	[ "$(nproc --all)" -ge 2 ] || skip "one CPU: nothing to widen to"
	require_reliable
	# No cache and no record: the verdict is measured for CPU 0 alone.
	run env TSCSHIM_CACHE=off TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" taskset -c 0 "$PROBE"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"before=1 after=0 "* ]]
	[[ "$output" == *"reason=stopped serving: the process may now run on CPUs whose counters the verdict did not compare"* ]]
	# The counter served before the widening (the stats line of the probe itself).
	served=$(grep -o 'monotonic=[0-9]*/' <<<"$output" | tail -1 | tr -dc 0-9)
	[ "$served" -gt 0 ]
}

@test "affinity: a verdict that covers every CPU keeps serving when the affinity widens" {
	[ "$(nproc --all)" -ge 2 ] || skip "one CPU: nothing to widen to"
	require_reliable
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
	# A run over every CPU writes the cache record that then covers the pinned run.
	LD_PRELOAD="$SHIM" /bin/true
	run env TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" taskset -c 0 "$PROBE"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"before=1 after=1 "* ]]
}

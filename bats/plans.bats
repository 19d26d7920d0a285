#!/usr/bin/env bats
# Every read plan serves the kernel's clock: lfence; rdtsc or rdtscp, the counter before or
# after the line's loads (shim/line.h). The test build stands in costs that name the plan
# (TSCSHIM_TEST_COSTS' fifth field), so each is served as a host whose measurement chose
# it would be; the counter must serve (the verbose line says so), every value fall inside
# the kernel's bracket, and no thread of more threads than CPUs see a step back.
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_clock"

setup() {
	require_reliable
	export TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 TSCSHIM_SERVE=auto
}

# The fenced plans this CPU can run, and the words the verbose line names each by.
fenced_plans() {
	plan_ids=(5 1)
	plan_names=("lfence, counter first" "lfence, counter after the line's loads")
	if grep -qw rdtscp /proc/cpuinfo; then
		plan_ids+=(6 2)
		plan_names+=("rdtscp, counter first" "rdtscp, counter after the line's loads")
	fi
}

@test "plans: each fenced plan serves inside the kernel's bracket, and says which it is" {
	fenced_plans
	local plan_index # not i: bats' run uses that name
	for plan_index in "${!plan_ids[@]}"; do
		run --separate-stderr env TSCSHIM_TEST_COSTS=25000,300000,20000,10000,${plan_ids[$plan_index]} \
			LD_PRELOAD="$HOOKS" "$PROBE" compare 3000 20000
		echo "plan ${plan_ids[$plan_index]}: $stderr"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"serving from the TSC"*"fenced 20.0 ns (${plan_names[$plan_index]})"* ]]
	done
}

@test "plans: with each fenced plan, eight threads on fewer CPUs never see a step back" {
	fenced_plans
	for plan in "${plan_ids[@]}"; do
		run --separate-stderr env TSCSHIM_TEST_COSTS=25000,300000,20000,10000,$plan LD_PRELOAD="$HOOKS" "$PROBE" monotonic 300 8
		echo "plan $plan: $output"
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"serving from the TSC"* ]]
	done
}

@test "plans: a record's plan outside the fenced ones is not used: the default plan serves" {
	# 3 is no plan (instruction 3), 4 an unfenced one: neither may serve a fenced read.
	for plan in 3 4; do
		run --separate-stderr env TSCSHIM_TEST_COSTS=25000,300000,20000,10000,$plan LD_PRELOAD="$HOOKS" "$PROBE" compare 500 20000
		echo "plan $plan: $stderr"
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"fenced 20.0 ns (lfence, counter first)"* ]]
	done
}

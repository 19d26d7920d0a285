#!/usr/bin/env bats
# The shim in every process of a machine (LD_PRELOAD inherited by a whole shell
# workload): every process loads it, those that never read a clock decide nothing, those
# that do decide from the record, and the workload's output is what it is without it.
# How long it takes is a benchmark (make bench-machine), not a test.
load helpers

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
	export TSCSHIM_SERVE=auto
}

@test "machine: a shell workload with the shim in every process; no clock read, no decision" {
	LD_PRELOAD="$SHIM" /bin/date >/dev/null # a record, as a machine-wide install has
	local stats="$BATS_TEST_TMPDIR/stats"
	mkdir "$stats"
	run env TSCSHIM_STATS="$stats/%p" LD_PRELOAD="$SHIM" bash -c '
		for i in 1 2 3 4 5 6 7 8 9 10; do date +%Y >/dev/null; /bin/echo 42; sh -c ":"; done | sort | uniq -c'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo $output)" = "10 42" ]
	# bash, 10 date, 10 echo, sort, uniq (and the pipeline's subshell) each wrote its line;
	# dash (sh) ends with _exit, which runs no destructor, so it writes none.
	local lines decided undecided
	lines=$(cat "$stats"/* | grep -c '^tscshim stats ')
	decided=$(cat "$stats"/* | grep -c ' decided=1 ')
	undecided=$(cat "$stats"/* | grep -c ' decided=0 ')
	echo "lines=$lines decided=$decided undecided=$undecided"
	[ "$lines" -ge 21 ]
	# date reads the clock (and so decides); echo reads none.
	[ "$decided" -ge 10 ]
	[ "$undecided" -ge 10 ]
	# One decision for all, from the record: those that decided either all serve (and
	# their reads were served) or all pass through (the benefit gate found the counter
	# not worth it on this host).
	grep -h ' decided=1 ' "$stats"/*
	run bash -c "grep -h ' decided=1 ' '$stats'/* | grep -o ' active=[01] ' | sort -u"
	[ "${#lines[@]}" -eq 1 ]
	if [ "$output" = " active=1 " ]; then
		! grep -l ' decided=1 ' "$stats"/* | xargs grep -L 'realtime=[1-9]' | grep -q . || false
	fi
}

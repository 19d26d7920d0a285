#!/usr/bin/env bats
# What the load and the decision make, counted, on a host staged dear: the steps build
# (build/test/libtscshim-steps.so, calib/steps.h) makes each system call of the shim's
# 5 us dearer and each page fault 10 us (a microVM guest's prices), and counts the system
# calls, page faults and kernel clock reads of each part (test/steps.py --counts). Counts,
# not times: they hold on any host kind, and a change that makes one grow back fails here.
# The times are doc/STARTUP.md's table (test/steps.py without --counts).
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_clock"
DUE="$ROOT/build/test/probe_due"
STEPS="$ROOT/test/steps.py"
DEAR=(TSCTEST_SYSCALL_COST_NS=5000 TSCTEST_FAULT_COST_NS=10000)

# The largest value of FIELD over the processes' --counts lines in $output.
most() { # FIELD
	sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$output" | sort -n | tail -1
}

# Its median: the decision's count where one process in three may have timed the kernel's
# clock at a busy moment, which makes it ask /sys the clocksource's name (a libc page more;
# decide.bats's "costs whose kernel figure is today's" holds that look to where it is due).
usual() { # FIELD
	sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$output" | sort -n | sed -n 2p
}

@test "steps: from the machine-wide record, no variable set, the load makes 3 system calls, no fault, no clock read; the decision 5, 1 fault, at most 90 reads" {
	require_default_setup
	run python3 "$STEPS" 3 --own-record --counts "${DEAR[@]}" -- "$DUE" 2000
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(wc -l <<<"$output")" -eq 3 ]
	# load: the record's lstat, the boot's time by two clock_gettime calls (no vDSO page)
	[ "$(most load_syscalls)" -le 3 ]
	[ "$(most load_faults)" -eq 0 ]
	[ "$(most load_reads)" -eq 0 ]
	# decision: the signal mask's two, the directory's lstat, readlinkat, madvise; the
	# claim's page; the kernel's clock timed (1 + 3 x 16), the boot's time, four clocks'
	# first anchors
	[ "$(usual decision_syscalls)" -le 5 ]
	[ "$(usual decision_faults)" -le 1 ]
	[ "$(most decision_reads)" -le 90 ]
	grep -q 'decision_syscalls=[1-9]' <<<"$output" # it decided
}

@test "steps: /bin/true, which reads no clock, pays the load alone: 3 system calls, no fault" {
	require_default_setup
	run python3 "$STEPS" 3 --own-record --counts "${DEAR[@]}" -- /bin/true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(most load_syscalls)" -le 3 ]
	[ "$(most load_faults)" -eq 0 ]
	[ "$(most decision_syscalls)" -eq 0 ]
	[ "$(most decision_faults)" -eq 0 ]
}

@test "steps: from the per-user cache, the load makes 1 system call; the decision at most 7 (root's fstat among them), 1 fault" {
	require_reliable
	warm_cache "$ROOT/build/test/libtscshim-steps.so"
	run python3 "$STEPS" 3 --counts "${DEAR[@]}" TSCSHIM_SYSTEM_RECORD=off TSCSHIM_DECIDE_AFTER=1000 -- "$DUE" 2000
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(most load_syscalls)" -le 1 ]
	# a variable set: the options are parsed, on a page of their own
	[ "$(most load_faults)" -le 1 ]
	[ "$(usual decision_syscalls)" -le 7 ]
	[ "$(usual decision_faults)" -le 1 ]
	[ "$(most decision_reads)" -le 90 ]
	grep -q 'decision_syscalls=[1-9]' <<<"$output"
}

@test "steps: the staged costs are paid: a system call of 5 us and a fault of 10 us show in the steps' times" {
	# The double itself: without it the counts above would be of a host whose prices the
	# shim never met.
	require_reliable
	warm_cache "$ROOT/build/test/libtscshim-steps.so"
	run python3 "$STEPS" 3 "${DEAR[@]}" TSCSHIM_SYSTEM_RECORD=off TSCSHIM_DECIDE_AFTER=1000 -- "$DUE" 2000
	echo "$output"
	[ "$status" -eq 0 ]
	# every system call step takes at least its 5 us, the claim's page its 10
	sed -n 's/^| [0-9]* | system call `[a-z_0-9]*` | \([0-9.]*\) |.*/\1/p' <<<"$output" |
		awk '{ if ($1 < 5) bad = 1; n++ } END { exit (bad || n == 0) }'
	grep -E "^\| [0-9]+ \| decision: the claim's page written \| (1[0-9]|[2-9][0-9])\." <<<"$output"
}

#!/usr/bin/env bats
# The read a decision is due at never stalls, crashes, sticks or doubles: it
# measures nothing (the estimator and the cost measurement run only at load, or at a
# status query), it runs on a stack of its own, one address space runs one decision at a
# time, and no state makes a read pay a system call. Each test here failed against the
# decision as it was before (the figures in its comment).
load helpers
bats_require_minimum_version 1.5.0

PROBE="$ROOT/build/test/probe_clock"

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
}

# The smallest alternate signal stack, in steps of 256 bytes, on which the probe's handler
# (one clock read between two system-call reads of the kernel's clock) runs without the shim.
smallest_altstack() {
	local size
	for size in $(seq 1024 256 16384); do
		if TSCSHIM_DECIDE_AFTER=21 PROBE_READS_FIRST=20 "$LAZY" altstack "$size" "$BOUND" >/dev/null 2>&1; then
			echo "$size"
			return 0
		fi
	done
	return 1
}

@test "decide: a read due in a handler on an alternate stack 1 KiB above the program's own need decides there" {
	# Before: 3, 4 and 5 KiB crashed with SIGSEGV where 3 KiB sufficed without the shim.
	require_reliable
	warm_cache
	local need
	need=$(smallest_altstack)
	echo "without the shim: $need bytes"
	for size in $((need + 1024)) "$need"; do
		run env TSCSHIM_DECIDE_AFTER=21 PROBE_READS_FIRST=20 TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 \
			LD_PRELOAD="$SHIM" "$LAZY" altstack "$size" "$BOUND"
		echo "$size: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"at clock read 21, prepared in"* ]]
		[[ "$output" == *" active=1 decided=1 monotonic=1001/1021 "* ]]
	done
}

@test "decide: a decider killed mid-decision leaves a process that passes through, with no system call per read" {
	# Before: the process stayed "deciding" for ever, one getpid per read (100,004 here).
	require_reliable
	require_command strace strace
	warm_cache
	run --separate-stderr strace -f -qq -e trace=getpid,gettid,tkill -o "$BATS_TEST_TMPDIR/trace" \
		-E LD_PRELOAD="$SHIM" -E TSCSHIM_STATS=stderr -E TSCSHIM_VERBOSE=1 "$LAZY" kill-decider "$BOUND"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"kill-decider: decided=1 reason=the thread deciding died mid-decision"* ]]
	[[ "$stderr" == *" decided=1 monotonic=0/100000 "* ]]
	local calls
	calls=$(wc -l <"$BATS_TEST_TMPDIR/trace")
	echo "getpid, gettid, tkill: $calls"
	[ "$calls" -le 10 ]
}

@test "decide: a handler that jumps out of the reads that prepare and make the decision leaves no claim held" {
	# A 50 us interval timer whose handler siglongjmps out of whichever read it interrupts.
	# A signal held back during a part is delivered when the mask is restored: before,
	# that came while the claim was still held by the (live) reading thread, so every
	# later read passed through and the process never decided (40 of 40 runs).
	require_reliable
	warm_cache
	local i
	for i in 1 2 3 4 5 6 7 8; do
		run --separate-stderr env TSCSHIM_DECIDE_AFTER=10 TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 \
			LD_PRELOAD="$SHIM" "$LAZY" jump-out "$BOUND"
		echo "$output"
		echo "$stderr"
		[ "$status" -eq 0 ]
		[[ "$output" == *"jump-out: jumps="*" decided=1"* ]]
		[[ "$stderr" == *"serving from the TSC"* ]]
		[[ "$stderr" != *"still under way at exit"* ]]
	done
}

# Per process of the trace: how many times it called getpid, gettid or tkill; the largest.
most_calls() {
	awk '$2 ~ /^(getpid|gettid|tkill)\(/ {n[$1]++} END {m = 0; for (p in n) if (n[p] > m) m = n[p]; print m}' "$1"
}

@test "decide: children forked while another thread decides make no system call per read, and decide for themselves" {
	# Before (a decision at the read that measured): every child passed through for life,
	# 20,001 getpid calls each.
	require_reliable
	require_command strace strace
	# An unusable cache: before, the decision at the read measured (3 ms); now it passes
	# through at once, and the children with it.
	echo garbage >"$TSCSHIM_CACHE"
	run --separate-stderr strace -f -qq -e trace=getpid,gettid,tkill,sched_setaffinity,clone3 \
		-o "$BATS_TEST_TMPDIR/trace" -E LD_PRELOAD="$SHIM" -E TSCSHIM_STATS=stderr "$LAZY" fork-storm "$BOUND"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(grep -c ' decided=1 ' <<<"$stderr")" -eq 9 ]
	! grep sched_setaffinity "$BATS_TEST_TMPDIR/trace" || false
	[ "$(most_calls "$BATS_TEST_TMPDIR/trace")" -le 3 ]
	# A record that answers: every child serves, deciding for itself if forked mid-decision.
	rm -f "$TSCSHIM_CACHE"
	warm_cache
	run --separate-stderr strace -f -qq -e trace=getpid,gettid,tkill -o "$BATS_TEST_TMPDIR/trace" \
		-E LD_PRELOAD="$SHIM" -E TSCSHIM_STATS=stderr "$LAZY" fork-storm "$BOUND"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(grep -c ' active=1 decided=1 ' <<<"$stderr")" -eq 9 ]
	[ "$(most_calls "$BATS_TEST_TMPDIR/trace")" -le 3 ]
}

@test "decide: a vfork or CLONE_VM child reading while a thread decides never decides too" {
	# Before: the child took the claim over, and two decisions ran in one address space.
	require_reliable
	warm_cache "$HOOKS"
	for how in vfork clone; do
		run env TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 LD_PRELOAD="$HOOKS" "$LAZY" vm-mid-decision "$how" "$BOUND"
		echo "$how: $output"
		[ "$status" -eq 0 ]
		[ "$(grep -c 'tscshim: serving from the TSC' <<<"$output")" -eq 1 ]
		[[ "$output" != *"could not publish"* ]]
	done
}

# The read that decides runs neither the estimator (a clone) nor the cost measurement, in
# each case of the table in doc/STARTUP.md where it did. STRACE_OUT gets the trace.
no_measurement_at_read() { # ENV... -- PROGRAM ARGS
	run --separate-stderr strace -f -qq -e trace=clone,clone3,sched_setaffinity,fork,vfork \
		-o "$BATS_TEST_TMPDIR/trace" "$@"
	echo "$stderr"
	cat "$BATS_TEST_TMPDIR/trace"
	[ "$status" -eq 0 ]
	! grep -qE 'clone|sched_setaffinity|fork' "$BATS_TEST_TMPDIR/trace" || false
}

@test "decide: a cache that fails at the read (another boot, CPU set, corrupt) passes through, measures nothing there, and the next start measures at load" {
	require_reliable
	require_command strace strace
	for damage in boot corrupt; do
		rm -f "$TSCSHIM_CACHE"
		warm_cache
		case $damage in
		boot) edit_cache "$TSCSHIM_CACHE" boot_id 00000000-0000-0000-0000-000000000000 ;;
		corrupt) sed -i 's/^rate_millihz=/rate_millihz=x/' "$TSCSHIM_CACHE" ;;
		esac
		touch "$TSCSHIM_CACHE"
		no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_VERBOSE=1 -E TSCSHIM_SERVE=auto "$PROBE" loop 5
		[[ "$stderr" == *"passing through: no record answers this process at its read"* ]]
		# Marked: the next start finds it older than the boot at load, and measures there.
		[ "$(stat -c %Y "$TSCSHIM_CACHE")" -eq 0 ]
		run env TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" loop 5
		echo "$output"
		[[ "$output" == *"measured now"*"at load (no record passed the checks at load)"* ]]
	done
}

@test "decide: a record that fails the checks at load (symlink, writable by others, empty, older than the boot, another owner, unreadable) measures at load, not at the read" {
	require_reliable
	require_command strace strace
	warm_cache
	cp "$TSCSHIM_CACHE" "$BATS_TEST_TMPDIR/good"
	local damages="symlink mode empty old unreadable"
	[ "$(id -u)" -ne 0 ] || damages="$damages owner"
	for damage in $damages; do
		rm -f "$TSCSHIM_CACHE"
		cp "$BATS_TEST_TMPDIR/good" "$TSCSHIM_CACHE"
		case $damage in
		symlink) rm "$TSCSHIM_CACHE" && ln -s "$BATS_TEST_TMPDIR/good" "$TSCSHIM_CACHE" ;;
		mode) chmod 0666 "$TSCSHIM_CACHE" ;;
		empty) : >"$TSCSHIM_CACHE" ;;
		old) touch -d @0 "$TSCSHIM_CACHE" ;;
		unreadable) chmod 0200 "$TSCSHIM_CACHE" ;;
		owner) chown nobody "$TSCSHIM_CACHE" ;;
		esac
		run env TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" loop 5
		echo "$damage: $output"
		[[ "$output" == *"at load (no record passed the checks at load)"* ]]
	done
}

@test "decide: a record without this build's costs: the read measures nothing; auto passes through, always serves" {
	require_reliable
	require_command strace strace
	warm_cache
	edit_cache "$TSCSHIM_CACHE" cost_build 1
	no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_VERBOSE=1 -E TSCSHIM_SERVE=auto "$PROBE" loop 5
	[[ "$stderr" == *"passing through: the record holds no costs of this build"* ]]
	rm -f "$TSCSHIM_CACHE"
	warm_cache
	edit_cache "$TSCSHIM_CACHE" cost_build 1
	no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_VERBOSE=1 -E TSCSHIM_STATS=stderr "$PROBE" loop 5
	[[ "$stderr" == *"serving from the TSC"*"from the cache"* ]]
	[[ "$stderr" == *" active=1 decided=1 monotonic=5/5 "* ]]
}

@test "decide: with no boot id (no /proc), nothing is measured at load or at the read: it passes through at once and says so" {
	require_reliable
	require_command unshare util-linux
	[ "$(id -u)" -eq 0 ] || skip "mounting over /proc needs root"
	rm -f "$TSCSHIM_CACHE"
	run unshare -m sh -c "mount -t tmpfs none /proc && env TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD='$SHIM' '$PROBE' loop 5"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"passing through: cannot read /proc/sys/kernel/random/boot_id (no /proc?)"* ]]
	[[ "$output" == *"at the first clock read"* ]]
	[ ! -e "$TSCSHIM_CACHE" ]
}

@test "decide: TSCSHIM_VERBOSE gives a process that never decides one line at exit, even if it closed stderr" {
	warm_cache
	run env -u TSCSHIM_DECIDE_AFTER TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" loop 3
	echo "$output"
	[ "$(grep -c '^tscshim: ' <<<"$output")" -eq 1 ]
	[[ "$output" == *"tscshim: never decided: 3 reads of a served clock, the decision due at read 1000"* ]]
	# date (coreutils) closes stderr at exit: the line goes to the stderr of load.
	run env -u TSCSHIM_DECIDE_AFTER TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" date
	echo "$output"
	[[ "$output" == *"tscshim: never decided: 1 reads"* ]]
	run env TSCSHIM_DISABLE=1 TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$LAZY" none
	echo "$output"
	[[ "$output" == *"tscshim: never decided: 0 reads"*"TSCSHIM_DISABLE=1"* ]]
	# A process that decided says so once, at the decision, and nothing at exit.
	run env TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" loop 3
	echo "$output"
	[ "$(grep -c '^tscshim: ' <<<"$output")" -eq 1 ]
	# No variable: nothing written, not even a descriptor copied.
	run strace -qq -e trace=fcntl,dup,dup2,dup3 -E LD_PRELOAD="$SHIM" -E TSCSHIM_DECIDE_AFTER=1000 env -u TSCSHIM_SYSTEM_RECORD -u TSCSHIM_SERVE -u TSCSHIM_CACHE "$PROBE" loop 3
	echo "$output"
	[[ "$output" != *"tscshim"* && "$output" != *"F_DUPFD"* ]]
}

MUSL_SHIM="$ROOT/build-musl/libtscshim.so"
MUSL_PROBE="$ROOT/build-musl/test/probe_clock"

require_musl_build() {
	[ -x "$MUSL_PROBE" ] && [ -s "$MUSL_SHIM" ] && [ -x "$ROOT/build-musl/tscshim" ] ||
		skip "no musl build (make musl)"
}

@test "decide: glibc and musl processes on one per-user cache keep both builds' costs, and then neither measures" {
	require_reliable
	require_musl_build
	require_command strace strace
	export TSCSHIM_SERVE=auto
	# glibc measures at load (nothing recorded); musl finds no costs of its build at its
	# read, passes through, and marks the cache; the next musl start measures at load.
	LD_PRELOAD="$SHIM" "$PROBE" loop 5 >/dev/null
	run env TSCSHIM_VERBOSE=1 LD_PRELOAD="$MUSL_SHIM" "$MUSL_PROBE" loop 5
	echo "$output"
	[[ "$output" == *"passing through: the record holds no costs of this build"* ]]
	run env TSCSHIM_VERBOSE=1 LD_PRELOAD="$MUSL_SHIM" "$MUSL_PROBE" loop 5
	echo "$output"
	# The cache's record answers; only this build's costs are measured, at load.
	[[ "$output" == *"at load (no record passed the checks at load)"*"measured now;"* ]]
	grep -Eq '^cost_build=[1-9]' "$TSCSHIM_CACHE"
	grep -Eq '^cost_build_2=[1-9]' "$TSCSHIM_CACHE"
	# From now on each decides from the cache at its read, measuring nothing, in turn.
	for round in 1 2; do
		no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_VERBOSE=1 "$PROBE" loop 5
		[[ "$stderr" == *"from the cache"*"from the record;"* ]]
		no_measurement_at_read -E LD_PRELOAD="$MUSL_SHIM" -E TSCSHIM_VERBOSE=1 "$MUSL_PROBE" loop 5
		[[ "$stderr" == *"from the cache"*"from the record;"* ]]
	done
}

@test "decide: calib --save stores the costs of the musl build beside this one; a musl process decides from them" {
	require_reliable
	require_musl_build
	require_command strace strace
	local record
	save_record_for_test
	[ "$(grep -c '^stored decision: ' <<<"$output")" -eq 2 ]
	grep -Eq '^cost_build_2=[1-9]' "$record"
	no_measurement_at_read -E LD_PRELOAD="$MUSL_SHIM" -E TSCSHIM_SYSTEM_RECORD="$record" -E TSCSHIM_CACHE=off \
		-E TSCSHIM_SERVE=auto -E TSCSHIM_VERBOSE=1 "$MUSL_PROBE" loop 5
	[[ "$stderr" == *"from the machine-wide record"*"from the record;"* ]]
	no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_SYSTEM_RECORD="$record" -E TSCSHIM_CACHE=off \
		-E TSCSHIM_SERVE=auto -E TSCSHIM_VERBOSE=1 "$PROBE" loop 5
	[[ "$stderr" == *"from the machine-wide record"*"from the record;"* ]]
}

@test "decide: costs measured under another clocksource are not used; the next start measures this one's, and keeps both" {
	require_reliable
	require_command strace strace
	local here
	here=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null) ||
		skip "no /sys clocksource"
	export TSCSHIM_SERVE=auto
	rm -f "$TSCSHIM_CACHE"
	LD_PRELOAD="$SHIM" "$PROBE" loop 5 >/dev/null
	grep -qx "cost_clocksource=$here" "$TSCSHIM_CACHE"
	# The same costs, as if the kernel had read another clocksource when they were measured
	# (its watchdog, or an administrator, switches it at run time).
	edit_cache "$TSCSHIM_CACHE" cost_clocksource hpet
	no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_VERBOSE=1 "$PROBE" loop 5
	[[ "$stderr" == *"passing through: the record holds no costs of this build under this clocksource"* ]]
	# The next start measures this clocksource's costs at load; the other's stay beside them.
	run env TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" loop 5
	echo "$output"
	[[ "$output" == *"at load (no record passed the checks at load)"*"measured now;"* ]]
	cat "$TSCSHIM_CACHE"
	grep -qx "cost_clocksource=$here" "$TSCSHIM_CACHE"
	grep -qx "cost_clocksource_2=hpet" "$TSCSHIM_CACHE"
	# From then on it decides from the record at its read, measuring nothing.
	no_measurement_at_read -E LD_PRELOAD="$SHIM" -E TSCSHIM_VERBOSE=1 "$PROBE" loop 5
	[[ "$stderr" == *"from the cache"*"from the record;"* ]]
}

#!/usr/bin/env bats
# The decision at a read of a served clock (the first here, as helpers.bash sets
# TSCSHIM_DECIDE_AFTER=1; the thousandth by default): a program that reads none, or fewer,
# never decides; the read it is due at, wherever it is made (a signal handler, two threads
# at once), is the kernel's clock within the usual bound; a cold start still decides at load.
load helpers
bats_require_minimum_version 1.5.0

PROBE="$ROOT/build/test/probe_clock"

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
}

# Every MONOTONIC call served from the counter, but those that another thread passed to
# the kernel while one decided.
all_served() {
	local pair deciding
	pair=$(sed -n 's/.* monotonic=\([0-9]*\/[0-9]*\) .*/\1/p' <<<"$output" | tail -1)
	deciding=$(sed -n 's/.* passed_while_deciding=\([0-9]*\).*/\1/p' <<<"$output" | tail -1)
	[ -n "$pair" ] && [ "${pair%/*}" -ge "$1" ] && [ $((${pair%/*} + deciding)) -eq "${pair#*/}" ] ||
		{ echo "monotonic served/total: '$pair', passed while deciding: '$deciding'"; return 1; }
}

@test "lazy: a program that reads no clock decides nothing, with a warm record" {
	require_reliable
	warm_cache
	run env TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$LAZY" none
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"serving from the TSC"* && "$output" != *"passing through"* ]]
	[[ "$output" == *" active=0 decided=0 "* ]]
}

@test "lazy: the same program with a first read decides there, from the record" {
	require_reliable
	warm_cache
	run env TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE" loop 10
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"serving from the TSC"*"from the cache"*"at the first clock read"* ]]
	[[ "$output" == *" active=1 decided=1 "* ]]
}

# The served and total MONOTONIC counts of the stats line: "served/total".
monotonic_counts() {
	sed -n 's/.* monotonic=\([0-9]*\/[0-9]*\) .*/\1/p' <<<"$output" | tail -1
}

@test "lazy: reads below TSCSHIM_DECIDE_AFTER go to the kernel with no system call; the due read decides, reading the cache once and nothing under /proc" {
	require_reliable
	require_command strace strace
	warm_cache
	local trace="$BATS_TEST_TMPDIR/trace"
	run --separate-stderr strace -f -qq -e trace=openat,open,sched_getaffinity,madvise,rt_sigprocmask,gettid -o "$trace" \
		-E LD_PRELOAD="$SHIM" -E TSCSHIM_DECIDE_AFTER=50 -E TSCSHIM_VERBOSE=1 -E TSCSHIM_STATS=stderr \
		"$PROBE" loop 49
	echo "$stderr"
	cat "$trace"
	[ "$status" -eq 0 ]
	[[ "$stderr" != *"serving from the TSC"* && "$stderr" != *"passing through"* ]]
	[[ "$stderr" == *" active=0 decided=0 monotonic=0/49 "*" passed_while_deciding=0"* ]]
	[[ "$stderr" == *"never decided: 49 reads"* ]]
	# Nothing looked at, no signal blocked: the decision never began.
	! grep -E 'sched_getaffinity|madvise|boot_id|clocksource|rt_sigprocmask|gettid' "$trace" || false
	! grep -F "$TSCSHIM_CACHE" "$trace" || false
	# The 50th decides, in one go: the cache read once, every signal blocked once; no boot
	# id (the record's boot time is this boot's), no thread id (the only thread), and no
	# CPU set where the record holds every CPU the boot can bring online.
	run --separate-stderr strace -f -qq -e trace=openat,open,sched_getaffinity,madvise,rt_sigprocmask,gettid -o "$trace" \
		-E LD_PRELOAD="$SHIM" -E TSCSHIM_DECIDE_AFTER=50 -E TSCSHIM_VERBOSE=1 "$PROBE" loop 50
	echo "$stderr"
	cat "$trace"
	[[ "$stderr" == *"at clock read 50"* ]]
	[ "$(grep -cF "$TSCSHIM_CACHE" "$trace")" -eq 1 ]
	! grep -E 'boot_id|/proc/|gettid' "$trace" || false
	# (Once for the decision: a block after its end is a re-synchronization's publication,
	# where a loaded machine kept the process away longer than the first line's life.)
	[ "$(awk '/rt_sigprocmask\(SIG_SETMASK/ {exit} /rt_sigprocmask\(SIG_BLOCK/ {n++} END {print n + 0}' "$trace")" -eq 1 ]
	if grep -qx all_cpus=1 "$TSCSHIM_CACHE"; then
		! grep -q sched_getaffinity "$trace" || false
	else
		[ "$(grep -c sched_getaffinity "$trace")" -eq 1 ]
	fi
	# The clock's start marks the fork-wiped pages, once.
	[ "$(grep -c MADV_WIPEONFORK "$trace")" -eq 1 ]
}

@test "lazy: the read TSCSHIM_DECIDE_AFTER names decides, and it and every read after it are served" {
	require_reliable
	warm_cache
	run env TSCSHIM_DECIDE_AFTER=50 TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE" loop 50
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"serving from the TSC"*"from the cache"*"at clock read 50"[\;\)]* ]]
	[[ "$output" == *" active=1 decided=1 "* ]]
	[ "$(monotonic_counts)" = 1/50 ]
	run env TSCSHIM_DECIDE_AFTER=50 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE" loop 80
	echo "$output"
	[ "$(monotonic_counts)" = 31/80 ]
}

@test "lazy: reads of a clock not served do not count toward the decision" {
	require_reliable
	warm_cache
	run env TSCSHIM_CLOCKS=monotonic TSCSHIM_DECIDE_AFTER=50 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE" mixed 100 49
	echo "$output"
	[[ "$output" == *" active=0 decided=0 monotonic=0/49 "* ]]
	run env TSCSHIM_CLOCKS=monotonic TSCSHIM_DECIDE_AFTER=50 TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr \
		LD_PRELOAD="$SHIM" "$PROBE" mixed 100 50
	echo "$output"
	[[ "$output" == *"at clock read 50"[\;\)]* ]]
	[ "$(monotonic_counts)" = 1/50 ]
}

@test "lazy: a fork child of a process whose status query is deciding waits for its own due read" {
	require_reliable
	LD_PRELOAD="$HOOKS" "$PROBE" loop 1 >/dev/null
	[ -s "$TSCSHIM_CACHE" ]
	run env -u TSCSHIM_DECIDE_AFTER TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 LD_PRELOAD="$HOOKS" "$LAZY" fork-mid-status "$BOUND"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fork-mid-status child: violations=0"* ]]
	# The child's three reads went to the kernel: it did not decide (the parent did, asked).
	[ "$(grep -c ' decided=0 monotonic=0/3 ' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'decided in .* when the status was asked for' <<<"$output")" -eq 1 ]
}

@test "lazy: with no variable at all the decision comes at the thousandth read" {
	require_reliable
	require_command strace strace
	# The default cache in a runtime directory of our own; nothing else set. No variable
	# also means the default machine-wide record (/run/tscshim/calibration), which a
	# machine deployed as documented has (the unit writes it at every boot): there the
	# decision reads it (readlinkat) and never opens the cache. Either record, read at the
	# due read and not before, is what this test checks.
	local run_dir="$BATS_TEST_TMPDIR/run" default_record=/run/tscshim/calibration
	mkdir -m 700 "$run_dir"
	env -u TSCSHIM_CACHE XDG_RUNTIME_DIR="$run_dir" LD_PRELOAD="$SHIM" "$PROBE" loop 1 >/dev/null
	[ -s "$run_dir/tscshim.cache" ]
	for n in 999 1000; do
		env -i PATH="$PATH" XDG_RUNTIME_DIR="$run_dir" strace -f -qq -e trace=openat,readlinkat \
			-o "$BATS_TEST_TMPDIR/trace-$n" -E LD_PRELOAD="$SHIM" "$PROBE" loop "$n"
		cat "$BATS_TEST_TMPDIR/trace-$n"
	done
	# A record read at the thousandth read, not before.
	! grep -qE "tscshim\.cache|readlinkat\(.*\"$default_record\"" "$BATS_TEST_TMPDIR/trace-999" || false
	grep -qE "openat\(.*tscshim\.cache|readlinkat\(.*\"$default_record\"" "$BATS_TEST_TMPDIR/trace-1000"
}

@test "lazy: with no setting the decision comes at the thousandth read" {
	require_reliable
	warm_cache
	run env -u TSCSHIM_DECIDE_AFTER TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE" loop 999
	echo "$output"
	[[ "$output" == *" active=0 decided=0 monotonic=0/999 "* ]]
	run env -u TSCSHIM_DECIDE_AFTER TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE" loop 1000
	echo "$output"
	[[ "$output" == *"at clock read 1000"[\;\)]* ]]
	[ "$(monotonic_counts)" = 1/1000 ]
}

@test "lazy: a decision due in a signal handler, after reads that passed through, decides there within the bound" {
	require_reliable
	warm_cache
	run env TSCSHIM_DECIDE_AFTER=21 PROBE_READS_FIRST=20 TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 \
		LD_PRELOAD="$SHIM" "$LAZY" handler "$BOUND"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"at clock read 21"[\;\)]* ]]
	# The 20 reads before it went to the kernel; the handler's and the 1000 after, served.
	[ "$(monotonic_counts)" = 1001/1021 ]
}

@test "lazy: a decision due while two threads read at once: both within the bound, nobody waits" {
	require_reliable
	warm_cache
	for i in 1 2 3; do
		run env TSCSHIM_DECIDE_AFTER=11 PROBE_READS_FIRST=10 TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 \
			LD_PRELOAD="$SHIM" "$LAZY" threads "$BOUND"
		echo "$output"
		[ "$status" -eq 0 ]
		# The decider's read number is the shared count plus its own unshared reads: at
		# least the 11th; more where the other thread's batch reached the shared count
		# first (each thread adds at most 11 here: it shares its count once the two reach
		# the due read), and the main thread's 10 unshared reads never reach it.
		local number
		number=$(sed -n 's/.* at clock read \([0-9]*\)[;,)].*/\1/p' <<<"$output" | tail -1)
		[ -n "$number" ]
		[ "$number" -ge 11 ]
		[ "$number" -le 33 ]
		local pair deciding
		pair=$(monotonic_counts)
		deciding=$(sed -n 's/.* passed_while_deciding=\([0-9]*\).*/\1/p' <<<"$output" | tail -1)
		# All but the 10 first reads and those passed while the decision was under way
		# (a read that found the path closed and was preempted past the decision's end
		# counts as plain pass-through: at most one per thread), and the other thread's
		# reads it had counted but not yet added to the shared count when the decision
		# came (fewer than a batch of 64: they passed through as reads before the due one).
		local accounted=$((${pair%/*} + deciding))
		[ "${pair#*/}" -eq 200010 ]
		[ "$accounted" -le 200010 ]
		[ "$accounted" -ge $((200008 - 63)) ]
		[ "${pair%/*}" -ge 100000 ]
	done
}

@test "lazy: a cold start (nothing recorded) decides at load, before main" {
	require_reliable
	run env TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$LAZY" none
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"measured now"*"at load (no record passed the checks at load)"* ]]
	[[ "$output" == *" decided=1 "* ]]
	[ -s "$TSCSHIM_CACHE" ]
}

@test "lazy: TSCSHIM_DISABLE=1 decides nothing and writes nothing, even cold" {
	run env TSCSHIM_DISABLE=1 TSCSHIM_VERBOSE=1 TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$LAZY" none
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" decided=0 "* ]]
	[ ! -e "$TSCSHIM_CACHE" ]
}

@test "lazy: the first read in a signal handler decides there and is the kernel's clock" {
	require_reliable
	warm_cache
	run env TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$LAZY" handler "$BOUND"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"at the first clock read"* ]]
	all_served 1001
}

@test "lazy: the first line, published inside the decision, is claimed with every signal blocked" {
	# The decision blocks every signal for its whole length, so its publication does not
	# block them again; a hook at the claim reads the mask the claim really runs under.
	require_reliable
	LD_PRELOAD="$HOOKS" "$PROBE" loop 1 >/dev/null
	[ -s "$TSCSHIM_CACHE" ]
	run env TSCSHIM_SERVE=always TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 LD_PRELOAD="$HOOKS" "$LAZY" claim-mask "$BOUND"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"at the first clock read"* ]]
	[[ "$output" == *"claim-mask: claims="[1-9]*" unblocked=0"* ]]
	all_served 1000
}

@test "lazy: fork handlers that unblock signals during the estimator's fork: the claim is still blocked" {
	# An unusable cache: the decision a status query forces measures (a read would not),
	# in a child made with fork, which runs the program's pthread_atfork handlers on the
	# deciding thread.
	require_reliable
	local tries=0
	while :; do
		echo garbage >"$TSCSHIM_CACHE"
		run env TSCSHIM_SERVE=always TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 LD_PRELOAD="$HOOKS" \
			"$LAZY" claim-mask-atfork "$BOUND"
		echo "$output"
		# 3: nothing published (an inconclusive estimate on a loaded machine): again.
		[ "$status" -eq 3 ] && [ $((tries += 1)) -lt 3 ] || break
	done
	[ "$status" -eq 0 ]
	[[ "$output" == *"measured now"*"when the status was asked for"* ]]
	[[ "$output" == *"claim-mask: claims="[1-9]*" unblocked=0"* ]]
	all_served 1000
}

@test "lazy: a fork while another thread's decision holds its first claim: the child decides for itself" {
	# The decision's scratch shares the page the kernel wipes in a fork child: the child
	# finds it zeroed, and another process's decision under way, and decides afresh.
	require_reliable
	LD_PRELOAD="$HOOKS" "$PROBE" loop 1 >/dev/null
	[ -s "$TSCSHIM_CACHE" ]
	run env TSCSHIM_SERVE=always TSCSHIM_STATS=stderr TSCSHIM_VERBOSE=1 LD_PRELOAD="$HOOKS" "$LAZY" fork-mid-decision "$BOUND"
	echo "$output"
	[ "$status" -eq 0 ]
	# The child inherits the parent's count of reads (one, its decider's): its first is read 2.
	[ "$(grep -c 'decided in .* at the first clock read' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'decided in .* at clock read 2;' <<<"$output")" -eq 1 ]
	[[ "$output" == *"fork-mid-decision child: violations=0"* ]]
	[[ "$output" == *"fork-mid-decision parent: violations=0"* ]]
	# Both processes served their reads from the counter.
	[ "$(grep -c ' active=1 decided=1 monotonic=1000/1000 ' <<<"$output")" -eq 2 ]
}

@test "lazy: two threads making the first read at once: both within the bound, nobody waits" {
	require_reliable
	warm_cache
	for i in 1 2 3 4 5; do
		run env TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$LAZY" threads "$BOUND"
		echo "$output"
		[ "$status" -eq 0 ]
		all_served 100000
	done
}

@test "lazy: a fork child of a process that never read a clock decides for itself" {
	require_reliable
	warm_cache
	run env TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" sh -c "'$PROBE' loop 5"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *" active=1 decided=1 monotonic=5/5 "* ]]
}

# One boot and one build, one decision: the machine-wide record carries the costs, so no
# process measures them, and a gain at the margin cannot come out differently from one
# process to the next. The hooks build stands in a forced measurement near the margin.
@test "one decision: 50 processes against one record with costs at the margin decide alike" {
	[ "$(id -u)" -eq 0 ] || skip "the machine-wide record must be root's"
	require_reliable
	local dir="$BATS_TEST_TMPDIR/run" record
	record="$dir/tscshim/calibration"
	mkdir -p "$dir" && chmod 0755 "$dir" "$BATS_TEST_TMPDIR"
	# Fenced 25.9 ns against 27.0: 4.1 % cheaper, under the 5 % margin.
	run env TSCSHIM_LIBRARY="$HOOKS" TSCSHIM_SYSTEM_RECORD="$record" \
		TSCSHIM_TEST_COSTS=27000,1100000,25900,11000 "$TSCSHIM" calib --save --calibrate-us 20000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"stored decision:     pass through: fenced 25.9 ns against the kernel's 27.0 ns"* ]]
	record_text "$record" | grep -q '^fenced_ps=25900$'
	local decisions
	decisions=$(for i in $(seq 50); do
		env TSCSHIM_SERVE=auto TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 \
			LD_PRELOAD="$HOOKS" "$PROBE" loop 1 2>&1 >/dev/null | grep -o '^tscshim: [a-z ]*:.*from the record;' | cut -c1-40
	done | sort | uniq -c)
	echo "$decisions"
	[ "$(wc -l <<<"$decisions")" -eq 1 ]
	[[ "$decisions" == *" 50 tscshim: passing through: the kernel's"* ]]
	# Unfenced, the same stored costs make the other decision, as every process sees it.
	run env TSCSHIM_SERVE=auto TSCSHIM_FENCE=0 TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_CACHE=off \
		TSCSHIM_VERBOSE=1 LD_PRELOAD="$HOOKS" "$PROBE" loop 1
	[[ "$output" == *"serving from the TSC"*"from the machine-wide record"*"from the record;"* ]]
}


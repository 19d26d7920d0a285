#!/usr/bin/env bats
load helpers

PROBE="$ROOT/build/test/probe_clock"

setup_file() {
	# Every test gets its own cache, so that no run depends on an earlier one.
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
}

stat_served() { # FILE CLOCK -> served count
	sed -n "s/.* $2=\([0-9]*\)\/[0-9]*.*/\1/p" "$1" | tail -1
}

@test "shim: exports only the interposed functions and the query API" {
	run bash -c "nm -D --defined-only '$SHIM' | awk '{print \$3}' | sort | tr '\n' ' '"
	[ "$output" = "__clock_gettime clock_gettime gettimeofday timespec_get tscshim_status tscshim_status_sized tscshim_status_v2 " ]
}

@test "shim: the sized status query returns the version it filled for the caller's size, and writes no further" {
	LD_PRELOAD="$SHIM" run "$ROOT/build/test/probe_status"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "below_version_1=-1 untouched_after=1
version_1=1 untouched_after=1
version_1_and_part_of_2=1 untouched_after=1
version_2=2 untouched_after=1
version_3=3 untouched_after=1
this_header=6 untouched_after=1
a_later_header=6 untouched_after=1
first_name_version_1=1 untouched_after=1
alias=1" ]
}

@test "shim: active where the machine is reliable, with the rate and fenced reads" {
	require_reliable
	LD_PRELOAD="$SHIM" run "$PROBE" status
	[ "$status" -eq 0 ]
	[[ "$output" == *"active=1"* ]]
	[[ "$output" == *"fenced=1"* ]]
	[[ "$output" == *"served=15"* ]]
}

@test "shim: served clocks agree with the kernel's within TSCSHIM_MAX_ERROR_NS" {
	require_reliable
	LD_PRELOAD="$SHIM" run "$PROBE" compare 20000 1000
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "shim: MONOTONIC, RAW and BOOTTIME never step back, 8 threads, frequent resyncs" {
	require_reliable
	TSCSHIM_MAX_ERROR_NS=100 TSCSHIM_STATS="$BATS_TEST_TMPDIR/stats" LD_PRELOAD="$SHIM" \
		run "$PROBE" monotonic 400 8
	echo "$output"; cat "$BATS_TEST_TMPDIR/stats"
	[ "$status" -eq 0 ]
	[[ "$output" == *"violations=0"* ]]
	[ "$(sed -n 's/.*resyncs=\([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/stats")" -gt 10 ]
}

@test "shim: unserved and invalid clocks pass through with the real result and errno" {
	LD_PRELOAD="$SHIM" run "$PROBE" passthrough
	[ "$status" -eq 0 ]
	TSCSHIM_CLOCKS=none LD_PRELOAD="$SHIM" run "$PROBE" passthrough
	[ "$status" -eq 0 ]
}

@test "shim: date is served and agrees with the system date" {
	require_reliable
	stats="$BATS_TEST_TMPDIR/stats"
	with=$(TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" date +%s)
	without=$(date +%s)
	[ $((without - with)) -le 1 ]
	[ $((with - without)) -le 1 ]
	[ "$(stat_served "$stats" realtime)" -ge 1 ]
}

@test "shim: python3 monotonic_ns, perf_counter_ns and time_ns are served and right" {
	require_reliable
	stats="$BATS_TEST_TMPDIR/stats"
	TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" run python3 -c '
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
class TS(ctypes.Structure): _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
def kernel(clock):  # the system call, which no preload reaches
    ts = TS(); libc.syscall(228, clock, ctypes.byref(ts)); return ts.s * 10**9 + ts.ns
worst = 0
for _ in range(2000):
    for clock, fn in ((1, time.monotonic_ns), (1, time.perf_counter_ns), (0, time.time_ns)):
        a = kernel(clock); v = fn(); b = kernel(clock)
        worst = max(worst, a - v, v - b)
print("worst", worst)
assert worst <= 1000, worst
'
	echo "$output"; cat "$stats"
	[ "$status" -eq 0 ]
	[ "$(stat_served "$stats" monotonic)" -ge 4000 ]
	[ "$(stat_served "$stats" realtime)" -ge 2000 ]
}

@test "shim: perl Time::HiRes clock_gettime and time are served" {
	perl -MTime::HiRes -e 1 2>/dev/null || skip "perl with Time::HiRes is not installed (apt-get install perl)"
	require_reliable
	stats="$BATS_TEST_TMPDIR/stats"
	TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" run perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC,time -e '
my $a = clock_gettime(CLOCK_MONOTONIC); my $t = time; my $b = clock_gettime(CLOCK_MONOTONIC);
die "backwards" if $b < $a; print "ok\n";'
	cat "$stats"
	[ "$status" -eq 0 ]
	[ "$(stat_served "$stats" monotonic)" -ge 2 ]
}

@test "shim: a C++ std::chrono::steady_clock program is served" {
	require_reliable
	require_command g++ g++
	src="$BATS_TEST_TMPDIR/steady.cc"
	cat >"$src" <<'CC'
#include <chrono>
#include <cstdio>
int main() {
	auto a = std::chrono::steady_clock::now();
	long n = 0;
	while (std::chrono::steady_clock::now() - a < std::chrono::milliseconds(20)) n++;
	std::printf("%ld\n", n);
	return n > 0 ? 0 : 1;
}
CC
	g++ -O2 "$src" -o "$BATS_TEST_TMPDIR/steady"
	stats="$BATS_TEST_TMPDIR/stats"
	TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" run "$BATS_TEST_TMPDIR/steady"
	cat "$stats"
	[ "$status" -eq 0 ]
	[ "$(stat_served "$stats" monotonic)" -ge 100 ]
}

@test "shim: python Event.wait(0.2) hands a deadline to the kernel and returns on time" {
	start=$EPOCHREALTIME
	LD_PRELOAD="$SHIM" run timeout 10 python3 -c 'import threading; threading.Event().wait(0.2)'
	end=$EPOCHREALTIME
	[ "$status" -eq 0 ]
	python3 -c "e = $end - $start; print(e); assert 0.19 <= e <= 2.0, e"
}

@test "shim: pthread_cond_timedwait on a CLOCK_MONOTONIC condition returns on time" {
	LD_PRELOAD="$SHIM" run timeout 10 "$PROBE" condwait 200
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" -ge 199 ]
	[ "$output" -le 1500 ]
}

@test "shim: TSCSHIM_MAX_SKEW_NS=1 passes through and verbose says why" {
	TSCSHIM_MAX_SKEW_NS=1 TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"tscshim: passing through"* ]]
	[[ "$output" == *"exceeds TSCSHIM_MAX_SKEW_NS=1"* ]] || [[ "$output" == *"passing through"* ]]
	[[ "$output" == *"active=0"* ]]
}

@test "shim: TSCSHIM_DISABLE=1 passes everything through" {
	TSCSHIM_DISABLE=1 LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"active=0"* ]]
	[[ "$output" == *"reason=TSCSHIM_DISABLE=1"* ]]
	TSCSHIM_DISABLE=1 LD_PRELOAD="$SHIM" run "$PROBE" passthrough
	[ "$status" -eq 0 ]
}

@test "shim: every variable's invalid value gives one line and an unchanged program result" {
	expected=$(date +%Y)
	for var in $("$TSCSHIM" options | awk '/^TSCSHIM_/{print $1}'); do
		# Paths: empty is valid, a relative path is not.
		bads=("" "-1" "12abc" "99999999999999999999999")
		case $var in TSCSHIM_CACHE | TSCSHIM_STATS | TSCSHIM_SYSTEM_RECORD) bads=("-1" "12abc" "a/b") ;; esac
		for bad in "${bads[@]}"; do
			out=$(env "$var=$bad" LD_PRELOAD="$SHIM" date +%Y 2>"$BATS_TEST_TMPDIR/err")
			status=$?
			[ "$status" -eq 0 ] && [ "$out" = "$expected" ] || { echo "$var='$bad' changed the result"; false; }
			[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -eq 1 ] || { echo "$var='$bad':"; cat "$BATS_TEST_TMPDIR/err"; false; }
			grep -q "$var" "$BATS_TEST_TMPDIR/err"
		done
	done
	# an invalid value passes every call through
	TSCSHIM_PROBES=abc LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"active=0"* ]]
}

@test "shim: the second process takes the verdict from the cache" {
	require_reliable
	cache="$BATS_TEST_TMPDIR/c"
	TSCSHIM_CACHE="$cache" LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"from_cache=0"* ]]
	[ -f "$cache" ]
	TSCSHIM_CACHE="$cache" LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"from_cache=1"* ]]
	[[ "$output" == *"active=1"* ]]
}

@test "tscshim run preloads the shim and keeps an existing LD_PRELOAD" {
	run env LD_PRELOAD=libm.so.6 "$TSCSHIM" run -- sh -c 'echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ]
	[ "$output" = "libm.so.6:$SHIM" ]
	run "$TSCSHIM" run -- "$PROBE" status
	[[ "$output" == *"loaded=1"* ]]
	run "$TSCSHIM" run
	[ "$status" -eq 2 ]
}

@test "shim: a library whose constructor reads the clock, preloaded before and after the shim" {
	early="$ROOT/build/test/libearly.so"
	for order in "$early:$SHIM" "$SHIM:$early"; do
		LD_PRELOAD="$order" run "$PROBE" compare 200 1000
		echo "$order: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"early ok"* ]]
	done
}

@test "shim: a malloc wrapper that reads the clock neither deadlocks nor breaks the clock" {
	wrapper="$ROOT/build/test/libmalloc_clock.so"
	for order in "$wrapper:$SHIM" "$SHIM:$wrapper"; do
		LD_PRELOAD="$order" run timeout 20 "$PROBE" compare 200 1000
		echo "$order: $output"
		[ "$status" -eq 0 ]
	done
	LD_PRELOAD="$wrapper:$SHIM" run timeout 20 python3 -c 'import time; print(time.monotonic_ns() > 0)'
	[ "$status" -eq 0 ]
	[ "$output" = "True" ]
}

@test "shim: a corrupt cache is reported, ignored and rebuilt" {
	require_reliable
	cache="$BATS_TEST_TMPDIR/c"
	printf 'tscshim-cache 9\ngarbage\n' >"$cache"
	chmod 600 "$cache"
	TSCSHIM_CACHE="$cache" TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"active=1"* ]]
	[[ "$output" == *"from_cache=0"* ]]
	[[ "$output" == *"$cache"* ]]
	TSCSHIM_CACHE="$cache" LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"from_cache=1"* ]]
}

@test "shim: a cache writable by others or behind a symlink is never trusted" {
	require_reliable
	cache="$BATS_TEST_TMPDIR/c"
	TSCSHIM_CACHE="$cache" LD_PRELOAD="$SHIM" "$PROBE" status >/dev/null
	chmod 666 "$cache"
	TSCSHIM_CACHE="$cache" LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"from_cache=0"* ]]
	ln -s "$cache" "$BATS_TEST_TMPDIR/link"
	chmod 600 "$cache"
	TSCSHIM_CACHE="$BATS_TEST_TMPDIR/link" LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"from_cache=0"* ]]
	[[ "$output" == *"active=1"* ]]
}

@test "shim: fork from a threaded parent, children read the clock at once" {
	require_reliable
	LD_PRELOAD="$SHIM" run timeout 20 python3 -c '
import os, threading, time
stop = False
def spin():
    while not stop: time.monotonic_ns()
ts = [threading.Thread(target=spin) for _ in range(3)]
for t in ts: t.start()
pids = []
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        last = 0
        for _ in range(20000):
            v = time.monotonic_ns()
            if v < last: os._exit(1)
            last = v
        os._exit(0)
    pids.append(pid)
bad = sum(os.waitpid(p, 0)[1] != 0 for p in pids)
stop = True
for t in ts: t.join()
print("bad", bad); assert bad == 0'
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "shim: unfenced mode (TSCSHIM_FENCE=0) is served, agrees with the kernel and keeps per-thread order" {
	require_reliable
	TSCSHIM_FENCE=0 LD_PRELOAD="$SHIM" run "$PROBE" status
	[[ "$output" == *"active=1"* ]]
	[[ "$output" == *"fenced=0"* ]]
	TSCSHIM_FENCE=0 LD_PRELOAD="$SHIM" run "$PROBE" compare 5000 1000
	echo "$output"
	[ "$status" -eq 0 ]
	TSCSHIM_FENCE=0 TSCSHIM_MAX_ERROR_NS=100 LD_PRELOAD="$SHIM" run "$PROBE" monotonic 300 4
	echo "$output"
	[[ "$output" == *"violations=0"* ]]
}

@test "shim: TSCSHIM_CLOCKS narrows the served clocks" {
	require_reliable
	stats="$BATS_TEST_TMPDIR/stats"
	TSCSHIM_CLOCKS=monotonic TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" run "$PROBE" compare 100 1000
	[ "$status" -eq 0 ]
	cat "$stats"
	[ "$(stat_served "$stats" monotonic)" -ge 100 ]
	[ "$(stat_served "$stats" realtime)" -eq 0 ]
	[ "$(stat_served "$stats" boottime)" -eq 0 ]
}

@test "shim: a library loaded with dlopen reads the served clock, in its constructor too" {
	require_reliable
	stats="$BATS_TEST_TMPDIR/stats"
	TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" run "$PROBE" dlopen "$ROOT/build/test/libearly.so"
	echo "$output"; cat "$stats"
	[ "$status" -eq 0 ]
	[[ "$output" == *"early ok"* ]]
	[[ "$output" == *"dlopen read ok"* ]]
	[ "$(stat_served "$stats" monotonic)" -ge 2 ]
}

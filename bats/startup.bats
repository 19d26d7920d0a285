#!/usr/bin/env bats
# Start-up: the machine-wide record, a cache for several CPU sets, remembered inconclusive
# estimates, and cold starts that stay harmless on small stacks, under seccomp filters and
# beside real-time hogs. Timings are not asserted (the machine is shared): the figures are
# in doc/evidence/EVIDENCE-STARTUP.md.
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_clock"
THREADS="$ROOT/build/test/probe_threads"
SECCOMP="$ROOT/build/test/probe_seccomp"

setup() {
	# A directory nobody else may write, readable by everyone (like /run), for the
	# machine-wide record; and one for the unprivileged user's own files.
	shared=$(mktemp -d /tmp/tscshim-startup.XXXXXX)
	chmod 755 "$shared"
	record="$shared/run/calibration"
}

teardown() {
	[ -z "${hog:-}" ] || kill "$hog" 2>/dev/null || true
	rm -rf "$shared"
}

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }


@test "startup: stack use, our frames by gcc's call graph (4 KiB) and libc's too by a run (1 KiB more than without the shim)" {
	run python3 "$ROOT/test/stack-usage.py" 4096
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"shim_load (caller's stack, static): "* && "$output" == *"clock_gettime (caller's stack, static): "* ]]
	[[ "$output" == *"measured, the caller's stack: the due read in a handler used "* ]]
	[[ "$output" == *"measured, a decision at a read (from the cache, TSCSHIM_VERBOSE=2), on the claim's page: "* ]]
}

@test "startup: with a 16 KiB stack every start path completes (cold, warm, refused, inconclusive, invalid)" {
	cache="$shared/c"
	for extra in TSCSHIM_CACHE=off "TSCSHIM_CACHE=$cache" "TSCSHIM_CACHE=$cache" TSCSHIM_MAX_SKEW_NS=1 \
		TSCSHIM_ESTIMATE_MIN_LOOPS=1000000 TSCSHIM_PROBES=abc TSCSHIM_DISABLE=1; do
		# A small environment (its strings share the 16 KiB) and no address randomization:
		# ld.so needs most of the 16 KiB to map a preloaded library, and with a random
		# stack top it sometimes runs out before any constructor (an empty library too).
		run env -i PATH="$PATH" setarch -R bash -c 'ulimit -s 16 && exec env TSCSHIM_VERBOSE=2 "$@"' _ "$extra" \
			TSCSHIM_SYSTEM_RECORD=off LD_PRELOAD="$SHIM" "$THREADS"
		echo "$extra: status $status: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"single_threaded=1 threads=1"* ]]
	done
}

@test "startup: a cold start leaves no thread behind and the host single-threaded" {
	require_reliable
	TSCSHIM_CACHE=off LD_PRELOAD="$SHIM" run "$THREADS"
	echo "$output"
	[[ "$output" == "single_threaded=1 threads=1 active=1 from_cache=0" ]]
}

@test "startup: the machine-wide record, written by root, serves an unprivileged user with no cache of its own" {
	require_reliable
	[ "$(id -u)" -eq 0 ] || skip "needs root to write the record"
	TSCSHIM_SYSTEM_RECORD="$record" run --separate-stderr "$TSCSHIM" calib --save "${QUICK[@]}"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"machine-wide record saved to $record"* ]]
	[ "$(stat -c '%u %F' "$record")" = "0 symbolic link" ]
	[ "$(stat -c '%u %a' "$(dirname "$record")")" = "0 755" ]
	record_text "$record" | grep -q '^tscshim-cache [0-9][0-9]*$'
	record_text "$record" | grep -q "^cpus="

	mine="$shared/nobody"
	mkdir "$mine" && chown nobody "$mine"
	run as_nobody env TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_CACHE="$mine/cache" TSCSHIM_VERBOSE=1 \
		LD_PRELOAD="$SHIM" "$PROBE" status
	echo "$output"
	[[ "$output" == *"from the machine-wide record"* ]]
	[[ "$output" == *"from_cache=1"* ]]
	[[ "$output" == *"active=1"* ]]
	[ ! -e "$mine/cache" ]
	# A subset of the recorded CPUs is served too.
	run as_nobody taskset -c 0 env TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_CACHE="$mine/cache" \
		LD_PRELOAD="$SHIM" "$PROBE" status
	[[ "$output" == *"from_cache=1"* ]]
	[ ! -e "$mine/cache" ]
}

@test "startup: a machine-wide record is not trusted when another user could have written it" {
	# The record is a symbolic link whose target is its text: a link's target cannot be
	# written, only the link replaced, which takes write access to its directory. So the
	# directory is what is trusted: root's, writable by nobody else, not a symlink.
	require_reliable
	[ "$(id -u)" -eq 0 ] || skip "needs root to write the record"
	TSCSHIM_SYSTEM_RECORD="$record" "$TSCSHIM" calib --save "${QUICK[@]}" >/dev/null 2>&1
	status_with() { # the shim's verbose line and status with the record as it is now
		run env TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 \
			LD_PRELOAD="$SHIM" "$PROBE" status
		echo "$output"
	}
	status_with
	[[ "$output" == *"from_cache=1"* ]]
	local dir
	dir=$(dirname "$record")
	chmod 775 "$dir"
	status_with
	[[ "$output" == *"not trusted: its directory writable by group or others"* ]]
	[[ "$output" == *"from_cache=0"* ]]
	chmod 755 "$dir"
	chown nobody "$dir"
	status_with
	[[ "$output" == *"not trusted: its directory owned by uid 65534"* ]]
	[[ "$output" == *"from_cache=0"* ]]
	chown root "$dir"
	# A regular file at the path (anyone's, or an older build's record): not read.
	record_text "$record" >"$shared/text"
	rm "$record" && cp "$shared/text" "$record" && chmod 644 "$record"
	status_with
	[[ "$output" == *"not trusted: not a symbolic link"* ]]
	[[ "$output" == *"from_cache=0"* ]]
	TSCSHIM_SYSTEM_RECORD="$record" "$TSCSHIM" calib --save "${QUICK[@]}" >/dev/null 2>&1
	[ -L "$record" ]
	# Another boot's record answers for nothing.
	edit_cache "$record" boot_id 00000000-0000-0000-0000-000000000000
	status_with
	[[ "$output" == *"from_cache=0"* ]]
}

@test "startup: --save refuses an inconclusive estimate and a record path that is off" {
	TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_ESTIMATE_MIN_LOOPS=1000000 run --separate-stderr \
		"$TSCSHIM" calib --save --budget-us 1000 "${QUICK[@]}"
	echo "$stderr"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"not saved"*"inconclusive"* ]]
	[ ! -e "$record" ]
	TSCSHIM_SYSTEM_RECORD=off run "$TSCSHIM" calib --save
	[ "$status" -eq 2 ]
}

@test "startup: one cache serves several CPU sets; a subset is served by a superset's record" {
	require_reliable
	cache="$shared/c"
	# taskset loads the shim too (all CPUs), then the probe (CPU 0 only): ten runs, one
	# or two measurements, never ten.
	for i in $(seq 10); do
		TSCSHIM_CACHE="$cache" TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" taskset -c 0 "$PROBE" status
	done >"$shared/out" 2>&1
	cat "$shared/out"
	measured=$(grep -c "measured now" "$shared/out")
	[ "$measured" -ge 1 ]
	[ "$measured" -le 2 ]
	[ "$(grep -c 'from_cache=1' "$shared/out")" -ge 9 ]
	# Both sets measured separately are both kept.
	rm -f "$cache"
	TSCSHIM_CACHE="$cache" taskset -c 1 env LD_PRELOAD="$SHIM" "$PROBE" status >/dev/null
	TSCSHIM_CACHE="$cache" LD_PRELOAD="$SHIM" "$PROBE" status >/dev/null
	cat "$cache"
	[ "$(grep -c '^cpus=' "$cache")" -eq 2 ]
	TSCSHIM_CACHE="$cache" taskset -c 1 env LD_PRELOAD="$SHIM" "$PROBE" status | grep -q from_cache=1
}

@test "startup: a cache planted by another user is replaced where the directory allows, else reported" {
	require_reliable
	[ "$(id -u)" -eq 0 ] || skip "needs root to plant a file for another user"
	# Each start measures: a loaded machine can leave the default estimate inconclusive.
	export TSCSHIM_ESTIMATE_BUDGET_US=500000
	# A directory of the user's own: replaced.
	mine="$shared/nobody"
	mkdir "$mine" && chown nobody "$mine"
	printf 'planted\n' >"$mine/cache"
	run as_nobody env TSCSHIM_CACHE="$mine/cache" TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" status
	echo "$output"
	[[ "$output" == *"cache $mine/cache: not trusted: "*"owned by uid"* ]]
	[ "$(stat -c %u "$mine/cache")" -eq 65534 ]
	run as_nobody env TSCSHIM_CACHE="$mine/cache" LD_PRELOAD="$SHIM" "$PROBE" status
	[[ "$output" == *"from_cache=1"* ]]
	# A sticky directory like /tmp: it cannot be replaced, and the verbose line says so.
	sticky="$shared/sticky"
	mkdir "$sticky" && chmod 1777 "$sticky"
	printf 'planted\n' >"$sticky/cache"
	run as_nobody env TSCSHIM_CACHE="$sticky/cache" TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$PROBE" status
	echo "$output"
	[[ "$output" == *"serving from the TSC"*"; cache $sticky/cache: not written: rename: "*"every start measures"* ]]
	[[ "$output" == *"active=1"* ]]
	[ "$(cat "$sticky/cache")" = planted ]
}

@test "startup: an inconclusive estimate is remembered and measured again only after its retry time" {
	cache="$shared/c"
	TSCSHIM_CACHE="$cache" TSCSHIM_ESTIMATE_MIN_LOOPS=1000000 LD_PRELOAD="$SHIM" run "$PROBE" status
	echo "$output"
	[[ "$output" == *"active=0"* ]]
	cat "$cache"
	grep -q '^estimate_verdict=5$' "$cache"
	grep -q '^retry_interval_ms=10000$' "$cache"
	before=$(cat "$cache")
	# Within the retry time: no measurement, even where one would now succeed.
	TSCSHIM_CACHE="$cache" TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" run "$PROBE" status
	echo "$output"
	[[ "$output" == *"estimate inconclusive on an earlier start; measured again in "*" s"* ]]
	[[ "$output" == *"active=0"* ]]
	[ "$(cat "$cache")" = "$before" ]
	# Past it (the record says so): measured again; a second failure waits twice as long.
	edit_cache "$cache" retry_at_ns 1
	TSCSHIM_CACHE="$cache" TSCSHIM_ESTIMATE_MIN_LOOPS=1000000 LD_PRELOAD="$SHIM" run "$PROBE" status
	cat "$cache"
	grep -q '^retry_interval_ms=20000$' "$cache"
	[ "$(grep -c '^cpus=' "$cache")" -eq 1 ]
	edit_cache "$cache" retry_at_ns 1
	require_reliable
	# A generous budget: on a loaded shared machine the default 20 ms can end inconclusive.
	TSCSHIM_CACHE="$cache" TSCSHIM_ESTIMATE_BUDGET_US=500000 LD_PRELOAD="$SHIM" run "$PROBE" status
	echo "$output"
	[[ "$output" == *"active=1 "* || "$output" == *"active=1"* ]]
	grep -q '^estimate_verdict=0$' "$cache"
}

@test "startup: a seccomp filter that refuses sched_setaffinity (EPERM): the host passes through" {
	run "$SECCOMP" eperm env TSCSHIM_CACHE=off LD_PRELOAD="$SHIM" "$THREADS" reason
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"single_threaded=1 threads=1 active=0"* ]]
	[[ "$output" == *"estimate inconclusive"*"Operation not permitted"*"seccomp filter"* ]]
}

@test "startup: a seccomp filter that kills on sched_setaffinity: the host survives and passes through" {
	run "$SECCOMP" kill env TSCSHIM_CACHE=off LD_PRELOAD="$SHIM" "$THREADS" reason
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"single_threaded=1 threads=1 active=0"* ]]
	[[ "$output" == *"the child process ended without an answer"*"seccomp filter"* ]]
	# The kill variant really kills: the same filter around the command's estimator.
	run "$SECCOMP" kill "$TSCSHIM" calib "${QUICK[@]}"
	[ "$status" -eq 159 ] # 128 + SIGSYS
}

@test "startup: a cold start beside a SCHED_FIFO loop on CPU 1 completes within the budget's bound" {
	[ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
	[ "$(id -u)" -eq 0 ] || skip "needs root for SCHED_FIFO"
	# At most 3 s, and real-time throttling (sched_rt_runtime_us) leaves 5% to others.
	timeout 3 chrt -f 50 taskset -c 1 bash -c 'while :; do :; done' &
	hog=$!
	sleep 0.2
	run timeout 20 env TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 LD_PRELOAD="$SHIM" "$THREADS"
	kill "$hog" 2>/dev/null || true
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"decided in "* ]]
	[[ "$output" == *"single_threaded=1 threads=1"* ]]
}

#!/usr/bin/env bats
# The served clocks in front of a hostile kernel clock: the reference double
# (test/lib_refclock.c) preloaded after the shim makes every read the shim takes of the
# kernel's clocks (the decision's, anchors, re-synchronizations, kernel reads) noisy,
# failing, out of order, frozen, stepping or slow, each a mode. The probe
# (test/probe_hostile.c) reads the four served clocks in turn in two threads and checks
# every value against readings of the same misbehaving clock around it: a served value
# lies within the bound of them (once the clock has kept its course for a few
# re-synchronizations), no value is invented or garbage, no failure is invented, and no
# monotonic clock steps back where the reference did not. Short runs here; `make soak`
# runs each mode for longer. Each test also says whether the counter served: a mode the
# shim can hold serves, one it cannot passes through (and says why).
load helpers

REFCLOCK="$ROOT/build/test/librefclock.so"
HOSTILE="$ROOT/build/test/probe_hostile"
# The bound (TSCSHIM_MAX_ERROR_NS, default), and how long a change of course may show:
# two re-synchronization intervals (0.5 ms each at the default bound), with room for a
# loaded machine.
LIMIT=1000
SETTLE_US=5000

PROBE="$ROOT/build/test/probe_clock"

# A consistent record, measured against the kernel's own clock (no double): the tests
# decide from it, so that what they see is the double's doing, not an estimate that a
# loaded machine made inconclusive.
setup_file() {
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
	warm_cache || true
	export TSCSHIM_STATS=stderr
}

# hostile SECONDS [monotonic-reference] -- VARIABLE=VALUE...: the probe under the double.
hostile() {
	local seconds=$1 reference=()
	shift
	[ "$1" = monotonic-reference ] && { reference=(monotonic-reference); shift; }
	[ "$1" = -- ] && shift
	run timeout 60 env LD_PRELOAD="$SHIM $REFCLOCK" "$@" "$HOSTILE" "$seconds" 2 "$LIMIT" "$SETTLE_US" "${reference[@]}"
	echo "$output"
}

status_field() { # NAME: from the probe's status line
	grep '^status:' <<<"$output" | tail -1 | sed -n "s/.* $1=\([0-9,]*\).*/\1/p"
}

field() { # CLOCK NAME: the probe's count for one clock
	sed -n "s/^hostile: clock=$1 \(.* \)\{0,1\}$2=\([0-9]*\).*/\2/p" <<<"$output"
}

# Every clock served by the counter (more than the decision's first reads).
all_served() {
	local c
	for c in monotonic monotonic_raw boottime realtime; do
		[ "$(field "$c" served)" -gt 1000 ] || { echo "$c: not served by the counter"; return 1; }
	done
	[[ "$output" == *"status: loaded=1 active=1 served_clocks=15 "* ]]
}

# Nothing served from the counter past the settling after the decision: every clock passed
# through. (Readings that a loaded machine slowed have wide brackets, which hide noise: a
# first line may then be drawn, and stops within a few re-synchronizations.)
none_served_after_settling() {
	local c
	for c in monotonic monotonic_raw boottime realtime; do
		[ "$(field "$c" checked)" -eq 0 ] || { echo "$c: served by the counter past the settling"; return 1; }
	done
}

@test "hostile: a reference jittered by +/-50 and +/-200 ns: every clock served, within the bound" {
	require_reliable
	for j in 50 200; do
		hostile 2 -- TSCTEST_JITTER_NS=$j
		[ "$status" -eq 0 ]
		all_served
	done
}

# The finding: with noise of a few hundred ns, no try of the offsets' bracket found its
# MONOTONIC reads in order, and REALTIME was served as MONOTONIC (1970) for a
# re-synchronization interval. At +/-500 ns (a quarter of the bound's worth, twice) the
# shim may serve or pass through; whatever it serves is within the bound.
@test "hostile: a reference jittered by +/-500 ns: never 1970, never beyond the bound" {
	require_reliable
	hostile 3 -- TSCTEST_JITTER_NS=500
	[ "$status" -eq 0 ]
}

# Too noisy for the bound: refused at the decision, or stopped within a few
# re-synchronizations of it (one anchor's readings tell +/-1 us from +/-300 ns only about
# half the time); what was served meanwhile is within the settling the probe allows.
@test "hostile: a reference jittered by +/-1 and +/-5 us is too noisy to hold the bound: it passes through" {
	require_reliable
	local SETTLE_US=20000 # a few re-synchronizations, on a loaded machine
	for j in 1000 5000; do
		hostile 1 -- TSCTEST_JITTER_NS=$j TSCSHIM_VERBOSE=1
		[ "$status" -eq 0 ]
		[[ "$output" == *"too noisy"* ]]
		[[ "$output" == *"status: loaded=1 active=0 "* ]]
	done
	hostile 1 -- TSCTEST_JITTER_NS=5000
	none_served_after_settling
}

@test "hostile: a reference that turns noisy after the decision: each clock stops, said in the status" {
	require_reliable
	local SETTLE_US=20000 # a few re-synchronizations, on a loaded machine
	hostile 2 -- TSCTEST_JITTER_NS=5000 TSCTEST_AFTER_MS=300 TSCSHIM_VERBOSE=1
	[ "$status" -eq 0 ]
	[ "$(field monotonic served)" -gt 1000 ]
	[[ "$output" == *"status: loaded=1 active=0 "*"stopped_clocks=15 "*"reason=stopped serving: the kernel's clock is too noisy"* ]]
	[[ "$output" == *"stopped serving monotonic: the kernel's clock is too noisy"* ]]
}

# The finding: a REALTIME call that failed left its timespec as it was, and that became
# time; a failing MONOTONIC or BOOTTIME call did the same to every clock.
@test "hostile: calls that fail one in 10, one in 2 (each clock, then all): no garbage, no invented failure" {
	require_reliable
	for clocks in realtime monotonic boottime monotonic_raw; do
		hostile 1 monotonic-reference -- TSCTEST_FAIL_ONE_IN=10 TSCTEST_CLOCKS=$clocks
		[ "$status" -eq 0 ]
		all_served
	done
	hostile 2 monotonic-reference -- TSCTEST_FAIL_ONE_IN=2
	[ "$status" -eq 0 ]
	[ "$(field monotonic served)" -gt 1000 ]
}

@test "hostile: calls that fail one in 10,000: every clock served" {
	require_reliable
	hostile 2 monotonic-reference -- TSCTEST_FAIL_ONE_IN=10000
	[ "$status" -eq 0 ]
	all_served
}

# A kernel clock that always fails: nothing served for it, its failure returned as the
# kernel returned it (-1, EINVAL), the others served.
@test "hostile: a REALTIME that always fails is never served; its error reaches the caller as it was" {
	require_reliable
	hostile 1 monotonic-reference -- TSCTEST_FAIL_ONE_IN=1 TSCTEST_CLOCKS=realtime TSCSHIM_VERBOSE=1
	[ "$status" -eq 0 ]
	[ "$(field realtime served)" -eq 0 ]
	[ "$(field realtime failed)" -eq "$(field realtime reads)" ]
	[ "$(field monotonic served)" -gt 1000 ]
	[[ "$output" == *"not serving realtime: the kernel's clock gave no good reading"* ]]
	[[ "$output" == *"served_clocks=7 "* ]]
}

# Rarely (README's known limit of out-of-order readings) a value just beyond the bound:
# nothing beyond twice it, at most 0.01 % beyond it, never back.
@test "hostile: readings out of order (one in 50 is 20 us old): the median holds, within twice the bound" {
	require_reliable
	hostile 2 -- TSCTEST_BACK_ONE_IN=50 TSCTEST_BACK_NS=20000 TSCTEST_PROBE_READS=4
	[ "$status" -le 1 ]
	within_twice_the_bound 10000
	[ "$(field monotonic served)" -gt 1000 ]
}

# Frozen for 5 ms every 100 ms: the counter, ahead of a kernel that stands still, stops;
# its clocks hold at what they served until the kernel passes it: never back.
@test "hostile: a reference frozen 5 ms at a time: stopped, held, never back" {
	require_reliable
	hostile 1 monotonic-reference -- TSCTEST_FREEZE_EVERY_MS=100 TSCTEST_FREEZE_MS=5
	[ "$status" -eq 0 ]
	[[ "$output" == *"reason=stopped serving: the kernel's clock fell behind the counter"* ]]
}

# Frozen 1 ms every 100 ms: BOOTTIME stops at each freeze, held, and serves again once its
# kernel clock has caught up and read well after a back-off; the others serve on.
@test "hostile: BOOTTIME frozen now and then: it stops and serves again, the others serve on" {
	require_reliable
	hostile 1 monotonic-reference -- TSCTEST_FREEZE_EVERY_MS=100 TSCTEST_FREEZE_MS=1 TSCTEST_CLOCKS=boottime
	[ "$status" -eq 0 ]
	[ "$(field monotonic served)" -gt 1000 ]
	[ "$(field realtime served)" -gt 1000 ]
	[ "$(status_field stops)" -gt 0 ]
	[ "$(status_field resumes)" -gt 0 ]
	[[ "$output" == *"status: loaded=1 active=1 "* ]]
}

# MONOTONIC_RAW frozen, its fault confirmed by a second anchor that comes past the line's
# hard end (the writer paused once it has its first, as a preempted one may be; make soak
# met it once in 20 s): the clock is below the lapsed line's end by all the line ran on,
# not below its own last reading. Held at what it served, never passed through below it
# (it was: 6-10 values a run, up to 1 ms below).
@test "hostile: MONOTONIC_RAW frozen, its fault confirmed past a line's end: held, never back" {
	require_reliable
	SHIM=$HOOKS hostile 2 monotonic-reference -- TSCTEST_FREEZE_EVERY_MS=300 TSCTEST_FREEZE_MS=50 \
		TSCTEST_CLOCKS=monotonic_raw TSCTEST_PAUSE_WRITERS_US=100
	[ "$status" -eq 0 ]
	[ "$(field monotonic_raw backwards)" -eq 0 ]
	[ "$(status_field stops)" -gt 0 ]
	[ "$(status_field held_reads)" -gt 0 ]
}

# MONOTONIC_RAW slowed by a fifth on its own (no kernel does that: its RAW moves with
# MONOTONIC, within NTP's slew) while every writer is late, so that lines lapse and readers
# past their ends are handed every clock carried on from MONOTONIC's kernel reading. RAW's
# kernel fell ever further below what was handed out for it: no plan could come up to
# that, every publication was dropped, and RAW ran off without bound (2 to 137 ms in 1 s).
# It stops, held at what was handed out, and the line publishes on; what RAW was served
# before is as far off as the lapses carried it (0.3-0.7 ms here), well inside the limit.
@test "hostile: MONOTONIC_RAW slowed by a fifth alone, every writer late: it stops, the rest publish on" {
	require_reliable
	SHIM=$HOOKS LIMIT=2000000 SETTLE_US=0 hostile 0.7 monotonic-reference -- TSCTEST_RATE_PPM=-200000 \
		TSCTEST_AFTER_MS=300 TSCTEST_CLOCKS=monotonic_raw TSCTEST_PAUSE_WRITERS_US=1000 TSCTEST_PAUSE_EVERY_WRITER=1
	[ "$status" -eq 0 ]
	[[ "$output" == *" stopped_clocks=2 causes=0,3,0,0 "* ]]
	[ "$(field monotonic_raw backwards)" -eq 0 ]
}

# A held read (MONOTONIC_RAW slowed by a fifth: stopped, held until its kernel catches up)
# preempted between its kernel reading and its look at the other held reads' kernel
# values: they were read after its own, and it took its kernel for one that went back
# itself and passed that reading through, below what it had held (1-122 values a run,
# 70-114 us below). The hooks build pauses the first thread 20 us there.
@test "hostile: a held read preempted after its kernel reading never passes below what it held" {
	require_reliable
	SHIM=$HOOKS LIMIT=2000000 SETTLE_US=0 hostile 0.7 monotonic-reference -- TSCTEST_RATE_PPM=-200000 \
		TSCTEST_AFTER_MS=300 TSCTEST_CLOCKS=monotonic_raw TSCTEST_PAUSE_HELD_US=20
	[ "$status" -eq 0 ]
	[ "$(field monotonic_raw backwards)" -eq 0 ]
	[ "$(status_field held_reads)" -gt 0 ]
}

# A reading 2 us out of order (one in 1,000) while a clock is held far above a frozen
# kernel (a freeze of 5 ms every 100 ms): the kernel went back by 2 us, and the held read
# took that for a step back of its own and passed it through, dropping the clock by all
# the line had run ahead: 500-640 us. Held now; no value goes back further than the
# double's own readings do.
@test "hostile: a reading out of order while a clock is held never drops it by the hold's lead" {
	require_reliable
	LIMIT=1000000 SETTLE_US=0 hostile 0.6 -- TSCTEST_FREEZE_EVERY_MS=100 TSCTEST_FREEZE_MS=5 \
		TSCTEST_BACK_ONE_IN=1000 TSCTEST_BACK_NS=2000 TSCTEST_PROBE_BACK_MOST_NS=2000
	[ "$status" -eq 0 ]
	[ "$(status_field held_reads)" -gt 0 ]
	local c
	for c in monotonic monotonic_raw boottime; do [ "$(field $c backwards)" -eq 0 ]; done
}

@test "hostile: the reference steps 20 us forward every 100 ms: followed at once, never back" {
	require_reliable
	hostile 1 monotonic-reference -- TSCTEST_STEP_EVERY_MS=100 TSCTEST_STEP_NS=20000
	[ "$status" -eq 0 ]
	all_served
	[ "$(sed -n 's/.* reanchors=\([0-9]*\).*/\1/p' <<<"$output" | head -1)" -gt 0 ]
}

# 20 us back, what a change of rate in one interval could explain: held (the line slews
# down to the kernel), never back; the other clocks, which did not move, keep their rate.
@test "hostile: MONOTONIC steps 20 us back: held, never back, the others unmoved" {
	require_reliable
	hostile 1 -- TSCTEST_STEP_EVERY_MS=100 TSCTEST_STEP_NS=-20000 TSCTEST_CLOCKS=monotonic
	[ "$status" -eq 0 ]
	[ "$(field monotonic backwards)" -eq 0 ]
	[ "$(field boottime served)" -gt 1000 ]
	[ "$(field realtime served)" -gt 1000 ]
}

# 2 ms back, below the kernel's own last reading: no change of rate explains it. The line
# stops as behind and passes the kernel's own step back through.
@test "hostile: MONOTONIC steps 2 ms back: stopped as behind, the kernel's step passed through" {
	require_reliable
	hostile 1 -- TSCTEST_STEP_EVERY_MS=100 TSCTEST_STEP_NS=-2000000 TSCTEST_CLOCKS=monotonic TSCSHIM_VERBOSE=1
	[ "$status" -eq 0 ]
	[[ "$output" == *"stopped serving monotonic: the kernel's clock fell behind the counter"* ]]
	[ "$(status_field stops)" -gt 0 ]
}

@test "hostile: REALTIME steps 50 us back every 100 ms: followed at once" {
	require_reliable
	hostile 1 -- TSCTEST_STEP_EVERY_MS=100 TSCTEST_STEP_NS=-50000 TSCTEST_CLOCKS=realtime
	[ "$status" -eq 0 ]
	all_served
}

@test "hostile: slow reads (one in 20 takes 20 us, before or after the kernel's reading)" {
	require_reliable
	hostile 1 monotonic-reference -- TSCTEST_SLOW_ONE_IN=20 TSCTEST_SLOW_NS=20000
	[ "$status" -eq 0 ]
	all_served
}

# The same reference as a system call on every read (a host without a vDSO clock), with
# failures: the slow path's kernel reads and a fork child's first line go through it too.
@test "hostile: a system-call reference that fails one in 10" {
	require_reliable
	hostile 1 monotonic-reference -- TSCTEST_SYSCALL=1 TSCTEST_FAIL_ONE_IN=10
	[ "$status" -eq 0 ]
	all_served
}

# The kernel's clock changes rate against the counter 300 ms after load (a guest migrated
# to a host whose TSC runs at another rate, a hard slew), faster and slower, from 100 ppm
# to 4.8 %: every value, from the change on, within the bound plus what one interval at
# the new rate adds (a life and two overlaps, 625 us at the default bound; twice that
# where the machine delays a re-synchronization), never back, and served on at the new
# rate without stopping. A change of a few bounds an interval (to about 1.4 %) is
# confirmed by a second interval before it is adopted: no further off, one interval
# longer.
@test "hostile: a rate that changes by 100 ppm to 4.8 %, faster and slower: followed, never back" {
	require_reliable
	local ppm limit
	for ppm in 100 -100 2000 -2000 10000 -10000 48000 -48000; do
		limit=$((1000 + ${ppm#-} * 1250 / 1000))
		LIMIT=$limit SETTLE_US=0 hostile 0.8 monotonic-reference -- TSCTEST_RATE_PPM=$ppm TSCTEST_AFTER_MS=300
		[ "$status" -eq 0 ]
		all_served
		[ "$(status_field stops)" -eq 0 ]
	done
}

# The same change where every writer is late past its line's hard end (the hooks build
# pauses each 100 us once it has its anchor), so that every line lapses: no error is
# measured over a lapsed line, and the new rate was never taken in, each segment served
# at the old one, 27 us off at 4.8 % (5.5 us at 1 %) for as long as it ran. Measured from
# the kernel's readings over each lapse and confirmed by the next, it is adopted: from
# 150 ms after the change, within twice the bound.
@test "hostile: a rate that changes while every line lapses is adopted all the same" {
	require_reliable
	local ppm
	for ppm in 48000 -10000; do
		SHIM=$HOOKS LIMIT=2000 SETTLE_US=150000 hostile 0.7 monotonic-reference -- TSCTEST_RATE_PPM=$ppm \
			TSCTEST_AFTER_MS=200 TSCTEST_PAUSE_WRITERS_US=100 TSCTEST_PAUSE_EVERY_WRITER=1
		[ "$status" -eq 0 ]
		[ "$(field monotonic checked)" -gt 1000 ]
		[ "$(status_field stops)" -eq 0 ]
	done
}

# A rate that changes every 3 ms (+/-2 %, several intervals each): each change followed
# (or, where a loaded machine delays the re-synchronizations, the line stops while it
# wobbles), never beyond its envelope and never back; and with the wobble inside what one
# interval holds (+/-1000 ppm every 5 ms), served throughout. (One that changes every
# 2 ms stops, below.) Each flip changes the rate by 4 %: the envelope is the bound plus
# 4 % of an interval (625 us), 26 us, and a quarter of an interval more where the machine
# delays a re-synchronization (at exactly 26 us, 2 values of 300,000 came 0.2-0.3 us over
# in about one run in 8: other tests on the same two CPUs). The small wobble's flips change
# the rate by 2,000 ppm: 2.25 us, and the same quarter more (at exactly 2.25 us, 2 values of
# 1.1 M came 3-5 ns over once under make test, Intel Xeon).
@test "hostile: a wobbling rate is followed change by change; a small wobble is served" {
	require_reliable
	LIMIT=$((1000 + 40000 * 625 * 5 / 4 / 1000)) SETTLE_US=0 hostile 1 monotonic-reference -- \
		TSCTEST_RATE_PPM=20000 TSCTEST_WOBBLE_MS=3 TSCTEST_AFTER_MS=200
	[ "$status" -eq 0 ]
	[ "$(field monotonic served)" -gt 1000 ]
	LIMIT=$((1000 + 2000 * 625 * 5 / 4 / 1000)) SETTLE_US=0 hostile 1 monotonic-reference -- \
		TSCTEST_RATE_PPM=1000 TSCTEST_WOBBLE_MS=5 TSCTEST_AFTER_MS=200
	[ "$status" -eq 0 ]
	all_served
}

# Stopped by a rate that kept changing for 100 ms (+/-4.8 % every 2 ms, faster than the
# re-synchronizations settle: it passes through while it does), then steady at +4.8 %:
# serves again at that rate (a migrated guest does not pay the kernel's price for life).
# Each flip changes the rate by 9.6 %: the envelope is the bound plus 9.6 % of an
# interval (625 us) and three eighths more: a quarter where a re-synchronization is late,
# an eighth where a flip comes while the line slews away the lead of a rate that changed
# an interval before (a flip, or the rate a try measured across flips: test_segment's
# wobble with tries, 66 of 3,000 up to 62.2 us, none past 68.5). At 61 us, one run in 50
# to 70 failed, 61-65 us (and 77 us where a reading out of order let MONOTONIC slew on at
# its old rate: mended, test_segment a_blind_anchor_does_not_stretch_what_a_rate_explains).
@test "hostile: a clock stopped by a changing rate serves again once the rate is steady" {
	require_reliable
	SETTLE_US=0 LIMIT=$((1000 + 96000 * 625 * 11 / 8 / 1000)) hostile 1.5 monotonic-reference -- \
		TSCTEST_RATE_PPM=48000 TSCTEST_WOBBLE_MS=2 TSCTEST_WOBBLE_FOR_MS=100 TSCTEST_AFTER_MS=200 TSCSHIM_VERBOSE=1
	[ "$status" -eq 0 ]
	[ "$(status_field stops)" -gt 0 ]
	[ "$(status_field resumes)" -gt 0 ]
	[[ "$output" == *"serving monotonic again"* ]]
}

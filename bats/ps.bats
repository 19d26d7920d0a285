#!/usr/bin/env bats
# tscshim ps: real processes in each state (serving, passing through, undecided, held
# mid-decision, a fork child, some clocks or the whole line stopped since, another
# version, no shim, exiting while being read), read
# from outside; its three outputs; the shim found wherever it was loaded from (installed,
# stripped, deleted since); and as an unprivileged user. And what a hostile neighbour
# stages: a file system that never answers, names that are not text, a file of the shim's
# name that is no ELF object, maps of tens of megabytes, thread ids; and a reader that
# cannot take the output. The machine is shared: other
# processes may have the shim loaded, so each test names its own (-p) or picks them out.
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_clock"
PROBE_PS="$ROOT/build/test/probe_ps"
EXIT_LIB="$ROOT/build/test/libps_exit.so"
LAYOUT_LIB="$ROOT/build/test/libstate_layout.so"
FLOOR="$ROOT/build/libtscshim-floor.so"
FUSE_HANG="$ROOT/build/test/probe_fuse_hang"
HOLD_LIB="$ROOT/build/test/libloading_hold.so"
REFCLOCK="$ROOT/build/test/librefclock.so"

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
	started_pids=()
	probes=0
	as=()
}

teardown() {
	local pid
	for pid in "${started_pids[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
	[ -z "${fuse_server:-}" ] || stop_fuse_hang
	wait 2>/dev/null || true
}

# Starts probe_ps in the background (ENV... then -- and its arguments; as the command in
# $as, if set, runs it: another user) and waits for the line it says when it is in its
# state (through a fifo: no timing); $started is its pid, $said the line.
start() { # ENV=VALUE... -- ARGS...
	local env=()
	while [ "$1" != -- ]; do
		env+=("$1")
		shift
	done
	shift
	local fifo="$BATS_TEST_TMPDIR/ready.$((++probes))"
	mkfifo "$fifo"
	# fd 3 closed: bats waits for whatever holds it open.
	"${as[@]}" env "${env[@]}" "$PROBE_PS" "$@" >"$fifo" 3>&- &
	started=$!
	started_pids+=("$started")
	read -r said <"$fifo" || true
	[[ "$said" == ready* ]] || { echo "probe_ps $* did not get ready: '$said'"; return 1; }
}

# The line of the table for PID.
line_of() { # PID
	grep -E "^ *$1 " <<<"$output"
}

# The build-id of an ELF file, as readelf shows it.
build_id_of() { # FILE
	readelf -n "$1" | sed -n 's/.*Build ID: *//p'
}

# A serving reader (counting its calls), one passing through and one undecided.
start_three() {
	require_reliable
	warm_cache
	start LD_PRELOAD="$SHIM" TSCSHIM_STATS="$BATS_TEST_TMPDIR/stats.%p" -- reads 2000
	serving=$started
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 -- reads 5
	passing=$started
	start LD_PRELOAD="$SHIM" TSCSHIM_DECIDE_AFTER=1000 -- reads 640
	undecided=$started
}

@test "ps: a serving reader, one passing through, one undecided: a line each, and the summary" {
	start_three
	run --separate-stderr "$TSCSHIM" ps -p "$serving,$passing,$undecided"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "$(head -1 <<<"$output")" == "    PID USER       COMMAND          SOURCE   DECIDED "*" STATE" ]]
	[[ "$(line_of "$serving")" =~ ^\ *$serving\ root\ +probe_ps\ +cache\ +at\ read\ 1\ +[0-9.]+\ [um]s\ +[0-9]+\ +0\ +2000\ \ serving,\ fenced:\ monotonic,monotonic_raw,boottime,realtime$ ]]
	[[ "$(line_of "$passing")" =~ ^\ *$passing\ root\ +probe_ps\ +-\ +at\ read\ 1\ .*\ passing\ through:\ disabled$ ]]
	[[ "$(line_of "$undecided")" =~ ^\ *$undecided\ root\ +probe_ps\ +-\ +-\ +-\ +-\ +-\ +-\ \ undecided,\ 640\ reads$ ]]
	[ "$(tail -1 <<<"$output")" = "3 processes with the shim loaded: 1 serving, 1 passing through (disabled 1), 1 undecided" ]
	# Without -p, every process of the machine: ours among them.
	run "$TSCSHIM" ps
	[ "$status" -eq 0 ]
	line_of "$serving" | grep -q 'serving, fenced'
	line_of "$undecided" | grep -q 'undecided, 640 reads'
	[[ "$(tail -1 <<<"$output")" =~ ^[0-9]+\ process(es)?\ with\ the\ shim\ loaded:\  ]]
}

@test "ps --json: one document, each process's fields and the summary" {
	require_command jq jq
	start_three
	run --separate-stderr "$TSCSHIM" ps --json -p "$serving,$passing,$undecided"
	echo "$output"
	[ "$status" -eq 0 ]
	jq -e . <<<"$output" >/dev/null
	q() { jq -r --argjson pid "$1" ".processes[] | select(.pid == \$pid) | $2" <<<"$output"; }
	[ "$(q "$serving" .state)" = serving ]
	[ "$(q "$serving" '[.fenced, (.clocks | join(",")), .source, .decided.at, .decided.read] | join(" ")')" = \
		"true monotonic,monotonic_raw,boottime,realtime user_cache read 1" ]
	[ "$(q "$serving" '.served_reads')" -eq 2000 ]
	[ "$(q "$serving" '.calls')" -eq 2000 ]
	[ "$(q "$serving" '.decided.cost_ns')" -gt 0 ]
	[[ "$(q "$serving" .reason)" == "invariant TSC, monotonic, same rate"* ]]
	[ "$(q "$serving" .library)" = "$SHIM" ]
	[ "$(q "$serving" .build_id)" = "$(build_id_of "$SHIM")" ]
	[ "$(q "$passing" '[.state, .reason_key, .reason, .source] | join(" ")')" = \
		"passing_through disabled TSCSHIM_DISABLE=1 none" ]
	[ "$(q "$passing" .served_reads)" = null ]
	[ "$(q "$undecided" '[.state, .reads_before_decision] | join(" ")')" = "undecided 640" ]
	[ "$(q "$undecided" 'has("decided")')" = false ]
	[ "$(jq -c .summary <<<"$output")" = '{"processes":3,"serving":1,"passing_through":1,"undecided":1,"other_version":0,"unreadable":0,"skipped":0,"passing_through_by_reason":{"disabled":1},"unreadable_by_why":{},"resyncs":'"$(q "$serving" .resyncs)"',"fallbacks":0,"resumes":0,"disruptions":0,"counting":1,"served_reads":2000,"counts_left_out":0}' ]
	# The reason as the shim gave it, a number, and its key from that number.
	[ "$(q "$passing" '[.reason_code, .reason_key] | join(" ")')" = "2 disabled" ]
	[ "$(q "$serving" .reason_code)" = 1 ]
	[ "$(jq -r .exited_while_read <<<"$output")" -eq 0 ]
}

# The text exposition format (version 0.0.4), checked line by line: HELP and TYPE once a
# family, before its samples; each family's samples together; names, labels, values.
check_exposition() {
	python3 -c '
import re, sys
text = sys.stdin.read()
assert text.endswith("\n"), "no final newline"
name = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
value = r"([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?Inf|NaN)"
label = r"[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\n]|\\[\\\"n])*\""
sample = re.compile(r"^(%s)(\{(%s(,%s)*)?\})? %s( -?\d+)?$" % (name, label, label, value))
typed, helped, done, series, current = {}, set(), set(), set(), None
for n, line in enumerate(text.splitlines(), 1):
    m = re.match(r"^# (HELP|TYPE) (%s) (.*)$" % name, line)
    if m:
        kind, fam, rest = m.groups()
        assert fam not in done, f"line {n}: family {fam} after its samples"
        if kind == "TYPE":
            assert fam not in typed and rest in ("counter", "gauge", "histogram", "summary", "untyped"), f"line {n}"
            typed[fam] = rest
        else:
            assert fam not in helped, f"line {n}: a second HELP"
            helped.add(fam)
        continue
    assert not line.startswith("#") or line.startswith("# "), f"line {n}"
    if line.startswith("#") or not line:
        continue
    m = sample.match(line)
    assert m, f"line {n}: not a sample: {line}"
    fam = m.group(1)
    assert fam in typed and fam in helped, f"line {n}: {fam} without HELP and TYPE first"
    if fam != current:
        assert fam not in done, f"line {n}: {fam} split"
        if current:
            done.add(current)
        current = fam
    key = line.rsplit(" ", 1)[0]
    assert key not in series, f"line {n}: {key} twice"
    series.add(key)
print("ok", len(series), "series")
'
}

@test "ps --prometheus: the text exposition format node_exporter's textfile collector reads" {
	start_three
	run --separate-stderr "$TSCSHIM" ps --prometheus -p "$serving,$passing,$undecided"
	echo "$output"
	[ "$status" -eq 0 ]
	check_exposition <<<"$output"
	grep -qx 'tscshim_processes{state="serving"} 1' <<<"$output"
	grep -qx 'tscshim_processes{state="passing_through"} 1' <<<"$output"
	grep -qx 'tscshim_processes{state="undecided"} 1' <<<"$output"
	grep -qx 'tscshim_processes{state="other_version"} 0' <<<"$output"
	grep -qx 'tscshim_passing_through_processes{reason="disabled"} 1' <<<"$output"
	grep -qx 'tscshim_served_reads 2000' <<<"$output"
	grep -qx '# TYPE tscshim_processes gauge' <<<"$output"
	# The whole machine's, as a node's textfile would hold it.
	run "$TSCSHIM" ps --prometheus
	[ "$status" -eq 0 ]
	check_exposition <<<"$output"
	# The checker itself refuses what the format does not allow.
	! printf 'tscshim_processes{state="serving"} 1\n' | check_exposition
	! printf '# HELP a x\n# TYPE a gauge\na{b="c} 1\n' | check_exposition
	! printf '# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na 2\n' | check_exposition
}

@test "ps --prometheus: prometheus_client's own parser reads it" {
	/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
		skip "prometheus_client is not installed (apt-get install python3-prometheus-client)"
	start_three
	run "$TSCSHIM" ps --prometheus -p "$serving,$passing,$undecided"
	[ "$status" -eq 0 ]
	run /usr/bin/python3 -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
got = {(s.name, tuple(sorted(s.labels.items()))): s.value
       for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples}
assert got[("tscshim_processes", (("state", "serving"),))] == 1
assert got[("tscshim_passing_through_processes", (("reason", "disabled"),))] == 1
assert got[("tscshim_served_reads", ())] == 2000
print(len(got), "samples")' <<<"$output"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "ps: decided at load (a cold start, measured), at a status query, unfenced; a reliability refusal's key" {
	require_reliable
	start LD_PRELOAD="$SHIM" TSCSHIM_ESTIMATE_BUDGET_US=500000 TSCSHIM_FENCE=0 -- reads 3
	cold=$started
	start LD_PRELOAD="$SHIM" TSCSHIM_DECIDE_AFTER=1000 -- status
	query=$started
	start LD_PRELOAD="$SHIM" TSCSHIM_MAX_SKEW_NS=1 -- reads 3
	refused=$started
	run --separate-stderr "$TSCSHIM" ps -p "$cold,$query,$refused"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$(line_of "$cold")" =~ \ measured\ +at\ load\ .*\ serving,\ unfenced:\ monotonic, ]]
	[[ "$(line_of "$query")" =~ \ cache\ +at\ a\ query\ .*\ serving,\ fenced: ]]
	[[ "$(line_of "$refused")" =~ \ cache\ +at\ read\ 1\ .*\ passing\ through:\ max-shift$ ]]
}

# ps's three outputs for one process, each a success: $metrics (well formed), $json, and
# the table in $output (for line_of).
read_three_ways() { # PID
	run --separate-stderr "$TSCSHIM" ps --prometheus -p "$1"
	echo "$output"
	[ "$status" -eq 0 ] || return 1
	check_exposition <<<"$output" || return 1
	metrics=$output
	run --separate-stderr "$TSCSHIM" ps --json -p "$1"
	echo "$output"
	[ "$status" -eq 0 ] || return 1
	json=$output
	run --separate-stderr "$TSCSHIM" ps -p "$1"
	echo "$output"
	[ "$status" -eq 0 ]
}

# Per-clock stops, staged with the hostile kernel-clock double preloaded after the shim
# (test/lib_refclock.c): what the shim reads as the kernel's clock misbehaves, each probe's
# own way. TSCSHIM_SERVE=always: the double's own cost must not make the benefit gate
# pass through.
@test "ps: a process whose REALTIME stopped serves the rest: serving, realtime stopped (unreadable)" {
	require_reliable
	warm_cache
	# Every REALTIME call fails: its first readings are bad, so REALTIME never serves
	# ("not serving realtime" with TSCSHIM_VERBOSE=1); the other three do.
	start LD_PRELOAD="$SHIM $REFCLOCK" TSCTEST_FAIL_ONE_IN=1 TSCTEST_CLOCKS=realtime TSCSHIM_SERVE=always \
		TSCSHIM_DECIDE_AFTER=1 -- reads 100
	read_three_ways "$started"
	[[ "$(line_of "$started")" == *"  serving, fenced: monotonic,monotonic_raw,boottime; stopped: realtime (unreadable)" ]]
	[ "$(tail -1 <<<"$output")" = "1 process with the shim loaded: 1 serving, 0 passing through, 0 undecided" ]
	[ "$(jq -c '.processes[0] | [.state, .stopped, (.clocks | join(","))]' <<<"$json")" = \
		'["serving",{"realtime":"unreadable"},"monotonic,monotonic_raw,boottime,realtime"]' ]
	[ "$(jq -r '.processes[0].held_reads' <<<"$json")" -ge 0 ]
	grep -qx 'tscshim_processes{state="serving"} 1' <<<"$metrics"
	grep -qx 'tscshim_stopped_clocks{clock="realtime",cause="unreadable"} 1' <<<"$metrics"
	grep -qx 'tscshim_stopped_clocks{clock="monotonic",cause="unreadable"} 0' <<<"$metrics"
}

@test "ps: a process whose whole line stopped (its kernel clocks froze) passes through: behind" {
	require_reliable
	warm_cache
	# Every clock stands still 5 ms in 50: the counter, ahead of a kernel clock that
	# fell behind it, stops MONOTONIC, and with it the whole line. The probe reads until
	# its status says nothing is served.
	start LD_PRELOAD="$SHIM $REFCLOCK" TSCTEST_FREEZE_EVERY_MS=50 TSCTEST_FREEZE_MS=5 TSCSHIM_SERVE=always \
		TSCSHIM_DECIDE_AFTER=1 -- stopped
	read_three_ways "$started"
	[[ "$(line_of "$started")" == *"  passing through: behind" ]]
	[ "$(tail -1 <<<"$output")" = "1 process with the shim loaded: 0 serving, 1 passing through (behind 1), 0 undecided" ]
	[ "$(jq -c '.processes[0] | [.state, .reason_key, .stopped]' <<<"$json")" = \
		'["passing_through","behind",{"monotonic":"behind","monotonic_raw":"behind","boottime":"behind","realtime":"behind"}]' ]
	grep -qx 'tscshim_passing_through_processes{reason="behind"} 1' <<<"$metrics"
	grep -qx 'tscshim_stopped_clocks{clock="monotonic",cause="behind"} 1' <<<"$metrics"
	grep -qx 'tscshim_stopped_clocks{clock="realtime",cause="behind"} 1' <<<"$metrics"
}

@test "ps: a process held mid-decision is undecided, never a decision half made" {
	require_reliable
	warm_cache
	start LD_PRELOAD="$HOOKS" -- held
	run --separate-stderr "$TSCSHIM" ps --json -p "$started"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.processes[0] | [.state, .library] | join(" ")' <<<"$output")" = "undecided $HOOKS" ]
}

@test "ps: a fork child shows the decision it inherited" {
	require_reliable
	warm_cache
	start LD_PRELOAD="$SHIM" -- fork 10
	parent=$started
	child=${said#ready }
	started_pids+=("$child")
	run --separate-stderr "$TSCSHIM" ps --json -p "$parent,$child"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.processes[] | "\(.pid) \(.state) \(.decided.at) \(.decided.read)"] | join(",")' <<<"$output")" = \
		"$parent serving read 1,$child serving read 1" ]
}

@test "ps: another version (no block, another layout), a library named like the shim that is not, no shim at all" {
	mkdir -p "$BATS_TEST_TMPDIR/old" "$BATS_TEST_TMPDIR/later"
	# A build from before the block: a library of the shim's name without its note.
	cp "$FLOOR" "$BATS_TEST_TMPDIR/old/libtscshim.so"
	cp "$LAYOUT_LIB" "$BATS_TEST_TMPDIR/later/libtscshim.so.1"
	start LD_PRELOAD="$BATS_TEST_TMPDIR/old/libtscshim.so" -- reads 1
	old=$started
	start LD_PRELOAD="$BATS_TEST_TMPDIR/later/libtscshim.so.1" -- reads 1
	later=$started
	start LD_PRELOAD="$FLOOR" -- reads 1
	floor=$started
	start -- reads 1
	plain=$started
	run --separate-stderr "$TSCSHIM" ps -p "$old,$later"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$(line_of "$old")" == *"  loaded, another version (no state block)" ]]
	[[ "$(line_of "$later")" == *"  loaded, another version (state layout 3)" ]]
	[ "$(tail -1 <<<"$output")" = "2 processes with the shim loaded: 0 serving, 0 passing through, 0 undecided, 2 another version" ]
	# Not the shim: not listed, and -p says so (exit 1, one line each).
	run --separate-stderr "$TSCSHIM" ps -p "$floor,$plain"
	echo "$output $stderr"
	[ "$status" -eq 1 ]
	[ "$stderr" = "tscshim ps: process $floor: the shim is not loaded
tscshim ps: process $plain: the shim is not loaded" ]
	[ "$(tail -1 <<<"$output")" = "0 processes with the shim loaded: 0 serving, 0 passing through, 0 undecided" ]
	run "$TSCSHIM" ps
	[ "$status" -eq 0 ]
	[ -z "$(line_of "$floor")" ] && [ -z "$(line_of "$plain")" ]
	[ -n "$(line_of "$old")" ] && [ -n "$(line_of "$later")" ]
	# No such process.
	run --separate-stderr "$TSCSHIM" ps -p 2147483647
	[ "$status" -eq 1 ]
	[ "$stderr" = "tscshim ps: process 2147483647: no such process" ]
}

@test "ps: the shim loaded from elsewhere, stripped as Debian's package is, and deleted since: still read" {
	require_reliable
	warm_cache
	local lib="$BATS_TEST_TMPDIR/usr/lib/libtscshim.so.1"
	mkdir -p "$(dirname "$lib")"
	cp "$SHIM" "$lib"
	# What dh_strip does to a shared library.
	strip --remove-section=.comment --remove-section=.note --strip-unneeded "$lib"
	! readelf -S "$lib" | grep -q '\.symtab'
	start LD_PRELOAD="$lib" -- reads 10
	rm "$lib"
	run --separate-stderr "$TSCSHIM" ps --json -p "$started"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.processes[0] | [.state, .library] | join(" ")' <<<"$output")" = "serving $lib (deleted)" ]
	[ "$(jq -r '.processes[0].build_id' <<<"$output")" = "$(build_id_of "$SHIM")" ]
}

@test "ps: a process that exits while being read is skipped, at each point of the reading" {
	# Undecided, with nothing to measure at load (no record needed).
	local undecided_env=(LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 TSCSHIM_DECIDE_AFTER=1000)
	start "${undecided_env[@]}" -- reads 64
	stays=$started
	local at
	# 1: the ELF header; 4: the block's first bytes; 8: the clock's tally.
	for at in 1 4 8; do
		start "${undecided_env[@]}" -- reads 64
		goes=$started
		run --separate-stderr env LD_PRELOAD="$EXIT_LIB" TSCTEST_EXIT_PID="$goes" TSCTEST_EXIT_AT="$at" \
			"$TSCSHIM" ps --json
		echo "at $at: status $status $stderr"
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[ "$(jq -r --argjson p "$goes" '[.processes[] | select(.pid == $p)] | length' <<<"$output")" -eq 0 ]
		[ "$(jq -r --argjson p "$stays" '.processes[] | select(.pid == $p) | .state' <<<"$output")" = undecided ]
		[ "$(jq -r .exited_while_read <<<"$output")" -ge 1 ]
		kill -0 "$goes" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$goes/status" && false
	done
	# Named with -p: one line, exit 1.
	start "${undecided_env[@]}" -- reads 64
	goes=$started
	run --separate-stderr env LD_PRELOAD="$EXIT_LIB" TSCTEST_EXIT_PID="$goes" "$TSCSHIM" ps -p "$goes,$stays"
	echo "$output $stderr"
	[ "$status" -eq 1 ]
	[ "$stderr" = "tscshim ps: process $goes: exited while being read" ]
	[[ "$(tail -1 <<<"$output")" == "1 process with the shim loaded: 0 serving, 0 passing through, 1 undecided; 1 exited while being read" ]]
}

@test "ps: a process still being loaded, its block not relocated yet, is undecided, not another version" {
	# Held in the loader before it relocates the shim (test/lib_loading_hold.c).
	start LD_PRELOAD="$SHIM $HOLD_LIB" -- reads 1
	run --separate-stderr "$TSCSHIM" ps --json -p "$started"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.processes[0] | [.state, .reads_before_decision] | join(" ")' <<<"$output")" = "undecided 0" ]
}

@test "ps: whole scans while processes start, decide, re-synchronize and vanish: each read as one of its states" {
	require_command jq jq
	warm_cache
	# Processes of about 60 ms each (reads, some 700 us apart, deciding at the first),
	# one after another, for as long as ps runs: in most scans one of them is listed and
	# gone before it is opened, one decides or re-synchronizes while it is read. (The
	# exact moments, mid-decision, being loaded and exiting mid-read, have tests of their
	# own above.)
	(
		for _ in $(seq 200); do
			LD_PRELOAD="$SHIM" "$PROBE" compare 30 1000000000 >/dev/null 2>&1
		done
	) 3>&- &
	local spawner=$! scan states bad listed=0
	started_pids+=("$spawner")
	for scan in $(seq 40); do
		run --separate-stderr "$TSCSHIM" ps --json
		[ "$status" -eq 0 ] || { echo "scan $scan: $status $stderr"; false; }
		states=$(jq -r --arg lib "$SHIM" '.processes[] | select(.library == $lib) | .state' <<<"$output")
		bad=$(grep -vxE 'serving|passing_through|undecided' <<<"$states" || true)
		[ -z "$bad" ] || { echo "scan $scan: $output"; false; }
		listed=$((listed + $(grep -c . <<<"$states" || true)))
		kill -0 "$spawner" 2>/dev/null || break
	done
	echo "processes of ours listed over the scans: $listed"
	[ "$listed" -ge 5 ]
}

@test "ps: a musl program's shim (build-musl/), read by the glibc command and by the musl one" {
	command -v "${MUSL_CC:-musl-gcc}" >/dev/null || skip "${MUSL_CC:-musl-gcc} not found: install musl-tools"
	make -s -C "$ROOT" musl >/dev/null
	local mb="$ROOT/build-musl" tool
	PROBE_PS="$mb/test/probe_ps" start LD_PRELOAD="$mb/libtscshim.so" TSCSHIM_DISABLE=1 -- reads 5
	passing=$started
	PROBE_PS="$mb/test/probe_ps" start LD_PRELOAD="$mb/libtscshim.so" TSCSHIM_DISABLE=1 \
		TSCSHIM_DECIDE_AFTER=1000 -- reads 128
	undecided=$started
	for tool in "$TSCSHIM" "$mb/tscshim"; do
		run --separate-stderr "$tool" ps -p "$passing,$undecided"
		echo "$tool: $output"
		[ "$status" -eq 0 ]
		[[ "$(line_of "$passing")" == *"  passing through: disabled" ]]
		[[ "$(line_of "$undecided")" == *"  undecided, 128 reads" ]]
	done
}

# As nobody: ps reads nobody's processes, and of others' only how many there are.
@test "ps as an unprivileged user: its own processes read, another user's counted and not read" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to start processes as another user"
	getent passwd nobody >/dev/null || skip "there is no user nobody"
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 -- reads 5
	root_pid=$started
	as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 TSCSHIM_DECIDE_AFTER=1000 TSCSHIM_CACHE=off -- reads 128
	undecided=$started
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 TSCSHIM_CACHE=off -- reads 5
	passing=$started
	run --separate-stderr "${as[@]}" "$TSCSHIM" ps --json
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	q() { jq -r --argjson pid "$1" ".processes[] | select(.pid == \$pid) | $2" <<<"$output"; }
	# Yama's ptrace_scope 1 and up lets a user read only its own descendants.
	if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" -ge 1 ]; then
		[ "$(q "$undecided" '[.state, .why] | join(" ")')" = "unreadable ptrace_scope" ]
		[ "$(q "$passing" '[.state, .why] | join(" ")')" = "unreadable ptrace_scope" ]
	else
		[ "$(q "$undecided" '[.user, .state, .reads_before_decision] | join(" ")')" = "nobody undecided 128" ]
		[ "$(q "$passing" '[.user, .state, .reason_key] | join(" ")')" = "nobody passing_through disabled" ]
	fi
	[ -z "$(q "$root_pid" .state)" ]
	[ "$(jq -r '.not_inspected.by_why.another_user' <<<"$output")" -ge 1 ]
	[ "$(jq -r '.not_inspected.processes' <<<"$output")" -ge "$(jq -r '.not_inspected.by_why.another_user' <<<"$output")" ]
	# The table's summary says how many, and why.
	run "${as[@]}" "$TSCSHIM" ps -p "$undecided,$passing"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$(tail -1 <<<"$output")" == "2 processes with the shim loaded: "* ]]
	run "${as[@]}" "$TSCSHIM" ps
	[[ "$(tail -1 <<<"$output")" =~ \;\ could\ not\ look\ into\ [0-9]+\ other\ process(es)?\ \(another\ user\'s\ [0-9]+ ]]
	# Another user's process named: one line, exit 1.
	run --separate-stderr "${as[@]}" "$TSCSHIM" ps -p "$root_pid"
	[ "$status" -eq 1 ]
	[ "$stderr" = "tscshim ps: process $root_pid: could not look into it (another user's)" ]
}

@test "ps: bad invocations: one line, exit 2" {
	usage_error "unknown argument '--bogus'" ps --bogus
	usage_error "option -p needs a value" ps -p
	usage_error "'x' is not a process id" ps -p x
	usage_error "'0' is not a process id" ps -p 0
	usage_error "need process ids" ps -p 1,,2
	usage_error "need process ids" ps -p 1,
	usage_error "--json and --prometheus exclude each other" ps --json --prometheus
	run "$TSCSHIM" ps --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: tscshim ps "* ]]
}

# A FUSE file system whose server never answers a read (test/probe_fuse_hang.c), and
# another user's process that maps a file of it named libtscshim.so as a library is
# mapped: a read of a page of it that is not in memory waits in state D until the server
# ends, and no signal ends it. ps reads nothing of it, says why, and finishes at once.
start_fuse_hang() {
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a FUSE file system"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	getent passwd nobody >/dev/null || skip "there is no user nobody"
	# Where nobody can reach it (the test's own directory is its owner's alone).
	fuse_dir=$(mktemp -d /tmp/tscshim-hang.XXXXXX)
	chmod 755 "$fuse_dir"
	local fifo="$BATS_TEST_TMPDIR/fuse.ready"
	mkfifo "$fifo"
	"$FUSE_HANG" serve "$fuse_dir" >"$fifo" 3>&- &
	fuse_server=$!
	read -r said <"$fifo" || true
	[ "$said" = ready ] || skip "a FUSE file system cannot be mounted here"
	as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	PROBE_PS="$FUSE_HANG" start -- map "$fuse_dir/libtscshim.so"
	as=()
	mapper=$started
}

# Ends the server (the kernel then fails every read it holds) and unmounts.
stop_fuse_hang() {
	kill "$fuse_server" 2>/dev/null || true
	wait "$fuse_server" 2>/dev/null || true
	umount -l "$fuse_dir" 2>/dev/null || true
	rmdir "$fuse_dir" 2>/dev/null || true
	fuse_server=
}

@test "ps: another user's process maps a file of a file system that never answers: skipped, said why, ps done within a second" {
	start_fuse_hang
	local out="$BATS_TEST_TMPDIR/ps.out" err="$BATS_TEST_TMPDIR/ps.err" format ps_pid waited
	for format in "" --json --prometheus; do
		# In the background: a read that waits on the server would hold ps in state D,
		# which no timeout's signal ends; the server's end frees it, after the check.
		"$TSCSHIM" ps $format -p "$mapper" >"$out" 2>"$err" &
		ps_pid=$!
		for waited in $(seq 20); do
			kill -0 "$ps_pid" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$ps_pid" 2>/dev/null; then
			grep State "/proc/$ps_pid/status" || true
			stop_fuse_hang
			wait "$ps_pid" || true
			echo "ps $format still running after a second"
			false
		fi
		wait "$ps_pid"
		cat "$out" "$err"
		[ ! -s "$err" ]
		case $format in
		"") output=$(cat "$out") && [[ "$(line_of "$mapper")" == *" nobody "*"  skipped (its library's headers are not in memory: reading it could wait on its file system)" ]] ;;
		--json) [ "$(jq -r '.processes[0] | [.state, .user, .note] | join(" ")' "$out")" = \
			"skipped nobody its library's headers are not in memory: reading it could wait on its file system" ] ;;
		--prometheus) grep -qx 'tscshim_processes{state="skipped"} 1' "$out" ;;
		esac
	done
	# The whole machine's scan, as cron runs it, finishes as well.
	run timeout 5 "$TSCSHIM" ps --prometheus
	stop_fuse_hang
	[ "$status" -eq 0 ]
	grep -q '^tscshim_processes{state="skipped"} [1-9]' <<<"$output"
}

@test "ps: a file named libtscshim.so that is no ELF object is not the shim, not another version" {
	local lib="$BATS_TEST_TMPDIR/fake/libtscshim.so"
	mkdir -p "$(dirname "$lib")"
	head -c 16384 /dev/urandom >"$lib"
	printf 'not an ELF object' | dd of="$lib" conv=notrunc 2>/dev/null
	# Its pages read into memory first: what is not in memory is not read (the test above).
	PROBE_PS="$FUSE_HANG" start -- map "$lib" touch
	run --separate-stderr "$TSCSHIM" ps -p "$started"
	echo "$output $stderr"
	[ "$status" -eq 1 ]
	[ "$stderr" = "tscshim ps: process $started: the shim is not loaded ($lib is not the shim: not an ELF object of this machine)" ]
	[ "$(tail -1 <<<"$output")" = "0 processes with the shim loaded: 0 serving, 0 passing through, 0 undecided" ]
	run "$TSCSHIM" ps
	[ "$status" -eq 0 ]
	[ -z "$(line_of "$started")" ]
}

@test "ps: a write that fails (a full disk) exits 1 with one line on stderr, for each output" {
	[ -w /dev/full ] || skip "no /dev/full"
	local format
	for format in "" --json --prometheus; do
		run --separate-stderr "$TSCSHIM" ps $format
		[ "$status" -eq 0 ]
		run --separate-stderr bash -c '"$0" ps '"$format"' >/dev/full' "$TSCSHIM"
		echo "ps $format: $status $stderr"
		[ "$status" -eq 1 ]
		[ "$stderr" = "tscshim ps: cannot write the output: No space left on device" ]
	done
}

@test "ps -p: a process named twice is listed and counted once; a thread's id is refused, naming its process" {
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 TSCSHIM_DECIDE_AFTER=1000 -- reads 64
	local pid=$started
	run --separate-stderr "$TSCSHIM" ps -p "$pid,$pid" -p "$pid"
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "$(grep -cE "^ *$pid " <<<"$output")" -eq 1 ]
	[ "$(tail -1 <<<"$output")" = "1 process with the shim loaded: 0 serving, 0 passing through, 1 undecided" ]
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 -- thread
	local tid=${said#ready } process=$started
	[ "$tid" != "$process" ]
	run --separate-stderr "$TSCSHIM" ps --json -p "$tid"
	echo "$output $stderr"
	[ "$status" -eq 1 ]
	[ "$stderr" = "tscshim ps: process $tid: a thread of process $process, not a process (try -p $process)" ]
	[ "$(jq '.processes | length' <<<"$output")" -eq 0 ]
}

@test "ps: a process whose maps run past 64 MiB is read in full, not reported as exited" {
	# A path of about 1,200 bytes, its first page mapped 60,000 times apart: 75 MB of maps.
	local dir="$BATS_TEST_TMPDIR" i
	for i in $(seq 5); do
		dir="$dir/$(printf 'd%.0s' $(seq 230))"
	done
	mkdir -p "$dir"
	head -c 4096 /dev/zero >"$dir/page"
	start LD_PRELOAD="$SHIM" TSCSHIM_DISABLE=1 TSCSHIM_DECIDE_AFTER=1000 -- maps 60000 "$dir/page"
	[ "$(wc -c <"/proc/$started/maps")" -gt $((64 << 20)) ]
	run --separate-stderr "$TSCSHIM" ps --json -p "$started"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.processes[0].state' <<<"$output")" = undecided ]
	[ "$(jq -r .exited_while_read <<<"$output")" -eq 0 ]
}

@test "ps: names, paths and counts a hostile user chose, through all three outputs, parsed strictly" {
	# test_ps's fuzzing of every output (random bytes in every text, counts near 2^64),
	# kept: the JSON read as strict UTF-8 by Python's json, the metrics by
	# prometheus_client's parser, the table free of control characters.
	/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
		skip "prometheus_client is not installed (apt-get install python3-prometheus-client)"
	local dir="$BATS_TEST_TMPDIR/fuzz"
	mkdir -p "$dir"
	TSCTEST_PS_FUZZ_DIR="$dir" run "$ROOT/build/test/test_ps"
	[ "$status" -eq 0 ]
	run /usr/bin/python3 - "$dir" <<'PY'
import json, os, re, sys
from prometheus_client.parser import text_string_to_metric_families
d = sys.argv[1]
n = 0
for name in sorted(os.listdir(d)):
    raw = open(os.path.join(d, name), "rb").read()
    text = raw.decode("utf-8")  # strict: any invalid byte fails
    if name.startswith("json."):
        doc = json.loads(text)
        assert isinstance(doc["processes"], list)
    elif name.startswith("prom."):
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                assert set(sample.labels) <= {"state", "reason", "why", "clock", "cause"}, sample
    else:
        bad = re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
        assert not bad, (name, bad)
    n += 1
print(n, "outputs parsed")
assert n >= 900
PY
	echo "$output"
	[ "$status" -eq 0 ]
}

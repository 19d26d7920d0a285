#!/usr/bin/env bats
# tscshim ab: structure, JSON validity whatever the command prints, the TSC's share in B,
# failing commands, strict options and settings, variants, servers (started, waited for
# and stopped on every path), metrics, outliers, the plot without gnuplot. Small -n keeps
# it fast; no timing is asserted.
load helpers
bats_require_minimum_version 1.5.0

PROBE="$ROOT/build/test/probe_clock"
SERVER="$ROOT/build/test/probe_ab_server"
CLIENT="$ROOT/build/test/probe_ab_client"

setup_file() {
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
	# A warm, conclusive cache: a cold start on a loaded machine may leave the first B
	# run's estimate inconclusive, and then every B passes through for seconds.
	warm_cache || true
}

# A failing test leaves no server behind either.
teardown() {
	local f pid
	for f in "$BATS_TEST_TMPDIR/pids" "$BATS_TEST_TMPDIR/driver"; do
		[ -f "$f" ] || continue
		while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$f"
	done
}

# A free loopback port (the kernel's choice; ab refuses one that is in use).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Every server that wrote its pid to $1 is gone.
all_gone() {
	local pid
	[ -s "$1" ]
	while read -r pid; do
		if kill -0 "$pid" 2>/dev/null; then
			echo "process $pid is still running"
			return 1
		fi
	done <"$1"
}

@test "ab: a million clock_gettime calls are served by the TSC in B, none counted in A; the JSON says what ran where" {
	require_reliable
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 --json -- "$PROBE" loop 1000000
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["runs"] == 2 and d["warmup"] == 0 and d["failed"] == 0
assert d["tscshim_version"] and d["argv"][-1] == "1000000"
m = d["machine"]
assert m["cpu"] and m["kernel"] and m["clocksource"] == open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip(), m
a, b = d["variants"]
assert a["name"] == "A" and not a["shim"] and a["decision"] is None, a
assert b["name"] == "B" and b["shim"] and b["decision"]["served"] is True and b["decision"]["reason"], b
assert b["settings"]["TSCSHIM_CACHE"].endswith("/cache"), b["settings"]
assert b["tsc"]["monotonic"]["served"] >= 2000000 and b["tsc"]["processes_served"] == 2, b["tsc"]
assert [r["side"] for r in d["detail"]] == ["A", "B", "A", "B"]
for r in d["detail"]:
    assert r["ok"] and r["exit_status"] == 0 and r["wall_s"] > 0, r
    if r["side"] == "B": assert r["tsc_served"] >= 1000000, r
    else: assert "tsc_served" not in r, r
for v in d["variants"]:
    for what in ("wall_s", "user_s", "sys_s"):
        t = v[what]
        assert t["min"] <= t["median"] <= t["max"], (v["name"], what, t)
(c,) = d["comparisons"]
assert c["variant"] == "B" and c["baseline"] == "A" and c["quantity"] == "wall" and c["better"] == "lower", c
assert 0 < c["ratio"]["p10"] <= c["ratio"]["median"] <= c["ratio"]["p90"], c
assert c["difference"] == "undecided" and c["ratio"]["low"] is None, c
' "$output"
	[[ "$stderr" != *WARNING* ]]
}

@test "ab: the table has min/median/max, the ratio, a verdict and one row per run" {
	run --separate-stderr "$TSCSHIM" ab -n 6 --warmup 1 -- "$PROBE" loop 1000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "tscshim ab: 6 runs each of A (without the shim) and B (with it), alternating, after 1 warmup pair(s)" ]]
	[[ "$output" == *"min"*"median"*"max"*"outliers (> 3 MADs)"* ]]
	for what in "wall s" "user s" "sys s"; do
		[ "$(printf '%s\n' "$output" | grep -cE "^$what +A +[0-9.]+ +[0-9.]+ +[0-9.]+")" -eq 1 ]
	done
	[[ "$output" == *"B/A wall, pair by pair: median "*" p10 "*" p90 "*"(6 pairs)"* ]]
	printf '%s\n' "$output" | grep -qE '^  wall time: (B is [0-9.]+x (faster|slower) than A \([0-9.]+-[0-9.]+, 95%\)|no difference detected \([0-9.]+-[0-9.]+\))$'
	[ "$(printf '%s\n' "$output" | grep -cE '^[1-6] +A .* exit 0$')" -eq 6 ]
	[ "$(printf '%s\n' "$output" | grep -cE '^[1-6] +B .* exit 0 +[0-9]+/[0-9]+$')" -eq 6 ]
	[[ "$output" == *"B, all runs: TSC served "* ]]
	[[ "$output" == *"machine: "*"clocksource "* ]]
}

@test "ab: a failing command has its status reported on every run and ab exits 1" {
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 -- false
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "$output" | grep -cE '^[12] +[AB] .* exit 1')" -eq 4 ]
	[[ "$output" == *"FAILED: 4 of 4 runs failed"* ]]
	[[ "$stderr" == *"the runs' output is kept in "* ]]
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json -- sh -c 'kill -TERM $$'
	[ "$status" -eq 1 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["failed"] == 2
assert all(r["signal"] == 15 and r["exit_status"] is None and not r["ok"] for r in d["detail"]), d["detail"]
' "$output"
}

@test "ab: a B that the TSC did not serve gets a loud warning" {
	TSCSHIM_DISABLE=1 run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 -- "$PROBE" loop 1000
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"WARNING: THE TSC SERVED NO CLOCK CALL IN ANY B RUN"* ]]
	[[ "$output" == *"B, the shim's decision in a probe process: passing through: TSCSHIM_DISABLE=1"* ]]
}

@test "ab: --out-dir keeps each run's stdout and stderr, the terminal gets none" {
	out="$BATS_TEST_TMPDIR/out"
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 1 --out-dir "$out" -- sh -c 'echo to-stdout; echo to-stderr >&2'
	[ "$status" -eq 0 ]
	# The table names the command, so look for the command's output as whole lines.
	! printf '%s\n' "$output" | grep -qx to-stdout || false
	! printf '%s\n' "$stderr" | grep -qx to-stderr || false
	for run in A-1 B-1 warmup-A-1 warmup-B-1; do
		[ "$(cat "$out/$run.out")" = "to-stdout" ]
		[ "$(cat "$out/$run.err")" = "to-stderr" ]
	done
}

@test "ab: without --out-dir the output goes to a temporary directory, removed after success, kept after a failure" {
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir -p "$TMPDIR"
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json -- sh -c 'echo "{\"not\": json"; echo to-stderr >&2'
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	python3 -m json.tool <<<"$output" >/dev/null
	! printf '%s\n' "$stderr" | grep -qx to-stderr || false
	[ -z "$(ls -A "$TMPDIR")" ]
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 -- sh -c 'echo kept; exit 4'
	[ "$status" -eq 1 ]
	dir=$(printf '%s\n' "$stderr" | sed -n "s/^tscshim ab: the runs' output is kept in //p")
	[ -n "$dir" ]
	[[ "$dir" == "$TMPDIR"/* ]]
	[ "$(cat "$dir/A-1.out")" = kept ]
}

@test "ab: --show-output prints the runs' output; under --json on stderr, and the JSON stays valid" {
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --show-output -- sh -c 'echo shown-out; echo shown-err >&2'
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -cx shown-out)" -eq 2 ]
	[ "$(printf '%s\n' "$stderr" | grep -cx shown-err)" -eq 2 ]
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json --show-output -- sh -c 'echo "}{ ]"; echo shown-err >&2'
	[ "$status" -eq 0 ]
	jq -e '.detail | length == 2' <<<"$output"
	[ "$(printf '%s\n' "$stderr" | grep -cx '}{ ]')" -eq 2 ]
}

@test "ab: --help prints the usage on stdout and exits 0, running nothing" {
	run --separate-stderr "$TSCSHIM" ab -n 3 --help -- /bin/false
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: tscshim ab [OPTIONS] -- COMMAND [ARGS...]" ]]
	[ -z "$stderr" ]
}

@test "ab: bad arguments exit 2 with one line naming them" {
	usage_error "'--frobnicate'" ab --frobnicate -- true
	usage_error "-n '0'" ab -n 0 -- true
	usage_error "-n 'many'" ab -n many -- true
	usage_error "-n needs a value" ab -n
	usage_error "--warmup '-1'" ab --warmup -1 -- true
	usage_error "no command given" ab -n 2
	usage_error "no command given" ab -n 2 --
	usage_error "--plot 'a.jpg'" ab --plot a.jpg -- true
	usage_error "--metric 'x:no group'" ab --metric 'x:no group' -- true
	usage_error "--metric 'x:(['" ab --metric 'x:([' -- true
	usage_error "--server needs --ready" ab --server 'sleep 1' -- true
	usage_error "need --server" ab --ready tcp:1234 -- true
	usage_error "--ready 'udp:1'" ab --server 'sleep 1' --ready udp:1 -- true
	usage_error "--timeout '0'" ab --timeout 0 -- true
	usage_error "give two or more" ab --variant only:FENCE=1 -- true
	usage_error "'B' is given twice" ab --variant B:FENCE=1 --variant B:FENCE=0 -- true
	usage_error "NOPE: no such setting" ab --variant A:shim=off --variant B:NOPE=1 -- true
}

@test "ab: invalid settings, of a variant or of the environment, are refused before anything runs" {
	marker="$BATS_TEST_TMPDIR/ran"
	usage_error "TSCSHIM_FENCE: invalid value '2'" ab --setup "touch $marker" --variant plain:shim=off --variant bad:FENCE=2 -- touch "$marker"
	[ ! -e "$marker" ]
	usage_error "TSCSHIM_CLOCKS: invalid value 'monotonic,sundial'" ab --variant a:shim=off --variant b:CLOCKS=monotonic,sundial -- touch "$marker"
	[ ! -e "$marker" ]
	TSCSHIM_FENCE=2 usage_error "TSCSHIM_FENCE: invalid value '2'" ab -n 1 -- touch "$marker"
	[ ! -e "$marker" ]
	TSCSHIM_FENSE=0 usage_error "TSCSHIM_FENSE in the environment: no such setting" ab -n 1 -- touch "$marker"
	[ ! -e "$marker" ]
}

@test "ab: three variants run interleaved, each with its own settings, and the JSON records them" {
	require_reliable
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 --json --variant plain:shim=off --variant fenced:TSCSHIM_FENCE=1 \
		--variant unfenced:FENCE=0,CLOCKS=monotonic,realtime -- "$PROBE" loop 10000
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert [r["side"] for r in d["detail"]] == ["plain", "fenced", "unfenced"] * 2
plain, fenced, unfenced = d["variants"]
assert not plain["shim"] and plain["settings"] == {} and plain["decision"] is None
assert fenced["settings"]["TSCSHIM_FENCE"] == "1" and fenced["settings_from_variant"] == ["TSCSHIM_FENCE"]
assert unfenced["settings"]["TSCSHIM_FENCE"] == "0" and unfenced["settings"]["TSCSHIM_CLOCKS"] == "monotonic,realtime"
assert fenced["decision"]["fenced"] is True and unfenced["decision"]["fenced"] is False, (fenced, unfenced)
for v in (fenced, unfenced):
    assert v["tsc"]["monotonic"]["served"] >= 20000, v
assert [(c["variant"], c["baseline"]) for c in d["comparisons"]] == [("fenced", "plain"), ("unfenced", "plain")]
' "$output"
}

@test "ab: a server is started under each variant, waited for, driven without the shim, stopped; the metric is read" {
	port=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids"
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 1 --json --server "$SERVER $port $pids" --ready "tcp:$port" \
		--metric 'rps:throughput: ([0-9.]+) requests:higher' -- "$CLIENT" "$port" 200
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$pids")" -eq 6 ] # (1 warmup + 2) rounds x 2 variants
	all_gone "$pids"
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["server"].endswith(sys.argv[2]) and d["ready"] == "tcp:" + sys.argv[3]
assert d["metrics"] == [{"name": "rps", "regex": "throughput: ([0-9.]+) requests", "better": "higher"}]
for r in d["detail"]:
    assert r["ok"] and r["metrics"]["rps"] > 0 and r["server"]["stop"].startswith("terminated ("), r
    assert "tsc_served" not in r # the driver runs without the shim
    if r["side"] == "B": assert r["server"]["processes_served"] in (0, 1), r
a, b = d["variants"]
assert a["metrics"]["rps"]["n"] == 2 and a["metrics"]["rps"]["min"] <= a["metrics"]["rps"]["median"]
assert b["server_tsc"]["stats_lines"] == 2, b # one server process a run wrote its stats
assert [c["quantity"] for c in d["comparisons"]] == ["wall", "rps"] and d["comparisons"][1]["better"] == "higher"
' "$output" "$pids" "$port"
}

@test "ab: the server's clock calls are served by the TSC in B" {
	require_reliable
	port=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids"
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 --server "$SERVER $port $pids" --ready "tcp:$port" -- "$CLIENT" "$port" 300
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"server: TSC served/total clock calls"* ]]
	[ "$(printf '%s\n' "$output" | grep -cE '^[12] +B .* exit 0 +[0-9]{3,}/[0-9]+$')" -eq 2 ]
	[[ "$output" == *"B, all runs (server): TSC served "* ]]
	[[ "$stderr" != *WARNING* ]]
	all_gone "$pids"
}

@test "ab: --ready-file waits for a slow server; --setup, --prepare and --cleanup run in order" {
	port=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids" log="$BATS_TEST_TMPDIR/log" ready="$BATS_TEST_TMPDIR/ready"
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 1 --setup "echo setup >>$log" --prepare "echo prepare >>$log" \
		--cleanup "echo cleanup >>$log" --server "echo server >>$log; exec $SERVER $port $pids --delay-ms 300 --ready-file $ready" \
		--ready-file "$ready" -- sh -c "echo driver >>$log; exec $CLIENT $port 10"
	echo "$output"; echo "$stderr"; cat "$log"
	[ "$status" -eq 0 ]
	[ "$(head -1 "$log")" = setup ]
	[ "$(tail -1 "$log")" = cleanup ]
	[ "$(grep -c . "$log")" -eq $((2 + 3 * 2 * 3)) ]
	# Every run: prepare, then the server, then the driver (which reached it, after the delay).
	[ "$(sed -n '2,$p' "$log" | sed '$d' | paste -sd' ')" = "$(for i in 1 2 3 4 5 6; do printf 'prepare server driver '; done | sed 's/ $//')" ]
	all_gone "$pids"
}

@test "ab: a driver that fails or times out still has its server stopped" {
	port=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids"
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 --json --server "$SERVER $port $pids" --ready "tcp:$port" -- "$CLIENT" "$port" 5 --exit 3
	echo "$output"; echo "$stderr"
	[ "$status" -eq 1 ]
	jq -e '[.detail[] | .exit_status == 3 and (.ok | not)] | all and length == 4' <<<"$output"
	all_gone "$pids"
	rm "$pids"
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json --timeout 0.3 --server "$SERVER $port $pids" --ready "tcp:$port" -- "$CLIENT" "$port" 5 --sleep-ms 30000
	echo "$output"; echo "$stderr"
	[ "$status" -eq 1 ]
	jq -e '[.detail[] | .timed_out and .failure == "timed out after 0.3 s" and .signal == 15] | all and length == 2' <<<"$output"
	all_gone "$pids"
}

@test "ab: a server that ignores SIGTERM is killed after the grace period" {
	port=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids"
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json --grace 0.2 --server "$SERVER $port $pids --ignore-term" --ready "tcp:$port" -- "$CLIENT" "$port" 5
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	jq -e '[.detail[] | .server.stop == "killed after 0.2 s"] | all' <<<"$output"
	all_gone "$pids"
}

@test "ab: a server that is never ready, or exits first, stops ab with one line and nothing left running" {
	port=$(free_port) other=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids"
	run --separate-stderr "$TSCSHIM" ab -n 2 --json --ready-timeout 0.5 --server "$SERVER $port $pids" --ready "tcp:$other" -- "$CLIENT" "$port" 5
	echo "$output"; echo "$stderr"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ "$stderr" == *"run warmup-A-1: the server was not ready (tcp:$other) after 0.5 s"* ]]
	[ "$(wc -l <"$pids")" -eq 1 ]
	all_gone "$pids"
	run --separate-stderr "$TSCSHIM" ab -n 2 --server "$SERVER $port $pids --delay-ms 2000 --exit-after-ms 100" --ready "tcp:$port" -- "$CLIENT" "$port" 5
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"the server exited before it was ready (exit 3)"* ]]
	all_gone "$pids"
}

@test "ab: interrupted, it stops the driver and the server and exits 128+signal" {
	port=$(free_port)
	pids="$BATS_TEST_TMPDIR/pids" driver="$BATS_TEST_TMPDIR/driver"
	"$TSCSHIM" ab -n 3 --server "$SERVER $port $pids" --ready "tcp:$port" \
		-- sh -c "echo \$\$ >>$driver; exec $CLIENT $port 5 --sleep-ms 30000" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	ab=$!
	for _ in $(seq 100); do [ -s "$driver" ] && break; sleep 0.1; done
	[ -s "$driver" ]
	kill -TERM "$ab"
	status=0
	wait "$ab" || status=$?
	cat "$BATS_TEST_TMPDIR/err"
	[ "$status" -eq 143 ]
	grep -q "stopped by signal 15" "$BATS_TEST_TMPDIR/err"
	all_gone "$pids"
	all_gone "$driver"
}

@test "ab: a missing metric fails its run with one line; the rest is reported" {
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json --metric 'rps:throughput: ([0-9.]+)' -- sh -c 'echo nothing to see'
	echo "$output"; echo "$stderr"
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "$stderr" | grep -c "metric 'rps' not found in the command's output")" -eq 2 ]
	jq -e '[.detail[] | (.ok | not) and .exit_status == 0 and .failure == "metric rps not found" and .metrics.rps == null] | all' <<<"$output"
	jq -e '.failed == 2 and .variants[0].metrics.rps.n == 0' <<<"$output"
}

@test "ab: a metric may carry a scale as programs print it (4113k, 16.1Gi); anything else fails its run, saying what was captured" {
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json --metric iops:'IOPS=([0-9.]+[kMG]?)':higher \
		--metric 'bw:BW=([0-9.]+[KMGT]?i?)B/s:higher' -- sh -c 'echo "read: IOPS=4113k, BW=16.1GiB/s (17.3GB/s)"'
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	# 16.1 Gi = 16.1 * 2^30 = 17287243366.4 (the JSON has 9 digits)
	jq -e '[.detail[] | .ok and .metrics.iops == 4113000 and .metrics.bw > 17287240000 and .metrics.bw < 17287250000]
		| all and length == 2' <<<"$output"
	jq -e '[.variants[].metrics.iops | .n == 1 and .median == 4113000] | all' <<<"$output"
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --metric iops:'IOPS=([0-9.]+[kMG]?)':higher -- sh -c 'echo IOPS=850k'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -cE '^1 +[AB] .* +850000 exit 0')" -eq 2 ]
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 0 --json --metric iops:'IOPS=([0-9.]+[a-z]?)' -- sh -c 'echo IOPS=4113x'
	echo "$output"; echo "$stderr"
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "$stderr" | grep -cF "metric iops: captured \"4113x\" is not a number (a decimal, optionally followed by k, K, M, G, T, Ki, Mi, Gi or Ti); make the regex's first group capture only the number")" -eq 2 ]
	jq -e '[.detail[] | (.ok | not) and .exit_status == 0 and .failure == "metric iops: captured \"4113x\" is not a number"]
		| all and length == 2' <<<"$output"
}

@test "ab: into one file (>file 2>&1) the report's lines and the warnings' lines stay whole" {
	# Into a file or a pipe, stdout goes out a buffer at a time: a report longer than the
	# buffer (in use, many runs or variants; here, cheaply, a long command line) had the
	# warnings that follow it on stderr land in the middle of one of its lines.
	# TSCSHIM_DISABLE=1 makes a warning: the TSC served no call in B.
	pad=$(printf '%*s' 70000 '' | tr ' ' x)
	all="$BATS_TEST_TMPDIR/all"
	status=0
	TSCSHIM_DISABLE=1 "$TSCSHIM" ab -n 2 --warmup 0 -- true "$pad" >"$all" 2>&1 || status=$?
	cut -c1-160 "$all"
	[ "$status" -eq 0 ]
	# Each line ab writes on stderr starts "tscshim ab:"; none may start inside another line.
	! grep -n '.tscshim ab:' "$all" | cut -c1-160 | grep . || false
	[ "$(grep -cxF "command: true $pad" "$all")" -eq 1 ]
	[ "$(grep -cxE 'tscshim ab: WARNING: THE TSC SERVED NO CLOCK CALL IN ANY B RUN \([0-9]+ process\(es\) reported stats\): B measured the real clock, not the shim' "$all")" -eq 1 ]
	# Every line is one that the report or a warning writes whole: no fragment is left over.
	local whole=(
		'tscshim ab: .*'
		'command: true x+'
		'variant A +without the shim'
		'variant B +with the shim; .*'
		'machine: .*; clocksource .*; tscshim .*'
		' +min +median +max  outliers \(> 3 MADs\)'
		'(wall s|user s|sys s|) +[AB] +[0-9.]+ +[0-9.]+ +[0-9.]+(  run [0-9, ]+)?'
		'B/A wall, pair by pair: median .* \(2 pairs\)'
		'  wall time: .*'
		'pair +side +wall s +user s +sys s status +TSC served/total clock calls'
		'[12] +[AB] +[0-9.]+ +[0-9.]+ +[0-9.]+ exit 0( +[0-9]+/[0-9]+)?'
		'B, all runs: TSC served .* served by the TSC'
		"B, the shim's decision in a probe process: .*"
	)
	! grep -vxE "$(IFS='|'; echo "${whole[*]}")" "$all" | cut -c1-160 | grep . || false
}

@test "ab: --show-output ends a run's output that has no final newline, so that the next line starts whole" {
	all="$BATS_TEST_TMPDIR/all"
	status=0
	"$TSCSHIM" ab -n 1 --warmup 0 --show-output -- sh -c 'printf partial-out; printf partial-err >&2' >"$all" 2>&1 || status=$?
	cat "$all"
	[ "$status" -eq 0 ]
	[ "$(grep -cx partial-out "$all")" -eq 2 ]
	[ "$(grep -cx partial-err "$all")" -eq 2 ]
	! grep -n '.tscshim ab:' "$all" || false
}

@test "ab: a run far slower than the others is flagged by number, and dropped only with --drop-outliers" {
	counter="$BATS_TEST_TMPDIR/counter"
	# Runs go A1 B1 A2 B2 ...: the 7th run of the command is A's 4th.
	slow="n=\$(cat $counter 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >$counter; [ \$n -ne 7 ] || sleep 0.6"
	run --separate-stderr "$TSCSHIM" ab -n 8 --warmup 0 --json -- sh -c "$slow"
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	jq -e '.variants[0].outliers.wall | index(4) != null' <<<"$output"
	jq -e '.variants[0].wall_s.n == 8 and .variants[0].wall_s.max >= 0.6' <<<"$output"
	printf '%s\n' "$stderr" | grep -E "^tscshim ab: outlier\(s\) in wall time, A: run ([0-9]+, )*4(,|\b).*kept"
	rm "$counter"
	run --separate-stderr "$TSCSHIM" ab -n 8 --warmup 0 --json --drop-outliers -- sh -c "$slow"
	[ "$status" -eq 0 ]
	jq -e '(.variants[0].outliers.wall | index(4) != null) and .variants[0].wall_s.max < 0.6' <<<"$output"
	jq -e '.variants[0].wall_s.n == 8 - (.variants[0].outliers.wall | length)' <<<"$output"
	[[ "$stderr" == *"dropped from the statistics"* ]]
}

@test "ab: --export-json and --export-markdown write the report to files as well" {
	run --separate-stderr "$TSCSHIM" ab -n 6 --warmup 0 --export-json "$BATS_TEST_TMPDIR/r.json" \
		--export-markdown "$BATS_TEST_TMPDIR/r.md" -- "$PROBE" loop 1000
	[ "$status" -eq 0 ]
	[[ "$output" == *"B/A wall, pair by pair"* ]]
	jq -e '.runs == 6 and (.comparisons[0].ratio.low | type == "number") and .comparisons[0].ratio.coverage >= 0.95' "$BATS_TEST_TMPDIR/r.json"
	grep -q '^| variant | settings | wall s, median (min-max) | TSC served / clock calls |$' "$BATS_TEST_TMPDIR/r.md"
	grep -qE '^\| B/A \| wall \| [0-9.]+ \| [0-9.]+-[0-9.]+ \| ' "$BATS_TEST_TMPDIR/r.md"
}

@test "ab: --plot without gnuplot says so in one line and prints the table" {
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	run --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$TSCSHIM" ab -n 1 --warmup 0 --plot "$BATS_TEST_TMPDIR/a.svg" -- "$PROBE" loop 1000
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$stderr" | grep -c gnuplot)" -eq 1 ]
	[[ "$stderr" == *"gnuplot not found"* ]]
	[[ "$output" == *"B/A wall, pair by pair"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/a.svg" ]
}

@test "ab: --plot with gnuplot on PATH runs it on every variant's wall times" {
	mkdir -p "$BATS_TEST_TMPDIR/bin" "$BATS_TEST_TMPDIR/got"
	got="$BATS_TEST_TMPDIR/got"
	cat >"$BATS_TEST_TMPDIR/bin/gnuplot" <<SH
#!/bin/sh
cp "\$1" "$got/plot.gp" && cp "\$(dirname "\$1")"/*.dat "$got/" &&
touch "\$(sed -n "s/^set output '\(.*\)'\$/\1/p" "\$1")"
SH
	chmod +x "$BATS_TEST_TMPDIR/bin/gnuplot"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" run --separate-stderr "$TSCSHIM" ab -n 3 --warmup 0 --plot "$BATS_TEST_TMPDIR/a.png" -- "$PROBE" loop 1000
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"plot written to $BATS_TEST_TMPDIR/a.png"* ]]
	[ -e "$BATS_TEST_TMPDIR/a.png" ]
	[ "$(wc -l <"$got/0.dat")" -eq 3 ]
	[ "$(wc -l <"$got/1.dat")" -eq 3 ]
	[ "$(tail -1 "$got/0.dat" | awk '{print $2}')" = "1.000000" ]
	grep -q "title 'A (without the shim)'" "$got/plot.gp"
}

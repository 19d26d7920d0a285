#!/usr/bin/env bats
# tscshim bench: output structure, JSON/CSV validity, strict options, the plot without
# gnuplot. Small --calls keep it fast; nothing here asserts a timing.
load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
}

@test "bench: the table has every variant for every clock, with the shim's state" {
	run --separate-stderr "$TSCSHIM" bench --calls 640
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "tscshim bench: 640 calls per clock and thread, 1 thread(s)"* ]]
	[[ "$output" == *"shim fenced:"* ]]
	[[ "$output" == *"shim unfenced:"* ]]
	[[ "$output" == *"variant"*"clock"*"mean"*"p50"*"p90"*"p99"*"p99.9"*"max"*"x real"*"x floor"* ]]
	[[ "$output" == *"shim passing: passing through ("* ]]
	for clock in monotonic monotonic_raw boottime realtime gettimeofday timespec_get monotonic_coarse tai; do
		for variant in real syscall shim-fenced shim-unfenced shim-passing floor-fenced floor-unfenced; do
			rows=$(printf '%s\n' "$output" | awk -v v="$variant" -v c="$clock" '$1 == v && $2 == c && $3 == "all" && NF == 11' | wc -l)
			case "$variant:$clock" in
			floor-*:monotonic_coarse | floor-*:tai) [ "$rows" -eq 0 ] ;; # no counter stands in for them
			*) [ "$rows" -eq 1 ] ;;
			esac
		done
	done
	# The passing rows and the unserved clocks have no floor to compare with.
	[ "$(printf '%s\n' "$output" | awk '$1 == "shim-passing" && $NF != "-"' | wc -l)" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk '$2 == "tai" && $3 == "all" && $NF != "-"' | wc -l)" -eq 0 ]
}

@test "bench: --json is one valid document with 52 cells, each with its statistics" {
	run --separate-stderr "$TSCSHIM" bench --calls 640 --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["command"] == "bench" and d["calls"] == 640 and d["threads"] == 1, d
assert set(d["shim"]) == {"fenced", "unfenced", "passing"}
assert d["shim"]["fenced"]["fenced"] is True and d["shim"]["unfenced"]["fenced"] is False, d["shim"]
assert d["shim"]["passing"]["active"] is False, d["shim"]
cells = {(r["variant"], r["clock"]) for r in d["results"]}
assert len(d["results"]) == 52 and len(cells) == 52, len(d["results"])
for r in d["results"]:
    assert r["thread"] == "all" and r["calls"] == 640, r
    assert 0 < r["p50_ns"] <= r["p90_ns"] <= r["p99_ns"] <= r["p999_ns"] <= r["max_ns"], r
    assert r["mean_ns"] > 0 and r["ratio_real"] > 0, r
    unfloored = r["variant"] == "shim-passing" or r["clock"] in ("monotonic_coarse", "tai")
    assert (r["ratio_floor"] == 0) == unfloored, r
    if r["variant"] == "real": assert r["ratio_real"] == 1, r
' "$output"
}

@test "bench: each floor reads the counter with the plan its shim serves with" {
	require_reliable
	run --separate-stderr "$TSCSHIM" bench --calls 640 --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
for kind in ("fenced", "unfenced"):
    shim, floor = d["shim"][kind], d["floor"][kind]
    assert shim["active"] and shim["read_plan"] is not None, shim
    assert floor["read_plan"] == shim["read_plan"] and floor["as_the_shim"] is True, (kind, shim, floor)
    assert (floor["read_plan"] & 3 != 0) == (kind == "fenced"), floor
plan = d["floor"]["fenced"]["read_plan"]
assert d["floor_ordered_read"] == ("rdtscp" if plan & 3 == 2 else "lfence; rdtsc"), d["floor_ordered_read"]
assert d["shim"]["passing"]["read_plan"] is None, d["shim"]["passing"]
' "$output"
	# The table says the same in words.
	run --separate-stderr "$TSCSHIM" bench --calls 640
	[ "$status" -eq 0 ]
	[[ "$output" == *"floor-fenced:   "*", counter "*", as the shim serves"* ]]
	[[ "$output" == *"floor-unfenced: rdtsc, counter "*", as the shim serves"* ]]
}

@test "bench: the fenced floor follows whichever fenced plan its shim chose" {
	require_reliable
	# The test build stands in costs that name the plan (plans.bats): each as a host
	# whose measurement chose it (a cache of each plan's own; the estimator given time,
	# as on a loaded machine).
	local plans=(5 1)
	grep -qw rdtscp /proc/cpuinfo && plans+=(6 2)
	for plan in "${plans[@]}"; do
		run --separate-stderr env TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache-$plan" TSCSHIM_ESTIMATE_BUDGET_US=1000000 \
			TSCSHIM_TEST_COSTS=25000,300000,20000,10000,$plan \
			"$TSCSHIM" bench --calls 640 --json --library "$HOOKS"
		echo "plan $plan: $stderr"
		[ "$status" -eq 0 ]
		python3 -c '
import json, sys
d, plan = json.loads(sys.argv[1]), int(sys.argv[2])
assert d["shim"]["fenced"]["read_plan"] == plan, d["shim"]["fenced"]
assert d["floor"]["fenced"]["read_plan"] == plan, d["floor"]["fenced"]
floored = {(r["variant"], r["clock"]) for r in d["results"] if r["variant"].startswith("floor-")}
assert len(floored) == 12, floored
' "$output" "$plan"
	done
}

@test "bench: the last line is a verdict on fenced and unfenced, and --json has it too" {
	run --separate-stderr "$TSCSHIM" bench --calls 640
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "verdict: CLOCK_MONOTONIC p50, the kernel's clock through the "* ]]
	[[ "${lines[-1]}" == *"fenced: "*"; unfenced: "* ]]
	run --separate-stderr "$TSCSHIM" bench --calls 640 --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
v = json.loads(sys.argv[1])["verdict"]
assert v["kernel_path"] in ("vdso", "syscall"), v
assert v["recommendation"].startswith("fenced: ") and "; unfenced: " in v["recommendation"], v
' "$output"
}

@test "bench: --threads 2 reports each thread and all together" {
	run --separate-stderr "$TSCSHIM" bench --calls 640 --threads 2 --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["threads"] == 2
assert len(d["results"]) == 156, len(d["results"])
for v in ("real", "shim-fenced"):
    got = {r["thread"]: r["calls"] for r in d["results"] if r["variant"] == v and r["clock"] == "monotonic"}
    assert got == {0: 640, 1: 640, "all": 1280}, got
' "$output"
}

@test "bench: --csv has a header and one row of 12 fields per cell" {
	run --separate-stderr "$TSCSHIM" bench --calls 640 --csv
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "variant,clock,thread,calls,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,ratio_real,ratio_floor" ]
	[ "${#lines[@]}" -eq 53 ]
	[ "$(printf '%s\n' "$output" | awk -F, 'NF != 12' | wc -l)" -eq 0 ]
}

@test "bench: the shim children serve from the TSC where the machine is reliable" {
	require_reliable
	run --separate-stderr "$TSCSHIM" bench --calls 640 --json
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["shim"]["fenced"]["active"] and d["shim"]["unfenced"]["active"], d["shim"]
' "$output"
}

@test "bench: a shim that is not active is said loudly, the table still printed" {
	TSCSHIM_DISABLE=1 run --separate-stderr "$TSCSHIM" bench --calls 640
	[ "$status" -eq 0 ]
	[[ "$output" == *"NOT ACTIVE"* ]]
	[[ "$stderr" == *"WARNING: the shim (fenced) was not active"* ]]
}

@test "bench: bad options exit 2 with one line naming them" {
	usage_error "'--frobnicate'" bench --frobnicate
	usage_error "--calls '12'" bench --calls 12
	usage_error "--calls 'x'" bench --calls x
	usage_error "--calls needs a value" bench --calls
	usage_error "--threads '0'" bench --threads 0
	usage_error "--threads '2x'" bench --threads=2x
	usage_error "--json and --csv" bench --json --csv
	usage_error "--plot 'out.pdf'" bench --plot out.pdf
	usage_error "--drift '0'" bench --drift 0
	usage_error "--drift takes only" bench --drift 1 --calls 640
	usage_error "internal subcommand" __bench-worker cells 9 10 1
}

@test "bench: --plot without gnuplot says so in one line and prints the table" {
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	run --separate-stderr env PATH="$BATS_TEST_TMPDIR/empty" "$TSCSHIM" bench --calls 640 --plot "$BATS_TEST_TMPDIR/b.png"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$stderr" | grep -c gnuplot)" -eq 1 ]
	[[ "$stderr" == *"gnuplot not found"* ]]
	[[ "$output" == *"shim-fenced    monotonic"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/b.png" ]
}

@test "bench --drift: the table and --json report error, uncertainty and rate error" {
	run --separate-stderr "$TSCSHIM" bench --drift 0.2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "tscshim bench --drift: CLOCK_MONOTONIC, "*" samples over "* ]]
	[[ "$output" == *"|shim - kernel|"*"p50"*"p99"*"max"* ]]
	[[ "$output" == *"uncertainty (+/-)"* ]]
	[[ "$output" == *"rate error"*"ppb"* ]]
	run --separate-stderr "$TSCSHIM" bench --drift 0.2 --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert 10 <= d["samples"] <= 25, d["samples"]
for k in ("p50", "p99", "max"):
    assert d["abs_error_ns"][k] >= 0 and d["bracket_half_width_ns"][k] > 0, d
assert d["abs_error_ns"]["p50"] <= d["abs_error_ns"]["p99"] <= d["abs_error_ns"]["max"]
assert isinstance(d["rate_error_ppb"], float) and "active" in d["shim"]
' "$output"
}

@test "bench --drift: the shim stays within TSCSHIM_MAX_ERROR_NS of the kernel, give or take the bracket" {
	require_reliable
	run --separate-stderr "$TSCSHIM" bench --drift 0.2 --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["shim"]["active"], d["shim"]
assert d["abs_error_ns"]["max"] <= 1000 + d["bracket_half_width_ns"]["max"], d
' "$output"
}

# gnuplot itself is not installed in CI; a stand-in on PATH records what it is given and
# creates the output, so the path that runs it is exercised too.
fake_gnuplot() { # DIR: the stand-in goes to DIR/bin, what it was given to DIR/got
	mkdir -p "$1/bin" "$1/got"
	cat >"$1/bin/gnuplot" <<SH
#!/bin/sh
cp "\$1" "$1/got/plot.gp" && cp "\$(dirname "\$1")"/*.dat "$1/got/" &&
touch "\$(sed -n "s/^set output '\(.*\)'\$/\1/p" "\$1")"
SH
	chmod +x "$1/bin/gnuplot"
}

@test "bench: --plot with gnuplot on PATH runs it on a CDF per clock, and --drift on the error" {
	fake_gnuplot "$BATS_TEST_TMPDIR"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" run --separate-stderr "$TSCSHIM" bench --calls 640 --plot "$BATS_TEST_TMPDIR/b.svg"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"plot written to $BATS_TEST_TMPDIR/b.svg"* ]]
	[ -e "$BATS_TEST_TMPDIR/b.svg" ]
	got="$BATS_TEST_TMPDIR/got"
	grep -q "^set terminal svg" "$got/plot.gp"
	[ "$(grep -c '^plot for' "$got/plot.gp")" -eq 8 ]
	for clock in monotonic monotonic_raw boottime realtime gettimeofday timespec_get; do
		[ "$(head -1 "$got/$clock.dat")" = "fraction real syscall shim-fenced shim-unfenced shim-passing floor-fenced floor-unfenced" ]
		[ "$(wc -l <"$got/$clock.dat")" -eq 202 ]
	done
	for clock in monotonic_coarse tai; do
		[ "$(head -1 "$got/$clock.dat")" = "fraction real syscall shim-fenced shim-unfenced shim-passing" ]
	done
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" run --separate-stderr "$TSCSHIM" bench --drift 0.2 --plot "$BATS_TEST_TMPDIR/d.png"
	[ "$status" -eq 0 ]
	[ -e "$BATS_TEST_TMPDIR/d.png" ]
	grep -q "pngcairo" "$got/plot.gp"
	[ "$(awk 'NF == 3' "$got/drift.dat" | wc -l)" -ge 10 ]
}

@test "bench --startup: every case, the floor and the break-even, and no file left behind" {
	local tmp="$BATS_TEST_TMPDIR/tmp"
	mkdir "$tmp"
	run --separate-stderr env TMPDIR="$tmp" "$TSCSHIM" bench --startup --rounds 3 --library "$SHIM"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	for row in "no variable, no clock read" "no variable, one clock read" "no variable, deciding at it" \
		"TSCSHIM_DISABLE=1, no clock read" "TSCSHIM_DISABLE=1, one clock read" \
		"machine-wide record, no clock read" "machine-wide record, deciding at it"; do
		grep -q "^$row  *-\?[0-9-]" <<<"$output" || { echo "missing: $row"; false; }
	done
	[[ "$output" == *"floor itself: "*" us per /bin/true, "*" us per /bin/date"* ]]
	[ "$(grep -c '^break-even: ' <<<"$output")" -eq 2 ]
	# The read that decides and the dearest other read, each row with its four figures, the
	# page faults of its reads, and no process failed (the machine-wide record's row where
	# root saved one); the host's kind above them.
	grep -Eq '^per-user cache, the read that decides( +-?[0-9]+\.[0-9]){4} +[0-9]+ +0$' <<<"$output"
	[[ "$output" == *"(3 processes; clocksource "*", a system call "*" ns):"* ]]
	# The record, the cache and their directories are removed.
	[ -z "$(ls -A "$tmp")" ]
}

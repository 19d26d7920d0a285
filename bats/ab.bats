#!/usr/bin/env bats
# tscshim ab: structure, JSON validity, the TSC's share in B, failing commands, strict
# options, --out-dir and the plot without gnuplot. Small -n keeps it fast; no timing is
# asserted.
load helpers
bats_require_minimum_version 1.5.0

PROBE="$ROOT/build/test/probe_clock"

setup_file() {
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
}

@test "ab: a million clock_gettime calls are served by the TSC in B, none counted in A" {
	require_reliable
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 --json -- "$PROBE" loop 1000000
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["runs"] == 2 and d["warmup"] == 0 and d["failed"] == 0
assert d["tsc"]["monotonic"]["served"] >= 2000000, d["tsc"]
assert [r["side"] for r in d["detail"]] == ["A", "B", "A", "B"]
for r in d["detail"]:
    assert r["ok"] and r["exit_status"] == 0 and r["wall_s"] > 0, r
    if r["side"] == "B": assert r["tsc_served"] >= 1000000, r
    else: assert "tsc_served" not in r, r
for side in ("a", "b"):
    for what in ("wall_s", "user_s", "sys_s"):
        t = d[side][what]
        assert t["min"] <= t["median"] <= t["max"], (side, what, t)
r = d["ratio_b_over_a_wall"]
assert 0 < r["p10"] <= r["median"] <= r["p90"], r
' "$output"
	[[ "$stderr" != *WARNING* ]]
}

@test "ab: the table has min/median/max, the ratio and one row per run" {
	run --separate-stderr "$TSCSHIM" ab -n 3 --warmup 1 -- "$PROBE" loop 1000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "tscshim ab: 3 runs each of A (without the shim) and B (with it), alternating, after 1 warmup pair(s)" ]]
	[[ "$output" == *"A min"*"A median"*"A max"*"B min"*"B median"*"B max"* ]]
	for what in "wall s" "user s" "sys s"; do
		[[ "$output" == *"$what "* ]]
	done
	[[ "$output" == *"B/A wall, pair by pair: median "*" p10 "*" p90 "*"(3 pairs)"* ]]
	[ "$(printf '%s\n' "$output" | grep -cE '^[123] +A .* exit 0 *$')" -eq 3 ]
	[ "$(printf '%s\n' "$output" | grep -cE '^[123] +B .* exit 0 +[0-9]+/[0-9]+$')" -eq 3 ]
	[[ "$output" == *"B, all runs: TSC served "* ]]
}

@test "ab: a failing command has its status reported on every run and ab exits 1" {
	run --separate-stderr "$TSCSHIM" ab -n 2 --warmup 0 -- false
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(printf '%s\n' "$output" | grep -cE '^[12] +[AB] .* exit 1')" -eq 4 ]
	[[ "$output" == *"FAILED: 4 of 4 runs of the command did not exit 0"* ]]
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
}

@test "ab: --out-dir keeps each run's stdout and stderr, the terminal gets none" {
	out="$BATS_TEST_TMPDIR/out"
	run --separate-stderr "$TSCSHIM" ab -n 1 --warmup 1 --out-dir "$out" -- sh -c 'echo to-stdout; echo to-stderr >&2'
	[ "$status" -eq 0 ]
	# The table names the command, so look for the command's output as whole lines.
	! printf '%s\n' "$output" | grep -qx to-stdout
	! printf '%s\n' "$stderr" | grep -qx to-stderr
	for run in A-1 B-1 warmup-A-1 warmup-B-1; do
		[ "$(cat "$out/$run.out")" = "to-stdout" ]
		[ "$(cat "$out/$run.err")" = "to-stderr" ]
	done
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

@test "ab: --plot with gnuplot on PATH runs it on the A and B wall times" {
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
	[ "$(wc -l <"$got/a.dat")" -eq 3 ]
	[ "$(wc -l <"$got/b.dat")" -eq 3 ]
	[ "$(tail -1 "$got/a.dat" | awk '{print $2}')" = "1.000000" ]
}

#!/usr/bin/env bash
# Real programs with and without the shim: fio's null engine (IOPS), PostgreSQL's
# EXPLAIN ANALYZE timing overhead (ms), node's process.hrtime.bigint() and a JVM's
# System.nanoTime() (ns per call). Each program runs under three variants, interleaved
# round by round by `tscshim ab`: plain (no shim), default (the shim with
# TSCSHIM_SERVE=auto and nothing else: its benefit gate decides) and unfenced
# (TSCSHIM_FENCE=0). Per program it prints each variant's median, every round's figure,
# the median of the per-round ratios to plain with ab's 95 % interval, the shim's decision
# and how many clock calls the counter served (a shim side that served none is said so),
# and the load average before and after.
#
# usage: test/bench-programs.sh [ROUNDS] [PROGRAM...]   (make bench-programs: 6 rounds)
#   PROGRAM: fio postgres node java (default: all four). A program whose tool is missing
#   is skipped with one line naming the Debian package. BENCH_PROGRAMS_OUT=DIR keeps
#   ab's JSON report of each program there.
# As root it preloads against a machine-wide record written for the run by `tscshim calib
# --save` (the set-up the install guide recommends; its stored decision is printed), and
# runs PostgreSQL as an unprivileged user it creates for the run (and removes);
# otherwise against a per-user cache in the run's directory, warmed by one process.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shim="$here/build/libtscshim.so"
tscshim="$here/build/tscshim"
pg_user="tscshim-bench"

# PostgreSQL's binaries: the directory of the pg_ctl on PATH (links followed), else the
# newest Debian's.
pg_bindir() {
	local d
	if d=$(command -v pg_ctl 2>/dev/null); then
		d=$(dirname "$(readlink -f "$d")")
	else
		d=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -1)
	fi
	[ -n "$d" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/psql" ] && echo "$d"
}

# Runs the rest as the cluster's owner (with this environment: LD_PRELOAD included).
as_pg_user() {
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid="$pg_user" --regid="$pg_user" --clear-groups -- "$@"
	else
		"$@"
	fi
}

# One run of the PostgreSQL driver, under ab's variant (LD_PRELOAD and TSCSHIM_* as the
# variant has them): start the server on the run's directory's unix socket with that
# environment, time the query TIMING OFF and ON (a warm-up pair, then PAIRS pairs
# alternating), stop the server, and print the medians and the overhead, on - off.
# The server's counters are written beside it and added to ab's stats file, so that ab
# counts the served calls of the server, which reads the clock.
pg_run() { # WORK BINDIR USER PAIRS (in a process of its own: its variables are global)
	work="$1" bindir="$2" pg_user="$3" pairs="$4"
	data="$work/pg/data" sock="$work/pg/sock" srv_stats="$work/pg/stats" ab_stats="${TSCSHIM_STATS:-}"
	rm -rf "$srv_stats"
	mkdir "$srv_stats"
	[ "$(id -u)" -ne 0 ] || chown "$pg_user:" "$srv_stats"
	trap 'as_pg_user env -u LD_PRELOAD "$bindir/pg_ctl" stop -D "$data" -m immediate -w >/dev/null 2>&1 || true' EXIT
	as_pg_user env TSCSHIM_STATS="${ab_stats:+$srv_stats/%p}" \
		"$bindir/pg_ctl" start -D "$data" -w -t 60 -l "$work/pg/log" \
		-o "-k $sock -c listen_addresses=" >/dev/null
	# generate_series in the target list streams its rows through a ProjectSet node, timed
	# per row under TIMING ON (two clock reads a row); in FROM it would first put them all
	# in a tuplestore, whose cost varies by hundreds of ms from run to run here.
	q='SELECT count(x) FROM (SELECT generate_series(1, 1000000) AS x) AS s' sql=""
	for ((i = 0; i <= pairs; i++)); do
		sql+="EXPLAIN (ANALYZE, TIMING OFF) $q;"$'\n'"EXPLAIN (ANALYZE, TIMING ON) $q;"$'\n'
	done
	out=$(env -u LD_PRELOAD "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$sock" -U "$pg_user" \
		-d postgres <<<"$sql" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
	as_pg_user env -u LD_PRELOAD "$bindir/pg_ctl" stop -D "$data" -m fast -w >/dev/null
	trap - EXIT
	[ -z "$ab_stats" ] || cat "$srv_stats"/* >>"$ab_stats" 2>/dev/null || true
	# Lines alternate off, on; the first pair is the warm-up. The overhead is the median of
	# the pairs' differences (a query's time varies by tens of ms here from one execution
	# to the next; the difference within a pair varies far less).
	echo "$out" | awk -v pairs="$pairs" '
		function median(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{ v[NR] = $1 }
		END {
			if (NR != 2 * (pairs + 1)) { print "pg_run: " NR " execution times, " 2 * (pairs + 1) " expected" > "/dev/stderr"; exit 1 }
			for (i = 1; i <= pairs; i++) { off[i] = v[2 * i + 1]; on[i] = v[2 * i + 2]; d[i] = on[i] - off[i] }
			printf "timing off: %.3f ms\ntiming on: %.3f ms\noverhead: %.3f ms\n", median(off, pairs), median(on, pairs), median(d, pairs)
		}'
}
if [ "${1:-}" = __pg_run ]; then
	shift
	pg_run "$@"
	exit
fi

rounds=${1:-6}
shift || true
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "usage: test/bench-programs.sh [ROUNDS] [fio|postgres|node|java...]" >&2; exit 2; }
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(fio postgres node java)
for p in "${programs[@]}"; do
	case "$p" in fio | postgres | node | java) ;; *) echo "bench-programs: unknown program '$p' (fio, postgres, node, java)" >&2; exit 2 ;; esac
done
if [ ! -x "$shim" ] || [ ! -x "$tscshim" ]; then echo "bench-programs: build first (make)" >&2; exit 1; fi
command -v python3 >/dev/null || { echo "bench-programs: needs python3 (apt-get install python3)" >&2; exit 1; }

work=$(mktemp -d /tmp/tscshim-programs.XXXXXX)
created_user=""
cleanup() {
	local bindir
	if [ -f "$work/pg/data/postmaster.pid" ] && bindir=$(pg_bindir); then
		as_pg_user "$bindir/pg_ctl" stop -D "$work/pg/data" -m immediate -w >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
	if [ -n "$created_user" ]; then userdel "$pg_user" 2>/dev/null || true; fi
}
# ab runs in the background, so that a signal reaches this shell at once: ab is then
# stopped (it stops what it started, the driver's PostgreSQL server included) first.
ab_pid=""
on_signal() {
	if [ -n "$ab_pid" ]; then
		kill -TERM "$ab_pid" 2>/dev/null || true
		wait "$ab_pid" 2>/dev/null || true
	fi
	exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
chmod 0755 "$work"

# The shim's defaults: none of the caller's TSCSHIM_* settings, no other preload.
while read -r v; do unset "$v"; done < <(compgen -v TSCSHIM_ || true)
unset LD_PRELOAD
if [ "$(id -u)" -eq 0 ]; then
	export TSCSHIM_SYSTEM_RECORD="$work/record" TSCSHIM_CACHE=off
	# Under a CPU hog an estimate can end inconclusive (exit status 1): try again.
	for try in 1 2 3; do
		rc=0
		TSCSHIM_LIBRARY="$shim" "$tscshim" calib --save >"$work/calib.txt" 2>&1 || rc=$?
		[ "$rc" -eq 1 ] || break
	done
	if [ "$rc" -ne 0 ]; then
		cat "$work/calib.txt" >&2
		echo "bench-programs: tscshim calib --save failed ($try tries)" >&2
		exit 1
	fi
	chmod 0644 "$work/record"
	kind="machine-wide record written for the run"
	stored=$(sed -n 's/^stored decision: *//p' "$work/calib.txt")
else
	export TSCSHIM_SYSTEM_RECORD=off TSCSHIM_CACHE="$work/cache"
	LD_PRELOAD="$shim" /bin/date >/dev/null
	TSCSHIM_LIBRARY="$shim" "$tscshim" calib >"$work/calib.txt" 2>&1 || true
	kind="per-user cache, warmed"
	stored=$(sed -n 's/^recommendation: *//p' "$work/calib.txt")
fi

printf 'machine: %s (%s); clocksource %s; %s; %d CPUs; kernel %s\n' \
	"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
	"$(awk -F': ' '/^cpu family/ {f = $2} /^model[[:space:]]*:/ {m = $2} END {print "family " f " model " m}' /proc/cpuinfo)" \
	"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	"$(grep -qw rdtscp /proc/cpuinfo && echo rdtscp || echo 'no rdtscp')" "$(nproc)" "$(uname -r)"
printf 'shim: %s (%s); %s\n' "$(git -C "$here" describe --always --dirty 2>/dev/null || echo '?')" "$kind" "$stored"
sed -n 's/^cost per call: */costs: /p' "$work/calib.txt"
printf 'rounds: %d per variant (plain, default = TSCSHIM_SERVE=auto, unfenced = TSCSHIM_FENCE=0), interleaved by tscshim ab\n' "$rounds"

load() { cut -d' ' -f1-3 /proc/loadavg; }

# ab over the three variants; its JSON report to $work/NAME.json (and BENCH_PROGRAMS_OUT).
ab3() { # NAME METRIC-NAME REGEX DIRECTION [more ab options] -- COMMAND...
	local name="$1" metric="$2" regex="$3" dir="$4"
	shift 4
	local before after rc=0
	before=$(load)
	TSCSHIM_LIBRARY="$shim" "$tscshim" ab -n "$rounds" --timeout 300 \
		--variant plain:shim=off --variant default:SERVE=auto --variant unfenced:FENCE=0 \
		--metric "$metric:$regex:$dir" --out-dir "$work/ab-$name" --json "$@" >"$work/$name.json" 2>"$work/$name.err" &
	ab_pid=$!
	wait "$ab_pid" || rc=$?
	ab_pid=""
	after=$(load)
	if [ -n "${BENCH_PROGRAMS_OUT:-}" ]; then
		mkdir -p "$BENCH_PROGRAMS_OUT"
		cp "$work/$name.json" "$BENCH_PROGRAMS_OUT/$name.json"
	fi
	if [ "$rc" -ne 0 ]; then
		echo "  $name: tscshim ab failed (exit status $rc):"
		grep -v 'outlier' "$work/$name.err" | sed 's/^/    /' | head -20
	fi
	summary "$work/$name.json" "$metric" "$before" "$after" || true
}

# Per variant: the median, every round, the ratio to plain, the decision, the counter's
# share of the clock calls.
summary() { # JSON METRIC LOAD-BEFORE LOAD-AFTER
	python3 - "$@" <<'EOF'
import json, sys
path, metric, before, after = sys.argv[1:5]
try:
    d = json.load(open(path))
except (OSError, ValueError):
    print("  (no report)")
    sys.exit(1)
comp = {c["variant"]: c for c in d["comparisons"] if c["quantity"] == metric}
rounds = {}
for r in d["detail"]:
    if r.get("ok") and metric in (r.get("metrics") or {}):
        rounds.setdefault(r["side"], []).append(r["metrics"][metric])
def fmt(x):
    return f"{x:.4g}" if abs(x) < 1e6 else f"{x / 1e6:.3g}M"
for v in d["variants"]:
    m = v["metrics"].get(metric, {})
    if not m or m.get("median") is None:
        print(f"  {v['name']:9s} no figure")
        continue
    line = f"  {v['name']:9s} {fmt(m['median']):>8s}"
    c = comp.get(v["name"])
    if c:
        r = c["ratio"]
        ci = f" ({r['low']:.2f}-{r['high']:.2f}, 95%)" if r.get("low") is not None else ""
        line += f"  {r['median']:.2f}x plain{ci}"
    else:
        line += "  (baseline)"
    if v["shim"]:
        t = v["tsc"]
        dec = v.get("decision") or {}
        if t["served"] == 0:
            if dec.get("served") is False:
                line += "  default passes through here (served 0 of %d calls): %s" % (t["total"], dec.get("reason", ""))
            else:
                line += "  NOT SERVED: 0 of %d clock calls from the counter; this side measured the kernel's clock" % t["total"]
        else:
            line += "  served %d of %d calls (%d processes)" % (t["served"], t["total"], t["processes_served"])
    others = [f"{k} {fmt(x['median'])}" for k, x in v["metrics"].items() if k != metric and x.get("median") is not None]
    if others:
        line += "  (medians: " + ", ".join(others) + ")"
    print(line)
    print("            rounds: " + " ".join(fmt(x) for x in rounds.get(v["name"], [])))
print(f"  load average before {before}, after {after}")
EOF
}

skip() { printf '%s: skipped, %s\n' "$1" "$2"; }

for p in "${programs[@]}"; do
	case "$p" in
	fio)
		if ! command -v fio >/dev/null; then skip fio "fio not found (apt-get install fio)"; continue; fi
		# --thread: the job runs as a thread of fio's process, so the shim's counters (written
		# at a normal exit, which fio's forked job processes skip) cover its I/O loop.
		fio_args=(--name=null --ioengine=null --rw=read --bs=4k --size=1g --time_based --runtime=3 --numjobs=1 --thread)
		echo "fio: 4 KiB null-engine IOPS, --clocksource=clock_gettime (higher is better)"
		ab3 fio iops 'IOPS=([0-9.]+[kMG]?)' higher -- fio "${fio_args[@]}" --clocksource=clock_gettime
		# fio's own TSC clock, without the shim: the ceiling fio reaches reading the counter
		# itself (not interleaved with the above: it runs after them).
		cpu=()
		for ((i = 0; i < rounds; i++)); do
			cpu+=("$(fio "${fio_args[@]}" --clocksource=cpu | sed -n 's/.*IOPS=\([0-9.]*[kMG]\{0,1\}\),.*/\1/p' | head -1)")
		done
		echo "  fio's own --clocksource=cpu, plain: ${cpu[*]} (load $(load))"
		;;
	postgres)
		if ! bindir=$(pg_bindir); then skip postgres "PostgreSQL's pg_ctl, initdb, postgres and psql not found (apt-get install postgresql)"; continue; fi
		if [ "$(id -u)" -eq 0 ]; then
			if ! id "$pg_user" >/dev/null 2>&1; then
				useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$pg_user"
				created_user=1
			fi
		else
			pg_user=$(id -un)
		fi
		mkdir "$work/pg" "$work/pg/sock"
		[ "$(id -u)" -ne 0 ] || chown "$pg_user:" "$work/pg" "$work/pg/sock"
		as_pg_user "$bindir/initdb" -D "$work/pg/data" -U "$pg_user" -A trust -E UTF8 --locale=C --no-sync \
			>"$work/pg/initdb.log" 2>&1 || { cat "$work/pg/initdb.log" >&2; skip postgres "initdb failed"; continue; }
		printf '%s\n' "fsync = off" "jit = off" "max_parallel_workers_per_gather = 0" "shared_buffers = 32MB" \
			>>"$work/pg/data/postgresql.conf"
		echo "postgres $("$bindir/postgres" --version | awk '{print $3}'): EXPLAIN (ANALYZE, TIMING ON) - (TIMING OFF) of SELECT count(x) FROM (SELECT generate_series(1, 1000000) AS x) AS s, ms (lower is better)"
		ab3 postgres overhead 'overhead: ([0-9.-]+) ms' lower \
			--metric 'off:timing off: ([0-9.]+) ms:lower' --metric 'on:timing on: ([0-9.]+) ms:lower' \
			-- bash "$here/test/bench-programs.sh" __pg_run "$work" "$bindir" "$pg_user" 10
		rm -rf "$work/pg"
		;;
	node)
		if ! command -v node >/dev/null; then skip node "node not found (apt-get install nodejs)"; continue; fi
		cat >"$work/hrtime.js" <<'EOF'
// process.hrtime.bigint() per call: the best of 10 loops of N calls, after a warm-up.
const N = 2e6;
for (let i = 0; i < 1e6; i++) process.hrtime.bigint();
let best = Infinity;
for (let r = 0; r < 10; r++) {
	const t0 = process.hrtime.bigint();
	for (let i = 0; i < N; i++) process.hrtime.bigint();
	best = Math.min(best, Number(process.hrtime.bigint() - t0) / N);
}
console.log(`ns per call: ${best.toFixed(2)}`);
EOF
		echo "node $(node --version): process.hrtime.bigint(), ns per call (lower is better)"
		ab3 node ns 'ns per call: ([0-9.]+)' lower -- node "$work/hrtime.js"
		;;
	java)
		if ! command -v java >/dev/null || ! command -v javac >/dev/null; then
			skip java "java/javac not found (apt-get install default-jdk-headless)"
			continue
		fi
		mkdir "$work/java"
		javac -d "$work/java" "$here/test/NanoTimeBench.java"
		echo "java $(java -version 2>&1 | head -1 | sed 's/.*"\(.*\)".*/\1/'): System.nanoTime(), ns per call (lower is better)"
		ab3 java ns 'ns per call: ([0-9.]+)' lower -- java -cp "$work/java" NanoTimeBench 10000000
		;;
	esac
done

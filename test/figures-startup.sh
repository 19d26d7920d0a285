#!/usr/bin/env bash
# Start-up figures for doc/evidence/EVIDENCE-STARTUP.md (not a test: nothing is asserted).
#   test/figures-startup.sh hog [N]    N cold starts (no cache) with a busy loop on every CPU:
#                                      how many reach a verdict, and the decision times
#   test/figures-startup.sh hog-ab N OLD.so NEW.so   the same, two builds interleaved start by start
#   test/figures-startup.sh storm [N]  N processes started at once on an empty cache: how
#                                      many measured, were served, passed through
#   test/figures-startup.sh fifo [N]   N cold starts beside a SCHED_FIFO loop on CPU 1 (root)
#   test/figures-startup.sh costs [N]  cold and warm start against an empty preloaded library
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
shim=${SHIM:-"$here/build/libtscshim.so"}
probe="$here/build/test/probe_threads"
mode=${1:-hog}
n=${2:-100}
tmp=$(mktemp -d)
hogs=()
cleanup() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
export TSCSHIM_SYSTEM_RECORD=off

decisions() { # summarise the verbose lines in $1
	python3 - "$1" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
dec = [l for l in lines if "decided in" in l]
us = sorted(int(re.search(r"decided in (\d+) us", l).group(1)) for l in dec)
served = sum("serving from the TSC" in l for l in dec)
inconclusive = sum("inconclusive" in l for l in dec)
measured = sum("measured now" in l for l in dec)
cached = sum("from the cache" in l for l in dec)
q = lambda p: us[min(len(us) - 1, int(p * len(us)))] if us else 0
print(f"starts {len(dec)}: measured {measured}, from the cache {cached}; served {served}, "
      f"inconclusive {inconclusive}, other pass-through {len(dec) - served - inconclusive}; "
      f"decided in median {q(0.5)} us, p90 {q(0.9)} us, max {us[-1] if us else 0} us")
PY
}

cold_starts() { # N cold starts, their verbose lines into $tmp/log
	sleep 0.5
	for i in $(seq "$1"); do
		TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 LD_PRELOAD="$shim" "$probe" >/dev/null 2>>"$tmp/log"
	done
}

case $mode in
hog)
	for cpu in $(seq 0 $(($(nproc) - 1))); do
		timeout 600 taskset -c "$cpu" bash -c 'while :; do :; done' &
		hogs+=($!)
	done
	cold_starts "$n"
	echo "cold starts with a busy loop on each of $(nproc) CPUs:"
	decisions "$tmp/log"
	;;
hog-ab)
	old=$3 new=$4
	for cpu in $(seq 0 $(($(nproc) - 1))); do
		timeout 900 taskset -c "$cpu" bash -c 'while :; do :; done' &
		hogs+=($!)
	done
	sleep 0.5
	for i in $(seq "$n"); do
		TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 LD_PRELOAD="$old" "$probe" >/dev/null 2>>"$tmp/old"
		TSCSHIM_CACHE=off TSCSHIM_VERBOSE=1 LD_PRELOAD="$new" "$probe" >/dev/null 2>>"$tmp/new"
	done
	echo "cold starts with a busy loop on each of $(nproc) CPUs, $old:"
	decisions "$tmp/old"
	echo "the same, $new:"
	decisions "$tmp/new"
	;;
storm)
	for i in $(seq "$n"); do
		TSCSHIM_CACHE="$tmp/cache" TSCSHIM_VERBOSE=1 LD_PRELOAD="$shim" "$probe" >/dev/null 2>>"$tmp/log" &
	done
	wait
	echo "$n starts at once, empty cache:"
	decisions "$tmp/log"
	;;
fifo)
	timeout 60 chrt -f 50 taskset -c 1 bash -c 'while :; do :; done' &
	hogs+=($!)
	cold_starts "$n"
	echo "cold starts beside a SCHED_FIFO loop on CPU 1 (sched_rt_runtime_us=$(cat /proc/sys/kernel/sched_rt_runtime_us)):"
	decisions "$tmp/log"
	;;
costs)
	printf 'void tscshim_figures_empty(void) {}\n' >"$tmp/empty.c"
	cc -shared -fPIC -o "$tmp/libempty.so" "$tmp/empty.c"
	python3 - "$shim" "$tmp/libempty.so" "$n" "$tmp/cache" <<'PY'
import os, statistics, subprocess, sys, time
shim, empty, runs, cache = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = dict(os.environ); base.pop("LD_PRELOAD", None)
def timed(env):
    t = time.perf_counter(); subprocess.run(["/bin/true"], env=env, check=True)
    return time.perf_counter() - t
warm = dict(base, LD_PRELOAD=shim, TSCSHIM_CACHE=cache)
subprocess.run(["/bin/true"], env=warm, check=True)
variants = (("empty preloaded library", dict(base, LD_PRELOAD=empty)),
            ("shim, warm cache", warm),
            ("shim, cold (TSCSHIM_CACHE=off)", dict(base, LD_PRELOAD=shim, TSCSHIM_CACHE="off")))
for name, env in variants:
    d = []
    for _ in range(runs):
        a = timed(dict(base, LD_PRELOAD=empty)); b = timed(env); d.append((b - a) * 1e3)
    d.sort()
    print(f"{name}: added to /bin/true with an empty preloaded library: median {statistics.median(d):.3f} ms, "
          f"p10 {d[len(d)//10]:.3f}, p90 {d[-len(d)//10-1]:.3f} ({runs} pairs)")
PY
	;;
esac

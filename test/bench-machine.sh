#!/usr/bin/env bash
# A whole machine with the shim in every process: a shell-heavy workload (ROUNDS pairs of
# LOOP `date` and LOOP `sh -c` runs, then a build of this project) with LD_PRELOAD set
# for every process it starts, against the same workload with an empty object preloaded.
# The two alternate, pair by pair, so that the machine's load hits both alike; the
# figure is the median of the per-pair ratios (shim / empty), and the wall times.
#
# usage: test/bench-machine.sh [PAIRS] [LOOP]      (make bench-machine: 5 pairs, 300)
# As root it preloads against a machine-wide record written for the run (the set-up the
# install guide recommends); otherwise against a warmed per-user cache.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pairs=${1:-5}
loop=${2:-300}
shim="$here/build/libtscshim.so"
floor="$here/build/libtscshim-floor.so"
work=$(mktemp -d /tmp/tscshim-machine.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"

unset TSCSHIM_DISABLE TSCSHIM_SERVE TSCSHIM_STATS TSCSHIM_VERBOSE TSCSHIM_DECIDE_AFTER
if [ "$(id -u)" -eq 0 ]; then
	export TSCSHIM_SYSTEM_RECORD="$work/record" TSCSHIM_CACHE=off
	TSCSHIM_LIBRARY="$shim" "$here/build/tscshim" calib --save >/dev/null 2>&1 ||
		{ echo "bench-machine: calib --save failed" >&2; exit 1; }
	kind="machine-wide record"
else
	export TSCSHIM_SYSTEM_RECORD=off TSCSHIM_CACHE="$work/cache"
	LD_PRELOAD="$shim" /bin/date >/dev/null
	kind="per-user cache"
fi

# The project's sources, once, outside the tree (no build directory, no .git).
tar -C "$here" --exclude='./build*' --exclude=./.git -cf - . | (mkdir -p "$work/src" && tar -C "$work/src" -xf -)

now() { date +%s.%N; }
workload() { # PRELOAD
	local preload="$1"
	LD_PRELOAD="$preload" bash -c '
		for ((i = 0; i < '"$loop"'; i++)); do date >/dev/null; sh -c ":"; done
		make -s -C "'"$work/src"'" clean >/dev/null
		make -s -j2 -C "'"$work/src"'" all >/dev/null 2>&1'
}

workload "$floor" # warm the page cache and the build's inputs
ratios=()
printf '%-6s %12s %12s %8s\n' pair empty_s shim_s ratio
for ((p = 1; p <= pairs; p++)); do
	a=$(now); workload "$floor"; b=$(now)
	workload "$shim"; c=$(now)
	t_floor=$(echo "$b - $a" | bc -l)
	t_shim=$(echo "$c - $b" | bc -l)
	r=$(echo "$t_shim / $t_floor" | bc -l)
	ratios+=("$r")
	printf '%-6s %12.3f %12.3f %8.4f\n' "$p" "$t_floor" "$t_shim" "$r"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
printf 'machine: %s; clocksource %s; %s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
	"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	"$(grep -qw rdtscp /proc/cpuinfo && echo rdtscp || echo 'no rdtscp')"
printf 'every process preloaded (%s): %d x (%d date + %d sh -c + a build of tscshim); median ratio shim/empty %.4f\n' \
	"$kind" "$pairs" "$loop" "$loop" "$median"

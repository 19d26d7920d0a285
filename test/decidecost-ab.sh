#!/usr/bin/env bash
# What a process pays for its decision, and for being loaded, before and after a change,
# as a user of a whole machine pays it: no TSCSHIM_ variable set, the machine-wide record
# at its default path. For doc/STARTUP.md; a measurement, nothing asserted. As root.
#   test/decidecost-ab.sh ROUNDS NAME=BUILD_DIR ...
# Each BUILD_DIR holds a build (libtscshim.so, tscshim). Each build gets its own record,
# written by its own `tscshim calib --save` into a /run of its own (a private mount
# namespace, a tmpfs), so that each decides from its own build's costs. Then ROUNDS rounds,
# the builds in turn within each: one run of ../shared/tools/decidecost.c (2,000
# CLOCK_MONOTONIC reads; the 1,000th decides) and one of startcost.c (/bin/true: the own
# start-up over an empty preloaded object, STARTCOST_RUNS runs, default 50). Prints per build the min / median /
# max of: the deciding read (us), every read's excess summed (us), the page faults during
# the reads, and startcost's own median (us).
set -u
[ $# -ge 2 ] || { echo "usage: $0 ROUNDS NAME=BUILD_DIR ..." >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (mount namespaces, root's record)" >&2; exit 2; }
rounds=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
tools=$here/../shared/tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cc -O2 -o "$work/decidecost" "$tools/decidecost.c" || exit 1
cc -O2 -o "$work/startcost" "$tools/startcost.c" || exit 1

names=()
for arg in "$@"; do
	name=${arg%%=*} dir=${arg#*=}
	names+=("$name")
	mkdir -p "$work/$name/run"
	echo "$dir" >"$work/$name/dir"
	# The record, saved once into this build's /run.
	unshare -m --propagation private sh -c '
		mount --bind "$1" /run && "$2/tscshim" calib --save --calibrate-us 200000 >/dev/null 2>&1' \
		_ "$work/$name/run" "$dir" || { echo "$0: $name: calib --save failed" >&2; exit 1; }
done

# One run in BUILD's namespace: COMMAND...
in_build() { # NAME COMMAND...
	local name=$1 dir
	dir=$(cat "$work/$name/dir")
	shift
	unshare -m --propagation private sh -c 'mount --bind "$1" /run && shift && exec "$@"' \
		_ "$work/$name/run" "$@"
}

for r in $(seq "$rounds"); do
	for name in "${names[@]}"; do
		dir=$(cat "$work/$name/dir")
		in_build "$name" env LD_PRELOAD="$dir/libtscshim.so" "$work/decidecost" 2000 >>"$work/$name/decide"
		in_build "$name" "$work/startcost" "${STARTCOST_RUNS:-50}" "$dir/libtscshim.so" >>"$work/$name/start"
	done
done

stats() { sort -n | awk '{v[NR]=$1} END {if (NR) printf "%.1f / %.1f / %.1f", v[1], v[int((NR+1)/2)], v[NR]; else printf "-"}'; }
echo "rounds: $rounds; $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
printf '%-12s %-26s %-26s %-14s %s\n' build "deciding read, us" "excess summed, us" "faults" "start-up over empty, us"
for name in "${names[@]}"; do
	d=$work/$name/decide
	deciding=$(sed -n 's/.*dearest=\([0-9]*\):\([0-9.]*\)us.*/\1 \2/p' "$d" | awk '$1 == 1000 {print $2}' | stats)
	excess=$(sed -n 's/.* excess_us=\([0-9.]*\).*/\1/p' "$d" | stats)
	faults=$(sed -n 's/.* faults=\([0-9]*\).*/\1/p' "$d" | stats)
	start=$(sed -n 's/.* own_median_us=\([-0-9.]*\).*/\1/p' "$work/$name/start" | stats)
	printf '%-12s %-26s %-26s %-14s %s\n' "$name" "$deciding" "$excess" "$faults" "$start"
done

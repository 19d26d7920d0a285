#!/usr/bin/env bash
# The read that decides, in each case of doc/STARTUP.md's table, for one or more builds of
# the shim given side by side (before and after a change), in one run, interleaved:
#   test/figures-decide.sh [N] GLIBC_SHIM[:MUSL_SHIM] ...
# Each case starts N processes (default 30) of probe_due (2000 CLOCK_MONOTONIC reads,
# each timed with rdtscp) per build and prints the due read (the 1000th) less the
# median read, then the dearest of the five reads before it less the median read
# (they prepare the decision, a part each): min, median and max in us. As root (the machine-wide record must be
# root's). Not a test: a measurement for the docs; nothing asserted.
set -u
n=30
[[ "${1:-}" =~ ^[0-9]+$ ]] && { n=$1; shift; }
[ $# -ge 1 ] || { echo "usage: $0 [N] GLIBC_SHIM[:MUSL_SHIM] ..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
probe=$here/build/test/probe_due
musl_probe=$here/build-musl/test/probe_due
tscshim=$here/build/tscshim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

stats() { sort -n | awk '{v[NR]=$1} END {if (NR) printf "%7.1f %7.1f %7.1f", v[1], v[int((NR+1)/2)], v[NR]; else printf "%23s", "-"}'; }

# One case for one build: N processes, "min median max" of the due read's extra us, then
# the same of the dearest of the five reads before it (which prepare the decision).
measure() { # PROGRAM LIBRARY ENV...
	local program=$1 lib=$2 out
	shift 2
	out=$(for _ in $(seq "$n"); do
		env "$@" LD_PRELOAD="$lib" "$program" 2000 2>/dev/null
	done)
	printf '%s ; %s' "$(sed -n 's/.* extra_us=\([-0-9.]*\).*/\1/p' <<<"$out" | stats)" \
		"$(sed -n 's/.* before_extra_us=\([-0-9.]*\).*/\1/p' <<<"$out" | stats)"
}

row() { # NAME SETUP-FUNCTION PROGRAM-KIND ENV...
	local name=$1 setup=$2 kind=$3
	shift 3
	printf '%-58s' "$name"
	local i=0
	for spec in "${builds[@]}"; do
		i=$((i + 1))
		local glibc=${spec%%:*} musl=${spec#*:} program=$probe lib
		lib=$glibc
		if [ "$kind" = musl ]; then
			[ "$musl" != "$spec" ] && [ -x "$musl_probe" ] || { printf ' | %49s' "-"; continue; }
			program=$musl_probe lib=$musl
		fi
		"$setup" "$i" "$glibc" "$musl"
		printf ' | %s' "$(measure "$program" "$lib" TSCSHIM_SYSTEM_RECORD="$work/rec$i/record" \
			TSCSHIM_CACHE="$work/cache$i" "$@")"
	done
	echo
}

# Setups: each build gets its own record directory and cache.
fresh_record() { # I GLIBC MUSL: a record with this build's costs, no cache
	rm -rf "$work/rec$1" "$work/cache$1"*
	mkdir -m 755 "$work/rec$1"
	TSCSHIM_SYSTEM_RECORD="$work/rec$1/record" TSCSHIM_LIBRARY="$2" "$tscshim" calib --save >/dev/null 2>&1
}
cache_only() { # a per-user cache with this build's costs (a cold start writes it), no record
	rm -rf "$work/rec$1" "$work/cache$1"*
	TSCSHIM_SYSTEM_RECORD=off TSCSHIM_CACHE="$work/cache$1" LD_PRELOAD="$2" "$probe" 10 >/dev/null 2>&1
}
other_boot() { # the record of another boot, with fresh times
	fresh_record "$@"
	sed -i 's/^boot_id=.*/boot_id=00000000-0000-0000-0000-000000000000/' "$work/rec$1/record"
	python3 - "$work/rec$1/record" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().splitlines(True)[:-1]
body = "".join(lines).encode()
h = 0xcbf29ce484222325
for b in body:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open(p, "wb").write(body + b"checksum=%016x\n" % h)
PY
}
empty_record() { fresh_record "$@"; : >"$work/rec$1/record"; }
open_record() { fresh_record "$@"; chmod 0666 "$work/rec$1/record"; }
alternating() { # a cache that a musl process wrote last
	cache_only "$@"
	[ "$3" != "$2" ] && TSCSHIM_SYSTEM_RECORD=off TSCSHIM_CACHE="$work/cache$1" LD_PRELOAD="$3" "$musl_probe" 10 >/dev/null 2>&1
	true
}

builds=("$@")
printf '%-58s' "case (us over the median read: the due read ; the dearest of the 5 before it, min median max)"
for spec in "${builds[@]}"; do printf ' | %49s' "$(basename "$(dirname "${spec%%:*}")")/$(basename "${spec%%:*}")"; done
echo
row "machine-wide record with this build's costs" fresh_record glibc TSCSHIM_CACHE=off
row "per-user cache with this build's costs" cache_only glibc
row "musl, the record holding the glibc build's costs, no cache" fresh_record musl TSCSHIM_CACHE=off
row "record of another boot (fresh times), no cache" other_boot glibc TSCSHIM_CACHE=off
row "record of another boot (fresh times), a cache" other_boot glibc
row "record empty, a cache" empty_record glibc
row "record writable by others, a cache" open_record glibc
row "glibc after musl on one per-user cache" alternating glibc
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
	printf '%-58s' "no /proc, a record bound"
	i=0
	for spec in "${builds[@]}"; do
		i=$((i + 1))
		fresh_record "$i" "${spec%%:*}" ""
		printf ' | %s' "$(for _ in $(seq "$n"); do
			unshare -m sh -c "mount -t tmpfs none /proc && env TSCSHIM_SYSTEM_RECORD='$work/rec$i/record' \
				TSCSHIM_CACHE='$work/cache$i' LD_PRELOAD='${spec%%:*}' '$probe' 2000" 2>/dev/null
		done | sed -n 's/.* extra_us=\([-0-9.]*\).*/\1/p' | stats) ; $(for _ in $(seq "$n"); do
			unshare -m sh -c "mount -t tmpfs none /proc && env TSCSHIM_SYSTEM_RECORD='$work/rec$i/record' \
				TSCSHIM_CACHE='$work/cache$i' LD_PRELOAD='${spec%%:*}' '$probe' 2000" 2>/dev/null
		done | sed -n 's/.* before_extra_us=\([-0-9.]*\).*/\1/p' | stats)"
	done
	echo
fi

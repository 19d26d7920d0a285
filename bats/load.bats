#!/usr/bin/env bats
# Load: what every process pays for having the shim preloaded. The real functions come
# from the loader's tables, never from dlsym, unless a wrapper of them sits between the
# shim and the C library; TSCSHIM_DISABLE=1 alone parses nothing; the load path's small
# buffers defer, never break; a process that reads no clock touches no page of the
# shim's code beyond the load path's (test/lib_page_touch.c counts them: a count, unlike
# a time, is exact on a shared machine). The costs themselves are figures (make bench-startup), not assertions.
bats_require_minimum_version 1.5.0
load helpers

PROBE="$ROOT/build/test/probe_clock"
REFCLOCK="$ROOT/build/test/librefclock.so"
PAGE_TOUCH="$ROOT/build/test/libpage_touch.so"

setup() {
	export TSCSHIM_CACHE="$BATS_TEST_TMPDIR/cache"
}

# What the loader looked up after the shim's constructor began: with every binding of the
# program made at load (LD_BIND_NOW), a look-up of these names there is a dlsym.
lookups_after_init() {
	sed -n '/calling init: .*libtscshim/,$p' <<<"$output" |
		grep -E 'symbol=(clock_gettime|gettimeofday|timespec_get);' || true
}

@test "load: the real functions come from the loader's tables: no dlsym at load nor at the first calls" {
	require_reliable
	LD_PRELOAD="$SHIM" "$PROBE" loop 1 >/dev/null # a warm cache: the decision at the first read
	run env LD_BIND_NOW=1 LD_DEBUG=symbols,libs TSCSHIM_VERBOSE=2 LD_PRELOAD="$SHIM" "$PROBE" passthrough
	[ "$status" -eq 0 ]
	[[ "$output" == *"passthrough ok"* ]]
	[[ "$output" == *"real functions read from the loader's tables"* ]]
	[[ "$output" == *"calling init: "*"libtscshim"* ]]
	after=$(lookups_after_init)
	[ -z "$after" ] || { echo "looked up after init: $after"; false; }
}

@test "load: a wrapper preloaded after the shim is what the shim calls (dlsym's exact answer)" {
	run env LD_BIND_NOW=1 LD_DEBUG=symbols,libs TSCSHIM_VERBOSE=2 TSCSHIM_CLOCKS=monotonic \
		LD_PRELOAD="$SHIM:$REFCLOCK" "$PROBE" passthrough
	[ "$status" -eq 0 ]
	[[ "$output" == *"passthrough ok"* ]]
	[[ "$output" == *"real functions found with dlsym: a library between the shim and the C library may define one"* ]]
	# dlsym from the shim starts after it: at the wrapper.
	after=$(lookups_after_init)
	[[ "$after" == *"symbol=clock_gettime;  lookup in file=$REFCLOCK"* ]]
}

@test "load: a wrapper preloaded before the shim: no loop, the shim's next is the C library" {
	require_reliable
	run env TSCSHIM_VERBOSE=2 LD_PRELOAD="$REFCLOCK:$SHIM" "$PROBE" compare 200 1063
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"real functions read from the loader's tables"* ]]
	run env LD_PRELOAD="$REFCLOCK:$SHIM" "$PROBE" passthrough
	[ "$status" -eq 0 ]
}

@test "load: TSCSHIM_DISABLE=1 alone passes every call through, with nothing parsed or looked for" {
	require_command strace strace
	unset TSCSHIM_CACHE
	run env TSCSHIM_DISABLE=1 LD_PRELOAD="$SHIM" strace -f -e trace=newfstatat,stat,openat,access,faccessat \
		"$PROBE" loop 10
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"+++ exited with 0 +++"* ]]
	# No record or cache looked at, at load or at the first read.
	[[ "$output" != *"/run/tscshim"* && "$output" != *"tscshim-"*".cache"* && "$output" != *"tscshim.cache"* ]]
	# What the status says after a first read is what it says when the variables were
	# parsed (another variable beside it): the defaults of the clocks served and the fence.
	run env TSCSHIM_DISABLE=1 LD_PRELOAD="$SHIM" "$PROBE" status read
	[ "$status" -eq 0 ]
	alone=$output
	run env TSCSHIM_DISABLE=1 TSCSHIM_VERBOSE=0 LD_PRELOAD="$SHIM" "$PROBE" status read
	[ "$status" -eq 0 ]
	[[ "$alone" == *"active=0"*"reason=TSCSHIM_DISABLE=1"* ]]
	[ "$(grep -E '^(active|reason|served|fenced)=' <<<"$alone")" = "$(grep -E '^(active|reason|served|fenced)=' <<<"$output")" ] ||
		{ echo "alone: $alone"; echo "beside another: $output"; false; }
}

@test "load: TSCSHIM_DISABLE=1 beside another variable: a bad value is still reported" {
	run --separate-stderr env TSCSHIM_DISABLE=1 TSCSHIM_FENCE=7 LD_PRELOAD="$SHIM" "$PROBE" loop 1
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"TSCSHIM_FENCE"* ]]
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
}

@test "load: a default cache path too long for the load path's stack buffer is checked at load all the same" {
	require_reliable
	unset TSCSHIM_CACHE
	long="$BATS_TEST_TMPDIR/$(printf 'd%.0s' {1..120})/$(printf 'e%.0s' {1..120})"
	mkdir -p "$long"
	chmod 700 "$long"
	run env XDG_RUNTIME_DIR="$long" TSCSHIM_VERBOSE=1 TSCSHIM_SYSTEM_RECORD=off LD_PRELOAD="$SHIM" \
		"$PROBE" compare 200 1063
	echo "$output"
	[ "$status" -eq 0 ]
	# Nothing recorded: the load measured (the read never does), and kept it.
	[[ "$output" == *"at load (no record passed the checks at load)"* ]]
	[ -s "$long/tscshim.cache" ]
	# The next start finds it at load, and decides from it at its first read.
	run env XDG_RUNTIME_DIR="$long" TSCSHIM_VERBOSE=1 TSCSHIM_SYSTEM_RECORD=off LD_PRELOAD="$SHIM" \
		"$PROBE" compare 200 1063
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"from the cache"*"at the first clock read"* ]]
}

@test "load: a library linked at a high base and loaded below it, between the shim and the C library" {
	require_command cc gcc
	cd "$BATS_TEST_TMPDIR"
	# Two libraries linked at the same fixed base: the loader puts the second one
	# elsewhere, below its link base, so its load bias wraps around. The base lies more
	# than 1 GiB above any address where ASLR puts libraries (below the stack's 16 GiB
	# random gap, under 0x7ffc00000000): with a bias under 1 GiB either way the tables'
	# addresses cannot be told relocated from not (calib/next_symbol.c: at), and the shim
	# rightly asks dlsym. At 0x7ff000000000 that happened about one run in 500, when ASLR
	# put the second library within 1 GiB of that base.
	printf 'int one(void) { return 1; }\n' >one.c
	printf 'int two(void) { return 2; }\n' >two.c
	printf '#include <stdio.h>\n#include <time.h>\nint one(void); int two(void);\nint main(void) { struct timespec ts; int r = clock_gettime(CLOCK_MONOTONIC, &ts); printf("%%d %%d\\n", one() + two(), r); return 0; }\n' >main.c
	cc -shared -fPIC -Wl,-Ttext-segment=0x7ffe00000000 -o libone.so one.c
	cc -shared -fPIC -Wl,-Ttext-segment=0x7ffe00000000 -o libtwo.so two.c
	cc -o main main.c -L. -lone -ltwo -Wl,-rpath,"$BATS_TEST_TMPDIR"
	run ./main
	[ "$status" -eq 0 ]
	[ "$output" = "3 0" ]
	run env TSCSHIM_VERBOSE=2 LD_PRELOAD="$SHIM" ./main
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 0"* ]]
	[[ "$output" == *"real functions read from the loader's tables"* ]]
}

# The pages of the shim's code a run of /bin/true touched, as test/lib_page_touch.c
# reports them ("0,0x1"), preloaded after the shim: the load, the program and the exit.
# With no variable of the shim's but those given (those helpers.bash exports are unset).
pages_touched() { # ENV=VALUE...
	run --separate-stderr env -u TSCSHIM_SYSTEM_RECORD -u TSCSHIM_SERVE -u TSCSHIM_DECIDE_AFTER -u TSCSHIM_ESTIMATE_BUDGET_US "$@" LD_PRELOAD="$SHIM $PAGE_TOUCH" /bin/true
	echo "$*: status $status: $stderr" >&3
	[ "$status" -eq 0 ]
	[[ "$stderr" =~ page-touch:\ pages=[0-9]+\ touched=[0-9]+\ list=([0-9a-fx,]*) ]]
	touched=${BASH_REMATCH[1]}
}

# The last page of the image that holds the load path (shim/load_path.ld): the loader's
# tables and the load path's code lie on pages 0 to this one, everything else beyond.
load_path_last_page() {
	local address size
	read -r address size < <(readelf -SW "$SHIM" | awk '{ for (i = 1; i <= NF; i++)
		if ($i == ".text.tscshim_load") print $(i + 2), $(i + 4) }')
	[ -n "$size" ] && echo $(( (0x$address + 0x$size - 1) / 4096 ))
}

# Each of the comma-separated page numbers ("0,0x1") at most $2.
pages_at_most() { # LIST LAST
	local page
	for page in ${1//,/ }; do
		(( page <= $2 )) || return 1
	done
}

@test "load: a process that reads no clock touches no page of the shim's code beyond the load path's" {
	# The tables the loader reads and the load path's code come first in the image
	# (shim/load_path.ld, calib/load_page.h); the C runtime's start files, whose _init
	# and _fini sat on pages of their own, are not linked in. A record for the
	# no-variable case: without one the load would measure (a cold start), with every
	# signal blocked, which this probe cannot watch.
	unset TSCSHIM_CACHE
	last=$(load_path_last_page)
	echo "the load path ends on page $last"
	[[ "$last" =~ ^[0-9]+$ ]] && (( last <= 2 ))
	runtime="$BATS_TEST_TMPDIR/runtime"
	mkdir -m 700 "$runtime"
	run env XDG_RUNTIME_DIR="$runtime" TSCSHIM_SYSTEM_RECORD=off LD_PRELOAD="$SHIM" "$PROBE" loop 1
	[ "$status" -eq 0 ]
	[ -s "$runtime/tscshim.cache" ]
	pages_touched XDG_RUNTIME_DIR="$runtime"
	pages_at_most "$touched" "$last" || { echo "no variable: touched $touched"; false; }
	pages_touched TSCSHIM_DISABLE=1
	pages_at_most "$touched" "$last" || { echo "TSCSHIM_DISABLE=1: touched $touched"; false; }
	# The probe sees a page beyond them when there is one: with a variable set, the load
	# parses the options, whose code lies further on.
	pages_touched XDG_RUNTIME_DIR="$runtime" TSCSHIM_VERBOSE=0
	! pages_at_most "$touched" "$last" || { echo "with a variable: touched only $touched"; false; }
}

# The mean page faults of RUNS runs of /bin/true, ENV set (the last word: the library).
faults_of_true() { # RUNS LIBRARY ENV...
	python3 - "$@" <<'PY'
import os, subprocess, sys
runs, library, settings = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
env = dict(os.environ, LD_PRELOAD=library)
for s in settings:
    k, v = s.split("=", 1)
    env[k] = v
total = 0
for _ in range(runs):
    p = subprocess.Popen(["/bin/true"], env=env)
    _, status, usage = os.wait4(p.pid, 0)
    assert status == 0
    total += usage.ru_minflt + usage.ru_majflt
print("%.2f" % (total / runs))
PY
}

@test "load: a process that reads no clock takes no page fault more than an empty object, with a machine-wide record" {
	# The load checks that the record was made this boot from the boot's time, read by two
	# system calls: through the vDSO, its first read faulted in the vvar page (and the
	# pvclock page under kvm-clock), 30-60 us on a microVM, in every process a machine
	# starts, most of which never read a clock (doc/STARTUP.md). No variable set (a set one
	# makes the load parse the options, on a page of its own): the record at its default
	# path, in a private mount namespace with a /run of its own. Means over 20 runs each.
	require_default_setup
	export -f faults_of_true
	run unshare -m --propagation private bash -c '
		mount -t tmpfs -o mode=0755 tmpfs /run || exit 3
		"$1" calib --save --calibrate-us 20000 >/dev/null 2>&1 || exit 4
		[ -L /run/tscshim/calibration ] || exit 5
		echo "$(faults_of_true 20 "$2") $(faults_of_true 20 "$3")"' _ "$TSCSHIM" \
		"$ROOT/build/libtscshim-floor.so" "$SHIM"
	echo "$output"
	[ "$status" -eq 0 ]
	read -r empty shim <<<"$output"
	echo "page faults of /bin/true: empty object $empty, the shim with a record $shim"
	python3 -c "import sys; sys.exit(0 if $shim <= $empty + 0.9 else 1)"
}

# The functions a decision at a read runs (callgrind, from the due read's
# gate_decide_if_due down), ENV set: one name a line. Callgrind names the object of code
# in .text alone: the shim's in its own sections shows as "???" (the test below keeps only
# the names the shim's symbol table has).
decision_functions() { # ENV...
	rm -f "$BATS_TEST_TMPDIR"/cg.*
	valgrind --tool=callgrind --trace-children=yes --toggle-collect=gate_decide_if_due \
		--callgrind-out-file="$BATS_TEST_TMPDIR/cg.%p" env "$@" LD_PRELOAD="$SHIM" TSCSHIM_DECIDE_AFTER=20 \
		"$ROOT/build/test/probe_clock" loop 20 >/dev/null 2>&1
	local f
	for f in "$BATS_TEST_TMPDIR"/cg.*; do
		callgrind_annotate --threshold=100 "$f" 2>/dev/null
	done | grep -E 'libtscshim\.so\]|\[\?\?\?\]$' | sed 's/.*:\([A-Za-z_0-9.]*\).* \[.*/\1/' | sort -u
}

@test "load: the code a decision runs lies on the load path's pages and the decision's own, not over .text" {
	# Before: 53 functions over 16 pages of code (a first touch of each costs a guest
	# whose host fills its tables lazily about as much as a fault).
	require_reliable
	require_command valgrind valgrind
	require_command callgrind_annotate valgrind
	warm_cache
	local save="$BATS_TEST_TMPDIR/record" ranges names outside
	# The two sections' ranges, and each function's address.
	ranges=$(readelf -SW "$SHIM" |
		sed -n 's/.*\.text\.tscshim_\(load\|decision\) *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\2 \3/p')
	echo "$ranges"
	[ "$(wc -l <<<"$ranges")" -eq 2 ]
	names=$( (decision_functions TSCSHIM_SERVE=always; decision_functions TSCSHIM_SERVE=auto) | sort -u)
	if [ "$(id -u)" -eq 0 ]; then # and from a machine-wide record (root's)
		save_record_for_test
		names=$( (echo "$names"; decision_functions TSCSHIM_SYSTEM_RECORD="$record" TSCSHIM_CACHE=off) | sort -u)
		grep -qx safefile_read_link <<<"$names"
	fi
	echo "decision runs: $(tr '\n' ' ' <<<"$names")"
	[ "$(wc -l <<<"$names")" -ge 20 ]
	outside=$(nm "$SHIM" | awk 'NF==3 && ($2=="t"||$2=="T") {print $1, $3}' | python3 -c '
import sys
ranges = [tuple(int(x, 16) for x in l.split()) for l in sys.argv[1].splitlines()]
names = set(sys.argv[2].split())
# The entry points stay with the hot path; the compiler runtime is not ours to place.
keep = {"clock_gettime", "clock_gettime_undecided", "__popcountdi2", "__udivti3"}
for line in sys.stdin:
    addr, name = line.split()
    if name in names and name not in keep and not any(a <= int(addr, 16) < a + n for a, n in ranges):
        print(name)
' "$ranges" "$names")
	echo "outside: $outside"
	[ -z "$outside" ]
	# And the decision's own section on few pages: 9 since the machine-wide record's
	# read (safefile_read_link and its target's check) joined it, which lay in .text and
	# cost every decision from that record a fault of its own (seen with perf trace).
	local size
	size=$(readelf -SW "$SHIM" | sed -n 's/.*\.text\.tscshim_decision *PROGBITS *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\).*/\1/p')
	[ $((0x$size)) -le $((9 * 4096)) ]
}

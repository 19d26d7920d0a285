# Shared by the bats files: paths to what `make` built.
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
TSCSHIM="$ROOT/build/tscshim"
SHIM="$ROOT/build/libtscshim.so"
# The shim with the test hooks (shim/test_points.h: writers held at chosen points, costs
# stood in), and the probe of the decision's read count.
HOOKS="$ROOT/build/test/libtscshim-hooks.so"
LAZY="$ROOT/build/test/probe_lazy"
# The default error bound, and one step (1/16) a kernel read may stand still.
BOUND=1063
# Short calibrations keep the suite fast; the figures are not what these tests check.
QUICK=(--calibrate-us 20000)

# A tool that only some tests need (README: the tests need bats, jq and python3): the test
# is skipped where it is missing, naming the Debian package that installs it.
require_command() { # COMMAND PACKAGE
	command -v "$1" >/dev/null || skip "$1 is not installed (apt-get install $2)"
}

# The shim must serve where the estimator says the machine is reliable; elsewhere the
# serving tests have nothing to check and say so.
# A test of what a machine without a TSCSHIM_ variable does, its record at the default path
# in a /run of its own (a private mount namespace): root, unshare, a reliable TSC, and every
# TSCSHIM_ variable the suite set unset.
require_default_setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (a /run of its own in a mount namespace, root's record)"
	require_command unshare util-linux
	require_reliable
	local v
	for v in $(compgen -e | grep '^TSCSHIM_'); do unset "$v"; done
}

require_reliable() {
	"$TSCSHIM" calib --calibrate-us 20000 >/dev/null 2>&1 || skip "this machine's TSC is not reliable"
}

# A bad invocation of the command: exit 2, exactly one line on stderr naming WHAT,
# nothing on stdout. Needs `bats_require_minimum_version 1.5.0` in the calling file.
usage_error() { # WHAT ARGS...
	local what="$1"
	shift
	run --separate-stderr "$TSCSHIM" "$@"
	echo "status=$status stderr=$stderr"
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	[[ "$stderr" == *"$what"* ]]
}

# The machine's own state stays out of every test. A machine-wide record on the test
# machine (/run/tscshim/calibration, which the documented unit writes at every boot with
# `tscshim calib --save`) would answer for every test, and a per-user cache an earlier run
# left (/tmp/tscshim-<uid>.cache, or in $XDG_RUNTIME_DIR) would make a start warm or cold
# by chance. So the record's path is one of the test's own, where nothing is unless a test
# writes it (the tests about the record write their own and name it); the cache is the
# file's own, in TSCSHIM_CACHE (most files set theirs in setup) and at the default path
# (a runtime directory of the file's own), for the tests that unset TSCSHIM_CACHE. A test
# that clears the environment (env -i, or unsets these) sets what it needs itself, or
# holds with and without a record at the default path (bats/lazy.bats, "no variable").
TEST_STATE_DIR="${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-${BATS_RUN_TMPDIR:-/nonexistent}}}"
export TSCSHIM_SYSTEM_RECORD="$TEST_STATE_DIR/no-system-record/calibration"
if [ -n "${BATS_FILE_TMPDIR:-}" ]; then
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
	export XDG_RUNTIME_DIR="$BATS_FILE_TMPDIR/runtime"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi

# On a host whose vDSO reads the clock about as cheaply as the counter path, the benefit
# gate passes through: the tests of the counter path force it to serve, or they would
# quietly test the kernel's clock. The benefit gate's own tests set TSCSHIM_SERVE=auto.
export TSCSHIM_SERVE=always
# Every start that measures gets a generous estimate budget (the default is 20 ms): on a
# 2-CPU machine shared with other work the estimator's second thread may not run at all
# within 20 ms, the estimate ends inconclusive ("0 loops") and the process passes through,
# which is the shim's right answer there but not what a test of anything else checks. The
# tests of the budget itself set it.
export TSCSHIM_ESTIMATE_BUDGET_US=500000
# Likewise the decision: by default it waits for a thousand reads, which most test
# programs never make; the tests decide at the first read, as a long-lived program's
# thousandth would. The tests of the read count set it themselves.
export TSCSHIM_DECIDE_AFTER=1

# A consistent record in the per-user cache ($PROBE: the suite's probe), so that the next start is warm: a cold start
# of LIBRARY (default the shim) with a generous estimate budget, again where the estimate
# still ended inconclusive (a machine loaded by other suites): the tests that follow
# need a warm, consistent record, not a lucky one.
warm_cache() { # [LIBRARY]
	local try
	for try in 1 2 3; do
		TSCSHIM_ESTIMATE_BUDGET_US=500000 LD_PRELOAD="${1:-$SHIM}" "$PROBE" loop 1 >/dev/null
		grep -qx 'estimate_verdict=0' "$TSCSHIM_CACHE" 2>/dev/null && return 0
		rm -f "$TSCSHIM_CACHE"
	done
	false
}

# Rewrites FIELD=VALUE in the cache file at PATH and fixes its checksum (FNV-1a 64). A
# machine-wide record (a symbolic link whose target is the text) is replaced by a link with
# the new text, as `tscshim calib --save` writes it.
edit_cache() { # PATH FIELD VALUE
	python3 - "$@" <<'EOF'
import os, sys
path, field, value = sys.argv[1:]
link = os.path.islink(path)
lines = (os.readlink(path) if link else open(path).read()).splitlines(True)[:-1]
lines = [f"{field}={value}\n" if l.startswith(field + "=") else l for l in lines]
body = "".join(lines).encode()
h = 0xcbf29ce484222325
for b in body:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
data = body + b"checksum=%016x\n" % h
if link:
    os.symlink(data, path + ".edit")
    os.rename(path + ".edit", path)
else:
    open(path, "wb").write(data)
EOF
}

# The text of a record file: a per-user cache's content, or a machine-wide record's link
# target.
record_text() { # PATH
	if [ -L "$1" ]; then printf '%s\n' "$(readlink "$1")"; else cat "$1"; fi
}

# Another build's per-user cache at PATH: a well-marked file of an older format (5), its
# checksum right, as that build writes it.
write_other_format_cache() { # PATH
	python3 - "$1" <<'PY'
import sys
body = b"tscshim-cache 5\nboot_id=another-build\n"
h = 0xcbf29ce484222325
for b in body:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open(sys.argv[1], "wb").write(body + b"checksum=%016x\n" % h)
PY
}

# The machine-wide record as `tscshim calib --save` writes it at boot, in a directory of the
# test's own, root's and readable by all: sets $record (skips where the test is not root).
save_record_for_test() {
	[ "$(id -u)" -eq 0 ] || skip "the machine-wide record must be root's"
	local dir="$BATS_TEST_TMPDIR/run"
	record="$dir/tscshim/calibration"
	mkdir -p "$dir" && chmod 0755 "$dir" "$BATS_TEST_TMPDIR"
	run env TSCSHIM_SYSTEM_RECORD="$record" "$TSCSHIM" calib --save --calibrate-us 20000
	echo "$output"
	[ "$status" -eq 0 ]
}

# within_twice_the_bound ONE_IN: the hostile probes' promise where readings are out of
# order (README's known limit): for every clock, nothing beyond twice $LIMIT, at most one
# checked value in ONE_IN beyond $LIMIT, never back, no garbage, no invented failure. Uses
# the calling file's `field`.
within_twice_the_bound() {
	local c
	for c in monotonic monotonic_raw boottime realtime; do
		[ "$(field $c worst_ns)" -le $((2 * LIMIT)) ] || { echo "$c: beyond twice the bound"; return 1; }
		[ "$(($(field $c over) * $1))" -le "$(field $c checked)" ] || { echo "$c: too many beyond the bound"; return 1; }
		[ "$(field $c backwards)" -eq 0 ] && [ "$(field $c garbage)" -eq 0 ] && [ "$(field $c invented)" -eq 0 ] ||
			{ echo "$c: back, garbage or an invented failure"; return 1; }
	done
}

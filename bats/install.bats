#!/usr/bin/env bats
# Installing and deploying: `make install` into a staged tree and every subcommand run from
# there, `make uninstall`, pkg-config, the man pages against the options table, stats of
# programs that close stderr or change their user, and the Debian packages.
load helpers
bats_require_minimum_version 1.5.0

PROBE_STATS="$ROOT/build/test/probe_stats"

# One staged install for the file: the tests below only read it (the uninstall test and
# the missing-library test stage their own).
setup_file() {
	export TSCSHIM_CACHE="$BATS_FILE_TMPDIR/cache"
	export STAGE="$BATS_FILE_TMPDIR/stage"
	make -C "$ROOT" --no-print-directory -s install DESTDIR="$STAGE" PREFIX=/usr >&3
}

# A directory every user may reach and create files in (BATS_TEST_TMPDIR is 0700 and its
# parents may be too), removed by teardown.
shared_dir() {
	SHARED=$(mktemp -d /tmp/tscshim-install-test.XXXXXX)
	chmod 1777 "$SHARED"
}

teardown() {
	[ -z "${SHARED:-}" ] || rm -rf "$SHARED"
}

@test "install: make install puts the command, the library with its SONAME, header, .pc and man pages" {
	for f in usr/bin/tscshim usr/lib/libtscshim.so.1 usr/include/tscshim.h usr/lib/pkgconfig/tscshim.pc \
		usr/share/man/man1/tscshim.1 usr/share/man/man7/libtscshim.7; do
		[ -f "$STAGE/$f" ] || { echo "missing $f"; false; }
	done
	[ "$(readlink "$STAGE/usr/lib/libtscshim.so")" = libtscshim.so.1 ]
	readelf -d "$STAGE/usr/lib/libtscshim.so.1" | grep -q 'SONAME.*\[libtscshim.so.1\]'
	[ -x "$STAGE/usr/bin/tscshim" ]
}

@test "install: the installed command finds the installed library relative to itself" {
	run "$STAGE/usr/bin/tscshim" run -- sh -c 'echo "$LD_PRELOAD"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$STAGE/usr/lib/libtscshim.so.1" ]
}

@test "install: calib, run, bench and ab run from the staged tree" {
	bin="$STAGE/usr/bin/tscshim"
	run "$bin" calib "${QUICK[@]}"
	echo "$output"
	[ "$status" -le 1 ]
	[[ "$output" == *"verdict:"* ]]

	stats="$BATS_TEST_TMPDIR/stats"
	run env TSCSHIM_STATS="$stats" "$bin" run -- "$PROBE_STATS" failures
	echo "$output"; cat "$stats"
	[ "$status" -eq 0 ]
	[ "$output" = "stats_write_failures=0" ]
	grep -q '^tscshim stats pid=[0-9]* active=' "$stats"

	run --separate-stderr "$bin" bench --calls 64
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == *"shim-fenced"* ]]
	[[ "$output" == *"shim-unfenced"* ]]

	run --separate-stderr "$bin" ab -n 2 --warmup 0 -- "$PROBE_STATS" close-stderr
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	# both B runs loaded the installed shim and reported their 10 clock calls
	[[ "$output" == *"B, all runs: TSC served "*" of 20 clock calls"* ]]
}

@test "install: TSCSHIM_LIBRARY and --library name the library for a command that was moved" {
	mkdir -p "$BATS_TEST_TMPDIR/elsewhere"
	cp "$STAGE/usr/bin/tscshim" "$BATS_TEST_TMPDIR/elsewhere/tscshim"
	lib="$STAGE/usr/lib/libtscshim.so.1"
	run env TSCSHIM_LIBRARY="$lib" "$BATS_TEST_TMPDIR/elsewhere/tscshim" run -- sh -c 'echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ]
	[ "$output" = "$lib" ]
	run "$BATS_TEST_TMPDIR/elsewhere/tscshim" run --library "$lib" -- sh -c 'echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ]
	[ "$output" = "$lib" ]
	run env TSCSHIM_LIBRARY="$lib" "$BATS_TEST_TMPDIR/elsewhere/tscshim" bench --calls 64
	[ "$status" -eq 0 ]
	# the option wins over the variable
	run env TSCSHIM_LIBRARY=/nonexistent "$BATS_TEST_TMPDIR/elsewhere/tscshim" bench --calls 64 --library "$lib"
	[ "$status" -eq 0 ]
}

@test "install: a missing library: exit 2 and one line naming every path tried" {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cp "$STAGE/usr/bin/tscshim" "$BATS_TEST_TMPDIR/bin/tscshim"
	TSCSHIM="$BATS_TEST_TMPDIR/bin/tscshim"
	tried="tried $BATS_TEST_TMPDIR/bin/../lib/libtscshim.so.1, $BATS_TEST_TMPDIR/bin/libtscshim.so"
	usage_error "$tried" run -- true
	usage_error "$tried" bench --calls 64
	usage_error "$tried" bench --drift 1
	TSCSHIM_LIBRARY=/nonexistent/lib.so usage_error "tried /nonexistent/lib.so:" run -- true
	usage_error "tried /nonexistent/lib.so:" run --library /nonexistent/lib.so -- true
	usage_error "tried /nonexistent/lib.so:" bench --library=/nonexistent/lib.so
	# a named library that is missing is not replaced by the one found beside the command
	cp "$STAGE/usr/lib/libtscshim.so.1" "$BATS_TEST_TMPDIR/bin/libtscshim.so"
	TSCSHIM_LIBRARY=/nonexistent/lib.so usage_error "tried /nonexistent/lib.so:" run -- true
	run "$TSCSHIM" run -- true
	[ "$status" -eq 0 ]
	# ab does not yet take --library, but finds its library the same way
	rm "$BATS_TEST_TMPDIR/bin/libtscshim.so"
	run "$TSCSHIM" ab -n 1 -- true
	[ "$status" -eq 2 ]
}

@test "install: make uninstall leaves no file behind" {
	tmp="$BATS_TEST_TMPDIR/root"
	make -C "$ROOT" --no-print-directory -s install DESTDIR="$tmp" PREFIX=/usr
	[ -n "$(find "$tmp" -type f)" ]
	make -C "$ROOT" --no-print-directory -s uninstall DESTDIR="$tmp" PREFIX=/usr
	find "$tmp" -type f -o -type l
	[ -z "$(find "$tmp" -type f -o -type l)" ]
}

@test "install: pkg-config finds the staged tree, and a program built with it reads the status" {
	require_command pkg-config pkg-config
	export PKG_CONFIG_PATH="$STAGE/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$STAGE"
	run pkg-config --cflags --libs tscshim
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"-I$STAGE/usr/include"* ]]
	[[ "$output" == *"-L$STAGE/usr/lib -ltscshim"* ]]
	[ "$(pkg-config --modversion tscshim)" = "$(sed -n 's/^#define TSCSHIM_VERSION "\(.*\)"/\1/p' "$ROOT/include/tscshim.h")" ]
	cat >"$BATS_TEST_TMPDIR/status.c" <<'EOF'
#include <stdio.h>
#include <tscshim.h>
int main(void)
{
	struct tscshim_status s;
	tscshim_status(&s);
	printf("active=%d failures=%llu reason=%s\n", s.active, (unsigned long long)s.stats_write_failures, s.reason);
	return 0;
}
EOF
	# shellcheck disable=SC2046 # pkg-config's words are separate arguments
	cc "$BATS_TEST_TMPDIR/status.c" $(pkg-config --cflags --libs tscshim) -o "$BATS_TEST_TMPDIR/status"
	run env LD_LIBRARY_PATH="$STAGE/usr/lib" "$BATS_TEST_TMPDIR/status"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "active="[01]" failures=0 reason="?* ]]
}

@test "man pages: lint clean, the options table spliced in unchanged, every option of every subcommand" {
	command -v mandoc >/dev/null || command -v man >/dev/null ||
		skip "neither mandoc nor man is installed to lint the pages (apt-get install mandoc)"
	if command -v mandoc >/dev/null; then
		run mandoc -T lint "$ROOT/man/tscshim.1" "$ROOT/man/libtscshim.7"
	else
		# Without mandoc, groff's warnings through man. troff's "cannot adjust line" is
		# about typesetting at the width man picked (the terminal's), not about the
		# source, which mandoc's lint does not flag either: left out, and said so.
		run bash -c 'for p in "$@"; do man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null || echo "man: exit $? on $p"; done' _ \
			"$ROOT/man/tscshim.1" "$ROOT/man/libtscshim.7"
		local adjust
		adjust=$(grep -c ': cannot adjust line$' <<<"$output" || true)
		echo "# mandoc not installed: linted with man --warnings, $adjust 'cannot adjust line' warnings ignored (apt-get install mandoc)" >&3
		output=$(grep -v ': cannot adjust line$' <<<"$output" || true)
	fi
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run "$ROOT/man/splice-options.sh" --check "$TSCSHIM" "$ROOT/man/tscshim.1" "$ROOT/man/libtscshim.7"
	echo "$output"
	[ "$status" -eq 0 ]
	version=$(sed -n 's/^#define TSCSHIM_VERSION "\(.*\)"/\1/p' "$ROOT/include/tscshim.h")
	grep -q "^\.TH TSCSHIM 1 .* \"tscshim $version\"" "$ROOT/man/tscshim.1"
	grep -q "^\.TH LIBTSCSHIM 7 .* \"tscshim $version\"" "$ROOT/man/libtscshim.7"
	for cmd in calib run bench ab ps options; do
		grep -q "^\.B $cmd\$" "$ROOT/man/tscshim.1" || { echo "subcommand $cmd not in tscshim.1"; false; }
		help=$("$TSCSHIM" "$cmd" --help 2>&1 || true)
		for opt in $(grep -oE '(^|[ [])--?[a-z][a-z-]*' <<<"$help" | tr -d ' [' | sort -u); do
			[ "$opt" = --help ] && continue
			grep -qF -- "$(sed 's/-/\\-/g' <<<"$opt")" "$ROOT/man/tscshim.1" ||
				{ echo "tscshim $cmd $opt is not in tscshim.1"; false; }
		done
	done
}

# The commands the usage lists, so that a new one is checked without editing the tests.
listed_commands() {
	"$TSCSHIM" --help | awk '/^commands:/ {listed = 1; next} listed && /^  [a-z]/ {print $1}'
}

@test "commands: each one the usage lists takes --help: its usage on stdout, exit 0" {
	commands=$(listed_commands)
	echo "listed: $commands"
	[ "$(wc -w <<<"$commands")" -ge 5 ]
	for cmd in $commands; do
		run --separate-stderr "$TSCSHIM" "$cmd" --help
		echo "$cmd: status=$status stderr=$stderr"
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[[ "${lines[0]}" == "usage: tscshim $cmd"* ]]
	done
}

@test "commands: a bad TSCSHIM_ variable: exit 2 and one line naming it, before anything runs" {
	marker="$BATS_TEST_TMPDIR/ran"
	TSCSHIM_PROBES=12x usage_error TSCSHIM_PROBES calib
	TSCSHIM_PROBES=12x usage_error TSCSHIM_PROBES bench --calls 640
	TSCSHIM_FENCE=2 usage_error TSCSHIM_FENCE bench --startup --rounds 3
	TSCSHIM_PROBES=12x usage_error TSCSHIM_PROBES ab -n 1 -- touch "$marker"
	[ ! -e "$marker" ]
}

@test "stats: a program that closes stderr leaves its line in the file %p names" {
	stats="$BATS_TEST_TMPDIR/stats.%p"
	run --separate-stderr env TSCSHIM_STATS="$stats" LD_PRELOAD="$SHIM" "$PROBE_STATS" close-stderr
	[ "$status" -eq 0 ]
	pid="$output"
	file="$BATS_TEST_TMPDIR/stats.$pid"
	cat "$file"
	[ "$(wc -l <"$file")" -eq 1 ]
	grep -q "^tscshim stats pid=$pid .*monotonic=[0-9]*/10 " "$file"
	[ "$(stat -c %a "$file")" = 600 ]
	# stderr as the destination: the line is there while stderr stays open ...
	run --separate-stderr env TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE_STATS" failures
	[ "$status" -eq 0 ]
	[[ "$stderr" == "tscshim stats pid="*" active="* ]]
	# ... and lost, as documented, for a program that closes it
	run --separate-stderr env TSCSHIM_STATS=stderr LD_PRELOAD="$SHIM" "$PROBE_STATS" close-stderr
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "stats: a process that changes its user leaves its line in its own file, owned by that user" {
	[ "$(id -u)" -eq 0 ] || skip "changing the user needs root"
	nobody=$(id -u nobody)
	shared_dir
	# a file of the same pattern already written by root, as a server's master would
	run env TSCSHIM_STATS="$SHARED/stats.%p" LD_PRELOAD="$SHIM" "$PROBE_STATS" failures
	run --separate-stderr env TSCSHIM_STATS="$SHARED/stats.%p" LD_PRELOAD="$SHIM" "$PROBE_STATS" drop-to "$nobody"
	echo "$output $stderr"; ls -l "$SHARED"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	file="$SHARED/stats.$output"
	grep -q "^tscshim stats pid=$output .*monotonic=[0-9]*/10 " "$file"
	[ "$(stat -c %u "$file")" -eq "$nobody" ]
	[ "$(ls "$SHARED" | wc -l)" -eq 2 ]
}

@test "stats: a write that fails is counted in tscshim_status and said in one line" {
	# a directory that is missing at load: counted at once, said at exit
	run --separate-stderr env TSCSHIM_STATS="$BATS_TEST_TMPDIR/missing/stats.%p" LD_PRELOAD="$SHIM" "$PROBE_STATS" failures
	echo "$output"; echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "stats_write_failures=1" ]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	[[ "$stderr" == "tscshim: TSCSHIM_STATS: $BATS_TEST_TMPDIR/missing/stats."[0-9]*": No such file or directory" ]]
	# a full device: fine at load, fails at exit
	run --separate-stderr env TSCSHIM_STATS=/dev/full LD_PRELOAD="$SHIM" "$PROBE_STATS" failures
	[ "$output" = "stats_write_failures=0" ]
	[ "$stderr" = "tscshim: TSCSHIM_STATS: /dev/full: No space left on device" ]
	# a process that became a user who may not write where it was told to
	[ "$(id -u)" -eq 0 ] || skip "changing the user needs root"
	shared_dir
	chmod 0755 "$SHARED"
	run --separate-stderr env TSCSHIM_STATS="$SHARED/stats.%p" LD_PRELOAD="$SHIM" "$PROBE_STATS" drop-to "$(id -u nobody)"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == "tscshim: TSCSHIM_STATS: $SHARED/stats.$output: Permission denied" ]]
	[ -z "$(ls "$SHARED")" ]
}

@test "stats: an invalid pattern is an invalid setting: one line, and every call passes through" {
	for bad in "/tmp/stats.%d" "/tmp/stats.%" "relative/stats"; do
		run --separate-stderr env TSCSHIM_STATS="$bad" LD_PRELOAD="$SHIM" "$PROBE_STATS" failures
		echo "$bad: $stderr"
		[ "$status" -eq 0 ]
		[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
		[[ "$stderr" == *"TSCSHIM_STATS"*"passing every call to the real clock"* ]]
	done
}

@test "deb: dpkg-buildpackage builds lintian-clean packages; installed in a scratch root they run" {
	require_command dpkg-buildpackage dpkg-dev
	# debian/control's Build-Depends, as packages to install (debhelper provides the
	# virtual debhelper-compat).
	if ! unmet=$(cd "$ROOT" && dpkg-checkbuilddeps 2>&1); then
		needed=$(sed -n 's/.*Unmet build dependencies: //p' <<<"$unmet" |
			sed -E 's/ *\([^)]*\)//g; s/(^| )debhelper-compat( |$)/\1debhelper\2/g')
		[ -z "$needed" ] || skip "unmet build dependencies (apt-get install $needed)"
		skip "dpkg-checkbuilddeps: $unmet"
	fi
	out="$BATS_TEST_TMPDIR/deb"
	run make -C "$ROOT" --no-print-directory deb DEB_OUT="$out"
	[ "$status" -eq 0 ] || { echo "$output" | tail -40; false; }
	ls "$out"
	root="$BATS_TEST_TMPDIR/root"
	for p in tscshim libtscshim1 libtscshim-dev; do
		dpkg -x "$out/${p}_"*_amd64.deb "$root"
	done
	bin="$root/usr/bin/tscshim"
	lib=$(echo "$root"/usr/lib/*-linux-gnu/libtscshim.so.1)
	[ -f "$lib" ]
	run "$bin" calib "${QUICK[@]}"
	echo "$output"
	[ "$status" -le 1 ]
	[[ "$output" == *"verdict:"* ]]
	# a preloaded program, the library found relative to the installed command
	stats="$BATS_TEST_TMPDIR/stats"
	run env TSCSHIM_STATS="$stats" "$bin" run -- sh -c 'echo "$LD_PRELOAD"; date +%Y'
	echo "$output"; cat "$stats"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$lib" ]
	[ "${lines[1]}" = "$(date +%Y)" ]
	grep -q '^tscshim stats pid=.* realtime=[0-9]*/[1-9]' "$stats"
	# tscshim ps reads the packaged library's state block: stripped (dh_strip), hardened.
	"$bin" run -- sleep 600 >/dev/null 3>&- &
	local sleeper=$!
	for _ in $(seq 200); do
		grep -q libtscshim "/proc/$sleeper/maps" 2>/dev/null && break
		sleep 0.05
	done
	run "$bin" ps --json -p "$sleeper"
	kill "$sleeper"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$(jq -r '.processes[0].state' <<<"$output")" =~ ^(serving|passing_through|undecided)$ ]]
	[ "$(jq -r '.processes[0].build_id' <<<"$output")" = "$(readelf -n "$lib" | sed -n 's/.*Build ID: *//p')" ]
	gzip -dc "$root/usr/share/man/man1/tscshim.1.gz" | grep -q '^\.SH ENVIRONMENT'
	[ -f "$root/usr/share/doc/tscshim/copyright" ]
	grep -q 'Libs: -L${libdir} -ltscshim' "$root"/usr/lib/*-linux-gnu/pkgconfig/tscshim.pc
	# Last, so that everything above is checked even where lintian is missing.
	require_command lintian lintian
	run lintian --info --pedantic --fail-on warning,error "$out"/tscshim_*.changes
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$(grep -v 'running with root privileges' <<<"$output")" ]
}

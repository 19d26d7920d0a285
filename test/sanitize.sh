#!/usr/bin/env bash
# `make sanitize`: runs what `make sanitize-build` built into build-asan/ (ASan+UBSan) and
# build-tsan/ (TSan): every unit test, then a short stress run of the preloaded shim.
# The sanitizer runtime must be the first object in the process, so it is preloaded
# ahead of the shim (LD_PRELOAD="<runtime>:<shim>"); the probes, built with the same
# sanitizer, then share that one runtime. Then valgrind memcheck on the plain command.
# Prints one line per step and ends with "sanitize: N steps, N failed[, N skipped]": a step
# whose tools are missing (clang's TSan runtime, valgrind) is skipped with the Debian
# packages to install.
set -u
cd "$(dirname "$0")/.."
steps=0
failed=0
skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# STEP NAME CMD...: runs CMD, keeps its output, shows it only on failure.
step() {
	local name=$1
	shift
	steps=$((steps + 1))
	if "$@" >"$log" 2>&1; then
		local summary
		summary=$(grep -E '^(load|pingpong|migrate|signal|fork|sleep|status|unit|verdict):' "$log" | head -1)
		echo "ok   $name: ${summary:-$(tail -1 "$log")}"
	else
		echo "FAIL $name (status $?)"
		symbolize <"$log" | tail -60 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}

# Appends file:line to frames given as (build-*/libtscshim.so+0xOFFSET).
symbolize() {
	local line name off obj
	while IFS= read -r line; do
		if [[ $line =~ \(([a-z_]+(\.so)?)\+(0x[0-9a-f]+)\) ]]; then
			name=${BASH_REMATCH[1]}
			off=${BASH_REMATCH[3]}
			for obj in "$dir/$name" "$dir/test/$name"; do
				[ -f "$obj" ] || continue
				line="$line  $(addr2line -f -i -p -e "$obj" "$off" 2>/dev/null | tr '\n' ' ')"
				break
			done
		fi
		printf '%s\n' "$line"
	done
}

# The unit tests print TAP; a test fails the step by any "not ok" line or its status.
unit() {
	"$1" >"$log.tap" 2>&1
	local st=$? bad
	cat "$log.tap"
	bad=$(grep -c '^not ok' "$log.tap")
	echo "unit: $(grep -c '^ok' "$log.tap") ok, $bad not ok"
	rm -f "$log.tap"
	[ "$st" -eq 0 ] && [ "$bad" -eq 0 ]
}

# TOOL... ps -p PID of a process served by the shim of $run (started here, killed after):
# the command reading another process through its state block, under the sanitizer.
ps_beside_served() {
	local ready pid status
	ready=$(mktemp)
	"${run[@]}" "$dir/test/probe_ps" reads 10 >"$ready" &
	pid=$!
	for _ in $(seq 600); do
		grep -q ready "$ready" && break
		sleep 0.05
	done
	"$@" ps -p "$pid"
	status=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -f "$ready"
	return $status
}

# SKIP WHAT WHY: one line for steps that cannot run here.
skip() {
	echo "skip $1: $2"
	skipped=$((skipped + 1))
}

for kind in asan tsan; do
	dir=build-$kind
	if [ "$kind" = tsan ] && ! why=$(bash test/clang-sanitizer.sh thread); then
		skip "tsan (every step)" "$why"
		continue
	fi
	case $kind in
	asan)
		# ASan's shadow memory makes the estimator's fork and probes slow: on a kvm-clock
		# guest a 20 ms budget ran out before the child answered. The shim's serving path
		# is what is checked here, so the estimate gets time enough.
		gate=(TSCSHIM_ESTIMATE_BUDGET_US=2000000)
		calib_opts=()
		rt=$(gcc -print-file-name=libasan.so)
		export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0
		export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
		;;
	tsan)
		# clang links the TSan runtime into each executable and the shim takes its
		# symbols from there: nothing to preload ahead of it. The symbolizer TSan
		# spawns would inherit LD_PRELOAD and fail to load the shim without the
		# runtime, so it runs through a wrapper that drops it. Suppressions: see
		# test/tsan.supp (one, for the runtime's own clock reads).
		rt=
		sym=$PWD/$dir/llvm-symbolizer
		real=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14)
		[ -n "$real" ] || echo "# llvm-symbolizer is not installed (apt-get install llvm): TSan reports will be unsymbolized"
		gcc -static -O1 -DSYMBOLIZER="\"$real\"" test/san_symbolizer.c -o "$sym" ||
			echo "# no static symbolizer wrapper: TSan reports will be unsymbolized"
		export TSAN_OPTIONS="halt_on_error=1:exitcode=66:report_signal_unsafe=1:external_symbolizer_path=$sym:suppressions=$PWD/test/tsan.supp:print_suppressions=0"
		# TSan's instrumented atomics make the estimator's probes slow and its brackets
		# wide: on this machine it came out inconclusive, or not reliable at 1 us. What
		# TSan checks here is the shim's serving path, so let the gate open.
		gate=(TSCSHIM_ESTIMATE_BUDGET_US=5000000 TSCSHIM_MAX_SKEW_NS=1000000)
		calib_opts=(--budget-us 5000000 --max-skew-ns 1000000)
		;;
	esac
	for t in "$dir"/test/test_*; do
		step "$kind $(basename "$t")" unit "$t"
	done
	shim="$PWD/$dir/libtscshim.so"
	# A cache another build (format) left would make the first run pass through (a read
	# never measures; it marks the cache for the next start's load): start afresh.
	rm -f "$PWD/$dir/cache"
	# TSCSHIM_SERVE=always: the serving path is what is checked, cheaper here or not.
	run=(env LD_PRELOAD="${rt:+$rt:}$shim" TSCSHIM_SERVE=always TSCSHIM_DECIDE_AFTER=1 TSCSHIM_CACHE="$PWD/$dir/cache" TSCSHIM_MAX_ERROR_NS=100 TSCSHIM_RESYNC_MS=1 "${gate[@]}")
	stress=$dir/test/probe_stress
	# The stress runs prove something only while the shim serves.
	step "$kind shim serves" bash -c '"$@" | tee /dev/stderr | grep -q "active=1"' _ "${run[@]}" "$stress" status
	step "$kind load" timeout 120 "${run[@]}" "$stress" load 2 0
	# The reads before the decision, counted by every thread at once until one decides.
	step "$kind load, deciding at read 500" timeout 120 "${run[@]}" TSCSHIM_DECIDE_AFTER=500 "$stress" load 2 0
	step "$kind pingpong" timeout 120 "${run[@]}" "$stress" pingpong 100000
	step "$kind migrate" timeout 120 "${run[@]}" "$stress" migrate 1 4
	step "$kind signal" timeout 120 "${run[@]}" "$stress" signal 1 10000
	step "$kind fork" timeout 120 "${run[@]}" "$stress" fork 10
	step "$kind spawn" timeout 120 "${run[@]}" "$stress" spawn
	step "$kind sleep" timeout 120 "${run[@]}" "$stress" sleep 50 3 500
	step "$kind probe_clock compare" timeout 120 "${run[@]}" "$dir/test/probe_clock" compare 2000 1000000
	# The vmclock watch, staged (the hooks build, the reference double, a page in the
	# device's layout): the stop at the moved marker, the reads meanwhile, the resumption.
	# Accuracy is not what is checked under a sanitizer: the limit is a second.
	page="$PWD/$dir/vmclock"
	rm -f "$PWD/$dir/vmclock.cache"*
	"$dir/test/probe_vmclock" make "$page"
	step "$kind vmclock move" bash -c '"$@" | tee /dev/stderr | grep -q "disruptions=1"' _ \
		timeout 120 env LD_PRELOAD="${rt:+$rt:}$PWD/$dir/test/libtscshim-hooks.so $PWD/$dir/test/librefclock.so" \
		TSCSHIM_TEST_VMCLOCK="$page" TSCSHIM_SERVE=always TSCSHIM_DECIDE_AFTER=1 TSCSHIM_CACHE="$PWD/$dir/vmclock.cache" \
		TSCTEST_PAUSE_STOP_US=200 "${gate[@]}" "$dir/test/probe_vmclock" run "$page" -50000 0 0.3 1000000000
	# A reference too noisy for the bound (+/-1 us, each read 100 ns dearer): the first
	# line's stop, and the tries that take anchors until one reads noisy (prove_quiet).
	step "$kind noisy reference, tried again" bash -c '"$@" 2>&1 | tee /dev/stderr | grep -q "^status: loaded=1"' _ \
		timeout 120 env LD_PRELOAD="${rt:+$rt:}$shim $PWD/$dir/test/librefclock.so" TSCSHIM_SERVE=always \
		TSCSHIM_DECIDE_AFTER=1 TSCSHIM_CACHE="$PWD/$dir/cache" TSCTEST_JITTER_NS=1000 TSCTEST_COST_NS=100 "${gate[@]}" \
		"$dir/test/probe_hostile" 0.5 2 1000000000 0
	step "$kind tscshim calib" timeout 120 "$dir/tscshim" calib --calibrate-us 20000 "${calib_opts[@]}"
	step "$kind tscshim ps" ps_beside_served timeout 120 "$dir/tscshim"
	unset ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
done

# valgrind: `calib` exits 1 for "not reliable", so memcheck's own failure gets 99.
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect)
calib_under_valgrind() {
	"${vg[@]}" build/tscshim calib --calibrate-us 20000
	local st=$?
	[ "$st" -ne 99 ] && [ "$st" -le 1 ]
}
if command -v valgrind >/dev/null; then
	step "valgrind tscshim calib" calib_under_valgrind
	step "valgrind tscshim options" "${vg[@]}" build/tscshim options
	dir=build run=(env LD_PRELOAD="$PWD/build/libtscshim.so" TSCSHIM_SERVE=always TSCSHIM_DECIDE_AFTER=1 TSCSHIM_CACHE="$PWD/build/sanitize-ps.cache")
	step "valgrind tscshim ps" ps_beside_served "${vg[@]}" build/tscshim
	step "valgrind tscshim calib --json" bash -c '"$@" >/dev/null; [ $? -le 1 ]' _ "${vg[@]}" build/tscshim calib --json --calibrate-us 20000
else
	skip valgrind "valgrind is not installed (apt-get install valgrind)"
fi

summary="sanitize: $steps steps, $failed failed"
[ "$skipped" -eq 0 ] || summary+=", $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]

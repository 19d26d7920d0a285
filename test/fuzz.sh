#!/usr/bin/env bash
# Runs each libFuzzer target given for SECONDS on its own corpus in build-fuzz/ (seeded
# here: one valid value per option, a valid cache record), then prints one line per target
# with its executions and findings (crash, leak, timeout or OOM artifacts). Fails on any.
set -u
seconds=${1:-60}
shift
out=build-fuzz
failed=0
mkdir -p "$out"

seed_options() { # DIR: the first byte picks the option (see test/fuzz_options.c)
	local i=0
	for v in 0 1 1000 100 20000 2000 0 monotonic,realtime 1 1000 1000 /tmp/c stderr; do
		printf "\\x$(printf %02x $i)%s" "$v" >"$1/seed-$i"
		i=$((i + 1))
	done
}

seed_cache() { # DIR: a record as the writer lays it out; the target fixes the checksum
	printf '%s\n' 'tscshim-cache 1' 'boot_id=0b3c5e1a-7f2d-4c8e-9a61-2d4f6b8c0e13' \
		'cpu_signature=11538209' 'cpu_model=Oxide Virtual Turin-like Processor' 'cpu_count=2' \
		'cpu_set_hash=12638153115695167455' 'estimate_verdict=0' 'max_shift_ticks=399' \
		'rate_millihz=2096008000036' 'precision_ppt=1000000' 'created_ns=1763800000000000000' \
		'checksum=0000000000000000' >"$1/seed-record"
}

for bin in "$@"; do
	name=$(basename "$bin")
	corpus="$out/corpus-${name#fuzz_}"
	artifacts="$out/artifacts-${name#fuzz_}/"
	mkdir -p "$corpus" "$artifacts"
	case $name in
	fuzz_options) seed_options "$corpus" ;;
	fuzz_cache) seed_cache "$corpus" ;;
	esac
	log="$out/$name.log"
	before=$(find "$artifacts" -type f | wc -l)
	"$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$artifacts" "$corpus" >"$log" 2>&1
	status=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	findings=$(($(find "$artifacts" -type f | wc -l) - before))
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	echo "$name: ${seconds}s executions=${runs:-?} ${cov:-cov: ?} corpus=$(ls "$corpus" | wc -l) findings=$findings exit=$status (log $log)"
	if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
		grep -E 'ERROR|SUMMARY|failed|Test unit written' "$log" | head -20
		failed=1
	fi
done
exit $failed

#!/usr/bin/env bash
# Runs every C unit-test binary given as an argument and every bats file, all as TAP,
# and ends with one line: "N passed, N failed[, N skipped]".
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$@"; do
	echo "# $t"
	"$t" 2>&1 | tee -a "$log"
	status=${PIPESTATUS[0]}
	[ "$status" -le 1 ] || echo "not ok - $t crashed (status $status)" | tee -a "$log"
done
if compgen -G "bats/*.bats" >/dev/null; then
	echo "# bats"
	bats --tap bats/ 2>&1 | tee -a "$log"
fi

passed=$(grep -Ec '^ok [0-9]+' "$log" | head -1)
skipped=$(grep -Ec '^ok [0-9]+.*# (skip|SKIP)' "$log")
failed=$(grep -Ec '^not ok' "$log")
passed=$((passed - skipped))
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

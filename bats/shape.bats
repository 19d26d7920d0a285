#!/usr/bin/env bats
# The served path's shape (test/check-hot-path.sh): no register saved, no GOT load, no
# direct call, the counter read inline, in the library as built; and the check itself
# rejects an entry point that has them. Shape only: speed is the benchmark's business.
load helpers

@test "shape: the entry points have no push, GOT load or direct call, and read the counter inline" {
	run bash "$ROOT/test/check-hot-path.sh" "$SHIM"
	echo "$output"
	[ "$status" -eq 0 ]
	run bash "$ROOT/test/check-hot-path.sh" "$ROOT/build/test/libtscshim-hooks.so"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "shape: the check rejects entry points with a frame, a GOT load and a call" {
	run bash "$ROOT/test/check-hot-path.sh" "$ROOT/build/test/libbad_shape.so"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"gettimeofday: saves a register (push)"* ]]
	[[ "$output" == *"clock_gettime: loads through the GOT"* ]]
	[[ "$output" == *"calls a function directly"* ]]
	[[ "$output" == *"has no inline rdtscp read"* ]]
}

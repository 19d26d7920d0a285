#!/usr/bin/env bats
# The layers of the tree (`make lint`, test/check-layers.sh): shim/ on the floors of
# shim/LAYERS, calib/ below it, cli/ beside it, by includes and by the objects' symbols.
load helpers

@test "lint: the shim keeps to its floors, calib/ stands below it, cli/ beside it" {
	make -C "$ROOT" --no-print-directory -s all
	compgen -G "$ROOT/build/shim/*.o" >/dev/null ||
		skip "no objects in build/shim/ (no shim sources built): nothing to check the symbols of"
	run bash "$ROOT/test/check-layers.sh"
	echo "$output"
	[ "$status" -eq 0 ]
}

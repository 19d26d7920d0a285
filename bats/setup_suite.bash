# Run once before the suites, whether all of them (`make test`, `bats bats/`) or one
# alone (`bats bats/musl.bats`): builds what they run besides the command and the shim
# (`make test-programs`: the unit tests, the probes, the preloadable test libraries, the
# shim with test hooks), so that a suite run alone after `make` finds them. Up to date,
# and quick, under `make test`.
setup_suite() {
	local root
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	if ! make -s --no-print-directory -C "$root" test-programs >/dev/null; then
		echo "bats: the test programs did not build (above); \`make test-programs\` builds them" >&2
		return 1
	fi
}

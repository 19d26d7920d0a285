# Shared by the bats files: paths to what `make` built.
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
TSCSHIM="$ROOT/build/tscshim"
SHIM="$ROOT/build/libtscshim.so"
# Short calibrations keep the suite fast; the figures are not what these tests check.
QUICK=(--calibrate-us 20000)

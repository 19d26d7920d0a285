#!/usr/bin/env bash
# Figures for the README: the estimator's time and maximum-shift bound over RUNS runs
# (median, min, max), and the calibration's precision against its length.
# Usage: test/figures-calib.sh [RUNS]   (make figures-calib)
set -eu
runs=${1:-20}
bin="$(dirname "$0")/../build/tscshim"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for _ in $(seq "$runs"); do
	"$bin" calib --json --calibrate-us 1000 >>"$tmp" || true
	echo "---" >>"$tmp"
done
python3 - "$tmp" <<'PY'
import json, statistics, sys
docs = [d for d in open(sys.argv[1]).read().split("---") if d.strip()]
est = [json.loads(d)["estimator"] for d in docs]
t = sorted(e["elapsed_ns"] / 1e6 for e in est)
s = sorted(e["max_shift_ns"] for e in est if e["max_shift_ns"] is not None)
print(f"estimator over {len(est)} runs: time median {statistics.median(t):.2f} ms "
      f"(min {t[0]:.2f}, max {t[-1]:.2f}); max-shift bound median {statistics.median(s):.0f} ns "
      f"(min {s[0]}, max {s[-1]}); verdicts {sorted(set(e['verdict'] for e in est))}")
PY
for us in 1000 2000 10000 100000 1000000; do
	"$bin" calib --json --calibrate-us "$us" | python3 -c "
import json, sys
f = json.load(sys.stdin)['frequency']
print(f'calibration {$us/1000:g} ms: {f[\"hz\"]:.3f} Hz, precision {f[\"precision_ppm\"]:.4f} ppm, took {f[\"elapsed_ns\"]/1e6:.2f} ms')" || true
done

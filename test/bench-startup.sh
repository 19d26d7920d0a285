#!/usr/bin/env bash
# Start-up cost of the shim on /bin/true: RUNS paired runs (without, with), the median of
# the per-pair differences, warm cache and cold (no cache). Usage: test/bench-startup.sh [RUNS]
set -eu
runs=${1:-50}
shim="$(cd "$(dirname "$0")/.." && pwd)/build/libtscshim.so"
python3 - "$shim" "$runs" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
shim, runs = sys.argv[1], int(sys.argv[2])
cache = os.path.join(tempfile.mkdtemp(), "cache")
base = dict(os.environ); base.pop("LD_PRELOAD", None)
def timed(env):
    t = time.perf_counter(); subprocess.run(["/bin/true"], env=env, check=True)
    return time.perf_counter() - t
def paired(with_env):
    a, b = [], []
    for _ in range(runs):
        a.append(timed(base)); b.append(timed(with_env))
    d = sorted((y - x) * 1e3 for x, y in zip(a, b))
    return statistics.median(a) * 1e3, statistics.median(b) * 1e3, statistics.median(d), d[len(d) // 10], d[-len(d) // 10 - 1]
warm = dict(base, LD_PRELOAD=shim, TSCSHIM_CACHE=cache)
subprocess.run(["/bin/true"], env=warm, check=True)  # fill the cache
for name, env in (("warm cache", warm), ("cold (TSCSHIM_CACHE=off)", dict(base, LD_PRELOAD=shim, TSCSHIM_CACHE="off"))):
    a, b, d, lo, hi = paired(env)
    print(f"{name}: /bin/true median {a:.3f} ms without, {b:.3f} ms with; added median {d:.3f} ms (p10 {lo:.3f}, p90 {hi:.3f}) over {runs} pairs; ratio {b/a:.2f}")
PY

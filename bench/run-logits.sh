#!/usr/bin/env bash
# `fidelis logits diff` on one full vocabulary (248320) against the same metrics written the
# natural numpy way (float64, np.abs/.max/.sum, np.dot, argpartition for the top 10, hashlib over
# the float32 bytes), side by side in one run (bench/logits_bench.py). fidelis is timed end to
# end (process start, reading both files, hashing, JSON out); numpy both in-process after import
# (np.load included: favours numpy) and as a script (interpreter start and import included: the
# same terms as fidelis). Then the library alone (bench_logits). Files are written untimed.
# Usage: bench/run-logits.sh BUILD_DIR   (env: FDL_BENCH_REPS, FDL_PYTHON)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
py=${FDL_PYTHON:-/usr/bin/python3}
reps=${FDL_BENCH_REPS:-50}
work=$(mktemp -d "${TMPDIR:-/tmp}/fdl-logits-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$py" "$here/logits_bench.py" bench "$build/fidelis" "$work" "$reps"
if [ -x "$build/bench/bench_logits" ]; then
  echo "library only (fdl_attr_compare_logits, best of 200): $("$build/bench/bench_logits" "$work/ref.f32" "$work/cand.f32" 200)"
fi

#!/usr/bin/env bash
# GGUF at realistic sizes (bench/gguf_bench.py says what and against what): loading a 1 GiB
# Q4_K_M-shaped file against a plain read of it (target <= 2x), and capture from a BF16 GGUF
# against the same weights as a Hugging Face directory (target within 10 %).
#
# Usage: bench/run-gguf.sh BUILD_DIR
# Knobs: FDL_BENCH_GGUF_MB (1024), FDL_BENCH_REPEATS (3, best of).
set -euo pipefail
build=${1:-build}
cli="$build/fidelis"
[ -x "$cli" ] || { echo "run-gguf: $cli not built" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"${FDL_PYTHON:-/usr/bin/python3}" "$here/gguf_bench.py" "$cli" "${FDL_BENCH_GGUF_MB:-1024}" \
  "${FDL_BENCH_REPEATS:-3}"

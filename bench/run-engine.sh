#!/usr/bin/env bash
# The capture engine's throughput (issue 11's benchmark): prefill GFLOP/s against fidelis' GEMM
# peak and decode tokens/s against the weight-streaming bound (bench_engine), side by side with
# Debian's torch running the same random model in float32 on the same threads
# (bench/engine_torch.py), on a ~100M-parameter Llama and a Qwen3-0.6B-shaped model made by
# `fidelis model init`; then (issue 13's benchmark) the Qwen3.5-4B-shaped hybrid, prefill 256 and
# decode 64 tokens against the same two bounds (torch has no Qwen3.5 here: transformers is not
# installed, so there is no side-by-side). Usage: bench/run-engine.sh BUILD_DIR
#   env: FDL_BENCH_THREADS (default: all cores), FDL_BENCH_PREFILL (256), FDL_BENCH_DECODE (32),
#        FDL_BENCH_PRESETS ("llama-100m qwen3-0.6b"), FDL_BENCH_Q35_DECODE (64),
#        FDL_BENCH_Q35_MODEL (an existing qwen3.5-4b directory; default: made here, 8.4 GB, and
#        removed after; "none" skips it), FDL_BENCH_MOE_MODEL (an existing qwen3-30b-a3b-6l
#        directory; default: made here, 8.7 GB, and removed after; "none" skips it),
#        FDL_BENCH_MOE_DECODE (32), FDL_PYTHON
# Then (issue 23's benchmark) the mixture of experts: qwen3-30b-a3b-6l, Qwen3-30B-A3B's layer
# shapes (128 experts, top 8) in 6 layers, decode against its active-parameter bound (the
# routed experts' bytes per token, not all experts').
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
py=${FDL_PYTHON:-/usr/bin/python3}
threads=${FDL_BENCH_THREADS:-$(nproc)}
np=${FDL_BENCH_PREFILL:-256}
nd=${FDL_BENCH_DECODE:-32}
work=$(mktemp -d "${TMPDIR:-/tmp}/fdl-engine-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# load_line DIR BENCH_OUTPUT: the load (bench_engine's load_s: read into memory, file digests,
# finiteness) against `cat` of the same files, page cache warm, and against the digest's floor:
# SHA-256 is one sequential chain per file, so no load can beat `openssl dgst` of its largest
# shard (issue 24: load <= 1.5x cat).
load_line() {
  local dir=$1 out=$2 ld ct fl big
  ld=$(echo "$out" | sed -n 's/.* load_s=\([0-9.]*\).*/\1/p')
  cat "$dir"/*.safetensors >/dev/null
  ct=$({ /usr/bin/time -f %e cat "$dir"/*.safetensors >/dev/null; } 2>&1)
  big=$(ls -S "$dir"/*.safetensors | head -n 1)
  fl=$({ /usr/bin/time -f %e openssl dgst -sha256 "$big" >/dev/null; } 2>&1)
  awk -v l="$ld" -v c="$ct" -v f="$fl" 'BEGIN {
    printf "load %.2f s vs cat %.2f s: %.1fx (target <= 1.5x); SHA-256 floor (largest shard) %.2f s\n",
      l, c, l / (c > 0.005 ? c : 0.005), f }'
}
for preset in ${FDL_BENCH_PRESETS:-llama-100m qwen3-0.6b}; do
  echo "== $preset (prefill $np tokens, decode $nd tokens, $threads threads)"
  t0=$(date +%s.%N)
  "$build/fidelis" model init --preset "$preset" --seed 0 "$work/$preset" >/dev/null
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "model init: %.2f s\n", b - a }' 
  out=$("$build/bench/bench_engine" "$work/$preset" "$np" "$nd" "$threads")
  echo "$out"
  load_line "$work/$preset" "$out"
  # decode on one thread beside it: more threads must never be slower (issue 24)
  one=$("$build/bench/bench_engine" "$work/$preset" "$np" "$nd" 1)
  echo "$one" | sed -n 's/^decode /decode (1 thread) /p'
  d1=$(echo "$one" | sed -n 's/^decode .* tokens_per_s=\([0-9.]*\).*/\1/p')
  tout=$("$py" "$here/engine_torch.py" "$work/$preset" "$np" "$nd" "$threads")
  echo "$tout"
  fp=$(echo "$out" | sed -n 's/^prefill .* seconds=\([0-9.]*\).*/\1/p')
  fd=$(echo "$out" | sed -n 's/^decode .* tokens_per_s=\([0-9.]*\).*/\1/p')
  tp=$(echo "$tout" | sed -n 's/^torch prefill .*seconds=\([0-9.]*\).*/\1/p')
  td=$(echo "$tout" | sed -n 's/^torch decode .*tokens_per_s=\([0-9.]*\).*/\1/p')
  awk -v fp="$fp" -v tp="$tp" -v fd="$fd" -v td="$td" -v d1="$d1" -v t="$threads" 'BEGIN {
    printf "fidelis vs torch: prefill %.2fx faster, decode %.2fx faster\n", tp / fp, fd / td
    printf "decode %s threads vs 1 thread: %.2fx\n", t, fd / d1 }'
  rm -rf "${work:?}/$preset"
done

# big PRESET MODEL_DIR DECODE_TOKENS: bench_engine on MODEL_DIR, made here (and removed after)
# when empty; "none" skips it.
big() {
  local preset=$1 dir=$2 n=$3
  [ "$dir" = none ] && return 0
  echo "== $preset (prefill $np tokens, decode $n tokens, $threads threads)"
  if [ -z "$dir" ]; then
    dir="$work/$preset"
    t0=$(date +%s.%N)
    "$build/fidelis" model init --preset "$preset" --seed 0 "$dir" >/dev/null
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "model init: %.2f s\n", b - a }'
  fi
  out=$("$build/bench/bench_engine" "$dir" "$np" "$n" "$threads")
  echo "$out"
  load_line "$dir" "$out"
  rm -rf "${work:?}/$preset"
}
big qwen3.5-4b "${FDL_BENCH_Q35_MODEL:-}" "${FDL_BENCH_Q35_DECODE:-64}"
big qwen3-30b-a3b-6l "${FDL_BENCH_MOE_MODEL:-}" "${FDL_BENCH_MOE_DECODE:-32}"

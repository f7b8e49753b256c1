#!/usr/bin/env bash
# `generate --new N` (issue 24's benchmark): fdl_generate_greedy with the KV cache carried
# across steps, N and N/4 new tokens (no stop id), their time ratio (linear about 4, quadratic
# about 16), against an honest floor written in the benchmark: a plain single-threaded float32
# decode loop with a KV cache in the manner of llama2.c (bench_generate), checked token for token
# against fidelis' greedy tokens. On llama-tiny-random and llama-100m made by `fidelis model
# init`, with 1 thread and with all of them. Usage: bench/run-generate.sh BUILD_DIR
#   env: FDL_BENCH_THREADS (default: all cores), FDL_BENCH_NEW (256),
#        FDL_BENCH_PRESETS ("llama-tiny-random llama-100m"), FDL_BENCH_REPEATS (3, best of)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
threads=${FDL_BENCH_THREADS:-$(nproc)}
n=${FDL_BENCH_NEW:-256}
repeats=${FDL_BENCH_REPEATS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/fdl-generate-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
# one thread, then all of them (once when they are the same)
counts=1
[ "$threads" != 1 ] && counts="1 $threads"
for preset in ${FDL_BENCH_PRESETS:-llama-tiny-random llama-100m}; do
  "$build/fidelis" model init --preset "$preset" --seed 0 "$work/$preset" >/dev/null
  for t in $counts; do
    echo "== $preset (generate --new $n, best of $repeats, $t threads)"
    "$build/bench/bench_generate" "$work/$preset" "$n" "$t" "$repeats"
  done
  rm -rf "${work:?}/$preset"
done

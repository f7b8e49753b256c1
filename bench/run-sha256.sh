#!/usr/bin/env bash
# SHA-256 throughput of fdl_sha256_file against `openssl dgst -sha256` on the same 2 GB file,
# page cache warm. Usage: bench/run-sha256.sh BUILD_DIR  (target: fidelis/openssl >= 0.9)
# Then two digests of the same bytes (a file's and its tensor's), two libcrypto streams against
# the interleaved pair (fdl_sha256_update2), in memory.
set -euo pipefail
build=${1:-build}
bin="$build/bench/bench_sha256"
[ -x "$bin" ] || { echo "missing $bin (build the project first)" >&2; exit 4; }
dir=${FDL_BENCH_DIR:-/tmp/fidelis-bench}
mb=${FDL_BENCH_SHA256_MB:-2048}
file="$dir/sha256-${mb}M.bin"
mkdir -p "$dir"
if [ ! -f "$file" ] || [ "$(stat -c %s "$file")" -ne $((mb * 1024 * 1024)) ]; then
  echo "creating $file ($mb MiB)"
  head -c $((mb * 1024 * 1024)) /dev/urandom >"$file.tmp" && mv "$file.tmp" "$file"
fi
cat "$file" >/dev/null # warm the page cache
bytes=$(stat -c %s "$file")

# Best of three for each, in seconds.
best() { sort -g | head -n 1; }
t_ssl=$(for _ in 1 2 3; do
  s=$(date +%s.%N); openssl dgst -sha256 -r "$file" >"$dir/openssl.out"; e=$(date +%s.%N)
  echo "$e - $s" | bc -l
done | best)
t_fdl=$(for _ in 1 2 3; do "$bin" "$file" >"$dir/fidelis.out"; awk '{print $4}' "$dir/fidelis.out"; done | best)

h_ssl=$(cut -c1-64 "$dir/openssl.out")
h_fdl=$(cut -c1-64 "$dir/fidelis.out")
[ "$h_ssl" = "$h_fdl" ] || { echo "digest differs: openssl $h_ssl fidelis $h_fdl" >&2; exit 3; }

awk -v b="$bytes" -v s="$t_ssl" -v f="$t_fdl" 'BEGIN {
  gs = b / s / 1e9; gf = b / f / 1e9
  printf "sha256 %.2f GB file: openssl %.3f GB/s, fidelis %.3f GB/s, ratio fidelis/openssl %.3f\n",
         b / 1e9, gs, gf, gf / gs
}'
"$bin" --pair 512 | awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  printf "two digests of the same 512 MiB: two libcrypto streams %.2f GB/s, fdl_sha256_update2 %.2f GB/s, %.2fx\n",
         v["separate_gbps"], v["update2_gbps"], v["ratio"] }'

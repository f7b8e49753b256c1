#!/usr/bin/env bash
# `fidelis validate --verify-tensors` throughput next to `openssl dgst -sha256` over the same
# dataset files. Sealed validation hashes every file (checksums.txt) and every tensor's byte range
# again (content digests), so it does about twice openssl's hashing; it must still finish within
# 1/0.8 of openssl's time (ratio >= 0.8), which it reaches by hashing on every core.
#
# Usage: bench/run-validate.sh BUILD_DIR
# Knobs: FDL_BENCH_RECORDS (32), FDL_BENCH_ROWS (2048), FDL_BENCH_HIDDEN (4096),
#        FDL_BENCH_REPEATS (3, best of), FDL_BENCH_KEEP=1 keeps the dataset.
# Both tools run with the files in the page cache (each is run once before timing), so this
# measures the hashing path, not the disk.
set -euo pipefail
build=${1:-build}
cli="$build/fidelis"
[ -x "$cli" ] || { echo "run-validate: $cli not built" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
records=${FDL_BENCH_RECORDS:-32}
rows=${FDL_BENCH_ROWS:-2048}
hidden=${FDL_BENCH_HIDDEN:-4096}
repeats=${FDL_BENCH_REPEATS:-3}
py=${FDL_PYTHON:-/usr/bin/python3}

work=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-validate-XXXXXX")
[ "${FDL_BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

echo "generating $records records of [$rows, $hidden] BF16 in $work"
"$py" - "$work" "$records" "$rows" "$hidden" "$here/../tests" <<'PY'
import json, os, sys
import numpy as np
work, n, rows, hidden = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, sys.argv[5])
import test_dataset_lib as L
vocab = 256
rng = np.random.default_rng(1)
os.makedirs(os.path.join(work, "in", "tensors"))
with open(os.path.join(work, "in", "panel.jsonl"), "w") as f:
    for i in range(n):
        f.write(json.dumps({"index": i, "tokens": [int(t) for t in rng.integers(0, vocab, rows + 1)]}) + "\n")
for i in range(n):
    bits = L.bf16_bits(rng.standard_normal((rows, hidden), dtype=np.float32))
    L.write_safetensors(os.path.join(work, "in", "tensors", "%04d.safetensors" % i),
                        [("hidden_states", "BF16", (rows, hidden), bits.tobytes())])
head = L.bf16_bits(rng.standard_normal((vocab, hidden), dtype=np.float32))
L.write_safetensors(os.path.join(work, "in", "head.safetensors"),
                    [("lm_head.weight", "BF16", (vocab, hidden), head.tobytes())])
meta = {"role": "root", "form": "hidden", "dataset": {"id": "fidelity--bench.validate"},
        "weights": {"repository": "bench/model", "revision": None}, "lane": "other",
        "engine": {"name": "bench", "version": "0"}, "device": "cpu", "tokenizer": {"id": "bench"}}
json.dump(meta, open(os.path.join(work, "in", "meta.json"), "w"))
PY
"$cli" pack --panel "$work/in/panel.jsonl" --tensors "$work/in/tensors" --head "$work/in/head.safetensors" \
  --meta "$work/in/meta.json" --out "$work/ds" >/dev/null
rm -rf "$work/in"

mapfile -t files < <(cd "$work/ds" && find . -type f | sort)
bytes=$(cd "$work/ds" && cat "${files[@]}" | wc -c)

now() { date +%s%N; }
best() { # best wall time in ns of "$@" over $repeats runs (after one warm-up)
  "$@" >/dev/null
  local b=0 t0 t1 d
  for _ in $(seq "$repeats"); do
    t0=$(now); "$@" >/dev/null; t1=$(now); d=$((t1 - t0))
    if [ "$b" = 0 ] || [ "$d" -lt "$b" ]; then b=$d; fi
  done
  echo "$b"
}

t_ssl=$(cd "$work/ds" && best openssl dgst -sha256 "${files[@]}")
t_fdl=$(best "$cli" validate --verify-tensors "$work/ds")
"$cli" validate --verify-tensors "$work/ds" >/dev/null || { echo "run-validate: validation failed" >&2; exit 1; }
# Process CPU time (user+sys) is not moved by other load on the machine: it shows the work done.
cpu() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'
  else
    echo "-1"
  fi
}
c_ssl=$(cd "$work/ds" && cpu openssl dgst -sha256 "${files[@]}")
c_fdl=$(cpu "$cli" validate --verify-tensors "$work/ds")

awk -v b="$bytes" -v s="$t_ssl" -v f="$t_fdl" -v cpus="$(nproc)" -v cs="$c_ssl" -v cf="$c_fdl" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  mb = b / 1e6
  printf "dataset:                        %.1f MB in %d cpus\n", mb, cpus
  printf "openssl dgst -sha256:           %8.3f s  %8.1f MB/s\n", s / 1e9, mb / (s / 1e9)
  printf "fidelis validate --verify-tensors: %5.3f s  %8.1f MB/s (every byte hashed ~2x)\n", f / 1e9, mb / (f / 1e9)
  if (cs >= 0)
    printf "cpu time (user+sys):            openssl %.2f s, fidelis %.2f s (load average %s)\n", cs, cf, load
  printf "ratio (openssl time / fidelis time): %.2f  (target >= 0.80)\n", s / f
}'

#!/usr/bin/env bash
# test_demo.sh - scripts/demo (what `make demo` runs) works from a clean directory: the real
# chain on qwen3.5-tiny-random (model init, quantize, capture both, compare, layers diff,
# divergence, attribute, check) ends with an advisory measurement, a layer attribution that
# starts at the first Gated DeltaNet layer, a divergence, an attribution and records that re-check. A second run
# over its own output writes byte-identical records (SOURCE_DATE_EPOCH is fixed), and it refuses
# to delete a directory it did not create.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
build="$(dirname "$FDL_CLI")"

"$root/scripts/demo" "$build" "$tmp/demo-out" > "$tmp/log1" 2>&1 || { cat "$tmp/log1"; exit 1; }
grep -q "measurement, advisory (exit 2)" "$tmp/log1"
grep -q "weights_reconstructed" "$tmp/log1"
grep -q "^diverges at step " "$tmp/log1"
grep -q "nothing diverges: the streams agree on all 24 common steps" "$tmp/log1"
grep -q "^largest relative error growth: boundary 1 (layer_00_linear_attention)" "$tmp/log1"
grep -q "^attribution first_divergent_path  int4_" "$tmp/log1"
grep -q "^OK  .*comparison-receipt.json" "$tmp/log1"
grep -q "^OK  .*attribution.json  fidelis.path-attribution.v1" "$tmp/log1"
for f in reference/fidelity-dataset.json candidate/fidelity-dataset.json \
         comparison/tokenwise-kld.npy request.json attribution.json; do
  test -f "$tmp/demo-out/$f" || { echo "missing $f"; cat "$tmp/log1"; exit 1; }
done
cp "$tmp/demo-out/comparison/comparison-receipt.json" "$tmp/receipt1.json"
cp "$tmp/demo-out/attribution.json" "$tmp/attribution1.json"

"$root/scripts/demo" "$build" "$tmp/demo-out" > "$tmp/log2" 2>&1 || { cat "$tmp/log2"; exit 1; }
cmp "$tmp/receipt1.json" "$tmp/demo-out/comparison/comparison-receipt.json"
cmp "$tmp/attribution1.json" "$tmp/demo-out/attribution.json"

mkdir "$tmp/precious"
touch "$tmp/precious/keep"
if "$root/scripts/demo" "$build" "$tmp/precious" > "$tmp/log3" 2>&1; then
  echo "demo deleted a directory it did not create" >&2
  exit 1
fi
test -f "$tmp/precious/keep"
echo "test_demo: ok"

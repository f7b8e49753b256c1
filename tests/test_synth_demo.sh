#!/usr/bin/env bash
# test_synth_demo.sh - scripts/demo (what `make demo` runs) works from a clean directory, reruns
# over its own previous output, and refuses to delete a directory it did not create.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
build="$(dirname "$FDL_CLI")"

"$root/scripts/demo" "$build" "$tmp/demo-out" > "$tmp/log1" 2>&1 || { cat "$tmp/log1"; exit 1; }
grep -q "REFUSED \[head_mismatch\]" "$tmp/log1"
grep -q "measurement, advisory (exit 2)" "$tmp/log1"
grep -q "^OK  .*comparison-receipt.json" "$tmp/log1"
test -f "$tmp/demo-out/comparison/tokenwise-kld.npy"
test ! -e "$tmp/demo-out/refused"

"$root/scripts/demo" "$build" "$tmp/demo-out" > "$tmp/log2" 2>&1 || { cat "$tmp/log2"; exit 1; }

mkdir "$tmp/precious"
touch "$tmp/precious/keep"
if "$root/scripts/demo" "$build" "$tmp/precious" > "$tmp/log3" 2>&1; then
  echo "demo deleted a directory it did not create" >&2
  exit 1
fi
test -f "$tmp/precious/keep"
echo "test_synth_demo: ok"

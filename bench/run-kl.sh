#!/usr/bin/env bash
# KL benchmarks, measured side by side in one run: fidelis against the reference estimators
# (numpy float64 and torch float64 log_softmax) on the same files, head replay against the
# bare GEMM work of the same tiles, and peak RSS at two panel sizes.
# Usage: bench/run-kl.sh BUILD_DIR   (env: FDL_BENCH_ROWS, FDL_BENCH_SUB, FDL_PYTHON)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
py=${FDL_PYTHON:-/usr/bin/python3}
bin="$build/bench/bench_kl"
oracles="$here/kl_oracles.py"
V=248320
ROWS=${FDL_BENCH_ROWS:-1024}
SUB=${FDL_BENCH_SUB:-64}
work=$(mktemp -d "${TMPDIR:-/tmp}/fdl-kl-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "-- logit form: vocab $V, $ROWS positions, $(nproc) cores"
"$py" "$oracles" gen "$work" "$V" "$ROWS"
fid=$("$bin" logits --vocab "$V" --rows "$ROWS" --ref "$work/ref.f32" --cand "$work/cand.f32")
echo "fidelis:            $fid"
fid_js=$("$bin" logits --vocab "$V" --rows "$ROWS" --ref "$work/ref.f32" --cand "$work/cand.f32" --js)
echo "fidelis with JS:    $fid_js"
fid_row=$(awk -v s="$(get seconds "$fid")" -v n="$ROWS" 'BEGIN{print s/n}')
# numpy allocates each 2 MB temporary with mmap by default; on virtual machines the page faults
# dominate. The warm-allocator run keeps temporaries on the heap: the conservative baseline.
np_def=$("$py" "$oracles" numpy "$work" "$V" "$ROWS" "$SUB")
np_warm=$(MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824 \
  "$py" "$oracles" numpy "$work" "$V" "$ROWS" "$SUB")
th=$(nproc)
warm=(env MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824)
torch_def=$("$py" "$oracles" torch "$work" "$V" "$ROWS" "$SUB" "$th")
torch=$("${warm[@]}" "$py" "$oracles" torch "$work" "$V" "$ROWS" "$SUB" "$th")
echo "numpy (default):    $np_def"
echo "numpy (warm alloc): $np_warm"
echo "torch (default):    $torch_def"
echo "torch (warm alloc): $torch"
echo "(numpy and torch are timed on the first $SUB rows and compared per row)"
awk -v f="$fid_row" -v a="$(get numpy_s_per_row "$np_def")" -v b="$(get numpy_s_per_row "$np_warm")" \
  'BEGIN{printf "ratio fidelis vs numpy: %.1fx (warm allocator), %.1fx (default allocator)\n", b/f, a/f}'
if [[ $torch == *"not installed"* ]]; then
  echo "ratio fidelis vs torch: skipped (torch: not installed)"
else
  awk -v f="$fid_row" -v t="$(get torch_s_per_row "$torch")" -v d="$(get torch_s_per_row "$torch_def")" \
    -v th="$th" 'BEGIN{printf "ratio fidelis vs torch (%d threads): %.1fx (warm allocator), %.1fx (default)\n", th, t/f, d/f}'
fi
awk -v f="$fid_row" -v j="$(get ms_per_row "$fid_js")" \
  'BEGIN{printf "JS sweep (--js, on by default for logit pairs): +%.3f ms/row; a row with JS costs %.2fx a KL-only row\n", j-f*1e3, j/(f*1e3)}'
rm -f "$work/ref.f32" "$work/cand.f32"

echo "-- hidden form: vocab $V, hidden 2560, BF16 hidden widened, shared head"
hid=$("$bin" hidden --vocab "$V" --hidden 2560 --rows 256)
echo "$hid"
echo "ratio fidelis / bare GEMM: $(get ratio "$hid")x wall, $(get cpu_ratio "$hid")x CPU time (target <= 1.15)"

echo "-- peak RSS, hidden form (vocab $V, hidden 2560 as docs/PERFORMANCE.md states, two generated heads), rows streamed in batches"
for n in 1024 16384; do
  r=$("$bin" hidden --vocab "$V" --hidden 2560 --rows "$n" --no-bare)
  awk -v n="$n" -v rss="$(get peak_rss_mib "$r")" -v head="$(get head_mib "$r")" \
    -v s="$(get fidelis_s "$r")" \
    'BEGIN{printf "positions %6d: peak RSS %.1f MiB = heads %.1f MiB + %.1f MiB (%.1f s)\n", n, rss, head, rss-head, s}'
done

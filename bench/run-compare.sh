#!/usr/bin/env bash
# End to end: the whole `fidelis compare` a user runs, at realistic sizes, with its peak RSS.
#   logit pair   128 positions x V 248320, F32 logits (254 MB per side)
#   hidden pair  256 positions, H 2560, V 248320 and 131072 (FDL_BENCH_COMPARE_VOCABS), BF16
#                hidden states and heads (--own-heads), each against its bare products
# Each compare runs three times; the best wall time and its peak RSS are printed. Hashing,
# loading, widening, replay, KL, statistics and the sealed receipt are all inside the number.
# With FDL_BASELINE_CLI set to another fidelis binary (an earlier build), both run on the same
# datasets, one after the other, and the ratio is printed.
# Usage: bench/run-compare.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
cli="$build/fidelis"
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The logit pair, packed from numpy-written inputs (the test library's writer).
# FDL_BENCH_COMPARE_LOGIT=0 skips the logit pair (its inputs take about 19 GB to generate).
logit=${FDL_BENCH_COMPARE_LOGIT:-1}
[ "$logit" = 0 ] || "$py" - "$work" "$cli" <<'PY'
import glob, os, sys
import numpy as np
sys.path.insert(0, os.environ.get("FDL_TESTS", "tests"))
import test_dataset_lib as L
work, cli = sys.argv[1], sys.argv[2]
L.CLI = cli
rng = np.random.default_rng(7)
for role in ("root", "quant"):
    # The same panel on both sides (same seed); the candidate's logits are the reference's plus
    # noise, rewritten in place before packing.
    inp = L.make_inputs(os.path.join(work, "in-" + role), n=2, length=65, form="logit",
                        vocab=248320, hidden=2560, in_dtype="F32", seed=1, role=role)
    if role == "quant":
        for path in sorted(glob.glob(os.path.join(inp["tensors"], "*.safetensors"))):
            n, hdr = L.read_safetensors_header(path)
            key = next(k for k in hdr if k != "__metadata__")
            raw = open(path, "rb").read()[8 + n:]
            x = np.frombuffer(raw, "<f4") + rng.standard_normal(len(raw) // 4).astype("<f4") * 0.05
            L.write_safetensors(path, [(key, "F32", hdr[key]["shape"], x.astype("<f4").tobytes())])
    p = L.pack(inp, os.path.join(work, "logit-" + role))
    if p.returncode not in (0, 2):
        sys.exit("pack failed: " + p.stderr)
PY

# Prints "SECONDS RSS_KIB" of the best of three runs of BIN compare ARGS.
best() {
  local bin=$1 t rss best_t="" best_rss="" i rc
  shift
  for i in 1 2 3; do
    rm -rf "$work/out"
    rc=0
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" compare "$@" --out "$work/out" --quiet \
      >/dev/null 2>"$work/err" || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
      echo "$bin compare exited $rc:" >&2
      cat "$work/err" >&2
      return 1
    fi
    read -r t rss < <(tail -n 1 "$work/time") # GNU time says "Command exited..." first on 2
    if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t best_rss=$rss; fi
  done
  echo "$best_t $best_rss"
}

row() { # label, then the compare arguments
  local label=$1 t rss bt brss
  shift
  read -r t rss < <(best "$cli" "$@")
  last_t=$t last_rss=$rss
  printf '%-36s fidelis %6.2f s  %6.0f MiB' "$label" "$t" "$(awk "BEGIN{print $rss/1024}")"
  if [ -n "${FDL_BASELINE_CLI:-}" ]; then
    read -r bt brss < <(best "$FDL_BASELINE_CLI" "$@")
    printf '   baseline %6.2f s  %6.0f MiB   speed %.2fx' "$bt" "$(awk "BEGIN{print $brss/1024}")" \
      "$(awk "BEGIN{print $bt/$t}")"
  fi
  printf '\n'
}

echo "fidelis compare, end to end, best of 3 ($(nproc) cores), wall time and peak RSS:"
[ "$logit" = 0 ] || row "logit, 128 x 248320 F32" "$work/logit-root" "$work/logit-quant"
# The hidden pair at each vocabulary (issue 24: the ratio and the RSS at V 131072 and 248320).
for V in ${FDL_BENCH_COMPARE_VOCABS:-248320 131072}; do
rm -rf "$work/hidden"
"$cli" synth --out "$work/hidden" --vocab "$V" --hidden 2560 --contexts 2 \
  --tokens-per-context 129 >/dev/null
row "hidden, 256 x 2560 -> $V BF16" "$work/hidden/reference" "$work/hidden/candidate" --own-heads

# The floor of a hidden compare: the bare products alone, each side's hidden states times its
# own head, in numpy float32 (its OpenBLAS on every core), best of three; the heads widened
# from BF16 beforehand and outside the timing. Issue 24's target: compare <= 1.3x this.
bare=$("$py" - "$work/hidden" <<'PY'
import glob, json, os, sys, time
import numpy as np
root = sys.argv[1]

def tensor(path):
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    hdr = json.loads(raw[8:8 + n])
    key = next(k for k in hdr if k != "__metadata__")
    e = hdr[key]
    b0, b1 = e["data_offsets"]
    bits = np.frombuffer(raw[8 + n + b0:8 + n + b1], "<u2").astype(np.uint32) << 16
    return bits.view(np.float32).reshape(e["shape"])

sides = []
for side in ("reference", "candidate"):
    d = os.path.join(root, side)
    h = np.concatenate([tensor(p) for p in sorted(glob.glob(os.path.join(d, "capture", "hidden_*.safetensors")))])
    sides.append((np.ascontiguousarray(h), tensor(os.path.join(d, "head", "weight.safetensors"))))
best = None
for _ in range(3):
    t0 = time.perf_counter()
    for h, w in sides:
        h @ w.T
    t = time.perf_counter() - t0
    best = t if best is None or t < best else best
print("%.3f" % best)
PY
)
awk -v c="$last_t" -v b="$bare" -v v="$V" -v rss="$last_rss" 'BEGIN {
  heads = 2 * v * 2560 * 2 / 1048576
  printf "V %d: hidden compare vs its bare products (numpy float32, OpenBLAS): %.2f s vs %.2f s, %.2fx (target <= 1.3x); peak RSS %.0f MiB = the two heads %.0f MiB + %.0f MiB (target <= +256)\n", v, c, b, c / b, rss / 1024, heads, rss / 1024 - heads }'
done

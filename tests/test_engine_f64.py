#!/usr/bin/env python3
"""The engine's float64 oracle (`fidelis generate --precision float64`, fdl_engine_run_f64)
against the independent numpy float64 forward pass of tests/engine_models.py, on tiny random
models covering the flags tests/test_engine_oracle.py covers: Llama untied and tied, Qwen2 with
q/k/v bias, Qwen3 with q/k norm and head_dim != hidden/heads, Llama with attention_bias (o bias
too), GQA ratios 1, 2 and 4, BF16, F16 and F32 weights, shards, rope_parameters, a vocabulary
over two argmax chunks, a 300-token context, one token, and a GPTQ int4 checkpoint
(`fidelis quantize --scope all-linear`, whose reconstruction numpy unpacks itself).

Agreement is per row, max_j |c_j - o_j| / max_j |o_j|, over every row's logits:
  * float64 mode vs numpy:          <= 1e-12 (both are double; they differ only in summation
                                    order and in exp/sin/cos/log implementations);
  * float32 engine vs float64 mode: <= 1e-4 (the float32 engine's contract);
  * float64 mode with --threads 1, 2 and 3: bit-identical.
The float64 mode's refusals are checked too: --new/--tokens-out, --greedy-out and --path decode
are usage errors (exit 4) that write nothing, an id outside the vocabulary is refused (exit 3).
Exits 77 (skipped) when the fidelis executable or numpy is missing.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import engine_models as em  # noqa: E402

CLI = os.environ.get("FDL_CLI", "")
TMP = tempfile.mkdtemp(prefix="fdl-f64-")
TOL_F64 = 1e-12
TOL_F32 = 1e-4
FAILS = []

CASES = em.DENSE_CASES


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)
    return cond


def generate(model, ids, out, *extra):
    cmd = [CLI, "generate", "--model", model, "--ids", json.dumps(ids), "--rows", "all",
           "--logits-out", out, *extra]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return np.load(out), dt


def rel_rows(c, o):
    """Worst row's max |c - o| / max |o|."""
    c = c.astype(np.float64)
    return float(np.max(np.max(np.abs(c - o), axis=1) / np.max(np.abs(o), axis=1)))


# ---- GPTQ: numpy's own unpacking of a `fidelis quantize` checkpoint -------------------------

def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    return {k: (e["dtype"], tuple(e["shape"]), data[e["data_offsets"][0]:e["data_offsets"][1]])
            for k, e in header.items() if k != "__metadata__"}


def nibbles(a):
    """int32 [r, c] -> [r, 8c]: nibble k of a[r][c] at column 8c + k (low nibble first)."""
    u = a.astype(np.uint32)
    return np.stack([(u >> (4 * k)) & 15 for k in range(8)], axis=-1).reshape(a.shape[0], -1)


def gptq_stored(model):
    """The quantized checkpoint as `stored` for em.forward: each GPTQ matrix replaced by its
    decode w[o, i] = scale[g, o] * (q[o, i] - zero[g, o]), g = g_idx[i] (exact in float32)."""
    st = read_safetensors(os.path.join(model, "model.safetensors"))
    out = {k: v for k, v in st.items() if not k.endswith((".qweight", ".qzeros", ".scales",
                                                          ".g_idx"))}
    packed = [k for k in st if k.endswith(".qweight")]
    check(len(packed) == 7 * len({k.split(".")[2] for k in packed}),
          "gptq: %d packed matrices, expected 7 per layer" % len(packed))
    for k in packed:
        stem = k[:-len(".qweight")]

        def arr(suffix, dt):
            _, shape, raw = st[stem + suffix]
            return np.frombuffer(raw, dtype=dt).reshape(shape)

        q = nibbles(arr(".qweight", "<i4").T)  # [out, in]
        zero = nibbles(arr(".qzeros", "<i4")) + 1  # [groups, out]
        scales = arr(".scales", "<f2").astype(np.float64)  # [groups, out]
        g = arr(".g_idx", "<i4")
        w = scales[g].T * (q.astype(np.float64) - zero[g].T.astype(np.float64))
        out[stem + ".weight"] = ("F32", w.shape, w.astype("<f4").tobytes())
        check(np.array_equal(w.astype(np.float32).astype(np.float64), w),
              "%s: the decode is not exact in float32" % stem)
    return out


def measure(name, c, model, stored, ids):
    ol = em.forward(c, stored, ids)[1]
    try:
        f64, dt = generate(model, ids, os.path.join(TMP, name + "-f64-1.npy"),
                           "--precision", "float64", "--threads", "1")
        f32, _ = generate(model, ids, os.path.join(TMP, name + "-f32.npy"))
    except RuntimeError as e:
        check(False, "%s: %s" % (name, e))
        return
    if not check(f64.dtype == np.float64 and f64.shape == (len(ids), c["vocab_size"]),
                 "%s: float64 logits are %s %s" % (name, f64.dtype, f64.shape)):
        return
    e64, e32 = rel_rows(f64, ol), rel_rows(f32, f64)
    print("%-30s n=%-3d f64 vs numpy %.2e  f32 vs f64 %.2e  (f64 %.2fs)"
          % (name, len(ids), e64, e32, dt))
    check(e64 <= TOL_F64, "%s: float64 vs numpy rel %.3e > %g" % (name, e64, TOL_F64))
    check(e32 <= TOL_F32, "%s: float32 vs float64 rel %.3e > %g" % (name, e32, TOL_F32))
    for t in (2, 3):
        try:
            r, _ = generate(model, ids, os.path.join(TMP, "%s-f64-%d.npy" % (name, t)),
                            "--precision", "float64", "--threads", str(t))
        except RuntimeError as e:
            check(False, "%s: %s" % (name, e))
            continue
        check(np.array_equal(r.view(np.uint64), f64.view(np.uint64)),
              "%s: float64 logits with --threads %d differ bitwise from --threads 1" % (name, t))


def refusals(model):
    base = [CLI, "generate", "--model", model, "--ids", "[1, 2]", "--precision", "float64"]
    for extra in (["--new", "2", "--tokens-out", "t.json"], ["--greedy-out", "g.json"],
                  ["--path", "decode", "--logits-out", "l.npy"]):
        out = os.path.join(TMP, extra[-1])
        r = subprocess.run(base + extra[:-1] + [out], capture_output=True, text=True)
        check(r.returncode == 4 and "need float32" in r.stderr and not os.path.exists(out),
              "float64 with %s: exit %d, %r" % (extra[0], r.returncode, r.stderr.strip()))
    out = os.path.join(TMP, "vocab.npy")
    r = subprocess.run([CLI, "generate", "--model", model, "--ids", "[1, 100000]", "--precision",
                        "float64", "--logits-out", out], capture_output=True, text=True)
    check(r.returncode == 3 and "outside the vocabulary" in r.stderr and not os.path.exists(out),
          "float64 with an id outside the vocabulary: exit %d, %r"
          % (r.returncode, r.stderr.strip()))


def main():
    if not CLI or not os.path.exists(CLI):
        print("skipped: the fidelis executable (FDL_CLI) is not built")
        return 77
    for seed, (name, kw, dtype, shards, n) in enumerate(CASES):
        c = em.make_config(dtype=dtype, **kw)
        d = os.path.join(TMP, name)
        stored = em.write_model(d, c, em.make_weights(c, seed + 11), dtype=dtype, shards=shards)
        rng = np.random.default_rng(seed + 100)
        measure(name, c, d, stored, [int(i) for i in rng.integers(0, c["vocab_size"], n)])
    # GPTQ: every linear layer int4 g32, the engine multiplying the float32 decode.
    c = em.make_config(kv_heads=2)
    src, q = os.path.join(TMP, "gptq-src"), os.path.join(TMP, "gptq-all-linear")
    em.write_model(src, c, em.make_weights(c, 7), dtype="BF16")
    r = subprocess.run([CLI, "quantize", "--group-size", "32", "--scope", "all-linear", src, q],
                       capture_output=True, text=True)
    if check(r.returncode == 0, "quantize: exit %d: %s" % (r.returncode, r.stderr.strip())):
        ids = [int(i) for i in np.random.default_rng(5).integers(0, c["vocab_size"], 29)]
        measure("llama-gptq-int4-g32", c, q, gptq_stored(q), ids)
    refusals(os.path.join(TMP, CASES[0][0]))
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("all float64 oracle checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

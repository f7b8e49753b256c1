"""test_gguf_models.py - llama.cpp's GGUF files as fidelis models, held to llama.cpp's own output
(../shared/vectors/gguf/, README there says how each file was made).

- `fidelis tensor ls --json` of every vector GGUF: each tensor's type, row-major shape, offset,
  size and the sha256 of its stored bytes equal the vector's, and `dequantized_sha256` equals
  the sha256 of ggml's own to_float output (`sha256_f32`), byte for byte.
- The F32 GGUF's logits on ids.json[0] agree with llama.cpp's within 1e-4 relative per row
  (max |diff| / max |llama.cpp logit|; the README measures llama.cpp itself at 7e-7 from
  float64), with the same argmax on every row, and are bit-identical to the Hugging Face
  twin's (hf/llama: the same weights before the converter's Q/K row permutation).
- Every quantized GGUF runs as its exact float32 dequantization: its logits agree with
  llama.cpp's on the dequantized F32 file (deq/) within 1e-4 per row with the same argmaxes.
  Against llama.cpp's native quantized run the difference is printed, not asserted: llama.cpp
  also quantizes the activations in its dot products.
- A quantized matrix is held in its blocks and each product dequantizes the rows it reaches;
  that gives the bits of the same model held in float32: llama-Q8_0.gguf against a Hugging Face
  directory of its float32 dequantization made here by a numpy transcription of Q8_0 (x = d * q,
  checked against the vector's sha256_f32), Q/K rows put back, logits identical on a long context
  (the GEMM's tile path) and on three tokens (its small-M path).
- Bits do not move with --isa or --threads (the engine's contract), on F32 and Q4_K_M.
- The three architectures, from the engine's own tiny presets written as GGUF by
  tests/gguf_write.py (llama.cpp's layout: names, metadata, llama's Q/K row permutation; BF16
  as stored): Llama, Qwen2 (q/k/v biases, tied) and Qwen3 (q/k norms) give logits bit-identical
  to their Hugging Face directories.
- Qwen3.5 (`qwen35`), from the engine's qwen3.5-tiny-random preset (2 key heads, 4 value heads:
  the converter's tiled V-head order is exercised) written as llama.cpp's converter writes it
  (tests/gguf_write.py: norms as 1 + w, A_log as -exp(A_log), conv1d squeezed, V heads tiled, a
  multi-token-prediction block appended): with A_log = 0 (so -exp(A_log) loses nothing) the BF16
  GGUF gives logits bit-identical to the HF directory, and a Q8_0 GGUF (quantized by
  gguf_write, its float32 dequantization put back in HF order for a twin directory) gives
  logits and a capture bit-identical to the twin's; with the preset's A_log, GGUF and HF agree
  within 1e-5 per row with the same argmax (the converter rounds exp(A_log) to float32).
- llama.cpp's KLD workflow end to end (kld/): `pack --from-llamacpp-kld base.kld` with its panel,
  a logit-form capture of llama-spm-Q4_0.gguf on that panel, `compare`: same top p equals
  llama-perplexity's printed 74.603 +/- 3.893 % exactly at its precision, and Mean KLD is within
  1 % of its printed 0.105386 (not closer: llama.cpp's Q side ran its native Q4_0 dot products,
  which quantize activations, where fidelis runs the dequantized weights exactly; and fidelis'
  KL is over every entry of each renormalized row, without the -16 cut-off).
- `capture` of the HF directory and of the F32 GGUF give the same capture content (tensor
  payloads byte for byte); a Q4_K_M capture declares codec gguf:q4_K, its per-class ggml types
  and weights_decode, validates, and `compare` against the F32 capture discloses
  weights_reconstructed; `report` renders the receipt.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_models  # noqa: E402
import gguf_write  # noqa: E402

CLI = os.environ.get("FDL_CLI", "fidelis")
SHARED = os.environ.get("FDL_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
G = os.path.join(SHARED, "vectors", "gguf")
TOL = 1e-4
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def ggufs():
    names = sorted(f[:-5] for f in os.listdir(G) if f.startswith("llama-") and f.endswith(".gguf"))
    return [(os.path.join(G, n + ".gguf"), os.path.join(G, n + ".tensors.json")) for n in names] + [
        (os.path.join(G, "kld", n + ".gguf"), os.path.join(G, "kld", n + ".tensors.json"))
        for n in ("llama-spm-F32", "llama-spm-Q4_0")]


def tensor_listing():
    total = 0
    for path, meta in ggufs():
        rc, out = run("tensor", "ls", path, "--json")
        if not check(rc == 0, f"tensor ls {path}: {rc} {out[-300:]}"):
            continue
        got = {t["name"]: t for t in json.loads(out)["tensors"]}
        want = json.load(open(meta))
        check(len(got) == len(want["tensors"]), f"{path}: {len(got)} tensors listed")
        for w in want["tensors"]:
            g = got.get(w["name"])
            if not check(g is not None, f"{path}: {w['name']} not listed"):
                continue
            total += 1
            for gk, wk in (("type", "type"), ("type_id", "type_id"), ("shape", "shape_row_major"),
                           ("offset", "offset"), ("nbytes", "nbytes"), ("sha256", "sha256_raw"),
                           ("dequantized_sha256", "sha256_f32")):
                check(g[gk] == w[wk], f"{path}: {w['name']}: {gk} {g[gk]} != {wk} {w[wk]}")
    print(f"tensor ls: {total} tensors of {len(ggufs())} files match ggml's hashes")


def logits(model, out, *extra):
    ids = json.dumps(json.load(open(os.path.join(G, "ids.json")))[0])
    rc, text = run("generate", "--model", model, "--ids", ids, "--rows", "all", "--logits-out", out,
                   *extra)
    check(rc == 0, f"generate {model} {extra}: {rc} {text[-300:]}")
    return np.load(out) if rc == 0 else None


def row_rel(a, ref):
    return float((np.abs(a.astype(np.float64) - ref) .max(1) / np.abs(ref).max(1)).max())


def forward(t):
    f32 = logits(os.path.join(G, "llama-F32.gguf"), os.path.join(t, "f32.npy"))
    hf = logits(os.path.join(G, "hf", "llama"), os.path.join(t, "hf.npy"))
    ref = np.load(os.path.join(G, "llama-F32.logits.ctx0.npy")).astype(np.float64)
    if f32 is None or hf is None:
        return
    check(np.array_equal(f32.view(np.uint32), hf.view(np.uint32)), "F32 GGUF logits != HF dir's")
    e = row_rel(f32, ref)
    print(f"llama-F32.gguf vs llama.cpp: max row rel {e:.3g}")
    check(e <= TOL, f"F32 GGUF vs llama.cpp: {e:.3g} > {TOL}")
    check((f32.argmax(1) == ref.argmax(1)).all(), "F32 GGUF argmax differs from llama.cpp's")
    for path, _ in ggufs():
        name = os.path.basename(path)[:-5]
        deq = os.path.join(G, "deq", name + ".deq.logits.ctx0.npy")
        if not os.path.exists(deq):
            continue
        a = logits(path, os.path.join(t, name + ".npy"))
        if a is None:
            continue
        d = np.load(deq).astype(np.float64)
        native = np.load(os.path.join(G, name + ".logits.ctx0.npy")).astype(np.float64)
        e, en = row_rel(a, d), row_rel(a, native)
        print(f"{name}: vs llama.cpp dequantized {e:.3g}; vs llama.cpp native {en:.3g} (reported)")
        check(e <= TOL, f"{name} vs llama.cpp's dequantized run: {e:.3g} > {TOL}")
        check((a.argmax(1) == d.argmax(1)).all(), f"{name}: argmax differs from the deq run's")


def q8_0(raw):
    """ggml's block_q8_0: an f16 scale d, then 32 int8 q; x = d * q (exact in float32)."""
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = b[:, :2].copy().view("<f2").astype(np.float32)
    q = b[:, 2:].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(-1)


def blocks_as_float32(t):
    info = json.load(open(os.path.join(G, "llama-Q8_0.tensors.json")))
    raw = open(os.path.join(G, "llama-Q8_0.gguf"), "rb").read()
    hf = os.path.join(G, "hf", "llama")
    cfg = json.load(open(os.path.join(hf, "config.json")))
    d = cfg["head_dim"]
    hf_of = {gguf_write.gguf_name(k): k
             for k in gguf_write.read_safetensors(os.path.join(hf, "model.safetensors"))}
    tensors = []
    for ti in info["tensors"]:
        b = raw[ti["offset"]:ti["offset"] + ti["nbytes"]]
        v = q8_0(b) if ti["type"] == "q8_0" else np.frombuffer(b, "<f4")
        check(hashlib.sha256(v.astype("<f4").tobytes()).hexdigest() == ti["sha256_f32"],
              f"numpy's Q8_0 of {ti['name']} is not ggml's")
        shape = ti["shape_row_major"]
        a = v.reshape(shape)
        if ti["name"].endswith(("attn_q.weight", "attn_k.weight")):
            # GGUF row 2i + j of each head of d rows is HF row j*d/2 + i
            a = a.reshape(-1, d // 2, 2, shape[1]).transpose(0, 2, 1, 3).reshape(shape)
        tensors.append((hf_of[ti["name"]], "F32", shape, a.astype("<f4").tobytes()))
    out = os.path.join(t, "q8_0-as-f32")
    os.mkdir(out)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    engine_models.write_safetensors(os.path.join(out, "model.safetensors"), sorted(tensors))
    ctx0 = json.load(open(os.path.join(G, "ids.json")))[0]
    for ids, what in ((ctx0, "long context"), (ctx0[:3], "three tokens")):
        got = []
        for m in (os.path.join(G, "llama-Q8_0.gguf"), out):
            o = os.path.join(t, "blocks-%d-%d.npy" % (len(ids), len(got)))
            rc, text = run("generate", "--model", m, "--ids", json.dumps(ids), "--rows", "all",
                           "--logits-out", o)
            got.append(np.load(o) if check(rc == 0, f"generate {m}: {rc} {text[-300:]}") else None)
        if got[0] is not None and got[1] is not None:
            check(np.array_equal(got[0].view(np.uint32), got[1].view(np.uint32)),
                  f"Q8_0 held in blocks vs its float32 copy, {what}: logits differ")
            print(f"llama-Q8_0 in blocks vs float32, {what}: logits identical")


def q35_dir(src, out, zero_alog=False, twin=None):
    """A copy of the preset dir src at out; A_log zeroed; or, with twin (HF name -> float32),
    every text tensor float32 and the twin's matrices in place of the stored ones."""
    shutil.copytree(src, out)
    st = os.path.join(out, "model.safetensors")
    tensors = []
    for k, (dt, sh, raw) in gguf_write.read_safetensors(st).items():
        if zero_alog and k.endswith("A_log"):
            raw = np.zeros(sh, "<f4").tobytes()
        if twin is not None and "visual" not in k:
            v = twin[k] if k in twin else gguf_write.as_f32(dt, sh, raw)
            dt, raw = "F32", np.asarray(v, "<f4").tobytes()
        tensors.append((k, dt, sh, raw))
    engine_models.write_safetensors(st, sorted(tensors))
    if twin is not None:
        cfg = json.load(open(os.path.join(out, "config.json")))
        cfg["torch_dtype"] = cfg["text_config"]["torch_dtype"] = "float32"
        json.dump(cfg, open(os.path.join(out, "config.json"), "w"))


def q35_logits(t, model, tag):
    out = os.path.join(t, f"q35-{tag}.npy")
    ids = json.dumps([1, 5, 9, 200, 33, 47, 81, 100, 7, 3, 250] + list(range(12, 40)))
    rc, text = run("generate", "--model", model, "--ids", ids, "--rows", "all", "--logits-out", out)
    return np.load(out) if check(rc == 0, f"generate {tag}: {rc} {text[-300:]}") else None


def qwen35(t):
    pre = os.path.join(t, "q35")
    rc, text = run("model", "init", "--preset", "qwen3.5-tiny-random", "--seed", "5", pre)
    if not check(rc == 0, f"model init qwen3.5-tiny-random: {rc} {text[-200:]}"):
        return
    z = os.path.join(t, "q35-zero")
    q35_dir(pre, z, zero_alog=True)
    cfg = json.load(open(os.path.join(z, "config.json")))
    bf, q8 = os.path.join(t, "q35-bf16.gguf"), os.path.join(t, "q35-q8_0.gguf")
    gguf_write.qwen35_to_gguf(z, cfg, bf, mtp=True)
    deq = gguf_write.qwen35_to_gguf(z, cfg, q8, quant="q8_0", mtp=True)
    tw = os.path.join(t, "q35-twin")
    q35_dir(z, tw, twin=deq)
    pairs = ((z, bf, "BF16 GGUF vs HF dir"), (tw, q8, "Q8_0 GGUF vs its float32 twin"))
    for hf, gg, what in pairs:
        a, b = q35_logits(t, hf, "hf"), q35_logits(t, gg, "gguf")
        os.unlink(os.path.join(t, "q35-hf.npy"))
        os.unlink(os.path.join(t, "q35-gguf.npy"))
        if a is not None and b is not None:
            check(np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"qwen35 {what}: logits differ")
            print(f"qwen35 {what}: logits identical")
    panel = os.path.join(pre, "panel.jsonl")
    caps = []
    for model, tag in ((tw, "twin"), (q8, "q8")):
        caps.append(os.path.join(t, "q35-cap-" + tag))
        rc, text = run("capture", "--model", model, "--panel", panel, "--out", caps[-1],
                       "--created-utc", "2026-01-01T00:00:00Z")
        check(rc == 0, f"capture qwen35 {tag}: {rc} {text[-300:]}")
    if all(os.path.isdir(c) for c in caps):
        check(payloads(caps[0]) == payloads(caps[1]) and payloads(caps[0]),
              "qwen35 Q8_0 GGUF and twin captures differ in their tensors")
    real = os.path.join(t, "q35-real.gguf")
    gguf_write.qwen35_to_gguf(pre, json.load(open(os.path.join(pre, "config.json"))), real)
    a, b = q35_logits(t, pre, "real-hf"), q35_logits(t, real, "real-gguf")
    if a is not None and b is not None:
        e = row_rel(b, a.astype(np.float64))
        print(f"qwen35 BF16 GGUF vs HF dir with the preset's A_log: max row rel {e:.3g}")
        check(e <= 1e-5 and (a.argmax(1) == b.argmax(1)).all(),
              f"qwen35 GGUF vs HF with A_log: {e:.3g} > 1e-5 or argmax differs")


def knobs(t):
    for name in ("llama-F32", "llama-Q4_K_M"):
        path = os.path.join(G, name + ".gguf")
        base = logits(path, os.path.join(t, name + "-base.npy"))
        for extra in (("--isa", "scalar"), ("--isa", "avx2"), ("--isa", "avx512"),
                      ("--threads", "1"), ("--threads", "3")):
            ids = json.dumps(json.load(open(os.path.join(G, "ids.json")))[0])
            out = os.path.join(t, name + "-" + "-".join(extra) + ".npy")
            rc, text = run("generate", "--model", path, "--ids", ids, "--rows", "all",
                           "--logits-out", out, *extra)
            if rc != 0 and "isa" in extra[0] and "cannot run on this CPU" in text:
                print(f"{name} {extra}: this CPU lacks it (skipped)")
                continue
            if check(rc == 0, f"{name} {extra}: {rc} {text[-200:]}") and base is not None:
                check(np.array_equal(np.load(out).view(np.uint32), base.view(np.uint32)),
                      f"{name}: {extra} moved the bits")


def presets(t):
    for preset in ("llama-tiny-random", "qwen2-tiny-random", "tiny-random"):
        d = os.path.join(t, preset)
        rc, text = run("model", "init", "--preset", preset, "--seed", "5", d)
        if not check(rc == 0, f"model init {preset}: {rc} {text[-200:]}"):
            continue
        g = os.path.join(t, preset + ".gguf")
        gguf_write.hf_to_gguf(d, g)
        ids = json.dumps(list(range(1, 40)))
        outs = []
        for m, tag in ((d, "hf"), (g, "gguf")):
            out = os.path.join(t, f"{preset}-{tag}.npy")
            rc, text = run("generate", "--model", m, "--ids", ids, "--rows", "all",
                           "--logits-out", out)
            outs.append(np.load(out) if check(rc == 0, f"{preset} {tag}: {rc} {text[-300:]}")
                        else None)
        if outs[0] is not None and outs[1] is not None:
            check(np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32)),
                  f"{preset}: GGUF logits differ from the HF directory's")
            print(f"{preset}: GGUF and HF logits identical")


def rope_scaled(t):
    """Llama with RoPE scaling, as a Hugging Face directory and as the converter writes it in
    GGUF (linear, yarn: metadata keys; llama3: the rope_freqs divisors in float32). Linear and
    yarn are the same formula from the same numbers: bit-identical logits. llama3's divisors
    were rounded to float32: within 1e-5 per row, the same argmax (and 5e-3 from plain RoPE, so
    a GGUF whose scaling was ignored fails)."""
    d0 = os.path.join(t, "rope-base")
    rc, text = run("model", "init", "--preset", "llama-tiny-random", "--seed", "7", d0)
    if not check(rc == 0, f"model init: {rc} {text[-200:]}"):
        return
    ids = json.dumps([(7 * i + 3) % 256 for i in range(120)])
    plain = None
    for kind, rs in (("none", None),
                     ("linear", {"rope_type": "linear", "factor": 3.0}),
                     ("yarn", {"rope_type": "yarn", "factor": 4.0,
                               "original_max_position_embeddings": 32}),
                     ("llama3", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 32})):
        d = os.path.join(t, "rope-" + kind)
        shutil.copytree(d0, d)
        cfg = json.load(open(os.path.join(d, "config.json")))
        cfg["rope_scaling"] = rs
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
        g = d + ".gguf"
        gguf_write.hf_to_gguf(d, g)
        outs = []
        for m, tag in ((d, "hf"), (g, "gguf")):
            out = os.path.join(t, f"rope-{kind}-{tag}.npy")
            rc, text = run("generate", "--model", m, "--ids", ids, "--rows", "all",
                           "--logits-out", out)
            outs.append(np.load(out) if check(rc == 0, f"rope {kind} {tag}: {rc} {text[-300:]}")
                        else None)
        if outs[0] is None or outs[1] is None:
            continue
        hf, gg = outs
        if kind == "none":
            plain = hf
        moved = row_rel(hf, plain) if plain is not None else 0.0
        if kind == "llama3":
            e = row_rel(gg, hf)
            check(e <= 1e-5 and np.array_equal(gg.argmax(1), hf.argmax(1)),
                  f"rope llama3: GGUF vs HF rel {e:.2e} > 1e-5 or argmax differs")
            print(f"rope llama3: GGUF (rope_freqs) vs HF rel {e:.2e}; {moved:.2e} from plain RoPE")
        else:
            check(np.array_equal(gg.view(np.uint32), hf.view(np.uint32)),
                  f"rope {kind}: GGUF logits differ from the HF directory's")
            print(f"rope {kind}: GGUF and HF logits identical; {moved:.2e} from plain RoPE")
        check(kind == "none" or moved > 5e-3, f"rope {kind}: scaling moved the logits only "
              f"{moved:.2e} from plain RoPE")
    # What a transformers config cannot say, or says otherwise, is refused by name.
    kv, kv_str = gguf_write.kv, gguf_write.kv_str
    zero = np.zeros(8, dtype="<f4")
    zero[1:] = 1.0
    for name, d, meta, items, needle in (
            ("longrope", "none", [kv_str("llama.rope.scaling.type", "longrope"),
                                  kv("llama.rope.scaling.factor", 6, 2.0)], [], "longrope"),
            ("attn-factor", "yarn", [kv("llama.rope.scaling.attn_factor", 6, 0.5)], [],
             "attn_factor"),
            ("log-multiplier", "yarn", [kv("llama.rope.scaling.yarn_log_multiplier", 6, 0.1)], [],
             "yarn_log_multiplier"),
            ("two-scalings", "linear", [], [("rope_freqs.weight", (8,), "F32",
                                             np.ones(8, dtype="<f4").tobytes())],
             "two RoPE scalings"),
            ("zero-divisor", "none", [], [("rope_freqs.weight", (8,), "F32", zero.tobytes())],
             "positive finite divisor")):
        g = os.path.join(t, f"rope-refuse-{name}.gguf")
        gguf_write.hf_to_gguf(os.path.join(t, "rope-" + d), g, meta, items)
        rc, text = run("generate", "--model", g, "--ids", "[1, 2]", "--logits-out",
                       os.path.join(t, "refused.npy"))
        check(rc > 0 and needle in text,
              f"rope refusal {name}: exit {rc}, expected one naming {needle!r}: {text[-300:]}")
        print(f"rope refusal {name}: exit {rc}: {text.strip().splitlines()[-1][:160]}")


def kld_workflow(t):
    k = os.path.join(G, "kld")
    base, panel, cand, cmp_out = (os.path.join(t, x) for x in ("kb", "kp.jsonl", "kq", "kc"))
    rc, text = run("pack", "--from-llamacpp-kld", os.path.join(k, "base.kld"), "--tokenizer",
                   os.path.join(k, "llama-spm-F32.gguf"), "--out", base, "--panel-out", panel)
    if not check(rc == 0, f"pack --from-llamacpp-kld: {rc} {text[-300:]}"):
        return
    rc, text = run("capture", "--model", os.path.join(k, "llama-spm-Q4_0.gguf"), "--panel", panel,
                   "--out", cand, "--form", "logit", "--created-utc", "2026-01-01T00:00:00Z")
    if not check(rc == 0, f"capture llama-spm-Q4_0: {rc} {text[-300:]}"):
        return
    rc, text = run("compare", base, cand, "--out", cmp_out)
    if not check(rc in (0, 2), f"compare base.kld vs Q4_0: {rc} {text[-300:]}"):
        return
    ext = json.load(open(os.path.join(cmp_out, "comparison-receipt.json")))
    ext = ext["fidelis_extensions"]["llamacpp_compatible"]
    kld, top = ext["kld"]["mean"], ext["same_top"]
    print(f"kld workflow: Mean KLD {kld:.6f} (llama.cpp 0.105386), same top "
          f"{100 * top['value']:.3f} +/- {100 * top['stderr']:.3f} % (llama.cpp 74.603 +/- 3.893)")
    check(abs(kld - 0.105386) / 0.105386 < 0.01, f"Mean KLD {kld} not within 1% of 0.105386")
    # the GGUF's own vocabulary encodes a prompt and shows the continuation as text
    rc, text = run("generate", "--model", os.path.join(k, "llama-spm-Q4_0.gguf"), "--prompt",
                   "The quick brown fox", "--new", "3", "--tokens-out", os.path.join(t, "tk.json"))
    check(rc == 0 and "prompt       <s> The quick brown fox" in text,
          f"generate --prompt on a GGUF: {rc} {text[-300:]}")
    check(round(100 * top["value"], 3) == 74.603 and round(100 * top["stderr"], 3) == 3.893,
          f"same top {top} differs from llama.cpp's 74.603 +/- 3.893")


def write_panel(path):
    ids = json.load(open(os.path.join(G, "ids.json")))
    with open(path, "w") as f:
        for i, t in enumerate(ids):
            f.write(json.dumps({"index": i, "window_id": f"w{i}", "domain": "d",
                                "document_id": f"doc/{i}", "role": "final", "tokens": t}) + "\n")


def payloads(ds):
    cap = os.path.join(ds, "capture")
    out = {}
    for f in sorted(os.listdir(cap)):
        if f.endswith(".safetensors"):
            b = open(os.path.join(cap, f), "rb").read()
            n = int.from_bytes(b[:8], "little")
            out[f] = b[8 + n:]
    return out


def captures(t):
    panel = os.path.join(t, "panel.jsonl")
    write_panel(panel)
    utc = "2026-01-01T00:00:00Z"
    outs = {}
    for tag, model in (("hf", os.path.join(G, "hf", "llama")),
                       ("f32", os.path.join(G, "llama-F32.gguf")),
                       ("q4", os.path.join(G, "llama-Q4_K_M.gguf"))):
        outs[tag] = os.path.join(t, "cap-" + tag)
        rc, text = run("capture", "--model", model, "--panel", panel, "--out", outs[tag],
                       "--created-utc", utc)
        if not check(rc == 0, f"capture {tag}: {rc} {text[-300:]}"):
            return
    check(payloads(outs["hf"]) == payloads(outs["f32"]) and payloads(outs["hf"]),
          "HF dir and F32 GGUF captures differ in their tensors")
    text = json.dumps(json.load(open(os.path.join(outs["q4"], "fidelity-dataset.json")))) + \
        json.dumps(json.load(open(os.path.join(outs["q4"], "runtime", "capture-runtime.json"))))
    check('"gguf:q4_K"' in text, "Q4_K_M capture does not declare codec gguf:q4_K")
    check("gguf-dequant-to-float32" in text, "Q4_K_M capture has no weights_decode")
    rc, text = run("validate", outs["q4"])
    check(rc == 0, f"validate Q4_K_M capture: {rc} {text[-300:]}")
    cmp_out = os.path.join(t, "cmp")
    rc, text = run("compare", outs["f32"], outs["q4"], "--own-heads", "--out", cmp_out)
    # exit 2: advisory, as a weights-decoded capture makes it
    if check(rc in (0, 2), f"compare F32 vs Q4_K_M: {rc} {text[-300:]}"):
        r = json.load(open(os.path.join(cmp_out, "comparison-receipt.json")))
        check("weights_reconstructed" in [d["code"] for d in r["disclosures"]],
              "compare does not disclose weights_reconstructed")
        rc, text = run("report", cmp_out, "--out", os.path.join(t, "report"))
        check(rc == 0, f"report: {rc} {text[-300:]}")


def main():
    if not os.path.isdir(G):
        print(f"skipped: {G} not present (../shared)")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="fdl-gguf-models-") as t:
        tensor_listing()
        forward(t)
        blocks_as_float32(t)
        knobs(t)
        presets(t)
        rope_scaled(t)
        qwen35(t)
        kld_workflow(t)
        captures(t)
    if FAILS:
        print(f"test_gguf_models: {len(FAILS)} failures", file=sys.stderr)
        sys.exit(1)
    print("test_gguf_models: ok")


if __name__ == "__main__":
    main()

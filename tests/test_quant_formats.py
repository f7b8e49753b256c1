#!/usr/bin/env python3
"""GPTQ and AWQ checkpoints in the layouts people publish, written by this test from known
integers, against a numpy transcription of each format's documented decode. GPTQ:

    w[o, i] = scales[g, o] * (q[o, i] - zero[g, o]),  g = g_idx[i]

with 32 / bits values per int32 (lowest bits first) in qweight [in / p, out] and qzeros
[groups, out / p], zero = the stored field + 1 (checkpoint_format "gptq", v1) or the field as
stored ("gptq_v2"), for bits 2, 4 and 8, sym and asymmetric zero points, act-order (desc_act)
checkpoints whose g_idx permutes the inputs across groups, and the field extremes (q and the
stored zero at 0 and 2^bits - 1). AWQ (AutoAWQ's GEMM layout): qweight [in, out / 8] and qzeros
[in / group, out / 8] with output 8c + t of word c in nibble (0, 4, 1, 5, 2, 6, 3, 7)[t], zeros
stored as is, scales [in / group, out], w[o, i] = scales[i // group, o] * (q - zero).

1. `tool_model reconstruct` of each matrix equals the numpy decode bit for bit.
2. A whole tiny Llama with every linear layer packed gives, through `fidelis generate`,
   logits bit-identical to the same model written as an F32 Hugging Face directory of the numpy
   decode (the engine multiplies the exact float32 reconstruction).
3. Malformed parts are refused by name: a g_idx that is not a permutation of the groups, a
   qweight packed for other bits, a qzeros of the wrong shape.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import engine_models as em  # noqa: E402
from cli_util import CLI, check, finish, need_cli, run  # noqa: E402

BUILD = os.environ.get("FDL_BUILD", "build")
TOOL = os.path.join(BUILD, "tests", "tool_model")
TMP = tempfile.mkdtemp(prefix="fdl-quant-fmt-")
LINEAR = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
          "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def pack(vals, bits, axis):
    """Packs integers in [0, 2^bits) along `axis` (0: rows, 1: columns), 32 / bits per int32,
    value k of a word in bits [k * bits, (k + 1) * bits)."""
    per = 32 // bits
    v = np.moveaxis(vals.astype(np.uint64), axis, 0)
    v = v.reshape(v.shape[0] // per, per, *v.shape[1:])
    word = np.zeros(v.shape[:1] + v.shape[2:], dtype=np.uint64)
    for k in range(per):
        word |= v[:, k] << np.uint64(bits * k)
    return np.moveaxis(word.astype(np.uint32), 0, axis).view("<i4")


def decode(q, zero_field, scales, g_idx, v2):
    """The numpy reference: q [out, in], zero_field [groups, out] as stored."""
    zero = zero_field.astype(np.int64) + (0 if v2 else 1)
    d = q.astype(np.int64) - zero[g_idx].T  # [out, in]
    return (d.astype(np.float32) * scales[g_idx].T.astype(np.float32)).astype(np.float32)


AWQ_NIBBLE = [0, 4, 1, 5, 2, 6, 3, 7]  # the nibble that holds output 8c + t


def awq_pack(vals):
    """[r, c] integers in [0, 16) -> int32 [r, c / 8] in AutoAWQ's interleaved nibble order."""
    v = vals.astype(np.uint64).reshape(vals.shape[0], -1, 8)
    word = np.zeros(v.shape[:2], dtype=np.uint64)
    for t in range(8):
        word |= v[:, :, t] << np.uint64(4 * AWQ_NIBBLE[t])
    return word.astype(np.uint32).view("<i4")


def awq_matrix(rng, out, inn, group):
    q = rng.integers(0, 16, size=(out, inn))
    q[0, 0], q[0, 1] = 0, 15
    groups = inn // group
    z = rng.integers(0, 16, size=(groups, out))
    z[0, 0], z[0, 1] = 0, 15
    scales = rng.uniform(0.001, 0.05, size=(groups, out)).astype(np.float16)
    g = np.arange(inn) // group
    w = decode(q, z, scales, g, True)
    parts = {
        "qweight": ("I32", (inn, out // 8), awq_pack(q.T).tobytes()),
        "qzeros": ("I32", (groups, out // 8), awq_pack(z).tobytes()),
        "scales": ("F16", (groups, out), scales.astype("<f2").tobytes()),
    }
    return parts, w


def gptq_matrix(rng, out, inn, bits, group, v2, sym, act_order):
    """Known integers for one matrix, and its parts as (dtype, shape, raw) plus the decode."""
    hi = (1 << bits) - 1
    q = rng.integers(0, hi + 1, size=(out, inn))
    q[0, 0], q[0, 1] = 0, hi  # the extremes of a field
    groups = inn // group
    if sym:  # symmetric: the zero point is the middle, 2^(bits-1), stored minus 1 in v1
        zf = np.full((groups, out), (1 << (bits - 1)) - (0 if v2 else 1))
    else:
        zf = rng.integers(0, hi + 1, size=(groups, out))
        zf[0, 0], zf[0, 1] = 0, hi
    scales = (rng.uniform(0.001, 0.05, size=(groups, out))).astype(np.float16)
    g_idx = np.arange(inn) // group
    if act_order:  # desc_act: the inputs are visited in a permuted order
        g_idx = g_idx[rng.permutation(inn)]
    w = decode(q, zf, scales, g_idx, v2)
    parts = {
        "qweight": ("I32", (inn // (32 // bits), out), pack(q.T, bits, 0).tobytes()),
        "qzeros": ("I32", (groups, out // (32 // bits)), pack(zf, bits, 1).tobytes()),
        "scales": ("F16", (groups, out), scales.astype("<f2").tobytes()),
        "g_idx": ("I32", (inn,), g_idx.astype("<i4").tobytes()),
    }
    return parts, w


FORMATS = [
    # name, bits, group, v2, sym, act_order (bits 0: AWQ, 4-bit)
    ("v1-4bit", 4, 32, False, False, False),
    ("v2-4bit-act-order", 4, 16, True, False, True),
    ("v1-8bit-sym", 8, 32, False, True, False),
    ("v2-8bit-act-order", 8, 64, True, False, True),
    ("v1-2bit", 2, 16, False, False, True),
    ("v2-2bit-sym", 2, 32, True, True, False),
    ("awq-gemm", 0, 32, False, False, False),
    ("awq-gemm-g16", 0, 16, False, False, False),
]


def reconstruct(path, prefix, group, bits, v2):
    out = os.path.join(TMP, "rec-%d.f32" % len(os.listdir(TMP)))
    kind = "awq" if not bits else "v2" if v2 else "v1"
    argv = [TOOL, "reconstruct", path, prefix, str(group), out, str(bits or 4), kind]
    p = subprocess.run(argv, capture_output=True, text=True)
    return (np.fromfile(out, dtype="<f4") if p.returncode == 0 else None), p.stderr


def main():
    need_cli()
    if not os.access(TOOL, os.X_OK):
        print("skip: %s is not built" % TOOL)
        sys.exit(77)
    base = em.make_config(dtype="F32", hidden=64, heads=4, kv_heads=2, inter=128, layers=2)
    weights = em.make_weights(base, 3)
    ids = [int(x) for x in np.random.default_rng(5).integers(0, base["vocab_size"], 24)]
    for name, bits, group, v2, sym, act in FORMATS:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        c = copy.deepcopy(base)
        if bits:
            c["quantization_config"] = {"quant_method": "gptq", "bits": bits,
                                        "group_size": group, "sym": sym, "desc_act": act,
                                        "checkpoint_format": "gptq_v2" if v2 else "gptq"}
        else:
            c["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": group,
                                        "zero_point": True, "version": "gemm"}
        plain, packed = dict(weights), {}
        for li in range(c["num_hidden_layers"]):
            for mod in LINEAR:
                stem = "model.layers.%d.%s" % (li, mod)
                out, inn = weights[stem + ".weight"].shape
                parts, w = (gptq_matrix(rng, out, inn, bits, group, v2, sym, act) if bits
                            else awq_matrix(rng, out, inn, group))
                plain[stem + ".weight"] = w
                for k, v in parts.items():
                    packed[stem + "." + k] = v
        qdir, fdir = os.path.join(TMP, name), os.path.join(TMP, name + "-f32")
        over = {k: None for k in plain if k.endswith(".weight") and
                any(("." + m + ".") in k for m in LINEAR)}
        over.update(packed)
        em.write_model(qdir, c, weights, dtype="F32", overrides=over)
        fc = copy.deepcopy(base)
        em.write_model(fdir, fc, plain, dtype="F32")
        # 1. each matrix decodes to the numpy transcription, bit for bit
        st = os.path.join(qdir, "model.safetensors")
        for stem in ("model.layers.0.mlp.down_proj", "model.layers.1.self_attn.k_proj"):
            got, msg = reconstruct(st, stem, group, bits, v2)
            want = plain[stem + ".weight"]
            check(got is not None and got.tobytes() == want.astype("<f4").tobytes(),
                  "%s %s: reconstruction equals the numpy decode (%s)" % (name, stem,
                                                                          msg.strip() or "ok"))
        # 2. the whole model: the GPTQ checkpoint runs as its exact float32 decode
        outs = {}
        for tag, d in (("quantized", qdir), ("f32", fdir)):
            path = os.path.join(TMP, "%s-%s.npy" % (name, tag))
            rc, text = run("generate", "--model", d, "--ids", json.dumps(ids), "--rows", "all",
                           "--logits-out", path)
            outs[tag] = np.load(path) if rc == 0 else None
            check(rc == 0, "%s: generate on the %s model (%s)" % (name, tag, text.strip()[-200:]))
        if outs["quantized"] is not None and outs["f32"] is not None:
            check(outs["quantized"].tobytes() == outs["f32"].tobytes(),
                  "%s: logits of the quantized checkpoint equal those of its float32 decode, bit "
                  "for bit" % name)
    refusals(base, weights)
    awq_refusals(base, weights)
    finish()


def refusals(base, weights):
    """Malformed parts of a v2 4-bit checkpoint, each refused with its name in the message."""
    rng = np.random.default_rng(9)
    stem = "model.layers.0.mlp.up_proj"
    out, inn = weights[stem + ".weight"].shape
    parts, _ = gptq_matrix(rng, out, inn, 4, 16, True, False, False)
    c = copy.deepcopy(base)
    c["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 16,
                                "checkpoint_format": "gptq_v2"}
    cases = []
    bad = np.arange(inn) // 16
    bad[0] = 1  # group 0 one short, group 1 one over
    cases.append(("g_idx-not-a-permutation", {"g_idx": ("I32", (inn,), bad.astype("<i4").tobytes())},
                  ["g_idx", "not a permutation of the groups", "group 0 has 15 inputs"]))
    cases.append(("qweight-other-bits", {"qweight": ("I32", (inn // 4, out), b"\0" * (inn * out))},
                  ["qweight", "4-bit weights pack into"]))
    cases.append(("qzeros-shape", {"qzeros": ("I32", (inn // 16, out), b"\0" * (inn // 16 * out * 4))},
                  ["qzeros", "shape"]))
    for name, change, words in cases:
        d = os.path.join(TMP, "bad-" + name)
        p = dict(parts)
        p.update(change)
        over = {stem + ".weight": None}
        over.update({stem + "." + k: v for k, v in p.items()})
        # the other linear layers stay dense: a partly quantized checkpoint is valid
        em.write_model(d, c, weights, dtype="F32", overrides=over)
        rc, text = run("generate", "--model", d, "--ids", "[1, 2]", "--logits-out",
                       os.path.join(TMP, name + ".npy"))
        check(rc != 0 and all(w in text for w in words),
              "%s: refused naming %s (rc %d: %s)" % (name, words, rc, text.strip()[-300:]))


def awq_refusals(base, weights):
    """Malformed AWQ parts, refused by name."""
    rng = np.random.default_rng(11)
    stem = "model.layers.1.mlp.gate_proj"
    out, inn = weights[stem + ".weight"].shape
    parts, _ = awq_matrix(rng, out, inn, 16)
    c = copy.deepcopy(base)
    c["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 16,
                                "version": "gemm", "zero_point": True}
    cases = [
        ("awq-qweight-gptq-layout", {"qweight": ("I32", (inn // 8, out), parts["qweight"][2])},
         ["awq", "qweight has shape", "expected [%d, %d]" % (inn, out // 8)]),
        ("awq-scales-f32", {"scales": ("F32", (inn // 16, out), b"\0" * (inn // 16 * out * 4))},
         ["awq", "scales is F32, expected F16"]),
        ("awq-missing-qzeros", {"qzeros": None},
         ["missing tensor %s.qzeros" % stem, "AWQ checkpoint must hold"]),
    ]
    for name, change, words in cases:
        d = os.path.join(TMP, "bad-" + name)
        p = dict(parts)
        p.update(change)
        over = {stem + ".weight": None}
        over.update({stem + "." + k: v for k, v in p.items()})
        em.write_model(d, c, weights, dtype="F32", overrides=over)
        rc, text = run("generate", "--model", d, "--ids", "[1, 2]", "--logits-out",
                       os.path.join(TMP, name + ".npy"))
        check(rc != 0 and all(w in text for w in words),
              "%s: refused naming %s (rc %d: %s)" % (name, words, rc, text.strip()[-300:]))


if __name__ == "__main__":
    main()

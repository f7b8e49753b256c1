#!/usr/bin/env python3
"""GPTQ and AWQ checkpoints in the layouts people publish, written by this test from known
integers, against a numpy transcription of each format's documented decode. GPTQ:

    w[o, i] = scales[g, o] * (q[o, i] - zero[g, o]),  g = g_idx[i]

with the values of a column of qweight [in * bits / 32, out] (or a row of qzeros
[groups, out * bits / 32]) as one little-endian bit stream over its int32 words, lowest bits
first: 32 / bits whole values per word for bits 2, 4 and 8, and for bits 3 thirty-two values in
every three words, values 10 and 21 of each run straddling two words (low bits in the first).
zero = the stored field + 1 (checkpoint_format "gptq", v1) or the field as stored ("gptq_v2"),
for bits 2, 3, 4 and 8, sym and asymmetric zero points, act-order (desc_act) checkpoints whose
g_idx permutes the inputs across groups, and the field extremes (q and the stored zero at 0 and
2^bits - 1, for 3 bits also at the straddling values). AWQ (AutoAWQ's GEMM layout): qweight
[in, out / 8] and qzeros [in / group, out / 8] with output 8c + t of word c in nibble
(0, 4, 1, 5, 2, 6, 3, 7)[t], zeros stored as is, scales [in / group, out],
w[o, i] = scales[i // group, o] * (q - zero).

1. `tool_model reconstruct` of each matrix equals the numpy decode bit for bit.
2. A whole tiny Llama with every linear layer packed gives, through `fidelis generate`,
   logits bit-identical to the same model written as an F32 Hugging Face directory of the numpy
   decode (the engine multiplies the exact float32 reconstruction).
3. Malformed parts are refused by name: a g_idx that is not a permutation of the groups, a
   qweight packed for other bits, a qzeros of the wrong shape; for 3 bits a qweight or qzeros in
   the 4-bit layout or of the wrong shape, and dimensions that are not multiples of 32.
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
    value k of a word in bits [k * bits, (k + 1) * bits). 3 bits: pack3."""
    if bits == 3:
        return pack3(vals, axis)
    per = 32 // bits
    v = np.moveaxis(vals.astype(np.uint64), axis, 0)
    v = v.reshape(v.shape[0] // per, per, *v.shape[1:])
    word = np.zeros(v.shape[:1] + v.shape[2:], dtype=np.uint64)
    for k in range(per):
        word |= v[:, k] << np.uint64(bits * k)
    return np.moveaxis(word.astype(np.uint32), 0, axis).view("<i4")


def pack3(vals, axis):
    """3-bit values along `axis` as a bit stream: value k of a row (axis 1) or column (axis 0)
    gives stream bits 3k, 3k + 1, 3k + 2 (its bits 0, 1, 2), and stream bit b is bit b % 32 of
    int32 word b // 32 along the same axis. The length along `axis` must be a multiple of 32."""
    v = np.moveaxis(vals.astype(np.uint64), axis, 0)  # [n, ...]
    n = v.shape[0]
    stream = np.stack([(v >> np.uint64(t)) & np.uint64(1) for t in range(3)], axis=1)
    stream = stream.reshape(n * 3 // 32, 32, *v.shape[1:])  # [words, bit of word, ...]
    word = np.zeros(stream.shape[:1] + stream.shape[2:], dtype=np.uint64)
    for t in range(32):
        word |= stream[:, t] << np.uint64(t)
    return np.moveaxis(word.astype(np.uint32), 0, axis).view("<i4")


def check_pack3():
    """The straddling values land where AutoGPTQ's and GPTQModel's 3-bit pack put them: value 10
    in bits 30-31 of word 0 (its low two bits) and bit 0 of word 1 (its high bit); value 21 in
    bit 31 of word 1 (its low bit) and bits 0-1 of word 2; values 0-9, 11-20 and 22-31 at bits
    3j, 3j + 1 and 3j + 2 of words 0, 1 and 2."""
    def words(pos, val):
        v = np.zeros((32, 1), dtype=np.int64)
        v[pos, 0] = val
        return [int(x) for x in pack(v, 3, 0).view(np.uint32)[:, 0]]
    check(words(10, 0b110) == [0b10 << 30, 0b1, 0] and words(10, 0b001) == [0b01 << 30, 0, 0],
          "pack3: value 10 has bits 0-1 in word 0 bits 30-31 and bit 2 in word 1 bit 0")
    check(words(21, 0b110) == [0, 0, 0b11] and words(21, 0b011) == [0, 1 << 31, 0b01],
          "pack3: value 21 has bit 0 in word 1 bit 31 and bits 1-2 in word 2 bits 0-1")
    check(words(9, 7) == [7 << 27, 0, 0] and words(11, 7) == [0, 7 << 1, 0] and
          words(20, 7) == [0, 7 << 28, 0] and words(22, 7) == [0, 0, 7 << 2] and
          words(31, 7) == [0, 0, 7 << 29],
          "pack3: the whole values of words 0, 1 and 2 at 3j, 3j + 1 and 3j + 2")


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


def ct_pack(vals, bits, dim):
    """compressed-tensors' pack_to_int32: signed values shifted by 2^(bits-1), 32 / bits per
    int32 along `dim` (1: the columns, 0: the rows), value j of a word in bits j * bits, the
    packed dimension padded with zeros to whole words."""
    u = (vals.astype(np.int64) + (1 << (bits - 1))).astype(np.uint64)
    if dim == 0:
        u = u.T
    per = 32 // bits
    u = np.pad(u, ((0, 0), (0, (-u.shape[1]) % per)))
    u = u.reshape(u.shape[0], -1, per)
    word = np.zeros(u.shape[:2], dtype=np.uint64)
    for j in range(per):
        word |= u[:, :, j] << np.uint64(bits * j)
    word = word.astype(np.uint32).view("<i4")
    return word.T.copy() if dim == 0 else word


def bf16(a):
    """(bits as <u2 bytes, float32 value) of a rounded to bfloat16."""
    b = em.bf16_bits(np.asarray(a, dtype=np.float32)).astype("<u2")
    return b.tobytes(), (b.astype(np.uint32) << 16).view(np.float32)


def ct_packed_matrix(rng, out, inn, bits, group, sym, act_order):
    """compressed-tensors pack-quantized: w = (q - zero) * scale in float32, q and zero signed."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    q = rng.integers(lo, hi + 1, size=(out, inn))
    q[0, 0], q[0, 1] = lo, hi
    groups = inn // group if group else 1
    gsize = group or inn
    zero = np.zeros((out, groups), dtype=np.int64) if sym else \
        rng.integers(lo, hi + 1, size=(out, groups))
    sraw, scale = bf16(rng.uniform(0.001, 0.05, size=(out, groups)))
    g = np.arange(inn) // gsize
    if act_order:
        g = g[rng.permutation(inn)]
    d = (q - zero[:, g]).astype(np.float32)
    w = (d * scale[:, g]).astype(np.float32)
    parts = {
        "weight_packed": ("I32", (out, -(-inn // (32 // bits))), ct_pack(q, bits, 1).tobytes()),
        "weight_scale": ("BF16", (out, groups), sraw),
        "weight_shape": ("I64", (2,), np.array([out, inn], dtype="<i8").tobytes()),
    }
    if not sym:
        parts["weight_zero_point"] = ("I32", (-(-out // (32 // bits)), groups),
                                      ct_pack(zero, bits, 0).tobytes())
    if act_order:
        parts["weight_g_idx"] = ("I32", (inn,), g.astype("<i4").tobytes())
    return parts, w


def e4m3(code):
    """FP8 E4M3 (fn) codes to float64: sign, 4 exponent bits (bias 7), 3 mantissa bits,
    subnormals at exponent 0, no infinities (S.1111.111 is NaN; not generated here)."""
    c = code.astype(np.int64)
    e, m = (c >> 3) & 15, c & 7
    v = np.where(e == 0, m * 2.0 ** -9, (8 + m) * 2.0 ** (e - 10))
    return np.where(c & 0x80, -v, v)


def ct_fp8_matrix(rng, out, inn, per_channel):
    codes = rng.integers(0, 256, size=(out, inn)).astype(np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x7E  # NaN codes become the largest finite (448)
    codes[0, :4] = [0x00, 0x80, 0x01, 0x7E]  # +0, -0, the smallest subnormal, the largest
    scale = rng.uniform(0.0005, 0.01, size=(out, 1) if per_channel else (1,)).astype(np.float32)
    w = (e4m3(codes).astype(np.float32) * (scale if per_channel else scale[0])).astype(np.float32)
    parts = {
        "weight": ("F8_E4M3", (out, inn), codes.tobytes()),
        "weight_scale": ("F32", scale.shape, scale.astype("<f4").tobytes()),
    }
    return parts, w


def gptq_matrix(rng, out, inn, bits, group, v2, sym, act_order):
    """Known integers for one matrix, and its parts as (dtype, shape, raw) plus the decode."""
    hi = (1 << bits) - 1
    q = rng.integers(0, hi + 1, size=(out, inn))
    q[0, 0], q[0, 1] = 0, hi  # the extremes of a field
    if bits == 3:  # and those of the values that straddle two words
        q[0, 10], q[0, 21], q[1, 10], q[1, 21] = hi, hi, 0, 0
    groups = inn // group
    if sym:  # symmetric: the zero point is the middle, 2^(bits-1), stored minus 1 in v1
        zf = np.full((groups, out), (1 << (bits - 1)) - (0 if v2 else 1))
    else:
        zf = rng.integers(0, hi + 1, size=(groups, out))
        zf[0, 0], zf[0, 1] = 0, hi
        if bits == 3:
            zf[0, 10], zf[0, 21], zf[1, 10], zf[1, 21] = hi, hi, 0, 0
    scales = (rng.uniform(0.001, 0.05, size=(groups, out))).astype(np.float16)
    g_idx = np.arange(inn) // group
    if act_order:  # desc_act: the inputs are visited in a permuted order
        g_idx = g_idx[rng.permutation(inn)]
    w = decode(q, zf, scales, g_idx, v2)
    parts = {
        "qweight": ("I32", (inn * bits // 32, out), pack(q.T, bits, 0).tobytes()),
        "qzeros": ("I32", (groups, out * bits // 32), pack(zf, bits, 1).tobytes()),
        "scales": ("F16", (groups, out), scales.astype("<f2").tobytes()),
        "g_idx": ("I32", (inn,), g_idx.astype("<i4").tobytes()),
    }
    return parts, w


def gptq_config(bits, group, v2, sym, act):
    return {"quant_method": "gptq", "bits": bits, "group_size": group, "sym": sym,
            "desc_act": act, "checkpoint_format": "gptq_v2" if v2 else "gptq"}


def ct_config(fmt, weights):
    return {"quant_method": "compressed-tensors", "format": fmt, "ignore": ["lm_head"],
            "quantization_status": "compressed",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights,
                                          "input_activations": None,
                                          "output_activations": None}}}


def ct_int(bits, group, sym, act):
    return ct_config("pack-quantized", {
        "num_bits": bits, "type": "int", "symmetric": sym,
        "strategy": "group" if group else "channel", "group_size": group or None,
        "actorder": "group" if act else None, "dynamic": False})


def ct_float(per_channel):
    c = ct_config("float-quantized", {"num_bits": 8, "type": "float", "symmetric": True,
                                      "strategy": "channel" if per_channel else "tensor",
                                      "dynamic": False})
    # FP8 checkpoints quantize activations dynamically; the engine reconstructs the weights only
    c["config_groups"]["group_0"]["input_activations"] = {"num_bits": 8, "type": "float",
                                                         "strategy": "token", "dynamic": True}
    return c


def gptq_case(name, bits, group, v2, sym, act):
    """A GPTQ row of FORMATS: its config, its matrix maker and tool_model's view."""
    return (name, gptq_config(bits, group, v2, sym, act),
            lambda r, o, i: gptq_matrix(r, o, i, bits, group, v2, sym, act),
            (group, bits, "v2" if v2 else "v1"))


# name, quantization_config, a matrix maker (rng, out, in) -> (parts, w), tool_model's view
# (group, bits, kind) for the per-matrix check or None
FORMATS = [
    gptq_case("v1-4bit", 4, 32, False, False, False),
    gptq_case("v2-4bit-act-order", 4, 16, True, False, True),
    gptq_case("v1-8bit-sym", 8, 32, False, True, False),
    gptq_case("v2-8bit-act-order", 8, 64, True, False, True),
    gptq_case("v1-2bit", 2, 16, False, False, True),
    gptq_case("v2-2bit-sym", 2, 32, True, True, False),
    gptq_case("v1-3bit", 3, 32, False, False, False),
    gptq_case("v1-3bit-sym-act-order", 3, 16, False, True, True),
    gptq_case("v2-3bit-sym", 3, 32, True, True, False),
    gptq_case("v2-3bit-act-order", 3, 16, True, False, True),
    ("awq-gemm", {"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": True,
                  "version": "gemm"},
     lambda r, o, i: awq_matrix(r, o, i, 32), (32, 4, "awq")),
    ("awq-gemm-g16", {"quant_method": "awq", "bits": 4, "group_size": 16, "zero_point": True,
                      "version": "GEMM"},
     lambda r, o, i: awq_matrix(r, o, i, 16), (16, 4, "awq")),
    ("ct-int4-sym-group", ct_int(4, 32, True, False),
     lambda r, o, i: ct_packed_matrix(r, o, i, 4, 32, True, False), None),
    ("ct-int4-asym-channel", ct_int(4, 0, False, False),
     lambda r, o, i: ct_packed_matrix(r, o, i, 4, 0, False, False), None),
    ("ct-int4-asym-group-act-order", ct_int(4, 16, False, True),
     lambda r, o, i: ct_packed_matrix(r, o, i, 4, 16, False, True), None),
    ("ct-int8-sym-group", ct_int(8, 32, True, False),
     lambda r, o, i: ct_packed_matrix(r, o, i, 8, 32, True, False), None),
    ("ct-fp8-channel", ct_float(True), lambda r, o, i: ct_fp8_matrix(r, o, i, True), None),
    ("ct-fp8-tensor", ct_float(False), lambda r, o, i: ct_fp8_matrix(r, o, i, False), None),
]


def reconstruct(path, prefix, group, bits, kind):
    out = os.path.join(TMP, "rec-%d.f32" % len(os.listdir(TMP)))
    argv = [TOOL, "reconstruct", path, prefix, str(group), out, str(bits), kind]
    p = subprocess.run(argv, capture_output=True, text=True)
    return (np.fromfile(out, dtype="<f4") if p.returncode == 0 else None), p.stderr


def main():
    need_cli()
    if not os.access(TOOL, os.X_OK):
        print("skip: %s is not built" % TOOL)
        sys.exit(77)
    check_pack3()
    base = em.make_config(dtype="F32", hidden=64, heads=4, kv_heads=2, inter=128, layers=2)
    weights = em.make_weights(base, 3)
    ids = [int(x) for x in np.random.default_rng(5).integers(0, base["vocab_size"], 24)]
    for name, qc, maker, view in FORMATS:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        c = copy.deepcopy(base)
        c["quantization_config"] = qc
        plain, packed = dict(weights), {}
        for li in range(c["num_hidden_layers"]):
            for mod in LINEAR:
                stem = "model.layers.%d.%s" % (li, mod)
                out, inn = weights[stem + ".weight"].shape
                parts, w = maker(rng, out, inn)
                plain[stem + ".weight"] = w
                for k, v in parts.items():
                    packed[stem + "." + k] = v
        qdir, fdir = os.path.join(TMP, name), os.path.join(TMP, name + "-f32")
        over = {k: None for k in plain if k.endswith(".weight") and
                any(("." + m + ".") in k for m in LINEAR)}
        over.update(packed)  # FP8 stores its .weight again, as F8_E4M3
        em.write_model(qdir, c, weights, dtype="F32", overrides=over)
        fc = copy.deepcopy(base)
        em.write_model(fdir, fc, plain, dtype="F32")
        # 1. each matrix decodes to the numpy transcription, bit for bit
        st = os.path.join(qdir, "model.safetensors")
        for stem in ("model.layers.0.mlp.down_proj", "model.layers.1.self_attn.k_proj"):
            if not view:
                break  # compressed-tensors: the whole-model check below covers every matrix
            got, msg = reconstruct(st, stem, *view)
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
    ct_refusals(base, weights)
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
                  ["qweight", "as 4-bit GPTQ takes 4096"]))
    cases.append(("qzeros-shape", {"qzeros": ("I32", (inn // 16, out), b"\0" * (inn // 16 * out * 4))},
                  ["qzeros", "shape"]))
    for name, change, words in cases:
        expect_refused(name, c, weights, stem, dict(parts, **change), words)
    # 3 bits: the same matrix in the 4-bit layout, or the right bytes in the wrong shape
    parts, _ = gptq_matrix(rng, out, inn, 3, 16, False, False, True)
    c["quantization_config"] = gptq_config(3, 16, False, False, True)
    groups, qrows, zcols = inn // 16, inn * 3 // 32, out * 3 // 32
    cases = [
        ("3bit-qweight-4bit-layout",
         {"qweight": ("I32", (inn // 8, out), b"\0" * (inn * out // 2))},
         ["qweight", "as 3-bit GPTQ takes %d" % (qrows * out * 4)]),
        ("3bit-qweight-shape", {"qweight": ("I32", (qrows * 2, out // 2), parts["qweight"][2])},
         ["qweight has shape [%d, %d], expected [%d, %d]" % (qrows * 2, out // 2, qrows, out)]),
        ("3bit-qzeros-4bit-layout",
         {"qzeros": ("I32", (groups, out // 8), b"\0" * (groups * out // 8 * 4))},
         ["qzeros has shape [%d, %d], expected [%d, %d]" % (groups, out // 8, groups, zcols)]),
    ]
    for name, change, words in cases:
        expect_refused(name, c, weights, stem, dict(parts, **change), words)
    # dimensions that a 3-bit run cannot fill: in 48 (or out 48) is not a multiple of 32
    for name, inn_, out_ in (("3bit-in-48", 48, 32), ("3bit-out-48", 64, 48)):
        st = os.path.join(TMP, name + ".safetensors")
        g = (np.arange(inn_) // 16).astype("<i4")
        em.write_safetensors(st, [
            ("x.qweight", "I32", (inn_ * 3 // 32, out_), b"\0" * (inn_ * 3 // 32 * out_ * 4)),
            ("x.qzeros", "I32", (inn_ // 16, out_ * 3 // 32),
             b"\0" * (inn_ // 16 * (out_ * 3 // 32) * 4)),
            ("x.scales", "F16", (inn_ // 16, out_), b"\0" * (inn_ // 16 * out_ * 2)),
            ("x.g_idx", "I32", (inn_,), g.tobytes())])
        got, msg = reconstruct(st, "x", 16, 3, "v2")
        want = "a [%d, %d] weight cannot hold 3-bit values: in and out must be multiples of 32" % (
            out_, inn_)
        check(got is None and want in msg, "%s: refused naming '%s' (%s)" % (name, want,
                                                                              msg.strip()))


def expect_refused(name, c, weights, stem, parts, words):
    """A model whose matrix `stem` is stored as `parts` (a part None is left out; the other
    linear layers stay dense, as a partly quantized checkpoint may) must be refused by generate
    with every one of `words` in the message."""
    d = os.path.join(TMP, "bad-" + name)
    over = {stem + ".weight": None}
    over.update({stem + "." + k: v for k, v in parts.items()})
    em.write_model(d, c, weights, dtype="F32", overrides=over)
    rc, text = run("generate", "--model", d, "--ids", "[1, 2]", "--logits-out",
                   os.path.join(TMP, name + ".npy"))
    check(rc != 0 and all(w in text for w in words),
          "%s: refused naming %s (rc %d: %s)" % (name, words, rc, text.strip()[-300:]))


def ct_refusals(base, weights):
    """Malformed compressed-tensors parts, refused by name."""
    rng = np.random.default_rng(13)
    stem = "model.layers.0.self_attn.o_proj"
    out, inn = weights[stem + ".weight"].shape
    parts, _ = ct_packed_matrix(rng, out, inn, 4, 16, False, True)
    bad_g = np.arange(inn) // 16
    bad_g[0] = 1
    fp8, _ = ct_fp8_matrix(rng, out, inn, True)
    nan = bytearray(fp8["weight"][2])
    nan[5] = 0x7F
    cases = [
        ("ct-g_idx", ct_int(4, 16, False, True),
         dict(parts, weight_g_idx=("I32", (inn,), bad_g.astype("<i4").tobytes())),
         ["weight_g_idx is not a permutation of the groups", "group 0 has 15"]),
        ("ct-weight-shape", ct_int(4, 16, False, True),
         dict(parts, weight_shape=("I64", (2,), np.array([out, inn + 8], "<i8").tobytes())),
         ["weight_shape is [%d, %d], expected [%d, %d]" % (out, inn + 8, out, inn)]),
        ("ct-scale-dtype", ct_int(4, 16, False, True),
         dict(parts, weight_scale=("I32", (out, inn // 16), b"\0" * (out * inn // 16 * 4))),
         ["weight_scale must be BF16, F16 or F32"]),
        ("ct-no-zero-point", ct_int(4, 16, False, True), dict(parts, weight_zero_point=None),
         ["missing tensor %s.weight_zero_point" % stem]),
        ("ct-fp8-nan", ct_float(True), dict(fp8, weight=("F8_E4M3", (out, inn), bytes(nan))),
         ["%s.weight[0, 5] is the FP8 NaN code" % stem]),
    ]
    for name, qc, p, words in cases:
        c = copy.deepcopy(base)
        c["quantization_config"] = qc
        expect_refused(name, c, weights, stem, p, words)


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
        expect_refused(name, c, weights, stem, dict(parts, **change), words)


if __name__ == "__main__":
    main()

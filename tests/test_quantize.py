#!/usr/bin/env python3
"""`fidelis quantize` (issue 11, item 4) against an independent numpy implementation of the
documented RTN and GPTQ-v1 packing (docs/MODELS.md): qweight, qzeros, scales and g_idx equal
numpy's bit for bit on the tiny model (scopes mlp and all-linear) and on crafted groups
(constant, all-zero, tiny range, ties to even); unpacking gives (q - zero) * scale, which
fdl_gptq_reconstruct (tool_model) reproduces exactly and which matches the analytic values of
the crafted groups; every other tensor and file is copied unchanged; a sharded checkpoint stays
sharded with its index rewritten; and the refusals (group not dividing in, out not a multiple
of 8, NaN or infinity, OUT exists, already quantized, an index that disagrees with its shards,
nothing in scope, unknown codec or scope) leave nothing behind."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

CLI = os.environ.get("FDL_CLI")
BUILD = os.environ.get("FDL_BUILD", "")
TOOL = os.path.join(BUILD, "tests", "tool_model")
MLP = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
ATTN = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
DELTANET = ("linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(*argv):
    p = subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


# ---- safetensors in and out --------------------------------------------------------------------

def read_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    np_dt = {"BF16": "<u2", "F16": "<u2", "F32": "<f4", "I32": "<i4"}
    out = {}
    for k, e in header.items():
        if k == "__metadata__":
            continue
        b0, b1 = e["data_offsets"]
        out[k] = (e["dtype"], np.frombuffer(data[b0:b1], dtype=np_dt[e["dtype"]]).reshape(e["shape"]),
                  data[b0:b1])
    return header, out


def write_st(path, tensors):
    """tensors: [(name, dtype, array of the stored bits)]."""
    header, blobs, off = {}, [], 0
    for name, dt, arr in tensors:
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def bf16_bits(x):
    return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def widen(dt, arr):
    if dt == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    if dt == "F16":
        return arr.view(np.float16).astype(np.float32)
    return arr.astype(np.float32)


# ---- the independent implementation ------------------------------------------------------------

def f16(x):
    """float64 -> float16, correctly rounded; 0 becomes the smallest subnormal."""
    s = np.asarray(x, dtype=np.float64).astype(np.float16)
    s[s == 0] = np.uint16(1).view(np.float16)
    return s


def np_quantize(w, group):
    """w float32 [out, in] -> (qweight u32 [in/8, out], qzeros u32 [in/g, out/8], scales u16
    [in/g, out], g_idx i32 [in], q [out, in], zero [out, G], scale f64 [out, G])."""
    out, inn = w.shape
    G = inn // group
    W = w.astype(np.float64).reshape(out, G, group)
    lo = np.minimum(W.min(axis=2), 0.0)
    hi = np.maximum(W.max(axis=2), 0.0)
    allzero = (lo == 0) & (hi == 0)
    lo[allzero], hi[allzero] = -1.0, 1.0
    with np.errstate(over="ignore"):
        s = f16((hi - lo) / 15.0)
        z = np.rint(-lo / s.astype(np.float64))
        fb = z < 1  # v1 cannot store a zero point of 0
        s[fb] = f16(hi[fb] / 14.0)
    z[fb] = 1
    z = np.minimum(z, 15)
    sd = s.astype(np.float64)
    q = np.clip(np.rint(W / sd[:, :, None]) + z[:, :, None], 0, 15).astype(np.uint32).reshape(out, inn)
    qweight = np.zeros((inn // 8, out), dtype=np.uint32)
    for k in range(8):
        qweight |= q[:, k::8].T << np.uint32(4 * k)
    zs = ((z.astype(np.int64) - 1) & 15).astype(np.uint32).T  # [G, out]
    qzeros = np.zeros((G, out // 8), dtype=np.uint32)
    for k in range(8):
        qzeros |= zs[:, k::8] << np.uint32(4 * k)
    g_idx = (np.arange(inn) // group).astype(np.int32)
    return qweight, qzeros, s.view(np.uint16).T.copy(), g_idx, q, z, sd


def np_unpack(qweight, qzeros, scales, g_idx):
    """The GPTQ-v1 decode, written from the layout: w[o, i] = (q - ((nibble & 15) + 1)) * s."""
    inn, out = qweight.shape[0] * 8, qweight.shape[1]
    qw = qweight.view(np.uint32)
    q = np.empty((inn, out), dtype=np.int64)
    for k in range(8):
        q[k::8] = (qw >> np.uint32(4 * k)) & 15
    qz = qzeros.view(np.uint32)
    zeros = np.empty((qz.shape[0], out), dtype=np.int64)
    for k in range(8):
        zeros[:, k::8] = ((qz >> np.uint32(4 * k)) & 15) + 1
    sc = scales.view(np.float16).astype(np.float32)
    g = g_idx.astype(np.int64)
    return ((q - zeros[g]).astype(np.float32) * sc[g]).T  # [out, in]


def reconstruct(st_path, prefix, group, w):
    out = os.path.join(w, "rec-%d.f32" % len(os.listdir(w)))
    p = subprocess.run([TOOL, "reconstruct", st_path, prefix, str(group), out], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    return np.fromfile(out, dtype="<f4"), ""


def check_model(src, dst, group, modules, w, label, shards=("model.safetensors",)):
    quantized = 0
    for shard in shards:
        quantized += check_shard(os.path.join(src, shard), os.path.join(dst, shard), group, modules, w,
                                 "%s %s" % (label, shard))
    check(quantized > 0, "%s: nothing quantized" % label)
    return quantized


def check_shard(src_st, dst_st, group, modules, w, label):
    _, si = read_st(src_st)
    header, so = read_st(dst_st)
    check(header.get("__metadata__") == {"format": "pt"}, "%s: metadata" % label)
    check(len(so) == sum(4 if n.endswith(".weight") and any(n[:-7].endswith("." + m) for m in modules) else 1
                         for n in si), "%s: %d tensors written" % (label, len(so)))
    quantized = 0
    for name, (dt, arr, raw) in si.items():
        stem = name[:-len(".weight")] if name.endswith(".weight") else None
        if stem and any(stem.endswith("." + m) for m in modules):
            quantized += 1
            check(name not in so, "%s: %s kept beside its quantization" % (label, name))
            wf = widen(dt, arr)
            qw, qz, sc, gi, q, z, sd = np_quantize(wf, group)
            parts = {"qweight": ("I32", qw.view(np.int32)), "qzeros": ("I32", qz.view(np.int32)),
                     "scales": ("F16", sc), "g_idx": ("I32", gi)}
            for part, (pdt, want) in parts.items():
                got = so.get(stem + "." + part)
                ok = got is not None and got[0] == pdt and got[1].shape == want.shape and \
                    got[2] == np.ascontiguousarray(want).astype(want.dtype.newbyteorder("<")).tobytes()
                check(ok, "%s: %s.%s differs from numpy (%s)" % (label, stem, part,
                                                                  None if got is None else (got[0], got[1].shape)))
            # the decode: numpy's unpacking of the file, the analytic (q - zero) * scale, and the
            # library's fdl_gptq_reconstruct all agree bit for bit
            dec = np_unpack(so[stem + ".qweight"][1], so[stem + ".qzeros"][1], so[stem + ".scales"][1],
                            so[stem + ".g_idx"][1])
            G = wf.shape[1] // group
            ana = ((q.reshape(wf.shape[0], G, group).astype(np.float64) - z[:, :, None]) *
                   sd[:, :, None]).reshape(wf.shape).astype(np.float32)
            check(np.array_equal(dec.view(np.uint32), ana.view(np.uint32)),
                  "%s: %s unpacked != (q - zero) * scale" % (label, stem))
            rec, err = reconstruct(dst_st, stem, group, w)
            check(rec is not None and np.array_equal(rec.view(np.uint32), ana.reshape(-1).view(np.uint32)),
                  "%s: fdl_gptq_reconstruct of %s differs: %s" % (label, stem, err))
            # round to nearest: within half a step, plus what the F16 rounding of the scale (at
            # most 2^-11 relative, over 16 steps) and of the zero point can push off the grid
            err_abs = np.abs(ana.astype(np.float64) - wf.astype(np.float64)).reshape(wf.shape[0], G, group)
            check((err_abs <= sd[:, :, None] * (0.5 + 16.0 / 2048) + 1e-12).all(),
                  "%s: %s error above half a step" % (label, stem))
        else:
            got = so.get(name)
            check(got is not None and got[0] == dt and got[2] == raw, "%s: %s not copied as stored" % (label, name))
    return quantized


def make_sharded(src, d, index_edit=None):
    """src's single-file model split in two shards with an index; index_edit(index) may break it."""
    os.mkdir(d)
    for f in ("config.json", "panel.jsonl"):
        shutil.copy(os.path.join(src, f), os.path.join(d, f))
    _, ts = read_st(os.path.join(src, "model.safetensors"))
    names = list(ts)
    half = len(names) // 2
    shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    wmap = {}
    for k, part in enumerate((names[:half], names[half:])):
        write_st(os.path.join(d, shards[k]), [(n, ts[n][0], ts[n][1]) for n in part])
        wmap.update({n: shards[k] for n in part})
    index = {"metadata": {"total_size": sum(len(t[2]) for t in ts.values())}, "weight_map": wmap}
    if index_edit:
        index_edit(index)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    return shards


def craft(d, tensors, config=None):
    os.mkdir(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config or {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, f)
    write_st(os.path.join(d, "model.safetensors"), tensors)


def crafted_matrix():
    """[8, 64]: row 0 constant 1.75, row 1 constant -3, row 2 zeros, row 3 ties, row 4 a tiny
    range, rows 5-7 random; the second group of every row random."""
    rng = np.random.default_rng(11)
    m = rng.standard_normal((8, 64)).astype(np.float32)
    m[0, :32] = 1.75
    m[1, :32] = -3.0
    m[2, :32] = 0.0
    ties = [-7.5, 7.5, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5]
    m[3, :32] = 0.0
    m[3, :8] = ties
    m[4, :32] = 1e-9
    return widen("BF16", bf16_bits(m))


def main():
    if not CLI or not os.access(CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    if not os.access(TOOL, os.X_OK):
        print("skip: %s not built" % TOOL)
        return 77
    w = tempfile.mkdtemp(prefix="fdl-quantize-")
    recs = os.path.join(w, "rec")
    os.mkdir(recs)
    P = lambda *a: os.path.join(w, *a)
    try:
        for preset in ("tiny-random", "llama-tiny-random", "qwen2-tiny-random"):
            rc, _, err = run("model", "init", "--preset", preset, "--seed", "3", P(preset))
            if rc != 0:
                raise SystemExit("model init %s failed: %s" % (preset, err))
            q = P(preset + "-q")
            rc, out, err = run("quantize", "--codec", "int4", "--group-size", "32", "--scope", "mlp", P(preset), q)
            check(rc == 0 and "wrote" in out, "%s: quantize exit %d %s" % (preset, rc, err))
            if rc != 0:
                continue
            n = check_model(P(preset), q, 32, MLP, recs, preset)
            check(n == 6, "%s: %d weights quantized, expected 6" % (preset, n))
            src_cfg = json.load(open(P(preset, "config.json")))
            cfg = json.load(open(os.path.join(q, "config.json")))
            qc = cfg.pop("quantization_config", {})
            check(cfg == src_cfg, "%s: config.json changed beyond quantization_config" % preset)
            for k, v in {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False,
                         "sym": False, "checkpoint_format": "gptq",
                         "modules_in_block_to_quantize": [list(MLP)]}.items():
                check(qc.get(k) == v, "%s: quantization_config %s = %r" % (preset, k, qc.get(k)))
            check(qc.get("fidelis", {}).get("scope") == "mlp" and qc["fidelis"].get("method") == "rtn",
                  "%s: quantization_config.fidelis %r" % (preset, qc.get("fidelis")))
            for f in ("generation_config.json", "panel.jsonl"):
                check(open(P(preset, f), "rb").read() == open(os.path.join(q, f), "rb").read(),
                      "%s: %s not copied" % (preset, f))
        # determinism, --json, all-linear, another group size
        rc, out, err = run("quantize", "--json", P("tiny-random"), P("again"))
        j = json.loads(out) if rc == 0 else {}
        check(j.get("quantized_tensors") == 6 and j.get("scope") == "mlp" and j.get("group_size") == 32,
              "--json %r %s" % (j, err))
        check(open(P("again", "model.safetensors"), "rb").read() ==
              open(P("tiny-random-q", "model.safetensors"), "rb").read(), "two quantizations differ")
        rc, _, err = run("quantize", "--scope", "all-linear", "--group-size", "16", P("qwen2-tiny-random"), P("all"))
        check(rc == 0, "all-linear: exit %d %s" % (rc, err))
        if rc == 0:
            n = check_model(P("qwen2-tiny-random"), P("all"), 16, MLP + ATTN, recs, "all-linear g16")
            check(n == 14, "all-linear: %d weights quantized, expected 14" % n)
            qc = json.load(open(P("all", "config.json")))["quantization_config"]
            check(qc["group_size"] == 16 and qc["modules_in_block_to_quantize"] == [list(ATTN + MLP)],
                  "all-linear config %r" % qc)

        # Qwen3.5 with a vision tower: the mlp matrices under model.language_model. are
        # quantized; the 3-D conv1d, the F32 A_log, the DeltaNet gates and the vision tower are
        # copied as stored; config.json keeps text_config and vision_config
        q35 = "qwen3.5-tiny-random"
        rc, _, err = run("model", "init", "--preset", q35, "--seed", "3", P(q35))
        check(rc == 0, "%s: model init: %s" % (q35, err))
        rc, out, err = run("quantize", "--codec", "int4", "--group-size", "32", "--scope", "mlp", P(q35), P(q35 + "-q"))
        check(rc == 0 and "wrote" in out, "%s: quantize exit %d %s" % (q35, rc, err))
        if rc == 0:
            n = check_model(P(q35), P(q35 + "-q"), 32, MLP, recs, q35)
            check(n == 12, "%s: %d weights quantized, expected 12 (4 layers x 3)" % (q35, n))
            _, so = read_st(P(q35 + "-q", "model.safetensors"))
            quant = sorted({k.rsplit(".", 1)[0] for k in so if k.endswith(".qweight")})
            check(all(k.startswith("model.language_model.layers.") and ".mlp." in k for k in quant),
                  "%s: quantized %r" % (q35, quant))
            kinds = {k: (so[k][0], so[k][1].ndim) for k in so}
            check(kinds.get("model.language_model.layers.0.linear_attn.conv1d.weight") == ("BF16", 3)
                  and kinds.get("model.language_model.layers.0.linear_attn.A_log") == ("F32", 1)
                  and kinds.get("model.visual.patch_embed.proj.weight") == ("BF16", 5),
                  "%s: conv1d, A_log, vision tower not copied as stored: %r" % (q35, kinds))
            src_cfg = json.load(open(P(q35, "config.json")))
            cfg = json.load(open(P(q35 + "-q", "config.json")))
            qc = cfg.pop("quantization_config", {})
            check(cfg == src_cfg and "text_config" in cfg and "vision_config" in cfg,
                  "%s: config.json changed beyond quantization_config" % q35)
            check(qc.get("modules_in_block_to_quantize") == [list(MLP)] and qc.get("group_size") == 32
                  and qc.get("fidelis", {}).get("scope") == "mlp", "%s: quantization_config %r" % (q35, qc))
            for f in ("generation_config.json", "panel.jsonl", "tokenizer.json"):
                check(open(P(q35, f), "rb").read() == open(P(q35 + "-q", f), "rb").read(),
                      "%s: %s not copied" % (q35, f))
        rc, _, err = run("quantize", "--scope", "all-linear", "--group-size", "16", P(q35), P(q35 + "-all"))
        check(rc == 0, "%s all-linear: exit %d %s" % (q35, rc, err))
        if rc == 0:
            # 12 mlp, q/k/v/o of the full-attention layer, in_proj_qkv/z and out_proj of the three
            # DeltaNet layers; in_proj_a/b and conv1d stay as stored (docs/MODELS.md)
            n = check_model(P(q35), P(q35 + "-all"), 16, MLP + ATTN + DELTANET, recs, q35 + " all-linear g16")
            check(n == 25, "%s all-linear: %d weights quantized, expected 25" % (q35, n))
            qc = json.load(open(P(q35 + "-all", "config.json")))["quantization_config"]
            check(qc["modules_in_block_to_quantize"] == [list(ATTN + DELTANET + MLP)],
                  "%s all-linear modules %r" % (q35, qc["modules_in_block_to_quantize"]))
        # a vision-tower or mtp tensor is never in scope, whatever its name
        m8 = bf16_bits(np.random.default_rng(5).standard_normal((8, 64)))
        craft(P("visual"), [("model.visual.blocks.0.mlp.gate_proj.weight", "BF16", m8),
                            ("mtp.layers.0.mlp.up_proj.weight", "BF16", m8),
                            ("model.language_model.layers.0.mlp.down_proj.weight", "BF16", m8)])
        rc, _, err = run("quantize", P("visual"), P("visual-q"))
        check(rc == 0, "visual: exit %d %s" % (rc, err))
        if rc == 0:
            _, so = read_st(P("visual-q", "model.safetensors"))
            check(sorted(so) == sorted(["model.visual.blocks.0.mlp.gate_proj.weight", "mtp.layers.0.mlp.up_proj.weight"]
                                       + ["model.language_model.layers.0.mlp.down_proj." + x
                                          for x in ("qweight", "qzeros", "scales", "g_idx")]),
                  "visual: %r" % sorted(so))

        # a sharded checkpoint: shards stay shards, the index follows the parts
        shards = make_sharded(P("tiny-random"), P("sharded"))
        rc, out, err = run("quantize", P("sharded"), P("sharded-q"))
        check(rc == 0, "sharded: exit %d %s" % (rc, err))
        if rc == 0:
            n = check_model(P("sharded"), P("sharded-q"), 32, MLP, recs, "sharded", shards)
            check(n == 6, "sharded: %d weights quantized" % n)
            idx = json.load(open(P("sharded-q", "model.safetensors.index.json")))
            want_map, total = {}, 0
            for sh in shards:
                h, so = read_st(P("sharded-q", sh))
                want_map.update({k: sh for k in so})
                total += sum(len(t[2]) for t in so.values())
            check(idx["weight_map"] == want_map, "sharded: index weight_map")
            check(idx["metadata"]["total_size"] == total, "sharded: total_size %r, expected %d"
                  % (idx["metadata"].get("total_size"), total))
            check(not os.path.exists(P("sharded-q", "model.safetensors")), "sharded: a model.safetensors appeared")

        # crafted groups, analytically
        m = crafted_matrix()
        norm = bf16_bits(np.ones(64, dtype=np.float32))
        craft(P("crafted"), [("model.norm.weight", "BF16", norm),
                             ("model.layers.0.mlp.down_proj.weight", "BF16", bf16_bits(m))])
        rc, _, err = run("quantize", P("crafted"), P("crafted-q"))
        check(rc == 0, "crafted: exit %d %s" % (rc, err))
        if rc == 0:
            check_model(P("crafted"), P("crafted-q"), 32, MLP, recs, "crafted")
            _, so = read_st(P("crafted-q", "model.safetensors"))
            s = "model.layers.0.mlp.down_proj"
            dec = np_unpack(so[s + ".qweight"][1], so[s + ".qzeros"][1], so[s + ".scales"][1], so[s + ".g_idx"][1])
            sc = so[s + ".scales"][1].view(np.float16).astype(np.float64)  # [G, out]
            zs = ((so[s + ".qzeros"][1].view(np.uint32)[0, 0] >> np.uint32(np.arange(8) * 4)) & 15) + 1
            check(np.all(dec[0, :32] == 1.75) and sc[0, 0] == 0.125 and zs[0] == 1,
                  "constant 1.75: decoded %r scale %r zero %r" % (dec[0, 0], sc[0, 0], zs[0]))
            check(zs[1] == 15 and np.all(dec[1, :32] == np.float32(-15 * np.float16(0.2))),
                  "constant -3: zero %r decoded %r" % (zs[1], dec[1, 0]))
            check(np.all(dec[2, :32] == 0) and zs[2] == 8 and sc[0, 2] == float(np.float16(2 / 15)),
                  "all-zero group: zero %r scale %r" % (zs[2], sc[0, 2]))
            want = np.array([-8, 7, 0, 2, 2, 0, -2, -2], dtype=np.float32)  # ties to even, clamp at 15
            check(sc[0, 3] == 1.0 and zs[3] == 8 and np.array_equal(dec[3, :8], want) and np.all(dec[3, 8:32] == 0),
                  "ties: scale %r zero %r decoded %r" % (sc[0, 3], zs[3], dec[3, :8]))
            check(sc[0, 4] == float(np.uint16(1).view(np.float16)) and zs[4] == 1 and np.all(dec[4, :32] == 0),
                  "tiny range: scale %r zero %r decoded %r" % (sc[0, 4], zs[4], dec[4, :2]))

        # refusals: exit 3 (4 for usage), a message naming the problem, nothing left behind
        bad = m.copy()
        bad[5, 7] = np.nan
        craft(P("nan"), [("model.layers.0.mlp.up_proj.weight", "BF16", bf16_bits(bad))])
        bad[5, 7] = np.inf
        craft(P("inf"), [("model.layers.0.mlp.up_proj.weight", "BF16", bf16_bits(bad))])
        craft(P("out12"), [("model.layers.0.mlp.gate_proj.weight", "BF16", bf16_bits(np.ones((12, 64))))])
        craft(P("in12"), [("model.layers.0.mlp.gate_proj.weight", "BF16", bf16_bits(np.ones((8, 12))))])
        craft(P("noscope"), [("model.norm.weight", "BF16", norm)])
        craft(P("vector"), [("model.layers.0.mlp.gate_proj.weight", "I32", np.ones((8, 64), dtype=np.int32))])
        craft(P("already"), [("model.layers.0.mlp.gate_proj.qweight", "I32", np.ones((8, 8), dtype=np.int32))])
        def empty_map(i):
            i["weight_map"] = {}

        def moved(i):
            i["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"

        def extra(i):
            i["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors"

        def escape(i):
            i["weight_map"]["model.norm.weight"] = "../model-00002-of-00002.safetensors"

        for tag, edit in (("empty", empty_map), ("moved", moved), ("extra", extra), ("escape", escape)):
            make_sharded(P("tiny-random"), P("sh-" + tag), edit)
        make_sharded(P("tiny-random"), P("sh-missing"))
        os.remove(P("sh-missing", "model-00002-of-00002.safetensors"))
        os.mkdir(P("noconfig"))
        shutil.copy(P("tiny-random", "model.safetensors"), P("noconfig", "model.safetensors"))
        os.mkdir(P("garbage"))
        with open(P("garbage", "config.json"), "w") as f:
            f.write("garbage\n")
        before = open(P("tiny-random-q", "model.safetensors"), "rb").read()
        cases = [
            (["--group-size", "48", P("tiny-random")], 3, "does not divide"),
            ([P("out12")], 3, "multiples of 8"),
            ([P("in12")], 3, "multiples of 8"),
            ([P("nan")], 3, "NaN"),
            ([P("inf")], 3, "infinite"),
            ([P("noscope")], 3, "no weight in scope"),
            ([P("vector")], 3, "not a BF16, F16 or F32 matrix"),
            ([P("already")], 3, "already quantized"),
            ([P("tiny-random-q")], 3, "already quantized"),
            ([P("sh-empty")], 3, "weight_map"),
            ([P("sh-moved")], 3, "model.safetensors.index.json says"),
            ([P("sh-extra")], 3, "names 25 tensors"),
            ([P("sh-escape")], 3, "not a file name"),
            ([P("sh-missing")], 3, "no model-00002-of-00002.safetensors"),
            ([P("noconfig")], 3, "config.json"),
            ([P("garbage")], 3, "config.json"),
            ([P("missing")], 4, "missing"),
            (["--codec", "int8", P("tiny-random")], 4, "int8"),
            (["--scope", "attention", P("tiny-random")], 4, "attention"),
            (["--group-size", "0", P("tiny-random")], 4, "--group-size"),
        ]
        for i, (argv, want, word) in enumerate(cases):
            out = P("r%02d" % i)
            rc, _, err = run("quantize", *argv, out)
            check(rc == want and word in err and not os.path.exists(out),
                  "quantize %r: exit %d (want %d), stderr %r" % (argv, rc, want, err))
        rc, _, err = run("quantize", P("tiny-random"), P("tiny-random-q"))
        check(rc == 3 and "exists" in err and open(P("tiny-random-q", "model.safetensors"), "rb").read() == before,
              "existing OUT: exit %d %s" % (rc, err))
        rc, _, err = run("quantize", P("tiny-random"))
        check(rc == 4 and "OUT" in err, "quantize without OUT: exit %d %s" % (rc, err))
        left = [f for f in os.listdir(w) if f.startswith(".fidelis-staging")]
        check(not left, "staging directories left behind: %r" % left)
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""gguf_write.py - a Hugging Face model directory (one model.safetensors, BF16/F16/F32) written as
a GGUF v3 file the way llama.cpp's converter lays it out, for the tests:

    hf_to_gguf(model_dir, out_path)

Names: token_embd, blk.N.attn_norm / attn_q / attn_k / attn_v / attn_output / attn_q_norm /
attn_k_norm (and .bias), ffn_norm / ffn_gate / ffn_up / ffn_down, output_norm, output (absent when
tied). Metadata: general.architecture (llama, qwen2, qwen3) and its <arch>.* hyper-parameters,
general.alignment 32. For `llama` the rows of attn_q and attn_k are permuted as the converter
does (from rotate-half to interleaved RoPE order): within each head of d rows, GGUF row 2i + j
holds HF row j*d/2 + i. Tensors keep their stored dtype (BF16 -> ggml type 30, F16 -> 1,
F32 -> 0); ggml's ne is the row-major shape reversed. RoPE scaling as the converter writes it:
linear and yarn as rope.scaling.* keys, llama3 as a rope_freqs.weight tensor of divisors.
Written from the GGUF layout, not from fidelis' reader."""
import json
import math
import os
import struct

import numpy as np

Q35 = {"post_attention_layernorm.weight": "post_attention_norm.weight",
       "linear_attn.in_proj_qkv.weight": "attn_qkv.weight",
       "linear_attn.in_proj_z.weight": "attn_gate.weight",
       "linear_attn.in_proj_b.weight": "ssm_beta.weight",
       "linear_attn.in_proj_a.weight": "ssm_alpha.weight",
       "linear_attn.conv1d.weight": "ssm_conv1d.weight", "linear_attn.dt_bias": "ssm_dt.bias",
       "linear_attn.A_log": "ssm_a", "linear_attn.norm.weight": "ssm_norm.weight",
       "linear_attn.out_proj.weight": "ssm_out.weight"}
ARCH = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3"}
LAYER = {"input_layernorm.weight": "attn_norm.weight",
         "post_attention_layernorm.weight": "ffn_norm.weight",
         "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
         "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
         "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
         "self_attn.v_proj.bias": "attn_v.bias", "self_attn.q_norm.weight": "attn_q_norm.weight",
         "self_attn.k_norm.weight": "attn_k_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
         "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}
GGML = {"BF16": 30, "F16": 1, "F32": 0, "Q8_0": 8}
SIZE = {"BF16": 2, "F16": 2, "F32": 4}


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        lo, hi = v["data_offsets"]
        out[k] = (v["dtype"], v["shape"], b[8 + n + lo:8 + n + hi])
    return out


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")
    if parts[:2] == ["model", "layers"]:
        return "blk.%s.%s" % (parts[2], LAYER[".".join(parts[3:])])
    raise ValueError(hf)


def permute(raw, shape, esize, d):
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(shape[0], shape[1] * esize)
    out = np.empty_like(rows)
    for h in range(shape[0] // d):
        for i in range(d // 2):
            for j in range(2):
                out[h * d + 2 * i + j] = rows[h * d + j * (d // 2) + i]
    return out.tobytes()


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, val):
    fmt = {4: "<I", 6: "<f"}[typ]
    return s(key) + struct.pack("<I", typ) + struct.pack(fmt, val)


def kv_str(key, val):
    return s(key) + struct.pack("<I", 8) + s(val)


def hf_to_gguf(model_dir, out, meta_extra=(), items_extra=()):
    """meta_extra: more metadata entries (kv / kv_str); items_extra: more (name, shape, dtype,
    bytes) tensors (tests of what a reader refuses)."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    if cfg["architectures"][0].startswith("Qwen3_5"):
        return qwen35_to_gguf(model_dir, cfg, out)
    arch = ARCH[cfg["architectures"][0]]
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    heads, kv_heads = cfg["num_attention_heads"], cfg.get("num_key_value_heads",
                                                          cfg["num_attention_heads"])
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // heads)
    meta = [kv_str("general.architecture", arch), kv("general.alignment", 4, 32),
            kv(arch + ".embedding_length", 4, cfg["hidden_size"]),
            kv(arch + ".feed_forward_length", 4, cfg["intermediate_size"]),
            kv(arch + ".block_count", 4, cfg["num_hidden_layers"]),
            kv(arch + ".attention.head_count", 4, heads),
            kv(arch + ".attention.head_count_kv", 4, kv_heads),
            kv(arch + ".attention.key_length", 4, head_dim),
            kv(arch + ".attention.value_length", 4, head_dim),
            kv(arch + ".context_length", 4, cfg["max_position_embeddings"]),
            kv(arch + ".attention.layer_norm_rms_epsilon", 6, cfg["rms_norm_eps"]),
            kv(arch + ".rope.freq_base", 6, cfg.get("rope_theta", 10000.0)),
            kv_str("tokenizer.ggml.model", "none")]
    items = []
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind in ("linear", "yarn"):
        meta += [kv_str(arch + ".rope.scaling.type", kind),
                 kv(arch + ".rope.scaling.factor", 6, rs["factor"])]
        if "original_max_position_embeddings" in rs:
            meta.append(kv(arch + ".rope.scaling.original_context_length", 4,
                           rs["original_max_position_embeddings"]))
    elif kind == "llama3":
        items.append(("rope_freqs.weight", (head_dim // 2,), "F32",
                      llama3_factors(cfg, head_dim).tobytes()))
    for hf in sorted(tensors):
        dt, shape, raw = tensors[hf]
        if hf == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        name = gguf_name(hf)
        if arch == "llama" and name.endswith(("attn_q.weight", "attn_k.weight")):
            raw = permute(raw, shape, SIZE[dt], head_dim)
        items.append((name, shape, dt, raw))
    write_gguf(out, meta + list(meta_extra), items + list(items_extra))


def llama3_factors(cfg, d):
    """llama3 scaling as llama.cpp's converter stores it: one divisor per frequency, from the
    transformers formula in float64, written as float32."""
    rs = cfg["rope_scaling"]
    f, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    L = rs["original_max_position_embeddings"]
    out = []
    for i in range(0, d, 2):
        wl = 2 * math.pi * cfg.get("rope_theta", 10000.0) ** (i / d)
        if wl < L / hi:
            out.append(1.0)
        elif wl > L / lo:
            out.append(f)
        else:
            sm = (L / wl - lo) / (hi - lo)
            out.append(1.0 / ((1 - sm) / f + sm))
    return np.array(out, dtype="<f4")


def write_gguf(out, meta, items):
    """A GGUF v3 file: the metadata entries, then (name, row-major shape, dtype key of GGML,
    bytes) per tensor, data aligned to 32."""
    infos, blobs, off = [], [], 0
    for name, shape, dt, raw in items:
        ne = list(reversed(shape))
        infos.append(s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
                     + struct.pack("<I", GGML[dt]) + struct.pack("<Q", off))
        pad = (-len(raw)) % 32
        blobs.append(raw + b"\0" * pad)
        off += len(raw) + pad
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(meta)) + b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % 32)
    with open(out, "wb") as f:
        f.write(head + b"".join(blobs))


def as_f32(dt, shape, raw):
    if dt == "F32":
        return np.frombuffer(raw, dtype="<f4").reshape(shape)
    if dt == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return u.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype="<f2").astype(np.float32).reshape(shape)


def v_heads(rest, qk, dv):
    """Where a Gated DeltaNet tensor's value heads lie: (axis, first index, head size)."""
    if rest == "linear_attn.out_proj.weight":
        return 1, 0, dv
    if rest in ("linear_attn.in_proj_qkv.weight", "linear_attn.conv1d.weight"):
        return 0, qk, dv
    return 0, 0, dv if rest == "linear_attn.in_proj_z.weight" else 1


def tiled(a, axis, first, hd, nk, r, back=False):
    """llama.cpp's V-head order: heads of hd [first:] grouped by key head (g*r + ri) become
    tiled (ri*nk + g), along axis; back=True undoes it."""
    a = np.moveaxis(a, axis, 0)
    lead = (r, nk) if back else (nk, r)
    v = a[first:].reshape(lead + (hd,) + a.shape[1:]).swapaxes(0, 1).reshape(a[first:].shape)
    return np.moveaxis(np.concatenate([a[:first], v]), 0, axis)


def q8_0(x):
    """x (float32 rows of a multiple of 32) as ggml Q8_0 blocks (f16 d, 32 int8 q), and their
    exact float32 dequantization d * q."""
    b = x.reshape(-1, 32).astype(np.float32)
    d = (np.abs(b).max(1) / 127).astype(np.float16)
    inv = np.where(d > 0, 1 / np.where(d > 0, d.astype(np.float32), 1), 0)
    q = np.clip(np.rint(b * inv[:, None]), -127, 127).astype(np.int8)
    raw = b"".join(d[i:i + 1].tobytes() + q[i].tobytes() for i in range(len(q)))
    return raw, (d.astype(np.float32)[:, None] * q.astype(np.float32)).reshape(x.shape)


def qwen35_to_gguf(model_dir, cfg, out, quant=None, mtp=False):
    """A Qwen3.5 directory as llama.cpp's converter writes it (arch qwen35): the text model only
    (language_model. dropped, model.visual.* and mtp.* skipped); zero-centred norms stored as
    1 + w and A_log as -exp(A_log), both float32, as are every vector and conv1d (squeezed to
    [C, K]); the V heads tiled when key and value head counts differ; matrices as stored, or
    with quant="q8_0" as Q8_0 blocks, in which case the return value maps each matrix's HF name
    to its float32 dequantization in Hugging Face order (for a twin directory). mtp=True appends
    one multi-token-prediction block (a copy of block 0, nextn_predict_layers 1), which a
    reader of the trunk must skip."""
    tc = cfg.get("text_config", cfg)
    rp = tc.get("rope_parameters") or {}
    hd = tc["head_dim"]
    nk, nv = tc["linear_num_key_heads"], tc["linear_num_value_heads"]
    dk, dv = tc["linear_key_head_dim"], tc["linear_value_head_dim"]
    r, qk = nv // nk, 2 * nk * dk
    factor = rp.get("partial_rotary_factor", tc.get("partial_rotary_factor", 0.25))
    a = "qwen35"
    meta = [kv_str("general.architecture", a), kv("general.alignment", 4, 32),
            kv(a + ".embedding_length", 4, tc["hidden_size"]),
            kv(a + ".feed_forward_length", 4, tc["intermediate_size"]),
            kv(a + ".block_count", 4, tc["num_hidden_layers"] + int(mtp)),
            kv(a + ".attention.head_count", 4, tc["num_attention_heads"]),
            kv(a + ".attention.head_count_kv", 4, tc["num_key_value_heads"]),
            kv(a + ".attention.key_length", 4, hd), kv(a + ".attention.value_length", 4, hd),
            kv(a + ".context_length", 4, tc["max_position_embeddings"]),
            kv(a + ".attention.layer_norm_rms_epsilon", 6, tc["rms_norm_eps"]),
            kv(a + ".rope.freq_base", 6, rp.get("rope_theta", tc.get("rope_theta", 1e7))),
            kv(a + ".rope.dimension_count", 4, int(hd * factor)),
            kv(a + ".ssm.conv_kernel", 4, tc["linear_conv_kernel_dim"]),
            kv(a + ".ssm.state_size", 4, dk), kv(a + ".ssm.group_count", 4, nk),
            kv(a + ".ssm.time_step_rank", 4, nv), kv(a + ".ssm.inner_size", 4, dv * nv),
            kv(a + ".full_attention_interval", 4, tc.get("full_attention_interval", 4)),
            kv_str("tokenizer.ggml.model", "none")]
    if mtp:
        meta.append(kv(a + ".nextn_predict_layers", 4, 1))
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    items, deq = [], {}
    names = sorted(tensors)
    if mtp:
        extra = "model.language_model.layers.%d." % tc["num_hidden_layers"]
        for hf in [n for n in names if ".layers.0." in n]:
            tensors[hf.replace(".layers.0.", "." + extra.split(".", 2)[2])] = tensors[hf]
        names = sorted(tensors)
    for hf in names:
        dt, shape, raw = tensors[hf]
        name = hf.replace("model.language_model.", "model.")
        if name.startswith(("model.visual.", "mtp.")):
            continue
        if name == "lm_head.weight" and tc.get("tie_word_embeddings", cfg.get("tie_word_embeddings")):
            continue
        parts = name.split(".")
        rest = ".".join(parts[3:])
        if parts[:2] == ["model", "layers"]:
            g = "blk.%s.%s" % (parts[2], Q35.get(rest) or LAYER[rest])
        else:
            g = gguf_name(name)
        x, typ = None, dt
        if len(shape) == 1 or "conv1d" in rest or rest.endswith("norm.weight"):
            x, typ = as_f32(dt, shape, raw), "F32"
        if rest.endswith("norm.weight") and rest != "linear_attn.norm.weight" or \
                name == "model.norm.weight":
            x = (x + np.float32(1)).astype(np.float32)
        if rest == "linear_attn.A_log":
            x = (-np.exp(x)).astype(np.float32)
        if "conv1d" in rest:
            x = x.reshape(shape[0], shape[2])
        if quant and len(shape) == 2 and "conv1d" not in rest and x is None:
            x = as_f32(dt, shape, raw)
        if nk != nv and rest.startswith("linear_attn.") and rest != "linear_attn.norm.weight":
            if x is None:
                x = np.frombuffer(raw, dtype={"BF16": "<u2", "F16": "<u2", "F32": "<u4"}[dt])
                x = x.reshape(shape)
            x = tiled(x, *v_heads(rest, qk, dv), nk, r)
        if quant and len(shape) == 2 and "conv1d" not in rest:
            if x is None:
                x = as_f32(dt, shape, raw)
            raw, d = q8_0(np.ascontiguousarray(x))
            if nk != nv and rest.startswith("linear_attn."):
                d = tiled(d, *v_heads(rest, qk, dv), nk, r, back=True)
            deq[hf] = d
            typ, shape, x = "Q8_0", list(x.shape), None
        if x is not None:
            raw = np.ascontiguousarray(x).tobytes()
            shape = list(x.shape)
        items.append((g, shape, typ, raw))
    write_gguf(out, meta, items)
    return deq

"""gguf_write.py - a Hugging Face model directory (one model.safetensors, BF16/F16/F32) written as
a GGUF v3 file the way llama.cpp's converter lays it out, for the tests:

    hf_to_gguf(model_dir, out_path)

Names: token_embd, blk.N.attn_norm / attn_q / attn_k / attn_v / attn_output / attn_q_norm /
attn_k_norm (and .bias), ffn_norm / ffn_gate / ffn_up / ffn_down, output_norm, output (absent when
tied). Metadata: general.architecture (llama, qwen2, qwen3) and its <arch>.* hyper-parameters,
general.alignment 32. For `llama` the rows of attn_q and attn_k are permuted as the converter
does (from rotate-half to interleaved RoPE order): within each head of d rows, GGUF row 2i + j
holds HF row j*d/2 + i. Tensors keep their stored dtype (BF16 -> ggml type 30, F16 -> 1,
F32 -> 0); ggml's ne is the row-major shape reversed. Written from the GGUF layout, not from
fidelis' reader."""
import json
import os
import struct

import numpy as np

ARCH = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3"}
LAYER = {"input_layernorm.weight": "attn_norm.weight",
         "post_attention_layernorm.weight": "ffn_norm.weight",
         "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
         "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
         "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
         "self_attn.v_proj.bias": "attn_v.bias", "self_attn.q_norm.weight": "attn_q_norm.weight",
         "self_attn.k_norm.weight": "attn_k_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
         "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}
GGML = {"BF16": 30, "F16": 1, "F32": 0}
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


def hf_to_gguf(model_dir, out):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
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
    infos, blobs, off = [], [], 0
    for hf in sorted(tensors):
        dt, shape, raw = tensors[hf]
        if hf == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        name = gguf_name(hf)
        if arch == "llama" and name.endswith(("attn_q.weight", "attn_k.weight")):
            raw = permute(raw, shape, SIZE[dt], head_dim)
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

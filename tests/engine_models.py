"""Tiny random Hugging Face decoder models and an independent float64 forward pass, shared by
tests/test_engine_oracle.py and tests/test_engine_refuse.py.

The writer produces the on-disk layout the engine reads (config.json, model.safetensors or
shards with model.safetensors.index.json) with nothing but numpy and json. The oracle is the
architecture's math written out in float64 from the weights as stored (BF16/F16 widened exactly),
sharing no code with the C engine.
"""
import json
import os
import struct

import math

import numpy as np


# ---- safetensors --------------------------------------------------------------------------

def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (the weights are finite)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def widen(raw, dtype, shape):
    """Bytes as stored -> float64, exactly."""
    if dtype == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float64).reshape(shape)
    return np.frombuffer(raw, dtype="<f4").astype(np.float64).reshape(shape)


def encode(a, dtype):
    if dtype == "BF16":
        return bf16_bits(a).astype("<u2").tobytes()
    if dtype == "F16":
        return np.asarray(a, dtype="<f2").tobytes()
    return np.asarray(a, dtype="<f4").tobytes()


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape, raw bytes). Header padded to 8 bytes with spaces,
    as the upstream writer does, so every tensor starts aligned."""
    header, off = {}, 0
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, raw in tensors:
            f.write(raw)


# ---- models -------------------------------------------------------------------------------

def make_config(arch="LlamaForCausalLM", vocab=97, hidden=64, layers=2, heads=4, kv_heads=4,
                head_dim=None, inter=96, tied=False, attention_bias=None, theta=10000.0,
                eps=1e-6, max_pos=256, dtype="BF16", **extra):
    c = {
        "architectures": [arch],
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "intermediate_size": inter,
        "max_position_embeddings": max_pos,
        "rms_norm_eps": eps,
        "rope_theta": theta,
        "tie_word_embeddings": tied,
        "hidden_act": "silu",
        "torch_dtype": {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[dtype],
        "rope_scaling": None,
    }
    if theta is None:
        del c["rope_theta"]
    if head_dim is not None:
        c["head_dim"] = head_dim
    if attention_bias is not None:
        c["attention_bias"] = attention_bias
    if arch != "LlamaForCausalLM":
        c["use_sliding_window"] = False
        c["sliding_window"] = 4096
    c.update(extra)
    return c


def dims(c):
    hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return hd, c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd


def flags(c):
    arch = c["architectures"][0]
    ab = bool(c.get("attention_bias", False))
    return {
        "qkv_bias": arch == "Qwen2ForCausalLM" or ab,
        "o_bias": arch != "Qwen2ForCausalLM" and ab,
        "qk_norm": arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
    }


def moe_layers(c):
    """Which layers route through experts, as transformers' Qwen3MoE decides: every
    decoder_sparse_step-th layer (i + 1 divisible by it) not in mlp_only_layers."""
    E, L = c.get("num_experts", 0), c["num_hidden_layers"]
    step, only = c.get("decoder_sparse_step", 1), c.get("mlp_only_layers") or []
    return [bool(E) and i not in only and (i + 1) % step == 0 for i in range(L)]


def moe_weights(w, p, c, mat, fused=False):
    """A routed MLP's tensors into w under prefix p: the router (scaled so the top choices are
    clear), each expert's gate, up and down (fused: gate_up_proj [E, 2I, H], gate's rows first,
    and down_proj [E, H, I], as Qwen3.5 MoE releases store them), and a shared expert with its
    one-row gate when the config has shared_expert_intermediate_size."""
    E, H, Im = c["num_experts"], c["hidden_size"], c["moe_intermediate_size"]
    w[p + "mlp.gate.weight"] = mat(E, H) * 4.0
    ex = [(mat(Im, H), mat(Im, H), mat(H, Im)) for _ in range(E)]
    if fused:
        w[p + "mlp.experts.gate_up_proj"] = np.stack([np.vstack([g, u]) for g, u, _ in ex])
        w[p + "mlp.experts.down_proj"] = np.stack([d for _, _, d in ex])
    else:
        for e, (g, u, d) in enumerate(ex):
            q = p + "mlp.experts.%d." % e
            w[q + "gate_proj.weight"], w[q + "up_proj.weight"], w[q + "down_proj.weight"] = g, u, d
    S = c.get("shared_expert_intermediate_size")
    if S:
        q = p + "mlp.shared_expert."
        w[q + "gate_proj.weight"], w[q + "up_proj.weight"] = mat(S, H), mat(S, H)
        w[q + "down_proj.weight"] = mat(H, S)
        w[p + "mlp.shared_expert_gate.weight"] = mat(1, H) * 2.0


def make_weights(c, seed):
    """name -> float32 array, in HF layout."""
    rng = np.random.default_rng(seed)
    H, I, V, L = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    hd, qd, kd = dims(c)
    f = flags(c)

    def mat(r, k):
        return (rng.standard_normal((r, k)) / np.sqrt(k)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    def bias(n):
        return (0.2 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((V, H)).astype(np.float32)}
    for i in range(L):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = norm(H)
        w[p + "post_attention_layernorm.weight"] = norm(H)
        w[p + "self_attn.q_proj.weight"] = mat(qd, H)
        w[p + "self_attn.k_proj.weight"] = mat(kd, H)
        w[p + "self_attn.v_proj.weight"] = mat(kd, H)
        w[p + "self_attn.o_proj.weight"] = mat(H, qd)
        if moe_layers(c)[i]:
            moe_weights(w, p, c, mat)
        else:
            w[p + "mlp.gate_proj.weight"] = mat(I, H)
            w[p + "mlp.up_proj.weight"] = mat(I, H)
            w[p + "mlp.down_proj.weight"] = mat(H, I)
        if f["qkv_bias"]:
            w[p + "self_attn.q_proj.bias"] = bias(qd)
            w[p + "self_attn.k_proj.bias"] = bias(kd)
            w[p + "self_attn.v_proj.bias"] = bias(kd)
        if f["o_bias"]:
            w[p + "self_attn.o_proj.bias"] = bias(H)
        if f["qk_norm"]:
            w[p + "self_attn.q_norm.weight"] = norm(hd)
            w[p + "self_attn.k_norm.weight"] = norm(hd)
    w["model.norm.weight"] = norm(H)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = mat(V, H) * 4.0
    return w


def write_model(d, c, weights, dtype="BF16", shards=1, overrides=None):
    """Writes config.json and the weights; overrides maps a name to (dtype, shape, raw) to store
    instead (or None to leave the tensor out). Returns {name: (dtype, shape, raw)} as written."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    stored = {}
    for name, a in weights.items():
        stored[name] = (dtype, a.shape, encode(a, dtype))
    for name, v in (overrides or {}).items():
        if v is None:
            stored.pop(name, None)
        else:
            stored[name] = v
    names = list(stored)
    if shards == 1:
        write_safetensors(os.path.join(d, "model.safetensors"),
                          [(n,) + tuple(stored[n]) for n in names])
        return stored
    files = ["model-%05d-of-%05d.safetensors" % (i + 1, shards) for i in range(shards)]
    wm = {}
    for s in range(shards):
        part = names[s::shards]
        write_safetensors(os.path.join(d, files[s]), [(n,) + tuple(stored[n]) for n in part])
        for n in part:
            wm[n] = files[s]
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f, indent=2)
    return stored


# ---- the oracle ---------------------------------------------------------------------------

def rope_tables(c, n):
    """RoPE's inverse frequencies and cos/sin factor for a context of n positions, in float64,
    written from the definitions in transformers' modeling_rope_utils (default, linear, dynamic,
    yarn, llama3); the parameters come from rope_scaling or rope_parameters."""
    hd = dims(c)[0]
    rp = c.get("rope_scaling") or c.get("rope_parameters") or {}
    theta = c["rope_theta"] if "rope_theta" in c else rp["rope_theta"]
    kind = rp.get("rope_type", rp.get("type", "default"))
    i2 = np.arange(0, hd, 2, dtype=np.float64)
    base = theta
    if kind == "dynamic" and n > c["max_position_embeddings"]:
        L, f = c["max_position_embeddings"], rp["factor"]
        base = theta * ((f * n / L) - (f - 1)) ** (hd / (hd - 2))
    inv = 1.0 / base ** (i2 / hd)
    scale = 1.0
    if kind == "linear":
        inv = inv / rp["factor"]
    elif kind == "llama3":
        f, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
        L = rp["original_max_position_embeddings"]
        wl = 2 * math.pi / inv
        out = np.where(wl > L / lo, inv / f, inv)
        smooth = (L / wl - lo) / (hi - lo)
        mid = ~(wl < L / hi) & ~(wl > L / lo)
        inv = np.where(mid, (1 - smooth) * out / f + smooth * out, out)
    elif kind == "yarn":
        f = rp["factor"]
        L = rp.get("original_max_position_embeddings") or c["max_position_embeddings"]

        def mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        if rp.get("attention_factor"):
            scale = rp["attention_factor"]
        elif rp.get("mscale") and rp.get("mscale_all_dim"):
            scale = mscale(f, rp["mscale"]) / mscale(f, rp["mscale_all_dim"])
        else:
            scale = mscale(f)
        fast, slow = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1

        def corr(rot):
            return hd * math.log(L / (rot * 2 * math.pi)) / (2 * math.log(theta))

        lo, hi = corr(fast), corr(slow)
        if rp.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, hd - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(hd // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
        keep = 1 - ramp
        inv = inv / f * (1 - keep) + inv * keep
    return inv, scale


def sliding(c):
    """(window, [layer slides?]) as transformers' Qwen2/Qwen3 configs decide: the window is
    sliding_window when use_sliding_window is true; layer_types names each layer, or else layers
    from max_window_layers (default 28) on slide. Mistral: every layer slides over
    sliding_window (4096 when absent, none when null)."""
    if c["architectures"][0] == "MistralForCausalLM":
        w = c.get("sliding_window", 4096)
        return w, [w is not None] * c["num_hidden_layers"]
    w = c.get("sliding_window") if c.get("use_sliding_window") else None
    lt = c.get("layer_types") or [
        "sliding_attention" if w is not None and i >= c.get("max_window_layers", 28)
        else "full_attention" for i in range(c["num_hidden_layers"])]
    return w, [t == "sliding_attention" for t in lt]


def moe(c, W, p, xn, norm=None):
    """The sparse MoE block (transformers' Qwen3MoeSparseMoeBlock, and Qwen3_5MoeSparseMoeBlock
    with norm True): softmax over the router logits, the num_experts_per_tok largest
    probabilities (the lower expert index first among equals), renormalised when norm (default:
    the config's norm_topk_prob), the weighted sum of the chosen experts' SwiGLU MLPs, and a
    shared expert's output times the sigmoid of its gate where the checkpoint has one."""
    norm = c.get("norm_topk_prob") if norm is None else norm
    lg = xn @ W[p + "mlp.gate.weight"].T
    pr = np.exp(lg - lg.max(axis=1, keepdims=True))
    pr /= pr.sum(axis=1, keepdims=True)
    Im = c["moe_intermediate_size"]

    def expert(e):
        if p + "mlp.experts.gate_up_proj" in W:
            gu = W[p + "mlp.experts.gate_up_proj"][e]
            return gu[:Im], gu[Im:], W[p + "mlp.experts.down_proj"][e]
        q = p + "mlp.experts.%d." % e
        return W[q + "gate_proj.weight"], W[q + "up_proj.weight"], W[q + "down_proj.weight"]

    def swiglu(g, u, d, x):
        a = g @ x
        return d @ (a / (1.0 + np.exp(-a)) * (u @ x))

    out = np.zeros_like(xn)
    for t in range(xn.shape[0]):
        top = np.argsort(-pr[t], kind="stable")[:c["num_experts_per_tok"]]
        wt = pr[t, top]
        if norm:
            wt = wt / wt.sum()
        for e, we in zip(top, wt):
            out[t] += we * swiglu(*expert(e), xn[t])
        if p + "mlp.shared_expert_gate.weight" in W:
            q = p + "mlp.shared_expert."
            s = swiglu(W[q + "gate_proj.weight"], W[q + "up_proj.weight"],
                       W[q + "down_proj.weight"], xn[t])
            gl = float(W[p + "mlp.shared_expert_gate.weight"][0] @ xn[t])
            out[t] += s / (1.0 + np.exp(-gl))
    return out


def forward(c, stored, ids):
    """float64 forward pass from the stored bytes: (hidden after the final norm, logits)."""
    W = {n: widen(raw, dt, shape) for n, (dt, shape, raw) in stored.items()}
    H = c["hidden_size"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd, qd, kd = dims(c)
    eps = c["rms_norm_eps"]
    theta = c["rope_theta"] if "rope_theta" in c else c["rope_parameters"]["rope_theta"]
    f = flags(c)
    n = len(ids)

    def rms(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    inv, scale = rope_tables(c, n)
    ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    cos = scale * np.concatenate([np.cos(ang), np.cos(ang)], axis=-1)[:, None, :]
    sin = scale * np.concatenate([np.sin(ang), np.sin(ang)], axis=-1)[:, None, :]

    def rope(x):  # x: [n, heads, hd]; HF rotate_half pairs i and i + hd/2
        rot = np.concatenate([-x[..., hd // 2:], x[..., : hd // 2]], axis=-1)
        return x * cos + rot * sin

    x = W["model.embed_tokens.weight"][np.asarray(ids)]
    causal = np.triu(np.full((n, n), -np.inf), k=1)
    window, slides = sliding(c)
    qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        # a sliding layer: key kv is seen by query q when q - window < kv <= q
        mask = np.where(ki > qi - window, causal, -np.inf) if slides[i] else causal
        xn = rms(x, W[p + "input_layernorm.weight"])
        q = xn @ W[p + "self_attn.q_proj.weight"].T
        k = xn @ W[p + "self_attn.k_proj.weight"].T
        v = xn @ W[p + "self_attn.v_proj.weight"].T
        if f["qkv_bias"]:
            q = q + W[p + "self_attn.q_proj.bias"]
            k = k + W[p + "self_attn.k_proj.bias"]
            v = v + W[p + "self_attn.v_proj.bias"]
        q = q.reshape(n, nh, hd)
        k = k.reshape(n, nkv, hd)
        v = v.reshape(n, nkv, hd)
        if f["qk_norm"]:
            q = rms(q, W[p + "self_attn.q_norm.weight"])
            k = rms(k, W[p + "self_attn.k_norm.weight"])
        q, k = rope(q), rope(k)
        rep = nh // nkv
        att = np.empty((n, nh, hd))
        for h in range(nh):
            s = q[:, h, :] @ k[:, h // rep, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            att[:, h, :] = s @ v[:, h // rep, :]
        o = att.reshape(n, qd) @ W[p + "self_attn.o_proj.weight"].T
        if f["o_bias"]:
            o = o + W[p + "self_attn.o_proj.bias"]
        x = x + o
        xn = rms(x, W[p + "post_attention_layernorm.weight"])
        if moe_layers(c)[i]:
            x = x + moe(c, W, p, xn)
            continue
        g = xn @ W[p + "mlp.gate_proj.weight"].T
        u = xn @ W[p + "mlp.up_proj.weight"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    hidden = rms(x, W["model.norm.weight"])
    head = W["model.embed_tokens.weight" if c["tie_word_embeddings"] else "lm_head.weight"]
    return hidden, hidden @ head.T


# Mixture of experts (Qwen3MoeForCausalLM): test_engine_oracle.py only (the float64 mode runs
# the dense architectures). Top 2 of 8 renormalised over 40 positions; top 1 of 4 without
# renormalising, a sparse step of 2 and a dense first layer; and a router tie.
MOE = dict(arch="Qwen3MoeForCausalLM", kv_heads=2, moe_intermediate_size=48)
MOE_CASES = [
    ("qwen3-moe-top2-norm", dict(MOE, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True),
     "BF16", 1, 40),
    ("qwen3-moe-top1-step2", dict(MOE, layers=4, num_experts=4, num_experts_per_tok=1,
                                  decoder_sparse_step=2, mlp_only_layers=[1]), "F32", 1, 29),
    ("qwen3-moe-top1-tie", dict(MOE, num_experts=4, num_experts_per_tok=1), "F32", 1, 17),
]

# The dense configurations the engine tests run (test_engine_oracle.py, test_engine_f64.py).
DENSE_CASES = [
    # name, config kwargs, dtype, shards, context length
    ("llama-untied-bf16-gqa1", dict(kv_heads=4), "BF16", 1, 40),
    ("llama-tied-f32-gqa2", dict(kv_heads=2, tied=True), "F32", 1, 23),
    ("qwen2-bias-f16-gqa4", dict(arch="Qwen2ForCausalLM", kv_heads=1, theta=1e6), "F16", 1, 33),
    ("qwen3-qknorm-tied-bf16", dict(arch="Qwen3ForCausalLM", kv_heads=2, head_dim=32, tied=True,
                                    theta=1e6, eps=1e-5), "BF16", 1, 18),
    ("llama-attnbias-sharded-bf16", dict(kv_heads=1, attention_bias=True, layers=3), "BF16", 3,
     17),
    ("qwen3-bigvocab-f32", dict(arch="Qwen3ForCausalLM", vocab=4200, layers=1, kv_heads=2),
     "F32", 2, 70),
    ("llama-one-token", dict(kv_heads=2), "F16", 1, 1),
    # rope_theta only inside rope_parameters (newer writers), layer_types all full attention.
    ("qwen3-rope-parameters", dict(arch="Qwen3ForCausalLM", kv_heads=4, theta=None,
                                   rope_parameters={"rope_type": "default", "rope_theta": 5e5},
                                   layer_types=["full_attention"] * 2), "BF16", 1, 12),
    # Past one 256-row product block and many attention blocks; wide enough for column cuts.
    ("qwen2-long-300", dict(arch="Qwen2ForCausalLM", layers=1, hidden=128, heads=8, kv_heads=2,
                            inter=640, max_pos=512), "BF16", 1, 300),
    # RoPE scaling (docs/ROPE.md). Head dim 32 and a trained length of 64 put llama3's bands
    # (kept, smoothed, interpolated) and yarn's ramp across the 16 frequencies.
    ("llama-rope-linear", dict(heads=2, kv_heads=1,
                               rope_scaling={"rope_type": "linear", "factor": 2.5}), "BF16", 1, 30),
    ("llama-rope-llama3", dict(heads=2, kv_heads=2, theta=5e5,
                               rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 64}),
     "F32", 1, 90),
    # dynamic: shorter than max_position_embeddings (plain RoPE), then past it (NTK base)
    ("qwen2-rope-dynamic-short", dict(arch="Qwen2ForCausalLM", heads=2, kv_heads=1, max_pos=48,
                                      rope_scaling={"type": "dynamic", "factor": 4.0}), "BF16",
     1, 40),
    ("qwen2-rope-dynamic-long", dict(arch="Qwen2ForCausalLM", heads=2, kv_heads=1, max_pos=48,
                                     rope_scaling={"type": "dynamic", "factor": 4.0}), "BF16", 1,
     150),
    ("qwen3-rope-yarn", dict(arch="Qwen3ForCausalLM", heads=2, kv_heads=1, max_pos=256,
                             rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                           "original_max_position_embeddings": 64}), "BF16", 1,
     100),
    # Sliding windows (Qwen2/Qwen3 rules): layers from max_window_layers on, or as layer_types
    # names them; contexts shorter than, and several times, the window.
    ("qwen2-window-short", dict(arch="Qwen2ForCausalLM", kv_heads=2, use_sliding_window=True,
                                sliding_window=8, max_window_layers=1), "BF16", 1, 6),
    ("qwen2-window", dict(arch="Qwen2ForCausalLM", kv_heads=2, use_sliding_window=True,
                          sliding_window=8, max_window_layers=1), "BF16", 1, 37),
    ("qwen3-window-layer-types", dict(arch="Qwen3ForCausalLM", layers=3, kv_heads=1,
                                      use_sliding_window=True, sliding_window=5,
                                      layer_types=["sliding_attention", "full_attention",
                                                   "sliding_attention"]), "F32", 1, 25),
    # Mistral: Llama with every layer over a window (no use_sliding_window switch)
    ("mistral-window", dict(arch="MistralForCausalLM", kv_heads=2, layers=3, sliding_window=8,
                            head_dim=32), "BF16", 1, 37),
    ("qwen2-window-long", dict(arch="Qwen2ForCausalLM", layers=1, hidden=128, heads=8,
                               kv_heads=2, inter=256, max_pos=512, use_sliding_window=True,
                               sliding_window=70, max_window_layers=0), "BF16", 1, 300),
    # yarn in rope_parameters (newer writers): mscale ratio, untruncated ramp, own betas
    ("llama-rope-yarn-params", dict(heads=2, kv_heads=2, theta=None, max_pos=200,
                                    rope_parameters={"rope_type": "yarn", "rope_theta": 1e4,
                                                     "factor": 3.0, "mscale": 1.0,
                                                     "mscale_all_dim": 0.5, "truncate": False,
                                                     "beta_fast": 16.0, "beta_slow": 2.0,
                                                     "original_max_position_embeddings": 50}),
     "F16", 1, 70),
]

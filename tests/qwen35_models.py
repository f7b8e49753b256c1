"""Tiny random Qwen3.5 checkpoints (hybrid Gated DeltaNet + gated full attention) and an
independent float64 forward pass, for tests/test_qwen35_oracle.py.

Everything follows docs/QWEN35.md. The writer reuses the safetensors helpers of
tests/engine_models.py; the oracle shares no code with the C engine and reads the weights as
stored (BF16/F16 widened exactly). The DeltaNet has two numpy forms: the plain recurrence (what
the oracle uses) and the chunked UT-transform form, kept only so the test can check that the
spec's two formulations agree before the engine is compared against either.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_models as em  # noqa: E402

LIN, FULL = "linear_attention", "full_attention"
CHUNK = 64
L2_EPS = 1e-6


# ---- config -------------------------------------------------------------------------------

def make_config(arch="Qwen3_5ForCausalLM", vocab=97, hidden=64, layer_types=None, layers=None,
                interval=None, heads=4, kv_heads=2, head_dim=16, inter=96, tied=False,
                tie_in="top", prf=0.25, theta=1e7, rope_in="parameters", nk=2, nv=4, dk=16,
                dv=16, conv_k=4, eps=1e-6, max_pos=512, dtype="BF16", mtp=False, **extra):
    """A config.json dict. layer_types None leaves the field out so the engine derives it from
    full_attention_interval (interval None leaves that out too: the default 4). prf None leaves
    partial_rotary_factor out (default 0.25). rope_in "top" puts the RoPE keys beside the other
    text fields instead of in rope_parameters. tie_in: "top", "text" or "both" (CausalLM has
    one level, so anything but "top" is the same there). extra goes into the text config."""
    if layer_types is not None:
        layers = len(layer_types)
    if layers is None:
        raise ValueError("layers or layer_types")
    rd = int(head_dim * (0.25 if prf is None else prf))
    # Real checkpoints carry an M-RoPE split of the rotary half; text-only it changes nothing.
    sec = [rd // 2 - 2 * (rd // 6), rd // 6, rd // 6]
    rope = {"rope_type": "default", "rope_theta": theta, "mrope_section": sec,
            "mrope_interleaved": True}
    if prf is not None:
        rope["partial_rotary_factor"] = prf
    t = {
        "model_type": "qwen3_5_text",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": inter,
        "max_position_embeddings": max_pos,
        "rms_norm_eps": eps,
        "hidden_act": "silu",
        "linear_conv_kernel_dim": conv_k,
        "linear_key_head_dim": dk,
        "linear_value_head_dim": dv,
        "linear_num_key_heads": nk,
        "linear_num_value_heads": nv,
        "attention_dropout": 0.0,
        "torch_dtype": {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[dtype],
    }
    if rope_in == "parameters":
        t["rope_parameters"] = rope
    else:
        t.update(rope)
        del t["rope_type"]
    if layer_types is not None:
        t["layer_types"] = list(layer_types)
    if interval is not None:
        t["full_attention_interval"] = interval
    if mtp:
        t["mtp_num_hidden_layers"] = 1
    t.update(extra)
    moe = "Moe" in arch
    if moe:  # every layer routes: no dense MLP, so no intermediate_size (as releases write)
        del t["intermediate_size"]
        t["model_type"] = "qwen3_5_moe_text"
    if arch.endswith("ForCausalLM"):
        t["architectures"] = [arch]
        t["tie_word_embeddings"] = tied
        return t
    c = {"architectures": [arch], "model_type": "qwen3_5_moe" if moe else "qwen3_5",
         "text_config": t,
         "vision_config": {"model_type": "qwen3_5_vision", "depth": 1, "hidden_size": 32,
                           "num_heads": 2, "intermediate_size": 48, "in_channels": 3,
                           "patch_size": 4, "temporal_patch_size": 2, "spatial_merge_size": 2,
                           "out_hidden_size": hidden},
         "image_token_id": vocab - 3, "video_token_id": vocab - 2,
         "vision_start_token_id": vocab - 1}
    if tie_in in ("top", "both"):
        c["tie_word_embeddings"] = tied
    if tie_in in ("text", "both"):
        t["tie_word_embeddings"] = tied
    return c


def wrapped(c):
    return c["architectures"][0].endswith("ForConditionalGeneration")


def is_moe(c):
    return "Moe" in c["architectures"][0]


def text_config(c):
    return c["text_config"] if wrapped(c) else c


def prefix(c):
    return "model.language_model." if wrapped(c) else "model."


def tied(c):
    if "tie_word_embeddings" in c:
        return bool(c["tie_word_embeddings"])
    return bool(text_config(c).get("tie_word_embeddings", False))


def layer_types(t):
    if "layer_types" in t:
        return list(t["layer_types"])
    iv = t.get("full_attention_interval", 4)
    return [FULL if (i + 1) % iv == 0 else LIN for i in range(t["num_hidden_layers"])]


def rope_of(t):
    """(theta, partial_rotary_factor) from rope_parameters, else the text config's top level."""
    rp = t.get("rope_parameters") or {}
    theta = rp.get("rope_theta", t.get("rope_theta"))
    prf = rp.get("partial_rotary_factor", t.get("partial_rotary_factor", 0.25))
    return float(theta), float(prf)


# ---- weights ------------------------------------------------------------------------------

def make_weights(c, seed, vision=None, mtp=None, fused=None):
    """name -> float32 array in HF layout. Scales keep activations O(1): matrices 1/sqrt(fan_in),
    zero-centred norm weights near 0, the (not zero-centred) DeltaNet output norm near 1, A in
    [0.5, 8] and dt_bias near 1 so the decays range from slow to near-total forgetting. A layer
    type other than linear attention gets attention tensors (so refusal tests have a full set).
    A MoE config's experts are fused (fused None: when the checkpoint wraps the text model, as
    Qwen3.5 MoE releases do) or one tensor per expert."""
    rng = np.random.default_rng(seed)
    t = text_config(c)
    P = prefix(c)
    vision = wrapped(c) if vision is None else vision
    fused = wrapped(c) if fused is None else fused
    mtp = bool(t.get("mtp_num_hidden_layers")) if mtp is None else mtp
    H, I, V = t["hidden_size"], t.get("intermediate_size"), t["vocab_size"]
    nh, nkv, hd = t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
    nk, nv = t["linear_num_key_heads"], t["linear_num_value_heads"]
    dk, dv, K = t["linear_key_head_dim"], t["linear_value_head_dim"], t["linear_conv_kernel_dim"]
    conv_dim = 2 * nk * dk + nv * dv

    def mat(r, k):
        return (rng.standard_normal((r, k)) / np.sqrt(k)).astype(np.float32)

    def znorm(n):
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {P + "embed_tokens.weight": rng.standard_normal((V, H)).astype(np.float32)}
    for i, lt in enumerate(layer_types(t)):
        p = "%slayers.%d." % (P, i)
        w[p + "input_layernorm.weight"] = znorm(H)
        w[p + "post_attention_layernorm.weight"] = znorm(H)
        if lt == LIN:
            a = p + "linear_attn."
            w[a + "in_proj_qkv.weight"] = mat(conv_dim, H)
            w[a + "in_proj_z.weight"] = mat(nv * dv, H)
            w[a + "in_proj_b.weight"] = mat(nv, H)
            w[a + "in_proj_a.weight"] = mat(nv, H)
            w[a + "conv1d.weight"] = (rng.standard_normal((conv_dim, 1, K))
                                      / np.sqrt(K)).astype(np.float32)
            w[a + "dt_bias"] = (1.0 + 0.2 * rng.standard_normal(nv)).astype(np.float32)
            w[a + "A_log"] = np.log(rng.uniform(0.5, 8.0, nv)).astype(np.float32)
            w[a + "norm.weight"] = (1.0 + 0.1 * rng.standard_normal(dv)).astype(np.float32)
            w[a + "out_proj.weight"] = mat(H, nv * dv)
        else:
            a = p + "self_attn."
            w[a + "q_proj.weight"] = mat(2 * nh * hd, H)
            w[a + "k_proj.weight"] = mat(nkv * hd, H)
            w[a + "v_proj.weight"] = mat(nkv * hd, H)
            w[a + "o_proj.weight"] = mat(H, nh * hd)
            w[a + "q_norm.weight"] = znorm(hd)
            w[a + "k_norm.weight"] = znorm(hd)
        if is_moe(c):
            em.moe_weights(w, p, t, mat, fused)
            continue
        w[p + "mlp.gate_proj.weight"] = mat(I, H)
        w[p + "mlp.up_proj.weight"] = mat(I, H)
        w[p + "mlp.down_proj.weight"] = mat(H, I)
    w[P + "norm.weight"] = znorm(H)
    if not tied(c):
        w["lm_head.weight"] = mat(V, H) * 4.0
    if vision:
        w["model.visual.patch_embed.proj.weight"] = mat(32, 96).reshape(32, 3, 2, 4, 4)
        w["model.visual.blocks.0.norm1.weight"] = znorm(32) + 1.0
        w["model.visual.blocks.0.attn.qkv.weight"] = mat(96, 32)
        w["model.visual.blocks.0.attn.qkv.bias"] = znorm(96)
        w["model.visual.merger.linear_fc1.weight"] = mat(128, 128)
        w["model.visual.merger.linear_fc2.weight"] = mat(H, 128)
    if mtp:
        w["mtp.fc.weight"] = mat(H, 2 * H)
        w["mtp.norm.weight"] = znorm(H)
        w["mtp.layers.0.input_layernorm.weight"] = znorm(H)
    return w


SMALL_VECTORS = ("linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.conv1d.weight")


def write_model(d, c, weights, dtype="BF16", small_f32=False, shards=1, overrides=None):
    """config.json + safetensors; small_f32 keeps A_log, dt_bias and conv1d in F32 (as releases
    do) whatever dtype the rest has. Returns {name: (dtype, shape, raw)} as written."""
    ov = {}
    if small_f32:
        for n, a in weights.items():
            if n.endswith(SMALL_VECTORS):
                ov[n] = ("F32", a.shape, em.encode(a, "F32"))
    ov.update(overrides or {})
    return em.write_model(d, c, weights, dtype=dtype, shards=shards, overrides=ov)


# ---- the oracle ---------------------------------------------------------------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _silu(x):
    return x * _sigmoid(x)


def delta_recurrent(q, k, v, beta, g):
    """One value head: q, k [n, dk], v [n, dv], beta, g [n] -> o [n, dv]."""
    S = np.zeros((k.shape[1], v.shape[1]))
    o = np.empty((len(v), v.shape[1]))
    for t in range(len(v)):
        S = S * np.exp(g[t])
        d = (v[t] - S.T @ k[t]) * beta[t]
        S = S + np.outer(k[t], d)
        o[t] = S.T @ q[t]
    return o


def _solve_unit_lower(T, B):
    X = B.copy()
    for i in range(1, len(X)):
        X[i] -= T[i, :i] @ X[:i]
    return X


def delta_chunked(q, k, v, beta, g, chunk=CHUNK):
    """The same head in chunks (UT transform, docs/QWEN35.md). Decays are formed from masked
    differences so no exp ever sees a positive argument (it would overflow above the diagonal)."""
    S = np.zeros((k.shape[1], v.shape[1]))
    o = np.empty((len(v), v.shape[1]))
    for s in range(0, len(v), chunk):
        sl = slice(s, min(s + chunk, len(v)))
        qc, kc, vc, bc = q[sl], k[sl], v[sl], beta[sl]
        c = np.cumsum(g[sl])
        L = len(c)
        incl = np.tril(np.ones((L, L), dtype=bool))
        decay = np.exp(np.where(incl, c[:, None] - c[None, :], -np.inf))
        T = bc[:, None] * (kc @ kc.T) * decay * ~np.eye(L, dtype=bool)
        U = _solve_unit_lower(T, bc[:, None] * vc)
        Wm = _solve_unit_lower(T, (bc * np.exp(c))[:, None] * kc)
        vp = U - Wm @ S
        o[sl] = (np.exp(c)[:, None] * qc) @ S + ((qc @ kc.T) * decay) @ vp
        S = np.exp(c[-1]) * S + (np.exp(c[-1] - c)[:, None] * kc).T @ vp
    return o


def forward(c, stored, ids, deltanet="recurrent", chunk=CHUNK):
    """float64 forward from the stored bytes -> (hidden [n, H] after the final norm,
    logits [n, V], boundaries [layers + 2, H]: the last position's row after the embedding,
    after each layer, and after the final norm)."""
    W = {n: em.widen(raw, dt, shape) for n, (dt, shape, raw) in stored.items()}
    t = text_config(c)
    P = prefix(c)
    eps = t["rms_norm_eps"]
    nh, nkv, hd = t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
    nk, nv = t["linear_num_key_heads"], t["linear_num_value_heads"]
    dk, dv, K = t["linear_key_head_dim"], t["linear_value_head_dim"], t["linear_conv_kernel_dim"]
    theta, prf = rope_of(t)
    rd = int(hd * prf)
    n = len(ids)
    rule = {"recurrent": delta_recurrent,
            "chunked": lambda *a: delta_chunked(*a, chunk=chunk)}[deltanet]

    def rms(x):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)

    def zrms(x, w):
        return rms(x) * (1.0 + w)

    half = rd // 2
    ang = np.arange(n, dtype=np.float64)[:, None] * theta ** (-2.0 * np.arange(half) / rd)
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(x):  # x [n, heads, hd]: element i < rd/2 pairs with i + rd/2; the rest pass
        x1, x2 = x[..., :half], x[..., half:rd]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., rd:]], axis=-1)

    mask = np.triu(np.full((n, n), -np.inf), k=1)

    def attention(h, a):
        qg = (h @ W[a + "q_proj.weight"].T).reshape(n, nh, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:].reshape(n, nh * hd)
        k = (h @ W[a + "k_proj.weight"].T).reshape(n, nkv, hd)
        v = (h @ W[a + "v_proj.weight"].T).reshape(n, nkv, hd)
        q = rope(zrms(q, W[a + "q_norm.weight"]))
        k = rope(zrms(k, W[a + "k_norm.weight"]))
        rep = nh // nkv
        att = np.empty((n, nh, hd))
        for j in range(nh):
            s = q[:, j] @ k[:, j // rep].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, j] = (s / s.sum(axis=1, keepdims=True)) @ v[:, j // rep]
        return (att.reshape(n, nh * hd) * _sigmoid(gate)) @ W[a + "o_proj.weight"].T

    def gated_deltanet(h, a):
        mixed = h @ W[a + "in_proj_qkv.weight"].T
        z = (h @ W[a + "in_proj_z.weight"].T).reshape(n, nv, dv)
        b = h @ W[a + "in_proj_b.weight"].T
        av = h @ W[a + "in_proj_a.weight"].T
        cw = W[a + "conv1d.weight"].reshape(-1, K)
        padded = np.vstack([np.zeros((K - 1, mixed.shape[1])), mixed])
        conv = _silu(sum(cw[:, j] * padded[j:j + n] for j in range(K)))
        q = conv[:, :nk * dk].reshape(n, nk, dk)
        k = conv[:, nk * dk:2 * nk * dk].reshape(n, nk, dk)
        v = conv[:, 2 * nk * dk:].reshape(n, nv, dv)
        q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + L2_EPS) / np.sqrt(dk)
        k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + L2_EPS)
        beta = _sigmoid(b)
        g = -np.exp(W[a + "A_log"]) * np.logaddexp(0.0, av + W[a + "dt_bias"])
        rep = nv // nk
        o = np.empty((n, nv, dv))
        for j in range(nv):
            o[:, j] = rule(q[:, j // rep], k[:, j // rep], v[:, j], beta[:, j], g[:, j])
        o = rms(o) * W[a + "norm.weight"] * _silu(z)
        return o.reshape(n, nv * dv) @ W[a + "out_proj.weight"].T

    x = W[P + "embed_tokens.weight"][np.asarray(ids)]
    bounds = [x[-1].copy()]
    for i, lt in enumerate(layer_types(t)):
        p = "%slayers.%d." % (P, i)
        h = zrms(x, W[p + "input_layernorm.weight"])
        if lt == LIN:
            x = x + gated_deltanet(h, p + "linear_attn.")
        elif lt == FULL:
            x = x + attention(h, p + "self_attn.")
        else:
            raise ValueError("layer type %r" % lt)
        h = zrms(x, W[p + "post_attention_layernorm.weight"])
        if is_moe(c):  # Qwen3.5 MoE: every layer routes, always renormalised
            x = x + em.moe(t, W, p, h, norm=True)
            bounds.append(x[-1].copy())
            continue
        gt = h @ W[p + "mlp.gate_proj.weight"].T
        x = x + (_silu(gt) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        bounds.append(x[-1].copy())
    hidden = zrms(x, W[P + "norm.weight"])
    bounds.append(hidden[-1].copy())
    head = W[P + "embed_tokens.weight" if tied(c) else "lm_head.weight"]
    return hidden, hidden @ head.T, np.array(bounds)

#!/usr/bin/env python3
"""`fidelis model init` (issue 11, item 5): the tiny presets against an independent Python
implementation of the documented generator (docs/MODELS.md), bit for bit; determinism (same
preset and seed: byte-identical trees; another seed: other weights, the same panel); the
config.json keys; tensor names, shapes and dtypes in HF layout; the spread of each kind of
weight; the built-in panel through fdl_ds_panel_check (tool_model) and its byte mapping; and the
refusals (OUT exists, unknown preset, bad usage), which leave nothing behind. The MoE presets
(Qwen3 MoE with one tensor per expert, Qwen3.5 MoE with fused experts and a shared expert) and
Mistral (Llama's tensors, a sliding window on every layer) the same way, each tiny one also
loaded by the engine (tool_engine prefill: finite logits); the big presets (qwen3.5-4b,
qwen3.5-35b-a3b-4l, qwen3-30b-a3b-6l) through --no-weights: config, tensor and parameter
counts."""
import json
import math
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
ENGINE = os.path.join(BUILD, "tests", "tool_engine")
M64 = (1 << 64) - 1

PRESETS = {
    "tiny-random": dict(arch="Qwen3ForCausalLM", model_type="qwen3", vocab=272, hidden=64,
                        inter=128, layers=2, heads=4, kv=2, hd=16, tied=True, qk_norm=True,
                        bias=False, rope_theta=1000000.0, eps=1e-6, maxpos=4096, bos=256,
                        eos=257, params=91520),
    "llama-tiny-random": dict(arch="LlamaForCausalLM", model_type="llama", vocab=272, hidden=64,
                              inter=128, layers=2, heads=4, kv=2, hd=16, tied=False,
                              qk_norm=False, bias=False, rope_theta=10000.0, eps=1e-5,
                              maxpos=4096, bos=256, eos=257, params=108864),
    # Mistral: Llama's tensors (same names and shapes, so the same bits for a seed), rope_theta
    # 1e6, and a window of 16 keys on every layer (MistralConfig's sliding_window, no switch).
    "mistral-tiny-random": dict(arch="MistralForCausalLM", model_type="mistral", vocab=272,
                                hidden=64, inter=128, layers=2, heads=4, kv=2, hd=16, tied=False,
                                qk_norm=False, bias=False, rope_theta=1000000.0, eps=1e-5,
                                maxpos=4096, bos=256, eos=257, window=16, params=108864,
                                tensors=21),
    "qwen2-tiny-random": dict(arch="Qwen2ForCausalLM", model_type="qwen2", vocab=272, hidden=64,
                              inter=128, layers=2, heads=4, kv=1, hd=16, tied=True,
                              qk_norm=False, bias=True, rope_theta=1000000.0, eps=1e-6,
                              maxpos=4096, bos=256, eos=257, params=87552),
    # Qwen3 MoE: every layer routed, one tensor per expert (as Qwen3-30B-A3B's release stores
    # them); intermediate_size stays in the config although no layer has a dense MLP.
    "qwen3-moe-tiny-random": dict(arch="Qwen3MoeForCausalLM", model_type="qwen3_moe", vocab=272,
                                  hidden=64, inter=128, layers=2, heads=4, kv=2, hd=16,
                                  tied=False, qk_norm=True, bias=False, rope_theta=1000000.0,
                                  eps=1e-6, maxpos=4096, bos=256, eos=257, experts=8, topk=2,
                                  moe_inter=32, params=159104, tensors=69),
}
# Checked through --no-weights only (8.7 GB): Qwen3-30B-A3B's config.json, 6 of its 48 layers.
DENSE_BIG = {
    "qwen3-30b-a3b-6l": dict(arch="Qwen3MoeForCausalLM", model_type="qwen3_moe", vocab=151936,
                             hidden=2048, inter=6144, layers=6, heads=32, kv=4, hd=128,
                             tied=False, qk_norm=True, bias=False, rope_theta=1000000.0,
                             eps=1e-6, maxpos=40960, bos=151643, eos=151645, experts=128,
                             topk=8, moe_inter=768, params=4361055744, tensors=2361),
}
TEXTS = {  # the panel holds the first 63 bytes of each
    "garden": "Sow the peas by the north wall in March, water the young tomatoes at dawn, and "
              "mulch the beans.",
    "arithmetic": "17 + 25 = 42; 42 * 3 = 126; 126 - 48 = 78; 78 / 6 = 13; 13 * 13 = 169; 169 "
                  "+ 31 = 200.",
    "code": "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return "
            "total / len(xs)\n",
    "instructions": "Preheat the oven to 180 C. Whisk two eggs with the sugar, fold in the flour, "
                    "and bake for 25 minutes.",
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
    return bool(cond)


def run(*argv):
    p = subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


# ---- an independent generator ----------------------------------------------------------------

def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def xoshiro_stream(seed, n):
    """n outputs of xoshiro256** seeded through splitmix64."""
    s = []
    for _ in range(4):
        seed, v = splitmix(seed)
        s.append(v)
    out = np.empty(n, dtype=np.uint64)
    s0, s1, s2, s3 = s
    for i in range(n):
        out[i] = (rotl((s1 * 5) & M64, 7) * 9) & M64
        t = (s1 << 17) & M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
    return out


def fnv1a(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def bf16_bits(f32):
    u = f32.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def mlp_tensors(p, a):
    """[(name, shape)] of one layer's MLP under prefix a ("...layers.N.mlp."), every one a
    projection. Dense: gate/up/down. Routed, in the module order of transformers' sparse MoE
    blocks: the router (gate, [experts, hidden]), then the experts: one [out, in] tensor each
    (Qwen3 MoE) or fused (Qwen3.5 MoE: gate_up_proj [E, 2 I, hidden], down_proj [E, hidden, I]),
    then the shared expert and its one-row sigmoid gate."""
    h = p["hidden"]
    if not p.get("experts"):
        f = p["inter"]
        return [(a + "gate_proj.weight", (f, h)), (a + "up_proj.weight", (f, h)),
                (a + "down_proj.weight", (h, f))]
    e, f = p["experts"], p["moe_inter"]
    t = [(a + "gate.weight", (e, h))]
    if not p.get("shared"):
        for x in range(e):
            b = a + "experts.%d." % x
            t += [(b + "gate_proj.weight", (f, h)), (b + "up_proj.weight", (f, h)),
                  (b + "down_proj.weight", (h, f))]
        return t
    s = p["shared"]
    return t + [(a + "experts.gate_up_proj", (e, 2 * f, h)), (a + "experts.down_proj", (e, h, f)),
                (a + "shared_expert.gate_proj.weight", (s, h)),
                (a + "shared_expert.up_proj.weight", (s, h)),
                (a + "shared_expert.down_proj.weight", (h, s)),
                (a + "shared_expert_gate.weight", (1, h))]


def expected_tensors(p):
    """[(name, shape, kind)] in HF module order."""
    h, q, kv, hd = p["hidden"], p["heads"] * p["hd"], p["kv"] * p["hd"], p["hd"]
    t = [("model.embed_tokens.weight", (p["vocab"], h), "embed")]
    for l in range(p["layers"]):
        a = "model.layers.%d." % l
        t.append((a + "input_layernorm.weight", (h,), "norm"))
        for name, rows in (("q", q), ("k", kv), ("v", kv)):
            t.append((a + "self_attn.%s_proj.weight" % name, (rows, h), "proj"))
            if p["bias"]:
                t.append((a + "self_attn.%s_proj.bias" % name, (rows,), "bias"))
        t.append((a + "self_attn.o_proj.weight", (h, q), "proj"))
        if p["qk_norm"]:
            t.append((a + "self_attn.q_norm.weight", (hd,), "norm"))
            t.append((a + "self_attn.k_norm.weight", (hd,), "norm"))
        t.append((a + "post_attention_layernorm.weight", (h,), "norm"))
        t += [(n, shape, "proj") for n, shape in mlp_tensors(p, a + "mlp.")]
    t.append(("model.norm.weight", (h,), "final_norm"))
    if not p["tied"]:
        t.append(("lm_head.weight", (p["vocab"], h), "head"))
    return t


def generate(p, seed, name, shape, kind):
    """The documented values: a centred Irwin-Hall sum of the four 16-bit lanes of each draw,
    times sd * sqrt(3 / (2^32 - 1)) in float64, then offset and gain, float32, BF16."""
    n = int(np.prod(shape))
    x = xoshiro_stream(seed ^ ((fnv1a(name) * 0x9E3779B97F4A7C15) & M64), n)
    lanes = sum(((x >> np.uint64(16 * k)) & np.uint64(0xFFFF)).astype(np.int64) for k in range(4))
    z = (lanes - 131070).astype(np.float64)
    sd = {"embed": 1.0, "proj": 1.0 / math.sqrt(shape[-1]), "head": 3.0 / math.sqrt(p["hidden"]),
          "bias": 0.1}.get(kind, 0.05)
    k = math.sqrt(3.0 / 4294967295.0) * sd
    v = z * k
    if kind in ("norm", "final_norm"):
        v = v + 1.0
    if kind == "final_norm" and p["tied"]:
        v = v * (3.0 / math.sqrt(p["hidden"]))
    return bf16_bits(v.astype(np.float32)).reshape(shape)


# ---- reading what was written ----------------------------------------------------------------

def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return n, header, raw[8 + n:]


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def tree(d):
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


def gpt2_byte_chars():
    """GPT-2's ByteLevel alphabet, written from its definition: printable Latin-1 bytes stand
    for themselves, the others for 256, 257, ... in byte order."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    out, n = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


def check_tokenizer(name, files):
    """Byte ids 0..255 through the ByteLevel alphabet, 16 specials from 256 (bos 256, eos 257),
    ChatML over <|im_start|>/<|im_end|>: the tiny presets' panel convention, written down."""
    tok = json.loads(files["tokenizer.json"])
    vocab = tok["model"]["vocab"]
    want = {c: b for b, c in gpt2_byte_chars().items()}
    specials = {t["content"]: t["id"] for t in tok["added_tokens"]}
    check(len(vocab) == 272 and all(vocab.get(c) == b for c, b in want.items()),
          "%s: tokenizer vocabulary is not the 256 byte characters" % name)
    check(sorted(specials.values()) == list(range(256, 272)) and specials["<|bos|>"] == 256
          and specials["<|eos|>"] == 257 and all(vocab[k] == v for k, v in specials.items()),
          "%s: tokenizer specials %r" % (name, specials))
    check(tok["model"]["type"] == "BPE" and tok["model"]["merges"] == []
          and tok["pre_tokenizer"]["type"] == "ByteLevel", "%s: tokenizer model" % name)
    tmpl = files["chat_template.jinja"].decode()
    check("<|im_start|>" in tmpl and "add_generation_prompt" in tmpl, "%s: chat template" % name)


def expected_dense_config(name, p, seed):
    """config.json of the dense family, every key: transformers' LlamaConfig / MistralConfig /
    Qwen2Config / Qwen3Config names, plus Qwen3MoeConfig's for a routed model. Mistral gets the
    family's common keys and its sliding_window, nothing else: MistralConfig has no
    use_sliding_window / max_window_layers (the window is on every layer) and no mlp_bias /
    pretraining_tp; attention_bias and rope_scaling, which MistralConfig does not take either,
    are the family's common keys (transformers keeps them as plain attributes)."""
    c = {"architectures": [p["arch"]], "model_type": p["model_type"], "vocab_size": p["vocab"],
         "hidden_size": p["hidden"], "intermediate_size": p["inter"],
         "num_hidden_layers": p["layers"], "num_attention_heads": p["heads"],
         "num_key_value_heads": p["kv"], "head_dim": p["hd"], "hidden_act": "silu",
         "max_position_embeddings": p["maxpos"], "rms_norm_eps": p["eps"],
         "rope_theta": p["rope_theta"], "rope_scaling": None, "tie_word_embeddings": p["tied"],
         "attention_bias": p["bias"], "attention_dropout": 0.0, "initializer_range": 0.02,
         "use_cache": True, "torch_dtype": "bfloat16", "bos_token_id": p["bos"],
         "eos_token_id": p["eos"],
         "fidelis_init": {"preset": name, "seed": seed,
                          "init": "fidelis irwin-hall-4 v1 (docs/MODELS.md)"}}
    if p["model_type"] == "llama":
        c.update(mlp_bias=False, pretraining_tp=1)
    elif p["model_type"] == "mistral":
        c.update(sliding_window=p["window"])
    else:
        c.update(use_sliding_window=False, sliding_window=None, max_window_layers=p["layers"])
    if p.get("experts"):  # Qwen3MoeConfig: every layer routed (step 1, no MLP-only layer)
        c.update(num_experts=p["experts"], num_experts_per_tok=p["topk"],
                 moe_intermediate_size=p["moe_inter"], norm_topk_prob=True,
                 decoder_sparse_step=1, mlp_only_layers=[], router_aux_loss_coef=0.001,
                 output_router_logits=False)
    return c


def same(a, b):
    """Equal, and of the same JSON types all the way down (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check_config(name, cfg, want):
    for k in sorted(set(cfg) | set(want)):
        check(k in cfg and k in want and same(cfg[k], want[k]),
              "%s: config %s = %r, expected %r" % (name, k, cfg.get(k, "(absent)"), want.get(k, "(absent)")))


def check_preset(w, name, p):
    a, b, c = (os.path.join(w, "%s-%s" % (name, s)) for s in ("s1", "s1again", "s2"))
    for d, seed in ((a, "1"), (b, "1"), (c, "2")):
        rc, out, err = run("model", "init", "--preset", name, "--seed", seed, d)
        check(rc == 0 and "wrote" in out, "%s: init --seed %s: exit %d %s" % (name, seed, rc, err))
    ta, tb, tc = tree(a), tree(b), tree(c)
    check(sorted(ta) == ["chat_template.jinja", "config.json", "generation_config.json",
                         "model.safetensors", "panel.jsonl", "tokenizer.json",
                         "tokenizer_config.json"], "%s: files %s" % (name, sorted(ta)))
    check_tokenizer(name, ta)
    check(ta == tb, "%s: two inits with the same seed differ" % name)
    check(ta["model.safetensors"] != tc["model.safetensors"], "%s: seeds 1 and 2 give the same weights" % name)
    check(ta["panel.jsonl"] == tc["panel.jsonl"], "%s: the panel depends on the seed" % name)

    # config.json: transformers' keys and json.dumps(indent=2, sort_keys=True) form
    cfg = json.loads(ta["config.json"])
    check(ta["config.json"].decode() == json.dumps(cfg, indent=2, sort_keys=True) + "\n",
          "%s: config.json is not in transformers' sorted, indented form" % name)
    check_config(name, cfg, expected_dense_config(name, p, 1))
    cfg2 = json.loads(tc["config.json"])
    cfg2["fidelis_init"]["seed"] = 1
    check(cfg2 == cfg, "%s: configs of two seeds differ beyond the seed" % name)
    gen = json.loads(ta["generation_config.json"])
    check(gen.get("bos_token_id") == p["bos"] and gen.get("eos_token_id") == p["eos"],
          "%s: generation_config %r" % (name, gen))

    # model.safetensors: HF names, shapes, BF16, contiguous, padded header, format pt
    n, header, data = read_safetensors(os.path.join(a, "model.safetensors"))
    check((8 + n) % 8 == 0, "%s: header not padded to 8 bytes" % name)
    check(header.get("__metadata__") == {"format": "pt"}, "%s: metadata %r" % (name, header.get("__metadata__")))
    exp = expected_tensors(p)
    got = [k for k in sorted(header, key=lambda k: header[k]["data_offsets"][0] if k != "__metadata__" else -1)
           if k != "__metadata__"]
    check(got == [t[0] for t in exp], "%s: tensor names/order %r" % (name, got))
    params = sum(int(np.prod(t[1])) for t in exp)
    check(params == p["params"] and len(exp) == p.get("tensors", len(exp)) and help_params().get(name) == params,
          "%s: %d parameters in %d tensors, --help says %r" % (name, params, len(exp), help_params().get(name)))
    off = 0
    for tname, shape, kind in exp:
        e = header.get(tname)
        if e is None:
            continue
        ok = check(e["dtype"] == "BF16" and tuple(e["shape"]) == shape,
                   "%s: %s is %s %r, expected BF16 %r" % (name, tname, e["dtype"], e["shape"], shape))
        b0, b1 = e["data_offsets"]
        check(b0 == off and b1 - b0 == 2 * int(np.prod(shape)), "%s: %s offsets %r" % (name, tname, e["data_offsets"]))
        off = b1
        if not ok or b1 - b0 != 2 * int(np.prod(shape)):
            continue  # the values of a tensor of another shape are not comparable
        bits = np.frombuffer(data[b0:b1], dtype="<u2").reshape(shape)
        ref = generate(p, 1, tname, shape, kind)
        check(np.array_equal(bits, ref), "%s: %s differs from the documented generator (%d of %d values)"
              % (name, tname, int((bits != ref).sum()), bits.size))
        v = bf16_to_f32(bits).astype(np.float64)
        check(np.isfinite(v).all(), "%s: %s has a non-finite value" % (name, tname))
        if kind in ("embed", "proj", "head", "bias") and v.size >= 2048:
            sd = {"embed": 1.0, "proj": 1 / math.sqrt(shape[-1]), "head": 3 / math.sqrt(p["hidden"]),
                  "bias": 0.1}[kind]
            check(abs(v.std() / sd - 1) < 0.1 and abs(v.mean()) < 0.1 * sd,
                  "%s: %s sd %.4f mean %.4f, expected sd %.4f" % (name, tname, v.std(), v.mean(), sd))
            check(np.abs(v).max() <= 3.47 * sd * 1.01, "%s: %s beyond the Irwin-Hall bound" % (name, tname))
        if kind == "norm":
            check(abs(v.mean() - 1) < 0.05 and 0.01 < v.std() < 0.1,
                  "%s: %s mean %.4f sd %.4f, expected 1 + N(0, 0.05^2)" % (name, tname, v.mean(), v.std()))
    check(off == len(data), "%s: %d trailing data bytes" % (name, len(data) - off))

    # logits of the embedding rows through the head have a real spread (non-degenerate)
    emb = bf16_to_f32(generate(p, 1, "model.embed_tokens.weight", (p["vocab"], p["hidden"]), "embed"))
    head = emb if p["tied"] else bf16_to_f32(generate(p, 1, "lm_head.weight", (p["vocab"], p["hidden"]), "head"))
    gain = 3 / math.sqrt(p["hidden"]) if p["tied"] else 1.0
    hs = emb[:16] / np.sqrt((emb[:16] ** 2).mean(axis=1, keepdims=True)) * gain
    logits = hs @ head.T
    check(1.5 < logits.std() < 6, "%s: logit sd %.2f, expected about 3" % (name, logits.std()))

    # the panel: pack's checks, and bos + the ASCII bytes of the documented texts
    ptxt = ta["panel.jsonl"].decode()
    tp = subprocess.run([TOOL, "panel", os.path.join(a, "panel.jsonl")], capture_output=True, text=True)
    check(tp.returncode == 0 and tp.stdout.strip() == "records 4 scored_positions 252",
          "%s: fdl_ds_panel_check: %s %s" % (name, tp.stdout, tp.stderr))
    lines = [json.loads(l) for l in ptxt.splitlines()]
    check([l["domain"] for l in lines] == list(TEXTS), "%s: panel domains" % name)
    for l in lines:
        toks = l["tokens"]
        check(len(toks) == 64 and toks[0] == 256 and max(toks) < p["vocab"],
              "%s: panel %d tokens" % (name, l["index"]))
        check(bytes(toks[1:]).decode() == TEXTS[l["domain"]][:63], "%s: panel %s text %r" % (name, l["domain"], bytes(toks[1:])))


# ---- Qwen3.5 (docs/QWEN35.md, docs/MODELS.md) --------------------------------------------------

LIN, FULL = "linear_attention", "full_attention"
LN2 = 0.693147180559945309417
Q35 = {
    "qwen3.5-tiny-random": dict(arch="Qwen3_5ForConditionalGeneration", vocab=272, hidden=64,
                                inter=128, layers=4, heads=4, kv=2, hd=16, nk=2, nv=4, dk=16,
                                dv=16, K=4, tied=False, vision=True, maxpos=4096, bos=256,
                                eos=257, types=[LIN, LIN, LIN, FULL], params=206024),
    # Qwen3.5 MoE: every layer's MLP routed, the experts fused (gate_up_proj, down_proj, as the
    # releases store them), a shared expert with a sigmoid gate; no intermediate_size.
    "qwen3.5-moe-tiny-random": dict(arch="Qwen3_5MoeForConditionalGeneration",
                                    model_type="qwen3_5_moe", vocab=272, hidden=64, inter=None,
                                    layers=4, heads=4, kv=2, hd=16, nk=2, nv=4, dk=16, dv=16, K=4,
                                    tied=False, vision=True, maxpos=4096, bos=256, eos=257,
                                    types=[LIN, LIN, LIN, FULL], experts=8, topk=2, moe_inter=16,
                                    shared=64, params=257480),
    "qwen3.5-4b": dict(arch="Qwen3_5ForCausalLM", vocab=248320, hidden=2560, inter=9216,
                       layers=32, heads=16, kv=4, hd=256, nk=16, nv=32, dk=128, dv=128, K=4,
                       tied=True, vision=False, maxpos=262144, bos=248044, eos=248046,
                       types=[FULL if (i + 1) % 4 == 0 else LIN for i in range(32)],
                       params=4205751296, tensors=426),
    # Qwen3.5-35B-A3B's shapes, 4 of its 40 layers, no vision wrapper (the text config at the
    # top level). Worked out by hand (h 2048, V 248320): embed and untied head 2 x 248320 x
    # 2048 = 1017118720, final norm 2048. A DeltaNet layer: in_proj_qkv (2 x 16 x 128 + 32 x
    # 128 = 8192) x 2048 = 16777216, in_proj_z 4096 x 2048 = 8388608, in_proj_b and in_proj_a
    # 2 x 32 x 2048 = 131072, conv1d 8192 x 4 = 32768, dt_bias + A_log + norm 32 + 32 + 128,
    # out_proj 2048 x 4096 = 8388608: 33718464. The gated-attention layer: q_proj (2 x 16 x
    # 256) x 2048 = 16777216, k_proj and v_proj 2 x 512 x 2048 = 2097152, o_proj 2048 x 4096 =
    # 8388608, q/k norms 512: 27263488. Each layer's MoE: router 256 x 2048 = 524288,
    # gate_up_proj 256 x 1024 x 2048 = 536870912, down_proj 256 x 2048 x 512 = 268435456, the
    # shared expert 3 x 512 x 2048 = 3145728 and its gate 2048: 808978432; its two norms 4096.
    # 3 x (33718464 + 808978432 + 4096) + (27263488 + 808978432 + 4096) + 1017118720 + 2048 =
    # 4381469760. Tensors: 3 x (2 + 9 + 7) + (2 + 6 + 7) + 3 = 72.
    "qwen3.5-35b-a3b-4l": dict(arch="Qwen3_5MoeForCausalLM", vocab=248320, hidden=2048,
                               inter=None, layers=4, heads=16, kv=2, hd=256, nk=16, nv=32,
                               dk=128, dv=128, K=4, tied=False, vision=False, maxpos=262144,
                               bos=248044, eos=248046, types=[LIN, LIN, LIN, FULL], experts=256,
                               topk=8, moe_inter=512, shared=512, params=4381469760, tensors=72),
}


def expected_q35_config(name, p, seed):
    text = {"model_type": "qwen3_5_text", "vocab_size": p["vocab"], "hidden_size": p["hidden"],
            "intermediate_size": p["inter"], "num_hidden_layers": p["layers"],
            "num_attention_heads": p["heads"], "num_key_value_heads": p["kv"], "head_dim": p["hd"],
            "hidden_act": "silu", "max_position_embeddings": p["maxpos"], "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0,
                                "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10],
                                "mrope_interleaved": True},
            "tie_word_embeddings": p["tied"], "attention_bias": False, "attention_dropout": 0.0,
            "initializer_range": 0.02, "use_cache": True, "layer_types": p["types"],
            "full_attention_interval": 4, "linear_conv_kernel_dim": p["K"],
            "linear_key_head_dim": p["dk"], "linear_value_head_dim": p["dv"],
            "linear_num_key_heads": p["nk"], "linear_num_value_heads": p["nv"],
            "torch_dtype": "bfloat16", "bos_token_id": p["bos"], "eos_token_id": p["eos"]}
    if p.get("experts"):  # Qwen3_5MoeTextConfig
        del text["intermediate_size"]
        text.update(model_type="qwen3_5_moe_text", num_experts=p["experts"],
                    num_experts_per_tok=p["topk"], moe_intermediate_size=p["moe_inter"],
                    shared_expert_intermediate_size=p["shared"], router_aux_loss_coef=0.001,
                    output_router_logits=False)
    init = {"preset": name, "seed": seed, "init": "fidelis irwin-hall-4 v1 (docs/MODELS.md)"}
    if not p["vision"]:
        return dict(text, architectures=[p["arch"]], fidelis_init=init)
    # the vision config's model_type is the outer one, as the releases write it
    vision = {"model_type": p.get("model_type", "qwen3_5"), "depth": 0, "hidden_size": 32, "intermediate_size": 64,
              "hidden_act": "gelu_pytorch_tanh", "num_heads": 2, "in_channels": 3, "patch_size": 4,
              "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": p["hidden"],
              "num_position_embeddings": 16, "initializer_range": 0.02,
              "deepstack_visual_indexes": []}
    return {"architectures": [p["arch"]], "model_type": p.get("model_type", "qwen3_5"), "text_config": text,
            "vision_config": vision, "tie_word_embeddings": p["tied"], "torch_dtype": "bfloat16",
            "fidelis_init": init}


def expected_q35_tensors(p):
    """[(name, shape, kind, dtype)] from docs/QWEN35.md's tables, in transformers' module order,
    after the vision stub (docs/MODELS.md)."""
    P = "model.language_model." if p["vision"] else "model."
    h, hd, V = p["hidden"], p["hd"], p["vocab"]
    nk, nv, dk, dv, K = p["nk"], p["nv"], p["dk"], p["dv"], p["K"]
    conv = 2 * nk * dk + nv * dv
    t = []
    if p["vision"]:
        t += [("model.visual.patch_embed.proj.weight", (32, 3, 2, 4, 4), "vision", "BF16"),
              ("model.visual.patch_embed.proj.bias", (32,), "vision", "BF16"),
              ("model.visual.pos_embed.weight", (16, 32), "vision", "BF16")]
    t.append((P + "embed_tokens.weight", (V, h), "embed", "BF16"))
    for i, typ in enumerate(p["types"]):
        a = P + "layers.%d." % i
        t.append((a + "input_layernorm.weight", (h,), "znorm", "BF16"))
        if typ == FULL:
            q, kv = p["heads"] * hd, p["kv"] * hd
            t += [(a + "self_attn.q_proj.weight", (2 * q, h), "proj", "BF16"),
                  (a + "self_attn.k_proj.weight", (kv, h), "proj", "BF16"),
                  (a + "self_attn.v_proj.weight", (kv, h), "proj", "BF16"),
                  (a + "self_attn.o_proj.weight", (h, q), "proj", "BF16"),
                  (a + "self_attn.q_norm.weight", (hd,), "znorm", "BF16"),
                  (a + "self_attn.k_norm.weight", (hd,), "znorm", "BF16")]
        else:
            b = a + "linear_attn."
            t += [(b + "in_proj_qkv.weight", (conv, h), "proj", "BF16"),
                  (b + "in_proj_z.weight", (nv * dv, h), "proj", "BF16"),
                  (b + "in_proj_b.weight", (nv, h), "proj", "BF16"),
                  (b + "in_proj_a.weight", (nv, h), "proj", "BF16"),
                  (b + "conv1d.weight", (conv, 1, K), "conv", "BF16"),
                  (b + "dt_bias", (nv,), "dt_bias", "BF16"),
                  (b + "A_log", (nv,), "a_log", "F32"),
                  (b + "norm.weight", (dv,), "norm", "BF16"),
                  (b + "out_proj.weight", (h, nv * dv), "proj", "BF16")]
        t.append((a + "post_attention_layernorm.weight", (h,), "znorm", "BF16"))
        t += [(n, shape, "proj", "BF16") for n, shape in mlp_tensors(p, a + "mlp.")]
    t.append((P + "norm.weight", (h,), "zfinal", "BF16"))
    if not p["tied"]:
        t.append(("lm_head.weight", (V, h), "head", "BF16"))
    return t


def generate_q35(p, seed, name, shape, kind):
    """docs/MODELS.md's Qwen3.5 distributions: the same Irwin-Hall draws; zero-centred norms
    without the + 1, the final one as gain * (1 + n) - 1; A_log = (3 j / (nv - 1)) ln 2."""
    n = int(np.prod(shape))
    if kind == "a_log":
        v = np.arange(n, dtype=np.float64) * 3.0 / float(max(n - 1, 1)) * LN2
        return v.astype(np.float32).view(np.uint32).reshape(shape)
    x = xoshiro_stream(seed ^ ((fnv1a(name) * 0x9E3779B97F4A7C15) & M64), n)
    lanes = sum(((x >> np.uint64(16 * k)) & np.uint64(0xFFFF)).astype(np.int64) for k in range(4))
    z = (lanes - 131070).astype(np.float64)
    sd = {"embed": 1.0, "proj": 1.0 / math.sqrt(shape[-1]), "conv": 1.0 / math.sqrt(shape[-1]),
          "head": 3.0 / math.sqrt(p["hidden"]), "dt_bias": 0.1, "vision": 0.02}.get(kind, 0.05)
    v = z * (math.sqrt(3.0 / 4294967295.0) * sd)
    if kind in ("norm", "dt_bias", "zfinal"):
        v = v + 1.0
    if kind == "zfinal":
        v = v * (3.0 / math.sqrt(p["hidden"]) if p["tied"] else 1.0)
        v = v - 1.0
    return bf16_bits(v.astype(np.float32)).reshape(shape)


def help_params():
    rc, out, _ = run("model", "init", "--help")
    lines = out.splitlines()
    got = {}
    for i, l in enumerate(lines[:-1]):
        w = l.split()
        nxt = lines[i + 1].split()
        if w and len(nxt) == 2 and nxt[1] == "parameters" and nxt[0].isdigit():
            got[w[0]] = int(nxt[0])
    return got


def check_q35_tiny(w, name):
    p = Q35[name]
    a, b, c = (os.path.join(w, "%s-%s" % (name, s)) for s in ("s1", "s1again", "s2"))
    for d, seed in ((a, "1"), (b, "1"), (c, "2")):
        rc, out, err = run("model", "init", "--preset", name, "--seed", seed, d)
        check(rc == 0 and "wrote" in out, "%s: init --seed %s: exit %d %s" % (name, seed, rc, err))
    ta, tb, tc = tree(a), tree(b), tree(c)
    check(sorted(ta) == ["chat_template.jinja", "config.json", "generation_config.json",
                         "model.safetensors", "panel.jsonl", "tokenizer.json",
                         "tokenizer_config.json"], "%s: files %s" % (name, sorted(ta)))
    check_tokenizer(name, ta)
    check(ta == tb, "%s: two inits with the same seed differ" % name)
    check(ta["model.safetensors"] != tc["model.safetensors"], "%s: seeds 1 and 2 give the same weights" % name)
    check(ta["panel.jsonl"] == tc["panel.jsonl"] == tree(os.path.join(w, "tiny-random-s1"))["panel.jsonl"],
          "%s: the panel is not the tiny presets' panel" % name)
    cfg = json.loads(ta["config.json"])
    check(ta["config.json"].decode() == json.dumps(cfg, indent=2, sort_keys=True) + "\n",
          "%s: config.json is not in transformers' sorted, indented form" % name)
    want = expected_q35_config(name, p, 1)
    check_config(name, cfg, want)
    tc = cfg["text_config"]
    check(type(tc["rms_norm_eps"]) is float and type(tc["vocab_size"]) is int
          and all(type(tc.get(k)) is int for k in ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                                   "shared_expert_intermediate_size") if k in want["text_config"])
          and type(tc.get("router_aux_loss_coef", 0.0)) is float, "%s: config number types" % name)
    gen = json.loads(ta["generation_config.json"])
    check(gen.get("bos_token_id") == 256 and gen.get("eos_token_id") == 257, "%s: generation_config %r" % (name, gen))

    n, header, data = read_safetensors(os.path.join(a, "model.safetensors"))
    check((8 + n) % 8 == 0 and header.get("__metadata__") == {"format": "pt"}, "%s: header" % name)
    exp = expected_q35_tensors(p)
    got = [k for k in sorted(header, key=lambda k: header[k]["data_offsets"][0] if k != "__metadata__" else -1)
           if k != "__metadata__"]
    check(got == [t[0] for t in exp], "%s: tensor names/order %r" % (name, got))
    params = sum(int(np.prod(t[1])) for t in exp)
    check(params == p["params"] and help_params().get(name) == params,
          "%s: %d parameters, --help says %r" % (name, params, help_params().get(name)))
    off, values = 0, {}
    for tname, shape, kind, dt in exp:
        e = header.get(tname)
        if e is None:
            continue
        size = 4 if dt == "F32" else 2
        ok = check(e["dtype"] == dt and tuple(e["shape"]) == shape,
                   "%s: %s is %s %r, expected %s %r" % (name, tname, e["dtype"], e["shape"], dt, shape))
        b0, b1 = e["data_offsets"]
        check(b0 == off and b1 - b0 == size * int(np.prod(shape)), "%s: %s offsets %r" % (name, tname, e["data_offsets"]))
        off = b1
        if not ok or b1 - b0 != size * int(np.prod(shape)):
            continue  # the values of a tensor of another shape are not comparable
        bits = np.frombuffer(data[b0:b1], dtype="<u4" if size == 4 else "<u2").reshape(shape)
        ref = generate_q35(p, 1, tname, shape, kind)
        check(np.array_equal(bits, ref), "%s: %s differs from the documented generator (%d of %d values)"
              % (name, tname, int((bits != ref).sum()), bits.size))
        v = (bits.view(np.float32) if size == 4 else bf16_to_f32(bits)).astype(np.float64)
        values[tname] = v
        check(np.isfinite(v).all(), "%s: %s has a non-finite value" % (name, tname))
        if kind in ("znorm", "zfinal"):  # the untied final norm has gain 1: w around 0 too
            check(abs(v.mean()) < 0.03 and 0.01 < v.std() < 0.1, "%s: %s mean %.4f sd %.4f, expected N(0, 0.05^2)"
                  % (name, tname, v.mean(), v.std()))
        if kind == "norm":
            check(abs(v.mean() - 1) < 0.05 and 0.01 < v.std() < 0.1, "%s: %s not around 1" % (name, tname))
        if kind == "dt_bias":
            check(np.all(np.abs(v - 1) < 0.35), "%s: %s not around 1: %r" % (name, tname, v))
        if kind == "a_log":
            A = np.exp(v)
            check(abs(A[0] - 1) < 1e-6 and abs(A[-1] - 8) < 1e-5 and np.all(np.diff(A) > 0),
                  "%s: exp(%s) = %r, expected spread over [1, 8]" % (name, tname, A))
        if kind in ("conv", "proj") and v.size >= 2048:
            sd = 1 / math.sqrt(shape[-1])
            check(abs(v.std() / sd - 1) < 0.1 and abs(v.mean()) < 0.1 * sd,
                  "%s: %s sd %.4f, expected %.4f" % (name, tname, v.std(), sd))
    check(off == len(data), "%s: %d trailing data bytes" % (name, len(data) - off))
    # the logits spread (about 3) through the zero-centred final norm and the untied head
    P = "model.language_model."
    emb = values[P + "embed_tokens.weight"].reshape(p["vocab"], p["hidden"])[:16]
    hs = emb / np.sqrt((emb ** 2).mean(axis=1, keepdims=True)) * (1 + values[P + "norm.weight"])
    logits = hs @ values["lm_head.weight"].reshape(p["vocab"], p["hidden"]).T
    check(1.5 < logits.std() < 6, "%s: logit sd %.2f, expected about 3" % (name, logits.std()))


def check_no_weights(w, name, p, q35):
    """A big preset: config and counts only, through --no-weights (the weights, 8.4-8.7 GB, are
    never written here). The parameter and tensor counts are the twin's, from the shapes, and
    written down in the preset table as worked out by hand."""
    d = os.path.join(w, "nw-" + name)
    rc, out, err = run("model", "init", "--preset", name, "--seed", "5", "--no-weights", "--json", d)
    j = json.loads(out) if rc == 0 else {}
    exp = expected_q35_tensors(p) if q35 else expected_tensors(p)
    params = sum(int(np.prod(t[1])) for t in exp)
    check(params == p["params"] and len(exp) == p["tensors"],
          "%s: the twin's shapes give %d parameters in %d tensors" % (name, params, len(exp)))
    check(j.get("parameters") == params and j.get("tensors") == len(exp) and j.get("safetensors_bytes") == 0,
          "%s: --no-weights --json %r %s" % (name, j, err))
    check(help_params().get(name) == params, "%s: --help parameters %r" % (name, help_params().get(name)))
    if rc != 0:
        return None
    check(sorted(os.listdir(d)) == ["config.json", "generation_config.json", "panel.jsonl"],
          "%s: --no-weights wrote %r" % (name, sorted(os.listdir(d))))
    raw = open(os.path.join(d, "config.json")).read()
    cfg = json.loads(raw)
    check(raw == json.dumps(cfg, indent=2, sort_keys=True) + "\n",
          "%s: config.json is not in transformers' sorted, indented form" % name)
    if q35:
        check_config(name, cfg, expected_q35_config(name, p, 5))
    else:
        check_config(name, cfg, expected_dense_config(name, p, 5))
    gen = json.load(open(os.path.join(d, "generation_config.json")))
    check(gen.get("bos_token_id") == p["bos"] and gen.get("eos_token_id") == p["eos"],
          "%s: generation_config %r" % (name, gen))
    check(open(os.path.join(d, "panel.jsonl"), "rb").read() == tree(os.path.join(w, "tiny-random-s1"))["panel.jsonl"],
          "%s: the panel is not the tiny presets' panel" % name)
    return cfg


def check_q35_4b(w):
    name = "qwen3.5-4b"
    cfg = check_no_weights(w, name, Q35[name], True)
    if cfg is None:
        return
    check(cfg["layer_types"].count(FULL) == 8 and cfg["layer_types"][3] == FULL and cfg["layer_types"][0] == LIN,
          "%s: layer_types" % name)
    name = "qwen3.5-35b-a3b-4l"  # Qwen3_5MoeForCausalLM: the MoE text config at the top level
    cfg = check_no_weights(w, name, Q35[name], True)
    if cfg is not None:
        check(cfg["layer_types"] == [LIN, LIN, LIN, FULL] and "text_config" not in cfg
              and "intermediate_size" not in cfg and cfg["model_type"] == "qwen3_5_moe_text",
              "%s: a top-level MoE text config with 3 DeltaNet layers and 1 attention layer" % name)
    rc, out, err = run("model", "init", "--preset", "tiny-random", "--no-weights", os.path.join(w, "nw"))
    check(rc == 0 and "no model.safetensors" in out and not os.path.exists(os.path.join(w, "nw", "model.safetensors")),
          "--no-weights text output: %s %s" % (out, err))


def check_engine(w, name, d):
    """The engine loads the tiny checkpoint (MoE, Mistral) and runs a prefill: exit 0, finite
    logits of [tokens, vocab], not all equal."""
    ids = [256, 83, 111, 119]
    out = os.path.join(w, "%s-logits.npy" % name)
    r = subprocess.run([ENGINE, d, "--ids", ",".join(map(str, ids)), "--path", "prefill", "--threads", "1",
                        "--logits", out], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "%s: tool_engine prefill: exit %d %s" % (name, r.returncode, r.stderr.strip()))
    if r.returncode != 0:
        return
    x = np.load(out)
    check(x.shape == (len(ids), 272) and np.isfinite(x).all() and x.std() > 0.1,
          "%s: engine logits %r, finite %s, sd %.3g" % (name, x.shape, np.isfinite(x).all(), x.std()))


def main():
    if not CLI or not os.access(CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    for tool in (TOOL, ENGINE):
        if not os.access(tool, os.X_OK):
            print("skip: %s not built" % tool)
            return 77
    w = tempfile.mkdtemp(prefix="fdl-model-")
    try:
        for name, p in PRESETS.items():
            check_preset(w, name, p)
        for name in ("qwen3.5-tiny-random", "qwen3.5-moe-tiny-random"):
            check_q35_tiny(w, name)
        check_q35_4b(w)
        for name, p in DENSE_BIG.items():
            check_no_weights(w, name, p, False)
        for name in ("qwen3-moe-tiny-random", "qwen3.5-moe-tiny-random", "mistral-tiny-random"):
            check_engine(w, name, os.path.join(w, name + "-s1"))
        # Mistral's tensors are Llama's (names, shapes, kinds): the same seed, the same bits
        check(tree(os.path.join(w, "mistral-tiny-random-s1"))["model.safetensors"]
              == tree(os.path.join(w, "llama-tiny-random-s1"))["model.safetensors"],
              "mistral-tiny-random: weights differ from llama-tiny-random's for the same seed")
        # every preset lists in --help, with its size
        rc, out, _ = run("model", "init", "--help")
        names = list(PRESETS) + list(Q35) + list(DENSE_BIG) + ["llama-100m", "qwen3-0.6b"]
        check(rc == 0 and all(n in out for n in names) and set(help_params()) == set(names),
              "model init --help lists the presets: %r" % sorted(help_params()))
        # --json
        rc, out, err = run("model", "init", "--preset", "tiny-random", "--json", os.path.join(w, "j"))
        j = json.loads(out) if rc == 0 else {}
        check(j.get("parameters") == 91520 and j.get("tensors") == 24 and j.get("seed") == 0,
              "--json: %r %s" % (j, err))
        # refusals: OUT exists (untouched), unknown preset, usage; nothing left behind
        target = os.path.join(w, "tiny-random-s1")
        before = tree(target)
        rc, _, err = run("model", "init", "--preset", "tiny-random", target)
        check(rc == 3 and "exists" in err and tree(target) == before, "existing OUT: exit %d %s" % (rc, err))
        os.mkdir(os.path.join(w, "empty"))
        rc, _, err = run("model", "init", "--preset", "tiny-random", os.path.join(w, "empty"))
        check(rc == 3 and os.listdir(os.path.join(w, "empty")) == [], "empty existing OUT: exit %d" % rc)
        for argv, word in ((["--preset", "gpt5", os.path.join(w, "x1")], "gpt5"),
                           ([os.path.join(w, "x2")], "--preset"),
                           (["--preset", "tiny-random"], "OUT"),
                           (["--preset", "tiny-random", "--seed", "-1", os.path.join(w, "x3")], "--seed"),
                           (["--preset", "tiny-random", os.path.join(w, "x4"), "extra"], "extra")):
            rc, _, err = run("model", "init", *argv)
            check(rc == 4 and word in err, "model init %r: exit %d, stderr %r" % (argv, rc, err))
        rc, _, err = run("model", "nope")
        check(rc == 4 and "'nope'" in err, "model nope: exit %d %r" % (rc, err))
        left = [f for f in os.listdir(w) if f.startswith(".fidelis-staging") or f.startswith("x")]
        check(not left, "refusals left %r behind" % left)
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

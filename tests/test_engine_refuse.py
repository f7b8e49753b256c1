#!/usr/bin/env python3
"""Model directories the engine must refuse, each with a message that names the cause: a
missing shard, a dtype or shape mismatch against config.json, a missing or unexpected tensor,
an unknown architecture or activation, a RoPE scaling the engine does not run or malformed
parameters of one it does, a sliding window outside Qwen2/Qwen3's rules, a mixture-of-experts
field, a GPTQ quantization_config, a NaN or infinite weight (also deep inside a tensor of
several of the loader's read blocks, by its element index), a symlinked shard, an index that
points outside the model directory, a tensor in two shards, a shard linked from outside
the model directory (one inside is accepted); and at run time a token id outside the vocabulary or a context
past max_position_embeddings. A valid twin of each is accepted,
so the refusal is the mutation's doing and not the base model's.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import engine_models as em  # noqa: E402

BUILD = os.environ.get("FDL_BUILD", "build")
TOOL = os.path.join(BUILD, "tests", "tool_engine")
TMP = tempfile.mkdtemp(prefix="fdl-engine-refuse-")
FAILS = []
Q = "model.layers.0.self_attn.q_proj.weight"


def run(d, ids="1,2,3", path="prefill"):
    r = subprocess.run([TOOL, d, "--ids", ids, "--path", path], capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def build(name, cfg_kw=None, cfg_edit=None, dtype="BF16", shards=1, overrides=None,
          after=None):
    d = os.path.join(TMP, name)
    c = em.make_config(dtype=dtype, **(cfg_kw or {}))
    if cfg_edit:
        cfg_edit(c)
    w = em.make_weights(em.make_config(dtype=dtype, **(cfg_kw or {})), 5)
    em.write_model(d, c, w, dtype=dtype, shards=shards, overrides=overrides)
    if after:
        after(d)
    return d


def expect(name, needles, **kw):
    d = build(name, **kw)
    rc, msg = run(d)
    ok = rc == 1 and all(n in msg for n in needles)
    print("%-26s rc %d  %s" % (name, rc, msg))
    if not ok:
        FAILS.append(name)
        print("FAIL: %s: expected exit 1 with %r" % (name, needles))


def nan_q(dt="BF16"):
    a = em.make_weights(em.make_config(dtype=dt), 5)[Q].copy()
    a[3, 7] = np.nan
    return {Q: (dt, a.shape, em.encode(a, dt))}


# A 10 MiB float32 matrix: many of the loader's read blocks, so a bad element far inside it is
# found by the block pass with its index within the tensor, not within the block.
BIG = {"inter": 40960, "layers": 1}
GATE = "model.layers.0.mlp.gate_proj.weight"


def bad_big(dt, at, value):
    a = em.make_weights(em.make_config(dtype=dt, **BIG), 5)[GATE].copy()
    a.flat[at] = value
    return {GATE: (dt, a.shape, em.encode(a, dt))}


def set_key(k, v):
    def f(c):
        c[k] = v
    return f


def rewrite_index(fn):
    def f(d):
        p = os.path.join(d, "model.safetensors.index.json")
        with open(p) as fh:
            idx = json.load(fh)
        fn(d, idx)
        with open(p, "w") as fh:
            json.dump(idx, fh)
    return f


def point_first(target):
    def f(d, idx):
        name = sorted(idx["weight_map"])[0]
        idx["weight_map"][name] = target
    return f


def symlink_shard(d):
    """The shard moved out of the model directory, a link left in its place: refused (the one
    model-file rule, fdl_model_member). A link that stays inside the directory is accepted."""
    f = "model-00002-of-00002.safetensors"
    out = os.path.join(os.path.dirname(d), os.path.basename(d) + "-outside-blob")
    os.rename(os.path.join(d, f), out)
    os.symlink(out, os.path.join(d, f))


def symlink_inside(d):
    f = "model-00002-of-00002.safetensors"
    os.rename(os.path.join(d, f), os.path.join(d, "blob"))
    os.symlink("blob", os.path.join(d, f))


def dup_tensor(d):
    """Adds the first shard's first tensor to the second shard too."""
    def read(p):
        with open(p, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            h = json.loads(fh.read(n))
            return h, fh.read()
    p1, p2 = (os.path.join(d, "model-0000%d-of-00002.safetensors" % i) for i in (1, 2))
    h1, b1 = read(p1)
    h2, b2 = read(p2)
    name = next(k for k in h1 if k != "__metadata__")
    lo, hi = h1[name]["data_offsets"]
    ts = [(k, v["dtype"], v["shape"], b2[v["data_offsets"][0]:v["data_offsets"][1]])
          for k, v in sorted(h2.items(), key=lambda kv: kv[1]["data_offsets"][0])]
    ts.append((name, h1[name]["dtype"], h1[name]["shape"], b1[lo:hi]))
    em.write_safetensors(p2, ts)


def main():
    if not os.path.exists(TOOL):
        print("skipped: %s not built" % TOOL)
        return 77
    for name, kw in [("valid-single", {}), ("valid-sharded", {"shards": 2})]:
        rc, msg = run(build(name, **kw))
        print("%-26s rc %d  %s" % (name, rc, msg))
        if rc != 0:
            FAILS.append(name)
    expect("missing-shard", ["missing shard", "model-00002-of-00003.safetensors"], shards=3,
           after=lambda d: os.remove(os.path.join(d, "model-00002-of-00003.safetensors")))
    expect("no-weights", ["missing shard"],
           after=lambda d: os.remove(os.path.join(d, "model.safetensors")))
    expect("dtype-tensor", [Q, "dtype mismatch", "F16", "BF16"],
           overrides={Q: ("F16", (64, 64), np.zeros((64, 64), "<f2").tobytes())})
    expect("dtype-config", ["dtype mismatch", "torch_dtype", "float16"],
           cfg_edit=set_key("torch_dtype", "float16"))
    expect("shape", [Q, "shape mismatch", "[64, 32]", "[64, 64]"],
           overrides={Q: ("BF16", (64, 32), np.zeros((64, 32), "<u2").tobytes())})
    expect("shape-config-heads", ["self_attn.k_proj.weight", "shape mismatch", "[16, 64]"],
           cfg_edit=set_key("num_key_value_heads", 1))
    expect("missing-tensor", ["missing tensor", "model.layers.1.mlp.up_proj.weight"],
           overrides={"model.layers.1.mlp.up_proj.weight": None})
    expect("extra-tensor", ["unexpected tensor", "model.layers.0.mlp.experts.0.weight"],
           overrides={"model.layers.0.mlp.experts.0.weight":
                      ("BF16", (2, 2), b"\0" * 8)})
    expect("qwen2-missing-bias", ["missing tensor", "self_attn.q_proj.bias"],
           cfg_edit=set_key("architectures", ["Qwen2ForCausalLM"]))
    expect("arch", ["unsupported architecture", "GemmaForCausalLM"],
           cfg_edit=set_key("architectures", ["GemmaForCausalLM"]))
    expect("hidden-act", ["hidden_act", "gelu", "silu"], cfg_edit=set_key("hidden_act", "gelu"))
    # RoPE scaling: the types transformers defines that the engine does not run, and malformed
    # parameters of the ones it does (tests/test_engine_oracle.py runs those).
    expect("rope-scaling-longrope", ["rope_scaling.rope_type longrope is refused", "yarn and llama3 only"],
           cfg_edit=set_key("rope_scaling", {"rope_type": "longrope", "short_factor": [1.0],
                                             "long_factor": [1.0]}))
    expect("rope-scaling-no-type", ["rope_scaling has no rope_type"],
           cfg_edit=set_key("rope_scaling", {"factor": 2.0}))
    expect("rope-scaling-factor", ["rope_scaling.factor is 0.5", "at least 1"],
           cfg_edit=set_key("rope_scaling", {"type": "linear", "factor": 0.5}))
    expect("rope-scaling-key", ["rope_scaling.low_freq_factor", "not read for rope_type linear"],
           cfg_edit=set_key("rope_scaling", {"rope_type": "linear", "factor": 2.0,
                                             "low_freq_factor": 1.0}))
    expect("rope-scaling-llama3", ["rope_scaling.high_freq_factor is missing", "llama3"],
           cfg_edit=set_key("rope_scaling", {"rope_type": "llama3", "factor": 8.0,
                                             "low_freq_factor": 1.0,
                                             "original_max_position_embeddings": 64}))
    expect("rope-scaling-llama3-order", ["low_freq_factor < high_freq_factor"],
           cfg_edit=set_key("rope_scaling", {"rope_type": "llama3", "factor": 8.0,
                                             "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                                             "original_max_position_embeddings": 64}))
    expect("rope-scaling-dynamic-orig", ["original_max_position_embeddings 64 differs"],
           cfg_edit=set_key("rope_scaling", {"rope_type": "dynamic", "factor": 2.0,
                                             "original_max_position_embeddings": 64}))
    # Sliding windows run on Qwen2/Qwen3 (test_engine_oracle.py); what cannot be run as
    # transformers would is refused.
    expect("sliding-qwen2-no-window", ["missing field sliding_window"],
           cfg_kw={"arch": "Qwen2ForCausalLM"},
           cfg_edit=lambda c: (c.update(use_sliding_window=True), c.pop("sliding_window")))
    expect("sliding-llama", ["sliding_window is set on Llama"],
           cfg_edit=set_key("sliding_window", 4096))
    expect("layer-types-llama", ["sliding_attention layers", "Llama has no sliding window"],
           cfg_edit=set_key("layer_types", ["full_attention", "sliding_attention"]))
    expect("layer-types-no-window", ["sliding_attention layers", "use_sliding_window is not true"],
           cfg_kw={"arch": "Qwen2ForCausalLM"},
           cfg_edit=set_key("layer_types", ["full_attention", "sliding_attention"]))
    expect("layer-types-kind", ["layer_types[1] is chunked_attention"],
           cfg_kw={"arch": "Qwen2ForCausalLM"},
           cfg_edit=set_key("layer_types", ["full_attention", "chunked_attention"]))
    expect("layer-types-length", ["layer_types must be an array of num_hidden_layers (2)"],
           cfg_kw={"arch": "Qwen2ForCausalLM"},
           cfg_edit=set_key("layer_types", ["full_attention"]))
    expect("rope-parameters", ["rope_parameters.rope_type ntk is refused", "yarn and llama3 only"],
           cfg_edit=set_key("rope_parameters", {"rope_type": "ntk", "factor": 4.0}))
    expect("rope-both", ["both rope_scaling and rope_parameters"],
           cfg_edit=lambda c: c.update(rope_scaling={"rope_type": "linear", "factor": 2.0},
                                       rope_parameters={"rope_type": "default",
                                                        "rope_theta": 1e4}))
    expect("moe", ["num_experts", "mixture-of-experts"], cfg_edit=set_key("num_experts", 8))
    moe = {"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 32}
    expect("moe-shared", ["shared_expert_intermediate_size is set"],
           cfg_edit=lambda c: c.update(moe, shared_expert_intermediate_size=64))
    expect("moe-top-k", ["num_experts_per_tok 8 must be at most num_experts 4"],
           cfg_edit=lambda c: c.update(moe, num_experts_per_tok=8))
    expect("moe-only-layers", ["mlp_only_layers[0] is not a layer index below 2"],
           cfg_edit=lambda c: c.update(moe, mlp_only_layers=[5]))
    expect("bnb", ["quant_method bitsandbytes", "\"awq\" or \"compressed-tensors\""],
           cfg_edit=set_key("quantization_config", {"quant_method": "bitsandbytes",
                                                    "bits": 4}))
    expect("awq-gemv", ["quantization_config.version gemv", "GEMM"],
           cfg_edit=set_key("quantization_config", {"quant_method": "awq", "bits": 4,
                                                    "group_size": 32, "version": "gemv"}))
    ct = {"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"group_0": {"targets": ["Linear"],
                                        "weights": {"num_bits": 4, "type": "int",
                                                    "strategy": "group", "group_size": 32}}}}
    for label, edit, words in (
            ("format", {"format": "naive-quantized"},
             ["quantization_config.format naive-quantized", "pack-quantized or float-quantized"]),
            ("kv-cache", {"kv_cache_scheme": {"num_bits": 8, "type": "float"}},
             ["kv_cache_scheme is set"]),
            ("two-groups", {"config_groups": dict(ct["config_groups"],
                                                  group_1=ct["config_groups"]["group_0"])},
             ["exactly one group"]),
            ("w8a8", {"config_groups": {"group_0": dict(ct["config_groups"]["group_0"],
                                                        input_activations={"num_bits": 8})}},
             ["quantizes input activations", "weight-only"]),
            ("bits", {"config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                "num_bits": 2, "type": "int", "strategy": "group", "group_size": 32}}}},
             ["int 2-bit weights are not read"]),
            ("block", {"config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                "num_bits": 4, "type": "int", "strategy": "block", "group_size": 32}}}},
             ["strategy block is not read"])):
        expect("ct-" + label, words, cfg_edit=set_key("quantization_config", dict(ct, **edit)))
    expect("awq-no-zero", ["zero_point is false"],
           cfg_edit=set_key("quantization_config", {"quant_method": "awq", "bits": 4,
                                                    "group_size": 32, "zero_point": False}))
    expect("gptq-5bit", ["quantization_config.bits 5", "expected 2, 3, 4 or 8"],
           cfg_edit=set_key("quantization_config", {"quant_method": "gptq", "bits": 5,
                                                    "group_size": 32}))
    expect("gptq-format", ["checkpoint_format 'marlin'", "gptq_v2"],
           cfg_edit=set_key("quantization_config", {"quant_method": "gptq", "bits": 4,
                                                    "group_size": 32,
                                                    "checkpoint_format": "marlin"}))
    expect("gptq-dense", ["declares a quantized", "no matrix is stored quantized"],
           cfg_edit=set_key("quantization_config", {"quant_method": "gptq", "bits": 4,
                                                    "group_size": 32}))
    expect("nan-weight", [Q, "NaN", "finite"], overrides=nan_q())
    inf = em.make_weights(em.make_config(dtype="F32"), 5)["model.norm.weight"].copy()
    inf[5] = np.inf
    expect("inf-weight", ["model.norm.weight", "infinite"], dtype="F32",
           overrides={"model.norm.weight": ("F32", inf.shape, em.encode(inf, "F32"))})
    n = 40960 * 64
    for name, dt, at, value, word, shards in [
            ("nan-deep-f32", "F32", 1500001, np.nan, "NaN", 1),
            ("inf-last-f32", "F32", n - 1, -np.inf, "infinite", 1),
            ("nan-deep-bf16", "BF16", n // 2 + 3, np.nan, "NaN", 2)]:
        expect(name, ["tensor %s: element %d is %s (weights must be finite)" % (GATE, at, word)],
               dtype=dt, cfg_kw=BIG, shards=shards, overrides=bad_big(dt, at, value))
    expect("symlink-shard", ["outside the model directory", "model-00002-of-00002.safetensors"],
           shards=2, after=symlink_shard)
    rc, msg = run(build("symlink-inside", shards=2, after=symlink_inside))
    print("%-26s rc %d  %s" % ("symlink-inside", rc, msg))
    if rc != 0:
        FAILS.append("symlink-inside: a link inside the model directory must be accepted")
    for tag, target in [("dotdot", "../model-00001-of-00002.safetensors"),
                        ("absolute", "/tmp/model-00001-of-00002.safetensors"),
                        ("subdir", "sub/model-00001-of-00002.safetensors")]:
        expect("index-" + tag, ["directly inside the model directory", "weight_map["],
               shards=2, after=rewrite_index(point_first(target)))
    expect("index-wrong-shard", ["is in shard", "places it in"], shards=2,
           after=rewrite_index(point_first("model-00002-of-00002.safetensors")))
    expect("two-shards", ["in two shards"], shards=2, after=dup_tensor)
    expect("tied-head-differs", ["lm_head.weight differs"], cfg_edit=set_key("tie_word_embeddings",
                                                                             True))
    # Run-time arguments: a token id outside the vocabulary, a context past max_position_embeddings.
    for name, d, ids, path, needles in [
            ("token-id", os.path.join(TMP, "valid-single"), "1,97,2", "decode",
             ["token id 97 at position 1", "[0, 97)"]),
            ("too-long", build("short-max-pos", cfg_kw={"max_pos": 4}), "1,2,3,4,5", "prefill",
             ["5 positions", "max_position_embeddings 4"])]:
        rc, msg = run(d, ids, path)
        print("%-26s rc %d  %s" % (name, rc, msg))
        if rc != 1 or not all(n in msg for n in needles):
            FAILS.append(name)
            print("FAIL: %s: expected exit 1 with %r" % (name, needles))
    shutil.rmtree(TMP, ignore_errors=True)
    if FAILS:
        print("%d failure(s): %s" % (len(FAILS), ", ".join(FAILS)))
        return 1
    print("all refusals as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())

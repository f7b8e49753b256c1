#!/usr/bin/python3
"""Seeds for fuzz/fuzz_model_load.c: tiny models the loader accepts, in the harness's encoding
(selector byte, u16-length-prefixed blobs, then the run's bytes; see the comment at the top of
the harness). Valid seeds put the fuzzer past config.json and the shard walk into the tensor
binding and the forward pass, which random bytes would take it long to reach.

Usage: fuzz/make-model-seeds.py [OUT_DIR] [--check TOOL_ENGINE]
With --check, each seed is also written out as a directory and loaded by build/tests/tool_engine,
so a seed that no longer loads (the loader grew stricter) fails here instead of silently
fuzzing only the refusal path."""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import engine_models as em  # noqa: E402
import qwen35_models as q35  # noqa: E402

SINGLE, SHARDED = 0, 1


def read(path):
    with open(path, "rb") as f:
        return f.read()


def encode(d, layout, run=b"\x02\x00\x01\x02"):
    """The directory d (as written by a model writer) as one fuzz input."""
    def blob(name):
        b = read(os.path.join(d, name))
        if len(b) > 0xFFFF:
            raise ValueError("%s: %d bytes, over a blob's u16 length" % (name, len(b)))
        return struct.pack("<H", len(b)) + b

    out = bytes([layout]) + blob("config.json")
    if layout == SINGLE:
        out += blob("model.safetensors")
    else:
        out += blob("model.safetensors.index.json")
        out += blob("model-00001-of-00002.safetensors")
        out += blob("model-00002-of-00002.safetensors")
    out += run
    if len(out) > 65536:
        raise ValueError("seed of %d bytes is over fuzz/run's -max_len" % len(out))
    return out


def llama(d):
    c = em.make_config(vocab=16, hidden=8, layers=1, heads=2, kv_heads=1, inter=8, max_pos=8)
    em.write_model(d, c, em.make_weights(c, 1))
    return SINGLE


def llama_sharded_tied(d):
    c = em.make_config(vocab=16, hidden=8, layers=2, heads=2, kv_heads=2, inter=8, max_pos=8,
                       tied=True, attention_bias=True, dtype="F32")
    em.write_model(d, c, em.make_weights(c, 2), dtype="F32", shards=2)
    return SHARDED


def qwen2(d):
    c = em.make_config(arch="Qwen2ForCausalLM", vocab=16, hidden=8, layers=1, heads=2,
                       kv_heads=1, inter=8, max_pos=8, dtype="F16")
    em.write_model(d, c, em.make_weights(c, 3), dtype="F16")
    return SINGLE


def qwen3(d):
    c = em.make_config(arch="Qwen3ForCausalLM", vocab=16, hidden=8, layers=2, heads=2,
                       kv_heads=1, head_dim=4, inter=8, max_pos=8)
    em.write_model(d, c, em.make_weights(c, 4), shards=2)
    return SHARDED


def pack_nibbles(a):
    """uint [r, 8c] -> int32 [r, c], nibble k of word c from column 8c + k (low nibble first)."""
    a = a.astype(em.np.uint32).reshape(a.shape[0], -1, 8)
    w = sum(a[:, :, k] << (4 * k) for k in range(8))
    return em.np.ascontiguousarray(w.astype(em.np.uint32).view(em.np.int32))


def gptq(w, group, rng):
    """One [out, in] matrix as GPTQ-v1 int4 tensors (the stored zero is zero - 1)."""
    out_, in_ = w.shape
    groups = in_ // group
    q = rng.integers(0, 16, (out_, in_))
    zero = rng.integers(1, 16, (groups, out_))
    scales = (0.05 * (1 + rng.random((groups, out_)))).astype("<f2")
    g_idx = (em.np.arange(in_) // group).astype("<i4")
    qw = em.np.ascontiguousarray(pack_nibbles(q).T)  # [in / 8, out]
    qz = pack_nibbles(zero - 1)  # [groups, out / 8]
    return {".qweight": ("I32", qw.shape, qw.astype("<i4").tobytes()),
            ".qzeros": ("I32", qz.shape, qz.astype("<i4").tobytes()),
            ".scales": ("F16", scales.shape, scales.tobytes()),
            ".g_idx": ("I32", g_idx.shape, g_idx.tobytes())}


def llama_gptq(d):
    """Every projection stored as GPTQ int4 (group 8), the embedding, norms and head dense."""
    c = em.make_config(vocab=16, hidden=8, layers=1, heads=2, kv_heads=2, inter=8, max_pos=8,
                       quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 8})
    w = em.make_weights(c, 7)
    rng = em.np.random.default_rng(7)
    ov = {}
    for name in [n for n in w if n.endswith("_proj.weight")]:
        ov[name] = None
        for suffix, v in gptq(w[name], 8, rng).items():
            ov[name[:-len(".weight")] + suffix] = v
    em.write_model(d, c, w, overrides=ov)
    return SINGLE


def q35_config(arch):
    return q35.make_config(arch=arch, vocab=16, hidden=8, layer_types=[q35.LIN, q35.FULL],
                           heads=2, kv_heads=1, head_dim=4, inter=8, prf=0.5, nk=1, nv=2, dk=4,
                           dv=4, conv_k=4, max_pos=8)


def qwen35(d):
    c = q35_config("Qwen3_5ForCausalLM")
    q35.write_model(d, c, q35.make_weights(c, 5), small_f32=True)
    return SINGLE


def qwen35_cg(d):
    """ForConditionalGeneration with one vision tensor: the test models' full tower is too big
    for a seed, and the loader only has to see that model.visual.* is there and skip it."""
    c = q35_config("Qwen3_5ForConditionalGeneration")
    w = q35.make_weights(c, 6, vision=False)
    w["model.visual.blocks.0.norm1.weight"] = (1.0 + 0.1 * em.np.arange(8)).astype(em.np.float32)
    q35.write_model(d, c, w, small_f32=True, shards=2)
    return SHARDED


def llama_rope_yarn(d):
    c = em.make_config(vocab=16, hidden=8, layers=1, heads=2, kv_heads=1, inter=8, max_pos=8,
                       rope_scaling={"rope_type": "yarn", "factor": 2.0,
                                     "original_max_position_embeddings": 4})
    em.write_model(d, c, em.make_weights(c, 8))
    return SINGLE


def qwen2_window(d):
    c = em.make_config(arch="Qwen2ForCausalLM", vocab=16, hidden=8, layers=2, heads=2,
                       kv_heads=1, inter=8, max_pos=8, use_sliding_window=True,
                       sliding_window=2, max_window_layers=1)
    em.write_model(d, c, em.make_weights(c, 9))
    return SINGLE


def qwen3_moe(d):
    c = em.make_config(arch="Qwen3MoeForCausalLM", vocab=16, hidden=8, layers=1, heads=2,
                       kv_heads=1, head_dim=4, inter=8, max_pos=8, num_experts=3,
                       num_experts_per_tok=2, moe_intermediate_size=8, norm_topk_prob=True)
    em.write_model(d, c, em.make_weights(c, 10))
    return SINGLE


def qwen35_moe_fused(d):
    """Qwen3.5 MoE with fused experts (views into gate_up_proj / down_proj) and a shared
    expert."""
    c = q35.make_config(arch="Qwen3_5MoeForCausalLM", vocab=16, hidden=8,
                        layer_types=[q35.LIN, q35.FULL], heads=2, kv_heads=1, head_dim=4,
                        prf=0.5, nk=1, nv=2, dk=4, dv=4, conv_k=4, max_pos=8, num_experts=3,
                        num_experts_per_tok=2, moe_intermediate_size=8,
                        shared_expert_intermediate_size=8)
    q35.write_model(d, c, q35.make_weights(c, 12, fused=True), small_f32=True)
    return SINGLE


def mistral(d):
    c = em.make_config(arch="MistralForCausalLM", vocab=16, hidden=8, layers=2, heads=2,
                       kv_heads=1, inter=8, max_pos=8, sliding_window=2)
    em.write_model(d, c, em.make_weights(c, 13))
    return SINGLE


def ct_fp8(d):
    """compressed-tensors FP8: every projection's weight as F8_E4M3 codes with a channel scale."""
    c = em.make_config(vocab=16, hidden=8, layers=1, heads=2, kv_heads=2, inter=8, max_pos=8,
                       quantization_config={
                           "quant_method": "compressed-tensors", "format": "float-quantized",
                           "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                               "num_bits": 8, "type": "float", "strategy": "channel"}}}})
    w = em.make_weights(c, 11)
    rng = em.np.random.default_rng(11)
    ov = {}
    for name in [n for n in w if n.endswith("_proj.weight")]:
        out_, in_ = w[name].shape
        codes = rng.integers(0, 0x70, (out_, in_)).astype(em.np.uint8)
        ov[name] = ("F8_E4M3", (out_, in_), codes.tobytes())
        scale = (0.01 * (1 + rng.random((out_, 1)))).astype("<f4")
        ov[name[:-len(".weight")] + ".weight_scale"] = ("F32", scale.shape, scale.tobytes())
    em.write_model(d, c, w, overrides=ov)
    return SINGLE


SEEDS = {"llama": llama, "llama-sharded-tied": llama_sharded_tied, "qwen2": qwen2,
         "qwen3-qknorm": qwen3,
         "llama-gptq": llama_gptq, "qwen35-causal": qwen35, "qwen35-cg-visual": qwen35_cg,
         "llama-rope-yarn": llama_rope_yarn, "qwen2-window": qwen2_window,
         "qwen3-moe": qwen3_moe, "llama-ct-fp8": ct_fp8, "qwen35-moe-fused": qwen35_moe_fused,
         "mistral-window": mistral}


def main():
    args = sys.argv[1:]
    tool = None
    if "--check" in args:
        i = args.index("--check")
        tool = args[i + 1]
        del args[i:i + 2]
    out = args[0] if args else os.path.join(HERE, "corpus", "fuzz_model_load")
    os.makedirs(out, exist_ok=True)
    for name, make in SEEDS.items():
        with tempfile.TemporaryDirectory() as d:
            layout = make(d)
            seed = encode(d, layout)
            if tool:
                r = subprocess.run([tool, d, "--ids", "0,1,2", "--path", "prefill"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit("%s: does not load: %s%s" % (name, r.stdout, r.stderr))
        with open(os.path.join(out, name), "wb") as f:
            f.write(seed)
        print("%s: %d bytes" % (name, len(seed)))


if __name__ == "__main__":
    main()

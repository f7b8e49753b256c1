#!/usr/bin/env python3
"""fidelis' engine on Qwen3.5 (hybrid Gated DeltaNet + gated full attention, docs/QWEN35.md)
against an independent float64 forward pass in numpy (tests/qwen35_models.py), on tiny random
checkpoints: ForCausalLM and ForConditionalGeneration with a vision tower (and MTP tensors),
tied and untied heads, several layer_types patterns and the full_attention_interval default,
GQA ratios 1/2/4, DeltaNet nv/nk ratios 1/2, partial rotary 0.25/0.5/1.0 (and its default),
RoPE keys in rope_parameters or beside the text fields, conv kernels 4 and 3, BF16/F16/F32 with
the small DeltaNet vectors in F32, one file and sharded; and Qwen3.5 MoE (router, top-k
renormalised, a sigmoid-gated shared expert) with experts stored one tensor each or fused.

First the oracle checks itself: its recurrent DeltaNet and the chunked (chunk 64, UT transform)
form of the same spec agree within 1e-10 on contexts 1, 63, 64, 65 and 300, so a disagreement
with the engine is not a misreading of the math on the oracle's side. `--self-check-only` stops
there (it needs no build).

Then, per config and context: both engine paths (prefill = chunked DeltaNet, decode =
recurrent) agree with the oracle within 1e-4 (per row, max |c - o| / max |o|) on hidden,
logits and the --layers boundaries; with each other within 1e-4 (float32 tolerance: the two
DeltaNet forms round differently; observed up to 2e-5 on the 4-layer model); greedy is the argmax of the
logits; every output is byte-identical across --threads 1/2/3 and every ISA this CPU runs.
Finally an unknown layer type, attention_bias true, a MoE field on the dense model,
tie_word_embeddings disagreeing between the two levels, and a Qwen3.5 MoE config that does not
route every layer, does not renormalise or has no shared expert size are refused by name.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import qwen35_models as qm  # noqa: E402
from test_engine_oracle import cpu_isas, rel_rows  # noqa: E402

BUILD = os.environ.get("FDL_BUILD", "build")
TOOL = os.path.join(BUILD, "tests", "tool_engine")
TMP = tempfile.mkdtemp(prefix="fdl-qwen35-")
FAILS = []
TOL_SELF = 1e-10
TOL_ORACLE = 1e-4
TOL_PATHS = 1e-4
SELF_CONTEXTS = (1, 63, 64, 65, 300)
OUTS = ("hidden", "logits", "greedy", "layers")
LIN, FULL = qm.LIN, qm.FULL
CG = "Qwen3_5ForConditionalGeneration"
# Qwen3.5 MoE: the ForCausalLM checkpoints here store one tensor per expert, the wrapped ones
# fused tensors (qm.make_weights), with a shared expert either way.
MOE = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
           shared_expert_intermediate_size=48)


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


# name, make_config kwargs, dtype, small_f32, shards, contexts
CASES = [
    # The context sweep: chunk edges 63/64/65 and five chunks; GQA 2, nv/nk 2.
    ("causal-lin3full-untied-bf16", dict(layer_types=[LIN, LIN, LIN, FULL], heads=4, kv_heads=2,
                                         nk=2, nv=4, prf=0.25), "BF16", False, 1,
     [1, 63, 64, 65, 300]),
    ("causal-fulllin-tied-f32-k3", dict(layer_types=[FULL, LIN], heads=4, kv_heads=4, nk=2,
                                        nv=2, prf=0.5, conv_k=3, tied=True, dk=8, dv=24),
     "F32", False, 1, [70]),
    ("cg-vision-lin-untied-bf16", dict(arch=CG, layer_types=[LIN], nk=2, nv=4, dk=16, dv=8,
                                       tie_in="both"), "BF16", True, 1, [1, 65]),
    ("causal-allfull-tied-f16-gqa4", dict(layer_types=[FULL, FULL], heads=4, kv_heads=1,
                                          prf=1.0, tied=True), "F16", False, 1, [33]),
    # layer_types absent: full_attention_interval's default 4; RoPE keys beside the text
    # fields, partial_rotary_factor absent (0.25); tie only in text_config; MTP tensors.
    ("cg-interval-default-tied-mtp", dict(arch=CG, layers=4, tied=True, tie_in="text",
                                          rope_in="top", prf=None, mtp=True, nk=1, nv=2,
                                          heads=2, kv_heads=1, head_dim=32),
     "BF16", True, 3, [66]),
    ("causal-interval2-gqa4-nvnk1", dict(layers=4, interval=2, heads=8, kv_heads=2, head_dim=8,
                                       prf=0.5, nk=4, nv=4, dk=8, dv=8, theta=1e4),
     "F16", True, 1, [129]),
    # MoE: top 2 of 8 over DeltaNet and full attention, experts one tensor each; then fused,
    # top 1 of 4 (its weight renormalised to 1), tied, sharded, every ISA and thread count.
    ("moe-causal-lin-full-bf16", dict(MOE, arch="Qwen3_5MoeForCausalLM", layer_types=[LIN, FULL],
                                      nk=2, nv=4), "BF16", True, 1, [1, 65]),
    ("moe-cg-fused-top1-f32", dict(MOE, arch="Qwen3_5MoeForConditionalGeneration",
                                   layer_types=[LIN, LIN, FULL], num_experts=4,
                                   num_experts_per_tok=1, moe_intermediate_size=24, tied=True,
                                   tie_in="text", nk=1, nv=2), "F32", False, 2, [40]),
]


# ---- the oracle's self-check --------------------------------------------------------------

def self_check():
    """Recurrent vs chunked numpy DeltaNet: the bare rule with slow and fast decay (slow decay
    makes the state carried across chunk edges dominate), then whole models."""
    worst = {n: 0.0 for n in SELF_CONTEXTS}
    rng = np.random.default_rng(7)
    for decay in (0.01, 1.0, 10.0):
        for n in SELF_CONTEXTS:
            dk, dv = 16, 8
            q = rng.standard_normal((n, dk))
            k = rng.standard_normal((n, dk))
            k /= np.linalg.norm(k, axis=1, keepdims=True)
            v = rng.standard_normal((n, dv))
            beta = rng.uniform(0.05, 0.95, n)
            g = -decay * rng.uniform(0.1, 1.0, n)
            a = qm.delta_recurrent(q, k, v, beta, g)
            b = qm.delta_chunked(q, k, v, beta, g)
            e = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
            worst[n] = max(worst[n], e)
            check(e <= TOL_SELF, "self-check: delta rule decay %g context %d: recurrent vs "
                  "chunked rel %.3e > %g" % (decay, n, e, TOL_SELF))
    for seed, (name, kw, dtype, small, _, _) in enumerate(CASES):
        c = qm.make_config(dtype=dtype, **kw)
        if LIN not in qm.layer_types(qm.text_config(c)):
            continue
        stored = qm.write_model(os.path.join(TMP, "self-" + name), c,
                                qm.make_weights(c, seed + 11), dtype=dtype, small_f32=small)
        for n in SELF_CONTEXTS:
            ids = np.random.default_rng(seed * 1000 + n).integers(
                0, qm.text_config(c)["vocab_size"], n)
            r = qm.forward(c, stored, ids, "recurrent")
            ch = qm.forward(c, stored, ids, "chunked")
            for what, x, y in zip(("hidden", "logits", "layers"), r, ch):
                e = rel_rows(y, x)
                worst[n] = max(worst[n], e)
                check(e <= TOL_SELF, "self-check: %s context %d: %s recurrent vs chunked rel "
                      "%.3e > %g" % (name, n, what, e, TOL_SELF))
            if n == SELF_CONTEXTS[-1]:
                check(np.std(r[1]) > 0.5 and len(set(np.argmax(r[1], 1))) > n // 10,
                      "self-check: %s: logits degenerate (std %.3g)" % (name, np.std(r[1])))
    for n in SELF_CONTEXTS:
        print("self-check: context %3d  max rel recurrent vs chunked %.2e" % (n, worst[n]))
    return worst


# ---- the engine ---------------------------------------------------------------------------

def run(model, ids, path, tag, threads=1, isa="auto"):
    out = {k: os.path.join(TMP, "%s-%s-%d-%s-%s.npy" % (tag, path, threads, isa, k))
           for k in OUTS}
    for p in out.values():
        if os.path.exists(p):
            os.remove(p)
    cmd = [TOOL, model, "--ids", ",".join(map(str, ids)), "--path", path,
           "--threads", str(threads), "--isa", isa]
    for k, p in out.items():
        cmd += ["--" + k, p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        shown = cmd[:]
        shown[3] = "<%d ids>" % len(ids)  # a 300-id list would bury the message
        raise RuntimeError("exit %d: %s (%s)" % (r.returncode, r.stderr.strip(), " ".join(shown)))
    return {k: np.load(p) for k, p in out.items()}


def compare_case(name, c, d, stored, ids, isas, variants):
    n = len(ids)
    tag = "%s-n%d" % (name, n)
    where = "%s context %d" % (name, n)
    oh, ol, ob = qm.forward(c, stored, ids)
    oracle = {"hidden": oh, "logits": ol, "layers": ob}
    t = qm.text_config(c)
    shapes = {"hidden": (n, t["hidden_size"]), "logits": (n, t["vocab_size"]), "greedy": (n,),
              "layers": (t["num_hidden_layers"] + 2, t["hidden_size"])}
    base = {}
    for p in ("prefill", "decode"):
        try:
            base[p] = run(d, ids, p, tag)
        except RuntimeError as e:
            check(False, "%s %s: %s" % (where, p, e))
    for p, r in base.items():
        bad = [k for k in OUTS if r[k].shape != shapes[k]]
        check(not bad, "%s %s: shapes %s, expected %s" % (
            where, p, {k: r[k].shape for k in bad}, {k: shapes[k] for k in bad}))
        if bad:
            continue
        errs = {k: rel_rows(r[k], oracle[k]) for k in oracle}
        print("%-30s n %3d %-7s vs oracle: hidden %.2e logits %.2e layers %.2e"
              % (name, n, p, errs["hidden"], errs["logits"], errs["layers"]))
        for k, e in errs.items():
            check(e <= TOL_ORACLE, "%s %s: %s vs oracle rel_rows %.3e > %g"
                  % (where, p, k, e, TOL_ORACLE))
        am = np.argmax(r["logits"], axis=1).astype(np.int32)
        check(np.array_equal(am, r["greedy"]), "%s %s: greedy != argmax(logits) at %s"
              % (where, p, np.nonzero(am != r["greedy"])[0][:8].tolist()))
    if len(base) < 2 or any(base[p][k].shape != shapes[k] for p in base for k in OUTS):
        return
    pf, dc = base["prefill"], base["decode"]
    same = all(np.array_equal(pf[k].view(np.uint8), dc[k].view(np.uint8)) for k in OUTS)
    errs = {k: rel_rows(dc[k], pf[k].astype(np.float64)) for k in oracle}
    print("%-30s n %3d decode vs prefill: hidden %.2e logits %.2e layers %.2e (%s)"
          % (name, n, errs["hidden"], errs["logits"], errs["layers"],
             "bit-identical" if same else "not bit-identical"))
    for k, e in errs.items():
        check(e <= TOL_PATHS, "%s: %s decode vs prefill rel_rows %.3e > %g"
              % (where, k, e, TOL_PATHS))
    for p in ("prefill", "decode"):
        for th, isa in variants:
            try:
                r = run(d, ids, p, tag, threads=th, isa=isa)
            except RuntimeError as e:
                check(False, "%s %s threads %d isa %s: %s" % (where, p, th, isa, e))
                continue
            for k in OUTS:
                check(r[k].shape == base[p][k].shape
                      and np.array_equal(r[k].view(np.uint8), base[p][k].view(np.uint8)),
                      "%s %s threads %d isa %s: %s differs bitwise from threads 1 auto"
                      % (where, p, th, isa, k))


def refusals():
    """Each mutation of a valid model (the first case's, accepted above) must be refused with a
    nonzero exit and its cause named in stderr."""
    kw = dict(CASES[0][1])
    def tie_conflict(c):
        c["text_config"]["tie_word_embeddings"] = not c["tie_word_embeddings"]

    muts = [
        ("refuse-sliding-attention", dict(kw, layer_types=[LIN, "sliding_attention", LIN, FULL]),
         None, "sliding_attention"),
        ("refuse-attention-bias", dict(kw, attention_bias=True), None, "attention_bias"),
        ("refuse-moe", dict(kw, num_experts=8), None, "num_experts"),
        ("refuse-cg-attention-bias", dict(kw, arch=CG, attention_bias=True), None,
         "attention_bias"),
        ("refuse-cg-tie-conflict", dict(kw, arch=CG, tie_in="both"), tie_conflict,
         "tie_word_embeddings"),
    ]
    # Qwen3.5 MoE routes every layer and always renormalises; its shared expert has a size.
    mk = dict(kw, arch="Qwen3_5MoeForCausalLM", **MOE)
    muts += [
        ("refuse-moe-norm-false", dict(mk, norm_topk_prob=False), None, "norm_topk_prob is false"),
        ("refuse-moe-mlp-only", dict(mk, mlp_only_layers=[0]), None, "mlp_only_layers"),
        ("refuse-moe-sparse-step", dict(mk, decoder_sparse_step=2), None, "decoder_sparse_step"),
        ("refuse-moe-no-shared", dict(mk, shared_expert_intermediate_size=None), None,
         "shared_expert_intermediate_size"),
    ]
    for name, mkw, edit, needle in muts:
        c = qm.make_config(**mkw)
        if edit:
            edit(c)
        d = os.path.join(TMP, name)
        qm.write_model(d, c, qm.make_weights(c, 5))
        r = subprocess.run([TOOL, d, "--ids", "1,2,3", "--path", "prefill"],
                           capture_output=True, text=True)
        msg = r.stderr.strip()
        print("%-30s rc %d  %s" % (name, r.returncode, msg))
        check(r.returncode > 0 and needle in msg,  # < 0: a crash, not a refusal
              "%s: expected a refusal (exit > 0) naming %r, got exit %d: %r"
              % (name, needle, r.returncode, msg))


def main():
    self_check()
    if "--self-check-only" in sys.argv[1:]:
        print("%d failure(s)" % len(FAILS) if FAILS else "oracle self-check passed")
        return 1 if FAILS else 0
    if FAILS:
        print("%d failure(s) in the oracle's self-check; the engine is not compared" % len(FAILS))
        return 1
    if not os.path.exists(TOOL):
        print("skipped: %s not built" % TOOL)
        return 77
    isas = cpu_isas()
    print("ISAs on this CPU:", ", ".join(isas))
    variants = [(t, "auto") for t in (2, 3)] + [(1, i) for i in isas] + [(3, isas[0])]
    for seed, (name, kw, dtype, small, shards, contexts) in enumerate(CASES):
        c = qm.make_config(dtype=dtype, **kw)
        d = os.path.join(TMP, name)
        stored = qm.write_model(d, c, qm.make_weights(c, seed + 11), dtype=dtype,
                                small_f32=small, shards=shards)
        vocab = qm.text_config(c)["vocab_size"]
        for n in contexts:
            ids = [int(i) for i in np.random.default_rng(seed * 1000 + n).integers(0, vocab, n)]
            # The bitwise sweep on each case's longest context: it crosses the most chunk
            # edges and product blocks, and repeating it for every length adds only time.
            compare_case(name, c, d, stored, ids, isas,
                         variants if n == max(contexts) else [])
    refusals()
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("all Qwen3.5 oracle checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

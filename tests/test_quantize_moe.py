#!/usr/bin/env python3
"""`fidelis quantize` on mixture-of-experts checkpoints (docs/MODELS.md, "quantize"): a Qwen3 MoE
model (experts one tensor each, a dense MLP in an mlp_only_layers layer), a Qwen3.5 MoE
ForConditionalGeneration model (experts fused: gate_up_proj [E, 2I, H], down_proj [E, H, I];
a shared expert with its sigmoid gate; a vision tower; two shards) at scope all-linear, and a Qwen3.5 MoE
ForCausalLM model (experts one tensor each).

(a) Against numpy, written from the definitions (tests/test_quantize.py's np_quantize and
np_unpack): every expert's gate, up and down (a fused tensor split in numpy: expert e's gate is
rows 0..I-1 of gate_up_proj[e], its up rows I..2I-1) and the shared expert's are quantized to
mlp.experts.E.{gate,up,down}_proj.{qweight,qzeros,scales,g_idx} bit for bit as that matrix
alone would be, decode to (q - zero) * scale within the RTN bound; the router (mlp.gate.weight)
and shared_expert_gate are copied bit for bit; no fused tensor, and nothing else, is left;
quantization_config lists exactly the modules quantized.

(b) The quantized model loads in the engine (tests/tool_engine, prefill) and its logits agree
per row within 1e-4 with the float64 oracle (engine_models.forward / qwen35_models.forward) run
over numpy's RTN of the original weights, decoded (so a file that holds another expert's
matrix, or gate's rows as up, fails here too), and greedy ids agree; the same logits are far
(> 1e-2) from the oracle over the unquantized weights, so the comparison sees quantization.

Then a fused tensor GPTQ cannot pack (moe_intermediate_size 12; a group that does not divide
it), and an expert stored both fused and alone, are refused by name, with nothing written.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import engine_models as em  # noqa: E402
import qwen35_models as qm  # noqa: E402
import test_engine_oracle as teo  # noqa: E402
from test_quantize import np_quantize, np_unpack, read_st  # noqa: E402

CLI = os.environ.get("FDL_CLI")
BUILD = os.environ.get("FDL_BUILD", "build")
TOOL = os.path.join(BUILD, "tests", "tool_engine")
TOL_ORACLE = 1e-4
PROJ = ("gate_proj", "up_proj", "down_proj")
ATTN = ["self_attn." + m for m in ("q_proj", "k_proj", "v_proj", "o_proj")]
DELTANET = ["linear_attn." + m for m in ("in_proj_qkv", "in_proj_z", "out_proj")]
MLP = ["mlp." + m for m in PROJ]
SHARED = ["mlp.shared_expert." + m for m in PROJ]
PARTS = ("qweight", "qzeros", "scales", "g_idx")
EXPERT = re.compile(r"\.mlp\.experts\.\d+\.(gate|up|down)_proj\.weight$")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def f32(dt, shape, raw):
    return em.widen(raw, dt, shape).astype(np.float32)


def expected_matrices(stored, modules, E, I):
    """{stem: float32 [out, in]} for every matrix the scope quantizes; fused tensors split here,
    from their layout, into the per-expert stems the engine reads."""
    want = {}
    for name, (dt, shape, raw) in stored.items():
        if name.startswith(("model.visual.", "mtp.")):
            continue
        if name.endswith(".mlp.experts.gate_up_proj"):
            gu = f32(dt, shape, raw)
            base = name[:-len("gate_up_proj")]
            for e in range(E):
                want["%s%d.gate_proj" % (base, e)] = gu[e, :I]
                want["%s%d.up_proj" % (base, e)] = gu[e, I:]
        elif name.endswith(".mlp.experts.down_proj"):
            dn = f32(dt, shape, raw)
            base = name[:-len("down_proj")]
            for e in range(E):
                want["%s%d.down_proj" % (base, e)] = dn[e]
        elif EXPERT.search(name) or (name.endswith(".weight") and
                                     any(name[:-7].endswith("." + m) for m in modules)):
            want[name[:-7]] = f32(dt, shape, raw)
    return want


def read_model(label, d):
    """Every tensor of the model in d; a sharded one's index must list each where it is and
    total its bytes."""
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    check(len(files) == (2 if "fused" in label else 1), "%s: shards %r" % (label, files))
    so, where = {}, {}
    for f in files:
        _, t = read_st(os.path.join(d, f))
        so.update(t)
        where.update({n: f for n in t})
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        j = json.load(open(idx))
        check(j["weight_map"] == where, "%s: the index's weight_map is not where the tensors are"
              % label)
        total = sum(len(t[2]) for t in so.values())
        check(j["metadata"]["total_size"] == total, "%s: index total_size %r, the tensors hold %d"
              % (label, j["metadata"].get("total_size"), total))
    return so


def check_files(label, stored, qdir, group, modules, E, I):
    """(a): the parts against numpy, everything else copied, nothing left over. Returns the
    weights as numpy decodes them ({name: (dtype, shape, raw)} for the oracle)."""
    so = read_model(label, qdir)
    want = expected_matrices(stored, modules, E, I)
    decoded, worst = {}, 0.0
    for stem, wf in want.items():
        qw, qz, sc, gi, q, z, sd = np_quantize(wf, group)
        ref = {"qweight": ("I32", qw.view(np.int32)), "qzeros": ("I32", qz.view(np.int32)),
               "scales": ("F16", sc), "g_idx": ("I32", gi)}
        ok = True
        for part, (pdt, a) in ref.items():
            got = so.get(stem + "." + part)
            ok = ok and got is not None and got[0] == pdt and got[1].shape == a.shape and \
                got[2] == np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        check(ok, "%s: %s differs from numpy's RTN of the matrix alone" % (label, stem))
        G = wf.shape[1] // group
        bound = sd[:, :, None] * (0.5 + 16.0 / 2048) + 1e-12
        if all(stem + "." + p in so for p in PARTS):
            dec = np_unpack(*(so[stem + "." + p][1] for p in PARTS))
            err = np.abs(dec.astype(np.float64) - wf).reshape(wf.shape[0], G, group)
            worst = max(worst, float(np.max(err / bound)))
            check((err <= bound).all(), "%s: %s decodes beyond the RTN bound" % (label, stem))
        # the oracle's weight: numpy's RTN of the original matrix, decoded, so the engine's run
        # of the files is checked against the quantization they should hold, not what they hold
        dec = np_unpack(qw, qz, sc, gi)
        decoded[stem + ".weight"] = ("F32", dec.shape, np.ascontiguousarray(dec, "<f4").tobytes())
    parts = {s + "." + p for s in want for p in PARTS}
    kept = {n for n in stored if not (n.endswith(".weight") and n[:-7] in want) and not n.endswith(
        (".mlp.experts.gate_up_proj", ".mlp.experts.down_proj"))}
    for n in kept:
        dt, shape, raw = stored[n]
        got = so.get(n)
        check(got is not None and got[0] == dt and list(got[1].shape) == list(shape) and got[2] == raw,
              "%s: %s not copied as stored" % (label, n))
        decoded[n] = stored[n]
    extra = sorted(set(so) - parts - kept)
    check(not extra, "%s: unexpected output tensors %s" % (label, extra[:6]))
    fused = sorted(n for n in so if n.endswith(("experts.gate_up_proj", "experts.down_proj")))
    check(not fused, "%s: fused tensors left: %s" % (label, fused))
    routers = [n for n in kept if n.endswith((".mlp.gate.weight", ".mlp.shared_expert_gate.weight"))]
    check(routers, "%s: no router in the model" % label)
    experts = sum(".mlp.experts." in s for s in want)
    print("%-22s %3d matrices quantized (%d experts' gate/up/down), %2d kept bit-identical "
          "(%d routers and shared-expert gates); worst RTN error %.3f of the bound"
          % (label, len(want), experts, len(kept), len(routers), worst))
    return decoded, len(want)


def quantize(label, src, dst, group, scope):
    p = subprocess.run([CLI, "quantize", "--json", "--group-size", str(group), "--scope", scope,
                        src, dst], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "%s: quantize exit %d %s" % (label, p.returncode, p.stderr))
    return json.loads(p.stdout) if p.returncode == 0 else None


def engine(label, d, ids, tmp):
    out = os.path.join(tmp, label + "-logits.npy")
    r = subprocess.run([TOOL, d, "--ids", ",".join(map(str, ids)), "--path", "prefill",
                        "--logits", out], capture_output=True, text=True)
    check(r.returncode == 0, "%s: the engine did not run the quantized model: %s"
          % (label, r.stderr.strip()))
    return np.load(out) if r.returncode == 0 else None


def case(label, c, stored, text, group, scope, modules, want_mods, oracle, tmp):
    src, dst = os.path.join(tmp, label), os.path.join(tmp, label + "-q")
    E, I = text["num_experts"], text["moe_intermediate_size"]
    j = quantize(label, src, dst, group, scope)
    if j is None:
        return
    decoded, n = check_files(label, stored, dst, group, modules, E, I)
    check(j["quantized_tensors"] == n, "%s: --json quantized_tensors %d, expected %d"
          % (label, j["quantized_tensors"], n))
    cfg = json.load(open(os.path.join(dst, "config.json")))
    mods = cfg["quantization_config"]["modules_in_block_to_quantize"]
    check(mods == [want_mods], "%s: modules_in_block_to_quantize %r, expected %r"
          % (label, mods, [want_mods]))
    ids = np.random.default_rng(5).integers(0, text["vocab_size"], 24).tolist()
    got = engine(label, dst, ids, tmp)
    if got is None:
        return
    want = oracle(c, decoded, ids)
    rel = teo.rel_rows(got, want)
    # the same comparison against the unquantized weights: the oracle must tell them apart
    far = teo.rel_rows(got, oracle(c, stored, ids))
    check(far > 100 * TOL_ORACLE, "%s: the engine's logits are as close to the unquantized "
          "model's (%.3e): the comparison cannot see the quantization" % (label, far))
    same = np.array_equal(np.argmax(got, 1), np.argmax(want, 1))
    print("%-22s engine vs float64 oracle over numpy's decoded RTN: logits rel %.2e, greedy %s "
          "(vs the unquantized weights: %.2e)" % (label, rel, "equal" if same else "DIFFERS", far))
    check(rel <= TOL_ORACLE, "%s: logits rel_rows %.3e > %g" % (label, rel, TOL_ORACLE))
    check(same, "%s: greedy differs from the oracle's" % label)


def experts(E):
    return ["mlp.experts.%d.%s" % (e, p) for e in range(E) for p in PROJ]


def refusals(tmp):
    """A fused tensor GPTQ cannot pack is refused by name; nothing is written."""
    def fused(name, I, group):
        c = qm.make_config(arch="Qwen3_5MoeForConditionalGeneration", layer_types=[qm.LIN],
                           num_experts=2, num_experts_per_tok=1, moe_intermediate_size=I,
                           shared_expert_intermediate_size=16)
        qm.write_model(os.path.join(tmp, name), c, qm.make_weights(c, 3), small_f32=True)
        out = os.path.join(tmp, name + "-q")
        p = subprocess.run([CLI, "quantize", "--group-size", str(group), os.path.join(tmp, name), out],
                           capture_output=True, text=True, timeout=300)
        return p.returncode, p.stderr, os.path.exists(out)

    rc, err, left = fused("fused-i12", 12, 4)
    check(rc == 3 and "model.language_model.layers.0.mlp.experts.gate_up_proj" in err
          and "multiples of 8" in err and not left, "fused I=12: exit %d %r" % (rc, err))
    rc, err, left = fused("fused-i24-g16", 24, 16)
    check(rc == 3 and "model.language_model.layers.0.mlp.experts.down_proj" in err
          and "does not divide" in err and not left, "fused I=24 g16: exit %d %r" % (rc, err))
    c = qm.make_config(arch="Qwen3_5MoeForConditionalGeneration", layer_types=[qm.LIN],
                       num_experts=2, num_experts_per_tok=1, moe_intermediate_size=16,
                       shared_expert_intermediate_size=16)
    twice = "model.language_model.layers.0.mlp.experts.1.up_proj.weight"
    m = np.ones((16, 64), dtype=np.float32)
    qm.write_model(os.path.join(tmp, "twice"), c, qm.make_weights(c, 3), small_f32=True,
                   overrides={twice: ("BF16", m.shape, em.encode(m, "BF16"))})
    p = subprocess.run([CLI, "quantize", "--group-size", "16", os.path.join(tmp, "twice"),
                        os.path.join(tmp, "twice-q")], capture_output=True, text=True, timeout=300)
    check(p.returncode == 3 and twice in p.stderr and "stored twice" in p.stderr
          and not os.path.exists(os.path.join(tmp, "twice-q")),
          "an expert both fused and alone: exit %d %r" % (p.returncode, p.stderr))
    print("refused: a fused gate_up_proj with I = 12, a fused down_proj whose I = 24 group 16 "
          "does not divide, an expert stored both fused and alone")


def main():
    if not CLI or not os.access(CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    if not os.access(TOOL, os.X_OK):
        print("skip: %s not built" % TOOL)
        return 77
    tmp = tempfile.mkdtemp(prefix="fdl-quantize-moe-")
    try:
        # Qwen3 MoE: layer 1 dense (mlp_only_layers), 0 and 2 routed; scope mlp
        c = em.make_config(arch="Qwen3MoeForCausalLM", layers=3, kv_heads=2,
                           moe_intermediate_size=48, num_experts=4, num_experts_per_tok=2,
                           norm_topk_prob=True, mlp_only_layers=[1])
        stored = em.write_model(os.path.join(tmp, "qwen3-moe"), c, em.make_weights(c, 7))
        case("qwen3-moe", c, stored, c, 16, "mlp", MLP, MLP + experts(4),
             lambda c, s, ids: em.forward(c, s, ids)[1], tmp)

        # Qwen3.5 MoE, the wrapped release layout: fused experts, a vision tower; all-linear
        q = qm.make_config(arch="Qwen3_5MoeForConditionalGeneration", layer_types=[qm.LIN, qm.FULL],
                           num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                           shared_expert_intermediate_size=48)
        stored = qm.write_model(os.path.join(tmp, "qwen3.5-moe-fused"), q, qm.make_weights(q, 8),
                                small_f32=True, shards=2)
        check(any(n.endswith("experts.gate_up_proj") for n in stored), "the fused model is not fused")
        case("qwen3.5-moe-fused", q, stored, qm.text_config(q), 16, "all-linear",
             ATTN + DELTANET + MLP + SHARED, ATTN + DELTANET + SHARED + experts(4),
             lambda c, s, ids: qm.forward(c, s, ids)[1], tmp)

        # Qwen3.5 MoE ForCausalLM, experts one tensor each; scope mlp
        q = qm.make_config(arch="Qwen3_5MoeForCausalLM", layer_types=[qm.LIN, qm.FULL],
                           num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                           shared_expert_intermediate_size=48)
        stored = qm.write_model(os.path.join(tmp, "qwen3.5-moe"), q, qm.make_weights(q, 9),
                                small_f32=True)
        case("qwen3.5-moe", q, stored, q, 16, "mlp", MLP + SHARED, SHARED + experts(4),
             lambda c, s, ids: qm.forward(c, s, ids)[1], tmp)
        refusals(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(teo.TMP, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

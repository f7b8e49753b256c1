"""test_capture_qwen35.py - `fidelis capture` on the seeds' model family (Qwen3.5 hybrid).

On `qwen3.5-tiny-random` (Qwen3_5ForConditionalGeneration with a vision tower, the fixture's
dimensions: vocabulary 272, hidden 64, three Gated DeltaNet layers then one full-attention
layer) over its built-in panel:

* prefill (chunked DeltaNet) and decode (recurrent) captures pass `validate --verify-tensors`
  and disclose the ignored vision tower;
* each is byte-identical under --threads 1/2/3 and every ISA the CPU has;
* `--layers` writes one [layers + 2, hidden] F32 tensor per record, named
  layer_last_rows.<index>, with Kiln's boundary names in __metadata__, equal bit for bit to the
  engine's own boundary rows (tool_engine --layers); an existing --layers file is refused with
  nothing written;
* `layers diff` attributes between the two DeltaNet paths and between the model and its int4
  twin: the first boundary that moves is the first layer (the embedding never does);
* the seed's measurement: the int4 g32 MLP twin compared with --own-heads gives the seed
  receipt's gates (all passed, none overridden), class (advisory), own-head replay and
  weights_reconstructed disclosures, and KL > 0; a second capture of the same model is a
  reproduction_confirmation with KL exactly +0.0.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402
from test_capture import capture, isas, run, tree  # noqa: E402

NAME = "test_capture_qwen35"


def st_tensors(path):
    """{name: float32 array} and the metadata of a safetensors file of F32 tensors."""
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    head = json.loads(raw[8:8 + n])
    meta = head.pop("__metadata__", {})
    out = {}
    for k, v in head.items():
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(v["shape"])
    return out, meta


def main():
    tmp = tempfile.TemporaryDirectory(prefix="fdl-capq35-")
    t = tmp.name
    model = os.path.join(t, "model")
    p = run("model", "init", "--preset", "qwen3.5-tiny-random", "--seed", "0", model)
    if not U.check(p.returncode == 0, f"model init: {p.returncode} {p.stderr}"):
        U.finish(NAME)
    cfg = json.load(open(os.path.join(model, "config.json")))
    tc = cfg["text_config"]
    L, H = tc["num_hidden_layers"], tc["hidden_size"]
    panel = os.path.join(model, "panel.jsonl")

    caps = {}
    for path in ("prefill", "decode"):
        out, lay = os.path.join(t, path), os.path.join(t, path + ".layers.safetensors")
        p = capture(model, panel, out, "--path", path, "--layers", lay)
        if not U.check(p.returncode == 0, f"capture {path}: {p.returncode} {p.stderr}"):
            U.finish(NAME)
        caps[path] = (out, lay)
        v = run("validate", out, "--verify-tensors")
        U.check(v.returncode == 0, f"validate {path}: {v.stdout}{v.stderr}")
        man = U.load_manifest(out)
        codes = [d["code"] for d in man.get("disclosures", [])]
        U.check("vision_tower_ignored" in codes, f"{path}: vision tower disclosed: {codes}")
        want = tree(out)
        for extra in (["--threads", "1"], ["--threads", "2"], ["--threads", "3"],
                      *[["--isa", i] for i in isas()]):
            o = os.path.join(t, path + "-" + "-".join(x.strip("-") for x in extra))
            p = capture(model, panel, o, "--path", path, *extra)
            if U.check(p.returncode == 0, f"capture {path} {extra}: {p.stderr}"):
                U.check(tree(o) == want, f"capture {path} {extra} is byte-identical")

    # The boundary file.
    names = (["embedding"] + ["layer_%02d_%s" % (i, tc["layer_types"][i]) for i in range(L)]
             + ["final_norm"])
    tens, meta = st_tensors(caps["prefill"][1])
    lines = [json.loads(x) for x in open(panel)]
    U.check(sorted(tens) == sorted("layer_last_rows.%04d" % x["index"] for x in lines),
            f"one tensor per record: {sorted(tens)}")
    U.check(json.loads(meta.get("boundary_names", "null")) == names, f"names {meta}")
    U.check(all(a.shape == (L + 2, H) for a in tens.values()), "shapes [layers + 2, hidden]")
    tool = os.path.join(os.environ.get("FDL_BUILD", "build"), "tests", "tool_engine")
    if U.check(os.path.exists(tool), f"{tool} built"):
        line = lines[0]
        ids = ",".join(str(x) for x in line["tokens"])
        b = os.path.join(t, "b.npy")
        q = subprocess.run([tool, model, "--ids", ids, "--path", "prefill", "--layers", b],
                           capture_output=True, text=True)
        if U.check(q.returncode == 0, f"tool_engine: {q.stderr}"):
            U.check(np.array_equal(np.load(b), tens["layer_last_rows.%04d" % line["index"]]),
                    "--layers rows = the engine's boundary rows")
    taken = caps["prefill"][1]
    p = capture(model, panel, os.path.join(t, "refused"), "--layers", taken)
    U.check(p.returncode == 3 and "exists" in p.stderr, f"existing --layers: {p.returncode}")
    U.check(not os.path.exists(os.path.join(t, "refused")), "nothing written on refusal")

    def first_moved(ref, cand):
        key = "layer_last_rows.%04d" % lines[0]["index"]
        p = run("layers", "diff", ref, cand, "--ref-tensor", key, "--cand-tensor", key, "--json")
        if not U.check(p.returncode == 0, f"layers diff: {p.stdout}{p.stderr}"):
            return None
        rows = json.loads(p.stdout)["boundaries"]
        moved = [r["name"] for r in rows if r["max_abs_error"] > 0]
        return moved[0] if moved else None

    moved = first_moved(caps["prefill"][1], caps["decode"][1])
    U.check(moved == names[1], f"chunked vs recurrent first moves at {moved}, expected {names[1]}")

    # The seed's measurement: the int4 g32 MLP twin, compared with each side's own head.
    qm = os.path.join(t, "model-int4")
    p = run("quantize", "--codec", "int4", "--group-size", "32", "--scope", "mlp", model, qm)
    if U.check(p.returncode == 0, f"quantize: {p.returncode} {p.stderr}"):
        qc, ql = os.path.join(t, "quant"), os.path.join(t, "quant.layers.safetensors")
        p = capture(qm, panel, qc, "--layers", ql)
        if U.check(p.returncode == 0, f"capture int4: {p.stderr}"):
            moved = first_moved(caps["prefill"][1], ql)
            U.check(moved == names[1], f"int4 twin first moves at {moved}")
            out = os.path.join(t, "cmp-q")
            p = run("compare", caps["prefill"][0], qc, "--out", out, "--own-heads", "--quiet")
            rc_path = os.path.join(out, "comparison-receipt.json")
            if U.check(os.path.exists(rc_path), f"compare: {p.returncode} {p.stderr}"):
                rc = json.load(open(rc_path))
                U.check(rc["comparison_kind"] == "measurement", rc["comparison_kind"])
                U.check(rc["metric"]["value"] > 0, "int4 KL > 0")
                U.check(rc["comparability"]["class"] == "advisory", "class advisory")
                U.check(all(g["passed"] and g["overridden_by"] is None
                            for g in rc["gates"].values()), f"gates {rc['gates']}")
                codes = [d["code"] for d in rc["disclosures"]]
                for c in ("native_head_replay", "weights_reconstructed"):
                    U.check(c in codes, f"disclosure {c} in {codes}")

    out = os.path.join(t, "cmp-self")
    p = run("compare", caps["prefill"][0], os.path.join(t, "prefill-threads-1"), "--out", out,
            "--quiet")
    rc_path = os.path.join(out, "comparison-receipt.json")
    if U.check(os.path.exists(rc_path), f"self compare: {p.stderr}"):
        rc = json.load(open(rc_path))
        U.check(rc["comparison_kind"] == "reproduction_confirmation", rc["comparison_kind"])
        U.check(rc["metric"]["value"] == 0.0, "reproduction KL is +0.0")
    U.finish(NAME)


if __name__ == "__main__":
    main()

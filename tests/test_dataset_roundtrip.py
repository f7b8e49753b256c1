#!/usr/bin/env python3
"""fidelis pack followed by fidelis validate, for hidden and logit forms, equal-length and padded
panels, one record and 100 records; every dataset is then re-checked by the independent Python
checker (test_dataset_lib.check_dataset) and its stored tensors compared with the inputs."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import test_dataset_lib as L  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def stored_tensor(root, rec):
    n, header = L.read_safetensors_header(os.path.join(root, "capture", rec["file"]))
    meta = header[rec["key"]]
    raw = open(os.path.join(root, "capture", rec["file"]), "rb").read()[8 + n:]
    start, stop = meta["data_offsets"]
    dt = {"BF16": np.uint16, "F32": np.float32, "F16": np.float16}[meta["dtype"]]
    return np.frombuffer(raw[start:stop], dtype=dt).reshape(meta["shape"])


def roundtrip(tmp, label, **kw):
    case = os.path.join(tmp, label)
    inp = L.make_inputs(os.path.join(case, "in"), **kw)
    out = os.path.join(case, "out")
    p = L.pack(inp, out)
    check(p.returncode == 0, "%s: pack exit %d: %s" % (label, p.returncode, p.stderr))
    if p.returncode != 0:
        return None
    check(not glob.glob(os.path.join(os.path.dirname(out), ".fidelis-staging-*")), "%s: staging directory left behind" % label)
    for flags, level in (((), "structural"), (("--verify-tensors",), "sealed")):
        rc, rep, proc = L.validate(out, *flags)
        check(rc == 0 and rep and rep["error_count"] == 0 and rep["warning_count"] == 0,
              "%s: validate %s exit %d: %s" % (label, flags, rc, proc.stdout[:2000]))
        check(rep and rep.get("conformance_level") == level, "%s: level %s" % (label, rep and rep.get("conformance_level")))
        check(rep and rep["receipt_sha256"] == L.seal_of(rep, "receipt_sha256"), "%s: report seal" % label)
    problems = L.check_dataset(out)
    check(not problems, "%s: independent checker: %s" % (label, problems))
    m = json.load(open(os.path.join(out, "fidelity-dataset.json")))
    cap = json.load(open(os.path.join(out, "capture", "manifest.json")))
    check(len(cap["records"]) == kw.get("n", 4), "%s: record count" % label)
    for rec in cap["records"]:
        got = stored_tensor(out, rec)
        want = inp["expected"][rec["index"]]
        check(got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got.view(np.uint8), want.view(np.uint8)),
              "%s: record %d tensor bytes differ from the input" % (label, rec["index"]))
    # the panel binds what the inputs said
    panel = json.load(open(os.path.join(out, "panel", "panel.json")))
    for line, rec in zip(inp["lines"], panel["records"]):
        ids = json.load(open(os.path.join(out, rec["token_file"])))
        check(ids == line["tokens"], "%s: tokens of %d" % (label, rec["index"]))
        check(rec["domain"] == line["domain"] and rec["window_id"] == line["window_id"], "%s: metadata of %d" % (label, rec["index"]))
        if kw.get("padded"):
            mask = [int(x) for x in np.load(os.path.join(out, rec["attention_mask_file"]))]
            check(mask == line["mask"], "%s: mask of %d" % (label, rec["index"]))
        else:
            check(rec["attention_mask_file"] is None, "%s: unpadded panel ships no mask" % label)
    if kw.get("with_head", True):
        h = L.tensor_digests(os.path.join(out, "head", "weight.safetensors"), "lm_head.weight")
        check(h["content"] == L.sha(inp["head_bits"].tobytes()), "%s: head content" % label)
    # inspect agrees
    ins = subprocess.run([L.CLI, "inspect", out, "--json"], capture_output=True, text=True)
    check(ins.returncode == 0, "%s: inspect exit %d %s" % (label, ins.returncode, ins.stderr))
    s = json.loads(ins.stdout)
    check(s["form"] == kw.get("form", "hidden") and s["records"]["present"] == kw.get("n", 4), "%s: inspect summary" % label)
    check(s["records"]["positions"] == m["panel"]["scored_positions_total"], "%s: inspect positions" % label)
    check(sum(d["positions"] for d in s["domains"].values()) == s["records"]["positions"], "%s: inspect domains" % label)
    check(s["seal"]["manifest_seal"] == "recomputes" and s["seal"]["checksums_txt"] == "matches", "%s: inspect seal" % label)
    return out, m, inp


def main():
    tmp = tempfile.mkdtemp(prefix="fdl-ds-rt-")
    try:
        cases = [
            ("hidden-equal-1", dict(n=1, form="hidden")),
            ("hidden-equal-100", dict(n=100, form="hidden", length=12, hidden=16, vocab=40)),
            ("hidden-padded-4", dict(n=4, form="hidden", padded=True)),
            ("hidden-padded-100", dict(n=100, form="hidden", padded=True, length=12, hidden=16, vocab=40)),
            ("logit-equal-1", dict(n=1, form="logit", in_dtype="F32")),
            ("logit-equal-100", dict(n=100, form="logit", in_dtype="F32", length=12, vocab=40)),
            ("logit-padded-4-bf16", dict(n=4, form="logit", padded=True, in_dtype="BF16")),
            ("logit-padded-100-nohead", dict(n=100, form="logit", padded=True, in_dtype="F32",
                                              length=12, vocab=40, with_head=False, role="quant")),
            ("logit-npy-f16", dict(n=3, form="logit", in_dtype="F16", fmt="npy")),
            ("quant-hidden", dict(n=3, form="hidden", role="quant")),
            # a quant whose head payload is not shipped, only named by its content digest
            ("quant-hidden-declared-head", dict(n=3, form="hidden", role="quant", with_head=False,
                                                 hidden=32, vocab=96, meta_extra={"head": {
                                                     "tensor_content_sha256": "ab" * 32,
                                                     "shape": [96, 32], "dtype": "BF16"}})),
        ]
        results = {}
        for label, kw in cases:
            results[label] = roundtrip(tmp, label, **kw)

        # F32 hidden states are rounded to BF16 and the dataset says so honestly.
        r = roundtrip(tmp, "hidden-f32-npy", n=3, form="hidden", in_dtype="F32", fmt="npy")
        if r:
            out, m, _ = r
            check(m["capture"]["dtype"] == "BF16" and m["capture"]["dtype_lossless"] is False,
                  "F32 hidden input: dtype BF16, dtype_lossless false")
            check(any(d["code"] == "stored_dtype_narrowed" for d in m["disclosures"]), "narrowing disclosed")
        r = results.get("hidden-equal-1")
        if r:
            check(r[1]["capture"]["dtype_lossless"] is True, "BF16 hidden input is lossless")
        r = results.get("quant-hidden-declared-head")
        if r:
            h = r[1]["head"]
            check(h["present"] is False and h["file"] is None and h["tensor_content_sha256"] == "ab" * 32,
                  "declared head block: %s" % h)
        r = results.get("logit-padded-100-nohead")
        if r:
            check(r[1]["head"]["present"] is False and r[1]["head"]["applied_in_capture"] is True, "logit head block")

        # A re-pack of the same inputs at the same created_utc is byte-identical.
        case = os.path.join(tmp, "hidden-equal-1")
        inp = {"panel": os.path.join(case, "in", "panel.jsonl"), "tensors": os.path.join(case, "in", "tensors"),
               "meta": os.path.join(case, "in", "meta.json"), "head": os.path.join(case, "in", "head.safetensors")}
        again = os.path.join(tmp, "again")
        p = L.pack(inp, again)
        check(p.returncode == 0, "re-pack: %s" % p.stderr)
        check(L.tree_snapshot(again) == L.tree_snapshot(os.path.join(case, "out")), "re-pack is byte-identical")

        # Pack never overwrites: an existing output stays as it was.
        before = L.tree_snapshot(again)
        p = L.pack(inp, again)
        check(p.returncode == 3 and "destination_exists" in p.stderr, "existing output refused: %s" % p.stderr)
        check(L.tree_snapshot(again) == before, "existing output untouched")

        # --allow-partial packs a subset, and validate needs --allow-partial to accept it.
        case = os.path.join(tmp, "partial")
        inp = L.make_inputs(os.path.join(case, "in"), n=5)
        os.remove(os.path.join(inp["tensors"], "0003.safetensors"))
        out = os.path.join(case, "out")
        p = L.pack(inp, out)
        check(p.returncode == 3 and "missing_file" in p.stderr and not os.path.exists(out), "missing tensor refused")
        p = L.pack(inp, out, extra=["--allow-partial"])
        check(p.returncode == 0, "partial pack: %s" % p.stderr)
        rc, rep, _ = L.validate(out)
        check(rc == 3 and any(e["code"] == "incomplete" and e["rule"] == "COV-3" for e in rep["errors"]), "partial needs --allow-partial")
        rc, rep, _ = L.validate(out, "--allow-partial", "--verify-tensors")
        check(rc == 0, "partial validates with --allow-partial: %s" % (rep and rep["errors"]))
        m = json.load(open(os.path.join(out, "fidelity-dataset.json")))
        check(m["coverage"]["complete"] is False and m["coverage"]["missing_indices_sample"] == [3], "partial coverage")
        check(not L.check_dataset(out), "partial: independent checker")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

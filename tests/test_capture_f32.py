"""test_capture_f32.py - `fidelis capture --hidden-dtype f32` is a lossless reference capture.

* an f32 capture stores F32 hidden states with dtype_lossless true and no narrowing disclosure,
  and passes `validate --verify-tensors`;
* its rows, rounded to BF16 here (round to nearest even, from the definition), are bit for bit
  the default capture's rows: the two differ by storage only;
* two f32 captures compare as +0.0 KL, top-1 1.0, without the quantized_capture_dtype caveat;
  an f32 reference against a default (BF16) candidate carries the caveat for the candidate only;
* `pack --hidden-dtype f32` keeps F32 records as they are and refuses a BF16 record by name;
  `capture --form logit --hidden-dtype f32` is bad usage (exit 4).
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_util as C  # noqa: E402
import compare_util as U  # noqa: E402

UTC = "2026-11-01T00:00:00Z"


def capture(model, panel, out, *extra):
    return C.run("capture", "--model", model, "--panel", panel, "--out", out, "--created-utc", UTC,
                 "--quiet", *extra)


def records(ds):
    """{index: (rows, dtype)} of a dataset's capture."""
    man = json.load(open(os.path.join(ds, "capture", "manifest.json")))
    return {r["index"]: U.st_read(os.path.join(ds, "capture", r["file"]), r["key"])
            for r in man["records"]}


def compare(ref, cand, out):
    rc, text = C.run("compare", ref, cand, "--out", out, "--quiet")
    path = os.path.join(out, "comparison-receipt.json")
    return rc, text, (json.load(open(path)) if os.path.exists(path) else None)


def codes(receipt):
    return [d["code"] for d in receipt["disclosures"]]


def main():
    C.need_cli()
    tmp = tempfile.TemporaryDirectory(prefix="fdl-capture-f32-")
    t = tmp.name
    model = os.path.join(t, "model")
    rc, text = C.run("model", "init", "--preset", "tiny-random", "--seed", "3", model)
    if not C.check(rc == 0, f"model init: {rc} {text}"):
        C.finish()
    panel = os.path.join(model, "panel.jsonl")

    bf, f1, f2 = (os.path.join(t, x) for x in ("bf16", "f32-a", "f32-b"))
    rc, text = capture(model, panel, bf)
    C.check(rc == 0, f"default capture: {rc} {text}")
    for out, extra in ((f1, ["--threads", "1"]), (f2, ["--threads", "2"])):
        rc, text = capture(model, panel, out, "--hidden-dtype", "f32", *extra)
        if not C.check(rc == 0, f"f32 capture {extra}: {rc} {text}"):
            C.finish()

    man = U.load_manifest(f1)
    cap = man["capture"]
    C.check(cap["dtype"] == "F32" and cap["dtype_lossless"] is True,
            f"f32 capture: dtype {cap['dtype']}, dtype_lossless {cap['dtype_lossless']}")
    C.check(U.load_manifest(bf)["capture"]["dtype_lossless"] is False,
            "default capture stays BF16 with dtype_lossless false")
    C.check("stored_dtype_narrowed" not in [d["code"] for d in man.get("disclosures", [])],
            "f32 capture discloses no narrowing")
    rc, text = C.run("validate", f1, "--verify-tensors")
    C.check(rc == 0, f"validate --verify-tensors f32: {rc} {text}")

    wide, narrow = records(f1), records(bf)
    C.check(sorted(wide) == sorted(narrow), "same records")
    same = True
    for i in wide:
        (w, wdt), (n, ndt) = wide[i], narrow[i]
        same &= wdt == "F32" and ndt == "BF16" and w.dtype == np.float32
        same &= np.array_equal(U.bf16_bits(w), U.bf16_bits(n))
    C.check(same, "BF16(f32 capture rows) == default capture rows, bit for bit")
    C.check(any(not np.array_equal(w, U.bf16_to_f32(U.bf16_bits(w))) for w, _ in wide.values()),
            "the f32 rows hold bits that BF16 drops (the option stores something more)")

    rc, text, r = compare(f1, f2, os.path.join(t, "cmp-ff"))
    if C.check(r is not None, f"compare f32 f32: {rc} {text}"):
        C.check(r["metric"]["value"] == 0.0 and str(r["metric"]["value"]) == "0.0",
                f"f32 self-compare KL {r['metric']['value']}")
        C.check(r["top1_agreement"] == 1.0, f"top-1 agreement {r['top1_agreement']}")
        C.check("quantized_capture_dtype" not in codes(r), f"no storage caveat: {codes(r)}")
    rc, text, r = compare(f1, bf, os.path.join(t, "cmp-fb"))
    if C.check(r is not None, f"compare f32 bf16: {rc} {text}"):
        caveats = [d for d in r["disclosures"] if d["code"] == "quantized_capture_dtype"]
        C.check(len(caveats) == 1 and "candidate" in caveats[0]["detail"],
                f"one caveat, for the BF16 candidate: {caveats}")

    # pack: F32 records kept with --hidden-dtype f32; a BF16 record refused by name.
    rec0 = json.load(open(os.path.join(f1, "capture", "manifest.json")))["records"][0]
    w0, _ = U.st_read(os.path.join(f1, "capture", rec0["file"]), rec0["key"])
    rc, text = C.run("capture", "--model", model, "--panel", panel, "--out", os.path.join(t, "x"),
                     "--form", "logit", "--hidden-dtype", "f32")
    C.check(rc == 4 and "--hidden-dtype" in text, f"logit form + --hidden-dtype: {rc} {text}")
    C.check(not os.path.exists(os.path.join(t, "x")), "nothing written on bad usage")
    src = os.path.join(t, "dumps")
    os.mkdir(src)
    meta = os.path.join(t, "meta.json")
    line = json.loads(open(panel).readline())
    with open(os.path.join(t, "one.jsonl"), "w") as f:
        f.write(json.dumps({"index": 0, "tokens": line["tokens"]}) + "\n")
    with open(meta, "w") as f:
        json.dump({"role": "root", "form": "hidden", "lane": "other", "device": "cpu",
                   "dataset": {"id": "fidelity--test.f32-pack"},
                   "weights": {"repository": "local/test", "revision": None},
                   "engine": {"name": "test", "version": "0"}, "dtypes": {"forward": "F32"},
                   "tokenizer": {"id": "test"}}, f)
    U.st_write(os.path.join(src, "0000.safetensors"), "hidden_states", w0, "F32")
    base = ["pack", "--panel", os.path.join(t, "one.jsonl"), "--tensors", src, "--meta", meta,
            "--head", os.path.join(f1, "head", "weight.safetensors")]
    rc, text = C.run(*base, "--hidden-dtype", "f32", "--out", os.path.join(t, "p32"))
    if C.check(rc == 0, f"pack --hidden-dtype f32: {rc} {text}"):
        got = records(os.path.join(t, "p32"))[0]
        C.check(got[1] == "F32" and np.array_equal(got[0], w0), "pack keeps the F32 rows")
        C.check(U.load_manifest(os.path.join(t, "p32"))["capture"]["dtype_lossless"] is True,
                "pack f32: dtype_lossless")
    os.remove(os.path.join(src, "0000.safetensors"))
    U.st_write(os.path.join(src, "0000.safetensors"), "hidden_states", U.bf16_bits(w0), "BF16")
    rc, text = C.run(*base, "--hidden-dtype", "f32", "--out", os.path.join(t, "pbf"))
    C.check(rc == 3 and "BF16" in text and "--hidden-dtype f32" in text,
            f"pack --hidden-dtype f32 refuses BF16: {rc} {text}")
    C.check(not os.path.exists(os.path.join(t, "pbf")), "nothing written on the refusal")
    C.finish()


if __name__ == "__main__":
    main()

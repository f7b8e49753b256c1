"""test_synth.py - `fidelis synth` writes an honest, conformant, deterministic pair.

* both datasets validate (`fidelis validate`), and pack's manifests declare what was done:
  random weights (blocking disclosure), the candidate's int4 head in scope and head blocks,
  the decode in the runtime's weights_decode;
* the candidate head equals an independent numpy int4 round trip of the reference head
  (symmetric, groups of 32 along the hidden axis, ties to even, back to BF16), and the
  hidden states are identical on both sides;
* the same seed gives the same tensors, another seed different ones; an existing --out is
  refused and left alone;
* compare refuses the pair without --own-heads (HEAD-1b) and measures it with it (HEAD-1c).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

SIZES = ["--vocab", "500", "--hidden", "64", "--contexts", "5", "--tokens-per-context", "40"]


def synth(out, seed="0", *extra):
    return subprocess.run([U.CLI, "synth", "--out", out, "--seed", seed, *SIZES, *extra],
                          capture_output=True, text=True)


def int4_rtn_bf16(w, group=32):
    v, h = w.shape
    g = w.reshape(v, h // group, group).astype(np.float32)
    amax = np.abs(g).max(axis=2, keepdims=True)
    scale = (amax / np.float32(7.0)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(scale > 0, np.rint(g / scale), np.float32(0))
    q = np.clip(q, -7, 7).astype(np.float32)
    return U.bf16_bits((q * scale).astype(np.float32).reshape(v, h))


def main():
    tmp = tempfile.TemporaryDirectory(prefix="fdl-synth-")
    out = os.path.join(tmp.name, "pair")
    p = synth(out, "0", "--json")
    if not U.check(p.returncode == 0, f"synth exit {p.returncode}: {p.stderr}"):
        U.finish("test_synth")
    res = json.loads(p.stdout)
    ref, cand = os.path.join(out, "reference"), os.path.join(out, "candidate")
    U.check(sorted(os.listdir(out)) == ["candidate", "reference", "synth.json"], f"{os.listdir(out)}")
    U.check(not [x for x in os.listdir(tmp.name) if "staging" in x], "no staging left behind")
    for ds in (ref, cand):
        v = subprocess.run([U.CLI, "validate", ds], capture_output=True, text=True)
        U.check(v.returncode in (0, 2), f"validate {ds}: {v.returncode} {v.stdout}{v.stderr}")
    mr, mc = U.load_manifest(ref), U.load_manifest(cand)
    U.check(res["reference_dataset_sha256"] == mr["dataset_sha256"], "reported sha256")
    U.check(res["scored_rows"] == 5 * 39, "scored rows")
    U.check(mr["capture"]["capture_content_digest"] == mc["capture"]["capture_content_digest"],
            "same hidden states on both sides")
    U.check(mr["head"]["tensor_content_sha256"] != mc["head"]["tensor_content_sha256"], "heads differ")
    U.check(mc["head"]["quantized"] is True and mc["head"]["bits"] == 4 and
            mc["head"]["source"] == "artifact_dequantized", f"candidate head block {mc['head']}")
    U.check("lm_head=quantized:int4@4" in mc["scope"]["scope_digest"], mc["scope"]["scope_digest"])
    U.check(mr["dataset"]["role"] == "root" and mc["dataset"]["role"] == "quant", "roles")
    for m in (mr, mc):
        U.check(any(d["code"] == "randomly_initialised_weights" and d["severity"] == "blocking"
                    for d in m["disclosures"]), "random weights disclosed")
    with open(os.path.join(cand, mc["runtime"]["file"])) as f:
        rt = json.load(f)
    wd = rt["capture_tool"]["weights_decode"]
    U.check(wd["method"] == "affine-weight-reconstruction" and wd["quantization_config"]["group_size"] == 32,
            f"weights_decode {wd}")
    wr, wc = U.head_of(ref), U.head_of(cand)
    U.check(wr.shape == (500, 64), "head shape")
    U.check(np.array_equal(U.bf16_bits(wc), int4_rtn_bf16(wr)), "candidate head = int4 RTN g32 of the reference")
    hr = [a for _, a in U.capture_tensors(ref)]
    hc = [a for _, a in U.capture_tensors(cand)]
    U.check(all(np.array_equal(a, b) for a, b in zip(hr, hc)), "hidden states identical")

    # determinism in the seed
    again = synth(os.path.join(tmp.name, "again"), "0")
    other = synth(os.path.join(tmp.name, "other"), "1")
    U.check(again.returncode == 0 and other.returncode == 0, "synth reruns")
    ma = U.load_manifest(os.path.join(tmp.name, "again", "candidate"))
    mo = U.load_manifest(os.path.join(tmp.name, "other", "candidate"))
    U.check(ma["capture"]["capture_content_digest"] == mc["capture"]["capture_content_digest"] and
            ma["head"]["tensor_content_sha256"] == mc["head"]["tensor_content_sha256"], "same seed, same data")
    U.check(mo["capture"]["capture_content_digest"] != mc["capture"]["capture_content_digest"],
            "another seed, other data")
    again2 = synth(out, "0")
    U.check(again2.returncode == 3 and "destination_exists" in again2.stderr, f"existing out: {again2.stderr}")
    U.check(U.load_manifest(ref) == mr, "existing out left alone")

    # compare
    rc, so, se = U.compare(ref, cand, "--out", os.path.join(tmp.name, "c1"))
    U.check(rc == 3 and U.refusal_code(se) == "head_mismatch" and "--own-heads" in se, f"without --own-heads: {se}")
    rc, so, se = U.compare(ref, cand, "--own-heads", "--out", os.path.join(tmp.name, "c2"))
    U.check(rc == 2, f"with --own-heads: exit {rc} {se}")
    if rc == 2:
        r = U.receipt(os.path.join(tmp.name, "c2"))
        U.check(r["comparison_kind"] == "measurement", "a measurement")
        U.check([d["code"] for d in r["disclosures"]] ==
                ["native_head_replay", "weights_reconstructed", "head_only_difference"],
                f"disclosures {[d['code'] for d in r['disclosures']]}")
        U.check(sorted(r["per_domain"]) == ["arithmetic", "code", "dialogue", "prose"], "domains")
        U.check(r["kl"]["mean"] > 0 and r["top1_agreement"] < 1.0, "the int4 head moves the distribution")
        U.check(U.schema_errors(r) == [], f"schema {U.schema_errors(r)[:3]}")
        U.check("KL(reference || candidate)" in so and "highest-KL contexts" in so, "summary printed")
    U.finish("test_synth")


if __name__ == "__main__":
    main()

"""test_capture.py - `fidelis capture` seals what fidelis' engine computes.

* a capture of the tiny random model over its built-in panel passes
  `fidelis validate --verify-tensors`, declares fidelis' engine and its source digests, and
  holds the engine's own outputs (checked against tool_engine on one record);
* the same capture under --threads 1/2/3 and every ISA the CPU has is byte-identical, file by
  file, given one created_utc;
* a second capture of the same model compares as `reproduction_confirmation` (+0.0 KL);
* the model quantized to int4 g32 (`fidelis quantize`) is captured from its reconstruction
  (role quant, weights_decode) and compares with KL > 0 and the weights_reconstructed
  disclosure;
* the logit form stores each row's full logits;
* config_sha256 and checkpoint_identity_sha256 equal hashlib over the files, for the model, the
  same weights resharded under an index (same outputs), and a directory with a stray
  *.safetensors the model does not load (in the identity all the same);
* refusals: an existing --out (left alone), a token outside the vocabulary, a left-padded
  mask, a model directory without config.json; nothing is left behind.
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

UTC = "2026-11-01T00:00:00Z"


def run(*args):
    return subprocess.run([U.CLI, *args], capture_output=True, text=True)


def capture(model, panel, out, *extra):
    return run("capture", "--model", model, "--panel", panel, "--out", out, "--created-utc", UTC,
               "--quiet", *extra)


tree = U.tree


def isas():
    flags = open("/proc/cpuinfo").read()
    have = ["scalar"]
    if " avx2 " in flags and " fma " in flags:
        have.append("avx2")
    if " avx512f " in flags:
        have.append("avx512")
    return have


def identity(model):
    """(config_sha256, checkpoint_identity_sha256) recomputed from the files: the canonical JSON
    [{bytes, path, sha256}] over config.json, the index and every *.safetensors, by name."""
    files = []
    for f in sorted(os.listdir(model)):
        if f in ("config.json", "model.safetensors.index.json") or (
                f.endswith(".safetensors") and len(f) > 12):
            data = open(os.path.join(model, f), "rb").read()
            files.append({"bytes": len(data), "path": f, "sha256": hashlib.sha256(data).hexdigest()})
    cfg = next(x["sha256"] for x in files if x["path"] == "config.json")
    text = json.dumps(files, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return cfg, hashlib.sha256(text.encode()).hexdigest()


def reshard(src, dst):
    """src's model.safetensors as two shards and an index, every tensor at its own bytes."""
    os.makedirs(dst)
    for f in os.listdir(src):
        if f != "model.safetensors":
            shutil.copy(os.path.join(src, f), dst)
    raw = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    wm = {}
    for i in range(2):
        shard = "model-%05d-of-00002.safetensors" % (i + 1)
        h, parts, off = {}, [], 0
        for k in names[i::2]:
            lo, hi = header[k]["data_offsets"]
            h[k] = {"dtype": header[k]["dtype"], "shape": header[k]["shape"],
                    "data_offsets": [off, off + hi - lo]}
            parts.append(raw[8 + n + lo:8 + n + hi])
            off += hi - lo
            wm[k] = shard
        hb = json.dumps(h, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        with open(os.path.join(dst, shard), "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + b"".join(parts))
    with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f)


def check_identity(ds, model, what):
    w = U.load_manifest(ds)["weights"]
    cfg, ckpt = identity(model)
    U.check(w["config_sha256"] == cfg, f"{what}: config_sha256 {w['config_sha256']} != {cfg}")
    U.check(w["checkpoint_identity_sha256"] == ckpt,
            f"{what}: checkpoint_identity_sha256 {w['checkpoint_identity_sha256']} != {ckpt}")


def compare(ref, cand, out):
    p = run("compare", ref, cand, "--out", out, "--quiet")
    rc_path = os.path.join(out, "comparison-receipt.json")
    receipt = json.load(open(rc_path)) if os.path.exists(rc_path) else None
    return p, receipt


def main():
    tmp = tempfile.TemporaryDirectory(prefix="fdl-capture-")
    t = tmp.name
    model = os.path.join(t, "model")
    p = run("model", "init", "--preset", "tiny-random", "--seed", "1", model)
    if not U.check(p.returncode == 0, f"model init: {p.returncode} {p.stderr}"):
        U.finish("test_capture")
    panel = os.path.join(model, "panel.jsonl")

    a = os.path.join(t, "a")
    p = capture(model, panel, a, "--json")
    if not U.check(p.returncode == 0, f"capture: {p.returncode} {p.stdout}{p.stderr}"):
        U.finish("test_capture")
    res = json.loads(p.stdout)
    U.check(res["records"] == 4 and res["scored_rows"] == 4 * 63 and not res["quantized"],
            f"result {res}")
    v = run("validate", a, "--verify-tensors")
    U.check(v.returncode == 0, f"validate --verify-tensors: {v.returncode} {v.stdout}{v.stderr}")
    man = U.load_manifest(a)
    U.check(man["dataset_sha256"] == res["dataset_sha256"], "reported dataset_sha256")
    rt = json.load(open(os.path.join(a, man["runtime"]["file"])))
    text = json.dumps(rt)
    U.check('"fidelis"' in text and "src/engine/" in text and "src/num/gemm.c" in text,
            "runtime names fidelis' engine and its source digests")
    U.check(not [x for x in os.listdir(t) if "staging" in x], "no staging left behind")

    # The stored rows are the engine's hidden states (BF16 of tool_engine's float32 output).
    tool = os.path.join(os.environ["FDL_BUILD"], "tests", "tool_engine")
    if U.check(os.path.exists(tool), f"{tool} built"):
        line = json.loads(open(panel).readline())
        ids = ",".join(str(x) for x in line["tokens"])
        hid = os.path.join(t, "h.npy")
        q = subprocess.run([tool, model, "--ids", ids, "--path", "prefill", "--hidden", hid],
                           capture_output=True, text=True)
        if U.check(q.returncode == 0, f"tool_engine: {q.stderr}"):
            want = U.bf16_bits(np.load(hid)[:-1].astype(np.float32))
            rec = [r for r in json.load(open(os.path.join(a, "capture", "manifest.json")))["records"]
                   if r["index"] == line["index"]][0]
            got, dt = U.st_read(os.path.join(a, "capture", rec["file"]), rec["key"])
            U.check(dt == "BF16" and np.array_equal(U.bf16_bits(got), want),
                    "stored hidden states = BF16(engine hidden states)")

    # Bit-identical whatever the threads or ISA.
    want = tree(a)
    for extra in (["--threads", "1"], ["--threads", "2"], ["--threads", "3"],
                  *[["--isa", i] for i in isas()]):
        o = os.path.join(t, "a-" + "-".join(x.strip("-") for x in extra))
        p = capture(model, panel, o, *extra)
        if U.check(p.returncode == 0, f"capture {extra}: {p.stderr}"):
            U.check(tree(o) == want, f"capture {extra} is byte-identical")

    # A second capture is a reproduction; the quantized twin is a measurement with KL > 0.
    p, rc = compare(a, os.path.join(t, "a-threads-1"), os.path.join(t, "cmp-self"))
    U.check(rc is not None and rc["comparison_kind"] == "reproduction_confirmation",
            f"reproduction: {p.returncode} {p.stderr} {rc and rc['comparison_kind']}")
    if rc:
        U.check(rc["metric"]["value"] == 0.0, "reproduction KL is +0.0")

    qm = os.path.join(t, "model-int4")
    p = run("quantize", "--codec", "int4", "--group-size", "32", "--scope", "mlp", model, qm)
    if U.check(p.returncode == 0, f"quantize: {p.returncode} {p.stderr}"):
        b = os.path.join(t, "b")
        p = capture(qm, panel, b, "--json")
        if U.check(p.returncode == 0, f"capture int4: {p.stdout}{p.stderr}"):
            U.check(json.loads(p.stdout)["quantized"], "quantized reported")
            mb = U.load_manifest(b)
            U.check(mb["dataset"]["role"] == "quant" and mb["weights"]["quantized"], "role quant")
            p, rc = compare(a, b, os.path.join(t, "cmp-q"))
            if U.check(rc is not None, f"compare a b: {p.returncode} {p.stdout}{p.stderr}"):
                U.check(rc["comparison_kind"] == "measurement", rc["comparison_kind"])
                U.check(rc["metric"]["value"] > 0, "int4 KL > 0")
                codes = [d["code"] for d in rc["disclosures"]]
                U.check("weights_reconstructed" in codes, f"disclosures {codes}")

    # The logit form.
    lg = os.path.join(t, "logits")
    p = capture(model, panel, lg, "--form", "logit", "--path", "decode")
    if U.check(p.returncode == 0, f"capture logits: {p.stderr}"):
        v = run("validate", lg, "--verify-tensors")
        U.check(v.returncode == 0, f"validate logits: {v.stdout}{v.stderr}")
        rec = json.load(open(os.path.join(lg, "capture", "manifest.json")))["records"][0]
        U.check(rec["shape"] == [63, 272] and rec["dtype"] == "F32", f"logit record {rec}")

    # The identity is the files' digests, whether they come from the loader's one read (the
    # model's files) or from a read of their own (a stray *.safetensors nothing loads).
    check_identity(a, model, "single file")
    sharded = os.path.join(t, "model-sharded")
    reshard(model, sharded)
    p = capture(sharded, panel, os.path.join(t, "c"), "--json")
    if U.check(p.returncode == 0, f"capture sharded: {p.stdout}{p.stderr}"):
        check_identity(os.path.join(t, "c"), sharded, "sharded")
        U.check(json.loads(p.stdout)["capture_content_digest"] == res["capture_content_digest"],
                "sharded: the same outputs as the single file")
        U.check(U.load_manifest(os.path.join(t, "c"))["weights"]["checkpoint_identity_sha256"]
                != man["weights"]["checkpoint_identity_sha256"], "sharded: another identity")
    stray = os.path.join(t, "model-stray")
    shutil.copytree(model, stray)
    with open(os.path.join(stray, "notes.safetensors"), "wb") as f:
        f.write(b"not loaded by the model, named by the identity")
    p = capture(stray, panel, os.path.join(t, "d"))
    if U.check(p.returncode == 0, f"capture stray: {p.stdout}{p.stderr}"):
        check_identity(os.path.join(t, "d"), stray, "stray")

    # Refusals, with nothing left behind.
    before = sorted(os.listdir(t))
    p = capture(model, panel, a)
    U.check(p.returncode == 3 and "exists" in p.stderr, f"existing out: {p.returncode} {p.stderr}")
    U.check(tree(a) == want, "existing out untouched")
    lines = [json.loads(x) for x in open(panel)]
    bad = os.path.join(t, "bad-vocab.jsonl")
    with open(bad, "w") as f:
        for x in lines:
            x = dict(x)
            x["tokens"] = list(x["tokens"])
            x["tokens"][5] = 272 if x["index"] == 2 else x["tokens"][5]
            f.write(json.dumps(x) + "\n")
    p = capture(model, bad, os.path.join(t, "r1"))
    U.check(p.returncode == 3 and "272" in p.stderr, f"out of vocabulary: {p.returncode} {p.stderr}")
    left = os.path.join(t, "left-pad.jsonl")
    with open(left, "w") as f:
        for x in lines:
            x = dict(x)
            x["mask"] = [0, 0] + [1] * (len(x["tokens"]) - 2)
            f.write(json.dumps(x) + "\n")
    p = capture(model, left, os.path.join(t, "r2"))
    U.check(p.returncode == 3 and "right padding" in p.stderr, f"left pad: {p.returncode} {p.stderr}")
    nocfg = os.path.join(t, "nocfg")
    os.mkdir(nocfg)
    p = capture(nocfg, panel, os.path.join(t, "r3"))
    U.check(p.returncode in (3, 4) and "config.json" in p.stderr, f"no config: {p.returncode} {p.stderr}")
    left = set(os.listdir(t)) - set(before) - {"bad-vocab.jsonl", "left-pad.jsonl", "nocfg"}
    U.check(not left, f"nothing left behind: {sorted(left)}")
    U.finish("test_capture")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The README's worked example ("Worked example: where an engine diverges") runs as written.

This test writes the example's input files into $FDL_BUILD/attribution-example/ (kept after
the run, so a reader can repeat the commands there), reads the shell block from README.md, runs
it with `fidelis` meaning $FDL_CLI, and checks what the commands produced against values
computed here: the divergence step and candidates, the reference's preference, and the
attributed path."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln_util as K  # noqa: E402

TESTS = os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(TESTS, "..", "README.md")
HEADING = "## Worked example: where an engine diverges"
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    failures += 0 if cond else 1


def readme_block():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    at = text.find(HEADING)
    if at < 0:
        return None
    m = re.search(r"```sh\n(.*?)```", text[at:], re.S)
    return m.group(1) if m else None


def write_inputs(d, np):
    with open(K.REQUEST, encoding="utf-8") as f:
        fixture = json.load(f)
    K.write_json(os.path.join(d, "kiln-receipt.json"), fixture["source"]["kiln_receipt"])
    K.write_json(os.path.join(d, "vllm-receipt.json"), fixture["source"]["vllm_receipt"])
    K.write_json(os.path.join(d, "model-identity.json"), fixture["model_identity"])
    with open(os.path.join(d, "source_commit"), "w", encoding="ascii") as f:
        f.write(fixture["source"]["source_commit"] + "\n")
    with open(os.path.join(d, "prompt.txt"), "w", encoding="ascii") as f:
        f.write("Count to four.")
    K.write_json(os.path.join(d, "prompt.json"), [101, 102, 103])
    # Both engines agree on 5, 6, 7; then vllm (the reference) says 9 and kiln says 8.
    K.write_json(os.path.join(d, "vllm.json"), [5, 6, 7, 9, 4])
    K.write_json(os.path.join(d, "kiln.json"), [5, 6, 7, 8, 4])
    V = 1000
    rng = np.random.default_rng(8)
    ref = rng.normal(0.0, 1.0, V).astype(np.float32)
    ref[9], ref[8] = 6.5, 6.0  # the reference prefers vllm's token by half a logit
    np.save(os.path.join(d, "reference.npy"), ref)
    # Three paths of the candidate engine, in evaluation order: eager full logits agree with
    # the reference, graph-replayed full logits pick kiln's token, greedy selection too.
    eager = np.stack([rng.normal(0.0, 1.0, V) for _ in range(4)]).astype(np.float32)
    eager[-1] = ref + rng.normal(0.0, 0.01, V).astype(np.float32)
    eager[-1][9], eager[-1][8] = 6.4, 6.1
    graph = eager.copy()
    graph[-1][8] = 6.6
    np.save(os.path.join(d, "eager.npy"), eager)
    np.save(os.path.join(d, "graph.npy"), graph)
    K.write_json(os.path.join(d, "greedy.json"), [5, 6, 7, 8])
    return ref, eager, graph


def main():
    build = os.environ.get("FDL_BUILD")
    if not K.CLI or not os.access(K.CLI, os.X_OK) or not build:
        print("skip: FDL_CLI or FDL_BUILD is not set")
        return 77
    if not os.path.exists(K.REQUEST):
        print("skip: the Kiln vectors (../shared) are not beside the checkout")
        return 77
    try:
        import numpy as np
    except ImportError:
        print("skip: numpy is not installed")
        return 77
    block = readme_block()
    check(block is not None, "README has the worked example's sh block")
    if block is None:
        return 1
    d = os.path.join(build, "attribution-example")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    ref, eager, graph = write_inputs(d, np)
    bindir = tempfile.mkdtemp(prefix="fdl-readme-bin-")
    try:
        os.symlink(os.path.abspath(K.CLI), os.path.join(bindir, "fidelis"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=d,
                           env=env, capture_output=True, text=True)
        check(p.returncode == 0, "the README block runs (exit %d): %s" % (p.returncode, p.stderr.strip()[-400:]))
        if p.returncode != 0:
            return 1
        with open(os.path.join(d, "request.json"), encoding="ascii") as f:
            req = json.load(f)
        with open(os.path.join(d, "attribution.json"), encoding="ascii") as f:
            rec = json.load(f)
        check([t["token_id"] for t in req["continuation_prefix"]] == [5, 6, 7],
              "request: common prefix 5, 6, 7")
        cands = {c["engine"]: c["token_id"] for c in req["candidates"]}
        check(cands == {"kiln": 8, "vllm": 9}, "request: candidates kiln 8, vllm 9 (%s)" % cands)
        check(req["input_token_ids"] == [101, 102, 103, 5, 6, 7], "request: prompt + common prefix")
        check(req["input_token_ids_sha256"] == K.canonical_sha256(req["input_token_ids"]),
              "request: input ids hash")
        want_argmax = int(np.argmax(ref))
        check(rec["reference"]["argmax"] == want_argmax == 9, "record: reference argmax 9")
        verdict = rec["reference"]["verdict"]
        check(verdict["preferred_candidate"] == "vllm" and verdict["margin"] == 0.5,
              "record: the reference prefers vllm by 0.5 (%s)" % verdict)
        check(rec["attribution"] == {"label": "first_divergent_path", "path": "graph"},
              "record: the first divergent path is graph (%s)" % rec["attribution"])
        check(rec["record_sha256"] == K.canonical_sha256({k: v for k, v in rec.items() if k != "record_sha256"}),
              "record: self-hash")
        check("OK" in p.stdout and p.stdout.count("OK") >= 2, "check: both files OK")
    finally:
        shutil.rmtree(bindir, ignore_errors=True)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

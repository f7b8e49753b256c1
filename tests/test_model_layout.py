#!/usr/bin/env python3
"""One rule for which weights a model directory holds (issue 20, item 6): transformers' rule for
a local directory, model.safetensors when present, else the shard index. A directory holding
model A as model.safetensors and a different model B as an index and shards must be model A in
`generate`, `capture` and `quantize` alike: each output equals the one made from a directory
holding A alone, and differs from B's."""
import hashlib
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli, run  # noqa: E402,F401
import engine_models as em  # noqa: E402


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-layout-")
    try:
        P = lambda *a: os.path.join(t, *a)  # noqa: E731
        c = em.make_config(dtype="BF16")
        em.write_model(P("A"), c, em.make_weights(c, 1))
        em.write_model(P("B"), c, em.make_weights(c, 2), shards=2)
        os.mkdir(P("both"))
        for n in os.listdir(P("A")):
            shutil.copyfile(P("A", n), P("both", n))
        for n in os.listdir(P("B")):
            if n != "config.json":
                shutil.copyfile(P("B", n), P("both", n))
        with open(P("panel.jsonl"), "w") as f:
            f.write('{"index": 0, "tokens": [1, 2, 3, 4, 5], "window_id": "w-0", "domain": "d"}\n')

        logits = {}
        for m in ("A", "B", "both"):
            rc, msg = run("generate", "--model", P(m), "--ids", "[1,2,3]", "--logits-out",
                          P("l-%s.npy" % m))
            check(rc == 0, "generate %s (exit %d) %s" % (m, rc, msg.strip()[-200:]))
            logits[m] = np.load(P("l-%s.npy" % m)) if rc == 0 else None
        if all(v is not None for v in logits.values()):
            check(np.array_equal(logits["both"], logits["A"]) and
                  not np.array_equal(logits["A"], logits["B"]),
                  "generate: a directory with both is model.safetensors' model")

        ds = {}
        for m in ("A", "both"):
            rc, msg = run("capture", "--model", P(m), "--panel", P("panel.jsonl"), "--out",
                          P("ds-" + m), "--created-utc", "2026-01-01T00:00:00Z", "--id", "x",
                          "--repository", "local/x", "--json")
            check(rc == 0, "capture %s (exit %d) %s" % (m, rc, msg.strip()[-200:]))
            ds[m] = msg
        tensors = {}
        for m in ("A", "both"):
            d = P("ds-" + m)
            found = sorted(os.path.join(r, n) for r, _, fs in os.walk(d) for n in fs
                           if n.endswith(".safetensors"))
            tensors[m] = [digest(p) for p in found]
        check(tensors["A"] and tensors["A"] == tensors["both"],
              "capture: a directory with both stores model.safetensors' hidden states")

        for m in ("A", "both"):
            rc, msg = run("quantize", P(m), P("q-" + m))
            check(rc == 0, "quantize %s (exit %d) %s" % (m, rc, msg.strip()[-200:]))
        check(os.path.exists(P("q-both", "model.safetensors")) and
              not os.path.exists(P("q-both", "model.safetensors.index.json")) and
              digest(P("q-both", "model.safetensors")) == digest(P("q-A", "model.safetensors")),
              "quantize: a directory with both quantizes model.safetensors, and writes no index")
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Finite, accepted weights whose forward pass overflows (issue 20, item 4): nothing non-finite
is ever published. `generate` (logits and greedy, prefill and decode) and `capture --form
logit` refuse with exit 3, naming the stage (layer output, final norm or logit) and the
position, and leave no output and no staging behind; the message never names a staging path.
Cases: an untied head at the BF16 maximum; tied embeddings at the BF16 maximum; Qwen3.5 with
A_log = 100 (the chunked prefill overflows, the recurrent decode does not). A rope_theta of
1e-30 (once undefined behaviour in fdl_eng_sincos) is refused by name when the model loads.
Each case has a valid twin that runs, so the refusal is the mutation's doing."""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli, run  # noqa: E402,F401
import engine_models as em  # noqa: E402
import qwen35_models as qm  # noqa: E402

BF16_MAX = 3.3895313892515355e38


def llama(d, edit=None, tied=False):
    c = em.make_config(dtype="BF16")
    c["tie_word_embeddings"] = tied
    w = em.make_weights(c, 5)
    if edit:
        edit(c, w)
    em.write_model(d, c, w)
    return d


def qwen35(d, a_log=None):
    c = qm.make_config(layers=2)
    w = qm.make_weights(c, 3)
    for k in w:
        if a_log is not None and k.endswith("A_log"):
            w[k][:] = a_log
    qm.write_model(d, c, w)
    return d


def panel(path):
    with open(path, "w") as f:
        for i in range(2):
            f.write(json.dumps({"index": i, "tokens": [1, 2, 3, 4, 5, 6], "window_id": "w-%d" % i,
                                "domain": "d"}) + "\n")
    return path


def litter(t):
    return [n for n in os.listdir(t) if "staging" in n]


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-overflow-")
    try:
        P = lambda *a: os.path.join(t, *a)  # noqa: E731
        pan = panel(P("panel.jsonl"))
        ids = "[1,2,3,4,5,6,7,8]"

        def head_max(c, w):
            w["lm_head.weight"][:] = BF16_MAX

        def embed_max(c, w):
            w["model.embed_tokens.weight"][:] = BF16_MAX

        cases = [
            ("head at the BF16 maximum", llama(P("head"), head_max), ("prefill", "decode"),
             "a logit is infinite at position 0 (token id 0)"),
            ("tied embeddings at the BF16 maximum", llama(P("tied"), embed_max, tied=True),
             ("prefill", "decode"), "a logit is"),
            ("Qwen3.5 A_log = 100", qwen35(P("alog"), 100.0), ("prefill",),
             "the output of layer 0 is NaN at position 0"),
        ]
        twins = [llama(P("twin")), llama(P("twin-tied"), tied=True), qwen35(P("twin35"))]
        for d in twins:
            for path in ("prefill", "decode"):
                out = P("twin-%s-%s.npy" % (os.path.basename(d), path))
                rc, msg = run("generate", "--model", d, "--ids", ids, "--path", path,
                              "--logits-out", out)
                ok = rc == 0 and np.isfinite(np.load(out)).all()
                check(ok, "valid twin %s %s runs with finite logits (exit %d) %s" %
                      (os.path.basename(d), path, rc, msg.strip()[-200:]))
        for what, d, paths, needle in cases:
            for path in paths:
                for outs in (["--logits-out", P("l.npy")], ["--greedy-out", P("g.json")],
                             ["--logits-out", P("l.npy"), "--greedy-out", P("g.json")]):
                    rc, msg = run("generate", "--model", d, "--ids", ids, "--path", path, *outs)
                    check(rc == 3 and "overflowed" in msg and needle in msg,
                          "%s, generate %s %s: exit 3 naming the stage and position (exit %d) %s"
                          % (what, path, " ".join(outs[::2]), rc, msg.strip()[-300:]))
                    check(not os.path.exists(P("l.npy")) and not os.path.exists(P("g.json")),
                          "%s, generate %s: nothing published" % (what, path))
                out = P("cap-%s" % path)
                rc, msg = run("capture", "--model", d, "--panel", pan, "--out", out, "--form",
                              "logit", "--path", path)
                check(rc == 3 and "overflowed" in msg and "staging" not in msg,
                      "%s, capture --form logit %s: exit 3, no staging path in the message "
                      "(exit %d) %s" % (what, path, rc, msg.strip()[-300:]))
                check(not os.path.exists(out) and not litter(t),
                      "%s, capture %s: no dataset and no staging left" % (what, path))
        # Qwen3.5's recurrent decode stays finite on the same weights: it runs.
        rc, msg = run("generate", "--model", P("alog"), "--ids", ids, "--path", "decode",
                      "--logits-out", P("alog-decode.npy"))
        check(rc == 0 and np.isfinite(np.load(P("alog-decode.npy"))).all(),
              "Qwen3.5 A_log = 100 decode: finite, published (exit %d) %s" % (rc, msg[-200:]))

        # rope_theta below 1: refused by name at load, by every command that loads a model.
        def tiny_theta(c, w):
            c["rope_theta"] = 1e-30

        d = llama(P("theta"), tiny_theta)
        rc, msg = run("generate", "--model", d, "--ids", ids, "--logits-out", P("t.npy"))
        check(rc == 3 and "rope_theta" in msg and "at least 1" in msg,
              "rope_theta 1e-30: generate refuses by name (exit %d) %s" % (rc, msg.strip()))
        rc, msg = run("capture", "--model", d, "--panel", pan, "--out", P("cap-theta"))
        check(rc == 3 and "rope_theta" in msg and not litter(t),
              "rope_theta 1e-30: capture refuses by name (exit %d) %s" % (rc, msg.strip()))
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

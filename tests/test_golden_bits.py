#!/usr/bin/env python3
"""test_golden_bits.py - the promise "the same bytes on any x86-64 machine", proven against
values committed in the repo (tests/golden/digests.json) rather than assumed.

The recipe, fixed: every tiny preset of `fidelis model init` (seed 0) captured over its own
panel in each form (hidden BF16, logit) on each path (prefill, decode); its int4 twin
(`fidelis quantize --codec int4 --group-size 16 --scope mlp`) captured in hidden form; and
`fidelis compare` of the reference and the twin's hidden captures. Pinned: each capture's
`capture_content_digest`, and the SHA-256 of compare's tokenwise-kld.npy. The int4 twin's
weight files are pinned through its capture (the capture digests what it ran).

Another CPU (Zen 4 or 5, Sapphire Rapids, an AVX2-only part), thread count or ISA must give the
same values: the engine's and the compare's arithmetic contracts (docs/NUMERICS.md) say so.
Changing the arithmetic on purpose means re-pinning in the same commit, with the reason in its
message: `tests/test_golden_bits.py --update` rewrites the file from this machine's values.
A preset without a pinned value fails (a new preset is pinned when it is added)."""
import hashlib
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_util as U  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "digests.json")
PRESETS = ["tiny-random", "llama-tiny-random", "mistral-tiny-random", "qwen2-tiny-random",
           "qwen3-moe-tiny-random", "qwen3.5-tiny-random", "qwen3.5-moe-tiny-random"]


def capture(model, panel, out, *opts):
    rc, text = U.run("capture", "--model", model, "--panel", panel, "--out", out, *opts)
    if not U.check(rc == 0, "capture %s %s: exit %d" % (out, " ".join(opts), rc)):
        print(text[-400:])
        return None
    with open(os.path.join(out, "fidelity-dataset.json")) as f:
        return json.load(f)["capture"]["capture_content_digest"]


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def preset_values(w, preset):
    """{recipe step: digest} for one preset."""
    got = {}
    m = os.path.join(w, preset)
    rc, text = U.run("model", "init", "--preset", preset, "--seed", "0", m)
    if not U.check(rc == 0, "model init %s: exit %d %s" % (preset, rc, text[-200:])):
        return got
    panel = os.path.join(m, "panel.jsonl")
    for form in ("hidden", "logit"):
        for path in ("prefill", "decode"):
            out = os.path.join(w, "%s-%s-%s" % (preset, form, path))
            got["%s %s %s" % (preset, form, path)] = capture(m, panel, out, "--form", form,
                                                              "--path", path)
    q = m + "-int4"
    rc, text = U.run("quantize", "--codec", "int4", "--group-size", "16", "--scope", "mlp", m, q)
    if not U.check(rc == 0, "quantize %s: exit %d %s" % (preset, rc, text[-200:])):
        return got
    qout = os.path.join(w, preset + "-int4-hidden")
    got["%s int4 hidden prefill" % preset] = capture(q, panel, qout, "--form", "hidden")
    cmp = os.path.join(w, preset + "-compare")
    rc, text = U.run("compare", os.path.join(w, "%s-hidden-prefill" % preset), qout, "--out", cmp)
    if U.check(rc in (0, 2), "compare %s: exit %d %s" % (preset, rc, text[-300:])):
        got["%s compare tokenwise-kld.npy" % preset] = sha256_file(
            os.path.join(cmp, "tokenwise-kld.npy"))
    return got


def main():
    U.need_cli()
    update = "--update" in sys.argv[1:]
    pinned = {}
    if os.path.exists(GOLDEN):
        with open(GOLDEN) as f:
            pinned = json.load(f)
    got = {}
    with tempfile.TemporaryDirectory(prefix="fdl-golden-") as w:
        for preset in PRESETS:
            got.update(preset_values(w, preset))
    if update:
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        with open(GOLDEN, "w") as f:
            json.dump(got, f, indent=2, sort_keys=True)
            f.write("\n")
        print("wrote %s (%d values)" % (GOLDEN, len(got)))
        U.finish()
    for key in sorted(got):
        U.check(key in pinned, "%s: no pinned value (run with --update and commit)" % key)
        if key in pinned:
            U.check(got[key] == pinned[key], "%s: %s, pinned %s" % (key, got[key], pinned[key]))
    for key in sorted(set(pinned) - set(got)):
        U.check(False, "%s: pinned but not computed" % key)
    U.finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Outputs that land inside inputs, or on each other (issue 20, item 3): every command refuses,
before any work (exit 4, a usage error naming both options), an output that is or lies inside
one of its inputs or another output, however the path is spelt (a symlink, "..", "./", a
trailing slash), and the inputs are left exactly as they were (`validate` still passes on a
dataset someone tried to write into). Each refusal has a twin with the output elsewhere that
runs, so the refusal is the place's doing."""
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli, run  # noqa: E402,F401


def tree_digest(d):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(d)):
        dirs.sort()
        for n in sorted(files):
            p = os.path.join(root, n)
            h.update(os.path.relpath(p, d).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(f.read())
        h.update(("dirs:" + ",".join(dirs)).encode())
    return h.hexdigest()


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-places-")
    try:
        P = lambda *a: os.path.join(t, *a)  # noqa: E731
        rc, msg = run("synth", "--out", P("pair"))
        assert rc == 0, msg
        rc, msg = run("model", "init", "--preset", "tiny-random", P("model"))
        assert rc == 0, msg
        ref, cand, model = P("pair", "reference"), P("pair", "candidate"), P("model")
        panel = P("model", "panel.jsonl")
        os.symlink(ref, P("ref-link"))
        rc, msg = run("compare", ref, cand, "--own-heads", "--out", P("cmp"))
        assert rc in (0, 2), msg
        with open(P("ids.json"), "w") as f:
            json.dump([1, 2, 3], f)
        before = {d: tree_digest(d) for d in (ref, cand, model, P("cmp"))}

        # (what, argv, the two names the message must hold, a twin argv that runs)
        cases = [
            ("compare --out inside REFERENCE", ["compare", ref, cand, "--own-heads", "--out",
                                                os.path.join(ref, "cmp")],
             ("--out", "argument 1"), ["compare", ref, cand, "--own-heads", "--out", P("cmp2")]),
            ("compare --out inside CANDIDATE via ..", ["compare", ref, cand, "--own-heads",
                                                       "--out", cand + "/../candidate/x"],
             ("--out", "argument 2"), None),
            ("compare --out inside REFERENCE via a symlink", ["compare", ref, cand, "--own-heads",
                                                              "--out", P("ref-link", "c")],
             ("--out", "argument 1"), None),
            ("compare --out is REFERENCE (trailing slash)", ["compare", ref, cand, "--own-heads",
                                                             "--out", ref + "/"],
             ("--out", "same path"), None),
            ("capture --out inside --model", ["capture", "--model", model, "--panel", panel,
                                              "--out", os.path.join(model, "ds")],
             ("--out", "--model"), ["capture", "--model", model, "--panel", panel, "--out",
                                    P("ds")]),
            ("capture --layers inside --out", ["capture", "--model", model, "--panel", panel,
                                               "--out", P("z"), "--layers",
                                               P("z", "L.safetensors")],
             ("--layers", "--out"), ["capture", "--model", model, "--panel", panel, "--out",
                                     P("z2"), "--layers", P("z2-layers.safetensors")]),
            ("capture --out equals --layers", ["capture", "--model", model, "--panel", panel,
                                               "--out", P("z"), "--layers", P("z")],
             ("--out", "--layers"), None),
            ("generate two outputs at one path", ["generate", "--model", model, "--ids", "[1,2]",
                                                  "--logits-out", P("x"), "--greedy-out",
                                                  "./" + os.path.relpath(P("x"))],
             ("--logits-out", "--greedy-out"), ["generate", "--model", model, "--ids", "[1,2]",
                                                 "--logits-out", P("x.npy"), "--greedy-out",
                                                 P("g.json")]),
            ("generate --logits-out inside --model", ["generate", "--model", model, "--ids",
                                                      "[1,2]", "--logits-out",
                                                      os.path.join(model, "l.npy")],
             ("--logits-out", "--model"), None),
            ("generate --ids-out is the --ids file", ["generate", "--model", model, "--ids",
                                                      "@" + P("ids.json"), "--ids-out",
                                                      P("ids.json")],
             None, None),
            ("quantize OUT inside MODEL", ["quantize", model, os.path.join(model, "q")],
             ("argument 2", "argument 1"), ["quantize", model, P("q")]),
            ("pack --out inside --tensors", ["pack", "--panel", panel, "--tensors", model,
                                             "--meta", P("ids.json"), "--out",
                                             os.path.join(model, "p")],
             ("--out", "--tensors"), None),
            ("validate --report inside DIR", ["validate", ref, "--report",
                                              os.path.join(ref, "r.json")],
             ("--report", "argument 1"), ["validate", ref, "--report", P("r.json")]),
            ("report --out inside its receipt", ["report", P("cmp"), "--out",
                                                 os.path.join(P("cmp"), "page.html")],
             ("--out", "argument 1"), ["report", P("cmp"), "--out", P("page.html")]),
        ]
        for what, argv, names, twin in cases:
            rc, msg = run(*argv)
            if names is None:
                # --ids @FILE is text, not a path option: the output must simply not overwrite it
                check(rc != 0 and json.load(open(P("ids.json"))) == [1, 2, 3],
                      "%s: refused, the input is kept (exit %d) %s" % (what, rc, msg.strip()))
                continue
            check(rc == 4 and all(n in msg for n in names),
                  "%s: exit 4 naming %s (exit %d) %s" % (what, names, rc, msg.strip()))
            if twin:
                rc, msg = run(*twin)
                check(rc in (0, 2), "%s, the twin elsewhere runs (exit %d) %s" %
                      (what, rc, msg.strip()[-200:]))
        for d, dg in before.items():
            check(tree_digest(d) == dg, "input %s is unchanged" % os.path.basename(d))
        rc, msg = run("validate", ref)
        check(rc == 0, "the reference still validates (exit %d) %s" % (rc, msg.strip()[-200:]))
        check(not [n for n in os.listdir(t) if "staging" in n], "no staging left")
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`quantize` never copies a byte from outside MODEL into OUT (issue 20, item 2). MODEL's other
files are copied only when they are regular files inside MODEL, or links that resolve inside it,
or, for a Hugging Face cache snapshot (<repo>/snapshots/<rev>/f -> ../../blobs/<hash>), inside
that repository's blobs/. A link to /proc/self/environ, to a file beside MODEL or to a token
file elsewhere is refused by name (exit 3), and OUT is not created; nothing is left behind.
The same rule (fdl_model_member) holds for every model file in every command: generate and
capture take the snapshot too, and refuse a config.json linked from outside (issue 20, item 10)."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli, run  # noqa: E402,F401


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-quantize-links-")
    try:
        P = lambda *a: os.path.join(t, *a)  # noqa: E731
        rc, msg = run("model", "init", "--preset", "tiny-random", P("base"))
        assert rc == 0, msg
        secret = P("token")
        with open(secret, "w") as f:
            f.write("hf_SECRET_TOKEN_VALUE\n")

        def model_with(name, link_name, target):
            d = P(name)
            shutil.copytree(P("base"), d)
            os.symlink(target, os.path.join(d, link_name))
            return d

        bad = [
            ("a link to /proc/self/environ", "special_tokens_map.json", "/proc/self/environ"),
            ("a link to a token file outside", "special_tokens_map.json", secret),
            ("a relative link out of MODEL", "added_tokens.json", "../token"),
        ]
        for i, (what, name, target) in enumerate(bad):
            d = model_with("bad%d" % i, name, target)
            out = P("out-bad%d" % i)
            rc, msg = run("quantize", d, out)
            check(rc == 3 and name in msg and "outside the model directory" in msg,
                  "%s: refused by name (exit %d) %s" % (what, rc, msg.strip()))
            check(not os.path.exists(out), "%s: OUT not created" % what)
        for root, _, files in os.walk(t):
            for n in files:
                p = os.path.join(root, n)
                if os.path.islink(p) or not os.path.isfile(p) or p == secret:
                    continue
                with open(p, "rb") as f:
                    check(b"hf_SECRET_TOKEN_VALUE" not in f.read(), "no copy of the token in %s" % p)
        check(not [n for n in os.listdir(t) if "staging" in n], "no staging left")

        # A link inside MODEL is copied (its bytes, as a regular file).
        d = P("inside")
        shutil.copytree(P("base"), d)
        os.mkdir(os.path.join(d, "extra"))
        with open(os.path.join(d, "extra", "notes.txt"), "w") as f:
            f.write("inside\n")
        os.symlink("extra/notes.txt", os.path.join(d, "notes.txt"))
        rc, msg = run("quantize", d, P("out-inside"))
        copied = P("out-inside", "notes.txt")
        check(rc == 0 and os.path.isfile(copied) and not os.path.islink(copied) and
              open(copied).read() == "inside\n",
              "a link inside MODEL is copied as a regular file (exit %d) %s" % (rc, msg.strip()[-200:]))

        # A Hugging Face cache snapshot: every file a link into ../../blobs/.
        repo = P("hub", "models--org--tiny")
        snap = os.path.join(repo, "snapshots", "0123abcd")
        os.makedirs(snap)
        os.makedirs(os.path.join(repo, "blobs"))
        for n in os.listdir(P("base")):
            blob = os.path.join(repo, "blobs", "blob-" + n)
            shutil.copyfile(P("base", n), blob)
            os.symlink(os.path.join("..", "..", "blobs", "blob-" + n), os.path.join(snap, n))
        rc, msg = run("quantize", snap, P("out-hub"))
        check(rc == 0 and open(P("out-hub", "tokenizer.json"), "rb").read() ==
              open(P("base", "tokenizer.json"), "rb").read(),
              "a Hugging Face snapshot's blob links are copied (exit %d) %s" % (rc, msg.strip()[-200:]))
        # One rule in every command: generate and capture take the same snapshot.
        rc, msg = run("generate", "--model", snap, "--ids", "[1,2]", "--greedy-out", P("g.json"))
        check(rc == 0, "generate takes the Hugging Face snapshot (exit %d) %s" % (rc, msg.strip()[-200:]))
        rc, msg = run("capture", "--model", snap, "--panel", os.path.join(snap, "panel.jsonl"),
                      "--out", P("ds-hub"))
        check(rc == 0, "capture takes the Hugging Face snapshot (exit %d) %s" % (rc, msg.strip()[-200:]))
        d = P("cfg-outside")
        shutil.copytree(P("base"), d)
        os.rename(os.path.join(d, "config.json"), P("config-outside.json"))
        os.symlink(P("config-outside.json"), os.path.join(d, "config.json"))
        for argv in (["generate", "--model", d, "--ids", "[1]", "--greedy-out", P("g2.json")],
                     ["quantize", d, P("q-cfg")]):
            rc, msg = run(*argv)
            check(rc == 3 and "outside the model directory" in msg,
                  "%s: a config.json linked from outside MODEL is refused (exit %d) %s" %
                  (argv[0], rc, msg.strip()))
        # ... but not a snapshot link that leaves the repository.
        os.symlink(secret, os.path.join(snap, "special_tokens_map.json"))
        rc, msg = run("quantize", snap, P("out-hub2"))
        check(rc == 3 and "special_tokens_map.json" in msg and not os.path.exists(P("out-hub2")),
              "a snapshot link outside blobs/ is refused (exit %d) %s" % (rc, msg.strip()))
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

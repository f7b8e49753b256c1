#!/usr/bin/env python3
"""No byte of user origin reaches a terminal raw (issue 20, item 9; docs/MESSAGES.md). Paths
and words on the command line holding ESC, BEL, a C1 control (U+009B as UTF-8, and a raw 0x9B
byte), U+0085 and U+202E go through every message that names them: "cannot open", "wrote X",
unknown command and option, bad --threads; and a sealed receipt's strings holding the same
reach neither `report --markdown` nor the HTML page raw. Nothing a terminal acts on, and no
bidi override, may appear in any output channel."""
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli  # noqa: E402,F401


EVIL = b"x\x1b[31m\x07\xc2\x9b\xc2\x85\xe2\x80\xae\x9by"
RAW = (b"\x1b", b"\x07", b"\xc2\x9b", b"\xc2\x85", b"\xe2\x80\xae", b"\x9b")


def run(*args):
    p = subprocess.run([os.fsencode(CLI)] + [a if isinstance(a, bytes) else a.encode()
                                             for a in args], capture_output=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def clean(out):
    return [r for r in RAW if r in out]


def reseal(doc):
    body = copy.deepcopy(doc)
    body["receipt_sha256"] = ""
    c = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                   allow_nan=False).encode("utf-8")
    doc["receipt_sha256"] = hashlib.sha256(c).hexdigest()
    return doc


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-inject-")
    try:
        T = t.encode()
        P = lambda *a: os.path.join(T, *a)  # noqa: E731
        missing = P(b"missing-" + EVIL)
        rc, out = run("synth", "--out", P(b"pair"))
        assert rc == 0, out
        cases = [
            ("generate --model", ["generate", "--model", missing, "--ids", "[1]"]),
            ("capture --model", ["capture", "--model", missing, "--panel", missing, "--out",
                                 P(b"o1")]),
            ("quantize MODEL", ["quantize", missing, P(b"o2")]),
            ("compare REFERENCE", ["compare", missing, P(b"pair/candidate"), "--out", P(b"o3")]),
            ("validate DIR", ["validate", missing]),
            ("inspect DIR", ["inspect", missing]),
            ("report RECEIPT_DIR", ["report", missing]),
            ("check --root", ["check", P(b"pair/reference/fidelity-dataset.json"), "--root",
                              missing]),
            ("unknown command", [b"cmd-" + EVIL]),
            ("unknown option", ["validate", b"--opt-" + EVIL, P(b"pair")]),
            ("bad --threads", ["compare", P(b"pair/reference"), P(b"pair/candidate"), "--out",
                               P(b"o4"), "--threads", EVIL]),
            ("synth wrote X", ["synth", "--out", P(b"synth-" + EVIL)]),
            ("places message", ["compare", P(b"pair/reference"), P(b"pair/candidate"),
                                "--own-heads", "--out", P(b"pair/reference/" + EVIL)]),
        ]
        for what, argv in cases:
            rc, out = run(*argv)
            check(not clean(out), "%s: no raw control or bidi byte in the output (exit %d) %r"
                  % (what, rc, out[-300:]))
        # compare and report on a receipt directory whose name is hostile
        rc, out = run("compare", P(b"pair/reference"), P(b"pair/candidate"), "--own-heads",
                      "--out", P(b"cmp-" + EVIL))
        check(rc in (0, 2) and not clean(out), "compare wrote X: no raw byte (exit %d) %r" %
              (rc, out[-300:]))
        rc, out = run("report", P(b"cmp-" + EVIL), "--out", P(b"page-" + EVIL + b".html"))
        check(rc == 0 and not clean(out), "report wrote X: no raw byte (exit %d) %r" %
              (rc, out[-300:]))
        # a sealed receipt holding the characters in its strings
        d = P(b"hostile")
        shutil.copytree(P(b"cmp-" + EVIL), d)
        for n in os.listdir(d):
            if n.endswith(b".html"):
                os.remove(os.path.join(d, n))
        rp = os.path.join(d, b"comparison-receipt.json")
        doc = json.load(open(rp, encoding="utf-8"))
        evil = EVIL.decode("utf-8", errors="ignore")  # the receipt is UTF-8: no raw 0x9B
        doc["candidate"]["label"] = "cand " + evil
        doc["reference"]["label"] = "ref \u202e" + evil
        doc["disclosures"][0]["detail"] = "detail " + evil
        with open(rp, "w", encoding="utf-8") as f:
            f.write(json.dumps(reseal(doc), indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        rc, out = run("report", d, "--markdown")
        check(rc == 0 and not clean(out), "report --markdown: no raw byte (exit %d) %r" %
              (rc, out[-300:]))
        check(b"\\u202e" in out, "report --markdown shows U+202E as its escape")
        rc, out = run("report", d)
        page = open(os.path.join(d, b"report.html"), "rb").read() if rc == 0 else b""
        check(rc == 0 and not clean(page) and not clean(out),
              "the HTML page holds no raw control or bidi character (exit %d)" % rc)
        check(b"\\u202e" in page, "the HTML page shows U+202E as its escape")
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()

"""test_quote_cli.py - hostile strings through the CLI (issue 14, issue 9 items 5 and 15).

1. A dataset whose head `file` is the issue-14 crash path (or any ~300-byte multibyte path)
   gets a complete report: plain and --json (valid JSON), exit 3, the path quoted whole-character
   with its length, never "out of memory".
2. Manifest strings with terminal escapes (dataset.id, window ids, domains) never reach the
   terminal raw from validate, inspect or compare.
3. pack refuses control characters in identifiers.
4. tensor ls prints the names "" and "-" differently.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

CLI = U.CLI
check = U.check
HERE = os.path.dirname(os.path.abspath(__file__))
CRASH = os.path.join(HERE, "..", "fuzz", "corpus", "fuzz_manifest", "issue14-long-multibyte-path.json")
ESC = "\x1b]0;pwned\x07\x1b[2J\u009b1m"


def run(*args):
    return subprocess.run([CLI, *args], capture_output=True)


def terminal_safe(raw, what):
    """Output is valid UTF-8 with no C0 (other than LF/TAB), DEL or C1 control."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, "%s: output is not UTF-8 (%s)" % (what, e))
        return ""
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    check(not bad, "%s: raw control characters %r reach the terminal" % (what, bad[:5]))
    return text


def set_head_file(ds, path):
    # Raw UTF-8 in the file, as the fuzzer's input had it; the seal is left broken on purpose.
    p = os.path.join(ds, "fidelity-dataset.json")
    with open(p, encoding="utf-8") as f:
        m = json.load(f)
    m["head"]["file"] = path
    with open(p, "w", encoding="utf-8") as f:
        f.write(json.dumps(m, indent=2, ensure_ascii=False))


def validate_complete(ds, path, what):
    nbytes = len(path.encode("utf-8"))
    r = run("validate", ds)
    text = terminal_safe(r.stdout, what + " plain")
    check(r.returncode == 3, "%s plain: exit %d, want 3 (%s)" % (what, r.returncode, r.stderr))
    check(b"NOMEM" not in r.stderr and b"out of memory" not in r.stderr,
          "%s plain: blamed memory: %s" % (what, r.stderr))
    check("conformance:" in text, "%s plain: report incomplete:\n%s" % (what, text))
    check("(%d bytes)" % nbytes in text, "%s plain: the cut path does not say its length" % what)
    check("\ufffd" not in text, "%s plain: a character was cut in half" % what)
    r = run("validate", ds, "--json")
    check(r.returncode == 3, "%s --json: exit %d, want 3 (%s)" % (what, r.returncode, r.stderr))
    check(b"NOMEM" not in r.stderr, "%s --json: blamed memory: %s" % (what, r.stderr))
    try:
        rep = json.loads(r.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        check(False, "%s --json: not a JSON report (%s): %r" % (what, e, r.stdout[:200]))
        return
    codes = {e["code"] for e in rep["errors"] + rep["warnings"]}
    check(rep["error_count"] == len(rep["errors"]) and rep["structural_status"] == "invalid",
          "%s --json: incomplete report %s" % (what, rep))
    check("path_escape" in codes or "missing_file" in codes or "schema_invalid" in codes,
          "%s --json: the head path is not reported: %s" % (what, codes))
    quoted = [e["message"] for e in rep["errors"] + rep["warnings"] if "(%d bytes)" % nbytes in e["message"]]
    check(quoted, "%s --json: no finding quotes the path with its length" % what)
    for m in quoted:
        check("\u2026' (" in m, "%s --json: the cut is not marked with an ellipsis: %r" % (what, m))


def main():
    tmp = tempfile.mkdtemp(prefix="fdl-quote-")
    try:
        synth = os.path.join(tmp, "synth")
        r = run("synth", "--out", synth, "--vocab", "256", "--hidden", "64", "--contexts", "4",
                "--tokens-per-context", "16")
        if r.returncode != 0:
            print("synth failed: %s" % r.stderr.decode(errors="replace"), file=sys.stderr)
            sys.exit(1)
        ref = os.path.join(synth, "reference")

        # 1. issue 14: the fuzzer's path, and a plain ~300-byte multibyte one.
        if not os.path.exists(CRASH):
            print("skip: %s missing" % CRASH)
            sys.exit(77)
        with open(CRASH, encoding="utf-8") as f:
            crash_path = json.load(f)["daset"]["file"]
        for name, path in [("issue14", crash_path),
                           ("multibyte300", "head/" + "\u00e9\ufeff\u4e2d" * 36 + ".safetensors")]:
            ds = os.path.join(tmp, name)
            shutil.copytree(ref, ds)
            set_head_file(ds, path)
            validate_complete(ds, path, name)

        # 1b. a file on disk whose name is hostile bytes: a finding names it, escaped, and the
        # report still serialises.
        ds = os.path.join(tmp, "badname")
        shutil.copytree(ref, ds)
        with open(os.path.join(ds.encode(), b"capture", b"x\x1b[2J\xff\xfe.bin"), "wb") as f:
            f.write(b"x")
        r = run("validate", ds)
        text = terminal_safe(r.stdout, "unlisted hostile name plain")
        check(r.returncode == 3 and "'capture/x\\x1b[2J\\xff\\xfe.bin'" in text,
              "unlisted hostile name: rc %d, not quoted:\n%s" % (r.returncode, text))
        r = run("validate", ds, "--json")
        try:
            rep = json.loads(r.stdout.decode("utf-8"))
            check(r.returncode == 3 and "unlisted_file" in {e["code"] for e in rep["errors"]},
                  "unlisted hostile name --json: %s" % rep["errors"])
        except (UnicodeDecodeError, ValueError) as e:
            check(False, "unlisted hostile name --json: no report (%s) %r" % (e, r.stderr))

        # 2. escapes in manifest strings: validate, inspect and compare print them escaped.
        pair = os.path.join(tmp, "esc")
        shutil.copytree(synth, pair)

        def poison(m):
            m["dataset"]["id"] = "id" + ESC
            m["dataset"]["name"] = "name" + ESC
        for side in ("reference", "candidate"):
            U.edit_manifest(os.path.join(pair, side), poison)
        ds = os.path.join(pair, "reference")
        r = run("validate", ds)
        text = terminal_safe(r.stdout + r.stderr, "validate escapes")
        check("\\x1b]0;pwned\\x07" in text, "validate: the id is not shown escaped:\n%s" % text)
        r = run("inspect", ds)
        text = terminal_safe(r.stdout + r.stderr, "inspect escapes")
        check(r.returncode == 0 and "'id\\x1b]0;pwned\\x07\\x1b[2J\\u009b1m'" in text,
              "inspect: the id is not quoted and escaped (rc %d):\n%s" % (r.returncode, text))
        out = os.path.join(tmp, "cmp-out")
        r = run("compare", os.path.join(pair, "reference"), os.path.join(pair, "candidate"),
                "--own-heads", "--out", out)
        text = terminal_safe(r.stdout + r.stderr, "compare escapes")
        check(r.returncode in (0, 2, 3), "compare: rc %d\n%s" % (r.returncode, text))
        if r.returncode in (0, 2):
            check("\\x1b]0;pwned" in text, "compare: the id is not shown escaped:\n%s" % text)

        # 3. pack refuses control characters in identifiers (meta and panel).
        b = U.Builder()
        cases = [("dataset-id", {"meta": {"dataset": {"id": "fidelity--x\x1b[31mred"}}}, None),
                 ("engine-name", {"meta": {"engine": {"name": "eng\u0085ine"}}}, None),
                 ("domain", {}, lambda i: {"domain": "bad\x07bell"}),
                 ("window-id", {}, lambda i: {"window_id": "w\x1b%d" % i})]
        for what, kw, extra in cases:
            ds = b.pack("esc-" + what, tensors=b.random_hidden(), head=b.random_head(),
                        extra=extra, expect_ok=False, **kw)
            check(not os.path.exists(ds), "pack sealed a control character in %s" % what)
        for what, kw, extra in cases:
            work = b.path("in-esc-" + what)
            args = [CLI, "pack", "--panel", os.path.join(work, "panel.jsonl"), "--tensors",
                    os.path.join(work, "t"), "--head", os.path.join(work, "head.safetensors"),
                    "--meta", os.path.join(work, "meta.json"), "--out", b.path("again-" + what)]
            r = subprocess.run(args, capture_output=True)
            text = terminal_safe(r.stdout + r.stderr, "pack refusal " + what)
            check(r.returncode != 0 and "control character" in text,
                  "pack %s: rc %d, refusal does not say why:\n%s" % (what, r.returncode, text))

        # 4. tensor ls: names "" and "-" are told apart.
        st = os.path.join(tmp, "names.safetensors")
        hdr = {"": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
               "-": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]},
               "a\x1bb": {"dtype": "U8", "shape": [1], "data_offsets": [2, 3]}}
        h = json.dumps(hdr).encode()
        with open(st, "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + b"\x01\x02\x03")
        r = run("tensor", "ls", st)
        text = terminal_safe(r.stdout, "tensor ls")
        names = [line.split("\t")[0] for line in text.splitlines()]
        check(r.returncode == 0 and len(names) == 3 and len(set(names)) == 3,
              "tensor ls: names not distinct: %r" % names)
        check("''" in names and "'-'" in names and "'a\\x1bb'" in names,
              "tensor ls: names %r" % names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    U.finish("test_quote_cli")


if __name__ == "__main__":
    main()

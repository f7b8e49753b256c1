"""test_py_semantics.py - validate and compare read JSON values with the same Python rules
(json/py.h): int 63 == float 63.0, inside lists and dicts too, and True == 1, as the reference
tools' `==` does. Before one module held these rules, validate compared containers structurally
(0 != 0.0 inside a dict) and compare refused bool == int; each case below failed then.

Datasets are packed normally, then one sealed JSON file is edited and the whole seal chain above
it (other manifests naming its digest, checksums.txt, the top manifest) is redone, so the only
thing a check can object to is the value under test."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy  # noqa: F401  (compare_util needs it)
except ImportError:
    print("skipped: numpy is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

SEALED = ("capture/manifest.json", "panel/panel.json", "runtime/capture-runtime.json",
          "head/head.json")


def swap(v, old, new):
    if isinstance(v, dict):
        return {k: swap(x, old, new) for k, x in v.items()}
    if isinstance(v, list):
        return [swap(x, old, new) for x in v]
    return new if v == old else v


def rewrite(ds, rel, doc):
    """Reseals doc (fidelity recipe), writes it at rel; returns its (old, new) file digests."""
    p = os.path.join(ds, rel)
    with open(p, "rb") as f:
        old = hashlib.sha256(f.read()).hexdigest()
    doc["receipt_sha256"] = U.seal(doc, "receipt_sha256")
    data = (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    with open(p, "wb") as f:
        f.write(data)
    return old, hashlib.sha256(data).hexdigest()


def edit_sealed(src, dst, rel, fn):
    """A copy of dataset src at dst whose sealed file rel is edited by fn, every seal redone."""
    shutil.copytree(src, dst)
    with open(os.path.join(dst, rel), encoding="utf-8") as f:
        doc = json.load(f)
    fn(doc)
    todo, swaps = [(rel, doc)], []
    while todo:
        r, d = todo.pop()
        old, new = rewrite(dst, r, d)
        swaps.append((r, old, new))
        for other in SEALED:
            p = os.path.join(dst, other)
            if other == r or not os.path.exists(p):
                continue
            with open(p, encoding="utf-8") as f:
                od = json.load(f)
            sd = swap(od, old, new)
            if sd != od:
                todo.append((other, sd))
    ck = os.path.join(dst, "checksums.txt")
    with open(ck, encoding="utf-8") as f:
        text = f.read()
    for r, old, new in swaps:
        text = text.replace(f"{old}  {r}\n", f"{new}  {r}\n")
    with open(ck, "w", encoding="utf-8") as f:
        f.write(text)

    def fix(m):
        for _, old, new in swaps:
            m.update(swap(m, old, new))
        m["seal"]["checksums_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    U.edit_manifest(dst, fix)
    return dst


def validate(ds):
    p = subprocess.run([U.CLI, "validate", ds, "--json"], capture_output=True, text=True)
    try:
        errors = json.loads(p.stdout)["errors"]
    except (ValueError, KeyError):
        errors = [{"code": "unreadable report", "message": p.stderr}]
    return p.returncode, [(e.get("code"), e.get("message")) for e in errors]


def stack_detail(ref, cand, out):
    rc, _, se = U.compare(ref, cand, "--out", out)
    if not U.check(rc in (0, 2), f"compare exit {rc}: {se.strip()[:300]}"):
        return ""
    return U.receipt(out)["gates"]["stack"]["detail"]


def main():
    if not shutil.which(U.CLI) and not os.path.exists(U.CLI):
        print("skipped: the fidelis CLI is not built")
        sys.exit(77)
    B = U.Builder(seed=7)
    W = B.random_head()
    R = B.pack("R", tensors=B.random_hidden(), head=W)
    Q = B.pack("Q", tensors=B.random_hidden(), head=W, role="quant")

    # validate: panel.json mirrors the manifest's panel block (rule 7.2). 0.0 == 0 inside the
    # scoring_window dict, as Python says; a real difference is still caught.
    def window(v):
        return lambda d: d["scoring_window"].update(dropped_positions_total=v)
    same = edit_sealed(Q, B.path("V-float"), "panel/panel.json", window(0.0))
    rc, errs = validate(same)
    U.check(rc == 0 and not errs, f"validate: 0 == 0.0 inside scoring_window: {rc} {errs}")
    differs = edit_sealed(Q, B.path("V-differs"), "panel/panel.json", window(1))
    rc, errs = validate(differs)
    U.check(rc == 3 and [c for c, _ in errs] == ["panel_binding"],
            f"validate: 0 != 1 inside scoring_window is a panel_binding error: {rc} {errs}")

    # compare: the stack gate compares the runtime documents' source_files with Python's ==.
    def sources(**kv):
        return lambda d: d["source_files"].update(kv)
    RS = edit_sealed(R, B.path("C-ref"), "runtime/capture-runtime.json", sources(flag=True, n=1))
    QS = edit_sealed(Q, B.path("C-cand"), "runtime/capture-runtime.json", sources(flag=1, n=1.0))
    QD = edit_sealed(Q, B.path("C-diff"), "runtime/capture-runtime.json", sources(flag=2, n=1.0))
    for ds in (RS, QS, QD):
        rc, errs = validate(ds)
        U.check(rc == 0 and not errs, f"validate {os.path.basename(ds)}: {rc} {errs}")
    U.check("source_files equal ->" in stack_detail(RS, QS, B.path("o-same")),
            "compare: {flag: True, n: 1} == {flag: 1, n: 1.0}, so source_files are equal")
    U.check("source_files differ" in stack_detail(RS, QD, B.path("o-diff")),
            "compare: True != 2, so source_files differ")
    U.finish("test_py_semantics")


if __name__ == "__main__":
    main()

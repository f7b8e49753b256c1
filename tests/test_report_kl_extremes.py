#!/usr/bin/env python3
"""report on receipts whose tokenwise KL holds extreme finite values (issue 20, item 1).

Each case is a real receipt (synth + compare) whose tokenwise-kld.npy is replaced by a crafted
array, with the receipt's digest updated and the seal recomputed as the public recipe does:
only subnormal values (once a stack write below the histogram's bins), values near DBL_MAX
(once NaN/inf in SVG coordinates), a mix of both, and random arrays spanning many decades.
Every page must be written (exit 0) and every numeric SVG attribute must be a finite number.
Under the ASan build the same test catches any write outside the histogram's arrays.
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_report as tr  # noqa: E402  (canon, reseal, load, save, sha_file, run)

NUM_ATTR = re.compile(r'\s(x|y|x1|y1|x2|y2|cx|cy|r|width|height)="([^"]*)"')
POINTS = re.compile(r'\spoints="([^"]*)"')


def svg_numbers_finite(page):
    bad = []
    for m in NUM_ATTR.finditer(page):
        try:
            v = float(m.group(2))
        except ValueError:
            bad.append(m.group(0))
            continue
        if not np.isfinite(v):
            bad.append(m.group(0))
    for m in POINTS.finditer(page):
        for tok in re.split(r"[ ,]+", m.group(1).strip()):
            if tok and not np.isfinite(float(tok)):
                bad.append("points " + tok)
                break
    if re.search(r"\b(nan|inf)\b", page, re.IGNORECASE) and not bad:
        # a "nan"/"inf" in an attribute or tick label that the patterns above missed
        for m in re.finditer(r'="[^"]*\b(nan|inf)\b[^"]*"|>\s*-?(nan|inf)\s*<', page, re.I):
            bad.append(m.group(0))
    return bad


def craft(src, dst, kl):
    tr.copy_receipt(src, dst)
    doc = tr.load(dst)
    ext = doc.pop("fidelis_extensions", None)
    if ext:
        for name in ext.get("llamacpp_compatible", {}).get("arrays", {}):
            os.remove(os.path.join(dst, name))
    np.save(os.path.join(dst, "tokenwise-kld.npy"), kl.astype("<f8"))
    doc["tokenwise"]["sha256"] = tr.sha_file(os.path.join(dst, "tokenwise-kld.npy"))
    tr.save(dst, tr.reseal(doc))


def main():
    if not tr.CLI or not os.access(tr.CLI, os.X_OK):
        tr.skip("FDL_CLI is not an executable")
    import tempfile
    import shutil
    w = tempfile.mkdtemp(prefix="fdl-report-kl-")
    try:
        P = lambda *a: os.path.join(w, *a)
        rc, _, err = tr.run("synth", "--out", P("pair"))
        if rc != 0:
            raise SystemExit("synth failed: " + err)
        rc, _, err = tr.run("compare", P("pair", "reference"), P("pair", "candidate"),
                            "--own-heads", "--out", P("real"))
        if rc not in (0, 2):
            raise SystemExit("compare failed: " + err)
        n = np.load(P("real", "tokenwise-kld.npy")).shape[0]
        rng = np.random.default_rng(20)
        sub = np.where(np.arange(n) % 2 == 0, 5e-324, 1e-323)
        cases = {
            "subnormal": sub,
            "huge": np.full(n, 1.7e308),
            "huge-and-subnormal": np.where(np.arange(n) % 3 == 0, 1.79e308, sub),
            "zero-and-subnormal": np.where(np.arange(n) % 2 == 0, 0.0, 5e-324),
            "one-huge": np.concatenate([[1e308], np.full(n - 1, 1e-3)]),
        }
        for k in range(15):
            e = rng.uniform(-323.5, 308.2, n)
            cases["random-%d" % k] = np.minimum(10.0 ** e, np.finfo(np.float64).max)
        for name, kl in cases.items():
            craft(P("real"), P(name), kl)
            rc, _, err = tr.run("report", P(name))
            page_path = P(name, "report.html")
            tr.check(rc == 0 and os.path.exists(page_path),
                     "%s: report exits 0 and writes the page (exit %d) %s" % (name, rc, err))
            if rc != 0 or not os.path.exists(page_path):
                continue
            page = open(page_path, encoding="utf-8").read()
            bad = svg_numbers_finite(page)
            tr.check(not bad, "%s: every SVG coordinate is finite, got %s" % (name, bad[:4]))
            tr.check('id="chart-kl-hist"' in page, "%s: the histogram is drawn" % name)
            rc, md, err = tr.run("report", P(name), "--markdown")
            tr.check(rc == 0, "%s: --markdown exits 0 (exit %d) %s" % (name, rc, err))
        # fuzz_report's finding: a per_context index that is not an integer was cast from NaN
        tr.copy_receipt(P("real"), P("no-index"))
        doc = tr.load(P("no-index"))
        del doc["per_context"][0]["index"]
        tr.save(P("no-index"), tr.reseal(doc))
        rc, _, err = tr.run("report", P("no-index"))
        tr.check(rc == 3 and "index is not an integer" in err,
                 "a per_context entry without an integer index: verification fails, exit 3 "
                 "(exit %d) %s" % (rc, err))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d checks passed, %d failed" % (tr.PASSES[0], len(tr.FAILS)))
    sys.exit(1 if tr.FAILS else 0)


if __name__ == "__main__":
    main()

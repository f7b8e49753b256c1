#!/usr/bin/env python3
"""`fidelis report` (issue 12 items 2-4): the page of a real receipt (synth + compare), the page of
one that carries the llama.cpp-compatible block (written here, to the exact contract, into a copy
of a real receipt and re-sealed), both rendered by headless Chromium; the red page of a tampered
receipt or array; --compare (a side-by-side page, and refusals of receipts that cannot share
one); --markdown; escaping of hostile strings.

How the browser check is made reliable (docs/REPORT.md, "Testing"):
  * console: Chromium runs with --enable-logging=stderr --v=1, which logs every console message
    (any level, CSP violations included) as a line with "CONSOLE"; the page has no script, so
    any such line is a failure.
  * network: --log-net-log=FILE records every URL request the browser makes. Chromium's own
    background requests (component updates, time checks) carry initiator "not an origin"; a
    request made by the page carries the page's origin. Any URL_REQUEST_START_JOB with an origin
    as initiator is a request the page made.
  * both detectors are first proven on a control page that logs a console error and loads an
    image over http: if either is not caught there, the test fails (never a silent pass).
  * DOM: a second run with --dump-dom gives the DOM as the browser built it; each chart's <svg>
    is found by id there and its elements are counted.
  * pixels: the 1280x2000 PNG screenshot is decoded here (zlib + struct, all five PNG filters)
    and must not be blank (pixel variance, and enough non-white pixels).
Chromium (Debian's `chromium`) is installed by scripts/install-deps; without it the test exits 77,
which CI counts as a failure.

FDL_UPDATE_SCREENSHOT=1 copies the screenshot of the llama.cpp page to docs/report-screenshot.png.
"""
import copy
import hashlib
import html.parser
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

CLI = os.environ.get("FDL_CLI")
TESTS = os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FDL_BUILD", "")
FAILS = []
PASSES = [0]


def check(cond, what):
    if cond:
        PASSES[0] += 1
    else:
        FAILS.append(what)
        print("FAIL: " + what)


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def run(*args, stdout=subprocess.PIPE):
    p = subprocess.run([CLI, *args], stdout=stdout, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, (p.stdout or b"").decode(errors="replace"), p.stderr.decode(errors="replace")


def canon(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def reseal(doc):
    body = copy.deepcopy(doc)
    body["receipt_sha256"] = ""
    doc["receipt_sha256"] = hashlib.sha256(canon(body)).hexdigest()
    return doc


def load(d):
    with open(os.path.join(d, "comparison-receipt.json"), encoding="utf-8") as f:
        return json.load(f)


def save(d, doc):
    with open(os.path.join(d, "comparison-receipt.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def sha_file(p):
    with open(p, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def copy_receipt(src, dst):
    os.mkdir(dst)
    for n in os.listdir(src):
        if n != "report.html":
            shutil.copyfile(os.path.join(src, n), os.path.join(dst, n))


# ---- the llama.cpp-compatible block, written to the contract --------------------------------

def pct(a, q):
    return float(np.percentile(a, q))  # numpy's linear method, as elsewhere in fidelis


def add_llama_block(d, seed=0):
    """Writes the three arrays and fidelis_extensions.llamacpp_compatible into receipt dir d
    (exact names and shape of the contract) and re-seals the receipt. The per-token values are
    made up but consistent: the statistics are computed from the arrays written."""
    doc = load(d)
    kl = np.load(os.path.join(d, "tokenwise-kld.npy"))
    n = kl.shape[0]
    rng = np.random.default_rng(seed)
    lp_ref = np.log(rng.uniform(1e-4, 1.0, n))
    lp_cand = np.minimum(lp_ref + rng.normal(0, 0.3, n), 0.0)
    top1 = (rng.uniform(0, 1, n) < doc["top1_agreement"]).astype(np.uint8)
    names = {"tokenwise-logprob-ref.npy": lp_ref.astype("<f8"),
             "tokenwise-logprob-cand.npy": lp_cand.astype("<f8"),
             "tokenwise-top1.npy": top1.astype("|u1")}
    digests = {}
    for name, a in names.items():
        np.save(os.path.join(d, name), a)
        digests[name] = sha_file(os.path.join(d, name))
    pr, pc = np.exp(lp_ref), np.exp(lp_cand)
    dp = pc - pr
    ln_ratio = lp_ref - lp_cand  # per token: ln p_ref - ln p_cand
    se = lambda a: float(np.std(a, ddof=1) / np.sqrt(n))
    ppl_ref, ppl_cand = float(np.exp(-lp_ref.mean())), float(np.exp(-lp_cand.mean()))
    same = float(top1.mean())
    doc["fidelis_extensions"] = {"llamacpp_compatible": {
        "schema": "fidelis.llamacpp-compatible.v1", "n": int(n),
        "ppl_reference": {"value": ppl_ref, "stderr": ppl_ref * se(lp_ref)},
        "ppl_candidate": {"value": ppl_cand, "stderr": ppl_cand * se(lp_cand)},
        "ln_ppl_ratio": {"value": float(ln_ratio.mean()), "stderr": se(ln_ratio)},
        "ppl_ratio": {"value": float(np.exp(ln_ratio.mean())),
                      "stderr": float(np.exp(ln_ratio.mean())) * se(ln_ratio)},
        "logprob_correlation": float(np.corrcoef(lp_ref, lp_cand)[0, 1]),
        "delta_p": {"mean": float(dp.mean()), "mean_stderr": se(dp),
                    "rms": float(np.sqrt(np.mean(dp * dp))),
                    "rms_stderr": se(dp * dp) / (2 * float(np.sqrt(np.mean(dp * dp)))),
                    "max": float(dp.max()), "min": float(dp.min()),
                    "percentiles": {k: pct(dp, float(k)) for k in
                                    ("99.9", "99", "95", "90", "75", "50", "25", "10", "5", "1", "0.1")}},
        "same_top": {"value": same, "stderr": float(np.sqrt(same * (1 - same) / (n - 1)))},
        "kld": {"mean": float(kl.mean()), "stderr": se(kl), "max": float(kl.max()),
                "min": float(kl.min()),
                "percentiles": {k: pct(kl, float(k)) for k in
                                ("99.9", "99", "95", "90", "50", "10", "5", "1", "0.1")}},
        "arrays": digests,
        "definitions": "docs/COMPARE.md#llamacpp-compatible-statistics"}}
    save(d, reseal(doc))
    return doc


# ---- PNG decoding (no PIL) ------------------------------------------------------------------

def png_pixels(path):
    """(width, height, channels, numpy uint8 array [h, w*channels]) of an 8-bit RGB(A) PNG."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    i, idat, ihdr = 8, [], None
    while i < len(b):
        n, = struct.unpack(">I", b[i:i + 4])
        kind, data = b[i + 4:i + 8], b[i + 8:i + 8 + n]
        i += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat.append(data)
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unexpected PNG format %r" % (ihdr,))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = bytearray(stride)
    for r in range(h):
        ft = raw[r * (stride + 1)]
        line = bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        if ft == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif ft == 2:
            line = bytearray((a + c) & 255 for a, c in zip(line, prev))
        elif ft == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif ft == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                c = prev[x - bpp] if x >= bpp else 0
                up = prev[x]
                p = a + up - c
                pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (up if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        elif ft != 0:
            raise ValueError("PNG filter %d" % ft)
        out[r] = np.frombuffer(bytes(line), dtype=np.uint8)
        prev = line
    return w, h, bpp, out


# ---- the browser ----------------------------------------------------------------------------

CHROMIUM_FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-default-apps", "--hide-scrollbars"]


def chromium():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def read_netlog(path):
    """The net-log's events; the file may end without its closing brackets (the browser writes
    them at exit, and a headless run can end first)."""
    t = open(path, encoding="utf-8", errors="replace").read().rstrip()
    if not t.endswith("}"):
        t = t.rstrip(",\n") + "]}"
    d = json.loads(t)
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    return [(names.get(e["type"]), e.get("params", {})) for e in d.get("events", [])]


def page_requests(netlog):
    """URLs the page requested: URL requests whose initiator is an origin (the browser's own
    background requests have none)."""
    return [p.get("url") for kind, p in read_netlog(netlog)
            if kind == "URL_REQUEST_START_JOB" and p.get("initiator", "not an origin") != "not an origin"]


def render(page, work, tag):
    """Screenshot (1280x2000) with console and network logging, then the DOM. Returns
    (png path, console lines, page request URLs, dom text)."""
    exe = chromium()
    png = os.path.join(work, tag + ".png")
    net = os.path.join(work, tag + "-net.json")
    url = "file://" + os.path.abspath(page)
    p = subprocess.run([exe, *CHROMIUM_FLAGS, "--user-data-dir=" + os.path.join(work, tag + "-prof"),
                        "--enable-logging=stderr", "--v=1", "--log-net-log=" + net,
                        "--screenshot=" + png, "--window-size=1280,2000", url],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
    console = [l for l in p.stderr.decode(errors="replace").splitlines() if ":CONSOLE" in l]
    reqs = page_requests(net) if os.path.exists(net) else ["<no net-log written>"]
    d = subprocess.run([exe, *CHROMIUM_FLAGS, "--user-data-dir=" + os.path.join(work, tag + "-prof2"),
                        "--dump-dom", url], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       timeout=180)
    return png, console, reqs, d.stdout.decode(errors="replace")


class SvgCounter(html.parser.HTMLParser):
    """Elements inside each <svg id=...> of a DOM."""

    def __init__(self):
        super().__init__()
        self.counts, self.stack = {}, []

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.stack.append(dict(attrs).get("id", "?"))
            self.counts.setdefault(self.stack[-1], 0)
        elif self.stack:
            self.counts[self.stack[-1]] += 1

    def handle_startendtag(self, tag, attrs):
        if self.stack:
            self.counts[self.stack[-1]] += 1

    def handle_endtag(self, tag):
        if tag == "svg" and self.stack:
            self.stack.pop()


def svg_counts(dom):
    c = SvgCounter()
    c.feed(dom)
    return c.counts


def check_browser(page, work, tag, charts, minimum=20, plots=True, ink=0.02, colour=0.002):
    """Renders page and checks it (module docstring). ink: the least share of non-white pixels;
    colour: the least share of saturated (plot) pixels; plots False skips both."""
    png, console, reqs, dom = render(page, work, tag)
    check(not console, "%s: console messages: %s" % (tag, console[:3]))
    check(not reqs, "%s: the page made network requests: %s" % (tag, reqs[:3]))
    counts = svg_counts(dom)
    for c in charts:
        check(counts.get(c, 0) >= minimum,
              "%s: chart %s has %d SVG elements in the browser's DOM (want >= %d)"
              % (tag, c, counts.get(c, 0), minimum))
    check(os.path.exists(png), "%s: no screenshot" % tag)
    if os.path.exists(png):
        w, h, bpp, px = png_pixels(png)
        check((w, h) == (1280, 2000), "%s: screenshot is %dx%d, not 1280x2000" % (tag, w, h))
        grey = px.reshape(h, w, bpp)[:, :, :3].astype(np.float64).mean(axis=2)
        check(grey.var() > 100, "%s: screenshot looks blank (variance %.1f)" % (tag, grey.var()))
        check(not plots or (grey < 200).mean() > ink,
              "%s: screenshot has too few non-white pixels (%.4f)" % (tag, (grey < 200).mean()))
        rgb = px.reshape(h, w, bpp)[:, :, :3].astype(np.int16)
        spread = (rgb.max(axis=2) - rgb.min(axis=2)) > 60
        check(not plots or spread.mean() > colour,
              "%s: screenshot has no coloured plot pixels (%.4f)" % (tag, spread.mean()))
    return png, dom


def prove_detectors(work):
    """The console and network detectors must catch a page that does both."""
    ctl = os.path.join(work, "control.html")
    with open(ctl, "w") as f:
        f.write("<!DOCTYPE html><html><body><p>control</p><script>console.error('FDL-CONTROL')"
                "</script><img src=\"http://127.0.0.1:9/fdl-control.png\"></body></html>\n")
    _, console, reqs, dom = render(ctl, work, "control")
    if not any("FDL-CONTROL" in l for l in console):
        raise SystemExit("FAIL: the console detector missed the control page's console.error")
    if not any(u and "127.0.0.1:9/fdl-control.png" in u for u in reqs):
        raise SystemExit("FAIL: the network detector missed the control page's request: %r" % reqs)
    if "control" not in dom:
        raise SystemExit("FAIL: --dump-dom returned no DOM for the control page")
    PASSES[0] += 1


SINGLE_CHARTS = ["chart-kl-hist", "chart-kl-cdf", "chart-contexts", "chart-position", "chart-top1"]


def main():
    if not CLI or not os.access(CLI, os.X_OK):
        skip("FDL_CLI is not an executable")
    if not chromium():
        skip("chromium is not installed (scripts/install-deps installs it)")
    w = tempfile.mkdtemp(prefix="fdl-report-")
    try:
        P = lambda *a: os.path.join(w, *a)
        rc, _, err = run("synth", "--out", P("pair"))
        if rc != 0:
            raise SystemExit("synth failed: " + err)
        rc, _, err = run("compare", P("pair", "reference"), P("pair", "candidate"), "--own-heads",
                         "--out", P("real"))
        if rc not in (0, 2):
            raise SystemExit("compare failed: " + err)
        prove_detectors(w)

        # ---- a real receipt, made by this fidelis: compare writes the llama.cpp block ---------
        rc, out, err = run("report", P("real"))
        text0 = open(P("real", "report.html"), encoding="utf-8").read() if rc == 0 else ""
        check(rc == 0, "report of a real receipt: exit %d %s" % (rc, err))
        check('id="chart-deltap"' in text0 and "not in this receipt" not in text0,
              "a receipt from this compare has the \u0394p chart and the llama.cpp table")

        # ---- an older receipt: the same without the block and its arrays, resealed ----------
        copy_receipt(P("real"), P("r1"))
        old = load(P("r1"))
        for name in old.pop("fidelis_extensions")["llamacpp_compatible"]["arrays"]:
            os.remove(P("r1", name))
        save(P("r1"), reseal(old))
        rc, out, err = run("report", P("r1"))
        page1 = P("r1", "report.html")
        check(rc == 0 and os.path.exists(page1), "report of a real receipt: exit %d %s" % (rc, err))
        text1 = open(page1, encoding="utf-8").read()
        check("llama.cpp-compatible statistics: not in this receipt (made by an older fidelis)"
              in text1, "a receipt without the block must say so")
        check('id="chart-deltap"' not in text1, "no \u0394p chart without the block")
        check("<script" not in text1 and "http://www.w3.org/2000/svg" in text1,
              "the page has no script")
        check(not re.search(r"(src|href)=\"(https?:)?//", text1), "the page links nothing")
        check("default-src 'none'" in text1, "the page forbids every fetch (CSP)")
        doc1 = load(P("r1"))
        check(doc1["comparability"]["key"] in text1 and doc1["receipt_sha256"] in text1,
              "the verdict and identity show the key and the seal")
        rc, _, err = run("report", P("r1"))
        check(rc == 3 and "exists" in err, "a second report must not overwrite (exit %d)" % rc)
        check_browser(page1, w, "older", SINGLE_CHARTS)

        # ---- a receipt with the llama.cpp-compatible block, to the exact contract -----------
        copy_receipt(P("r1"), P("r2"))
        blk = add_llama_block(P("r2"))["fidelis_extensions"]["llamacpp_compatible"]
        rc, out, err = run("report", P("r2"), "--out", P("r2.html"))
        check(rc == 0, "report with the llama.cpp block: exit %d %s" % (rc, err))
        text2 = open(P("r2.html"), encoding="utf-8").read()
        check('id="chart-deltap"' in text2 and "not in this receipt" not in text2,
              "the block's page has the \u0394p chart and the table")
        check("%.6g" % blk["ppl_ratio"]["value"] in text2 and "%.6g" % blk["kld"]["mean"] in text2,
              "the llama.cpp table shows the block's numbers")
        check(blk["arrays"]["tokenwise-top1.npy"] in text2, "the identity lists the arrays' digests")
        png2, _ = check_browser(P("r2.html"), w, "llamacpp", SINGLE_CHARTS + ["chart-deltap"])
        if BUILD:
            shutil.copyfile(png2, os.path.join(BUILD, "report-screenshot.png"))
        if os.environ.get("FDL_UPDATE_SCREENSHOT") == "1":
            shutil.copyfile(png2, os.path.join(TESTS, "..", "docs", "report-screenshot.png"))

        # ---- --markdown ------------------------------------------------------------------
        rc, md, err = run("report", P("r2"), "--markdown")
        lines = md.splitlines()
        check(rc == 0 and lines[0] == "| statistic | value |" and lines[1] == "|---|---|",
              "--markdown prints a GFM table (exit %d) %s" % (rc, md[:200]))
        check(all(l.startswith("|") and l.endswith("|") for l in lines), "every line is a row")
        check(any("PPL(Q)/PPL(base)" in l for l in lines), "--markdown has the llama.cpp rows")
        check(any(("%.6g" % doc1["metric"]["value"]) in l for l in lines), "--markdown mean KL")
        check(not os.path.exists(P("r2", "report.html")), "--markdown writes no page")

        # ---- hostile strings are escaped --------------------------------------------------
        copy_receipt(P("r1"), P("r3"))
        d3 = load(P("r3"))
        d3["candidate"]["label"] = "Q4 <img src=x onerror=alert(1)> & \"friends\""
        d3["disclosures"][0]["detail"] = "</td><script>alert(2)</script>"
        d3["per_context"][0]["domain"] = "<b>bold</b>|pipe"
        save(P("r3"), reseal(d3))
        rc, _, err = run("report", P("r3"))
        t3 = open(P("r3", "report.html"), encoding="utf-8").read()
        check(rc == 0 and "<script" not in t3 and "<img" not in t3 and "<b>bold" not in t3,
              "untrusted strings are escaped (exit %d)" % rc)
        check("&lt;script&gt;alert(2)&lt;/script&gt;" in t3 and "&lt;b&gt;bold&lt;/b&gt;" in t3,
              "escaped text is still shown")
        rc, md, _ = run("report", P("r3"), "--markdown")
        check(rc == 0 and "\\<img" in md and all(l.count(" | ") + 2 == 3 or l.startswith("|--")
                                                  for l in md.splitlines()),
              "--markdown escapes pipes and markup: %s" % md[:300])
        check_browser(P("r3", "report.html"), w, "hostile", SINGLE_CHARTS)

        # ---- tampering: seal, tokenwise array, llama.cpp array ---------------------------
        copy_receipt(P("r1"), P("t1"))
        dt = load(P("t1"))
        dt["metric"]["value"] = dt["metric"]["value"] / 2  # a better number, without re-sealing
        save(P("t1"), dt)
        rc, _, err = run("report", P("t1"))
        tp = open(P("t1", "report.html"), encoding="utf-8").read()
        check(rc == 3 and "SEAL FAILED" in err, "a tampered receipt exits 3 (%d): %s" % (rc, err))
        check("VERIFICATION FAILED" in tp and "SEAL FAILED" in tp and "<svg" not in tp
              and "%.6g" % dt["metric"]["value"] not in tp,
              "the tampered receipt's page says so, with no plots and no numbers")
        tamper_png, _ = check_browser(P("t1", "report.html"), w, "tampered", [], 0, plots=False)
        if os.path.exists(tamper_png):
            wd, ht, bpp, px = png_pixels(tamper_png)
            rgb = px.reshape(ht, wd, bpp)[:, :, :3].astype(np.int16)
            red = (rgb[:, :, 0] > 150) & (rgb[:, :, 1] < 80) & (rgb[:, :, 2] < 80)
            check(red.sum() > 500, "the tampered page shows red in the browser (%d px)" % red.sum())
        rc, md, err = run("report", P("t1"), "--markdown")
        check(rc == 3 and md == "", "--markdown of a tampered receipt prints nothing (exit %d)" % rc)

        copy_receipt(P("r1"), P("t2"))
        with open(P("t2", "tokenwise-kld.npy"), "r+b") as f:
            f.seek(200)
            byte = f.read(1)
            f.seek(200)
            f.write(bytes([byte[0] ^ 1]))
        rc, _, err = run("report", P("t2"))
        tp = open(P("t2", "report.html"), encoding="utf-8").read()
        check(rc == 3 and "tokenwise-kld.npy" in err and "VERIFICATION FAILED" in tp and "<svg" not in tp,
              "a changed tokenwise array is caught (exit %d): %s" % (rc, err))

        copy_receipt(P("r2"), P("t3"))
        a = np.load(P("t3", "tokenwise-top1.npy"))
        a[0] ^= 1
        np.save(P("t3", "tokenwise-top1.npy"), a)
        rc, _, err = run("report", P("t3"))
        tp = open(P("t3", "report.html"), encoding="utf-8").read()
        check(rc == 3 and "tokenwise-top1.npy" in err and "<svg" not in tp,
              "a changed llama.cpp array is caught (exit %d): %s" % (rc, err))

        # ---- --compare ---------------------------------------------------------------------
        copy_receipt(P("r1"), P("c2"))
        dc = load(P("c2"))
        dc["candidate"]["label"] = "candidate B"
        save(P("c2"), reseal(dc))
        rc, out, err = run("report", "--compare", P("r1"), P("c2"), P("r2"), "--out", P("cmp.html"))
        check(rc == 0, "--compare of one panel: exit %d %s" % (rc, err))
        tc = open(P("cmp.html"), encoding="utf-8").read() if rc == 0 else ""
        check('id="compare-table"' in tc and tc.count("<tr>") >= 4 and "candidate B" in tc,
              "--compare has the ranked table")
        if tc:
            # A short page of thin lines: less ink than a single-receipt page.
            check_browser(P("cmp.html"), w, "compare", ["chart-cdf-overlay"], ink=0.005,
                          colour=0.0003)
        rc, md, err = run("report", "--compare", P("r1"), P("c2"), "--markdown")
        check(rc == 0 and md.startswith("| rank | candidate |") and md.count("\n") == 4,
              "--compare --markdown: exit %d %s" % (rc, md))

        rc, _, err = run("synth", "--out", P("pair2"), "--seed", "5", "--contexts", "4",
                         "--tokens-per-context", "16", "--vocab", "256", "--hidden", "32")
        rc2, _, err2 = run("compare", P("pair2", "reference"), P("pair2", "candidate"),
                           "--own-heads", "--out", P("other"))
        check(rc == 0 and rc2 in (0, 2), "second pair: %s %s" % (err, err2))
        rc, _, err = run("report", "--compare", P("r1"), P("other"), "--out", P("bad1.html"))
        check(rc == 3 and "panel_id" in err and not os.path.exists(P("bad1.html")),
              "--compare refuses another panel, saying why (exit %d): %s" % (rc, err))
        copy_receipt(P("r1"), P("hp"))
        dh = load(P("hp"))
        dh["comparability"]["key_inputs"]["head_policy"] = "shared_reference_head"
        save(P("hp"), reseal(dh))
        rc, _, err = run("report", "--compare", P("r1"), P("hp"), "--out", P("bad2.html"))
        check(rc == 3 and "head_policy" in err and not os.path.exists(P("bad2.html")),
              "--compare refuses another head policy (exit %d): %s" % (rc, err))
        copy_receipt(P("r1"), P("self"))  # a floor receipt: the registry gives it no key
        ds = load(P("self"))
        ds["comparison_kind"] = "run_to_run_floor"
        ds["comparability"]["key"] = ds["comparability"]["key_inputs"] = None
        save(P("self"), reseal(ds))
        rc, _, err = run("report", "--compare", P("r1"), P("self"), "--out", P("bad3.html"))
        check(rc == 3 and "comparability key" in err and not os.path.exists(P("bad3.html")),
              "--compare refuses a receipt without a key (exit %d): %s" % (rc, err))
        rc, _, err = run("report", "--compare", P("r1"), P("t1"), "--out", P("bad4.html"))
        check(rc == 3 and "SEAL FAILED" in err, "--compare with a tampered receipt exits 3")

        # ---- a reproduction: every KL is exactly zero, nothing for a log axis -------------
        shutil.copytree(P("pair", "reference"), P("ref-copy"))
        rc, _, err = run("compare", P("pair", "reference"), P("ref-copy"), "--out", P("repro"))
        check(rc in (0, 2), "reproduction compare: exit %d %s" % (rc, err))
        rc, _, err = run("report", P("repro"))
        tz = open(P("repro", "report.html"), encoding="utf-8").read() if rc == 0 else ""
        check(rc == 0 and "no token has a positive KL" in tz and tz.count("<svg") == 5,
              "an all-zero receipt still gets every chart, saying why it is empty (exit %d)" % rc)

        # ---- usage -------------------------------------------------------------------------
        for args, word in ((["report", P("r1"), P("c2")], "--compare"),
                           (["report", "--compare", P("r1")], "two"),
                           (["report", "--compare", P("r1"), P("c2")], "--out"),
                           (["report", P("r1"), "--markdown", "--out", P("x.html")], "together")):
            rc, _, err = run(*args)
            check(rc == 4 and word in err, "%s: exit %d %s" % (" ".join(args[1:]), rc, err))
        os.mkdir(P("empty"))
        rc, _, err = run("report", P("empty"))
        check(rc == 3 and "comparison-receipt.json" in err, "an empty directory: exit %d" % rc)
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d passed, %d failed" % (PASSES[0], len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

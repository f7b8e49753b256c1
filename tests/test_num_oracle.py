#!/usr/bin/env python3
"""Oracle tests for the numerical core (src/num), driving tests/tool_num.

What each oracle proves:
  * numpy float64, COMPARISON-RECEIPT.md section 6.3 verbatim: fidelis computes the reference
    tool's estimator. That formula carries its own rounding error of order 1e-16 * |LSE|, so
    it is compared at 1e-12 relative (or a few 1e-16 * |LSE| absolute) on rows where KL is not tiny.
  * numpy longdouble (64-bit mantissa on x86), the same formula rearranged so that the
    log-sum-exp difference is taken once: an oracle ~1000x more precise than float64, which makes
    the 1e-12 relative / 1e-15 absolute tolerance meaningful on near-equal rows, where the float64
    formula's own error would dominate.
  * mpmath at 60 digits on small vocabularies: an exact-enough reference for the cancellation
    cases (near-equal and shifted rows).
  * argmax: np.argmax on the float64-widened rows (first index on ties).
  * replay: the logits the tiles produced (dumped by tool_num with the very same calls) fed back in
    logit form give bit-identical results; the estimator is checked on those logits; the logits
    themselves are checked loosely against a float64 matmul (sgemm accumulates in float32).
  * statistics: bitwise equal to np.mean / np.quantile / np.max and to CPython 3.12's Neumaier
    sum written out in Python (the local Python is 3.11, whose sum() is naive).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ.get("FDL_BUILD", "build")
SHARED = os.environ.get("FDL_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
TOOL = os.path.join(BUILD, "tests", "tool_num")
REC = np.dtype([("kl", "<f8"), ("top1", "<i8"), ("ra", "<i8"), ("ca", "<i8"),
                ("abs_sum", "<f8"), ("abs_max", "<f8"), ("js", "<f8")])
TMP = tempfile.mkdtemp(prefix="fdl-num-")
FAILS = []
SKIPS = []  # what could not run here: the run ends with 77 (a CTest skip), never a pass
PASSES = [0]


def check(cond, what):
    if cond:
        PASSES[0] += 1
    else:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def write(name, arr):
    path = os.path.join(TMP, name)
    np.ascontiguousarray(arr).tofile(path)
    return path


def run_kl(ref, cand, vocab, extra=(), ref_head=None, cand_head=None, expect_rc=0):
    rows = ref.shape[0]
    args = [TOOL, "kl", "--vocab", str(vocab), "--rows", str(rows),
            "--ref", write("ref.bin", ref.astype(np.float32)),
            "--cand", write("cand.bin", cand.astype(np.float32)),
            "--out", os.path.join(TMP, "out.bin")]
    if ref_head is not None:
        args += ["--ref-hidden", str(ref.shape[1]), "--ref-head", write("rh.bin", ref_head)]
    if cand_head is not None:
        args += ["--cand-hidden", str(cand.shape[1]), "--cand-head", write("ch.bin", cand_head)]
    args += list(extra)
    p = subprocess.run(args, capture_output=True, text=True)
    if expect_rc != 0:
        return p
    if p.returncode != 0:
        raise RuntimeError(f"tool_num failed ({p.returncode}): {p.stderr}")
    return np.fromfile(os.path.join(TMP, "out.bin"), dtype=REC)


def isa_available(isa):
    z = np.zeros((1, 4), np.float32)
    p = run_kl(z, z, 4, ["--isa", isa], expect_rc=-1)
    return p.returncode == 0


# ---- oracles --------------------------------------------------------------------------------

def kl_numpy(t, s):
    """COMPARISON-RECEIPT.md 6.3 verbatim, float64."""
    t = t.astype(np.float64)
    s = s.astype(np.float64)
    lt = t - t.max()
    lpt = lt - np.log(np.sum(np.exp(lt)))
    ls = s - s.max()
    lps = ls - np.log(np.sum(np.exp(ls)))
    return float(np.sum(np.exp(lpt) * (lpt - lps))), lt, ls


def kl_longdouble(t, s):
    t = t.astype(np.longdouble)
    s = s.astype(np.longdouble)
    dt = t - t.max()
    ds = s - s.max()
    st = np.sum(np.exp(dt))
    ss = np.sum(np.exp(ds))
    p = np.exp(dt) / st
    # sum p (dt - ds) + log(ss / st): the two log-sum-exps enter only through their ratio.
    return float(np.sum(p * (dt - ds)) + np.log(ss / st))


def kl_mpmath(t, s):
    import mpmath as mp
    mp.mp.dps = 60
    t = [mp.mpf(float(x)) for x in t]
    s = [mp.mpf(float(x)) for x in s]
    lt = mp.log(mp.fsum(mp.exp(x) for x in t))
    ls = mp.log(mp.fsum(mp.exp(x) for x in s))
    return float(mp.fsum(mp.exp(a - lt) * ((a - lt) - (b - ls)) for a, b in zip(t, s)))


def js_longdouble(t, s):
    t = t.astype(np.longdouble)
    s = s.astype(np.longdouble)
    lp = t - t.max() - np.log(np.sum(np.exp(t - t.max())))
    lq = s - s.max() - np.log(np.sum(np.exp(s - s.max())))
    p, q = np.exp(lp), np.exp(lq)
    m = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * (lp - np.log(m)), 0)
        b = np.where(q > 0, q * (lq - np.log(m)), 0)
    return float(0.5 * np.sum(a) + 0.5 * np.sum(b))


def close(got, want, rel=1e-12, abs_=1e-15):
    return abs(got - want) <= max(rel * abs(want), abs_)


# ---- row families ---------------------------------------------------------------------------

def families(rng, rows, v):
    f = {}
    t = (rng.standard_normal((rows, v)) * 3).astype(np.float32)
    f["random"] = (t, (t + rng.standard_normal((rows, v)) * 0.5).astype(np.float32))
    t = rng.uniform(-1e4, 1e4, (rows, v)).astype(np.float32)
    f["spread1e4"] = (t, rng.uniform(-1e4, 1e4, (rows, v)).astype(np.float32))
    t = rng.integers(-3, 4, (rows, v)).astype(np.float32)
    f["ties"] = (t, rng.integers(-3, 4, (rows, v)).astype(np.float32))
    t = rng.standard_normal((rows, v)).astype(np.float32)
    s = t.copy()
    for r in range(rows):
        t[r, rng.integers(v)] = 80.0
        s[r, rng.integers(v)] = 79.0
    f["onehot"] = (t, s)
    t = (rng.standard_normal((rows, v)) * 3).astype(np.float32)
    s = t.copy()
    mask = rng.random((rows, v)) < 0.3
    s[mask] = np.nextafter(s[mask], np.float32(np.inf))
    f["near_ulp"] = (t, s)
    s = (t * (1 + 1e-6 * rng.standard_normal((rows, v)))).astype(np.float32)
    f["near_1e-6"] = (t, s)
    f["shift100"] = (t, (t + np.float32(100)).astype(np.float32))
    return f


def test_estimator():
    rng = np.random.default_rng(20260719)
    for v, rows, extra in [(1, 4, []), (2, 6, []), (7, 6, []), (4096, 3, []), (4099, 5, []),
                           (3 * 4096 + 5, 3, []), (248320, 2, [])]:
        for name, (t, s) in families(rng, rows, v).items():
            out = run_kl(t, s, v, extra)
            for r in range(rows):
                tag = f"V={v} {name} {extra} row {r}"
                ld = kl_longdouble(t[r], s[r])
                check(close(out["kl"][r], ld), f"{tag}: kl {out['kl'][r]!r} vs longdouble {ld!r}")
                npk, lt, ls = kl_numpy(t[r], s[r])
                lse = max(abs(np.log(np.sum(np.exp(lt)))), 1.0) + abs(float(t[r].max()))
                check(close(out["kl"][r], npk, 1e-12, 64 * 2.2e-16 * lse),
                      f"{tag}: kl {out['kl'][r]!r} vs numpy {npk!r}")
                if v <= 7:
                    mk = kl_mpmath(t[r], s[r])
                    check(close(out["kl"][r], mk), f"{tag}: kl {out['kl'][r]!r} vs mpmath {mk!r}")
                ra = int(np.argmax(t[r].astype(np.float64)))
                ca = int(np.argmax(s[r].astype(np.float64)))
                check(out["ra"][r] == ra and out["ca"][r] == ca, f"{tag}: argmax")
                check(out["top1"][r] == int(ra == ca), f"{tag}: top1")
                d = np.abs(t[r].astype(np.float64) - s[r].astype(np.float64))
                check(out["abs_max"][r] == d.max(), f"{tag}: abs max")
                check(close(out["abs_sum"][r], float(np.sum(d)), 1e-13, 0), f"{tag}: abs sum")


def test_js():
    rng = np.random.default_rng(7)
    for v in (3, 1000):
        for name, (t, s) in families(rng, 3, v).items():
            out = run_kl(t, s, v, ["--js"])
            for r in range(3):
                want = js_longdouble(t[r], s[r])
                check(close(out["js"][r], want, 1e-10, 1e-16),
                      f"JS V={v} {name} row {r}: {out['js'][r]!r} vs {want!r}")
    t = (rng.standard_normal((3, 100)) * 2).astype(np.float32)
    out = run_kl(t, t, 100, ["--js"])
    check(np.all(out["js"].view(np.uint64) == 0), "JS self-compare is +0.0")


def test_self_and_determinism():
    rng = np.random.default_rng(3)
    for v in (1, 5, 4099):
        t = (rng.standard_normal((9, v)) * 4).astype(np.float32)
        out = run_kl(t, t.copy(), v, ["--block-rows", "4"])
        check(np.all(out["kl"].view(np.uint64) == 0), f"self-compare V={v}: KL is +0.0 (sign bit)")
        check(np.all(out["top1"] == 1), f"self-compare V={v}: top1 1.0")
    t = (rng.standard_normal((23, 9001)) * 3).astype(np.float32)
    s = (t + rng.standard_normal(t.shape) * 0.2).astype(np.float32)
    base = run_kl(t, s, 9001, ["--threads", "1", "--block-rows", "8", "--js"])
    for th in ("2", "3"):
        o = run_kl(t, s, 9001, ["--threads", th, "--block-rows", "8", "--js"])
        check(o.tobytes() == base.tobytes(), f"logits: threads {th} bit-identical to 1")
    for br in ("1", "3", "64"):
        o = run_kl(t, s, 9001, ["--threads", "2", "--block-rows", br, "--js"])
        check(o.tobytes() == base.tobytes(), f"logits: block rows {br} bit-identical")


def test_isa(isa):
    """One ISA's kernels against the scalar ones (the scalar run: against the default choice).
    Its own ctest (test_num_oracle_<isa>_py), so a CPU without the ISA records a skip."""
    rng = np.random.default_rng(7)
    t = (rng.standard_normal((23, 9001)) * 3).astype(np.float32)
    s = (t + rng.standard_normal(t.shape) * 0.2).astype(np.float32)
    common = ["--block-rows", "8", "--js"]
    base = run_kl(t, s, 9001, common + (["--isa", "scalar"] if isa != "scalar" else []))
    o = run_kl(t, s, 9001, ["--isa", isa] + common)
    check(o.tobytes() == base.tobytes(),
          f"{isa} kernels bit-identical to {'scalar' if isa != 'scalar' else 'the default'}")


def loose_logits(hidden, head, got):
    exact = hidden.astype(np.float64) @ head.astype(np.float64).T
    bound = 2 * hidden.shape[1] * 2.0 ** -24 * (np.abs(hidden).astype(np.float64) @
                                              np.abs(head).astype(np.float64).T)
    return bool(np.all(np.abs(got.astype(np.float64) - exact) <= bound + 1e-30))


def test_replay():
    rng = np.random.default_rng(11)
    v, h, rows = 9000, 48, 37  # three chunks, the last one sliding back over the second
    ext = ["--block-rows", "16"]
    hr = rng.standard_normal((rows, h)).astype(np.float32)
    hc = (hr + 0.05 * rng.standard_normal((rows, h))).astype(np.float32)
    w1 = (rng.standard_normal((v, h)) * 0.3).astype(np.float32)
    w2 = (w1 + 0.01 * rng.standard_normal((v, h))).astype(np.float32)
    lr = (hr.astype(np.float64) @ w1.astype(np.float64).T).astype(np.float32)
    cases = {
        "hidden-shared": (hr, hc, w1, w1),
        "hidden-own": (hr, hc, w1, w2),
        "logit-vs-hidden": (lr, hc, None, w1),
        "hidden-vs-logit": (hr, lr, w1, None),
    }
    dr, dc = os.path.join(TMP, "dr.bin"), os.path.join(TMP, "dc.bin")
    for name, (a, b, wa, wb) in cases.items():
        dumps = []
        if wa is not None:
            dumps += ["--dump-ref", dr]
        if wb is not None:
            dumps += ["--dump-cand", dc]
        out = run_kl(a, b, v, ext + dumps, ref_head=wa, cand_head=wb)
        la = np.fromfile(dr, np.float32).reshape(rows, v) if wa is not None else a
        lb = np.fromfile(dc, np.float32).reshape(rows, v) if wb is not None else b
        if wa is not None:
            check(loose_logits(a, wa, la), f"{name}: replayed ref logits within sgemm bound")
        if wb is not None:
            check(loose_logits(b, wb, lb), f"{name}: replayed cand logits within sgemm bound")
        again = run_kl(la, lb, v, ext)
        check(again.tobytes() == out.tobytes(),
              f"{name}: logit form on the replayed logits is bit-identical")
        for r in range(rows):
            ld = kl_longdouble(la[r], lb[r])
            check(close(out["kl"][r], ld), f"{name} row {r}: {out['kl'][r]!r} vs {ld!r}")
        for th in ("2", "3"):
            o = run_kl(a, b, v, ext + ["--threads", th], ref_head=wa, cand_head=wb)
            check(o.tobytes() == out.tobytes(), f"{name}: threads {th} bit-identical")
        # Panel size: the same rows cut into the same blocks give the same bits whether or not
        # more rows follow (the last block is zero-padded to position_block rows). A row's bits
        # may depend on its offset inside its block (BLAS kernels treat register rows
        # differently), which is why blocks are cut at fixed offsets, never by thread count.
        for k in (1, 16, 17, 30):
            o = run_kl(a[:k], b[:k], v, ext + ["--threads", "2"], ref_head=wa, cand_head=wb)
            check(o.tobytes() == out[:k].tobytes(), f"{name}: panel of {k} rows bit-identical")
    for wb in (w1, w1.copy()):
        out = run_kl(hr, hr.copy(), v, ext, ref_head=w1, cand_head=wb)
        check(np.all(out["kl"].view(np.uint64) == 0), "hidden self-compare is +0.0")
        check(np.all(out["top1"] == 1), "hidden self-compare top1 1.0")
    # A small vocabulary (one chunk narrower than the fixed chunk) and one just past a chunk.
    for vv in (3, 4097):
        w = rng.standard_normal((vv, h)).astype(np.float32)
        out = run_kl(hr, hc, vv, ext + ["--dump-ref", dr, "--dump-cand", dc],
                     ref_head=w, cand_head=w)
        la = np.fromfile(dr, np.float32).reshape(rows, vv)
        lb = np.fromfile(dc, np.float32).reshape(rows, vv)
        again = run_kl(la, lb, vv, ext)
        check(again.tobytes() == out.tobytes(), f"V={vv}: replay equals logit form")


def neumaier_mean(xs):
    """CPython 3.12 builtin sum() over floats (Objects/bltinmodule.c), divided by len."""
    f = 0 + xs[0]
    c = 0.0
    for x in xs[1:]:
        t = f + x
        if abs(f) >= abs(x):
            c += (f - t) + x
        else:
            c += (x - t) + f
        f = t
    if c and np.isfinite(c):
        f += c
    return f / len(xs)


def run_stats(arrays, qs):
    lengths = np.asarray([len(a) for a in arrays], np.int64)
    data = np.concatenate(arrays).astype(np.float64)
    out = os.path.join(TMP, "s.bin")
    subprocess.run([TOOL, "stats", "--in", write("a.bin", data), "--lengths",
                    write("len.bin", lengths), "--count", str(len(arrays)), "--total",
                    str(len(data)), "--out", out] + [f"q{q!r}" for q in qs], check=True)
    return np.fromfile(out, np.float64).reshape(len(arrays), -1)


def test_stats():
    rng = np.random.default_rng(5)
    qs = [0.5, 0.95, 0.99, 0.999] + list(rng.random(6)) + [0.0, 1.0]
    lengths = list(range(1, 301)) + [1000, 8192, 8193, 12345, 65537, 1000000]
    arrays = []
    for n in lengths:
        kind = n % 3
        if kind == 0:
            arrays.append(rng.exponential(1e-3, n))
        elif kind == 1:
            arrays.append(np.exp(rng.uniform(-40, 5, n)))
        else:
            arrays.append(rng.standard_normal(n) * 1e-4 + 1e-6)
    res = run_stats(arrays, qs)
    for a, r in zip(arrays, res):
        n = len(a)
        want = [np.mean(a), neumaier_mean(list(a)) if n <= 20000 else r[1], np.max(a)]
        want += [np.quantile(a, q) for q in qs]
        want += [np.mean(a)] + [np.quantile(a, q) for q in (0.5, 0.95, 0.99, 0.999)] + [np.max(a)]
        same = np.asarray(want, np.float64).view(np.uint64) == r.view(np.uint64)
        check(bool(np.all(same)), f"stats n={n}: bitwise mismatch at {np.nonzero(~same)[0]}")
    # The seed receipt fact: the Neumaier mean of the four per-context means is the bucket value,
    # and the naive sequential mean is not.
    seed_path = os.path.join(SHARED, "vectors", "fidelity", "seed-receipt-003-measurement.json")
    if not os.path.isfile(seed_path):
        SKIPS.append(f"{seed_path} not present (../shared)")
        return
    with open(seed_path) as f:
        seed = json.load(f)
    means = [c["mean"] for c in seed["per_context"]]
    bucket = seed["context_depth_buckets"]["0000-0255"]
    check(neumaier_mean(means) == bucket, "oracle's Neumaier reproduces the seed bucket")
    naive = 0.0
    for m in means:
        naive += m
    check(naive / len(means) != bucket, "naive mean differs from the seed bucket (test is sharp)")
    r = run_stats([np.asarray(means, np.float64)], [])[0]
    check(r[1] == bucket, f"fidelis Neumaier mean {r[1]!r} == seed bucket {bucket!r}")


def main():
    if not os.path.exists(TOOL):
        print(f"tool_num not built at {TOOL}")
        return 1
    if len(sys.argv) == 3 and sys.argv[1] == "--isa":
        # One ISA only (CMake registers one ctest per ISA): a CPU without it is a recorded skip.
        if not isa_available(sys.argv[2]):
            print(f"skipped: {sys.argv[2]} kernels cannot run on this CPU")
            return 77
        test_isa(sys.argv[2])
    else:
        for t in (test_estimator, test_js, test_self_and_determinism, test_replay, test_stats):
            print("--", t.__name__, flush=True)
            t()
    failed = len(FAILS)
    print(f"{PASSES[0]} passed, {failed} failed, {len(SKIPS)} skipped")
    for what in SKIPS:
        print("skipped:", what)
    return 1 if failed else 77 if SKIPS else 0


if __name__ == "__main__":
    sys.exit(main())

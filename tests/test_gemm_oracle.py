#!/usr/bin/env python3
"""Independent exact oracle for fidelis' GEMM (contract fdl-gemm-1), driving tests/tool_gemm.

The contract: C[i][j] is the float32 chain c = +0.0; for k ascending c = fmaf(A[i][k],
widen(B[j][k]), c), round-to-nearest-even with subnormals. The oracle shares no code with the C
side:

  * widening: BF16 by a uint32 shift (<< 16), F16 through numpy's float16 -> float32 (exact,
    subnormals included), F32 as is;
  * fmaf exactly, with Python integers: every float32 is an integer multiple of 2^-149, so
    a*b + c is the integer A*B + (C << 149) in units of 2^-298, with no rounding at all; one
    round-half-even to 24 significant bits (at most down to the 2^-149 quantum, overflow to
    infinity at 2^128) gives fmaf's result. The obvious numpy shortcut,
    float32(float64(a) * float64(b) + float64(c)), rounds twice and is wrong in rare cases;
    `double rounding` below builds such a case per B type and checks that the oracle, the
    reference and every kernel agree on the correctly rounded bits while the shortcut does not;
  * zeros: an exactly zero sum of nonzero terms is +0 (round to nearest); a zero product plus a
    zero c is -0 only when both are -0; a nonzero result that rounds to zero keeps its sign.

Every kernel this CPU runs (scalar always; avx2 with the avx2, fma and f16c flags; avx512 with
avx512f in /proc/cpuinfo) and the reference (tool_gemm --ref, fdl_gemm_dot_ref) must give the
oracle's bits for every element; where the oracle gives NaN (infinities meeting), the result
must be the contract's one NaN, 0x7FC00000, in every kernel. Results are also checked against a float64
GEMM with the bound |c - exact| <= gamma_K sum_k |a_k b_k|, gamma_K = K u / (1 - K u), u = 2^-24,
on the families without underflow. Shapes stay small (m, n <= 9, k <= 64, plus two deep ones)
because the oracle is plain Python.
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ.get("FDL_BUILD", "build")
TOOL = os.path.join(BUILD, "tests", "tool_gemm")
TMP = tempfile.mkdtemp(prefix="fdl-gemm-")
FAILS = []
PASSES = [0]
U = 2.0 ** -24

# (fraction bits, exponent bits, numpy storage) per B type
FORMATS = {"f32": (23, 8, np.uint32), "bf16": (7, 8, np.uint16), "f16": (10, 5, np.uint16)}
F32 = (23, 8, np.uint32)


def check(cond, what):
    if cond:
        PASSES[0] += 1
    else:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


# ---- the exact oracle --------------------------------------------------------------------


def round_f32(n):
    """The float32 nearest (ties to even) to n * 2^-298, n a nonzero integer, as a Python float."""
    neg = n < 0
    mag = -n if neg else n
    shift = max(mag.bit_length() - 24, 149)  # dropped bits; 2^(149-298) is the subnormal quantum
    q = mag >> shift
    r = mag - (q << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    e = shift - 298
    if e >= 128 or q >> (128 - e):  # q * 2^e >= 2^128: beyond the largest float32
        v = math.inf
    else:
        v = math.ldexp(q, e)  # exact: q <= 2^24, e >= -149
    return -v if neg else v


def fma32(a, b, c):
    """fmaf(a, b, c) on float32 values held in Python floats, correctly rounded."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        # infinities and NaNs: no rounding involved (the exact product of finite a, b is finite)
        if math.isnan(a) or math.isnan(b) or math.isnan(c):
            return math.nan
        if math.isinf(a) or math.isinf(b):
            if a == 0 or b == 0:
                return math.nan
            p = math.copysign(math.inf, a) * math.copysign(1.0, b)
            if math.isinf(c) and c != p:
                return math.nan
            return p
        return c  # c infinite, product finite
    n = int(a * 2.0 ** 149) * int(b * 2.0 ** 149) + (int(c * 2.0 ** 149) << 149)
    if n == 0:
        if (a == 0 or b == 0) and c == 0:
            neg = (math.copysign(1, a) * math.copysign(1, b) < 0) and math.copysign(1, c) < 0
            return -0.0 if neg else 0.0
        return 0.0
    return round_f32(n)


def oracle(a, bw):
    """C = A . widen(B)^T under the contract; a [m x k], bw [n x k] float32."""
    m, k = a.shape
    n = bw.shape[0]
    al = a.astype(np.float64).tolist()
    bl = bw.astype(np.float64).tolist()
    c = np.empty((m, n), np.float32)
    for i in range(m):
        for j in range(n):
            acc = 0.0
            ai, bj = al[i], bl[j]
            for kk in range(k):
                acc = fma32(ai[kk], bj[kk], acc)
            c[i, j] = acc
    return c


def naive(a, bw):
    """The double-rounding shortcut, for showing the oracle is sharper than it."""
    m, k = a.shape
    c = np.zeros((a.shape[0], bw.shape[0]), np.float32)
    a64, b64 = a.astype(np.float64), bw.astype(np.float64)
    for kk in range(k):
        c = (a64[:, kk : kk + 1] * b64[:, kk][None, :] + c.astype(np.float64)).astype(np.float32)
    return c


def widen(b, typ):
    if typ == "f32":
        return b.view(np.float32)
    if typ == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32)
    return b.view(np.float16).astype(np.float32)


def self_test(rng):
    """The rounding helper against numpy where numpy rounds once: a*b alone (exact in float64)."""
    fa = enc(rng, 4000, F32, -140, 60, sub=0.1, zero=0.02).view(np.float32)
    fb = enc(rng, 4000, F32, -30, 70, sub=0.1, zero=0.02).view(np.float32)
    want = (fa.astype(np.float64) * fb.astype(np.float64)).astype(np.float32).view(np.uint32)
    # fma(a, b, -0) is the product rounded once, signed zeros included
    got = np.array([fma32(float(x), float(y), -0.0) for x, y in zip(fa, fb)], np.float32)
    check(np.array_equal(got.view(np.uint32), want), "oracle fma32(a, b, -0) == numpy's product")
    big = float(np.finfo(np.float32).max)
    check(round_f32((2 ** 128 - 2 ** 103) << 298) == math.inf,
          "the midpoint above FLT_MAX rounds to inf")
    check(round_f32(((2 ** 128 - 2 ** 103) << 298) - 1) == big, "below that midpoint: FLT_MAX")
    check(round_f32(1 << 148) == 0.0 and round_f32(3 << 148) == 2.0 ** -148,
          "subnormal ties to even")
    check(math.copysign(1, fma32(-(2.0 ** -100), 2.0 ** -100, 0.0)) < 0, "underflow keeps sign -0")
    check(math.copysign(1, fma32(-0.0, 1.0, 0.0)) > 0, "-0 + +0 = +0")
    check(math.copysign(1, fma32(-0.0, 1.0, -0.0)) < 0, "-0 + -0 = -0")


# ---- operands ----------------------------------------------------------------------------


def enc(rng, size, fmt, elo, ehi, sub=0.0, zero=0.0):
    """Bit patterns: random sign and fraction, exponent uniform in [elo, ehi] (clamped to the
    normal range); a fraction sub of subnormals and zero of signed zeros."""
    mbits, ebits, store = fmt
    bias = 2 ** (ebits - 1) - 1
    sign = rng.integers(0, 2, size).astype(np.uint64) << (mbits + ebits)
    e = np.clip(rng.integers(elo, ehi + 1, size) + bias, 1, 2 * bias).astype(np.uint64)
    man = rng.integers(0, 2 ** mbits, size).astype(np.uint64)
    bits = sign | (e << mbits) | man
    r = rng.random(size)
    bits = np.where(r < sub, sign | np.maximum(man, 1), bits)
    bits = np.where((r >= sub) & (r < sub + zero), sign, bits)
    return bits.astype(store)


def from_bf16(h, typ):
    """BF16 patterns (8 significant bits, exponent within F16's normal range) in typ."""
    h = h.astype(np.uint32)
    if typ == "bf16":
        return h.astype(np.uint16)
    if typ == "f32":
        return h << 16
    e = ((h >> 7) & 0xFF).astype(np.int64) - 127 + 15
    return ((h & 0x8000) | (e.astype(np.uint32) << 10) | ((h & 0x7F) << 3)).astype(np.uint16)


def family(rng, name, m, n, k, typ):
    fb = FORMATS[typ]
    if name == "normal":
        return (enc(rng, (m, k), F32, -4, 3, zero=0.02),
                enc(rng, (n, k), fb, -4, 3, zero=0.02))
    if name == "tiny":  # A 1e-45..1e-38: subnormal products and chains
        return (enc(rng, (m, k), F32, -126, -122, sub=0.5), enc(rng, (n, k), fb, -3, 3))
    if name == "subnormal":
        return (enc(rng, (m, k), F32, -10, 40, sub=0.5), enc(rng, (n, k), fb, -10, 10, sub=0.5))
    if name == "signed zeros":
        return (enc(rng, (m, k), F32, -3, 3, zero=0.4), enc(rng, (n, k), fb, -3, 3, zero=0.4))
    if name == "huge":
        a = np.where(rng.random((m, k)) < 0.5, enc(rng, (m, k), F32, 110, 127),
                     enc(rng, (m, k), F32, -2, 2))
        return a, enc(rng, (n, k), fb, -2, 20)
    if name in ("cancel", "near cancel"):
        # pairs x*y, x*(-y): 8-bit x and y, exact products, the chain back at +0 after each pair;
        # "near cancel" moves every second y by one BF16 ulp, leaving residues to round
        x = enc(rng, (m, k // 2), (7, 8, np.uint16), -2, 2).astype(np.uint32) << 16
        y = enc(rng, (n, k // 2), (7, 8, np.uint16), -2, 2)
        y2 = y ^ np.uint16(0x8000)
        if name == "near cancel":
            y2 = np.where(np.arange(k // 2) % 2 == 1, y2 + np.uint16(1), y2).astype(np.uint16)
        a = np.repeat(x, 2, axis=1)
        b = np.empty((n, k), np.uint16)
        b[:, 0::2], b[:, 1::2] = y, y2
        return a, from_bf16(b, typ)
    if name == "specials":  # infinities among normal values, on both sides
        a = enc(rng, (m, k), F32, -3, 3, zero=0.05)
        b = enc(rng, (n, k), fb, -3, 3, zero=0.05)
        inf_a = np.uint32(0x7F800000)
        inf_b = {"f32": 0x7F800000, "bf16": 0x7F80, "f16": 0x7C00}[typ]
        a = np.where(rng.random((m, k)) < 0.06, inf_a | (a & np.uint32(0x80000000)), a)
        sb = np.uint32(0x80000000) if typ == "f32" else np.uint16(0x8000)
        b = np.where(rng.random((n, k)) < 0.06, b.dtype.type(inf_b) | (b & sb), b)
        return a.astype(np.uint32), b.astype(fb[2])
    raise ValueError(name)


def double_rounding_case(typ):
    """A = [c0, a], B = [1, b] with a*b = 2^-24 (1 + s), 0 < |s| < 2^-29 (a has 24 significant
    bits, b those of typ). fmaf(a, b, c0) lies just off the tie c0 + 2^-24 and rounds away from it
    to 1 + 2^-23; the float64 sum drops s, lands on the tie and rounds to even instead: with s > 0
    and c0 = 1 down to 1.0, with s < 0 and c0 = 1 + 2^-23 up to 1 + 2^-22. Returns the operands
    and the float64 shortcut's bits."""
    p = FORMATS[typ][0]  # b = bm / 2^p in [1, 2)
    target = 1 << (24 + p)
    for bm in range((1 << p) + 1, 1 << (p + 1)):
        am = (target + bm // 2) // bm  # a*b = am * bm * 2^-(48 + p) = 2^-24 (1 + r / target)
        r = am * bm - target
        if r != 0 and abs(r) * (1 << 29) < target and (1 << 23) <= am < (1 << 24):
            break
    else:
        raise AssertionError(f"no double-rounding case for {typ}")
    a = np.float32(math.ldexp(am, -48))
    b = np.float32(math.ldexp(bm, -p))
    c0 = np.float32(1.0) if r > 0 else np.float32(1 + 2.0 ** -23)
    av = np.array([[c0, a]], np.float32)
    bv = np.array([[1.0, b]], np.float32)
    if typ == "f32":
        braw = bv.view(np.uint32)
    elif typ == "bf16":
        braw = (bv.view(np.uint32) >> 16).astype(np.uint16)
    else:
        braw = bv.astype(np.float16).view(np.uint16)
    assert np.array_equal(widen(braw, typ), bv)
    return av.view(np.uint32), braw, 0x3F800000 if r > 0 else 0x3F800002


# ---- driving the tool --------------------------------------------------------------------


def cpu_isas():
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    isas = ["scalar"]
    if {"avx2", "fma", "f16c"} <= flags:
        isas.append("avx2")
    if "avx512f" in flags:
        isas.append("avx512")
    return isas


def tool(extra, expect_rc=0):
    p = subprocess.run([TOOL] + extra, capture_output=True, text=True)
    if p.returncode != expect_rc:
        print(p.stderr, end="")
    return p


def run_gemm(a_bits, b_bits, typ, isa, threads=1):
    m, k = a_bits.shape
    n = b_bits.shape[0]
    pa, pb, pc = (os.path.join(TMP, x) for x in ("a.bin", "b.bin", "c.bin"))
    np.ascontiguousarray(a_bits.astype("<u4")).tofile(pa)
    np.ascontiguousarray(b_bits.astype("<u4" if typ == "f32" else "<u2")).tofile(pb)
    args = ["--type", typ, "--m", str(m), "--n", str(n), "--k", str(k), "--a", pa, "--b", pb,
            "--out", pc, "--threads", str(threads)]
    args += ["--isa", "scalar", "--ref"] if isa == "ref" else ["--isa", isa]
    p = tool(args)
    if p.returncode != 0:
        check(False, f"tool_gemm {isa} {typ} {m}x{n}x{k} exited {p.returncode}")
        return None
    c = np.fromfile(pc, "<u4")
    if c.size != m * n:
        check(False, f"tool_gemm {isa} wrote {c.size} floats, not {m * n}")
        return None
    return c.reshape(m, n)


def first_diff(got, want):
    i, j = np.argwhere(got != want)[0]
    return f"first at C[{i}][{j}]: 0x{got[i, j]:08x}, oracle 0x{want[i, j]:08x}"


def compare(name, typ, a_bits, b_bits, isas, want=None, bound=False):
    """Runs the reference and every kernel; all must give the oracle's bits. Returns them."""
    m, k = a_bits.shape
    n = b_bits.shape[0]
    a = a_bits.view(np.float32)
    bw = widen(b_bits, typ)
    if want is None:
        want = oracle(a, bw)
    wbits = want.view(np.uint32)
    wnan = np.isnan(want)
    label = f"{name}, {typ} B, {m}x{n}x{k}"
    outs = {}
    for isa in ["ref"] + isas:
        for threads in ([1, 3] if isa != "ref" and m * n > 1 else [1]):
            got = run_gemm(a_bits, b_bits, typ, isa, threads)
            if got is None:
                continue
            outs[f"{isa}/{threads}"] = got
            gnan = np.isnan(got.view(np.float32))
            if not np.array_equal(gnan, wnan):
                detail = " (NaN where the oracle has a number, or the reverse)"
            elif not np.all(got[wnan] == 0x7FC00000):
                detail = " (a NaN other than 0x7FC00000)"
            elif not np.array_equal(got[~wnan], wbits[~wnan]):
                detail = " (" + first_diff(np.where(wnan, 0, got), np.where(wnan, 0, wbits)) + ")"
            else:
                detail = ""
            check(not detail, f"{label}: {isa} ({threads} threads) equals the exact oracle bit for "
                  f"bit{detail}")
    if outs:
        first = next(iter(outs.values()))
        check(all(np.array_equal(o, first) for o in outs.values()),
              f"{label}: reference and kernels bit-identical (NaN payloads included)")
    if bound:
        a64, b64 = a.astype(np.float64), bw.astype(np.float64)
        exact = a64 @ b64.T
        mag = np.abs(a64) @ np.abs(b64).T
        gamma = k * U / (1 - k * U)
        err = np.abs(want.astype(np.float64) - exact)
        ok = np.all(err <= gamma * mag + 2 * k * 2.0 ** -53 * mag)
        ratio = float(np.max(np.where(mag > 0, err / (gamma * mag), 0)))
        check(ok, f"{label}: |c - float64| <= gamma_K sum|a||b| (max ratio {ratio:.3g})")
        return ratio
    return None


def test_errors():
    """The tool refuses malformed input with a message and a nonzero status."""
    pa, pb, pc = (os.path.join(TMP, x) for x in ("ea.bin", "eb.bin", "ec.bin"))
    np.zeros(6, "<f4").tofile(pa)
    np.zeros(5, "<u2").tofile(pb)  # 2 x 3 bf16 needs 6

    def args(m="2", typ="bf16", out=pc):
        return ["--isa", "scalar", "--type", typ, "--m", m, "--n", "2", "--k", "3", "--a", pa,
                "--b", pb, "--out", out]

    p = tool(args(), expect_rc=1)
    check(p.returncode == 1 and "exactly" in p.stderr, "short B file refused")
    p = tool(args(typ="f64"), expect_rc=2)
    check(p.returncode == 2 and p.stderr, "unknown type refused")
    p = tool(["--isa", "scalar", "--type", "f32"], expect_rc=2)
    check(p.returncode == 2 and p.stderr, "missing arguments refused")
    p = tool(args(m="-1"), expect_rc=2)
    check(p.returncode == 2 and p.stderr, "negative size refused")
    p = tool(args(m="2x"), expect_rc=2)
    check(p.returncode == 2 and p.stderr, "malformed size refused")
    np.zeros(6, "<u2").tofile(pb)
    p = tool(args(out=os.path.join(TMP, "no", "such", "dir")), expect_rc=1)
    check(p.returncode == 1 and p.stderr, "unwritable output refused")
    p = tool(args())
    check(p.returncode == 0 and np.fromfile(pc, "<u4").tolist() == [0, 0, 0, 0],
          "zero operands give +0.0")


def main():
    if not os.path.exists(TOOL):
        print(f"tool_gemm not built at {TOOL}")
        return 1
    isas = cpu_isas()
    print("kernels checked:", ", ".join(isas), "(and fdl_gemm_dot_ref)")
    rng = np.random.default_rng(20240601)
    self_test(rng)
    test_errors()
    worst = 0.0
    sharp = 0
    shapes = [(9, 7, 40), (8, 5, 33), (9, 9, 40), (7, 6, 24), (5, 4, 16), (6, 5, 32), (6, 5, 32),
              (5, 5, 20)]
    names = ["normal", "tiny", "subnormal", "signed zeros", "huge", "cancel", "near cancel",
             "specials"]
    for typ in FORMATS:
        for name, (m, n, k) in zip(names, shapes):
            a, b = family(rng, name, m, n, k, typ)
            want = oracle(a.view(np.float32), widen(b, typ))
            sharp += int(np.sum(naive(a.view(np.float32), widen(b, typ)).view(np.uint32)
                                != want.view(np.uint32)))
            r = compare(name, typ, a, b, isas, want, bound=name in ("normal", "cancel",
                                                                    "near cancel"))
            worst = max(worst, r or 0.0)
            if name == "cancel":
                check(np.all(want.view(np.uint32) == 0), f"cancel, {typ}: every chain ends at +0.0")
        for m, n, k in [(1, 1, 1), (1, 9, 1), (9, 1, 37), (3, 9, 64), (2, 3, 2)]:
            a, b = family(rng, "normal", m, n, k, typ)
            compare("shape", typ, a, b, isas)
        # a row of -0.0 against positive B: +0.0 bits
        a = np.full((2, 12), 0x80000000, np.uint32)
        b = enc(rng, (3, 12), FORMATS[typ], -3, 3) & (0x7FFFFFFF if typ == "f32" else 0x7FFF)
        want = oracle(a.view(np.float32), widen(b, typ))
        check(np.all(want.view(np.uint32) == 0), f"-0.0 rows, {typ}: oracle gives +0.0")
        compare("-0.0 rows", typ, a, b, isas, want)
        # the double-rounding case
        a, b, naive_bits = double_rounding_case(typ)
        want = oracle(a.view(np.float32), widen(b, typ))
        nv = naive(a.view(np.float32), widen(b, typ))
        check(want.view(np.uint32)[0, 0] == 0x3F800001 and nv.view(np.uint32)[0, 0] == naive_bits,
              f"double rounding, {typ}: exact fma gives 1 + 2^-23 (0x3f800001), the float64 "
              f"shortcut 0x{naive_bits:08x}")
        compare("double rounding", typ, a, b, isas, want)
        # deep chains against the float64 bound, exact oracle included
        for m, n, k in [(3, 3, 2560), (2, 2, 5120)]:
            a, b = family(rng, "normal", m, n, k, typ)
            worst = max(worst, compare("deep", typ, a, b, isas, bound=True))
    print(f"the float64 shortcut differs from the exact oracle in {sharp} random elements")
    print(f"max |c - float64| / (gamma_K sum|a||b|): {worst:.3g}")
    print(f"{PASSES[0]} passed, {len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    with np.errstate(over="ignore", invalid="ignore"):
        sys.exit(main())

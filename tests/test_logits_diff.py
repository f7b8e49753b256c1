#!/usr/bin/env python3
"""`fidelis logits diff` against an independent float64 oracle of Kiln's compare_logits
(KILN-ATTRIBUTION.md §11): the whole --json output must equal, byte for byte, the canonical JSON
of the oracle's values (so every double matches bit for bit), over random full vocabularies,
ties, equal vectors, signed zeros, magnitudes near the float32 maximum and length 1; each input
form; and each refusal with its exit code and message."""
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import attr_util as U  # noqa: E402

V = 248320
FAILS = []


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        FAILS.append(what)
        print("FAIL " + what)


def total_key(v):
    """IEEE totalOrder position of float32 values as int64 (-0.0 < +0.0)."""
    b = np.asarray(v, dtype="<f4").view("<i4").astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF) - 1, b)


def topk(v, k=10):
    key = total_key(v)
    order = np.lexsort((np.arange(len(v)), -key))  # value descending, then index ascending
    return [int(i) for i in order[:k]]


def shortest_f32_as_double(x):
    """serde's shortest f32 decimal, read as a double (numpy's Dragon4 'unique' digits)."""
    return float(np.format_float_scientific(np.float32(x), unique=True))


def oracle(A, R, cands):
    A = np.asarray(A, dtype=np.float32)
    R = np.asarray(R, dtype=np.float32)
    a, r = A.astype(np.float64), R.astype(np.float64)
    e = np.abs(a - r)
    max_abs = max(0.0, float(e.max()))
    dot, an, rn = U.seqsum(a * r), U.seqsum(a * a), U.seqsum(r * r)
    ta, tr = topk(A), topk(R)
    out = {
        "argmax": ta[0],
        "argmax_equal": ta[0] == tr[0],
        "cosine_similarity": U.cosine(dot, an, rn, max_abs == 0.0),
        "max_abs_error": max_abs,
        "mean_abs_error": U.seqsum(e) / float(len(A)),
        "top10_overlap": len(set(ta) & set(tr)),
        "logits_sha256": U.f32_digest(A),
        "candidate_tokens": [],
    }
    for c in cands:
        x = A[c]
        rank = 1 + int(np.count_nonzero(A > x)) + int(np.count_nonzero(A[:c] == x))
        out["candidate_tokens"].append({"token_id": c, "logit": shortest_f32_as_double(x), "rank": rank})
    out["cosine_similarity"] = float(out["cosine_similarity"])
    return out


def compare(w, label, A, R, cands=(), ref_args=None, cand_args=None, extra=()):
    """Writes R and A as .npy unless paths are given, runs --json, compares with the oracle."""
    if ref_args is None:
        np.save(os.path.join(w, "r.npy"), np.asarray(R, dtype=np.float32))
        ref_args = [os.path.join(w, "r.npy")]
    if cand_args is None:
        np.save(os.path.join(w, "a.npy"), np.asarray(A, dtype=np.float32))
        cand_args = [os.path.join(w, "a.npy")]
    args = ["logits", "diff"] + ref_args + cand_args + ["--json"] + list(extra)
    if cands:
        args += ["--candidates", ",".join(str(c) for c in cands)]
    rc, out, err = U.run(args)
    want = U.canon(oracle(A, R, cands))
    ok = rc == 0 and out == want + "\n"
    check(ok, "%s: --json equals the oracle" % label)
    if not ok:
        print("  rc=%d stderr=%s\n  got  %s\n  want %s" % (rc, err.strip(), out.strip()[:600], want[:600]))
    return out


def refused(label, args, code, needles):
    rc, out, err = U.run(["logits", "diff"] + args)
    ok = rc == code and all(n in err for n in needles) and out == ""
    check(ok, "%s: exit %d naming %s" % (label, code, needles))
    if not ok:
        print("  rc=%d stderr=%s" % (rc, err.strip()))


def main():
    U.need_cli()
    w = tempfile.mkdtemp(prefix="fdl-logits-")
    P = lambda n: os.path.join(w, n)
    try:
        rng = np.random.default_rng(20260719)
        # 1. random full vocabulary, logits-like scale; candidates include both argmaxes.
        R = (rng.standard_normal(V) * 3).astype(np.float32)
        A = (R + rng.standard_normal(V).astype(np.float32) * 0.05).astype(np.float32)
        cands = [topk(A)[0], topk(R)[0], 0, V - 1, 12345]
        compare(w, "random V=248320", A, R, cands)
        # 1b. unrelated random vectors (argmax differs, low overlap).
        A2 = rng.standard_normal(V).astype(np.float32)
        compare(w, "random unrelated", A2, R, [25045, 15787])

        # 2. exact ties at the top (argmax = lowest index) and around candidates; BF16-like values.
        T = np.round(rng.standard_normal(V) * 4).astype(np.float32) / 4
        T[[900, 7, 3, 100000]] = 18.625  # four-way tie for the max: argmax 3
        T[[11, 12, 13, 14, 15, 16, 17, 18]] = 18.5  # ties straddling the top-10 boundary
        Tr = T.copy()
        Tr[3] = 18.5
        out = compare(w, "ties at the top", T, Tr, [3, 7, 900, 100000, 12, 18, 25045])
        check('"argmax":3' in out, "ties: argmax is the lowest tied index")

        # 3. all-equal vectors.
        E = np.full(V, 1.5, dtype=np.float32)
        out = compare(w, "all equal", E, E, [0, 9, V - 1])
        check('"top10_overlap":10' in out and '"argmax":0' in out, "all equal: argmax 0, overlap 10")

        # 4. signed zeros: totalOrder puts +0.0 above -0.0; the rank uses ordinary ==.
        Z = np.array([-0.0, 0.0, -1.0, -0.0], dtype=np.float32)
        Zr = np.array([0.0, -0.0, -1.0, 0.0], dtype=np.float32)
        out = compare(w, "signed zeros", Z, Zr, [0, 1, 3])
        check('"argmax":1' in out and '"argmax_equal":false' in out, "signed zeros: argmax 1 (+0.0)")

        # 5. magnitudes near the float32 maximum (float64 sums do not overflow).
        H = (rng.uniform(-1, 1, V) * 3.4e38).astype(np.float32)
        Hr = (H * np.float32(0.999)).astype(np.float32)
        H[5] = np.float32(3.4028235e38)
        compare(w, "near float32 max", H, Hr, [5, 6])
        S = (rng.standard_normal(V) * 1e-30).astype(np.float32)
        compare(w, "tiny magnitudes", S, (S * np.float32(1.5)).astype(np.float32), [1])

        # 6. length 1.
        compare(w, "length 1", np.array([2.0], np.float32), np.array([3.0], np.float32), [0])

        # 7. input forms: raw .f32, safetensors [1, V] single tensor, named tensor, BF16, F16 npy.
        A.tofile(P("a.f32"))
        R.tofile(P("r.f32"))
        compare(w, "raw .f32", A, R, [1], ref_args=[P("r.f32")], cand_args=[P("a.f32")])
        U.write_safetensors(P("r1.safetensors"), [("logits", "F32", [1, V], R.astype("<f4").tobytes())])
        U.write_safetensors(P("two.safetensors"), [("kiln", "F32", [V], A.astype("<f4").tobytes()),
                                                   ("other", "F32", [2], b"\0" * 8)])
        compare(w, "safetensors [1,V] and a named tensor", A, R, [2],
                ref_args=[P("r1.safetensors")], cand_args=[P("two.safetensors"), "--cand-tensor", "kiln"])
        Rb = (R.view("<u4") & 0xFFFF0000).view("<f4")
        Ab = (A.view("<u4") & 0xFFFF0000).view("<f4")
        U.write_safetensors(P("rb.safetensors"), [("x", "BF16", [V], U.bf16_bits(Rb).tobytes())])
        U.write_safetensors(P("ab.safetensors"), [("x", "BF16", [1, V], U.bf16_bits(Ab).tobytes())])
        compare(w, "BF16 widened exactly", Ab, Rb, [3, 4], ref_args=[P("rb.safetensors")],
                cand_args=[P("ab.safetensors")])
        Ah = A.astype(np.float16)
        np.save(P("ah.npy"), Ah)
        compare(w, "F16 npy widened exactly", Ah.astype(np.float32), R, [0],
                ref_args=[P("r.f32")], cand_args=[P("ah.npy")])
        rc, out, _ = U.run(["logits", "diff", P("r.f32"), P("a.f32"), "--candidates", "1"])
        check(rc == 0 and "argmax" in out and "sha256:" in out and "candidate 1" in out,
              "text summary (exit 0)")

        # 8. refusals (exit 3) naming the file and the index; usage errors (exit 4).
        np.save(P("short.npy"), R[:-1])
        refused("length mismatch", [P("r.f32"), P("short.npy")], 3, ["248320", "248319", "short.npy"])
        bad = A.copy()
        bad[4321] = np.nan
        np.save(P("nan.npy"), bad)
        refused("NaN", [P("r.f32"), P("nan.npy")], 3, ["nan.npy", "4321", "NaN"])
        bad = A.copy()
        bad[77] = -np.inf
        bad.tofile(P("inf.f32"))
        refused("Inf", [P("inf.f32"), P("a.f32")], 3, ["inf.f32", "77", "infinite"])
        open(P("empty.f32"), "wb").close()
        refused("empty raw", [P("empty.f32"), P("empty.f32")], 3, ["empty.f32", "no elements"])
        np.save(P("empty.npy"), np.zeros(0, np.float32))
        refused("empty npy", [P("empty.npy"), P("a.f32")], 3, ["empty.npy", "no elements"])
        with open(P("odd.f32"), "wb") as f:
            f.write(b"\0" * 7)
        refused("raw length not a multiple of 4", [P("odd.f32"), P("a.f32")], 3, ["odd.f32", "multiple of 4"])
        refused("two tensors, none named", [P("two.safetensors"), P("a.f32")], 3,
                ["two.safetensors", "'kiln'", "'other'"])
        refused("unknown tensor name", [P("two.safetensors"), P("a.f32"), "--ref-tensor", "nope"], 3, ["nope"])
        np.save(P("rows.npy"), np.ones((2, 3), np.float32))
        refused("two rows", [P("rows.npy"), P("rows.npy")], 3, ["rows.npy", "2 rows"])
        np.save(P("i32.npy"), np.ones(4, np.int32))
        refused("integer dtype", [P("i32.npy"), P("i32.npy")], 3, ["i32.npy", "F32, BF16 or F16"])
        np.save(P("z.npy"), np.zeros(4, np.float32))
        refused("all-zero vector", [P("z.npy"), P("z.npy")], 3, ["all zero"])
        refused("candidate out of range", [P("r.f32"), P("a.f32"), "--candidates", "248320"], 3,
                ["248320", "out of range"])
        refused("candidates not decimal", [P("r.f32"), P("a.f32"), "--candidates", "1,x"], 4, ["'x'"])
        refused("candidates trailing comma", [P("r.f32"), P("a.f32"), "--candidates", "1,"], 4, ["trailing"])
        refused("missing file", [P("missing.npy"), P("a.f32")], 4, ["missing.npy"])
        refused("one file", [P("a.f32")], 4, ["two files"])
        rc, out, err = U.run(["logits", "bogus", P("a.f32"), P("a.f32")])
        check(rc == 4 and "'bogus'" in err, "unknown subcommand: exit 4 naming it")
        # The candidate logit is the shortest float32 decimal read as a double: 0.1f prints 0.1.
        np.save(P("tenth.npy"), np.array([0.1, 0.2], np.float32))
        rc, out, _ = U.run(["logits", "diff", P("tenth.npy"), P("tenth.npy"), "--json", "--candidates", "0"])
        check(rc == 0 and '"logit":0.1,' in out, "candidate logit 0.1f is written 0.1")
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

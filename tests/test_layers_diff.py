#!/usr/bin/env python3
"""`fidelis layers diff` against an independent float64 oracle of Kiln's compare_boundary and
largest_relative_error_growth (KILN-ATTRIBUTION.md §11): the whole --json output must equal the
canonical JSON of the oracle byte for byte. Covers names (option, __metadata__, default), the
first-maximum tie rule of the growth, a bit-identical row (cosine 1.0, errors 0.0, as the
retained embedding row of §15), input forms, and refusals."""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import attr_util as U  # noqa: E402

FAILS = []


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        FAILS.append(what)
        print("FAIL " + what)


def boundary(i, name, K, H):
    k, h = K.astype(np.float64), H.astype(np.float64)
    d = k - h
    e = np.abs(d)
    n = float(len(K))
    sq, dot, kk, hh = U.seqsum(d * d), U.seqsum(k * h), U.seqsum(k * k), U.seqsum(h * h)
    rmse, ref_rms = float(np.sqrt(sq / n)), float(np.sqrt(hh / n))
    return {"index": i, "name": name,
            "cosine_similarity": U.cosine(dot, kk, hh, float(e.max()) == 0.0),
            "hf_sha256": U.f32_digest(H), "kiln_sha256": U.f32_digest(K),
            "max_abs_error": max(0.0, float(e.max())), "mean_abs_error": U.seqsum(e) / n,
            "reference_root_mean_square": ref_rms,
            "relative_root_mean_square_error": rmse / ref_rms,
            "root_mean_square_error": rmse}


def oracle(Kall, Hall, names):
    bs = [boundary(i, names[i], Kall[i], Hall[i]) for i in range(len(Hall))]
    rel = [b["relative_root_mean_square_error"] for b in bs]
    prev, deltas = 0.0, []
    for r in rel:
        deltas.append(r - prev)
        prev = r
    # The Python checker's rule: max over (delta, -index), i.e. the first maximum.
    idx = max(range(len(rel)), key=lambda i: (deltas[i], -i))
    return {"boundaries": bs, "largest_relative_error_growth": {
        "index": idx, "name": names[idx], "relative_root_mean_square_error_delta": deltas[idx]}}


def compare(label, K, H, names, ref_args, cand_args, extra=()):
    rc, out, err = U.run(["layers", "diff"] + ref_args + cand_args + ["--json"] + list(extra))
    want = U.canon(oracle(K, H, names))
    ok = rc == 0 and out == want + "\n"
    check(ok, "%s: --json equals the oracle" % label)
    if not ok:
        print("  rc=%d stderr=%s\n  got  %s\n  want %s" % (rc, err.strip(), out.strip()[:800], want[:800]))
    return json.loads(out) if rc == 0 else None


def refused(label, args, code, needles):
    rc, out, err = U.run(["layers", "diff"] + args)
    ok = rc == code and all(n in err for n in needles) and out == ""
    check(ok, "%s: exit %d naming %s" % (label, code, needles))
    if not ok:
        print("  rc=%d stderr=%s" % (rc, err.strip()))


def main():
    U.need_cli()
    w = tempfile.mkdtemp(prefix="fdl-layers-")
    P = lambda n: os.path.join(w, n)
    try:
        rng = np.random.default_rng(7)
        B, W = 33, 2560  # embedding + 32 layers, Qwen3.5 hidden width (spec §11)
        H = (rng.standard_normal((B, W)) * np.linspace(0.014, 40, B)[:, None]).astype(np.float32)
        noise = np.linspace(0, 0.05, B)[:, None] * rng.standard_normal((B, W))
        K = (H * (1 + noise)).astype(np.float32)
        K[0] = H[0]  # the embedding row equals the reference bit for bit (§15)
        names = ["embedding"] + ["layer_%02d_%s" % (i, "full_attention" if i % 4 == 3 else "linear_attention")
                                 for i in range(B - 1)]
        np.save(P("h.npy"), H)
        np.save(P("k.npy"), K)
        doc = compare("npy, default names", K, H, ["boundary_%d" % i for i in range(B)], [P("h.npy")], [P("k.npy")])
        if doc:
            b0 = doc["boundaries"][0]
            check(b0["cosine_similarity"] == 1.0 and b0["max_abs_error"] == 0.0 and
                  b0["root_mean_square_error"] == 0.0 and b0["hf_sha256"] == b0["kiln_sha256"],
                  "identical row: cosine exactly 1.0 (the cosine rule), errors 0.0, equal digests")
            check(all(b["relative_root_mean_square_error"] == b["root_mean_square_error"] /
                      b["reference_root_mean_square"] for b in doc["boundaries"]),
                  "relative RMSE is bit-exactly rmse/ref_rms (§15)")
        compare("--names", K, H, names, [P("h.npy")], [P("k.npy")], ["--names", ",".join(names)])
        U.write_safetensors(P("h.safetensors"), [("hidden", "F32", [B, W], H.astype("<f4").tobytes())],
                            {"boundary_names": json.dumps(names)})
        U.write_safetensors(P("k.safetensors"), [("rows", "F32", [B, W], K.astype("<f4").tobytes()),
                                                 ("x", "F32", [1], b"\0\0\0\0")])
        compare("safetensors, __metadata__ names, named tensor", K, H, names, [P("h.safetensors")],
                [P("k.safetensors"), "--cand-tensor", "rows"])
        H.tofile(P("h.f32"))
        K.tofile(P("k.f32"))
        compare("raw .f32 with --hidden", K, H, ["boundary_%d" % i for i in range(B)], [P("h.f32")], [P("k.f32")],
                ["--hidden", str(W)])
        Hb = (H.view("<u4") & 0xFFFF0000).view("<f4")
        U.write_safetensors(P("hb.safetensors"), [("h", "BF16", [B, W], U.bf16_bits(Hb).tobytes())])
        compare("BF16 reference", K, Hb, ["boundary_%d" % i for i in range(B)], [P("hb.safetensors")], [P("k.npy")])

        # Growth tie: deltas 0.1, 0.1, then smaller: the first maximum (index 0) wins; and a
        # later strict maximum wins over an earlier one.
        base = rng.standard_normal((4, 64)).astype(np.float32)
        rel_targets = [0.5, 1.0, 1.5, 1.25]  # exact deltas 0.5, 0.5, 0.5, -0.25 in binary
        T = base.copy()
        noise = rng.standard_normal((4, 64))
        for i, r in enumerate(rel_targets):
            T[i] = (base[i] + noise[i] * r).astype(np.float32)
        np.save(P("tb.npy"), base)
        np.save(P("tt.npy"), T)
        doc = compare("growth over near-equal deltas", T, base, ["boundary_%d" % i for i in range(4)],
                      [P("tb.npy")], [P("tt.npy")])
        # Equal rows: rel = [x, x, x], deltas x, 0, 0 -> index 0. (An exact tie between two
        # nonzero deltas cannot be promised through float32 data; test_attr.c checks the
        # first-maximum rule on fdl_attr_largest_growth directly.)
        R3 = np.tile(base[0], (3, 1))
        K3 = np.tile(T[0], (3, 1))
        np.save(P("r3.npy"), R3)
        np.save(P("k3.npy"), K3)
        doc = compare("equal rows", K3, R3, ["a", "b", "c"], [P("r3.npy")], [P("k3.npy")], ["--names", "a,b,c"])
        check(doc is not None and doc["largest_relative_error_growth"]["index"] == 0, "equal rows: growth at index 0")
        # Row 0 identical, rows 1..3 the same pair: rel = [0, x, x, x], deltas 0, x, 0, 0 -> 1.
        Rt = np.stack([base[0], base[1], base[1], base[1]])
        Kt = np.stack([base[0], T[1], T[1], T[1]])
        np.save(P("rt.npy"), Rt)
        np.save(P("kt.npy"), Kt)
        doc = compare("repeated rows", Kt, Rt, ["boundary_%d" % i for i in range(4)], [P("rt.npy")], [P("kt.npy")])
        check(doc is not None and doc["largest_relative_error_growth"]["index"] == 1,
              "deltas 0, x, 0, 0: growth at index 1")

        rc, out, _ = U.run(["layers", "diff", P("h.npy"), P("k.npy")])
        check(rc == 0 and "largest relative error growth" in out, "text summary (exit 0)")
        rc2, out2, _ = U.run(["layers", "diff", P("h.npy"), P("k.npy"), "--format", "text"])
        check(rc2 == 0 and out2 == out, "--format text is the default summary")
        # --format kiln-v2 reads its JSON inputs strictly and writes nothing when one is not JSON
        # (tests/test_layers_kiln_v2.py covers the record itself).
        rc, out, err = U.run(["layers", "diff", P("h.npy"), P("k.npy"), "--format", "kiln-v2",
                              "--request", P("h.npy"), "--provenance", P("h.npy"), "--observed", "[]",
                              "--kernel-policy", "qualified", "--final-logits", P("h.npy"),
                              "--out", P("never.json")])
        check(rc == 3 and "h.npy" in err and not os.path.exists(P("never.json")) and out == "",
              "kiln-v2 with a request that is not JSON: exit 3 naming it, nothing written (%d): %s" % (rc, err.strip()))

        # Refusals.
        np.save(P("k_short.npy"), K[:-1])
        refused("shape mismatch", [P("h.npy"), P("k_short.npy")], 3, ["h.npy", "k_short.npy", "same shape"])
        bad = K.copy()
        bad[5, 17] = np.nan
        np.save(P("nan.npy"), bad)
        refused("NaN", [P("h.npy"), P("nan.npy")], 3, ["nan.npy", "row 5", "column 17", "NaN"])
        Z = H.copy()
        Z[2] = 0
        np.save(P("zero_ref.npy"), Z)
        refused("ref_rms == 0", [P("zero_ref.npy"), P("k.npy")], 3, ["row 2", "root mean square is 0"])
        Zk = K.copy()
        Zk[4] = 0
        np.save(P("zero_k.npy"), Zk)
        refused("kk == 0", [P("h.npy"), P("zero_k.npy")], 3, ["row 4", "sum of squares is 0"])
        refused("names count", [P("h.npy"), P("k.npy"), "--names", "a,b"], 3, ["2 boundary names", "33 rows"])
        U.write_safetensors(P("badmeta.safetensors"), [("hidden", "F32", [B, W], H.astype("<f4").tobytes())],
                            {"boundary_names": "not json"})
        refused("bad boundary_names", [P("badmeta.safetensors"), P("k.npy")], 3, ["boundary_names"])
        refused("--hidden not dividing", [P("h.f32"), P("k.f32"), "--hidden", "7"], 3, ["h.f32", "rows of 7"])
        refused("--hidden disagrees", [P("h.npy"), P("k.npy"), "--hidden", "7"], 3, ["h.npy", "--hidden 7"])
        refused("--hidden 0", [P("h.npy"), P("k.npy"), "--hidden", "0"], 4, ["--hidden"])
        refused("missing file", [P("h.npy"), P("nope.npy")], 4, ["nope.npy"])
        rc, out, err = U.run(["layers", "bogus"])
        check(rc == 4 and "'bogus'" in err, "unknown subcommand: exit 4 naming it")
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

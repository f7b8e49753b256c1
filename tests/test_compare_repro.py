"""test_compare_repro.py - exact zeros, determinism and the output files.

* Self-compare: exactly +0.0 everywhere (sign bits checked in tokenwise-kld.npy) and top-1
  exactly 1.0, both short-circuited (hash proof) and with --force-compute.
* Receipts are byte-identical for --threads 1, 2 and 3 (and for the scalar kernel) once
  created_utc (and the seal over it) are blanked, and fully identical with SOURCE_DATE_EPOCH.
* No tuning flag moves a number: six combinations of --chunk-positions/--position-block,
  --vocab-chunk, --threads and --isa give byte-identical receipts and tokenwise-kld.npy, on a
  hidden pair and a logit pair whose records span several replay tiles and vocabulary chunks.
* tokenwise-kld.npy is byte-identical to np.save of the same array; the receipt validates
  against the schema (with gates.decode) and `fidelis verify` reports OK.
* The uncertainty block: bootstrap options, and the single-context disclosure.
"""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

B = U.Builder(vocab=64, hidden=32, contexts=4, tokens=64, seed=5)
N = 4 * 63
ZERO_252_SHA = "896ad5b6b732dce1588636c3af3a8a93af8eb1250df72809f6e26fc29914f65d"


def run(tag, args, env=None):
    o = B.path("o-" + tag)
    rc, so, se = U.compare(*args, "--out", o, env=env)
    U.check(rc in (0, 2), f"{tag}: exit {rc}: {se.strip()[:300]}")
    return o


def raw_values(o):
    with open(os.path.join(o, "tokenwise-kld.npy"), "rb") as f:
        data = f.read()
    return data[128:], data


def common_checks(tag, o):
    r = U.receipt(o)
    a = U.tokenwise(o)
    raw = open(os.path.join(o, "tokenwise-kld.npy"), "rb").read()
    U.check(U.npy_bytes(a) == raw, f"{tag}: tokenwise-kld.npy is np.save's bytes")
    U.check(r["tokenwise"] == {"path": "tokenwise-kld.npy", "bytes": len(raw),
                               "sha256": hashlib.sha256(raw).hexdigest()}, f"{tag}: tokenwise block")
    U.check(U.schema_errors(r) == [], f"{tag}: schema {U.schema_errors(r)[:3]}")
    p = subprocess.run([U.CLI, "verify", os.path.join(o, "comparison-receipt.json")],
                       capture_output=True, text=True)
    U.check(p.returncode == 0 and p.stdout.startswith("OK"), f"{tag}: fidelis verify: {p.stdout}{p.stderr}")
    with open(os.path.join(o, "comparison-receipt.json"), "rb") as f:
        text = f.read()
    U.check(text == (json.dumps(r, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode(),
            f"{tag}: receipt file is the indent-2 sorted layout + LF")
    return r, a


def self_compare(tag, ra, rb, extra=()):
    for force in (False, True):
        t = f"{tag}{'-force' if force else ''}"
        o = run(t, [ra, rb, "--self-compare", *extra] + (["--force-compute"] if force else []))
        r, a = common_checks(t, o)
        values, raw = raw_values(o)
        U.check(values == b"\0" * (8 * N) and len(a) == N, f"{t}: every value is +0.0 (all-zero bytes)")
        U.check(hashlib.sha256(raw).hexdigest() == ZERO_252_SHA, f"{t}: the 252-zero npy digest")
        U.check(r["comparison_kind"] == "reproduction_confirmation", f"{t}: kind")
        U.check(U.bits(r["top1_agreement"]) == U.bits(1.0), f"{t}: top-1 exactly 1.0")
        U.check(all(U.bits(v) == U.bits(0.0) and isinstance(v, float) for v in r["kl"].values()),
                f"{t}: kl block all +0.0 floats")
        U.check(U.bits(r["metric"]["value"]) == U.bits(0.0), f"{t}: metric 0.0")
        sc = r["self_compare"]
        U.check(sc["asserted_exact_zero"] is True and sc["capture_content_digest_equal"] is True,
                f"{t}: self_compare block")
        U.check(sc["expected_tokenwise_sha256"] == ZERO_252_SHA and sc["expected_tokenwise_bytes"] == 2144,
                f"{t}: expected tokenwise")
        U.check(sc["force_compute_agreed"] is (True if force else None), f"{t}: force_compute_agreed")
        c = r["comparator"]
        U.check(c["short_circuited"] is (not force), f"{t}: short_circuited")
        U.check(c["estimator_backend"] == ("c:fp64-fused" if force else "hash_proof"), f"{t}: backend")
        if not force:
            U.check(c["replay_backend"] == "none" and c["device"] == "none" and
                    c["position_block"] is None and c["vocab_chunk"] is None, f"{t}: hash-proof comparator")
            U.check(r["per_domain"] is None and r["context_depth_buckets"] is None, f"{t}: maps null")
        else:
            U.check(r["per_domain"] is not None and all(v == 0.0 for v in r["per_domain"].values()),
                    f"{t}: computed maps")
        U.check(r["estimator"]["zero_handling"] == "exact zero asserted, not rounded", f"{t}: zero handling")
        U.check(r["gates"]["decode"]["detail"].startswith("self-compare"), f"{t}: decode skipped")
        U.check(r["comparability"]["key"] is None, f"{t}: no key")


def blank(r):
    r = json.loads(json.dumps(r))
    r["created_utc"] = ""
    r["receipt_sha256"] = ""
    return r


def thread_identity(tag, ra, rb, extra=()):
    base = None
    for threads in ("1", "2", "3"):
        o = run(f"{tag}-t{threads}", [ra, rb, "--threads", threads, *extra])
        r, a = common_checks(f"{tag}-t{threads}", o)
        cur = (json.dumps(blank(r), sort_keys=True), a.tobytes())
        if base is None:
            base = cur
        else:
            U.check(cur == base, f"{tag}: threads {threads} differs from threads 1")
    o = run(f"{tag}-scalar", [ra, rb, "--threads", "2", "--isa", "scalar", *extra])
    r, a = common_checks(f"{tag}-scalar", o)
    U.check((json.dumps(blank(r), sort_keys=True), a.tobytes()) == base, f"{tag}: scalar kernel differs")
    env = {"SOURCE_DATE_EPOCH": "1700000000"}
    files = []
    for threads in ("1", "3"):
        o = run(f"{tag}-sde{threads}", [ra, rb, "--threads", threads, *extra], env=env)
        files.append(open(os.path.join(o, "comparison-receipt.json"), "rb").read())
    U.check(files[0] == files[1], f"{tag}: receipts byte-identical with SOURCE_DATE_EPOCH")
    U.check(U.receipt(o)["created_utc"] == "2023-11-14T22:13:20Z", f"{tag}: SOURCE_DATE_EPOCH date")


def cpu_has(*names):
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return False
    return all(n in flags for n in names)


FLAG_SETS = [
    [],
    ["--chunk-positions", "7"],
    ["--position-block", "1", "--threads", "1"],
    ["--vocab-chunk", "7", "--threads", "3"],
    ["--isa", "scalar", "--chunk-positions", "200"],
    ["--isa", "avx2", "--threads", "2", "--vocab-chunk", "100000", "--position-block", "65"],
    ["--isa", "avx512", "--threads", "3"],
]
# The replay no longer goes through OpenBLAS, whose kernel choice used to move the bits.
CORETYPES = [None, "Haswell", "SkylakeX", "Zen", "Sandybridge"]


def flag_identity():
    """Records of 149 rows (tiles of 64, 64 and 21 rows) over a vocabulary of 9000 (chunks of 4096,
    4096 and 808): every flag set, and every OPENBLAS_CORETYPE, gives the same bytes; BF16, F16
    and F32 heads alike."""
    big = U.Builder(vocab=9000, hidden=40, contexts=3, tokens=150, seed=21)
    big.dir = B.dir
    W = big.random_head()
    W2 = W + (big.rng.standard_normal(W.shape) * 0.05).astype(np.float32)
    H0 = big.random_hidden()
    H1 = [h + (big.rng.standard_normal(h.shape) * 0.2).astype(np.float32) for h in H0]
    HR = big.pack("FR", tensors=H0, head=W)
    HQ = big.pack("FQ", tensors=H1, head=W2, role="quant")
    HR16 = big.pack("FR16", tensors=H0, head=W, head_dtype="F16")
    HQ32 = big.pack("FQ32", tensors=H1, head=W2, head_dtype="F32", role="quant")
    L0 = [(h.astype(np.float64) @ W.astype(np.float64).T).astype(np.float32) for h in H0]
    L1 = [(h.astype(np.float64) @ W2.astype(np.float64).T).astype(np.float32) for h in H1]
    LR = big.pack("FLR", tensors=L0, tensor_dtype="F32", form="logit", head=W)
    LQ = big.pack("FLQ", tensors=L1, tensor_dtype="F32", form="logit", role="quant", head=W2)
    for tag, ra, rb, extra in (("hidden", HR, HQ, ["--own-heads", "--js"]), ("logit", LR, LQ, []),
                               ("hidden-f16-f32", HR16, HQ32, ["--own-heads"])):
        base = None
        runs = [(flags, None) for flags in FLAG_SETS] + [([], ct) for ct in CORETYPES[1:]]
        for k, (flags, coretype) in enumerate(runs):
            for isa, need in (("avx2", ("avx2", "fma", "f16c")), ("avx512", ("avx512f",))):
                if isa in flags and not cpu_has(*need):
                    print(f"note: no {isa} here; that flag set runs with the default kernel")
                    flags = [f for f in flags if f not in ("--isa", isa)]
            env = {"SOURCE_DATE_EPOCH": "1700000000"}
            if coretype:
                env["OPENBLAS_CORETYPE"] = coretype
            o = run(f"flags-{tag}-{k}", [ra, rb, *extra, *flags], env=env)
            cur = (open(os.path.join(o, "comparison-receipt.json"), "rb").read(),
                   open(os.path.join(o, "tokenwise-kld.npy"), "rb").read())
            if base is None:
                base = cur
                U.check(U.tokenwise(o).max() > 0, f"flags {tag}: a real measurement")
            else:
                what = f"flags {tag} {flags} OPENBLAS_CORETYPE={coretype}"
                U.check(cur[1] == base[1], f"{what}: tokenwise-kld.npy differs")
                U.check(cur[0] == base[0], f"{what}: receipt differs")


def main():
    U.require_shared()
    H0 = B.random_hidden()
    H1 = [h + (B.rng.standard_normal(h.shape) * 0.2).astype(np.float32) for h in H0]
    W = B.random_head()
    W2 = W + (B.rng.standard_normal(W.shape) * 0.05).astype(np.float32)
    R = B.pack("R", tensors=H0, head=W)
    R2 = B.pack("R2", tensors=H0, head=W)
    Q = B.pack("Q", tensors=H1, head=W2, role="quant")
    self_compare("hidden", R, R2)
    self_compare("hidden-own", R, R2, ["--own-heads"])
    L0 = [(B.rng.standard_normal((63, 64)) * 2).astype(np.float32) for _ in range(4)]
    LA = B.pack("LA", tensors=L0, tensor_dtype="F32", form="logit", head=W)
    LB = B.pack("LB", tensors=L0, tensor_dtype="F32", form="logit", head=W)
    self_compare("logit", LA, LB)

    # windows of 8-row blocks: records span windows differently for each thread count
    thread_identity("hidden", R, Q, ["--own-heads", "--position-block", "8", "--vocab-chunk", "24"])
    L1 = [x + (B.rng.standard_normal(x.shape) * 0.3).astype(np.float32) for x in L0]
    LC = B.pack("LC", tensors=L1, tensor_dtype="F32", form="logit", role="quant", head=W)
    thread_identity("logit", LA, LC, ["--position-block", "5", "--vocab-chunk", "10"])

    # flag spellings: --reference/--candidate and --chunk-positions; --js on a hidden pair
    o = run("flags", ["--reference", R, "--candidate", Q, "--own-heads", "--chunk-positions", "8",
                      "--vocab-chunk", "24", "--js", "--threads", "2"])
    r = U.receipt(o)
    U.check(r["comparator"]["position_block"] == 64 and r["comparator"]["vocab_chunk"] == 4096 and
            r["estimator"]["vocab_chunk"] == 4096 and "isa" not in r["comparator"],
            "the receipt records the contract's fixed tile, not the flags")
    base = U.receipt(B.path("o-hidden-t1"))
    U.check(U.tokenwise(o).tobytes() == U.tokenwise(B.path("o-hidden-t1")).tobytes(),
            "JS does not change the KL")
    U.check(r["js"] is not None and 0 < r["js"]["mean"] < r["kl"]["mean"] and base["js"] is None,
            f"--js on a hidden pair {r['js']}")

    flag_identity()

    # uncertainty options
    o = run("noboot", [R, Q, "--own-heads", "--no-bootstrap"])
    u = U.receipt(o)["uncertainty"]
    U.check(u == {"method": "none", "ci95_low": None, "ci95_high": None, "clusters": None,
                  "samples": None, "cluster_unit": None, "seed": None}, f"--no-bootstrap {u}")
    o = run("boot", [R, Q, "--own-heads", "--bootstrap", "500", "--seed", "9"])
    r = U.receipt(o)
    u = r["uncertainty"]
    U.check(u["method"] == "context_cluster_bootstrap_percentile" and u["samples"] == 500 and
            u["seed"] == 9 and u["clusters"] == 4 and u["cluster_unit"] == "context", f"bootstrap {u}")
    U.check(u["ci95_low"] <= u["point_estimate"] <= u["ci95_high"], f"CI brackets the point {u}")
    U.check(abs(u["point_estimate"] - r["kl"]["mean"]) <= 1e-12 * r["kl"]["mean"], "point ~ mean")
    one = U.Builder(vocab=64, hidden=32, contexts=1, tokens=64, seed=5)
    one.dir = B.dir
    S1 = one.pack("S1", tensors=one.random_hidden(), head=W)
    S2 = one.pack("S2", tensors=one.random_hidden(), head=W, role="quant")
    o = run("one-context", [S1, S2])
    r = U.receipt(o)
    U.check(r["uncertainty"]["method"] == "none", "one context: no CI")
    U.check(("uncertainty_not_estimated", "info", False) in
            [(d["code"], d["severity"], d["affects_comparability"]) for d in r["disclosures"]],
            "one context: disclosed")
    U.finish("test_compare_repro")


if __name__ == "__main__":
    main()

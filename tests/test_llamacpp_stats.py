"""test_llamacpp_stats.py - fidelis_extensions.llamacpp_compatible and its per-token arrays.

* Every field against an independent numpy float64 oracle computed from the panel tokens and
  the logits read back from the datasets (log_softmax, argmax, np.var, np.corrcoef,
  np.percentile), on random rows, padded contexts (masks move the targets), tied maxima, targets
  80 below the row maximum, n <= 10 (every llama.cpp stderr 0.0) and n in the thousands.
* A transcription of llama.cpp's statistics code (spec/LLAMACPP-KLD.md, "Per-token statistics"
  and "Aggregates"), written for this test with its uint16 quantization and its -16 cut-offs
  switched off, fed the arrays fidelis wrote: the block matches it to 1e-12 relative.
* The block and the arrays are byte-identical for --threads 1/2/3 and every ISA the CPU runs;
  a hidden-form pair gets the block through the replayed logits; a forced self-compare gives
  KL +0.0, same_top 1.0 and ln_ppl_ratio 0.0; a hash proof has neither block nor arrays.
"""
import hashlib
import json
import math
import os
import struct
import subprocess

import numpy as np

import compare_util as U

NAMES = ("tokenwise-logprob-ref.npy", "tokenwise-logprob-cand.npy", "tokenwise-top1.npy")
DP_F = [("99.9", 0.999), ("99", 0.99), ("95", 0.95), ("90", 0.9), ("75", 0.75), ("50", 0.5),
        ("25", 0.25), ("10", 0.1), ("5", 0.05), ("1", 0.01), ("0.1", 0.001)]
KL_F = [("99.9", 0.999), ("99", 0.99), ("95", 0.95), ("90", 0.9), ("50", 0.5), ("10", 0.1),
        ("5", 0.05), ("1", 0.01), ("0.1", 0.001)]


def cpu_has(*flags):
    try:
        with open("/proc/cpuinfo") as f:
            have = set(next(l for l in f if l.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return False
    return all(x in have for x in flags)


def close(got, want, rel, what, absol=0.0):
    ok = abs(got - want) <= max(rel * abs(want), absol)
    return U.check(ok, f"{what}: got {got!r}, want {want!r} (rel {rel}, abs {absol})")


def block(out):
    return U.receipt(out).get("fidelis_extensions", {}).get("llamacpp_compatible")


def arrays(out):
    return [np.load(os.path.join(out, n)) for n in NAMES]


def run(tag, ra, rb, *extra):
    out = os.path.join(os.path.dirname(ra), f"out-{tag}")
    rc, so, se = U.compare(ra, rb, "--out", out, *extra, env={"SOURCE_DATE_EPOCH": "1700000000"})
    U.check(rc in (0, 2), f"{tag}: compare exit {rc}: {se}")
    return out, so


# ---- the oracle: panel tokens and logits, float64 -----------------------------------------

def targets_of(tokens, mask):
    """Row j predicts token i_j + 1 over the kept positions (both i and i+1 attended)."""
    L = len(tokens)
    m = mask if mask is not None else [1] * L
    return [int(tokens[i + 1]) for i in range(L - 1) if m[i] and m[i + 1]]


def oracle_arrays(ra, rb, tokens, masks):
    t = [x.astype(np.float64) for _, x in U.capture_tensors(ra)]
    s = [x.astype(np.float64) for _, x in U.capture_tensors(rb)]
    lpr, lpc, top, kl = [], [], [], []
    for c, (a, b) in enumerate(zip(t, s)):
        tg = np.array(targets_of(tokens[c], masks[c] if masks else None))
        U.check(len(tg) == a.shape[0], f"oracle: context {c} has {len(tg)} targets, {a.shape[0]} rows")
        la, lb = U.log_softmax64(a), U.log_softmax64(b)
        rows = np.arange(a.shape[0])
        lpr.append(la[rows, tg])
        lpc.append(lb[rows, tg])
        top.append((np.argmax(a, axis=1) == np.argmax(b, axis=1)).astype(np.uint8))
        kl.append(U.kl_rows(a, b))
    return [np.concatenate(x) for x in (lpr, lpc, top, kl)]


def oracle_stats(lpr, lpc, top, kl):
    """The block's fields, computed the textbook way: two-pass variances, np.corrcoef,
    np.percentile. llama.cpp's rule: an iid stderr is 0 unless n > 10."""
    n = len(lpr)
    big = n > 10

    def se(x):
        return math.sqrt(np.var(x) / (n - 1)) if big and np.var(x) > 0 else 0.0

    a, b = -lpr, -lpc
    dp = np.exp(lpc) - np.exp(lpr)
    o = {"n": n}
    for k, x in (("ppl_reference", a), ("ppl_candidate", b)):
        v = math.exp(np.mean(x))
        o[k] = {"value": v, "stderr": v * se(x)}
    d = b - a
    o["ln_ppl_ratio"] = {"value": float(np.mean(b) - np.mean(a)), "stderr": se(d)}
    r = math.exp(o["ln_ppl_ratio"]["value"])
    o["ppl_ratio"] = {"value": r, "stderr": r * se(d)}
    o["logprob_correlation"] = float(np.corrcoef(lpr, lpc)[0, 1]) \
        if np.var(lpr) > 0 and np.var(lpc) > 0 else 0.0
    rms = math.sqrt(np.mean(dp * dp))
    sdp = np.sort(dp)
    skl = np.sort(kl)
    o["delta_p"] = {"mean": float(np.mean(dp)), "mean_stderr": se(dp), "rms": rms,
                    "rms_stderr": 0.5 / rms * se(dp * dp) if rms > 0 else 0.0,
                    "max": float(sdp[-1]), "min": float(sdp[0]),
                    "percentiles": {k: float(np.percentile(dp, 100 * f)) for k, f in DP_F}}
    p = float(np.mean(top))
    o["same_top"] = {"value": p, "stderr": math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else 0.0}
    o["kld"] = {"mean": float(np.mean(kl)), "stderr": se(kl), "max": float(skl[-1]),
                "min": float(skl[0]),
                "percentiles": {k: float(np.percentile(kl, 100 * f)) for k, f in KL_F}}
    return o


def compare_tree(got, want, rel, what, absol):
    if isinstance(want, dict):
        U.check(isinstance(got, dict) and set(got) >= set(want), f"{what}: keys {got}")
        for k in want:
            if isinstance(got, dict) and k in got:
                compare_tree(got[k], want[k], rel, f"{what}.{k}", absol)
        return
    U.check(isinstance(got, (int, float)), f"{what}: not a number: {got!r}")
    if isinstance(want, int) and not isinstance(want, bool):
        U.check(got == want, f"{what}: {got} != {want}")
        return
    close(float(got), float(want), rel, what, absol)


# ---- llama.cpp's statistics, transcribed (quantization and cut-offs switched off) ----------

def llamacpp(lp_ref, lp_cand, top1, kld):
    """llama-perplexity's kl_divergence() aggregates, per spec/LLAMACPP-KLD.md, with exact
    log-probabilities in place of its uint16 ones and no -16 cut-off: per token the sums it
    keeps in double, then mean_and_uncertainty, covariance and its percentile()."""
    sum_nll = sum_nll2 = sum_nll_base = sum_nll_base2 = sum_nll_nll_base = 0.0
    sum_kld = sum_kld2 = sum_p_diff = sum_p_diff2 = sum_p_diff4 = 0.0
    n_same_top = 0
    count = 0
    kld_values, p_diff_values = [], []
    for i in range(len(lp_ref)):
        nll = -float(lp_cand[i])
        nll_base = -float(lp_ref[i])
        sum_nll += nll
        sum_nll2 += nll * nll
        sum_nll_base += nll_base
        sum_nll_base2 += nll_base * nll_base
        sum_nll_nll_base += nll * nll_base
        k = float(kld[i])
        sum_kld += k
        sum_kld2 += k * k
        kld_values.append(k)
        p_diff = math.exp(-nll) - math.exp(-nll_base)
        sum_p_diff += p_diff
        p_diff2 = p_diff * p_diff
        sum_p_diff2 += p_diff2
        sum_p_diff4 += p_diff2 * p_diff2
        p_diff_values.append(p_diff)
        n_same_top += int(top1[i])
        count += 1

    def mean_and_uncertainty(s, s2, n):
        mean = s / n
        var = s2 / n - mean * mean
        return mean, (math.sqrt(var / (n - 1)) if n > 10 and var > 0 else 0.0)

    def covariance(a, b, ab, n):
        return (ab / n - a * b / (n * n)) / (n - 1)

    def percentile(v, f):
        p = f * (len(v) - 1)
        ip = math.floor(p)
        frac = p - ip
        return (1 - frac) * v[ip] + frac * v[min(ip + 1, len(v) - 1)]

    def median(v):
        n = len(v)
        return 0.5 * (v[n // 2] + v[n // 2 - 1]) if n % 2 == 0 else v[n // 2]

    log_ppl = mean_and_uncertainty(sum_nll, sum_nll2, count)
    log_ppl_base = mean_and_uncertainty(sum_nll_base, sum_nll_base2, count)
    log_ppl_cov = covariance(sum_nll, sum_nll_base, sum_nll_nll_base, count)
    log_ppl_cor = log_ppl_cov / (log_ppl[1] * log_ppl_base[1])
    ppl_val = math.exp(log_ppl[0])
    ppl_base_val = math.exp(log_ppl_base[0])
    log_ratio = log_ppl[0] - log_ppl_base[0]
    log_ratio_unc = math.sqrt(log_ppl[1] ** 2 + log_ppl_base[1] ** 2 - 2.0 * log_ppl_cov)
    ratio = math.exp(log_ratio)
    kl = mean_and_uncertainty(sum_kld, sum_kld2, count)
    pd = mean_and_uncertainty(sum_p_diff, sum_p_diff2, count)
    mse = mean_and_uncertainty(sum_p_diff2, sum_p_diff4, count)
    rms = math.sqrt(mse[0])
    p_top = n_same_top / count
    kld_values.sort()
    p_diff_values.sort()

    def pcts(v, table):
        return {k: (median(v) if k == "50" else percentile(v, f)) for k, f in table}

    return {
        # What the cancelling fields are computed from (for their tolerances, not in the block).
        "_aux": {"nll": max(abs(log_ppl[0]), abs(log_ppl_base[0])),
                 "var_sum": log_ppl[1] ** 2 + log_ppl_base[1] ** 2},
        "n": count,
        "ppl_reference": {"value": ppl_base_val, "stderr": ppl_base_val * log_ppl_base[1]},
        "ppl_candidate": {"value": ppl_val, "stderr": ppl_val * log_ppl[1]},
        "ln_ppl_ratio": {"value": log_ratio, "stderr": log_ratio_unc},
        "ppl_ratio": {"value": ratio, "stderr": ratio * log_ratio_unc},
        "logprob_correlation": log_ppl_cor,
        "delta_p": {"mean": pd[0], "mean_stderr": pd[1], "rms": rms,
                    "rms_stderr": 0.5 / rms * mse[1], "max": p_diff_values[-1],
                    "min": p_diff_values[0], "percentiles": pcts(p_diff_values, DP_F)},
        "same_top": {"value": p_top, "stderr": math.sqrt(p_top * (1 - p_top) / (count - 1))},
        "kld": {"mean": kl[0], "stderr": kl[1], "max": kld_values[-1], "min": kld_values[0],
                "percentiles": pcts(kld_values, KL_F)},
    }


# ---- checks ---------------------------------------------------------------------------------

def check_shape(tag, out, blk, n):
    """The agreed shape, the arrays' dtypes, lengths and digests, the schema and verify."""
    if not U.check(blk is not None, f"{tag}: no fidelis_extensions.llamacpp_compatible"):
        return False
    rc = U.receipt(out)
    U.check(list(rc["fidelis_extensions"]) == ["llamacpp_compatible"], f"{tag}: one block")
    want_keys = {"schema", "n", "ppl_reference", "ppl_candidate", "ln_ppl_ratio", "ppl_ratio",
                 "logprob_correlation", "delta_p", "same_top", "kld", "arrays", "definitions"}
    U.check(set(blk) == want_keys, f"{tag}: keys {sorted(blk)}")
    U.check(blk["schema"] == "fidelis.llamacpp-compatible.v1", f"{tag}: schema")
    U.check(blk["definitions"] == "docs/COMPARE.md#llamacpp-compatible-statistics",
            f"{tag}: definitions")
    U.check(blk["n"] == n == rc["measurement_scope"]["scored_positions"], f"{tag}: n")
    U.check(set(blk["delta_p"]["percentiles"]) == {k for k, _ in DP_F}, f"{tag}: dp keys")
    U.check(set(blk["kld"]["percentiles"]) == {k for k, _ in KL_F}, f"{tag}: kld keys")
    for name in NAMES:
        path = os.path.join(out, name)
        data = open(path, "rb").read()
        U.check(blk["arrays"].get(name) == hashlib.sha256(data).hexdigest(), f"{tag}: {name} digest")
    lr, lc, t1 = arrays(out)
    U.check(lr.dtype.str == "<f8" and lc.dtype.str == "<f8" and t1.dtype.str == "|u1",
            f"{tag}: dtypes {lr.dtype.str} {lc.dtype.str} {t1.dtype.str}")
    U.check(lr.shape == lc.shape == t1.shape == (n,), f"{tag}: shapes")
    U.check(U.schema_errors(rc) == [], f"{tag}: schema {U.schema_errors(rc)[:3]}")
    p = subprocess.run([U.CLI, "verify", os.path.join(out, "comparison-receipt.json")],
                       capture_output=True, text=True)
    U.check(p.returncode == 0 and p.stdout.startswith("OK"), f"{tag}: verify {p.stdout}{p.stderr}")
    # The sealed top1_agreement and the block agree on the top-1 rule.
    U.check(blk["same_top"]["value"] == rc["top1_agreement"], f"{tag}: same_top vs top1_agreement")
    U.check(U.bits(blk["kld"]["mean"]) == U.bits(rc["kl"]["mean"]), f"{tag}: kld.mean vs kl.mean")
    return True


def check_llamacpp(tag, blk, want):
    """1e-12 relative, field by field. Where llama.cpp's formula is a difference of two larger
    quantities (mean NLLs, sigma_Q^2 + sigma_b^2 - 2cov), 1e-12 relative to those quantities:
    the transcription's own rounding is of that size there, and fidelis computes these from the
    per-token differences, which is more exact, not less."""
    aux = want.pop("_aux")
    cancel = {"ln_ppl_ratio", "ppl_ratio"}
    compare_tree({k: v for k, v in blk.items() if k not in cancel and k in want},
                 {k: v for k, v in want.items() if k not in cancel}, 1e-12, f"{tag} llama.cpp", 0.0)
    ln, r = want["ln_ppl_ratio"], want["ppl_ratio"]
    tol_v = 1e-12 * aux["nll"]
    tol_e = 1e-12 * aux["var_sum"] / (2 * ln["stderr"]) if ln["stderr"] > 0 else 1e-12
    close(blk["ln_ppl_ratio"]["value"], ln["value"], 1e-12, f"{tag} llama.cpp ln_ppl_ratio.value", tol_v)
    close(blk["ln_ppl_ratio"]["stderr"], ln["stderr"], 1e-12,
          f"{tag} llama.cpp ln_ppl_ratio.stderr", tol_e)
    close(blk["ppl_ratio"]["value"], r["value"], 1e-12, f"{tag} llama.cpp ppl_ratio.value",
          r["value"] * tol_v)
    close(blk["ppl_ratio"]["stderr"], r["stderr"], 1e-12, f"{tag} llama.cpp ppl_ratio.stderr",
          r["value"] * (tol_e + ln["stderr"] * tol_v))


def logit_pair(b, tag, ref, cand, masks=None):
    head = b.random_head()
    extra = (lambda i: {"mask": masks[i]}) if masks else None
    ra = b.pack(f"r-{tag}", tensors=ref, tensor_dtype="F32", form="logit", head=head, extra=extra)
    rb = b.pack(f"c-{tag}", tensors=cand, tensor_dtype="F32", form="logit", role="quant",
                head=head, extra=extra)
    return ra, rb


def oracle_case(tag, b, ref, cand, masks=None, transcription=True):
    ra, rb = logit_pair(b, tag, ref, cand, masks)
    out, so = run(tag, ra, rb, "--threads", "2")
    blk = block(out)
    n = sum(x.shape[0] for x in ref)
    if not check_shape(tag, out, blk, n):
        return None
    lpr, lpc, top, kl = oracle_arrays(ra, rb, b.tokens, masks)
    gr, gc, gt = arrays(out)
    for nm, g, w in (("logprob-ref", gr, lpr), ("logprob-cand", gc, lpc)):
        err = np.abs(g - w)
        bad = np.flatnonzero(err > 1e-12 * np.maximum(1.0, np.abs(w)))
        U.check(bad.size == 0, f"{tag}: {nm} rows {bad[:5]} off the oracle by {err.max():.3g}")
    U.check(np.array_equal(gt, top), f"{tag}: top1 differs from the oracle's argmax rule")
    U.check(np.array_equal(U.tokenwise(out), U.tokenwise(out)), f"{tag}: kl readable")
    want = oracle_stats(lpr, lpc, top, kl)
    # Values from independently computed arrays: the arrays agree to 1e-12, the sums to
    # rounding; stderrs through a different (two-pass) variance formula.
    scale_dp = max(float(np.max(np.abs(lpc - lpr))), 1e-300)
    compare_tree({k: blk[k] for k in ("n", "ppl_reference", "ppl_candidate", "same_top")},
                 {k: want[k] for k in ("n", "ppl_reference", "ppl_candidate", "same_top")},
                 1e-10, f"{tag} oracle", 0.0)
    compare_tree(blk["ln_ppl_ratio"], want["ln_ppl_ratio"], 1e-9, f"{tag} oracle ln_ppl_ratio",
                 1e-13)
    compare_tree(blk["ppl_ratio"], want["ppl_ratio"], 1e-9, f"{tag} oracle ppl_ratio", 1e-13)
    close(blk["logprob_correlation"], want["logprob_correlation"], 1e-10,
          f"{tag} oracle logprob_correlation", 1e-12)
    compare_tree(blk["delta_p"], want["delta_p"], 1e-9, f"{tag} oracle delta_p",
                 1e-13 * scale_dp)
    compare_tree(blk["kld"], want["kld"], 1e-9, f"{tag} oracle kld", 1e-15)
    if n <= 10:
        for k in ("ppl_reference", "ppl_candidate", "ln_ppl_ratio", "ppl_ratio"):
            U.check(blk[k]["stderr"] == 0.0, f"{tag}: n={n}: {k}.stderr is {blk[k]['stderr']}")
        U.check(blk["delta_p"]["mean_stderr"] == 0.0 and blk["delta_p"]["rms_stderr"] == 0.0 and
                blk["kld"]["stderr"] == 0.0, f"{tag}: n={n}: stderrs 0.0")
    if transcription and n > 10:
        # llama.cpp's code on the arrays fidelis wrote (the same arrays), to 1e-12 relative.
        check_llamacpp(tag, blk, llamacpp(gr, gc, gt, U.tokenwise(out)))
    U.check("llama.cpp-compatible statistics" in so and "Same top p" in so,
            f"{tag}: text summary lacks the llama.cpp section")
    return ra, rb, out


def random_rows(b, rows, V, scale=3.0, noise=0.3):
    ref = [(b.rng.standard_normal((r, V)) * scale).astype(np.float32) for r in rows]
    cand = [r + (b.rng.standard_normal(r.shape) * noise).astype(np.float32) for r in ref]
    return ref, cand


def case_random():
    b = U.Builder(vocab=48, contexts=3, tokens=40, seed=11)
    ref, cand = random_rows(b, [b.rows(i) for i in range(3)], 48)
    return oracle_case("random", b, ref, cand)


def case_masked():
    # Padded contexts: the mask decides which positions are kept and so which token each row
    # predicts.
    b = U.Builder(vocab=32, contexts=3, tokens=60, seed=12)
    attended = [25, 60, 41]
    masks = [[1] * a + [0] * (60 - a) for a in attended]
    ref, cand = random_rows(b, [a - 1 for a in attended], 32)
    oracle_case("masked", b, ref, cand, masks)


def case_adversarial():
    V = 40
    b = U.Builder(vocab=V, contexts=3, tokens=50, seed=13)
    ref, cand = random_rows(b, [b.rows(i) for i in range(3)], V, scale=2.0, noise=0.2)
    for c in range(3):
        tg = targets_of(b.tokens[c], None)
        for j in range(ref[c].shape[0]):
            kind = (j + c) % 5
            t, s = ref[c][j], cand[c][j]
            if kind == 0:  # tied maxima on both sides, the same first index: agree
                s[:] = t
                m = float(max(t.max(), s.max())) + 1.0
                t[[3, 17]] = m
                s[[3, 17]] = m
                s[25] += 0.5
            elif kind == 1:  # tied in the reference, the candidate's first maximum elsewhere
                m = float(t.max()) + 1.0
                t[[5, 9]] = m
                s[[9, 5]] = [m, m - 1e-3]
            elif kind == 2:  # a target 80 below the maximum on both sides
                t[tg[j]] = float(t.max()) - 80.0
                s[tg[j]] = float(s.max()) - 80.0
            elif kind == 3:  # target tiny only in the candidate
                s[tg[j]] = float(s.max()) - 80.0
            # kind 4: plain random row
    res = oracle_case("adversarial", b, ref, cand)
    if res:
        lr, lc, _ = arrays(res[2])
        U.check(lr.min() < -79 and lc.min() < -79, "adversarial: tiny targets present")


def case_wide():
    # More than two vocabulary chunks (4096): targets before, inside and after the chunk that
    # holds the maximum, which rises in a later chunk on one side only.
    V = 9000
    b = U.Builder(vocab=V, contexts=2, tokens=14, seed=18)
    ref, cand = random_rows(b, [b.rows(i) for i in range(2)], V)
    for c in range(2):
        for j in range(ref[c].shape[0]):
            ref[c][j][[100, 5000, 8999][j % 3]] += 12.0
            cand[c][j][[8500, 4096, 7][j % 3]] += 12.0
    oracle_case("wide", b, ref, cand)


def case_small():
    b = U.Builder(vocab=16, contexts=2, tokens=5, seed=14)  # n = 8 <= 10
    ref, cand = random_rows(b, [b.rows(i) for i in range(2)], 16)
    oracle_case("small", b, ref, cand)


def case_large():
    b = U.Builder(vocab=64, contexts=4, tokens=1500, seed=15)
    ref, cand = random_rows(b, [b.rows(i) for i in range(4)], 64, scale=2.5, noise=0.05)
    res = oracle_case("large", b, ref, cand)
    if not res:
        return
    ra, rb, out = res
    # Determinism: the block and the arrays are the same bytes for any thread count and ISA.
    base = (json.dumps(block(out), sort_keys=True),
            [open(os.path.join(out, n), "rb").read() for n in NAMES])
    isas = ["scalar"] + [i for i, need in (("avx2", ("avx2", "fma")), ("avx512", ("avx512f",)))
                         if cpu_has(*need)]
    for k, flags in enumerate([["--threads", "1"], ["--threads", "3"]] +
                              [["--isa", i, "--threads", "2"] for i in isas]):
        o, _ = run(f"large-det-{k}", ra, rb, *flags)
        cur = (json.dumps(block(o), sort_keys=True),
               [open(os.path.join(o, n), "rb").read() for n in NAMES])
        U.check(cur[0] == base[0], f"determinism {flags}: block differs")
        U.check(cur[1] == base[1], f"determinism {flags}: arrays differ")


def case_hidden():
    # The replayed logits feed the same pass; the oracle replays in float64, so the arrays agree
    # to the float32 GEMM's error, and the statistics agree with the arrays fidelis wrote.
    b = U.Builder(vocab=4200, hidden=24, contexts=3, tokens=30, seed=16)  # two replay tiles
    W = b.random_head()
    W2 = W + (b.rng.standard_normal(W.shape) * 0.01).astype(np.float32)
    H0 = b.random_hidden()
    H1 = [h + (b.rng.standard_normal(h.shape) * 0.05).astype(np.float32) for h in H0]
    ra = b.pack("hr", tensors=H0, head=W, tensor_dtype="F32", head_dtype="F32")
    rb = b.pack("hq", tensors=H1, head=W2, tensor_dtype="F32", head_dtype="F32", role="quant")
    out, _ = run("hidden", ra, rb, "--own-heads", "--threads", "2")
    n = sum(h.shape[0] for h in H0)
    blk = block(out)
    if not check_shape("hidden", out, blk, n):
        return
    gr, gc, gt = arrays(out)
    wa, wb = U.head_of(ra).astype(np.float64), U.head_of(rb).astype(np.float64)
    t = np.concatenate([x.astype(np.float64) for _, x in U.capture_tensors(ra)]) @ wa.T
    s = np.concatenate([x.astype(np.float64) for _, x in U.capture_tensors(rb)]) @ wb.T
    tg = np.concatenate([targets_of(b.tokens[c], None) for c in range(3)])
    rows = np.arange(n)
    wr, wc = U.log_softmax64(t)[rows, tg], U.log_softmax64(s)[rows, tg]
    U.check(np.max(np.abs(gr - wr)) < 1e-4 and np.max(np.abs(gc - wc)) < 1e-4,
            f"hidden: log-probs off the float64 replay by {np.max(np.abs(gr - wr)):.3g}, "
            f"{np.max(np.abs(gc - wc)):.3g}")
    check_llamacpp("hidden", blk, llamacpp(gr, gc, gt, U.tokenwise(out)))
    # The same pair with --js (a second sweep) gives the same block.
    o2, _ = run("hidden-js", ra, rb, "--own-heads", "--js")
    U.check(block(o2) == blk, "hidden: --js changes the block")


def case_self():
    b = U.Builder(vocab=30, contexts=3, tokens=25, seed=17)
    ref, _ = random_rows(b, [b.rows(i) for i in range(3)], 30)
    head = b.random_head()
    ra = b.pack("s1", tensors=ref, tensor_dtype="F32", form="logit", head=head)
    rb = b.pack("s2", tensors=[x.copy() for x in ref], tensor_dtype="F32", form="logit",
                head=head)
    out, _ = run("self-forced", ra, rb, "--self-compare", "--force-compute")
    blk = block(out)
    n = sum(x.shape[0] for x in ref)
    if not check_shape("self", out, blk, n):
        return
    U.check(U.bits(blk["kld"]["mean"]) == U.bits(0.0), f"self: kld.mean {blk['kld']['mean']!r}")
    U.check(blk["kld"]["max"] == 0.0 and blk["kld"]["stderr"] == 0.0, "self: kld max/stderr")
    U.check(blk["same_top"] == {"value": 1.0, "stderr": 0.0}, f"self: same_top {blk['same_top']}")
    U.check(blk["ln_ppl_ratio"] == {"value": 0.0, "stderr": 0.0}, f"self: {blk['ln_ppl_ratio']}")
    U.check(blk["ppl_ratio"] == {"value": 1.0, "stderr": 0.0}, f"self: {blk['ppl_ratio']}")
    U.check(blk["delta_p"]["rms"] == 0.0 and blk["delta_p"]["max"] == 0.0, "self: delta_p zero")
    U.check(blk["ppl_reference"] == blk["ppl_candidate"], "self: equal PPLs")
    lr, lc, t1 = arrays(out)
    U.check(lr.tobytes() == lc.tobytes() and bool(np.all(t1 == 1)), "self: arrays equal")
    # The hash proof computes no row: no block and no arrays.
    o2, _ = run("self-proof", ra, rb, "--self-compare")
    U.check(block(o2) is None, "hash proof: a block was written")
    U.check(not any(os.path.exists(os.path.join(o2, n)) for n in NAMES),
            "hash proof: arrays were written")


def main():
    U.require_shared()
    case_random()
    case_masked()
    case_adversarial()
    case_wide()
    case_small()
    case_large()
    case_hidden()
    case_self()
    U.finish("test_llamacpp_stats")


if __name__ == "__main__":
    main()

"""test_compare_oracle.py - fidelis compare against independent numpy oracles.

1. Logit form: the token-wise KL and top-1 of a compare equal a float64 numpy oracle computed
   from the dataset bytes, within 1e-12 relative (1e-15 absolute near zero).
2. Hidden form: the same against an oracle that replays hidden @ head^T exactly in float64.
   fidelis replays in float32 (sgemm); any float32 dot product of length H is within
   gamma_H * sum_k |h_k w_k| of the exact one (gamma_H = H u / (1 - H u), u = 2^-24) whatever
   its summation order, so each KL may move by at most that logit error times the 1-norm of
   KL's gradient (plus a second-order allowance). That is the bound checked.
3. Every receipt statistic is bitwise equal to numpy / explicit-Neumaier Python evaluated on
   tokenwise-kld.npy: mean, quantiles, max, per-context, per-domain, per-stratum, depth
   buckets, high-KLD order, top-1, JS block, logit absolute error.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

BUCKETS = [("0000-0255", 0, 256), ("0256-0511", 256, 512), ("0512-1023", 512, 1024),
           ("1024-1535", 1024, 1536), ("1536-2046", 1536, 2047)]


def check_stats(tag, rc, a):
    """Bitwise checks of the receipt's statistics against numpy on the written array."""
    kl = rc["kl"]
    U.check(U.bits(kl["mean"]) == U.bits(np.mean(a)), f"{tag}: kl.mean")
    U.check(U.bits(rc["metric"]["value"]) == U.bits(np.mean(a)), f"{tag}: metric.value")
    U.check(U.bits(rc["kl_micro_token_mean"]) == U.bits(np.mean(a)), f"{tag}: micro mean")
    for key, q in [("median", 0.5), ("p95", 0.95), ("p99", 0.99), ("p99_9", 0.999)]:
        U.check(U.bits(kl[key]) == U.bits(np.quantile(a, q)),
                f"{tag}: kl.{key} {kl[key]!r} vs numpy {np.quantile(a, q)!r}")
    U.check(U.bits(kl["max"]) == U.bits(np.max(a)), f"{tag}: kl.max")
    pcs = rc["per_context"]
    off = 0
    by_dom, by_str, bucket_means = {}, {}, {b[0]: [] for b in BUCKETS}
    for pc in pcs:
        n = pc["scored_rows"]
        seg = a[off:off + n]
        U.check(U.bits(pc["mean"]) == U.bits(np.mean(seg)), f"{tag}: context {pc['index']} mean")
        U.check(U.bits(pc["max"]) == U.bits(np.max(seg)), f"{tag}: context {pc['index']} max")
        if pc["domain"]:
            by_dom.setdefault(pc["domain"], []).append(pc["mean"])
        if pc["allocation_stratum"]:
            by_str.setdefault(pc["allocation_stratum"], []).append(pc["mean"])
        for name, lo, hi in BUCKETS:
            if n > lo:
                bucket_means[name].append(np.mean(seg[lo:min(hi, n)]))
        off += n
    U.check(off == len(a), f"{tag}: per_context rows cover the array")
    want_dom = {k: U.neumaier_mean(v) for k, v in by_dom.items()} or None
    U.check(rc["per_domain"] == want_dom and all(
        U.bits(rc["per_domain"][k]) == U.bits(v) for k, v in (want_dom or {}).items()),
        f"{tag}: per_domain {rc['per_domain']} vs {want_dom}")
    want_str = {k: U.neumaier_mean(v) for k, v in by_str.items()} or None
    U.check(rc["per_stratum"] == want_str, f"{tag}: per_stratum {rc['per_stratum']} vs {want_str}")
    if want_str:
        macro = U.neumaier_mean([want_str[k] for k in sorted(want_str)])
        U.check(U.bits(rc["kl_macro_stratum_mean"]) == U.bits(macro), f"{tag}: macro stratum mean")
    else:
        U.check(rc["kl_macro_stratum_mean"] is None, f"{tag}: macro stratum mean null")
    want_b = {k: U.neumaier_mean(v) for k, v in bucket_means.items() if v} or None
    got_b = rc["context_depth_buckets"]
    U.check(got_b is not None and want_b is not None and set(got_b) == set(want_b) and all(
        U.bits(got_b[k]) == U.bits(want_b[k]) for k in want_b), f"{tag}: depth buckets {got_b} vs {want_b}")
    order = sorted(pcs, key=lambda c: c["mean"], reverse=True)[:5]
    U.check(rc["high_kld_contexts"] == order, f"{tag}: high_kld_contexts order")
    U.check(rc["top1_discordant_contexts"] == [], f"{tag}: top1_discordant_contexts")


def logit_case():
    # Padded contexts of different lengths (masks): one long enough to reach every depth bucket
    # and rows beyond 2046, with strata and domains.
    b = U.Builder(vocab=24, contexts=4, tokens=2100, seed=7)
    attended = [40, 300, 700, 2100]
    rows = [n - 1 for n in attended]
    ref = [(b.rng.standard_normal((rows[i], 24)) * 3).astype(np.float32) for i in range(4)]
    cand = [r + (b.rng.standard_normal(r.shape) * 0.3).astype(np.float32) for r in ref]
    cand[1][5] = ref[1][5]  # one row bitwise equal: exactly +0.0
    def strata(i):
        return {"allocation_stratum": ["s-b", "s-a"][i % 2],
                "mask": [1] * attended[i] + [0] * (2100 - attended[i])}
    head = b.random_head()
    ra = b.pack("ref", tensors=ref, tensor_dtype="F32", form="logit", head=head, extra=strata)
    cb = b.pack("cand", tensors=cand, tensor_dtype="F32", form="logit", role="quant",
                head=head, extra=strata)
    out = b.path("out")
    rc_, so, se = U.compare(ra, cb, "--out", out, "--threads", "2", "--position-block", "32",
                            "--vocab-chunk", "7")
    if not U.check(rc_ in (0, 2), f"logit compare exit {rc_}: {se}"):
        return
    rc = U.receipt(out)
    a = U.tokenwise(out)
    t = np.concatenate([x for _, x in U.capture_tensors(ra)])
    s = np.concatenate([x for _, x in U.capture_tensors(cb)])
    want = U.kl_rows(t, s)
    err = np.abs(a - want)
    ok = err <= np.maximum(1e-12 * np.abs(want), 1e-15)
    U.check(ok.all(), f"logit KL vs oracle: worst {err.max():.3e} at row {int(err.argmax())}")
    zero_row = sum(x.shape[0] for x in ref[:1]) + 5
    U.check(U.bits(a[zero_row]) == U.bits(0.0), "bitwise-equal row gives +0.0")
    top1 = np.mean(np.argmax(t, axis=1) == np.argmax(s, axis=1))
    matches = int((np.argmax(t, axis=1) == np.argmax(s, axis=1)).sum())
    U.check(U.bits(rc["top1_agreement"]) == U.bits(matches / len(a)),
            f"top1 {rc['top1_agreement']} vs {top1}")
    # JS is on by default for logit pairs; check its block against its own array's oracle.
    p, q = np.exp(U.log_softmax64(t)), np.exp(U.log_softmax64(s))
    m = 0.5 * (p + q)
    js = 0.5 * (p * (np.log(p) - np.log(m))).sum(axis=1) + 0.5 * (q * (np.log(q) - np.log(m))).sum(axis=1)
    U.check(rc["js"] is not None and abs(rc["js"]["mean"] - np.mean(js)) <= 1e-12 * np.mean(js),
            f"js mean {rc['js'] and rc['js']['mean']} vs {np.mean(js)}")
    abs_mean = np.abs(t.astype(np.float64) - s).sum() / t.size
    U.check(abs(rc["logit_absolute_error_mean"] - abs_mean) <= 1e-12 * abs_mean,
            "logit_absolute_error_mean")
    U.check(rc["logit_absolute_error_max"] == float(np.abs(t.astype(np.float64) - s).max()),
            "logit_absolute_error_max")
    check_stats("logit", rc, a)
    U.check(len(rc["context_depth_buckets"]) == 5, "every depth bucket present")
    U.check(U.schema_errors(rc) == [], f"schema: {U.schema_errors(rc)[:3]}")


def hidden_case(own_heads):
    b = U.Builder(vocab=300, hidden=48, contexts=3, tokens=50, seed=11)
    hid = b.random_hidden()
    hid_c = [h + (b.rng.standard_normal(h.shape) * 0.05).astype(np.float32) for h in hid]
    head = b.random_head()
    head_c = head + (b.rng.standard_normal(head.shape) * 0.01).astype(np.float32) if own_heads else head
    ra = b.pack("ref", tensors=hid, head=head)
    cb = b.pack("cand", tensors=hid_c, head=head_c, role="quant")
    out = b.path("out")
    args = [ra, cb, "--out", out, "--position-block", "16", "--vocab-chunk", "64", "--threads", "3"]
    if own_heads:
        args.append("--own-heads")
    rc_, so, se = U.compare(*args)
    tag = f"hidden(own_heads={own_heads})"
    if not U.check(rc_ in (0, 2), f"{tag} exit {rc_}: {se}"):
        return
    rc = U.receipt(out)
    a = U.tokenwise(out)
    h = np.concatenate([x for _, x in U.capture_tensors(ra)]).astype(np.float64)
    hc = np.concatenate([x for _, x in U.capture_tensors(cb)]).astype(np.float64)
    wa, wb = U.head_of(ra).astype(np.float64), U.head_of(cb).astype(np.float64)
    t, s = h @ wa.T, hc @ wb.T  # exact: BF16 products are exact in float64
    want = U.kl_rows(t, s)
    u = 2.0 ** -24
    gamma = b.hidden * u / (1 - b.hidden * u)
    eps = np.maximum((np.abs(h) @ np.abs(wa).T).max(axis=1), (np.abs(hc) @ np.abs(wb).T).max(axis=1)) * gamma
    bound = eps * U.kl_gradient_l1(t, s) * 1.5 + 4 * eps ** 2 + 1e-15
    err = np.abs(a - want)
    U.check((err <= bound).all(),
            f"{tag}: KL vs exact replay: worst excess {np.max(err - bound):.3e}, max err {err.max():.3e}")
    # top-1: agree with the exact replay wherever the exact top two are further apart than the
    # float32 error can move them.
    def margin(x):
        s2 = np.sort(x, axis=1)
        return s2[:, -1] - s2[:, -2]
    clear = (margin(t) > 4 * eps) & (margin(s) > 4 * eps)
    exact_match = np.argmax(t, axis=1) == np.argmax(s, axis=1)
    lo = int((exact_match & clear).sum())
    hi = int((exact_match | ~clear).sum())
    got = round(rc["top1_agreement"] * len(a))
    U.check(lo <= got <= hi, f"{tag}: top1 matches {got} outside [{lo}, {hi}]")
    check_stats(tag, rc, a)
    U.check(rc["js"] is None, f"{tag}: JS off by default when a side is hidden")
    U.check(U.schema_errors(rc) == [], f"{tag} schema: {U.schema_errors(rc)[:3]}")
    policy = rc["estimator"]["head_policy"]
    U.check(policy == ("native_head" if own_heads else "shared_reference_head"), f"{tag}: {policy}")


def main():
    U.require_shared()
    logit_case()
    hidden_case(own_heads=False)
    hidden_case(own_heads=True)
    U.finish("test_compare_oracle")


if __name__ == "__main__":
    main()

"""llama.cpp's `llama-perplexity --kl-divergence` statistics, in numpy, written from
../shared/spec/LLAMACPP-KLD.md ("Per-token statistics" and "Aggregates"), not from fidelis' C.

Inputs, one row per scored token, in llama-perplexity's order (chunk by chunk, positions
n_ctx/2 .. n_ctx-2):
  base    float32 [rows, vocab]: the base side's decoded log-probabilities, scale*q + min_log_prob
          (what `fidelis pack --from-llamacpp-kld` stores, or decode_kld_rows below);
  cand    float32 [rows, vocab]: the candidate's exact logits (llama.cpp's Q side);
  targets int [rows]: the token each row predicts (position + 1 of the chunk).

    import llamacpp_kld_stats as K
    s = K.kld_stats(base, cand, targets)
    s["mean_kld"], s["mean_kld_unc"], s["same_top_p"], s["same_top_p_unc"]

Arithmetic, as the spec says: every per-token quantity in float32 (numpy float32 operations round
each operation to float32, like C's float arithmetic without fused multiply-add), sum_exp and the
KLD sum over the vocabulary in double, summed in index order (np.cumsum, sequential like C's
loop), per-token values accumulated in double, squares of nll and nll_base formed in float32. The
one place this cannot be bit-for-bit llama.cpp's is expf: numpy's float32 exp and the C library's
expf may differ in the last bit for some inputs, which moves the printed statistics by ~1e-7
relative at most. Same top p and the PPL(base) statistics involve no exp over the vocabulary.

Functions: decode_kld_rows (the spec's decode of a .kld, for callers holding the file),
mean_and_uncertainty, base_stats (from the base side alone), token_stats (per token), kld_stats
(the aggregates llama-perplexity prints), percentile and median (its table helpers)."""
import math
import struct

import numpy as np

F32 = np.float32


def decode_kld_rows(data):
    """(n_ctx, n_vocab, n_chunk, tokens int32 [n_chunk*n_ctx], rows float32 [n_chunk*R, n_vocab])
    from the bytes of a .kld: the header, then per row float32 scale, float32 min_log_prob and
    n_vocab uint16 codes (plus one pad word when n_vocab is odd), decoded scale*q + min_log_prob
    in float32. Raises ValueError on a bad magic or size."""
    if len(data) < 20 or data[:8] != b"_logits_":
        raise ValueError("not a .kld file")
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<iii", data, 8)
    R = n_ctx - 1 - n_ctx // 2
    nv = 2 * ((n_vocab + 1) // 2) + 4
    if len(data) != 20 + 4 * n_chunk * n_ctx + 2 * n_chunk * R * nv:
        raise ValueError("size does not match the header")
    tokens = np.frombuffer(data, "<i4", n_chunk * n_ctx, 20)
    words = np.frombuffer(data, "<u2", n_chunk * R * nv, 20 + 4 * n_chunk * n_ctx).reshape(-1, nv)
    heads = words[:, :4].copy().view("<f4")  # [rows, 2]: scale, min_log_prob
    q = words[:, 4:4 + n_vocab].astype(F32)
    scale, lo = heads[:, 0:1].astype(F32), heads[:, 1:2].astype(F32)
    rows = (scale * q).astype(F32) + lo
    return n_ctx, n_vocab, n_chunk, tokens, rows.astype(F32)


def mean_and_uncertainty(s, s2, n):
    """mean = s/n, sigma = sqrt((s2/n - mean^2)/(n-1)); sigma is 0 unless that variance term is
    > 0 and n > 10."""
    mean = s / n
    var = s2 / n - mean * mean
    unc = math.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0
    return mean, unc


def _seqsum(x):
    """Sum of x in double, in index order (a C loop `double s = 0; s += x[i]`)."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.cumsum(x)[-1]) if x.size else 0.0


def _q_side(l):
    """max_l and lse_Q of one row of exact logits (float32): lse = log(sum expf(l - max_l)),
    the sum in double, the log rounded to float."""
    l = np.asarray(l, dtype=F32)
    max_l = F32(l.max())
    e = np.exp((l - max_l).astype(F32)).astype(F32)
    lse = F32(math.log(_seqsum(e)))
    return max_l, lse


def token_stats(base_row, cand_row, target):
    """Per-token values of the spec, as a dict: nll, nll_base, kld, same_top (0/1), dp (all
    float32 except kld, a double sum of float terms)."""
    p = np.asarray(base_row, dtype=F32)
    l = np.asarray(cand_row, dtype=F32)
    t = int(target)
    max_l, lse = _q_side(l)
    nll = F32(F32(max_l + lse) - l[t])
    nll_base = F32(-p[t])
    keep = p > F32(-16.0)
    pk = p[keep]
    lq = ((l[keep] - max_l).astype(F32) - lse).astype(F32)  # (l_i - max_l) - lse_Q
    terms = (np.exp(pk).astype(F32) * (pk - lq).astype(F32)).astype(F32)
    kld = _seqsum(terms)
    imax = int(np.argmax(l))  # first index of the maximum (strict >)
    imax_base = int(np.argmax(p))  # first index of the maximum (i == 0 || >)
    dp = F32(F32(np.exp(F32(-nll))) - F32(np.exp(F32(-nll_base))))
    return {"nll": nll, "nll_base": nll_base, "kld": kld, "same_top": int(imax == imax_base),
            "dp": dp}


def base_stats(base, targets):
    """What the base side alone gives: Mean PPL(base) and its +-, from nll_base = -(scale*q[tok] +
    min_log_prob) (the clamped value), its square formed in float32, summed in double."""
    base = np.asarray(base, dtype=F32)
    t = np.asarray(targets, dtype=np.int64)
    nb = (-base[np.arange(len(t)), t]).astype(F32)
    s, s2 = _seqsum(nb), _seqsum((nb * nb).astype(F32))
    mean, unc = mean_and_uncertainty(s, s2, len(t))
    ppl = math.exp(mean)
    return {"n": len(t), "mean_nll_base": mean, "mean_nll_base_unc": unc, "ppl_base": ppl,
            "ppl_base_unc": ppl * unc}


def percentile(sorted_vals, f):
    """The table's percentile: p = f*(N-1) in float, ip = floor(p), linear between v[ip] and
    v[min(ip+1, N-1)]."""
    v = sorted_vals
    n = len(v)
    p = F32(F32(f) * F32(n - 1))
    ip = int(math.floor(p))
    frac = F32(p - F32(ip))
    return F32(F32(F32(1) - frac) * F32(v[ip]) + frac * F32(v[min(ip + 1, n - 1)]))


def median(sorted_vals):
    v = sorted_vals
    n = len(v)
    if n % 2 == 0:
        return F32(F32(0.5) * F32(F32(v[n // 2]) + F32(v[n // 2 - 1])))
    return F32(v[n // 2])


def kld_stats(base, cand, targets):
    """llama-perplexity --kl-divergence's aggregates over all rows, as a dict: n, mean_kld and
    mean_kld_unc, same_top_p and same_top_p_unc (fractions, not percent), ppl_q / ppl_base and
    their unc, mean_dp / mean_dp_unc, rms_dp / rms_dp_unc, max_abs_dp, and the sorted per-token
    kld and dp (float32) for percentile()/median(). llama.cpp prints no final statistics below
    100 tokens; this returns them anyway (the caller decides)."""
    base = np.asarray(base, dtype=F32)
    cand = np.asarray(cand, dtype=F32)
    targets = np.asarray(targets, dtype=np.int64)
    if base.shape != cand.shape or base.ndim != 2 or len(targets) != base.shape[0]:
        raise ValueError("base and cand must both be [rows, vocab] with one target per row")
    n = base.shape[0]
    acc = dict(nll=0.0, nll2=0.0, nb=0.0, nb2=0.0, kld=0.0, kld2=0.0, dp=0.0, dp2=0.0, dp4=0.0)
    same = 0
    max_abs_dp = 0.0
    klds, dps = [], []
    for i in range(n):
        t = token_stats(base[i], cand[i], targets[i])
        nll, nb, k, dp = t["nll"], t["nll_base"], t["kld"], t["dp"]
        acc["nll"] += float(nll)
        acc["nll2"] += float(F32(nll * nll))
        acc["nb"] += float(nb)
        acc["nb2"] += float(F32(nb * nb))
        acc["kld"] += k
        acc["kld2"] += k * k
        d = float(dp)
        acc["dp"] += d
        acc["dp2"] += d * d
        acc["dp4"] += d * d * d * d
        max_abs_dp = max(max_abs_dp, abs(d))
        same += t["same_top"]
        klds.append(F32(k))
        dps.append(dp)
    out = {"n": n}
    m, u = mean_and_uncertainty(acc["nll"], acc["nll2"], n)
    out["ppl_q"], out["ppl_q_unc"] = math.exp(m), math.exp(m) * u
    mb, ub = mean_and_uncertainty(acc["nb"], acc["nb2"], n)
    out["ppl_base"], out["ppl_base_unc"] = math.exp(mb), math.exp(mb) * ub
    out["mean_kld"], out["mean_kld_unc"] = mean_and_uncertainty(acc["kld"], acc["kld2"], n)
    out["mean_dp"], out["mean_dp_unc"] = mean_and_uncertainty(acc["dp"], acc["dp2"], n)
    m2, u2 = mean_and_uncertainty(acc["dp2"], acc["dp4"], n)
    out["rms_dp"] = math.sqrt(m2)
    out["rms_dp_unc"] = 0.5 / out["rms_dp"] * u2 if out["rms_dp"] > 0 else 0.0
    out["max_abs_dp"] = max_abs_dp
    p = same / n
    out["same_top_p"] = p
    out["same_top_p_unc"] = math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else 0.0
    out["kld_sorted"] = np.sort(np.array(klds, dtype=F32))
    out["dp_sorted"] = np.sort(np.array(dps, dtype=F32))
    return out

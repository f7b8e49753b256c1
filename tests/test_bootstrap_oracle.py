"""test_bootstrap_oracle.py - the receipt's bootstrap CI95, re-derived by a third party.

An independent re-implementation of what docs/NUMERICS.md ("Context-cluster bootstrap")
specifies: splitmix64 seeding of xoshiro256**, the multiply-and-reject bounded draw, the
resample statistic summed in draw order, and numpy's linear percentile. It reads only what
`fidelis compare` publishes (tokenwise-kld.npy, per_context[].scored_rows and the uncertainty
block) and must reproduce ci95_low and ci95_high bit for bit (the repr of the floats), on
contexts of different lengths, for the default options and for an explicit --bootstrap/--seed.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

M64 = (1 << 64) - 1


class Xoshiro256ss:
    """xoshiro256** with its four state words from successive splitmix64 outputs."""

    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def rotl(v, k):
        return ((v << k) | (v >> (64 - k))) & M64

    def next(self):
        s = self.s
        out = (self.rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self.rotl(s[3], 45)
        return out

    def below(self, n):
        """Uniform in [0, n): the high word of next() * n, redrawn while the low word falls
        under (2^64 - n) mod n."""
        m = self.next() * n
        if (m & M64) < n:
            thresh = ((1 << 64) - n) % n
            while (m & M64) < thresh:
                m = self.next() * n
        return m >> 64


def linear_quantile(x, q):
    """numpy's 'linear' quantile of a sorted list, with numpy's two-sided interpolation."""
    v = (len(x) - 1) * q
    lo = int(np.floor(v))
    hi = min(lo + 1, len(x) - 1)
    t = v - lo
    d = x[hi] - x[lo]
    return x[hi] - d * (1.0 - t) if t >= 0.5 else x[lo] + d * t


def oracle_ci(kl, rows, samples, seed):
    offs = np.concatenate([[0], np.cumsum(rows)])
    # Each context's KL sum is numpy's sum of its contiguous slice of the token-wise array.
    sums = [float(np.add.reduce(kl[offs[c]:offs[c + 1]])) for c in range(len(rows))]
    g = Xoshiro256ss(seed)
    n = len(rows)
    stats = []
    for _ in range(samples):
        s = r = 0.0
        for _ in range(n):
            c = g.below(n)
            s += sums[c]
            r += float(rows[c])
        stats.append(s / r if r > 0.0 else 0.0)
    stats.sort()
    return linear_quantile(stats, 0.025), linear_quantile(stats, 0.975), stats


def check_receipt(tag, out, samples, seed):
    rc = U.receipt(out)
    kl = U.tokenwise(out)
    unc = rc["uncertainty"]
    U.check(unc["method"] == "context_cluster_bootstrap_percentile", f"{tag}: method {unc['method']}")
    U.check(unc["samples"] == samples and unc["seed"] == seed,
            f"{tag}: samples/seed recorded {unc['samples']}/{unc['seed']}")
    rows = [pc["scored_rows"] for pc in rc["per_context"]]
    U.check(unc["clusters"] == len(rows), f"{tag}: clusters")
    U.check(sum(rows) == len(kl), f"{tag}: per_context rows cover tokenwise-kld.npy")
    lo, hi, stats = oracle_ci(kl, rows, samples, seed)
    U.check(repr(unc["ci95_low"]) == repr(lo), f"{tag}: ci95_low {unc['ci95_low']!r} vs oracle {lo!r}")
    U.check(repr(unc["ci95_high"]) == repr(hi),
            f"{tag}: ci95_high {unc['ci95_high']!r} vs oracle {hi!r}")
    # The percentile rule is numpy's: the oracle's interpolation agrees with np.quantile.
    q = np.quantile(np.asarray(stats), [0.025, 0.975])
    U.check(repr(float(q[0])) == repr(lo) and repr(float(q[1])) == repr(hi),
            f"{tag}: oracle percentiles {lo!r}, {hi!r} vs np.quantile {q.tolist()}")
    U.check(lo < hi, f"{tag}: a non-degenerate interval ({lo!r}, {hi!r})")


def main():
    B = U.Builder(vocab=96, hidden=24, contexts=7, tokens=20, seed=5)
    # Contexts of different lengths (right-padded to one width, masked), so the token weighting
    # of the statistic matters.
    lengths = [6, 31, 12, 44, 9, 23, 17]
    B.tokens = [list(B.rng.integers(0, B.vocab, size=44)) for _ in lengths]

    def mask(i):
        return {"mask": [1] * lengths[i] + [0] * (44 - lengths[i])}

    H0 = [(B.rng.standard_normal((n - 1, B.hidden))).astype(np.float32) for n in lengths]
    H1 = [h + (B.rng.standard_normal(h.shape) * 0.3).astype(np.float32) for h in H0]
    W = B.random_head()
    R = B.pack("R", tensors=H0, head=W, extra=mask)
    Q = B.pack("Q", tensors=H1, head=W, role="quant", extra=mask)
    cases = [("defaults", [], 10000, 0),
             ("explicit", ["--bootstrap", "777", "--seed", str(2**63 - 1)], 777, 2**63 - 1),
             ("small seed", ["--bootstrap", "1500", "--seed", "42"], 1500, 42)]
    for tag, extra, samples, seed in cases:
        out = B.path(f"out-{tag.replace(' ', '-')}")
        code, so, se = U.compare(R, Q, "--out", out, *extra)
        if not U.check(code in (0, 2), f"{tag}: compare exit {code}: {se}"):
            continue
        check_receipt(tag, out, samples, seed)
    U.finish("test_bootstrap_oracle")


if __name__ == "__main__":
    main()

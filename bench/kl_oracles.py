#!/usr/bin/env python3
"""Baselines for bench/run-kl.sh: the reference tool's estimators on the same files.

  kl_oracles.py gen   DIR VOCAB ROWS        writes DIR/ref.f32 and DIR/cand.f32 (raw float32)
  kl_oracles.py numpy DIR VOCAB ROWS SUB    times COMPARISON-RECEIPT.md 6.3 verbatim (numpy float64)
                                            on the first SUB rows; prints seconds per row
  kl_oracles.py torch DIR VOCAB ROWS SUB    times torch float64 log_softmax (the reference's
                                            `torch:k6_kld_report._token_kld` path) on SUB rows
Both baselines read the rows with np.fromfile before timing, as bench_kl does, and report the
best of PASSES passes (bench_kl reports its best of 3 runs).
"""
import sys
import time

import numpy as np

PASSES = 3


def gen(d, v, rows):
    rng = np.random.default_rng(2026)
    with open(f"{d}/ref.f32", "wb") as fr, open(f"{d}/cand.f32", "wb") as fc:
        for r0 in range(0, rows, 64):
            n = min(64, rows - r0)
            t = (rng.standard_normal((n, v), dtype=np.float32) * 2.5)
            t[:, :32] += 12.0  # a few dominant tokens, as in real next-token distributions
            s = t + rng.standard_normal((n, v), dtype=np.float32) * 0.05
            t.astype(np.float32).tofile(fr)
            s.astype(np.float32).tofile(fc)


def load(d, v, sub):
    t = np.fromfile(f"{d}/ref.f32", dtype=np.float32, count=sub * v).reshape(sub, v)
    s = np.fromfile(f"{d}/cand.f32", dtype=np.float32, count=sub * v).reshape(sub, v)
    return t, s


def est_numpy(t, s):
    t = t.astype(np.float64)
    s = s.astype(np.float64)
    lt = t - t.max()
    lpt = lt - np.log(np.sum(np.exp(lt)))
    ls = s - s.max()
    lps = ls - np.log(np.sum(np.exp(ls)))
    return float(np.sum(np.exp(lpt) * (lpt - lps)))


def main():
    mode, d, v, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "gen":
        gen(d, v, rows)
        return 0
    sub = int(sys.argv[5])
    t, s = load(d, v, sub)
    if mode == "numpy":
        est_numpy(t[0], s[0])  # warm-up
        dt = 1e300
        for _ in range(PASSES):  # best pass: the machine may be shared
            t0 = time.perf_counter()
            kl = [est_numpy(t[r], s[r]) for r in range(sub)]
            dt = min(dt, time.perf_counter() - t0)
        print(f"numpy_s_per_row={dt / sub:.6f} rows_timed={sub} kl_mean_subset={np.mean(kl):.17g}")
        return 0
    if mode == "torch":
        try:
            import torch
        except Exception:  # noqa: BLE001 - any import failure means "not installed"
            print("torch: not installed")
            return 0
        torch.set_num_threads(int(sys.argv[6]) if len(sys.argv) > 6 else 2)
        tt, ss = torch.from_numpy(t), torch.from_numpy(s)

        def est(a, b):
            lpt = torch.log_softmax(a.double(), dim=-1)
            lps = torch.log_softmax(b.double(), dim=-1)
            return (lpt.exp() * (lpt - lps)).sum(dim=-1)

        est(tt[:8], ss[:8])  # warm-up
        dt = 1e300
        for _ in range(PASSES):
            t0 = time.perf_counter()
            out = [est(tt[r:r + 8], ss[r:r + 8]) for r in range(0, sub, 8)]
            dt = min(dt, time.perf_counter() - t0)
        kl = torch.cat(out).numpy()
        print(f"torch_s_per_row={dt / sub:.6f} rows_timed={sub} threads={torch.get_num_threads()} "
              f"version={torch.__version__} kl_mean_subset={np.mean(kl):.17g}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())

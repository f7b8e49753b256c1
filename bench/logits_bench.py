#!/usr/bin/env python3
"""Driver of bench/run-logits.sh. `logits_bench.py diff WORK` runs the numpy baseline once (the
end-to-end script form); `logits_bench.py bench CLI WORK REPS` writes the files (untimed) and
times fidelis end to end, numpy in-process and numpy as a script, side by side."""
import hashlib
import subprocess
import sys
import time

import numpy as np

V = 248320
CANDS = [25045, 15787]


def top10(v):
    p = np.argpartition(-v, 10)[:10]
    return p[np.lexsort((p, -v[p]))]


def numpy_diff(work):
    """compare_logits written the natural numpy way: float64, pairwise sums, np.dot."""
    R = np.load(work + "/ref.npy")
    A = np.load(work + "/cand.npy")
    a, r = A.astype(np.float64), R.astype(np.float64)
    e = np.abs(a - r)
    ta, tr = top10(A), top10(R)
    return {"argmax": int(np.argmax(A)), "argmax_equal": bool(np.argmax(A) == np.argmax(R)),
            "cosine_similarity": float(np.dot(a, r) / (np.sqrt(np.dot(a, a)) * np.sqrt(np.dot(r, r)))),
            "max_abs_error": float(e.max()), "mean_abs_error": float(e.sum() / len(A)),
            "top10_overlap": len(set(ta.tolist()) & set(tr.tolist())),
            "logits_sha256": "sha256:" + hashlib.sha256(A.astype("<f4").tobytes()).hexdigest(),
            "candidate_tokens": [{"token_id": c, "logit": float(A[c]),
                                  "rank": 1 + int(np.count_nonzero(A > A[c])) + int(np.count_nonzero(A[:c] == A[c]))}
                                 for c in CANDS]}


def best_of(f, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3, sorted(ts)[len(ts) // 2] * 1e3


def bench(cli, work, reps):
    rng = np.random.default_rng(1)
    R = (rng.standard_normal(V) * 3).astype(np.float32)
    A = (R + rng.standard_normal(V).astype(np.float32) * 0.05).astype(np.float32)
    np.save(work + "/ref.npy", R)
    np.save(work + "/cand.npy", A)
    R.tofile(work + "/ref.f32")
    A.tofile(work + "/cand.f32")
    cmd = [cli, "logits", "diff", work + "/ref.npy", work + "/cand.npy", "--json", "--candidates",
           ",".join(map(str, CANDS))]
    fid = lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    script = lambda: subprocess.run([sys.executable, __file__, "diff", work], check=True)
    inproc = lambda: numpy_diff(work)
    fid(), inproc()  # page cache warm
    f = best_of(fid, reps)
    n = best_of(inproc, reps)
    s = best_of(script, max(5, reps // 5))
    print("vocab %d, %d runs each (script: %d)" % (V, reps, max(5, reps // 5)))
    print("fidelis logits diff, end to end (process start, read, hash, JSON): min %.2f ms, median %.2f ms" % f)
    print("numpy float64 in-process (np.load included, import excluded):      min %.2f ms, median %.2f ms" % n)
    print("numpy float64 as a script (interpreter start and import included):  min %.2f ms, median %.2f ms" % s)
    print("ratio fidelis vs numpy in-process: %.1fx (min), %.1fx (median)" % (n[0] / f[0], n[1] / f[1]))
    print("ratio fidelis vs numpy script:     %.1fx (min), %.1fx (median)" % (s[0] / f[0], s[1] / f[1]))


if __name__ == "__main__":
    if sys.argv[1] == "diff":
        numpy_diff(sys.argv[2])
    else:
        bench(sys.argv[2], sys.argv[3], int(sys.argv[4]))

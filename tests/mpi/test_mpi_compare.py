"""test_mpi_compare.py - `mpirun -n R fidelis compare` writes the bytes of one process.

For R = 1, 2, 3 (3 oversubscribes two cores), every file of the output (receipt, token-wise KL,
log-probabilities, top-1) equals, byte for byte, the output of fidelis-serial (the same program
built without MPI) on:
* a hidden pair with its own heads, 5 records (not divisible by 2 or 3);
* a logit pair (JS on), 5 records;
* a hidden pair of 2 records under R = 3: one rank has no record;
* a reproduction proved by hash (no compute: the ranks share the hashing).
The --json summary states the ranks, the threads per rank and each rank's seconds."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_util as M  # noqa: E402

U = M.U
os.environ["SOURCE_DATE_EPOCH"] = "1767225600"


def check_pair(tag, ref, cand, extra, ranks=(1, 2, 3)):
    base = os.path.join(os.path.dirname(ref), f"serial-{tag}")
    p = M.serial(["compare", ref, cand, "--out", base, "--quiet", *extra])
    if not U.check(p.returncode in (0, 2), f"{tag}: serial compare exit {p.returncode} {p.stderr}"):
        return
    for n in ranks:
        out = os.path.join(os.path.dirname(ref), f"mpi{n}-{tag}")
        q = M.mpirun(n, ["compare", ref, cand, "--out", out, "--json", *extra])
        if not U.check(q.returncode == p.returncode,
                       f"{tag} R={n}: exit {q.returncode}, serial {p.returncode}: {q.stderr[-2000:]}"):
            continue
        same, files = M.same_tree(base, out)
        U.check(same and len(files) >= 2, f"{tag} R={n}: {len(files)} files byte-identical to serial")
        lines = [x for x in q.stdout.splitlines() if x.startswith("{")]
        U.check(len(lines) == 1, f"{tag} R={n}: one --json summary (rank 0 alone prints)")
        if lines:
            j = json.loads(lines[0])
            U.check(j["ranks"] == n and len(j["rank_seconds"]) == n and
                    all(t >= 0 for t in j["rank_seconds"]) and j["threads_per_rank"] >= 1,
                    f"{tag} R={n}: summary states ranks {j.get('ranks')} and "
                    f"{j.get('rank_seconds')}")


def main():
    M.need_mpi()
    U.require_shared()
    B = U.Builder(vocab=48, hidden=16, contexts=5, tokens=19, seed=7)
    H0 = B.random_hidden()
    H1 = [h + (B.rng.standard_normal(h.shape) * 0.3).astype(np.float32) for h in H0]
    W = B.random_head()
    W2 = W + (B.rng.standard_normal(W.shape) * 0.05).astype(np.float32)
    R = B.pack("R", tensors=H0, head=W)
    Q = B.pack("Q", tensors=H1, head=W2, role="quant")
    check_pair("hidden-own", R, Q, ["--own-heads", "--position-block", "8"])

    L0 = [(B.rng.standard_normal((18, 48)) * 2).astype(np.float32) for _ in range(5)]
    L1 = [x + (B.rng.standard_normal(x.shape) * 0.3).astype(np.float32) for x in L0]
    LA = B.pack("LA", tensors=L0, tensor_dtype="F32", form="logit", head=W)
    LB = B.pack("LB", tensors=L1, tensor_dtype="F32", form="logit", role="quant", head=W)
    check_pair("logit", LA, LB, ["--js"])

    R2 = B.pack("R2", tensors=H0, head=W)
    check_pair("hash-proof", R, R2, ["--self-compare"])

    T = U.Builder(vocab=48, hidden=16, contexts=2, tokens=25, seed=9)
    TA, TB = M.hidden_pair(T)
    check_pair("idle-rank", TA, TB, [], ranks=(3,))
    U.finish("test_mpi_compare")


if __name__ == "__main__":
    main()

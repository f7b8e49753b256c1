"""Agreement of a hidden-form `fidelis compare` with the reference estimator's recipe: a numpy
float32 replay (hidden @ W^T through numpy's BLAS) followed by a float64 log-softmax KL.

    /usr/bin/python3 bench/agreement.py REF_DATASET CAND_DATASET COMPARE_OUT

Prints the largest and median per-token relative difference and the relative difference of
the means. The figures quoted in the receipt's tool note come from this script on the
`fidelis synth` pair compared with --own-heads."""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import compare_util as U  # noqa: E402


def only_key(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return next(k for k in json.loads(f.read(n)) if k != "__metadata__")


def side(d):
    with open(os.path.join(d, "capture", "manifest.json")) as f:
        recs = sorted(json.load(f)["records"], key=lambda r: r["index"])
    hs = [U.st_read(os.path.join(d, "capture", r["file"]), r["key"])[0] for r in recs]
    w = os.path.join(d, "head", "weight.safetensors")
    return hs, U.st_read(w, only_key(w))[0]


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def main():
    ref, cand, out = sys.argv[1:4]
    (ha, wa), (hb, wb) = side(ref), side(cand)
    kl = np.concatenate([
        (np.exp(la) * (la - lb)).sum(axis=1)
        for la, lb in ((log_softmax(a @ wa.T), log_softmax(b @ wb.T)) for a, b in zip(ha, hb))])
    got = np.load(os.path.join(out, "tokenwise-kld.npy"))
    rel = np.abs(got - kl) / np.abs(kl)
    print(f"rows {len(kl)}, V {wa.shape[0]}, H {wa.shape[1]}: per-token relative difference "
          f"max {rel.max():.3g}, median {np.median(rel):.3g}; "
          f"mean {abs(got.mean() - kl.mean()) / kl.mean():.3g}")


if __name__ == "__main__":
    main()

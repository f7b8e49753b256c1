"""Shared by test_logits_diff.py and test_layers_diff.py: input writers (safetensors, .npy, raw)
and the float64 oracle pieces of KILN-ATTRIBUTION.md §11, written independently of fidelis.

Sums are sequential float64 in index order, one accumulator each, as the spec fixes them:
np.cumsum over float64 is a left-to-right running sum, so its last element is exactly that sum
(np.sum would be pairwise and could differ in the last bits)."""
import hashlib
import json
import os
import struct
import subprocess
import sys

import numpy as np

CLI = os.environ.get("FDL_CLI")


def need_cli():
    if not CLI or not os.access(CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        sys.exit(77)


def seqsum(x):
    """sum(x) as one float64 accumulator in index order."""
    x = np.asarray(x, dtype=np.float64)
    return float(np.cumsum(x)[-1]) if x.size else 0.0


def cosine(dot, aa, bb, same):
    """docs/ATTRIBUTION.md's cosine rule: exactly 1.0 when the vectors are equal element by
    element (same), otherwise dot / (sqrt(aa) * sqrt(bb)) clamped to [-1, 1]."""
    if same:
        return 1.0
    return min(1.0, max(-1.0, float(dot / (np.sqrt(aa) * np.sqrt(bb)))))


def f32_digest(v):
    return "sha256:" + hashlib.sha256(np.ascontiguousarray(v, dtype="<f4").tobytes()).hexdigest()


def canon(obj):
    return json.dumps(obj, allow_nan=False, ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype string, shape, raw little-endian bytes)."""
    header, off, blobs = {}, 0, []
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def bf16_bits(v):
    """float32 values that are exact BF16 -> their 16-bit patterns (asserts exactness)."""
    u = np.asarray(v, dtype="<f4").view("<u4")
    assert not np.any(u & 0xFFFF), "value not exact in BF16"
    return (u >> 16).astype("<u2")


def run(args, expect=None):
    p = subprocess.run([CLI] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr

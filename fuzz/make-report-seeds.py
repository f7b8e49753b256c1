#!/usr/bin/env python3
"""Seeds for fuzz_report: a real receipt (synth + compare) with its KL array, and the same
receipt over crafted arrays (subnormal only, near DBL_MAX, zeros, one value), each with the
repair flags set so the mutations reach the charts. Usage: make-report-seeds.py FIDELIS OUTDIR"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

cli, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
w = tempfile.mkdtemp(prefix="fdl-report-seeds-")
subprocess.run([cli, "synth", "--out", os.path.join(w, "pair"), "--contexts", "4"], check=True,
               capture_output=True)
p = subprocess.run([cli, "compare", os.path.join(w, "pair", "reference"),
                    os.path.join(w, "pair", "candidate"), "--own-heads", "--out",
                    os.path.join(w, "cmp")], capture_output=True)
assert p.returncode in (0, 2), p.stderr
doc = json.load(open(os.path.join(w, "cmp", "comparison-receipt.json")))
doc.pop("fidelis_extensions", None)
kl = np.load(os.path.join(w, "cmp", "tokenwise-kld.npy"))
n = kl.shape[0]
text = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
cases = {"real": kl, "subnormal": np.full(n, 5e-324), "huge": np.full(n, 1.7e308),
         "zeros": np.zeros(n), "one": kl[:1]}
for name, arr in cases.items():
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(bytes([0x0F]) + struct.pack("<H", len(text)) + text +
                np.asarray(arr, dtype="<f8").tobytes())
print("%d seeds, receipt %d bytes, %d values" % (len(cases), len(text), n))

"""`fidelis` on GGUF files at realistic sizes, each figure side by side with its baseline in the
same run:

1. Load: a synthetic Q4_K_M-shaped Llama GGUF of about MEGABYTES (q4_K matrices, q6_K for
   ffn_down and the head, F32 norms; random blocks with valid scales) opened by
   `fidelis generate --ids [1]` (map, digest, dequantize every block once to check it,
   one position of forward), against a plain read of the same bytes (`cat FILE > /dev/null`,
   page cache warm, best of REPEATS). Target: <= 2x the read.
2. Engine: capture of the same weights from a Hugging Face directory and from its BF16 GGUF
   (`model init --preset llama-100m`, written by tests/gguf_write.py), on the preset's panel,
   best of REPEATS. Target: within 10 %.
Peak RSS by GNU time.

Usage: gguf_bench.py FIDELIS MEGABYTES REPEATS"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import gguf_write  # noqa: E402

cli, mb, repeats = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
HIDDEN, FF, VOCAB, HEADS, KV = 2048, 5632, 32000, 32, 4
Q4K, Q6K = (12, 144), (14, 210)  # (ggml type, bytes per 256 values)


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(k, v):
    return s(k) + struct.pack("<II", 4, v)


def kv_f32(k, v):
    return s(k) + struct.pack("<If", 6, v)


def blocks(rng, rows, cols, kind):
    n = rows * cols // 256
    b = rng.integers(0, 256, size=(n, kind[1]), dtype=np.uint8)
    scale = np.frombuffer(np.float16(0.001).tobytes(), dtype=np.uint8)
    if kind is Q4K:  # d, dmin: the first two f16
        b[:, 0:2] = scale
        b[:, 2:4] = scale
    else:  # q6_K: d is the last f16; the 16 int8 scales stay random
        b[:, -2:] = scale
    return b.tobytes()


def synth(path, target):
    per_layer = (2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV * 64 + 2 * FF * HIDDEN) * Q4K[1] / 256 \
        + FF * HIDDEN * Q6K[1] / 256
    fixed = VOCAB * HIDDEN * (Q4K[1] + Q6K[1]) / 256
    layers = max(1, int((target - fixed) / per_layer))
    rng = np.random.default_rng(0)
    tensors = [("token_embd.weight", VOCAB, HIDDEN, Q4K), ("output.weight", VOCAB, HIDDEN, Q6K)]
    norms = ["output_norm.weight"]
    for i in range(layers):
        p = f"blk.{i}."
        tensors += [(p + "attn_q.weight", HIDDEN, HIDDEN, Q4K), (p + "attn_k.weight", KV * 64, HIDDEN, Q4K),
                    (p + "attn_v.weight", KV * 64, HIDDEN, Q4K),
                    (p + "attn_output.weight", HIDDEN, HIDDEN, Q4K),
                    (p + "ffn_gate.weight", FF, HIDDEN, Q4K), (p + "ffn_up.weight", FF, HIDDEN, Q4K),
                    (p + "ffn_down.weight", HIDDEN, FF, Q6K)]
        norms += [p + "attn_norm.weight", p + "ffn_norm.weight"]
    meta = [s("general.architecture") + struct.pack("<I", 8) + s("llama"),
            kv_u32("llama.embedding_length", HIDDEN), kv_u32("llama.feed_forward_length", FF),
            kv_u32("llama.block_count", layers), kv_u32("llama.attention.head_count", HEADS),
            kv_u32("llama.attention.head_count_kv", KV), kv_u32("llama.context_length", 4096),
            kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
            kv_f32("llama.rope.freq_base", 10000.0)]
    infos, off, sizes = [], 0, []
    for name, rows, cols, kind in tensors:
        nb = rows * cols // 256 * kind[1]
        infos.append(s(name) + struct.pack("<IQQIQ", 2, cols, rows, kind[0], off))
        sizes.append(nb)
        off += nb + (-nb) % 32
    for name in norms:
        infos.append(s(name) + struct.pack("<IQIQ", 1, HIDDEN, 0, off))
        off += HIDDEN * 4
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(meta)) + b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for (name, rows, cols, kind), nb in zip(tensors, sizes):
            f.write(blocks(rng, rows, cols, kind) + b"\0" * ((-nb) % 32))
        one = np.ones(HIDDEN, dtype=np.float32).tobytes()
        for _ in norms:
            f.write(one)
    return layers


def timed(argv, out=subprocess.DEVNULL, fresh=None):
    """Best wall time and peak RSS of argv over the repeats; fresh: an output path removed
    before each run (fidelis never overwrites one)."""
    best, rss = None, 0
    for _ in range(repeats):
        if fresh and os.path.isdir(fresh):
            shutil.rmtree(fresh)
        elif fresh and os.path.exists(fresh):
            os.unlink(fresh)
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, stdout=out, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit("failed: %s: %s" % (" ".join(argv), p.stderr.decode()[-400:]))
        best = dt if best is None else min(best, dt)
        rss = max(rss, int(p.stderr.split()[-1]) * 1024)
    return best, rss


work = tempfile.mkdtemp(prefix="fdl-bench-gguf-")
ok = True
try:
    big = os.path.join(work, "q4km.gguf")
    layers = synth(big, mb * 2**20)
    size = os.path.getsize(big)
    t_read, _ = timed(["cat", big])
    t_load, rss = timed([cli, "generate", "--model", big, "--ids", "[1]", "--logits-out",
                         os.path.join(work, "x.npy")], fresh=os.path.join(work, "x.npy"))
    print(f"load: {size / 2**20:.0f} MiB Q4_K_M-shaped llama ({layers} layers, hidden {HIDDEN}, "
          f"ff {FF}, vocab {VOCAB}); best of {repeats}")
    print(f"  plain read {t_read:.2f} s   fidelis load+dequantize+1 token {t_load:.2f} s   "
          f"ratio {t_load / t_read:.1f}x   peak RSS {rss / 2**30:.2f} GiB")
    if t_load > 2 * t_read:
        ok = False
        print("  above the target: <= 2x the plain read")
    os.unlink(big)
    hf = os.path.join(work, "hf")
    subprocess.run([cli, "model", "init", "--preset", "llama-100m", "--seed", "1", hf], check=True,
                   stdout=subprocess.DEVNULL)
    gg = os.path.join(work, "llama-100m.gguf")
    gguf_write.hf_to_gguf(hf, gg)
    panel = os.path.join(hf, "panel.jsonl")
    res = {}
    for tag, model in (("hf", hf), ("gguf", gg)):
        out = os.path.join(work, "cap-" + tag)
        res[tag] = timed([cli, "capture", "--model", model, "--panel", panel, "--out", out,
                          "--created-utc", "2026-01-01T00:00:00Z"], fresh=out)
        shutil.rmtree(out, ignore_errors=True)
    ratio = res["gguf"][0] / res["hf"][0]
    print(f"engine: capture of llama-100m (BF16) on its panel, best of {repeats}: HF dir "
          f"{res['hf'][0]:.2f} s ({res['hf'][1] / 2**20:.0f} MiB), BF16 GGUF {res['gguf'][0]:.2f} s "
          f"({res['gguf'][1] / 2**20:.0f} MiB), ratio {ratio:.2f}")
    if abs(ratio - 1) > 0.10:
        ok = False
        print("  outside the target: within 10 %")
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(0 if ok else 1)

#!/usr/bin/env python3
"""The engine benchmark's baseline: the same Hugging Face-layout model run by Debian's torch in
float32 on the same threads, written from the architecture (no transformers on this machine).
Weights are widened to float32 once at load (torch's CPU kernels for BF16 matmuls are slower).

    engine_torch.py MODEL_DIR PREFILL_TOKENS DECODE_TOKENS THREADS

Prints prefill seconds and decode tokens/s as key=value lines."""
import json
import os
import struct
import sys
import time

import numpy as np
import torch


def load_tensors(d):
    names = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    out = {}
    for f in names:
        raw = open(os.path.join(d, f), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        hdr = json.loads(raw[8:8 + n])
        for k, t in hdr.items():
            if k == "__metadata__":
                continue
            a, b = t["data_offsets"]
            buf = raw[8 + n + a:8 + n + b]
            if t["dtype"] == "BF16":
                x = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
            elif t["dtype"] == "F16":
                x = np.frombuffer(buf, "<f2").astype(np.float32)
            else:
                x = np.frombuffer(buf, "<f4").astype(np.float32)
            out[k] = torch.from_numpy(x.reshape(t["shape"]).copy())
    return out


class Model:
    def __init__(self, d):
        self.c = json.load(open(os.path.join(d, "config.json")))
        self.w = load_tensors(d)
        c = self.c
        self.H = c["hidden_size"]
        self.nh = c["num_attention_heads"]
        self.nkv = c.get("num_key_value_heads", self.nh)
        self.hd = c.get("head_dim", self.H // self.nh)
        self.L = c["num_hidden_layers"]
        self.eps = c["rms_norm_eps"]
        self.qk_norm = "model.layers.0.self_attn.q_norm.weight" in self.w
        self.head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])
        theta = c.get("rope_theta", 10000.0)
        self.inv = 1.0 / (theta ** (torch.arange(0, self.hd, 2, dtype=torch.float64) / self.hd))

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def rope(self, x, pos):
        ang = pos[:, None].double() * self.inv[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1).float()
        sin = torch.cat([ang.sin(), ang.sin()], -1).float()
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cos + rot * sin

    def forward(self, ids, pos, cache):
        w, p = self.w, "model.layers.%d."
        x = w["model.embed_tokens.weight"][ids]
        n = ids.shape[0]
        for i in range(self.L):
            pre = p % i
            h = self.rms(x, w[pre + "input_layernorm.weight"])
            q = h @ w[pre + "self_attn.q_proj.weight"].T
            k = h @ w[pre + "self_attn.k_proj.weight"].T
            v = h @ w[pre + "self_attn.v_proj.weight"].T
            for nm, t in (("q", q), ("k", k), ("v", v)):
                b = w.get(pre + "self_attn.%s_proj.bias" % nm)
                if b is not None:
                    t += b
            q = q.view(n, self.nh, self.hd)
            k = k.view(n, self.nkv, self.hd)
            v = v.view(n, self.nkv, self.hd)
            if self.qk_norm:
                q = self.rms(q, w[pre + "self_attn.q_norm.weight"])
                k = self.rms(k, w[pre + "self_attn.k_norm.weight"])
            q = self.rope(q.transpose(0, 1), pos)
            k = self.rope(k.transpose(0, 1), pos)
            v = v.transpose(0, 1)
            if cache is not None:
                if i in cache:
                    k = torch.cat([cache[i][0], k], 1)
                    v = torch.cat([cache[i][1], v], 1)
                cache[i] = (k, v)
            rep = self.nh // self.nkv
            k = k.repeat_interleave(rep, 0)
            v = v.repeat_interleave(rep, 0)
            # Debian's torch 1.13 has no scaled_dot_product_attention: written out.
            sc = (q @ k.transpose(1, 2)) / (self.hd ** 0.5)
            if n > 1:
                t = k.shape[1]
                mask = torch.ones(n, t, dtype=torch.bool).triu(t - n + 1)
                sc = sc.masked_fill(mask, float("-inf"))
            o = torch.softmax(sc, -1) @ v
            x = x + o.transpose(0, 1).reshape(n, -1) @ w[pre + "self_attn.o_proj.weight"].T
            h = self.rms(x, w[pre + "post_attention_layernorm.weight"])
            g = h @ w[pre + "mlp.gate_proj.weight"].T
            u = h @ w[pre + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(g) * u) @ w[pre + "mlp.down_proj.weight"].T
        x = self.rms(x, w["model.norm.weight"])
        return x @ self.head.T


def main():
    d, np_, nd, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    m = Model(d)
    V = m.head.shape[0]
    n = max(np_, nd)
    ids = torch.tensor([(k * 7919 + 13) % V for k in range(n)])
    with torch.no_grad():
        best = 1e30
        for _ in range(2):
            t0 = time.perf_counter()
            m.forward(ids[:np_], torch.arange(np_), None).argmax(-1)
            best = min(best, time.perf_counter() - t0)
        cache = {}
        t0 = time.perf_counter()
        for t in range(nd):
            m.forward(ids[t:t + 1], torch.tensor([t]), cache).argmax(-1)
        dec = time.perf_counter() - t0
    print("torch prefill tokens=%d seconds=%.4f" % (np_, best))
    print("torch decode tokens=%d seconds=%.4f tokens_per_s=%.2f" % (nd, dec, nd / dec))


if __name__ == "__main__":
    main()

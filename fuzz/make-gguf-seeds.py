#!/usr/bin/env python3
"""Seeds for fuzz_gguf: small valid GGUF files (each < 8 KB), written with the GGUF writer of
the hostile-input test (tests/test_gguf_hostile.py):
  base         the test's valid file: F32, F16 and Q8_0 tensors of 1 to 3 dimensions, string,
               integer and string-array metadata, general.alignment 32
  v2-align64   version 2, general.alignment 64 (u64), the same tensors laid out at 64
  meta-only    no tensors; one key of every scalar type and arrays of every element type
  quants       one small tensor of each dequantized block type (q4_0, q4_1, q5_0, q5_1, q8_0,
               q2_K..q6_K, iq4_nl, iq3_s, iq4_xs, tq1_0, tq2_0, bf16) plus q8_1, q8_K and i32
               (not dequantized)
  tiny-llama   a 1-layer llama (hidden 32, ff 32, 2 heads, vocab 8): F32 embedding and
               norms, Q4_0 matrices, a Q8_0 ffn_down
  align1       general.alignment 1 (u8), tensors packed without padding
Usage: make-gguf-seeds.py OUTDIR"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_gguf_hostile as H  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(1)


def seed(name, data):
    assert len(data) < 8192, (name, len(data))
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


seed("base", H.base())
seed("v2-align64", H.base(version=2, align=64,
                          kvs=H.base_kvs(align=H.kv("general.alignment", H.T_U64, 64))))
scalars = [H.kv("s.u8", H.T_U8, 200), H.kv("s.i8", H.T_I8, -5), H.kv("s.u16", H.T_U16, 65535),
           H.kv("s.i16", H.T_I16, -300), H.kv("s.u32", H.T_U32, 1 << 31),
           H.kv("s.i32", H.T_I32, -(1 << 31)), H.kv("s.f32", H.T_F32, 1.5),
           H.kv("s.bool", H.T_BOOL, 1), H.kv("s.str", H.T_STR, "h\u00e9llo"),
           H.kv("s.u64", H.T_U64, (1 << 64) - 1), H.kv("s.i64", H.T_I64, -(1 << 63)),
           H.kv("s.f64", H.T_F64, -0.25)]
arrays = [H.kv_arr("a.u8", H.T_U8, [0, 255]), H.kv_arr("a.i8", H.T_I8, [-1]),
          H.kv_arr("a.u16", H.T_U16, [1, 2]), H.kv_arr("a.i16", H.T_I16, [-2]),
          H.kv_arr("a.u32", H.T_U32, [7]), H.kv_arr("a.i32", H.T_I32, [-7, 7]),
          H.kv_arr("a.f32", H.T_F32, [0.5, float("inf")]), H.kv_arr("a.bool", H.T_BOOL, [0, 1]),
          H.kv_arr("a.str", H.T_STR, ["x", "", "yz"]), H.kv_arr("a.u64", H.T_U64, [1 << 60]),
          H.kv_arr("a.i64", H.T_I64, [-(1 << 60)]), H.kv_arr("a.f64", H.T_F64, [1e300]),
          H.kv_arr("a.empty", H.T_U32, [])]
seed("meta-only", H.gguf(scalars + arrays, []))

# ggml id: (values per block, bytes per block); random bytes with sane f16 scales where the
# block starts with one, so most blocks dequantize to finite values.
QUANTS = {2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
          10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
          20: (32, 18), 21: (256, 110), 23: (256, 136), 34: (256, 54), 35: (256, 66),
          30: (1, 2), 15: (256, 292), 26: (1, 4)}
ts = []
for ty, (elems, size) in QUANTS.items():
    ne0 = elems if elems > 1 else 16
    raw = bytearray(rng.integers(0, 256, ne0 // elems * size, dtype=np.uint8).tobytes())
    if ty in (2, 3, 6, 7, 8, 9, 20, 23):  # an f16 d first
        for b in range(0, len(raw), size):
            raw[b:b + 2] = np.float16(0.01).tobytes()
    if ty == 30:
        raw = (np.ones(16, "<f4").view("<u4") >> 16).astype("<u2").tobytes()
    ts.append(H.T("t%d" % ty, [ne0], ty, bytes(raw)))
seed("quants", H.gguf([H.kv("general.architecture", H.T_STR, "quants")], ts))

hid, ff, voc = 32, 32, 8
llama = [H.kv("general.architecture", H.T_STR, "llama"),
         H.kv("llama.embedding_length", H.T_U32, hid),
         H.kv("llama.feed_forward_length", H.T_U32, ff),
         H.kv("llama.block_count", H.T_U32, 1), H.kv("llama.attention.head_count", H.T_U32, 2),
         H.kv("llama.attention.head_count_kv", H.T_U32, 2),
         H.kv("llama.context_length", H.T_U32, 32),
         H.kv("llama.attention.layer_norm_rms_epsilon", H.T_F32, 1e-5),
         H.kv("llama.rope.freq_base", H.T_F32, 10000.0)]


def f32(n):
    return (rng.standard_normal(n) * 0.1).astype("<f4").tobytes()


def q4_0(n):  # an f16 scale, then 16 bytes of 4-bit values
    return b"".join(np.float16(0.01).tobytes() + rng.integers(0, 256, 16, dtype=np.uint8)
                    .tobytes() for _ in range(n // 32))


lt = [H.T("token_embd.weight", [hid, voc], 0, f32(hid * voc)),
      H.T("output_norm.weight", [hid], 0, f32(hid)),
      H.T("blk.0.attn_norm.weight", [hid], 0, f32(hid)),
      H.T("blk.0.ffn_norm.weight", [hid], 0, f32(hid))]
for n in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"):
    lt.append(H.T("blk.0.%s.weight" % n, [hid, hid], 2, q4_0(hid * hid)))
lt.append(H.T("blk.0.ffn_down.weight", [ff, hid], 8, H.q8_0_bytes(rng, ff * hid)))
seed("tiny-llama", H.gguf(llama, lt))
seed("align1", H.base(align=1, kvs=H.base_kvs(align=H.kv("general.alignment", H.T_U8, 1))))

"""test_gguf_hostile.py - hostile GGUF files through `fidelis tensor ls` and `fidelis generate`.

Every GGUF here is written by this test, byte by byte, from the GGUF spec (docs/GGUF.md): magic
"GGUF", u32 version, u64 n_tensors, u64 n_kv, the key-value pairs (u64-length string key, u32
type, value; an array is a u32 element type, a u64 count and the elements), the tensor infos
(string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset relative to the data
section), padding to general.alignment (32 by default), then the data.

First a valid small file (F32, F16 and Q8_0 tensors of 1 to 3 dimensions) that `tensor ls`
accepts, each tensor's shape, byte range, stored SHA-256 and dequantized SHA-256 checked against
numpy (Q8_0: per 32 values an f16 scale d then 32 int8 q, value = d*q in float32). Then each
hostile variant of it must be refused: exit 3 (never a signal, never 0), within a few seconds,
under a 512 MiB address-space limit (unless the CLI is sanitized), with a message naming the
problem:

* the file truncated at every 7th byte;
* a tensor past the end, overlapping tensors, a misaligned offset;
* n_tensors = 2^63, n_kv = 2^63; a string length of 2^63 (key, value, tensor name);
* ggml type ids 4 (retired), 99 and 2^31;
* general.alignment 0, 3, 2^40 (and one that is not an integer);
* a metadata array of 10^9 elements (u8, string) in a ~1 KB file;
* duplicate keys, duplicate tensor names;
* n_dims 0 and 5, a dimension 0, dimensions whose product overflows 2^63, a shape that fits
  64 bits but not the file, Q8_0 with ne[0] = 33;
* a key and a tensor name that are not UTF-8;
* version 1, 4 and a big-endian-looking version (0x03000000).

The same hostile files go through `fidelis generate --model F --ids [1]` (exit 3, or a clear
refusal; never a crash). Finally a tiny llama model (hidden 64, ff 128, one layer, 2 heads, 2 kv
heads, vocab 32, Q8_0 and F32 matrices) that generate runs, and variants of it with a NaN in an
F32 weight or a Q8_0 block whose f16 scale is inf: refused naming the tensor.
"""
import hashlib
import json
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, check, finish, need_cli  # noqa: E402

TIMEOUT = 20          # seconds: a refusal is expected in well under one
FAST = 5.0            # a hostile input must be refused within this many seconds
AS_LIMIT = 512 << 20  # address-space limit for every run


def limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


# AddressSanitizer reserves terabytes of shadow address space, so the limit applies only to a
# build without it (ASan's allocator reports a huge request itself).
SANITIZED = "ASAN_OPTIONS" in os.environ or "asan" in os.path.abspath(CLI)


def cli(*args):
    """(returncode or None on a hang, combined output, seconds) of `fidelis ARGS`."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([CLI, *args], capture_output=True, timeout=TIMEOUT,
                           preexec_fn=None if SANITIZED else limit_as)
    except subprocess.TimeoutExpired:
        return None, "(killed after %d s)" % TIMEOUT, time.monotonic() - t0
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    return p.returncode, out, time.monotonic() - t0


def short(out):
    out = out.strip().replace("\n", " | ")
    return out if len(out) < 300 else out[:300] + "..."


def refused(what, args, names=(), want_rc=(3,)):
    """A clean, fast refusal of `fidelis ARGS` whose output matches every regex in names."""
    rc, out, dt = cli(*args)
    if rc is None:
        return check(False, f"{what}: hung (no exit within {TIMEOUT} s)")
    if rc < 0:
        return check(False, f"{what}: killed by signal {-rc}: {short(out)}")
    good = check(rc in want_rc,
                 f"{what}: exit {rc} (want {'/'.join(map(str, want_rc))}): {short(out)}")
    good &= check(dt < FAST, f"{what}: finished in {dt:.2f} s (< {FAST} s)")
    good &= check("fidelis" in out and len(out.strip()) > 10, f"{what}: a message is printed")
    for a in args:
        if a.endswith(".npy"):
            good &= check(not os.path.exists(a), f"{what}: no {os.path.basename(a)} written")
    for n in names:
        good &= check(re.search(n, out, re.I) is not None,
                      f"{what}: the message matches /{n}/: {short(out)}")
    return good


# ---- a GGUF writer ---------------------------------------------------------------------------

(T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64,
 T_F64) = range(13)
FMT = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f",
       T_BOOL: "<B", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}
G_F32, G_F16, G_Q8_0 = 0, 1, 8
BLOCK = {G_F32: (1, 4), G_F16: (1, 2), G_Q8_0: (32, 34)}


def g_str(s, n=None):
    """A GGUF string: u64 length (n overrides it) and the bytes."""
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b) if n is None else n) + b


def g_val(t, v):
    return g_str(v) if t == T_STR else struct.pack(FMT[t], v)


def kv(key, t, v, key_len=None, val_len=None):
    """One key-value pair; key_len / val_len override the stored string lengths."""
    body = g_str(v, val_len) if t == T_STR else g_val(t, v)
    return g_str(key, key_len) + struct.pack("<I", t) + body


def kv_arr(key, et, items, count=None):
    n = len(items) if count is None else count
    return (g_str(key) + struct.pack("<IIQ", T_ARR, et, n)
            + b"".join(g_val(et, x) for x in items))


class T:
    """One tensor: name, ne (ggml order), ggml type, stored bytes; the fields a hostile case
    overrides: off (relative offset; None = laid out in order), n_dims (stored count), name_len."""

    def __init__(self, name, ne, ty, data, off=None, n_dims=None, name_len=None):
        self.name, self.ne, self.ty, self.data = name, list(ne), ty, data
        self.off, self.n_dims, self.name_len = off, n_dims, name_len

    def clone(self, **over):
        t = T(self.name, self.ne, self.ty, self.data, self.off, self.n_dims, self.name_len)
        for k, v in over.items():
            setattr(t, k, v)
        return t


def pad_to(n, a):
    return (a - n % a) % a


def gguf(kvs, tensors, version=3, magic=b"GGUF", n_tensors=None, n_kv=None, align=32,
         version_bytes=None):
    """The file's bytes. Tensors without an explicit off are laid out in order, each at the next
    multiple of align; the data section is as long as the laid-out data."""
    head = magic + (version_bytes if version_bytes is not None else struct.pack("<I", version))
    head += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors,
                        len(kvs) if n_kv is None else n_kv)
    head += b"".join(kvs)
    data = b""
    infos = b""
    for t in tensors:
        data += b"\0" * pad_to(len(data), align)
        off = len(data) if t.off is None else t.off
        data += t.data
        nd = len(t.ne) if t.n_dims is None else t.n_dims
        infos += (g_str(t.name, t.name_len) + struct.pack("<I", nd)
                  + struct.pack("<%dQ" % len(t.ne), *t.ne) + struct.pack("<IQ", t.ty, off))
    body = head + infos
    return body + b"\0" * pad_to(len(body), align) + data


def nbytes(ne, ty):
    elems, size = BLOCK[ty]
    rows = 1
    for d in ne[1:]:
        rows *= d
    return ne[0] // elems * size * rows


def q8_0_bytes(rng, n, scale=None):
    """n values' worth of Q8_0 blocks: an f16 scale then 32 int8."""
    out = b""
    for _ in range(n // 32):
        d = np.float16(rng.uniform(0.001, 0.05)) if scale is None else np.float16(scale)
        out += d.tobytes() + rng.integers(-128, 128, 32, dtype=np.int8).tobytes()
    return out


def dequant(ty, raw):
    """float32 values of stored bytes, as ggml's to_float gives them."""
    if ty == G_F32:
        return np.frombuffer(raw, "<f4")
    if ty == G_F16:
        return np.frombuffer(raw, "<f2").astype(np.float32)
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, 34)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    return (d * q).astype(np.float32).reshape(-1)


def sha(b):
    return hashlib.sha256(b).hexdigest()


# ---- the valid small file --------------------------------------------------------------------

RNG = np.random.default_rng(20261203)
BASE_T = [
    T("w.f32", [32, 4], G_F32, RNG.standard_normal(128).astype("<f4").tobytes()),
    T("w.q8", [64, 2], G_Q8_0, q8_0_bytes(RNG, 128)),
    T("v.f32", [8], G_F32, RNG.standard_normal(8).astype("<f4").tobytes()),
    T("x.q8", [32, 2, 2], G_Q8_0, q8_0_bytes(RNG, 128)),
    T("h.f16", [16, 2], G_F16, RNG.standard_normal(32).astype("<f2").tobytes()),
]
for _t in BASE_T:
    assert len(_t.data) == nbytes(_t.ne, _t.ty), _t.name


def base_kvs(**over):
    """The valid file's metadata; a keyword replaces (bytes) or drops (None) an entry."""
    k = {"arch": kv("general.architecture", T_STR, "hostile"),
         "name": kv("general.name", T_STR, "gguf-hostile-base"),
         "align": kv("general.alignment", T_U32, 32),
         "ints": kv_arr("hostile.ints", T_I32, [1, -2, 3]),
         "strs": kv_arr("hostile.strings", T_STR, ["a", "bc", ""])}
    k.update(over)
    return [v for v in k.values() if v is not None]


def base(**over):
    kw = dict(kvs=base_kvs(), tensors=list(BASE_T))
    kw.update(over)
    return gguf(**kw)


def with_tensor(i, **over):
    """The base tensor list, tensor i changed."""
    ts = list(BASE_T)
    ts[i] = ts[i].clone(**over)
    return ts


def valid_file_checks(path, raw):
    rc, out, _ = cli("tensor", "ls", path, "--json")
    if not check(rc == 0, f"valid GGUF: tensor ls --json exits 0 (got {rc}): {short(out)}"):
        return False
    doc = json.loads(out)
    check(doc["format"] == "gguf" and doc["gguf_version"] == 3 and doc["alignment"] == 32,
          "valid GGUF: format, version and alignment")
    ts = doc["tensors"]
    check([t["name"] for t in ts] == [t.name for t in BASE_T], "valid GGUF: names in file order")
    data_off = doc["tensor_data_offset"]
    check(data_off % 32 == 0 and data_off < len(raw), f"valid GGUF: data offset {data_off}")
    at = 0
    for t, got in zip(BASE_T, ts):
        at += pad_to(at, 32)
        want_type = {G_F32: "f32", G_F16: "f16", G_Q8_0: "q8_0"}[t.ty]
        check(got["type"] == want_type and got["type_id"] == t.ty,
              f"valid GGUF: {t.name} type {got['type']}")
        check(got["shape"] == t.ne[::-1], f"valid GGUF: {t.name} shape {got['shape']} row-major")
        check(got["offset"] == data_off + at and got["nbytes"] == len(t.data),
              f"valid GGUF: {t.name} at [{got['offset']}, +{got['nbytes']})")
        stored = raw[got["offset"]:got["offset"] + got["nbytes"]]
        check(stored == t.data and got["sha256"] == sha(t.data),
              f"valid GGUF: {t.name} stored SHA-256")
        vals = dequant(t.ty, t.data)
        check(got["dequantized_sha256"] == sha(vals.astype("<f4").tobytes()),
              f"valid GGUF: {t.name} dequantized SHA-256 matches numpy")
        at += len(t.data)
    rc, out, _ = cli("tensor", "ls", path)
    check(rc == 0 and len(out.strip().splitlines()) == len(BASE_T),
          f"valid GGUF: tensor ls (text) lists {len(BASE_T)} tensors: {short(out)}")
    return True


# ---- the hostile variants --------------------------------------------------------------------

TWO63 = 1 << 63
PASSED_END = r"past the end|needs \d+ bytes|ends before|left"


def hostile_cases():
    """(name, bytes, message regexes) of every hostile file but the truncations."""
    c = []
    add = lambda name, data, *names: c.append((name, data, names))  # noqa: E731
    last = len(BASE_T) - 1
    # Where the laid-out data ends (relative to the data section).
    end = 0
    for t in BASE_T:
        end += pad_to(end, 32) + len(t.data)
    add("tensor-past-end", base(tensors=with_tensor(last, off=end + pad_to(end, 32) + 64)),
        r"h\.f16", r"past the end")
    add("tensor-straddles-end", base(tensors=with_tensor(last, off=end - 32)),
        r"h\.f16", r"past the end")
    add("tensor-offset-2^63", base(tensors=with_tensor(last, off=TWO63)), r"h\.f16",
        r"past the end")
    add("tensor-offset-2^64-32", base(tensors=with_tensor(last, off=(1 << 64) - 32)),
        r"h\.f16", r"past the end")
    add("tensors-overlap", base(tensors=with_tensor(1, off=0)), r"overlap", r"w\.f32|w\.q8")
    add("tensors-overlap-partly", base(tensors=with_tensor(2, off=256)), r"overlap")
    add("tensor-misaligned", base(tensors=with_tensor(1, off=512 + 4)), r"w\.q8",
        r"not a multiple of the alignment")
    add("n_tensors-2^63", base(n_tensors=TWO63), r"9223372036854775808 tensors")
    add("n_tensors-2^32", base(n_tensors=1 << 32), r"tensors claimed")
    add("n_tensors-one-more", base(n_tensors=len(BASE_T) + 1), r"tensor|offset|bytes")
    add("n_kv-2^63", base(n_kv=TWO63), r"9223372036854775808 metadata entries")
    add("n_kv-one-more", base(n_kv=6), r"metadata|offset|bytes")
    add("key-len-2^63", base(kvs=base_kvs(name=kv("general.name", T_STR, "x", key_len=TWO63))),
        r"metadata entry 1 key", r"needs 9223372036854775808 bytes")
    add("value-len-2^63", base(kvs=base_kvs(name=kv("general.name", T_STR, "x",
                                                    val_len=TWO63))),
        r"general\.name", r"needs 9223372036854775808 bytes")
    add("string-array-elem-len-2^63",
        base(kvs=base_kvs(strs=kv_arr("hostile.strings", T_STR, []) [:-8]
                          + struct.pack("<Q", 1) + g_str("abc", TWO63))),
        r"hostile\.strings", r"needs 9223372036854775808 bytes")
    add("tensor-name-len-2^63", base(tensors=with_tensor(0, name_len=TWO63)),
        r"tensor name", r"needs 9223372036854775808 bytes")
    add("tensor-name-len-5000", base(tensors=with_tensor(0, name="n" * 5000)),
        r"over-long")
    for ty in (4, 99, 1 << 31, 0xFFFFFFFF):
        add(f"ggml-type-{ty}", base(tensors=with_tensor(2, ty=ty)), r"v\.f32",
            rf"ggml type {ty}\b")
    for a, t in ((0, T_U32), (3, T_U32), (1 << 40, T_U64), (-32, T_I32), (48, T_U32)):
        add(f"alignment-{a}", base(kvs=base_kvs(align=kv("general.alignment", t, a))),
            rf"general\.alignment = {a}\b")
    add("alignment-2^20-past-eof",
        base(kvs=base_kvs(align=kv("general.alignment", T_U32, 1 << 20))),
        r"ends before its tensor data")
    add("alignment-64-offsets-at-32",
        base(kvs=base_kvs(align=kv("general.alignment", T_U32, 64))),
        r"w\.q8|v\.f32|x\.q8|h\.f16", r"not a multiple of the alignment 64")
    add("alignment-string", base(kvs=base_kvs(align=kv("general.alignment", T_STR, "32"))),
        r"general\.alignment is string")
    add("alignment-u64-2^64-1",
        base(kvs=base_kvs(align=kv("general.alignment", T_U64, (1 << 64) - 1))),
        r"general\.alignment", r"out of range")
    small = lambda arr: gguf([kv("general.architecture", T_STR, "x"), arr,  # noqa: E731
                              kv("general.name", T_STR, "n" * 900)], [])
    for et, name in ((T_U8, "uint8"), (T_U64, "uint64"), (T_STR, "string")):
        f = small(kv_arr("hostile.big", et, [], count=10 ** 9))
        assert len(f) < 1100
        add(f"array-10^9-{name}", f, r"hostile\.big", rf"claims 1000000000 {name} elements")
    add("array-2^63-string", small(kv_arr("hostile.big", T_STR, [], count=TWO63)),
        r"hostile\.big", r"claims 9223372036854775808")
    add("array-nested", small(g_str("hostile.nest") + struct.pack("<IIQ", T_ARR, T_ARR, 1)
                              + struct.pack("<IQ", T_U8, 1) + b"\1"),
        r"hostile\.nest", r"nested")
    add("array-elem-type-99", small(g_str("hostile.et") + struct.pack("<IIQ", T_ARR, 99, 1)
                                    + b"\0" * 8), r"hostile\.et", r"element type 99")
    add("value-type-13", base(kvs=base_kvs(name=g_str("general.name") + struct.pack("<I", 13)
                                           + b"\0" * 8)), r"general\.name", r"value type 13")
    add("duplicate-key", base(kvs=base_kvs(name=kv("general.architecture", T_STR, "again"))),
        r"general\.architecture appears twice")
    add("duplicate-tensor-name", base(tensors=with_tensor(3, name="w.f32")),
        r"tensor name w\.f32 appears twice")
    add("n_dims-0", base(tensors=with_tensor(0, n_dims=0, ne=[])), r"w\.f32",
        r"0 dimensions")
    add("n_dims-5", base(tensors=with_tensor(2, n_dims=5, ne=[2, 1, 1, 1, 4])), r"v\.f32",
        r"5 dimensions")
    add("n_dims-2^32-1", base(tensors=with_tensor(2, n_dims=0xFFFFFFFF)), r"v\.f32",
        r"4294967295 dimensions")
    add("dimension-0", base(tensors=with_tensor(0, ne=[32, 0])), r"w\.f32",
        r"dimension 1 is 0")
    add("dimension-0-first", base(tensors=with_tensor(0, ne=[0, 4])), r"w\.f32",
        r"dimension 0 is 0")
    add("shape-overflows-2^63", base(tensors=with_tensor(0, ne=[1 << 32, 1 << 31])),
        r"w\.f32", r"overflows")
    add("shape-overflows-2^64", base(tensors=with_tensor(3, ne=[32, 1 << 40, 1 << 30])),
        r"x\.q8", r"overflows")
    add("shape-bytes-overflow-2^64", base(tensors=with_tensor(0, ne=[1 << 62, 1])),
        r"w\.f32", r"overflow|2\^64")
    add("shape-past-file", base(tensors=with_tensor(0, ne=[1 << 40])), r"w\.f32",
        r"past the end")
    add("q8_0-ne0-33", base(tensors=with_tensor(1, ne=[33, 2])), r"w\.q8",
        r"q8_0", r"33 values are not a whole number of 32-value blocks")
    add("key-not-utf8", base(kvs=base_kvs(name=kv(b"general.\xffname", T_STR, "x"))),
        r"metadata entry 1", r"not UTF-8")
    add("key-overlong-utf8", base(kvs=base_kvs(name=kv(b"general.\xc0\xaf", T_STR, "x"))),
        r"metadata entry 1", r"not UTF-8")
    add("key-nul", base(kvs=base_kvs(name=kv(b"general.name\0x", T_STR, "x"))),
        r"metadata entry 1", r"not UTF-8")
    add("key-empty", base(kvs=base_kvs(name=kv(b"", T_STR, "x"))), r"empty key")
    add("tensor-name-not-utf8", base(tensors=with_tensor(2, name=b"v.\xfe")), r"tensor 2",
        r"non-UTF-8 name")
    add("tensor-name-surrogate", base(tensors=with_tensor(2, name=b"v.\xed\xa0\x80")),
        r"tensor 2", r"non-UTF-8 name")
    add("version-1", base(version=1), r"GGUF version 1\b")
    add("version-4", base(version=4), r"GGUF version 4\b")
    add("version-0", base(version=0), r"GGUF version 0\b")
    add("version-big-endian", base(version_bytes=struct.pack(">I", 3)),
        r"version 50331648", r"big-endian")
    return c


# ---- a tiny llama model ----------------------------------------------------------------------

HIDDEN, FF, LAYERS, HEADS, KV_HEADS, VOCAB = 64, 128, 1, 2, 2, 32


def model_tensors(rng):
    """The llama tensors (ggml ne order); matrices Q8_0 but token_embd, output and attn_v F32."""
    def f32(ne, scale=0.1):
        n = int(np.prod(ne))
        return (rng.standard_normal(n) * scale).astype("<f4").tobytes()

    def mat(name, ne, ty):
        data = q8_0_bytes(rng, int(np.prod(ne))) if ty == G_Q8_0 else f32(ne)
        return T(name, ne, ty, data)

    ones = np.ones(HIDDEN, "<f4").tobytes()
    hd = HIDDEN // HEADS
    return [
        mat("token_embd.weight", [HIDDEN, VOCAB], G_F32),
        T("output_norm.weight", [HIDDEN], G_F32, ones),
        mat("output.weight", [HIDDEN, VOCAB], G_F32),
        T("blk.0.attn_norm.weight", [HIDDEN], G_F32, ones),
        T("blk.0.ffn_norm.weight", [HIDDEN], G_F32, ones),
        mat("blk.0.attn_q.weight", [HIDDEN, HEADS * hd], G_Q8_0),
        mat("blk.0.attn_k.weight", [HIDDEN, KV_HEADS * hd], G_Q8_0),
        mat("blk.0.attn_v.weight", [HIDDEN, KV_HEADS * hd], G_F32),
        mat("blk.0.attn_output.weight", [HEADS * hd, HIDDEN], G_Q8_0),
        mat("blk.0.ffn_gate.weight", [HIDDEN, FF], G_Q8_0),
        mat("blk.0.ffn_up.weight", [HIDDEN, FF], G_Q8_0),
        mat("blk.0.ffn_down.weight", [FF, HIDDEN], G_Q8_0),
    ]


def model_kvs():
    return [kv("general.architecture", T_STR, "llama"),
            kv("general.name", T_STR, "tiny-hostile"),
            kv("llama.embedding_length", T_U32, HIDDEN),
            kv("llama.feed_forward_length", T_U32, FF),
            kv("llama.block_count", T_U32, LAYERS),
            kv("llama.attention.head_count", T_U32, HEADS),
            kv("llama.attention.head_count_kv", T_U32, KV_HEADS),
            kv("llama.context_length", T_U32, 64),
            kv("llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5),
            kv("llama.rope.freq_base", T_F32, 10000.0)]


def replace(ts, name, **over):
    return [t.clone(**over) if t.name == name else t for t in ts]


def poke(data, at, b):
    return data[:at] + b + data[at + len(b):]


def main():
    need_cli()
    tmp = tempfile.TemporaryDirectory(prefix="fdl-gguf-hostile-")
    P = lambda *a: os.path.join(tmp.name, *a)  # noqa: E731

    def write(name, data):
        with open(P(name), "wb") as f:
            f.write(data)
        return P(name)

    runs = []

    def gen(path):
        """generate's arguments, with an --logits-out path of its own (never overwritten)."""
        runs.append(path)
        return ["generate", "--model", path, "--ids", "[1]",
                "--logits-out", P("logits-%d.npy" % len(runs))]

    t0 = time.monotonic()
    valid = base()
    vpath = write("valid.gguf", valid)
    if not valid_file_checks(vpath, valid):
        return finish()

    # Variants that are valid: version 2, no general.alignment (32), alignment 64 and 1.
    for what, data, align in (("version 2", base(version=2), 32),
                              ("no general.alignment", base(kvs=base_kvs(align=None)), 32),
                              ("general.alignment 64", base(kvs=base_kvs(
                                  align=kv("general.alignment", T_U64, 64)), align=64), 64),
                              ("general.alignment 1", base(kvs=base_kvs(
                                  align=kv("general.alignment", T_U8, 1)), align=1), 1)):
        rc, out, _ = cli("tensor", "ls", write("ok.gguf", data), "--json")
        ok = rc == 0
        if ok:
            doc = json.loads(out)
            offs = [t["offset"] for t in doc["tensors"]]
            ok = doc["alignment"] == align and all(o % align == 0 for o in offs) and [
                t["sha256"] for t in doc["tensors"]] == [sha(t.data) for t in BASE_T]
        check(ok, f"valid GGUF with {what}: listed, offsets aligned to {align}: {short(out)}")

    # ---- truncations: every 7th cut point ----------------------------------------------------
    bad_cuts = []
    for cut in range(0, len(valid), 7):
        f = write("trunc.gguf", valid[:cut])
        rc, out, dt = cli("tensor", "ls", f)
        if rc != 3 or dt >= FAST or not re.search(
                PASSED_END + r"|not a GGUF|bytes left|claimed|tensor data|too short", out, re.I):
            bad_cuts.append((cut, rc, round(dt, 2), short(out)))
    check(not bad_cuts, f"truncated at each of {len(range(0, len(valid), 7))} cut points "
          f"(every 7th of {len(valid)} bytes): exit 3 naming the shortfall; bad: {bad_cuts[:5]}")
    for cut in (4, 8, 20, 30, len(valid) - len(BASE_T[-1].data), len(valid) - 1):
        refused(f"truncated at {cut} through generate",
                gen(write(f"trunc-{cut}.gguf", valid[:cut])),
                want_rc=(2, 3))

    # ---- every other hostile file, through tensor ls and generate ----------------------------
    for name, data, names in hostile_cases():
        f = write(name + ".gguf", data)
        refused(f"{name} ({len(data)} bytes): tensor ls", ["tensor", "ls", f], names)
        refused(f"{name}: generate", gen(f), names)

    # A wrong magic is not a GGUF: tensor ls reads it as safetensors, generate as a directory.
    f = write("magic.gguf", base(magic=b"GGUX"))
    refused("magic GGUX: tensor ls", ["tensor", "ls", f], (r"safetensors",))
    refused("magic GGUX: generate", gen(f), (r"config\.json|directory",), want_rc=(2, 3, 4))

    # ---- a tiny llama model, then its non-finite variants ------------------------------------
    rng = np.random.default_rng(7)
    mts = model_tensors(rng)
    model = write("tiny.gguf", gguf(model_kvs(), mts))
    npy = P("logits.npy")
    rc, out, _ = cli("generate", "--model", model, "--ids", "[1, 2, 3]", "--logits-out", npy)
    if check(rc == 0, f"tiny llama GGUF: generate exits 0 (got {rc}): {short(out)}"):
        lg = np.load(npy)
        check(lg.shape == (1, VOCAB) and np.isfinite(lg).all(),
              f"tiny llama GGUF: logits shape {lg.shape}, finite")
    nan_f32 = poke(next(t for t in mts if t.name == "blk.0.attn_v.weight").data, 4 * 77,
                   struct.pack("<f", float("nan")))
    refused("model with a NaN in F32 blk.0.attn_v.weight",
            gen(write("nan.gguf", gguf(model_kvs(), replace(
                mts, "blk.0.attn_v.weight", data=nan_f32)))),
            (r"attn_v|v_proj", r"NaN|finite"))
    nan_norm = poke(mts[1].data, 0, struct.pack("<f", float("inf")))
    refused("model with an inf in F32 output_norm.weight",
            gen(write("inf-norm.gguf", gguf(model_kvs(), replace(
                mts, "output_norm.weight", data=nan_norm)))),
            (r"output_norm|model\.norm", r"infinite|finite"))
    up = next(t for t in mts if t.name == "blk.0.ffn_up.weight").data
    inf_q8 = poke(up, 34 * 5, np.float16(np.inf).tobytes())
    refused("model with an inf f16 scale in Q8_0 blk.0.ffn_up.weight",
            gen(write("inf-q8.gguf", gguf(model_kvs(), replace(
                mts, "blk.0.ffn_up.weight", data=inf_q8)))),
            (r"blk\.0\.ffn_up\.weight|up_proj", r"finite|inf|nan"))
    nan_q8 = poke(up, 34 * 3, np.float16(np.nan).tobytes())
    refused("model with a NaN f16 scale in Q8_0 blk.0.ffn_up.weight",
            gen(write("nan-q8.gguf", gguf(model_kvs(), replace(
                mts, "blk.0.ffn_up.weight", data=nan_q8)))),
            (r"blk\.0\.ffn_up\.weight|up_proj", r"finite|inf|nan"))
    # One weight under two names (llama.cpp's and the Hugging Face one): refused, not picked.
    q = next(t for t in mts if t.name == "blk.0.attn_q.weight")
    refused("model naming one weight twice",
            gen(write("m-dup-hf.gguf", gguf(model_kvs(), [
                q.clone(name="model.layers.0.self_attn.q_proj.weight")] + mts))),
            (r"attn_q", r"both"))
    # The same model, lying about its layout.
    mlast = len(mts) - 1
    mts_over = list(mts)
    mts_over[mlast] = mts[mlast].clone(off=0)
    refused("model with overlapping tensors",
            gen(write("m-overlap.gguf", gguf(model_kvs(), mts_over))), (r"overlap",))
    mts_q33 = replace(mts, "blk.0.ffn_gate.weight", ne=[33, FF])
    refused("model with Q8_0 ne[0] = 33",
            gen(write("m-q33.gguf", gguf(model_kvs(), mts_q33))), (r"ffn_gate", r"whole number"))
    full = gguf(model_kvs(), mts)
    for cut in (len(full) // 2, len(full) - 1):
        refused(f"model truncated at {cut}",
                gen(write(f"m-trunc-{cut}.gguf", full[:cut])),
                (r"past the end",))
    dt = time.monotonic() - t0
    check(dt < 60, f"the whole test ran in {dt:.1f} s (< 60 s)")
    finish()


if __name__ == "__main__":
    main()

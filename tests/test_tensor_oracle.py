"""Oracle checks of the tensor layer against numpy and an independent Python safetensors writer.

(a) .npy written by fidelis (tests/tool_tensor) is byte-identical to np.save;
(b) .npy written by numpy reads back bit-exactly (`fidelis tensor ls --json` sha256 vs hashlib);
(c) safetensors written here with struct + json (with and without 8-byte space padding) read
    back exactly: names, dtypes, shapes, offsets, sizes, sha256, metadata;
(d) safetensors written by fidelis parse in Python to the input, with the upstream header
    bytes (sorted keys, compact, ensure_ascii), including the 8351-byte capture case.
"""
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

CLI = os.environ["FDL_CLI"]
TOOL = os.path.join(os.environ["FDL_BUILD"], "tests", "tool_tensor")
RNG = np.random.default_rng(20240601)
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def ls_json(path):
    r = run(CLI, "tensor", "ls", "--json", path)
    if r.returncode != 0:
        raise AssertionError("tensor ls %s: rc %d: %s" % (path, r.returncode, r.stderr))
    return json.loads(r.stdout)


def sample(dtype, shape):
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        return RNG.integers(0, 2, n).astype(dt).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return RNG.integers(info.min, info.max, n, dtype=dt, endpoint=True).reshape(shape)
    return RNG.standard_normal(n).astype(dt).reshape(shape)


ST_OF_NPY = {"<f8": "F64", "<f4": "F32", "<f2": "F16", "<i8": "I64", "<i4": "I32", "<i2": "I16",
             "|i1": "I8", "<u8": "U64", "<u4": "U32", "<u2": "U16", "|u1": "U8", "|b1": "BOOL"}


def test_npy_write(tmp):
    """(a) byte-identical to np.save."""
    shapes = [(), (0,), (1,), (7,), (3, 4), (2, 3, 4), (0, 5), (12345678901234, 0),
              (1, 1, 1, 1, 1, 1, 1, 2)]
    cases = [(d, s) for d in ("<f8", "<f4", "<i8", "<i4", "|u1", "|b1") for s in shapes]
    cases.append(("<f8", (1048064,)))
    cases.append(("<f8", (252,)))
    for i, (dtype, shape) in enumerate(cases):
        arr = sample(dtype, shape)
        raw = os.path.join(tmp, "raw-%d" % i)
        with open(raw, "wb") as f:
            f.write(arr.tobytes())
        out = os.path.join(tmp, "w-%d.npy" % i)
        r = run(TOOL, "npy", out, ST_OF_NPY[dtype], ",".join(str(d) for d in shape), raw)
        check(r.returncode == 0, "tool npy %s %s: %s" % (dtype, shape, r.stderr))
        if r.returncode:
            continue
        want = io.BytesIO()
        np.save(want, arr)
        with open(out, "rb") as f:
            got = f.read()
        check(got == want.getvalue(), "npy bytes differ from np.save for %s %s" % (dtype, shape))
        again = run(TOOL, "npy", out, ST_OF_NPY[dtype], ",".join(str(d) for d in shape), raw)
        check(again.returncode == 1 and "already exists" in again.stderr,
              "npy writer overwrote %s" % out)


def test_npy_read(tmp):
    """(b) numpy-written files read back bit-exactly."""
    shapes = [(), (0,), (1,), (7,), (3, 4), (2, 3, 4)]
    for i, dtype in enumerate(ST_OF_NPY):
        for j, shape in enumerate(shapes):
            arr = sample(dtype, shape)
            path = os.path.join(tmp, "r-%d-%d.npy" % (i, j))
            np.save(path, arr)
            doc = ls_json(path)
            check(doc["format"] == "npy" and doc["metadata"] is None and doc["file"] == path,
                  "npy listing header for %s" % path)
            (t,) = doc["tensors"]
            size = os.path.getsize(path)
            check(t["name"] == "" and t["dtype"] == ST_OF_NPY[dtype]
                  and t["shape"] == list(shape), "npy %s %s listed as %s" % (dtype, shape, t))
            check(t["offset"] + t["nbytes"] == size and t["nbytes"] == arr.nbytes,
                  "npy %s %s range" % (dtype, shape))
            check(t["sha256"] == hashlib.sha256(arr.tobytes()).hexdigest(),
                  "npy %s %s sha256" % (dtype, shape))
    # Refusals: Fortran order, big-endian, a truncated file; a missing file is unreadable.
    bad = [("fortran.npy", np.asfortranarray(np.zeros((2, 3)))), ("big.npy", np.zeros(3, ">f8")),
           ("complex.npy", np.zeros(3, np.complex64))]
    for name, arr in bad:
        path = os.path.join(tmp, name)
        np.save(path, arr)
        r = run(CLI, "tensor", "ls", path)
        check(r.returncode == 3 and path in r.stderr, "%s: rc %d %s" % (name, r.returncode, r.stderr))
    path = os.path.join(tmp, "short.npy")
    np.save(path, np.zeros(4))
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 1)
    r = run(CLI, "tensor", "ls", "--json", path)
    check(r.returncode == 3 and "data is 31 bytes" in r.stderr, "truncated npy: %s" % r.stderr)
    r = run(CLI, "tensor", "ls", os.path.join(tmp, "missing.npy"))
    check(r.returncode == 4, "missing file rc %d" % r.returncode)


def st_bytes(tensors, metadata=None, pad=False):
    """Independent safetensors writer: tensors is a list of (name, dtype, shape, raw)."""
    header, blob = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if pad:
        text += b" " * (-len(text) % 8)  # the Rust library's alignment padding
    return struct.pack("<Q", len(text)) + text + blob, len(text)


def bf16_raw(arr):
    return (np.ascontiguousarray(arr, "<f4").view("<u4") >> 16).astype("<u2").tobytes()


def test_st_read(tmp):
    """(c) files from the independent writer read back exactly."""
    tensors = [
        ("model.embed.weight", "BF16", (5, 3), bf16_raw(RNG.standard_normal((5, 3)))),
        ("b", "F32", (4,), sample("<f4", (4,)).tobytes()),
        ("scalar", "F64", (), sample("<f8", ()).tobytes()),
        ("empty", "I64", (0, 7), b""),
        ("flags", "BOOL", (3,), sample("|b1", (3,)).tobytes()),
        ("h", "F16", (2, 2), sample("<f2", (2, 2)).tobytes()),
        ("ids", "I32", (2, 3), sample("<i4", (2, 3)).tobytes()),
        ("u", "U8", (9,), sample("|u1", (9,)).tobytes()),
        ("f8", "F8_E4M3", (2,), b"\x01\x02"),
        ("caf\u00e9", "U16", (1,), b"\xff\xff"),
    ]
    for k, (meta, pad) in enumerate([(None, False), ({"format": "pt", "n\u00e9": "\u2603"}, True),
                                     ({}, True)]):
        data, hlen = st_bytes(tensors, meta, pad)
        path = os.path.join(tmp, "indep-%d.safetensors" % k)
        with open(path, "wb") as f:
            f.write(data)
        doc = ls_json(path)
        check(doc["format"] == "safetensors", "format")
        check(doc["metadata"] == meta, "metadata %r != %r" % (doc["metadata"], meta))
        got = {t["name"]: t for t in doc["tensors"]}
        check(len(got) == len(tensors), "tensor count")
        offsets = [t["offset"] for t in doc["tensors"]]
        check(offsets == sorted(offsets), "listing not in offset order")
        begin = 0
        for name, dtype, shape, raw in tensors:
            t = got.get(name)
            if t is None:
                check(False, "missing tensor %s" % name)
                continue
            check(t["dtype"] == dtype and t["shape"] == list(shape), "tensor %s meta %s" % (name, t))
            check(t["offset"] == 8 + hlen + begin and t["nbytes"] == len(raw),
                  "tensor %s range %s" % (name, t))
            check(t["sha256"] == hashlib.sha256(raw).hexdigest(), "tensor %s sha256" % name)
            begin += len(raw)
    # The text listing: one line per tensor with the byte range and digest.
    r = run(CLI, "tensor", "ls", path)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == len(tensors), "text listing: %s" % r.stdout)
    first = lines[0].split("\t")
    check(first[:4] == ["model.embed.weight", "BF16", "[5, 3]", "[%d,%d)" % (8 + hlen, 8 + hlen + 30)]
          and first[4] == hashlib.sha256(tensors[0][3]).hexdigest(), "text line %r" % lines[0])
    # A malformed file is refused with exit 3 and a message naming it.
    data, _ = st_bytes([("x", "F32", (3,), b"\0" * 8)])
    path = os.path.join(tmp, "bad.safetensors")
    with open(path, "wb") as f:
        f.write(data)
    r = run(CLI, "tensor", "ls", path)
    check(r.returncode == 3 and "tensor 'x'" in r.stderr and path in r.stderr,
          "malformed safetensors: rc %d %s" % (r.returncode, r.stderr))


def parse_st(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    return data, data[8:8 + n], json.loads(data[8:8 + n]), data[8 + n:]


def test_st_write(tmp):
    """(d) fidelis-written files parse in Python, with upstream's exact header bytes."""
    hidden = RNG.standard_normal((63, 64))
    raw = os.path.join(tmp, "hidden.raw")
    with open(raw, "wb") as f:
        f.write(bf16_raw(hidden))
    meta = {"capture_role": "hidden_states_pre_lm_head",
            "cut_point": "after_final_rmsnorm_before_lm_head", "window_id": "final-0000",
            "cold_run": "fidelity--qwen3-5.community-root-first", "dtype": "bfloat16"}
    out = os.path.join(tmp, "hidden_0000.safetensors")
    args = [TOOL, "st", out]
    for k, v in meta.items():
        args += ["--meta", k, v]
    r = run(*(args + ["--tensor", "hidden_states", "BF16", "63,64", raw]))
    check(r.returncode == 0, "tool st: %s" % r.stderr)
    data, head, doc, body = parse_st(out)
    check(len(data) == 8351 and len(head) == 279, "capture file %d bytes, header %d"
          % (len(data), len(head)))
    want = {"__metadata__": meta,
            "hidden_states": {"dtype": "BF16", "shape": [63, 64], "data_offsets": [0, 8064]}}
    check(head == json.dumps(want, separators=(",", ":"), sort_keys=True).encode(),
          "capture header bytes")
    check(body == bf16_raw(hidden), "capture data")
    r = run(*(args + ["--tensor", "hidden_states", "BF16", "63,64", raw]))
    check(r.returncode == 1 and "already exists" in r.stderr, "safetensors writer overwrote")

    # Several tensors and dtypes, non-ASCII names and metadata (written as \\u escapes).
    arrays = [("z\u00fcrich", "F32", sample("<f4", (3, 2))), ("a", "I64", sample("<i8", (5,))),
              ("s", "U8", sample("|u1", ())), ("e", "F64", sample("<f8", (0,)))]
    out = os.path.join(tmp, "multi.safetensors")
    args = [TOOL, "st", out, "--meta", "note", "\u2603 snow"]
    for i, (name, dtype, arr) in enumerate(arrays):
        p = os.path.join(tmp, "m-%d.raw" % i)
        with open(p, "wb") as f:
            f.write(arr.tobytes())
        args += ["--tensor", name, dtype, ",".join(str(d) for d in arr.shape), p]
    r = run(*args)
    check(r.returncode == 0, "tool st multi: %s" % r.stderr)
    data, head, doc, body = parse_st(out)
    want, blob = {"__metadata__": {"note": "\u2603 snow"}}, b""
    for name, dtype, arr in arrays:
        want[name] = {"dtype": dtype, "shape": list(arr.shape),
                      "data_offsets": [len(blob), len(blob) + arr.nbytes]}
        blob += arr.tobytes()
    check(head == json.dumps(want, separators=(",", ":"), sort_keys=True).encode(),
          "multi header bytes: %r" % head)
    check(body == blob, "multi data")
    for name, dtype, arr in arrays:
        b, e = doc[name]["data_offsets"]
        back = np.frombuffer(body[b:e], dtype=arr.dtype).reshape(arr.shape)
        check(np.array_equal(back, arr), "tensor %s round trip" % name)


def main():
    r = run(CLI, "tensor", "--help")
    check(r.returncode == 0 and "tensor ls" in r.stdout, "tensor --help")
    check(run(CLI, "tensor").returncode == 4, "tensor without args is a usage error")
    check(run(CLI, "tensor", "ls", "a", "b").returncode == 4, "two files is a usage error")
    with tempfile.TemporaryDirectory(prefix="fdl-tensor-oracle-") as tmp:
        for test in (test_npy_write, test_npy_read, test_st_read, test_st_write):
            test(tmp)
            print("ok:", test.__name__)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        sys.exit(1)
    print("all tensor oracle checks passed")


if __name__ == "__main__":
    main()

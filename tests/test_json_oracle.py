"""Byte-exact comparison of `fidelis json canon` with Python's json.dumps.

Floats are written as '%.17g' literals, so the C side has to find the shortest repr itself.
Strings, keys, ints and nesting are checked in all four output modes (ascii x pretty).
Needs only the standard library; FDL_CLI names the fidelis executable."""

import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

CLI = os.environ.get("FDL_CLI", "fidelis")
N_RANDOM_FLOATS = int(os.environ.get("FDL_JSON_ORACLE_FLOATS", "1000000"))
FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def run_cli(args, data=None):
    return subprocess.run([CLI, "json", "canon", *args], input=data, capture_output=True)


def dumps(v, ascii_, pretty):
    if pretty:
        return json.dumps(v, indent=2, sort_keys=True, ensure_ascii=ascii_, allow_nan=False) + "\n"
    return json.dumps(v, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=ascii_) + "\n"


def first_difference(got, want):
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]),
             min(len(got), len(want)))
    return i, got[max(0, i - 60):i + 60], want[max(0, i - 60):i + 60]


ALL_MODES = ((False, False), (False, True), (True, False), (True, True))


def check_all_modes(tmp, name, text, value, extra=(), modes=ALL_MODES):
    path = os.path.join(tmp, name + ".json")
    with open(path, "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
    for ascii_, pretty in modes:
        args = [*extra, *(["--ascii"] if ascii_ else []), *(["--pretty"] if pretty else []), path]
        r = run_cli(args)
        want = dumps(value, ascii_, pretty).encode("utf-8")
        if r.returncode != 0:
            fail(f"{name} {args}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
        elif r.stdout != want:
            i, g, w = first_difference(r.stdout, want)
            fail(f"{name} {args}: first difference at byte {i}\n  got:  {g!r}\n  want: {w!r}")


def literal(x):
    s = "%.17g" % x
    return s if any(c in s for c in ".en") else s + ".0"


def edge_floats():
    out = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072009e-308, 2.2250738585072014e-308,
           1.7976931348623157e308, -1.7976931348623157e308, 1e16, 9999999999999998.0,
           1e-5, 1e-4, 0.0001, 0.00011, 9.9e-05, 0.1, 0.2, 0.3, 1.0 / 3, 2.5e-07, 1.0, 4.0, 1e15,
           1e22, 1e23, 123456789012345680.0, 1.2345678901234568e+17, 100.0, 300.0]
    out += [math.ldexp(1.0, k) for k in range(-1074, 1024)]
    out += [math.ldexp(1.0, k) * 3 for k in range(-1074, 1022)]
    for centre in (1e16, 1e-4, 1e-5, 1.0, 1e15, 1e17, 5e-324, 1.7976931348623157e308):
        x = y = centre
        for _ in range(40):
            x = math.nextafter(x, math.inf)
            y = math.nextafter(y, 0.0)
            out += [x, y]
    out += [float(10 ** k) for k in range(0, 23)] + [10.0 ** k for k in range(-30, 309)]
    return [v for v in out if math.isfinite(v)] + [-v for v in out if math.isfinite(v)]


def random_floats(n):
    rng = random.Random(20240601)
    half = n // 2
    raw = struct.unpack("<%dd" % half, rng.randbytes(8 * half))
    out = [x for x in raw if math.isfinite(x)]
    while len(out) < n:  # uniform over binary exponents, subnormals included
        x = math.ldexp(1.0 + rng.random(), rng.randrange(-1075, 1024))
        if math.isfinite(x):
            out.append(-x if rng.random() < 0.5 else x)
    return out


def check_floats(tmp):
    values = edge_floats() + random_floats(N_RANDOM_FLOATS)
    path = os.path.join(tmp, "floats.json")
    with open(path, "w") as f:
        f.write("[" + ",".join(literal(x) for x in values) + "]")
    r = run_cli([path])
    if r.returncode != 0:
        fail(f"floats: exit {r.returncode}: {r.stderr.decode(errors='replace')[:500]}")
        return
    got = r.stdout.decode("ascii").rstrip("\n")
    if not (got.startswith("[") and got.endswith("]")):
        fail(f"floats: output is not an array: {got[:80]!r}")
        return
    items = got[1:-1].split(",")
    if len(items) != len(values):
        fail(f"floats: {len(items)} items back, {len(values)} sent")
        return
    for x, g in zip(values, items):
        if g != repr(x):
            fail(f"float {x.hex()}: literal {literal(x)} -> fidelis {g}, Python {repr(x)}")
            break
    want = dumps(values, False, False)
    if r.stdout.decode("ascii") != want:
        fail("floats: whole-array output differs from json.dumps")
    print(f"floats: {len(values)} values compared")


SPECIAL = ("".join(chr(c) for c in range(0x20)) + '"\\/\x7f\x80\u2028\u2029\ufffd\uffff'
           + "\U0001f600\U0010ffff\u00e9\u4e2d")


def random_string(rng, allow_nul=True):
    n = rng.randrange(0, 12)
    out = []
    for _ in range(n):
        k = rng.random()
        if k < 0.5:
            out.append(chr(rng.randrange(0x20, 0x7f)))
        elif k < 0.7:
            out.append(rng.choice(SPECIAL))
        elif k < 0.85:
            c = rng.randrange(0x80, 0x10000)
            out.append(chr(c) if not 0xD800 <= c <= 0xDFFF else "x")
        else:
            out.append(chr(rng.randrange(0x10000, 0x110000)))
    s = "".join(out)
    return s if allow_nul else s.replace("\x00", "0")


def random_value(rng, depth):
    k = rng.random()
    if depth < 5 and k < 0.15:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
    if depth < 5 and k < 0.3:
        return {random_string(rng, False): random_value(rng, depth + 1)
                for _ in range(rng.randrange(0, 6))}
    if k < 0.45:
        return random_string(rng)
    if k < 0.6:
        return rng.choice([0, 1, -1, 16, 2 ** 63 - 1, -2 ** 63, rng.randrange(-2 ** 63, 2 ** 63)])
    if k < 0.8:
        return rng.choice([0.0, -0.0, 4.0, 1e16, 1e-5, 0.1, rng.uniform(-1e6, 1e6),
                           math.ldexp(rng.random(), rng.randrange(-1070, 1020))])
    return rng.choice([True, False, None])


def check_documents(tmp):
    docs = {
        "controls": [chr(c) for c in range(0x20)],
        "specials": {"quote": '"', "backslash": "\\", "slash": "/", "del": "\x7f",
                     "u0080": "\x80", "u2028": "\u2028", "fffd": "\ufffd", "ffff": "\uffff",
                     "emoji": "\U0001f600", "all": SPECIAL},
        "key_order": {"\uffff": 1, "\U0001f600": 2, "a": 3, "B": 4, "": 5, "ab": 6, "a\x01": 7,
                      "\x7f": 8, "\x80": 9, "\u00e9": 10},
        "ints": [0, -1, 16, 2 ** 63 - 1, -2 ** 63, 1000000],
        "floats_kept": {"four": 4.0, "sixteen": 16, "zero": 0.0, "negzero": -0.0},
        "nested": {"a": [[], {}, [[{}]], {"b": {"c": [1, 2.5, "x", None, True, False]}}],
                   "z": {"y": {"x": {}}}},
        "empty_list": [],
        "empty_object": {},
    }
    # One document per input form keeps the number of (slow, under ASan) CLI runs small.
    check_all_modes(tmp, "docs", json.dumps(docs, ensure_ascii=False), docs)
    check_all_modes(tmp, "docs_escaped_input", json.dumps(docs, indent=1), docs)
    scalars = {"scalar_string": "top level \u00e9\U0001f600", "scalar_null": None,
               "scalar_float": 1e-7, "scalar_int": -42}
    for name, value in scalars.items():
        check_all_modes(tmp, name, json.dumps(value, ensure_ascii=False), value,
                        modes=((False, False), (True, True)))
    text = (' \t\r\n{ "b" : [ 1 , 2 ] ,\n "a" : "\\u00e9\\ud83d\\ude00" ,'
            ' "n": [1E5, 1e5, 1.50, 2.50e0, -0.0, 1E-7, 4.0, 16, 0.1e1] } \n')
    check_all_modes(tmp, "literals", text, json.loads(text))
    rng = random.Random(7)
    rand_docs = [random_value(rng, 0) for _ in range(400)]
    check_all_modes(tmp, "random_docs", json.dumps(rand_docs, ensure_ascii=False), rand_docs)
    check_all_modes(tmp, "random_docs_ascii_in", json.dumps(rand_docs), rand_docs)


def check_kiln_and_errors(tmp):
    def write(name, data):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    ok = write("kiln_ok.json", b'{"a":[2.50,1E2,1.0,-0.0,0.0]}')
    r = run_cli(["--kiln-strict", ok])
    if r.returncode != 0 or r.stdout != b'{"a":[2.5,100.0,1.0,0.0,0.0]}\n':
        fail(f"kiln ok: exit {r.returncode} out {r.stdout!r} err {r.stderr!r}")
    for lit, tag in ((b"0.30000000000000001", b"inexact_float"), (b"4.9e-324", b"inexact_float"),
                     (b"1.00000000000000011", b"inexact_float"), (b"1e-400", b"float_underflow"),
                     (b"1e400", b"float_overflow")):
        path = write("kiln_bad.json", b"[" + lit + b"]")
        r = run_cli(["--kiln-strict", path])
        if r.returncode != 3 or tag not in r.stderr:
            fail(f"kiln {lit!r}: exit {r.returncode}, stderr {r.stderr!r}")
        if lit != b"1e400" and run_cli([path]).returncode != 0:
            fail(f"non-kiln {lit!r} refused")
        os.unlink(path)

    for data, word in ((b'{"a":1,"a":2}', b"duplicate"), (b"[NaN]", b"NaN"),
                       (b"\xef\xbb\xbf{}", b"BOM"), (b'["\xc0\x80"]', b"UTF-8"),
                       (b"[1] 2", b"trailing"), (b"[1,", b"truncated"),
                       (b"[" * 65 + b"]" * 65, b"deeper than 64"),
                       (b"18446744073709551616", b"int64")):
        path = write("bad.json", data)
        r = run_cli([path])
        if r.returncode != 3 or word not in r.stderr or b"bad.json" not in r.stderr:
            fail(f"refusal {data[:20]!r}: exit {r.returncode}, stderr {r.stderr!r}")
        os.unlink(path)

    r = run_cli(["-"], data=b'{"b":[1.50],"a":"\\u00e9"}')
    if r.returncode != 0 or r.stdout != '{"a":"é","b":[1.5]}\n'.encode():
        fail(f"stdin: exit {r.returncode} out {r.stdout!r}")
    r = run_cli([os.path.join(tmp, "missing.json")])
    if r.returncode != 4 or b"missing.json" not in r.stderr:
        fail(f"missing file: exit {r.returncode}, stderr {r.stderr!r}")
    r = run_cli(["--bogus", ok])
    if r.returncode != 4:
        fail(f"unknown option: exit {r.returncode}")
    r = run_cli(["--help"])
    if r.returncode != 0 or not all(o in r.stdout for o in (b"--ascii", b"--pretty",
                                                            b"--kiln-strict", b"--help")):
        fail(f"--help: exit {r.returncode}, out {r.stdout!r}")


def main():
    with tempfile.TemporaryDirectory(prefix="fdl-json-oracle-") as tmp:
        check_documents(tmp)
        check_kiln_and_errors(tmp)
        check_floats(tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""compare_util.py - shared helpers of the compare tests (imported, not a test itself).

Datasets are built the way a user builds them: per-record tensors, a panel JSONL and a meta JSON
handed to `fidelis pack`. Tensors are written by a small independent safetensors writer here, and
read back by an independent reader, so the oracles never trust fidelis' own tensor code.
"""
import copy
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

CLI = os.environ.get("FDL_CLI", "fidelis")
SHARED = os.environ.get("FDL_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
SCHEMA = os.path.join(SHARED, "vectors", "schemas", "fidelity", "fidelity-comparison-receipt.schema.json")
VECTORS = os.path.join(SHARED, "vectors", "fidelity")

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def require_shared():
    """Exits 77 when ../shared's receipt schema is absent: CTest records a skip, never a pass."""
    if not os.path.isfile(SCHEMA):
        print(f"skipped: {SCHEMA} not present (../shared)")
        sys.exit(77)


def finish(name):
    if FAILS:
        print(f"{name}: {len(FAILS)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: ok")


# ---- tensors ----------------------------------------------------------------------------------

def bf16_bits(x):
    """float32 -> BF16 bit patterns, round to nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def st_write(path, key, arr, dtype):
    """Writes a one-tensor safetensors file; arr holds BF16 bits (uint16) for dtype BF16."""
    np_dtype = np.dtype({"BF16": "<u2", "F32": "<f4", "F16": "<f2", "F64": "<f8"}[dtype])
    data = np.ascontiguousarray(arr, dtype=np_dtype).tobytes()
    header = json.dumps({key: {"dtype": dtype, "shape": list(arr.shape),
                               "data_offsets": [0, len(data)]}}, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def st_read(path, key):
    """(array as float32 or float64, dtype name) of one tensor of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    t = hdr[key]
    a, b = t["data_offsets"]
    buf = raw[8 + n + a:8 + n + b]
    if t["dtype"] == "BF16":
        return bf16_to_f32(np.frombuffer(buf, dtype="<u2")).reshape(t["shape"]), "BF16"
    if t["dtype"] == "F16":
        return np.frombuffer(buf, dtype="<f2").astype(np.float32).reshape(t["shape"]), "F16"
    if t["dtype"] == "F64":
        return np.frombuffer(buf, dtype="<f8").reshape(t["shape"]), "F64"
    return np.frombuffer(buf, dtype="<f4").reshape(t["shape"]), "F32"


# ---- datasets ---------------------------------------------------------------------------------

QUANT_SCOPE = {
    "policy": "mixed", "head_policy": "native", "kv_cache_dtype": "bf16",
    "assignments": [
        {"tensor_class": c, "treatment": "quantized" if c.startswith("mlp.") else "native",
         "format": "int4" if c.startswith("mlp.") else "bf16",
         "bits_per_weight": 4 if c.startswith("mlp.") else 16, "layer_range": None}
        for c in ["embed_tokens", "attn.qkv", "attn.o", "mlp.gate", "mlp.up", "mlp.down", "norm",
                  "lm_head"]]}


def merge(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


class Builder:
    """Builds datasets under one temporary directory with `fidelis pack`."""

    def __init__(self, vocab=40, hidden=16, contexts=3, tokens=20, seed=1):
        self.tmp = tempfile.TemporaryDirectory(prefix="fdl-cmp-")
        self.dir = self.tmp.name
        self.vocab, self.hidden = vocab, hidden
        self.rng = np.random.default_rng(seed)
        self.n = 0
        self.tokens = [list(self.rng.integers(0, vocab, size=tokens)) for _ in range(contexts)]
        self.domains = ["alpha", "beta", "gamma", "delta"]

    def path(self, name):
        return os.path.join(self.dir, name)

    def rows(self, i):
        return len(self.tokens[i]) - 1

    def random_hidden(self, scale=1.0):
        return [(self.rng.standard_normal((self.rows(i), self.hidden)) * scale).astype(np.float32)
                for i in range(len(self.tokens))]

    def random_head(self, scale=None):
        s = scale if scale is not None else 3.0 / np.sqrt(self.hidden)
        return (self.rng.standard_normal((self.vocab, self.hidden)) * s).astype(np.float32)

    def panel_lines(self, tokens=None, extra=None):
        tokens = tokens or self.tokens
        lines = []
        for i, t in enumerate(tokens):
            d = {"index": i, "tokens": [int(x) for x in t], "window_id": f"w-{i:04d}",
                 "domain": self.domains[i % len(self.domains)]}
            if extra:
                d.update(extra(i))
            lines.append(json.dumps(d))
        return "\n".join(lines) + "\n"

    def pack(self, name, *, tensors, head=None, head_dtype="BF16", tensor_dtype="BF16",
             form="hidden", role="root", meta=None, tokens=None, extra=None, skip=(),
             allow_partial=False, expect_ok=True):
        """tensors: per-record float32 arrays (hidden or logits); head: float32 [V, H] or None.
        BF16 tensors are rounded from the float32 given. Returns the dataset path."""
        self.n += 1
        work = self.path(f"in-{name}")
        os.makedirs(os.path.join(work, "t"))
        with open(os.path.join(work, "panel.jsonl"), "w") as f:
            f.write(self.panel_lines(tokens, extra))
        for i, a in enumerate(tensors):
            if i in skip:
                continue
            key = "hidden_states" if form == "hidden" else "logits"
            st_write(os.path.join(work, "t", f"{i:04d}.safetensors"), key,
                     bf16_bits(a) if tensor_dtype == "BF16" else a, tensor_dtype)
        args = [CLI, "pack", "--panel", os.path.join(work, "panel.jsonl"), "--tensors",
                os.path.join(work, "t"), "--out", self.path(name), "--threads", "2"]
        if head is not None:
            st_write(os.path.join(work, "head.safetensors"), "lm_head.weight",
                     bf16_bits(head) if head_dtype == "BF16" else head, head_dtype)
            args += ["--head", os.path.join(work, "head.safetensors")]
        vocab = self.vocab
        m = {"role": role, "form": form, "lane": "other", "device": "cpu",
             "dataset": {"id": f"fidelity--test.{name}"},
             "weights": {"repository": "test/model", "revision": None,
                         "quantized": role != "root",
                         "checkpoint_identity_sha256": sha("ckpt " + name)},
             "engine": {"name": "test-engine", "version": "1"},
             "tokenizer": {"id": "test-tokenizer", "vocab_size": vocab},
             "panel": {"panel_id": "panel--test.p1"},
             "vocab_size": vocab,
             "source_files": {"engine.py": sha("engine source")}}
        if role != "root":
            m["scope"] = QUANT_SCOPE
        if meta:
            m = merge(m, meta)
        with open(os.path.join(work, "meta.json"), "w") as f:
            json.dump(m, f)
        args += ["--meta", os.path.join(work, "meta.json")]
        if allow_partial:
            args.append("--allow-partial")
        p = subprocess.run(args, capture_output=True, text=True)
        if expect_ok and p.returncode not in (0, 2):
            raise RuntimeError(f"pack {name} failed ({p.returncode}): {p.stderr}{p.stdout}")
        return self.path(name)


def tree(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def load_manifest(ds):
    with open(os.path.join(ds, "fidelity-dataset.json"), encoding="utf-8") as f:
        return json.load(f)


def canon(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def seal(doc, field):
    body = copy.deepcopy(doc)
    body[field] = ""
    return hashlib.sha256(canon(body)).hexdigest()


def edit_manifest(ds, fn):
    """Edits fidelity-dataset.json in place and re-seals it (the manifest is outside
    checksums.txt, so its own seal is the only one to redo)."""
    m = load_manifest(ds)
    fn(m)
    m["dataset_sha256"] = seal(m, "dataset_sha256")
    with open(os.path.join(ds, "fidelity-dataset.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(m, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def capture_tensors(ds):
    """[(record, float array)] of a dataset in ascending index, read independently."""
    m = load_manifest(ds)
    mf = m["capture"]["manifest_file"]
    with open(os.path.join(ds, mf), encoding="utf-8") as f:
        cap = json.load(f)
    base = os.path.join(ds, os.path.dirname(mf))
    out = []
    for rec in sorted(cap["records"], key=lambda r: r["index"]):
        a, _ = st_read(os.path.join(base, rec["file"]), rec["key"])
        out.append((rec, a))
    return out


def head_of(ds):
    m = load_manifest(ds)
    a, _ = st_read(os.path.join(ds, m["head"]["file"]), m["head"]["tensor_key"])
    return a


# ---- running compare --------------------------------------------------------------------------

def compare(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    # No --quiet: it silences the summary too, and the progress bar is off anyway when stderr is
    # captured (not a terminal).
    p = subprocess.run([CLI, "compare", *args], capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def refusal_code(stderr):
    for line in stderr.splitlines():
        if line.startswith("REFUSED ["):
            return line[len("REFUSED ["):line.index("]")]
    return None


def receipt(out):
    with open(os.path.join(out, "comparison-receipt.json"), encoding="utf-8") as f:
        return json.load(f)


def tokenwise(out):
    return np.load(os.path.join(out, "tokenwise-kld.npy"))


def schema_errors(doc):
    """jsonschema errors with the documented relaxation: gates.decode is admitted."""
    import jsonschema
    with open(SCHEMA) as f:
        s = json.load(f)
    s["properties"]["gates"]["properties"]["decode"] = {"$ref": "#/$defs/gate"}
    v = jsonschema.Draft202012Validator(s)
    return [e.message for e in v.iter_errors(doc)]


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


# ---- oracles ----------------------------------------------------------------------------------

def log_softmax64(x):
    x = np.asarray(x, dtype=np.float64)
    lt = x - x.max(axis=1, keepdims=True)
    return lt - np.log(np.exp(lt).sum(axis=1, keepdims=True))


def kl_rows(t, s):
    """KL(t || s) per row in float64, the reference formula verbatim."""
    lpt, lps = log_softmax64(t), log_softmax64(s)
    return (np.exp(lpt) * (lpt - lps)).sum(axis=1)


def kl_gradient_l1(t, s):
    """Per row: sum_v |dKL/dt_v| + sum_v |dKL/ds_v|, the first-order sensitivity of KL to an
    error in the logits (dKL/dt = p * (log p - log q - KL), dKL/ds = q - p)."""
    lpt, lps = log_softmax64(t), log_softmax64(s)
    p, q = np.exp(lpt), np.exp(lps)
    kl = (p * (lpt - lps)).sum(axis=1, keepdims=True)
    return np.abs(p * (lpt - lps - kl)).sum(axis=1) + np.abs(q - p).sum(axis=1)


def neumaier_mean(xs):
    """CPython 3.12 sum() over floats (Neumaier), divided by len."""
    xs = [float(x) for x in xs]
    f, c = 0.0 + xs[0], 0.0
    for x in xs[1:]:
        t = f + x
        if abs(f) >= abs(x):
            c += (f - t) + x
        else:
            c += (x - t) + f
        f = t
    if c != 0.0 and np.isfinite(c):
        f += c
    return f / len(xs)


def bits(x):
    return struct.pack("<d", float(x))
